//===- Passes.td - kernel IR -> calls into the runtime -----*- tablegen -*-===//

#ifndef TITAN_CONVERSION_KERNELTORUNTIMECALLS_PASSES_TD
#define TITAN_CONVERSION_KERNELTORUNTIMECALLS_PASSES_TD

include "mlir/Pass/PassBase.td"

def KernelToRuntimeCalls : Pass<"kernel-to-runtime-calls", "::mlir::ModuleOp"> {
  let summary = "Lower planned kernel IR to LLVM-dialect calls into libtitanrt";
  let description = [{
    Rewrites every planned step `func.func @f` (kernel-plan-memory) into
    `llvm.func @<prefix>f(!llvm.ptr)`, whose pointer is the rank's arena:
    every slot and buffer is the arena plus its planned offset, so the step
    allocates nothing and copies only what `kernel.copy` says. Each
    `kernel.call` becomes one call

      titan_rt_<kernel>_<f32|f64|i32>(buffers, shapes, ints, floats, workspace)

    (runtime/include/titanrt/KernelABI.h): the inputs' then the outputs'
    pointers, per buffer its rank and dimensions, the `i64` and the `f64`
    parameters in order, and the workspace (or null). The dtype is the
    element type of the first floating-point buffer. `kernel.collective_start`
    has the same form and returns the request that `kernel.wait` passes to
    `titan_rt_wait`; views are free; streams are ignored (the runtime orders
    a rank's calls itself). Constant arrays are emitted once per distinct
    content.
    Under pipeline parallelism (a module with `kernel.frame_slots`) every
    step is `llvm.func @<prefix>f(!llvm.ptr, !llvm.ptr)`: the second pointer
    is the microbatch frame of the step's stage, and frame slots are that
    pointer plus their offset in the frame.

    Every target's step is this host code: the titan_rt_* entries run the
    kernels of the target the executable links (its TargetBackend's
    kernel libraries).
  }];
  let options = [
    Option<"symbolPrefix", "symbol-prefix", "std::string", "\"titan_\"",
           "Prefix of the generated function symbols">,
    Option<"deviceChip", "device-chip", "std::string", "\"\"",
           "The GPU architecture generated kernels run on (sm_90a); empty: "
           "on the host's threads">,
  ];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect",
                           "::mlir::gpu::GPUDialect",
                           "::mlir::NVVM::NVVMDialect",
                           "::mlir::vector::VectorDialect"];
}

def KernelEmbedGPUBinaries
    : Pass<"kernel-embed-gpu-binaries", "::mlir::ModuleOp"> {
  let summary = "The generated GPU kernels' binary as a constant of the step";
  let description = [{
    After `gpu-module-to-binary`: each `gpu.binary @<name>` (the generated
    kernels of a step, compiled) becomes the bytes of the private global
    `@<name>_image` that `kernel-to-runtime-calls` declared, which the step
    passes to `titan_rt_launch_generated`; the runtime loads it once
    (cudaLibraryLoadData). The binary's first object is used (one target per
    step) and the module is no longer a GPU container.
  }];
}

#endif // TITAN_CONVERSION_KERNELTORUNTIMECALLS_PASSES_TD
