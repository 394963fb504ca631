//===- Passes.td - dist dialect passes ---------------------*- tablegen -*-===//

#ifndef TITAN_DIALECT_DIST_TRANSFORMS_PASSES_TD
#define TITAN_DIALECT_DIST_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def DistParallelize : Pass<"dist-parallelize", "::mlir::ModuleOp"> {
  let summary = "Choose the device mesh and apply the model's parallel plan as shardings";
  let description = [{
    Sets the module's `#dist.mesh` from the parallel degrees and turns the
    parallel plan of function `forward` (attributes a model plan attaches,
    titan/Dialect/Dist/IR/DistPlan.h: the Llama importer attaches
    TorchTitan's, `titan-llama-plan` attaches it to hand-written IR) into
    shardings (`#dist.sharding`) of its parameters and inputs, plus the
    constraints the sharding rules cannot choose alone;
    `dist-propagate-sharding` carries them through the graph. The pass reads
    the plan only, never a parameter's or module's name:

    * tensor parallel (`tp > 1`): each parameter's `#dist.param_plan` style
      (`dist.param_plan`) splits dimension 0 (`colwise`, `embedding`) or
      dimension 1 (`rowwise`, 2-D weights) over `tp`, or none
      (`replicate`). Sequence parallel: the result of each op marked
      `dist.sequence_parallel = d` is constrained to be split along
      dimension d over `cp` (when it is above 1) then `tp`. Loss parallel
      (`loss-parallel`, the default): each `titan.cross_entropy` marked
      `dist.loss_parallel` is written as its per-row statistics
      (`titan.row_max`, `titan.sum_exp`, `titan.target_logit`,
      `titan.cross_entropy_from_stats`), whose rules contract the
      vocabulary-sharded logits;
    * context parallel (`cp > 1`): each input marked
      `dist.context_parallel = d` is split along dimension d (its
      sequence) over `cp`, load-balanced as the mesh says;
    * FSDP: dimension 0 of each parameter (of its tensor-parallel shard) is
      stored split over `dp_shard` and, with context parallel, `cp` (as
      TorchTitan's `dp_shard_cp` mesh); HSDP replicates over
      `dp_replicate`, DDP shards nothing.

    The markers of sequence, loss and context parallelism are consumed
    (removed); `dist.param_plan` stays for `dist-partition`. Data arguments
    hold each data-parallel rank's own rows of the global batch (the
    importer builds the per-rank local batch), so data parallelism does not
    split them. A function whose parameters have no plan, a malformed plan
    attribute, a parameter without a style under tensor parallelism, or a
    dimension that does not divide is an error naming it; so is a sequence
    that `2 cp` (times `tp` under sequence parallel) does not divide. The
    `pp` axis shards no parameter: each pipeline rank holds its stages'
    parameters whole (`dist-pipeline-split` cuts the stages).
  }];
  let options = [
    Option<"dpReplicate", "dp-replicate", "int64_t", "1", "dp_replicate degree">,
    Option<"dpShard", "dp-shard", "int64_t", "1", "dp_shard (FSDP) degree">,
    Option<"cp", "cp", "int64_t", "1", "context parallel degree">,
    Option<"tp", "tp", "int64_t", "1", "tensor parallel degree">,
    Option<"pp", "pp", "int64_t", "1", "pipeline parallel degree">,
    Option<"lossParallel", "loss-parallel", "bool", "true",
           "Compute the cross-entropy on vocabulary-sharded logits "
           "(TorchTitan's loss parallel); false gathers the logits">,
    Option<"forwardName", "forward", "std::string", "\"forward\"",
           "The model's forward function">,
  ];
  let dependentDialects = ["::titan::dist::DistDialect",
                           "::titan::TitanDialect"];
}

def DistPropagateSharding
    : Pass<"dist-propagate-sharding", "::mlir::ModuleOp"> {
  let summary = "Carry the plan's shardings through the graph by the ops' rules";
  let description = [{
    Gives every op of function `forward` its results' shardings
    (`dist.shardings`), in program order, from its operands' shardings and
    its rule (`ShardingRuleOpInterface`): parameters' claims on the rule's
    factors come first, then the other operands'; a sharding that does not
    fit the rule is left for `dist-partition` to reshard. Parameters are
    seen as the computation uses them: without the axes they are only
    stored split over (FSDP's `dp_shard`, `cp`), which are gathered first.
    A `dist.sharding_constraint` gives its result its sharding. An op
    without a rule must have replicated operands. Runs only on a mesh of
    more than one rank.
  }];
  let options = [
    Option<"forwardName", "forward", "std::string", "\"forward\"",
           "The model's forward function">,
  ];
}

def DistPartition : Pass<"dist-partition", "::mlir::ModuleOp"> {
  let summary = "Rewrite the forward function into the per-rank program";
  let description = [{
    Applies the shardings of `forward` (its arguments' and, from
    `dist-propagate-sharding`, every op's results'): each value takes its
    per-rank type and reshards are inserted where an op's rule needs its
    operand otherwise than it is (pending sums all-reduced or
    reduce-scattered, a split moved to another dimension all-to-all'd,
    other splits all-gathered, replicated values sliced with
    `dist.local_shard`), as start/wait pairs. Each op then adjusts itself
    to its split factors (`localize`: the vocabulary-parallel embedding's
    offset, context parallel's `dist.ring_attention`). Parameters are
    gathered over their storage axes before first use (FSDP) and marked
    with a `dist.replicate` over the axes they are replicated on (so that
    their gradients are summed there); the loss, a mean over the global
    batch, is averaged over the data-parallel axes and any axis it is still
    a partial mean over (`cp`). Differentiating the result (titan-autodiff)
    turns gathers into reduce-scatters and replications into all-reduces.
    Which parameters stay gathered for the backward follows FSDP's units,
    the transformer blocks of the parameters' `#dist.param_plan`; the pass
    consumes (removes) `dist.param_plan`.
  }];
  let options = [
    Option<"reshardAfterForward", "reshard-after-forward", "std::string",
           "\"default\"",
           "Which FSDP-gathered parameters the backward gathers again "
           "(TorchTitan's fsdp_reshard_after_forward): default = all but the "
           "last block's and the root module's (those whose dist.param_plan "
           "names no block), always = all but the root's, never = none. Kept "
           "ones are marked dist.keep_gathered">,
    Option<"rotateMethod", "cp-rotate-method", "std::string",
           "\"allgather\"",
           "How context-parallel attention exchanges K and V "
           "(TorchTitan's context_parallel_rotate_method): allgather or "
           "alltoall">,
    Option<"forwardName", "forward", "std::string", "\"forward\"",
           "The model's forward function">,
  ];
  let dependentDialects = ["::titan::dist::DistDialect"];
}

def DistExpandRingAttention
    : Pass<"dist-expand-ring-attention", "::mlir::ModuleOp"> {
  let summary = "Expand context-parallel attention into collectives and block kernels";
  let description = [{
    `dist.ring_attention` and `dist.ring_attention_grad` become
    `dist.context_attention` block kernels and their collectives. With
    `allgather`, K and V are all-gathered over the cp axes and one kernel
    computes every visible block (the backward reduce-scatters the keys'
    and values' gradients). With `alltoall`, K and V travel the ring: at
    step `s` the rank holds the block of the rank `s` back, the transfer of
    the next block is started before the current block's kernel (so it
    overlaps), and `dist.attention_merge` combines the blocks; in the
    backward the keys' and values' gradients travel with them and return
    to their rank after the last step.
  }];
  let dependentDialects = ["::titan::TitanDialect"];
}

def DistNarrowGathers : Pass<"dist-narrow-gathers", "::mlir::ModuleOp"> {
  let summary = "Gather narrow: move narrowing and float8 casts before all-gathers";
  let description = [{
    `titan.cast(dist.wait(dist.all_gather_start(x)))` to a narrower float
    type, where the cast is the gathered value's only user, becomes
    `dist.wait(dist.all_gather_start(titan.cast(x)))`: the same values (a
    cast is elementwise, a gather only moves elements), with the bytes on
    the wire and the gathered buffer of the narrow type. This is how FSDP2
    gathers bf16 parameter copies under mixed precision; it runs after
    `titan-autodiff` so the gradients' reduce-scatters stay in the reduce
    type.

    Likewise float8: when every user of a gathered value is a
    `titan.quantize` with one tensorwise scale that is known where the
    gather starts (a weight FSDP re-gathers for the backward keeps its
    forward's scale), each rank casts its shard and the gather moves
    float8; a `{transposed}` cast becomes `titan.transpose` of the
    gathered float8 weight. The same bits (the cast is elementwise, the
    transposed cast moves the same values), half the bytes on the wire,
    and one eighth of the casting for FSDP 8. A forward's scale is known
    before its gathers once `dist-batch-parameter-amaxes` computed it at
    the step's start (the pipeline runs this pass again after that one).
    Unlike torchao's `enable_fsdp_float8_all_gather`, which casts the f32
    shard directly (rounding differently), nothing changes but the bytes.

    Sequence parallel's gathered activations and output gradients too
    (tensorwise): their scale is the shards' amaxes all-reduced over tp,
    computed after the gather starts. Where only that computation and the
    gather's wait run between the gather's start and the scale, the shard
    is cast once the scale is known and the gather starts there, moving
    float8, as torchao's `Float8ColwiseParallel` casts before its gather
    (TorchTitan's float8 tensor parallel); a gather that other work would
    overlap stays where it is.
  }];
  let dependentDialects = ["::titan::TitanDialect"];
}

def DistAmaxFromShards : Pass<"dist-amax-from-shards", "::mlir::ModuleOp"> {
  let summary = "Reduce a gathered tensor's amax from the shards' amaxes";
  let description = [{
    `titan.amax(dist.wait(dist.all_gather_start(x)))` becomes the ranks'
    amaxes of `x` combined over the gather's axes: a maximum
    (`dist.all_reduce_start ... reduction max`) when the amax reduces the
    gathered dimension (tensorwise, or the axiswise amax across it), else
    their concatenation (`dist.all_gather_start` of the axiswise amaxes,
    which drops an uneven shard's zero padding as the gather did). For
    finite values these are the same bits: a maximum is exact and a gather
    only moves elements (zero padding never raises an amax); a NaN, which
    the amax propagates, may be dropped by the collective's maximum (NCCL's
    is fmaxf), as with any amax tensor parallel all-reduces, and the step's
    loss is NaN either way. A tensorwise amax already all-reduced over
    tensor parallel's axis joins that all-reduce. Float8's weight scales
    come from here: each rank reads its shard (fused into the shard's cast)
    instead of the whole gathered weight, and the gather is erased when
    nothing else reads it. Sequence parallel's gathered activations too:
    each rank reduces its part, as torchao's amax of a sharded DTensor.

    With `parameters-only`, only gathers of values computed from the
    function's parameters alone are rewritten: under pipeline parallelism
    the weights' amaxes are reduced from their shards before the phase
    split (which then computes them once per step), while an activation's
    amax in a later phase keeps reading the gathered value that phase
    already stashes rather than stashing its shard too.
  }];
  let options = [
    Option<"parametersOnly", "parameters-only", "bool", "false",
           "Rewrite only the amaxes of gathered parameter values">,
  ];
  let dependentDialects = ["::titan::TitanDialect"];
}

def DistBatchParameterAmaxes
    : Pass<"dist-batch-parameter-amaxes", "::mlir::ModuleOp"> {
  let summary = "Parameters' float8 amaxes at the step's start, in one "
                "all-reduce";
  let description = [{
    A tensorwise `titan.amax` of a function argument (through casts: a
    parameter shard's bf16 copy) whose only user is an all-reduce of the
    maximum (a sharded weight's amax, as `dist-amax-from-shards` and
    `titan-expand-float8`'s float8 all-gather write it) depends on nothing
    the step computes. The pass computes every such amax at the function's
    start, one element each of a vector that one `dist.all_reduce_start`
    maximises per group of ranks, and moves the `titan.float8_scale`s
    reading them up with them: TorchTitan's
    `precompute_float8_dynamic_scale_for_fsdp`, with the same values (a
    maximum is exact). Hundreds of 4-byte all-reduces, each queued behind
    the gathers on FSDP's stream and each holding up a scale, become one,
    and the scales are known before the forward's gathers, which
    `dist-narrow-gathers` then makes float8 gathers.
  }];
  let dependentDialects = ["::titan::TitanDialect",
                           "::mlir::func::FuncDialect"];
}

def DistPipelineSplit : Pass<"dist-pipeline-split", "::mlir::ModuleOp"> {
  let summary = "Cut the per-rank forward into pipeline stage functions";
  let description = [{
    Pipeline parallelism's stage cut, as TorchTitan's
    `pipeline_module_split` cuts by module names, with the stage plan of
    the module's `dist.pipeline` (which a model's pipeline plan decides:
    for Llama, `titan-llama-pipeline-stages`): `num_stages`, `stage_ranks`
    (the pipeline rank of each stage), `schedule`, `stage_modules` (one
    array of module names per stage) and `every_stage_modules`. Each op
    goes to the stage listing the module its location names (or a module
    containing it); an op without one goes to the earliest stage reading
    it. The result is one function `<prefix><s>` per stage (attributes
    `dist.stage = s`, `dist.pipeline_phase = "forward"`), taking the
    forward's arguments it reads and, after them, the activations the
    previous stage sends (`dist.stage_input = i`); it returns the
    activations the next stage reads (`dist.stage_output = i`; values read
    further on pass through the stages between), the last stage the loss.
    Values computed from nothing, or in a module of `every_stage_modules`
    (the RoPE angles), are computed again in each stage that reads them.
    The forward is erased and `dist.pipeline` keeps `num_stages`,
    `stage_ranks` and `schedule` (the module lists are consumed), plus
    `rank`: with `rank` >= 0 only that pipeline rank's stages are built
    (the program one pipeline rank runs). Errors: a missing or malformed
    stage plan, a parameter read by two stages (tied embeddings), an op of
    no stage, a value read before the stage computing it.
  }];
  let options = [
    Option<"forwardName", "forward", "std::string", "\"forward\"",
           "The per-rank forward function">,
    Option<"prefix", "prefix", "std::string", "\"stage\"",
           "Stage s becomes function <prefix><s>">,
    Option<"rank", "rank", "int64_t", "-1",
           "Build only this pipeline rank's stages (-1: every stage)">,
  ];
  let dependentDialects = ["::titan::dist::DistDialect",
                           "::mlir::func::FuncDialect"];
}

def DistPipelinePhases : Pass<"dist-pipeline-phases", "::mlir::ModuleOp"> {
  let summary = "Split each pipeline stage's step into the schedule's "
                "actions (F, B or F, I, W)";
  let description = [{
    Each function with `dist.pipeline_phase = "forward_backward"` (a stage
    of `dist-pipeline-split` differentiated by `titan-autodiff`) named
    `<stage>_forward_backward` is replaced by the functions a pipeline
    schedule runs as separate actions on one microbatch:
    `<stage>_forward` (F: the ops the stage's outputs or loss depend on)
    and `<stage>_backward` (B: the rest) or, with `split-weight-grad` (the
    zero-bubble schedules), `<stage>_backward_input` (I: the ops the
    gradients of the stage's inputs depend on) and
    `<stage>_backward_weight` (W: the rest, the weight gradients). The ops
    are partitioned, not duplicated, and keep their order, so running the
    phases in order computes exactly the unsplit step. A value a phase
    computes and a later phase reads is a result of the first and an
    argument of the later one, both tagged `dist.stash = j` (what the
    runtime keeps per microbatch between the actions); values computed from
    parameters alone (gathered or cast weights, the RoPE angles) are
    computed again instead. Each phase takes only the step's arguments it
    reads; its results are the step's results of that phase (outputs and
    loss in F, the stage inputs' gradients in I or B, the weight gradients
    in W or B), then its stashes. The stage's forward-only function (from
    `dist-pipeline-split`) is removed.

    With `hoist-parameter-values`, what the step computes from its
    parameters (FSDP's all-gathers, the low-precision copies; equal
    computations, such as a forward gather and its backward re-gather,
    merged first; values made from nothing, such as the RoPE angles, stay
    in the phases) moves to `<stage>_unshard`
    (`dist.pipeline_phase = "unshard"`), run once per step before the
    stage's first action: its results (`dist.per_step = j`) are arguments
    of the phases, so the weights stay gathered across the microbatches,
    as TorchTitan's FSDP keeps them under pipeline parallelism (its
    default there: reshard_after_forward = not pp_enabled). Without it,
    each microbatch's phases gather their weights again
    (fsdp_reshard_after_forward = "always").

    With `defer-gradient-reduction`, where
    the step adds a reduce-scattered gradient into the parameter's
    gradient (FSDP), it adds the whole gradient into a per-step sum
    instead (`dist.unsharded_grad = "<param>"`: an argument and a result of
    the backward phase), `<stage>_unshard` resets the sums (it exists
    then even when it hoists nothing), and
    `<stage>_reduce_grad` (`dist.pipeline_phase = "reduce_grad"`), run
    after the stage's last backward, adds the reduce-scatter of each sum to
    the gradient: one reduce-scatter per step instead of one per
    microbatch, as FSDP2 under TorchTitan's pipeline schedules.
  }];
  let options = [
    Option<"splitWeightGrad", "split-weight-grad", "bool", "false",
           "Split the backward into input- and weight-gradient phases (I, W)">,
    Option<"deferGradientReduction", "defer-gradient-reduction", "bool",
           "false",
           "Sum FSDP gradients over the step's microbatches and "
           "reduce-scatter once in <stage>_reduce_grad (the sums are "
           "reset in <stage>_unshard)">,
    Option<"hoistParameterValues", "hoist-parameter-values", "bool", "false",
           "Compute what depends on the parameters (FSDP's gathers, "
           "low-precision copies) once per step in <stage>_unshard">,
  ];
  let dependentDialects = ["::titan::dist::DistDialect",
                           "::mlir::func::FuncDialect"];
}

def DistAsyncTensorParallel
    : Pass<"dist-async-tensor-parallel", "::mlir::ModuleOp"> {
  let summary = "Async TP: fuse sequence-parallel gathers and scatters with their GEMMs";
  let description = [{
    TorchTitan's `enable_async_tensor_parallel` (PyTorch's micro-pipeline
    TP): on the per-rank program after autodiff,
    * `dist.wait(dist.all_gather_start(x, axes ["tp"], dim d))` whose users
      include `titan.linear` (or `titan.linear_grad_input`) GEMMs with the
      gathered value as their left operand, `d` a row dimension, becomes one
      `dist.all_gather_linear` of x and those GEMMs' weights (the GEMMs of
      the other kind, and every other user, read its gathered result);
    * `dist.wait(dist.reduce_scatter_start(v, axes ["tp"], dim d))` where
      `v` is a GEMM, or a sum (`titan.add`) of GEMMs of one kind, used only
      there, becomes one `dist.linear_reduce_scatter`.
    * Float8 (tensorwise), after `dist-narrow-gathers` made the gather
      move float8: a gather whose users include `titan.scaled_matmul`s of
      the `linear` (or `grad_input`) form with the gathered value as their
      untransposed lhs and one rank-0 lhs scale becomes one
      `dist.all_gather_scaled_matmul`; where a GEMM's weight or scales are
      computed after the wait (a weight's cast, which reads nothing
      gathered) the fused op goes after them, as long as nothing before
      that point reads the gathered value or an earlier GEMM's result;
    * a reduce-scatter of such scaled GEMMs (their lhs scales rank 0 or,
      rowwise, one per lhs row), or of their `titan.add` sum, becomes one
      `dist.scaled_matmul_reduce_scatter`.
    The kernels run the collective as a ring of send/recv, each shard's
    transfer overlapping the GEMMs of the previous one. Everything else is
    left as it is: gathers over other axes (FSDP's), along the last
    dimension, or of uneven shards, GEMMs that are none of those (rowwise
    Float8's gathers, whose per-token scales come from the gathered
    tensor; grad_weight's form) and the amax
    all-reduces; a tensor-parallel gather or scatter next to a GEMM that
    it declines gets a remark saying why.
  }];
  let dependentDialects = ["::titan::dist::DistDialect",
                           "::titan::TitanDialect"];
}

#endif // TITAN_DIALECT_DIST_TRANSFORMS_PASSES_TD
