//===- Passes.td - titan dialect passes --------------------*- tablegen -*-===//

#ifndef TITAN_DIALECT_TITAN_TRANSFORMS_PASSES_TD
#define TITAN_DIALECT_TITAN_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def TitanDecomposeSwiGLU : Pass<"titan-decompose-swiglu"> {
  let summary = "Split fused titan.swiglu into titan.silu and titan.mul";
  let description = [{
    Rewrites `titan.swiglu %gate, %up` into `titan.mul (titan.silu %gate), %up`
    for targets (or analyses) that handle the pieces but not the fused op.
    Canonicalization fuses them back.
  }];
  let dependentDialects = ["::titan::TitanDialect"];
}

def TitanMixedPrecision : Pass<"titan-mixed-precision", "::mlir::ModuleOp"> {
  let summary = "Compute with low-precision copies of the fp32 parameters";
  let description = [{
    TorchTitan's FSDP2 mixed precision on the per-rank forward (after
    `dist-partition`, before `titan-autodiff`): each parameter, where the
    model's ops read it (after its FSDP gather or replication), is cast to
    `param-type` (bf16 or f16), and every activation computed from it takes
    that type; the loss is f32 (TorchTitan's `pred.float()`): the fused
    `titan.cross_entropy` reads the 16-bit logits and computes in f32 (each
    element widened exactly, so the same numbers as on an f32 copy), and
    its gradient is the f32 gradient rounded once to the logits' type (as
    the cast's adjoint would round it), with no f32 copy of the logits
    (the whole vocabulary of every token: 4 GiB at seq 8192 and Llama 3's
    128256 tokens); loss parallel's pieces (row max, sum of exp, target
    logit), whose results are stored, read an f32 cast of the logits. The
    parameters, their gradients and the optimizer state stay f32 (master
    weights): the casts' adjoints turn the low-precision gradients into f32
    ones before they are reduced, so gradient reductions run in f32
    (`mixed_precision_reduce = "float32"`, the only choice of TorchTitan
    v0.2.0). `dist-narrow-gathers` then moves each parameter's cast before
    its all-gather, so FSDP gathers the low-precision copy, as FSDP2 does.
    With `param-type` f32 the pass does nothing.
  }];
  let options = [
    Option<"forwardName", "forward", "std::string", "\"forward\"",
           "Function to rewrite">,
    Option<"paramType", "param-type", "std::string", "\"bf16\"",
           "Compute type of the parameters: bf16, f16 or f32">,
  ];
  let dependentDialects = ["::titan::TitanDialect",
                           "::titan::dist::DistDialect"];
}

def TitanActivationCheckpoint
    : Pass<"titan-activation-checkpoint", "::mlir::ModuleOp"> {
  let summary = "Mark the transformer blocks whose activations the backward "
                "recomputes (TorchTitan's activation checkpointing)";
  let description = [{
    TorchTitan v0.2.0's `[activation_checkpoint]` on the forward
    (`torchtitan/distributed/activation_checkpoint.py`): each transformer
    block is a recompute region. The pass marks every op of a region's
    block (`layers.<i>` in its location) with `titan.recompute_region = i`
    and the ops whose results the policy keeps with `titan.save`;
    `titan-autodiff` keeps those and each region's inputs and outputs, and
    computes the rest of the block again in the backward, just before the
    block's gradients need it. The backward reads the same values computed
    by the same kernels, so every mode trains bitwise like `none`.

    - `full`: every block; only its input (the previous block's output)
      and the values it reads from outside (RoPE angles, weights) are kept.
    - `selective` with an integer N: every Nth block is checkpointed fully
      (TorchTitan counts blocks from 1: block i when (i + 1) % N == 0).
    - `selective` with `op`: every block, keeping the results of the ops of
      TorchTitan's `_op_sac_save_list` (`aten.mm`, SDPA, the
      reduce-scatters, `aten.max`), except every second matmul of a block:
      here the block's `titan.linear`s counted in program order (the odd
      ones are kept: wq, wv, w1, w2), `titan.attention` (both results),
      and the `dist.wait` of each `dist.reduce_scatter_start`. A
      `titan.float8_linear` is recomputed whole, as TorchTitan recomputes
      `aten._scaled_mm` (not on the list); TorchTitan keeps the result of
      `aten.max` (a tensorwise amax: one float), titan recomputes it with
      its cast, since the Float8 expansion into amaxes and casts runs after
      autodiff.
      Linears whose weight shape is that of a linear inside a module
      named by `force-recompute-fqns` are recomputed and not counted
      (TorchTitan's `per_op_sac_force_recompute_mm_shapes_by_fqns`; naming
      a module that is not a linear is an error, as there).
    - `none`: nothing is marked.
  }];
  let options = [
    Option<"forwardName", "forward", "std::string", "\"forward\"",
           "Function to mark">,
    Option<"mode", "mode", "std::string", "\"none\"",
           "none, selective or full">,
    Option<"selectiveOption", "selective-option", "std::string", "\"op\"",
           "With mode selective: op, or N (every Nth block)">,
    ListOption<"forceRecomputeFqns", "force-recompute-fqns", "std::string",
               "Selective op: linears with the weight shape of a linear "
               "these modules contain are always recomputed (TorchTitan's "
               "per_op_sac_force_recompute_mm_shapes_by_fqns)">,
  ];
  let dependentDialects = ["::titan::TitanDialect"];
}

def TitanFloat8 : Pass<"titan-float8", "::mlir::ModuleOp"> {
  let summary = "Run eligible linears in float8 (TorchTitan's "
                "quantize.linear.float8 converter)";
  let description = [{
    TorchTitan v0.2.0's Float8 linear converter on the model's forward
    (before dist-parallelize, as TorchTitan converts the model before
    parallelizing it): every `titan.linear` becomes a
    `titan.float8_linear` with `recipe` (torchao's tensorwise, rowwise or
    rowwise_with_gw_hp), except, as `module_filter_fn`
    (torchtitan/components/quantization/utils.py) decides, linears whose
    weight has a dimension not divisible by 16 and linears whose module
    name (the op's location) contains one of `filter-fqns`. Each skipped
    linear gets a remark naming it and why. `titan-expand-float8` later
    writes the float8 ops out as casts and scaled GEMMs.
  }];
  let options = [
    Option<"forwardName", "forward", "std::string", "\"forward\"",
           "Function to convert">,
    Option<"recipe", "recipe", "std::string", "\"tensorwise\"",
           "tensorwise, rowwise or rowwise_with_gw_hp">,
    ListOption<"filterFqns", "filter-fqns", "std::string",
               "Module names (substrings) kept in high precision">,
  ];
  let dependentDialects = ["::titan::TitanDialect"];
}

def TitanExpandFloat8 : Pass<"titan-expand-float8", "::mlir::ModuleOp"> {
  let summary = "Write the float8 GEMMs out as amaxes, scales, casts and "
                "scaled GEMMs";
  let description = [{
    After titan-autodiff, in every function: each `titan.float8_linear`,
    `titan.float8_linear_grad_input` and `titan.float8_linear_grad_weight`
    becomes, per operand, `titan.amax` (tensorwise or along the GEMM's
    reduction dimension), a `dist.all_reduce_start` (max) over the op's
    `split_axes` when the operand is split along a dimension the amax
    reduces (so every rank scales with the whole tensor's amax, as
    torchao's DTensor amax does), `titan.float8_scale` and
    `titan.quantize`, then one `titan.scaled_matmul`; the recipes' float8
    types and scalings are those of torchao's Float8LinearConfig
    (tensorwise: e4m3 operands and e5m2 gradients, one scale each;
    rowwise: e4m3 everywhere, one power-of-two scale per row/column along
    the reduction dimension; rowwise_with_gw_hp: rowwise forward, grad
    input from a rowwise gradient and a tensorwise weight, grad weight in
    high precision as `titan.linear_grad_weight`). An operand the GEMM
    reduces over its leading dimensions (grad_input's weight, both of
    grad_weight's) is quantized `transposed`, K-major, the layout
    cuBLASLt's FP8 GEMM takes, so the scaled GEMM copies nothing. A value
    cast one way is cast once, however many GEMMs read it: one amax and
    scale per value and scaling (a weight FSDP re-gathers for the backward
    keeps its forward's, the same shard), one float8 copy per layout.
    torchao casts per GEMM to the same bits, so this changes no result.

    With `fsdp-float8-all-gather` (TorchTitan's
    `enable_fsdp_float8_all_gather`, tensorwise only), a weight FSDP
    gathers is cast before its gather, as torchao's float8 all-gather does:
    each rank quantizes its f32 shard with the scale of the whole weight
    (the shards' amaxes all-reduced over the gather's axes, and tp when the
    weight is split over it), and the gather moves float8; the backward's
    re-gather reuses the forward's scale (the parameters do not change
    within a step). The high-precision gathers it replaces are removed.
    Such a weight reaches grad_input untransposed (the gather concatenates
    rows), and the scaled GEMM transposes it.
  }];
  let options = [
    Option<"fsdpFloat8AllGather", "fsdp-float8-all-gather", "bool", "false",
           "Gather FSDP-sharded weights in float8 (tensorwise recipe)">,
  ];
  let dependentDialects = ["::titan::TitanDialect",
                           "::titan::dist::DistDialect"];
}

def TitanWidenGemmResults : Pass<"titan-widen-gemm-results"> {
  let summary = "Let a GEMM write the f32 its widening cast would make";
  let description = [{
    A `titan.cast` to f32 of the 16-bit result of a GEMM that accumulates
    in f32 (ops with the `WidenableResult` trait: `titan.linear_grad_weight`,
    `titan.scaled_matmul`), when the cast is that result's only use,
    becomes the GEMM itself with an f32 result: the weight gradient FSDP
    reduce-scatters in f32 comes straight out of cuBLASLt's or oneDNN's
    GEMM instead of being rounded to bf16 and widened by a second kernel
    that reads and writes the whole unsharded gradient again, as
    Megatron-LM's gradient-accumulation fusion writes the weight gradient
    into its f32 buffer. The values are those of the f32 sum, no longer
    rounded to bf16 on the way (excess precision, as XLA's
    `xla_allow_excess_precision`): more accurate, not bitwise TorchTitan's
    eager FSDP2, which rounds autograd's bf16 gradient before its cast.
    Under gradient accumulation the f32 GEMM then adds into the
    accumulator itself (kernel-fuse-gemm-accumulate). The eval step runs
    it too, so its forward GEMMs compute as the training step's.
  }];
}

def TitanAutodiff : Pass<"titan-autodiff", "::mlir::ModuleOp"> {
  let summary = "Build the backward graph of a titan forward function";
  let description = [{
    Reverse-mode differentiation of the function `forward` (a titan graph
    returning a scalar loss): adds a function `backward` with the same
    arguments that returns the loss followed by the gradient of every
    argument tagged `titan.param`, in argument order (results tagged
    `titan.grad`). Each op has one adjoint rule; a value used several times
    sums its gradients with `titan.add`. The forward is recomputed inside
    `backward` (it is a complete training step's forward + backward).
    Parameters that do not influence the loss get a zero gradient.

    Collectives have adjoints too. Every rank returns the same loss and the
    per-rank programs together compute their mean, so each rank's loss is
    seeded with 1/ranks (ranks of the `#dist.mesh`, pipeline stages aside);
    then each collective's adjoint is its transpose: an all-gather's is a
    reduce-scatter over the same axes and dimension (and vice versa), an
    all-reduce's is the same all-reduce (no communication for a gradient
    provably equal on every rank of the group: constants, all-reduced or
    all-gathered values and titan ops of them), all_to_all and send_recv run reversed, and
    `dist.replicate` all-reduces its gradient: data-parallel gradient
    synchronization. `titan.row_max` and `max` all-reduces have no gradient.

    Recompute regions (`titan.recompute_region`, from
    `titan-activation-checkpoint`): when the backward reaches a region's
    last op, the region's activations that the policy does not keep
    (`titan.save`), that nothing outside the region reads and that depend
    on the step's inputs (not weights alone) are computed again there, in
    program order, as copies marked `titan.recomputed`; the backward reads
    the copies, so the forward's die with the forward. Copies nothing reads
    are dropped. Weights the copies read are re-gathered as the backward's
    are.

    With `regather-params`, FSDP-gathered parameters are gathered again for
    the backward (FSDP's reshard after forward), except those whose argument
    carries `dist.keep_gathered`.

    A pipeline stage before the last (`dist-pipeline-split`) returns
    activations tagged `dist.stage_output` instead of the loss: the step
    takes their gradients as arguments (`dist.stage_output_grad`, after
    the forward's arguments), which seed the backward unscaled (the last
    stage's seed already holds the 1/(ranks N)); it returns the
    activations, then the gradient of each argument tagged
    `dist.stage_input` (`dist.stage_input_grad`, for the previous stage),
    then the parameters' gradients, and is marked
    `dist.pipeline_phase = "forward_backward"`.

    With `accumulation-steps` N > 1 (gradient accumulation over N
    microbatches), the loss is seeded with 1/(ranks N), as TorchTitan
    backpropagates `loss / N`, and the step adds its gradients into
    accumulators: it takes one more argument per parameter (tagged
    `titan.grad`, after the inputs) and returns accumulator + gradient, so
    the gradient slot sums the microbatches in place.
  }];
  let options = [
    Option<"forwardName", "forward", "std::string", "\"forward\"",
           "Function to differentiate">,
    Option<"backwardName", "backward", "std::string",
           "\"forward_backward\"", "Name of the function to create">,
    Option<"regatherParams", "regather-params", "bool", "false",
           "Re-gather FSDP-sharded parameters for the backward instead of "
           "keeping the forward's gathered copies alive (FSDP's "
           "reshard_after_forward)">,
    Option<"accumulationSteps", "accumulation-steps", "int64_t", "1",
           "Microbatches whose gradients one optimizer step sums">,
  ];
  let dependentDialects = ["::titan::TitanDialect",
                           "::titan::dist::DistDialect",
                           "::mlir::func::FuncDialect"];
}

def TitanOptimizer : Pass<"titan-optimizer", "::mlir::ModuleOp"> {
  let summary = "Build the AdamW optimizer step for a titan model";
  let description = [{
    Adds a function `optimizer_step` taking, for the parameters of function
    `forward` (arguments tagged `titan.param`), the parameters, their
    gradients, the AdamW first and second moments, the 0-based step index and
    the run's total step count; it returns the updated parameters and moments,
    the global gradient norm before clipping and the learning rate used. The
    update is `torch.nn.utils.clip_grad_norm_` followed by
    `torch.optim.AdamW`, with TorchTitan's warmup-stable-decay schedule.
    Several `forward` functions (a pipeline rank's stages) contribute their
    parameters, each once, in order of first appearance; under pipeline
    parallelism (a mesh with pp > 1) the squared gradient norm is summed
    over the `pp` axis too, so every stage clips with the whole model's
    norm.
  }];
  let options = [
    ListOption<"forwardNames", "forward", "std::string",
               "Functions whose parameters are optimized (default: forward)">,
    Option<"stepName", "step-function", "std::string",
           "\"optimizer_step\"", "Name of the function to create">,
    Option<"lr", "lr", "double", "8e-4", "Peak learning rate">,
    Option<"beta1", "beta1", "double", "0.9", "AdamW beta1">,
    Option<"beta2", "beta2", "double", "0.95", "AdamW beta2">,
    Option<"eps", "eps", "double", "1e-8", "AdamW epsilon">,
    Option<"weightDecay", "weight-decay", "double", "0.1",
           "Decoupled weight decay">,
    Option<"maxNorm", "max-norm", "double", "1.0",
           "Global gradient-norm clipping threshold">,
    Option<"warmupSteps", "warmup-steps", "int64_t", "200",
           "Linear warmup steps">,
    Option<"decayRatio", "decay-ratio", "double", "-1.0",
           "Fraction of steps that decay (negative: decay after warmup)">,
    Option<"decayType", "decay-type", "std::string", "\"linear\"",
           "linear, sqrt or cosine">,
    Option<"minLrFactor", "min-lr-factor", "double", "0.0",
           "Final learning rate as a fraction of lr">,
  ];
  let dependentDialects = ["::titan::TitanDialect",
                           "::mlir::func::FuncDialect"];
}

def TitanOptimizerInBackward
    : Pass<"titan-optimizer-in-backward", "::mlir::ModuleOp"> {
  let summary = "Run each parameter's AdamW update in the backward, as soon "
                "as its gradient is final";
  let description = [{
    TorchTitan's `optimizer.early_step_in_backward`
    (`OptimizersInBackwardContainer`: one optimizer per parameter, stepped
    by its post-accumulate-grad hook): moves the AdamW updates that
    `titan-optimizer` built in `optimizer_step` into `forward_backward`, so
    that each gradient dies with its update instead of living until the
    step's end, and the memory plan reuses its buffer for the gradients
    computed after it.

    Each update is placed after its gradient's last definition (FSDP's
    reduce-scatter wait) and the parameter's last read, then one model unit
    later (before the next unit's first final gradient): the reduce-scatter
    then overlaps the next unit's backward, as FSDP2's hook runs once its
    reduce-scatter is done, and a unit's updates stay adjacent (one
    multi-tensor launch). There is no clipping, as in TorchTitan, whose
    `clip_grad_norm_` finds no gradients left: the AdamW scalars see a zero
    norm (`clip_coef = 1`). The reported `grad_norm` is still the global
    norm, summed unit by unit as the gradients are final.

    `forward_backward` then also takes the AdamW moments and the `step` and
    `total_steps` inputs and returns the updated parameters and moments,
    `grad_norm` and `lr`; it no longer returns gradients. `optimizer_step`
    is left without arguments, results or ops, as TorchTitan's container's
    `step()` is a no-op. Gradient accumulation (gradient
    arguments) and pipeline stages are refused, as TorchTitan refuses
    pipeline parallelism.
  }];
  let options = [
    Option<"backwardName", "backward", "std::string",
           "\"forward_backward\"", "Function whose gradients are updated in">,
    Option<"stepName", "step-function", "std::string",
           "\"optimizer_step\"", "The function titan-optimizer built">,
  ];
  let dependentDialects = ["::titan::TitanDialect",
                           "::titan::dist::DistDialect",
                           "::mlir::func::FuncDialect"];
}

#endif // TITAN_DIALECT_TITAN_TRANSFORMS_PASSES_TD
