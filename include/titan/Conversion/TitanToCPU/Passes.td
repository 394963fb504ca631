//===- Passes.td - titan -> CPU conversion passes ----------*- tablegen -*-===//

#ifndef TITAN_CONVERSION_TITANTOCPU_PASSES_TD
#define TITAN_CONVERSION_TITANTOCPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def TitanLowerToCPU : Pass<"titan-lower-to-cpu", "::mlir::ModuleOp"> {
  let summary = "Lower titan functions to LLVM-dialect calls into libtitanrt";
  let description = [{
    Rewrites every `func.func @f` of titan ops into
    `llvm.func @<prefix>f(!llvm.ptr)`: the pointer is an array of buffer
    pointers, the function's inputs followed by its results, all preallocated
    by the caller. Each titan op becomes one call
    `titan_rt_<op>_<f32|f64>(buffers, shapes, attrs)` (runtime/include/
    titanrt/KernelABI.h) on buffers allocated with `titan_rt_alloc` and freed
    after their last use; `titan.reshape` is a free view of its input. Results
    are copied into the caller's buffers at the return.

    Kernel attributes, in order: rms_norm(_grad) {eps}; rope_angles {theta,
    scaled, scaling_factor, low_freq_factor, high_freq_factor,
    original_max_position_embeddings}; rope {transpose}; attention(_grad)
    {scale}; fill {value}; global_norm {number of inputs}; lr_schedule {lr,
    warmup_steps, decay_ratio or -1, decay type (0 linear, 1 sqrt, 2 cosine),
    min_lr_factor}; adamw {beta1, beta2, eps, weight_decay, max_norm}.
  }];
  let options = [
    Option<"symbolPrefix", "symbol-prefix", "std::string", "\"titan_\"",
           "Prefix of the generated function symbols">,
  ];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

#endif // TITAN_CONVERSION_TITANTOCPU_PASSES_TD
