//===- Passes.td - dist dialect passes ---------------------*- tablegen -*-===//

#ifndef TITAN_DIALECT_DIST_TRANSFORMS_PASSES_TD
#define TITAN_DIALECT_DIST_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def DistParallelize : Pass<"dist-parallelize", "::mlir::ModuleOp"> {
  let summary = "Choose the device mesh and apply TorchTitan's parallel plan as shardings";
  let description = [{
    Sets the module's `#dist.mesh` from the parallel degrees and writes
    TorchTitan's plan for function `forward` as shardings
    (`#dist.sharding`) of its parameters and inputs, plus the constraints the
    sharding rules cannot choose alone; `dist-propagate-sharding` carries
    them through the graph. The plan, matched on parameter names as
    TorchTitan's `parallelize_module` matches modules:

    * tensor parallel (`tp > 1`): `wq`, `wk`, `wv`, `w1`, `w3`, `output`
      column-wise and `tok_embeddings` by vocabulary (dimension 0 over
      `tp`), `wo` and `w2` row-wise (dimension 1), norm weights replicated.
      Sequence parallel: the results of the embedding and of the row-wise
      linears are constrained to be split along the sequence. Loss parallel
      (`loss-parallel`, the default): the cross-entropy is written as its
      per-row statistics (`titan.row_max`, `titan.sum_exp`,
      `titan.target_logit`, `titan.cross_entropy_from_stats`), whose rules
      contract the vocabulary-sharded logits;
    * context parallel (`cp > 1`): the token and label inputs are split
      load-balanced along the sequence over `cp` (under sequence parallel
      the residual stream over `cp` then `tp`);
    * FSDP: dimension 0 of each parameter (of its tensor-parallel shard) is
      stored split over `dp_shard` and, with context parallel, `cp` (as
      TorchTitan's `dp_shard_cp` mesh); HSDP replicates over
      `dp_replicate`, DDP shards nothing.

    Data arguments hold each data-parallel rank's own rows of the global
    batch (the importer builds the per-rank local batch), so data
    parallelism does not split them. A parameter outside the plan, or one
    whose dimension does not divide, is an error naming it; so is a
    sequence that `2 cp` (times `tp` under sequence parallel) does not
    divide. The `pp` axis shards no parameter: each pipeline rank holds its
    stages' parameters whole (`dist-pipeline-split` cuts the stages).
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
  }];
  let options = [
    Option<"reshardAfterForward", "reshard-after-forward", "std::string",
           "\"default\"",
           "Which FSDP-gathered parameters the backward gathers again "
           "(TorchTitan's fsdp_reshard_after_forward): default = all but the "
           "last block and the root's (embedding, final norm, output), "
           "always = all but the root's, never = none. Kept ones are marked "
           "dist.keep_gathered">,
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
  let summary = "Gather narrow: move narrowing casts before all-gathers";
  let description = [{
    `titan.cast(dist.wait(dist.all_gather_start(x)))` to a narrower float
    type, where the cast is the gathered value's only user, becomes
    `dist.wait(dist.all_gather_start(titan.cast(x)))`: the same values (a
    cast is elementwise, a gather only moves elements), with the bytes on
    the wire and the gathered buffer of the narrow type. This is how FSDP2
    gathers bf16 parameter copies under mixed precision; it runs after
    `titan-autodiff` so the gradients' reduce-scatters stay in the reduce
    type.
  }];
  let dependentDialects = ["::titan::TitanDialect"];
}

def DistPipelineSplit : Pass<"dist-pipeline-split", "::mlir::ModuleOp"> {
  let summary = "Cut the per-rank forward into pipeline stage functions";
  let description = [{
    Pipeline parallelism's stage cut, with TorchTitan v0.2.0's plan
    (`pipeline_module_split`: the `L + first + last` effective layers split
    evenly, the remainder on the earliest stages; the stage count and the
    schedule's stages per rank checked as TorchTitan does) over the mesh's
    `pp` axis. Each op goes to the stage of the module its location names
    (`tok_embeddings` to the first stage, `layers.<i>` to the stage holding
    layer i, `norm`, `output` and `loss` to the last); an op without one
    goes to the earliest stage reading it. The result is one function
    `<prefix><s>` per stage (attributes `dist.stage = s`,
    `dist.pipeline_phase = "forward"`), taking the forward's arguments it
    reads and, after them, the activations the previous stage sends
    (`dist.stage_input = i`); it returns the activations the next stage
    reads (`dist.stage_output = i`; values read further on pass through the
    stages between), the last stage the loss. Values read by every stage and
    computed from nothing (the RoPE angles, location `freqs_cis`) are
    computed again in each stage. The forward is erased and the module gets
    `dist.pipeline = {num_stages, stage_ranks, schedule[, rank]}`. With
    `rank` >= 0 only that pipeline rank's stages are built (the program one
    pipeline rank runs). Errors: a plan that does not fit the model (naming
    the config keys), a parameter read by two stages (tied embeddings), an
    op of no stage, a value read before the stage computing it.
  }];
  let options = [
    Option<"forwardName", "forward", "std::string", "\"forward\"",
           "The per-rank forward function">,
    Option<"prefix", "prefix", "std::string", "\"stage\"",
           "Stage s becomes function <prefix><s>">,
    Option<"schedule", "schedule", "std::string", "\"1F1B\"",
           "parallelism.pipeline_parallel_schedule (how many stages each "
           "rank holds)">,
    Option<"layersPerStage", "layers-per-stage", "int64_t", "0",
           "parallelism.pipeline_parallel_layers_per_stage (0: unset)">,
    Option<"firstStageLessLayers", "first-stage-less-layers", "int64_t", "1",
           "parallelism.pipeline_parallel_first_stage_less_layers">,
    Option<"lastStageLessLayers", "last-stage-less-layers", "int64_t", "1",
           "parallelism.pipeline_parallel_last_stage_less_layers">,
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
    as TorchTitan's FSDP keeps them under pipeline parallelism.

    With `defer-gradient-reduction` (and `hoist-parameter-values`), where
    the step adds a reduce-scattered gradient into the parameter's
    gradient (FSDP), it adds the whole gradient into a per-step sum
    instead (`dist.unsharded_grad = "<param>"`: an argument and a result of
    the backward phase), `<stage>_unshard` resets the sums, and
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
           "reduce-scatter once in <stage>_reduce_grad (needs "
           "hoist-parameter-values)">,
    Option<"hoistParameterValues", "hoist-parameter-values", "bool", "false",
           "Compute what depends on the parameters (FSDP's gathers, "
           "low-precision copies) once per step in <stage>_unshard">,
  ];
  let dependentDialects = ["::titan::dist::DistDialect",
                           "::mlir::func::FuncDialect"];
}

def DistPipelineSchedule : Pass<"dist-pipeline-schedule", "::mlir::ModuleOp"> {
  let summary = "Write every pipeline rank's action list into the IR";
  let description = [{
    Builds the action lists of the module's pipeline (`dist.pipeline`:
    its stages and their ranks, the schedule's name) for `microbatches`
    microbatches: GPipe, 1F1B, Interleaved1F1B, LoopedBFS,
    InterleavedZeroBubble, ZBVZeroBubble or DualPipeV
    (lib/Pipeline/Schedule.cpp), or the file `csv` in TorchTitan's format.
    Each rank's list gets the transfers it implies in TorchTitan's lowered
    notation (`RECV_F` before a forward whose previous stage is on another
    rank, `SEND_F` after one whose next stage is; `RECV_B` and `SEND_B`
    around each B or I), is checked as `dist-pipeline-verify` checks it,
    and is stored in `dist.pipeline` as `actions` (one array of strings per
    pipeline rank, e.g. `["0F0", "0SEND_F0", ...]`) with `microbatches`.
    The runtime executes the rank's list. Errors name the config keys of
    settings that cannot run.
  }];
  let options = [
    Option<"microbatches", "microbatches", "int64_t", "1",
           "Microbatches per step (training.local_batch_size / "
           "parallelism.pipeline_parallel_microbatch_size)">,
    Option<"csv", "csv", "std::string", "\"\"",
           "parallelism.pipeline_parallel_schedule_csv: run this file's "
           "actions instead of the named schedule's">,
  ];
}

def DistPipelineVerify : Pass<"dist-pipeline-verify", "::mlir::ModuleOp"> {
  let summary = "Check the pipeline action lists of a module";
  let description = [{
    Checks `dist.pipeline`'s `actions`: each is an action of one of its
    rank's stages (`<stage><F|B|I|W|SEND_F|RECV_F|SEND_B|RECV_B><mb>`);
    every microbatch of every stage has one F and one B or one I and one W,
    F before I or B, I before W; an action that needs a remote tensor has
    its RECV before it, a tensor a remote stage reads has its SEND after
    the action computing it, each SEND its RECV on the peer's rank in the
    same order between each pair of ranks; and the list simulates to the
    end (no rank waits on an action that comes later in some rank's list).
    A rank blocks only at its receives, each after its peer's matching
    send follows an action that can run, so a list that passes cannot
    deadlock.
  }];
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
    Both kernels run the collective as a ring of send/recv, each shard's
    transfer overlapping the GEMMs of the previous one. Everything else is
    left as it is: gathers over other axes (FSDP's), along the last
    dimension, or of uneven shards, and GEMMs that are not `titan.linear`
    or `titan.linear_grad_input` (Float8's `titan.scaled_matmul`, whose
    amax all-reduces are untouched); a tensor-parallel gather or scatter
    next to a GEMM that it declines gets a remark saying why.
  }];
  let dependentDialects = ["::titan::dist::DistDialect",
                           "::titan::TitanDialect"];
}

#endif // TITAN_DIALECT_DIST_TRANSFORMS_PASSES_TD
