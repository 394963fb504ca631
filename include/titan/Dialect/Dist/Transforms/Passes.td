//===- Passes.td - dist dialect passes ---------------------*- tablegen -*-===//

#ifndef TITAN_DIALECT_DIST_TRANSFORMS_PASSES_TD
#define TITAN_DIALECT_DIST_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def DistParallelize : Pass<"dist-parallelize", "::mlir::ModuleOp"> {
  let summary = "Choose the device mesh and shard the model's parameters";
  let description = [{
    Sets the module's `#dist.mesh` from the parallel degrees and annotates the
    parameters of function `forward` (arguments tagged `titan.param`) with
    TorchTitan's plans: with `dp-shard > 1` (FSDP, or HSDP with
    `dp-replicate > 1`) every parameter is sharded on its first dimension
    over `dp_shard`; otherwise parameters are replicated (DDP over
    `dp_replicate`). Data arguments hold each data-parallel rank's own rows
    of the global batch (the importer builds the per-rank local batch), so
    they are not annotated. A parameter whose first dimension does not divide
    is an error naming it.

    With `tp > 1`, TorchTitan's Llama tensor-parallel plan, matched on
    parameter names: `wq`, `wk`, `wv`, `w1`, `w3` and `output` column-wise
    and `tok_embeddings` by vocabulary (dimension 0 over `tp`), `wo` and
    `w2` row-wise (dimension 1 over `tp`), norm weights replicated (sequence
    parallel). FSDP then shards dimension 0 of the tensor-parallel shard:
    `[["tp", "dp_shard"]]` or `[["dp_shard"], ["tp"]]`. A parameter outside
    the plan is an error. Context and pipeline parallel degrees above 1 are
    rejected: their plans are not implemented yet.
  }];
  let options = [
    Option<"dpReplicate", "dp-replicate", "int64_t", "1", "dp_replicate degree">,
    Option<"dpShard", "dp-shard", "int64_t", "1", "dp_shard (FSDP) degree">,
    Option<"cp", "cp", "int64_t", "1", "context parallel degree">,
    Option<"tp", "tp", "int64_t", "1", "tensor parallel degree">,
    Option<"pp", "pp", "int64_t", "1", "pipeline parallel degree">,
    Option<"forwardName", "forward", "std::string", "\"forward\"",
           "The model's forward function">,
  ];
  let dependentDialects = ["::titan::dist::DistDialect"];
}

def DistPartition : Pass<"dist-partition", "::mlir::ModuleOp"> {
  let summary = "Rewrite the forward function into the per-rank program";
  let description = [{
    Gives every sharded argument of `forward` its per-rank shape and inserts
    the collectives that make the per-rank program compute the unsharded
    one: an all-gather (start/wait) of each sharded parameter before use, a
    `dist.replicate` over the data-parallel axes a parameter is replicated on
    (so that its gradient is all-reduced), and an all-reduce (mean) of the
    loss over the data-parallel axes, the loss being the mean over the global
    batch. Differentiating the result (titan-autodiff) turns the gathers into
    gradient reduce-scatters and the replications into all-reduces.

    With a `tp` axis the model's ops are rewritten too (sequence parallel,
    as TorchTitan): activations between blocks are split along the sequence
    (`[B, S/tp, D]`); they are all-gathered along the sequence before a
    column-wise linear, whose output is split by features (heads), and a
    row-wise linear's partial sums are reduce-scattered back along the
    sequence. The embedding looks up its vocabulary slice (rank offset from
    `dist.shard_offset`) and reduce-scatters. The output projection yields
    vocabulary-sharded logits; with `loss-parallel` the cross-entropy is
    computed from per-row statistics (max all-reduced with `max`; sum of
    exponentials and the label's logit all-reduced with `sum`), otherwise
    the logits are all-gathered first. Parameters replicated over `tp`
    (norms) get a `dist.replicate` over `tp`: their gradients are partial
    sums over the sequence shards.
  }];
  let options = [
    Option<"reshardAfterForward", "reshard-after-forward", "std::string",
           "\"default\"",
           "Which FSDP-gathered parameters the backward gathers again "
           "(TorchTitan's fsdp_reshard_after_forward): default = all but the "
           "last block and the root's (embedding, final norm, output), "
           "always = all but the root's, never = none. Kept ones are marked "
           "dist.keep_gathered">,
    Option<"lossParallel", "loss-parallel", "bool", "true",
           "Compute the cross-entropy on vocabulary-sharded logits "
           "(TorchTitan's loss parallel); false gathers the logits">,
    Option<"forwardName", "forward", "std::string", "\"forward\"",
           "The model's forward function">,
  ];
  let dependentDialects = ["::titan::dist::DistDialect"];
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

#endif // TITAN_DIALECT_DIST_TRANSFORMS_PASSES_TD
