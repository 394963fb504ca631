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
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
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
                  mlir::LLVM::LLVMDialect, mlir::gpu::GPUDialect,
                  mlir::NVVM::NVVMDialect>();
  // Generated GPU kernels: gpu-module-to-binary serializes a gpu.module
  // through its NVVM target (LLVM IR, the NVPTX back end, ptxas).
  mlir::NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  mlir::registerBuiltinDialectTranslation(registry);
  mlir::registerGPUDialectTranslation(registry);
  mlir::registerLLVMDialectTranslation(registry);
  mlir::registerNVVMDialectTranslation(registry);
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
  mlir::registerGpuModuleToBinaryPass();
  // Generic cleanups used between titan's own passes.
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
}
