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
    is an error naming it. Tensor, context and pipeline parallel degrees
    above 1 are rejected: their plans are not implemented yet.
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
  }];
  let options = [
    Option<"forwardName", "forward", "std::string", "\"forward\"",
           "The model's forward function">,
  ];
  let dependentDialects = ["::titan::dist::DistDialect"];
}

#endif // TITAN_DIALECT_DIST_TRANSFORMS_PASSES_TD
