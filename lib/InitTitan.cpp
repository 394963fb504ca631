//===- InitTitan.cpp - register titan's dialects and passes ---------------===//

#include "titan/InitTitan.h"

#include "titan/Compiler/Pipelines.h"
#include "titan/Conversion/KernelToCPU/Passes.h"
#include "titan/Conversion/TitanToKernel/Passes.h"
#include "titan/Dialect/Dist/IR/ShardingRule.h"
#include "titan/Dialect/Dist/Transforms/Passes.h"
#include "titan/Dialect/Kernel/IR/Kernel.h"
#include "titan/Dialect/Kernel/Transforms/Passes.h"
#include "titan/Dialect/Titan/IR/TitanDialect.h"
#include "titan/Dialect/Titan/Transforms/Passes.h"
#include "titan/Target/CPU/ExternalModels.h"
#include "titan/Target/CUDA/ExternalModels.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Transforms/Passes.h"

void titan::registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<titan::TitanDialect, titan::dist::DistDialect,
                  titan::kernel::KernelDialect, mlir::func::FuncDialect,
                  mlir::LLVM::LLVMDialect>();
  // The titan ops' tensor-parallel rules (dist depends on titan, not the
  // other way around).
  titan::dist::registerShardingRuleModels(registry);
  // Each target's rules (workspaces); one process compiles for either.
  titan::registerCPUTargetExternalModels(registry);
  titan::registerCUDATargetExternalModels(registry);
}

void titan::registerAllPasses() {
  titan::registerTitanPasses();
  titan::dist::registerDistPasses();
  titan::registerKernelToCPUPasses();
  titan::registerTitanToKernelPasses();
  titan::kernel::registerKernelPasses();
  titan::registerTitanPipelines();
  // Generic cleanups used between titan's own passes.
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
}
