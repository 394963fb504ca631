//===- InitTitan.cpp - register titan's dialects, passes and targets ------===//

#include "titan/InitTitan.h"

#include "titan/Compiler/Pipelines.h"
#include "titan/Conversion/KernelToRuntimeCalls/Passes.h"
#include "titan/Conversion/TitanToKernel/Passes.h"
#include "titan/Dialect/Dist/IR/ShardingRule.h"
#include "titan/Dialect/Dist/Transforms/Passes.h"
#include "titan/Dialect/Kernel/IR/Kernel.h"
#include "titan/Dialect/Kernel/Transforms/Passes.h"
#include "titan/Dialect/Titan/IR/TitanDialect.h"
#include "titan/Dialect/Titan/Transforms/Passes.h"
#include "titan/Import/Passes.h"
#include "titan/Pipeline/Transforms/Passes.h"
#include "titan/Target/CPU/CPUBackend.h"
#include "titan/Target/CUDA/CUDABackend.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/ErrorHandling.h"

#include <mutex>

void titan::registerAllTargetBackends() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (auto create :
         {target::createCPUTargetBackend, target::createCUDATargetBackend})
      if (llvm::Error error = target::registerTargetBackend(create()))
        llvm::report_fatal_error(std::move(error));
  });
}

void titan::registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<titan::TitanDialect, titan::dist::DistDialect,
                  titan::kernel::KernelDialect, mlir::func::FuncDialect,
                  mlir::LLVM::LLVMDialect>();
  // The titan ops' tensor-parallel rules (dist depends on titan, not the
  // other way around).
  titan::dist::registerShardingRuleModels(registry);
  // Every registered target's rules (workspaces); one process compiles for
  // any of them.
  registerAllTargetBackends();
  target::registerTargetExternalModels(registry);
}

void titan::registerAllPasses() {
  titan::registerTitanPasses();
  titan::dist::registerDistPasses();
  titan::dist::registerPipelineSchedulePasses();
  titan::registerImportPasses();
  titan::registerKernelToRuntimeCallsPasses();
  titan::registerTitanToKernelPasses();
  titan::kernel::registerKernelPasses();
  titan::registerTitanPipelines();
  // Generic cleanups used between titan's own passes.
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
}
