//===- DistDialect.td - dist dialect definition ------------*- tablegen -*-===//

#ifndef TITAN_DIALECT_DIST_IR_DISTDIALECT_TD
#define TITAN_DIALECT_DIST_IR_DISTDIALECT_TD

include "mlir/IR/OpBase.td"
include "titan/Dialect/Titan/IR/TitanDialect.td"
include "mlir/IR/AttrTypeBase.td"

def Dist_Dialect : Dialect {
  let name = "dist";
  let cppNamespace = "::titan::dist";
  let summary = "Device meshes, shardings and asynchronous collectives";
  let description = [{
    The `dist` dialect describes how a titan program is spread over ranks: a
    device mesh with named axes (titan/Contract/MeshAxes.h: `pp`,
    `dp_replicate`, `dp_shard`, `cp`, `tp`; ranks are laid out row-major in
    that order with `tp` innermost), a
    sharding per value (which mesh axes split which tensor dimension), and
    collectives over subsets of the mesh axes. Every collective is a
    `*_start` op returning a `!dist.future` and a `dist.wait` that yields the
    value, so schedules can overlap communication with compute.
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let useDefaultTypePrinterParser = 1;
  let extraClassDeclaration = [{
    /// Module attribute holding the #dist.mesh of the program.
    static constexpr ::llvm::StringLiteral kMeshAttrName = "dist.mesh";
    /// Argument attribute: the #dist.sharding of a function argument.
    static constexpr ::llvm::StringLiteral kShardingAttrName = "dist.sharding";
    /// Operation attribute: the #dist.sharding of each result
    /// (dist-propagate-sharding; kept by dist-partition).
    static constexpr ::llvm::StringLiteral kShardingsAttrName =
        "dist.shardings";
    /// Function attribute: the arguments have their per-rank (local) types;
    /// without it a sharded argument has its global type.
    static constexpr ::llvm::StringLiteral kPartitionedAttrName =
        "dist.partitioned";
    /// Argument attribute: this FSDP-sharded parameter stays gathered from
    /// its forward use to its backward use (no reshard after forward).
    static constexpr ::llvm::StringLiteral kKeepGatheredAttrName =
        "dist.keep_gathered";

    // Pipeline parallelism (dist-pipeline-split, dist-pipeline-phases).
    /// Module attribute: the pipeline's stages, {num_stages, stage_ranks,
    /// schedule[, rank]} (rank: the pipeline rank whose stages the module
    /// holds, when it holds one rank's only).
    static constexpr ::llvm::StringLiteral kPipelineAttrName = "dist.pipeline";
    /// Function attribute (i64): the pipeline stage the function computes.
    static constexpr ::llvm::StringLiteral kStageAttrName = "dist.stage";
    /// Function attribute (string): which part of a stage's training step
    /// the function is: unshard (once per step), forward, forward_backward,
    /// backward, backward_input, backward_weight or reduce_grad (once per
    /// step).
    static constexpr ::llvm::StringLiteral kPhaseAttrName =
        "dist.pipeline_phase";
    /// Argument attribute (i64 i): the i-th activation the previous stage
    /// sends this one.
    static constexpr ::llvm::StringLiteral kStageInputAttrName =
        "dist.stage_input";
    /// Result attribute (i64 i): the i-th activation this stage sends the
    /// next one.
    static constexpr ::llvm::StringLiteral kStageOutputAttrName =
        "dist.stage_output";
    /// Argument attribute (i64 i): the gradient of stage output i, sent
    /// back by the next stage.
    static constexpr ::llvm::StringLiteral kStageOutputGradAttrName =
        "dist.stage_output_grad";
    /// Result attribute (i64 i): the gradient of stage input i, sent back
    /// to the previous stage.
    static constexpr ::llvm::StringLiteral kStageInputGradAttrName =
        "dist.stage_input_grad";
    /// Argument and result attribute (i64 j): value j that one phase of a
    /// stage keeps for a later phase of the same microbatch.
    static constexpr ::llvm::StringLiteral kStashAttrName = "dist.stash";
    /// Argument and result attribute (i64 j): value j a stage computes
    /// once per step from its parameters (its FSDP-gathered and cast
    /// weights) for every microbatch's phases.
    static constexpr ::llvm::StringLiteral kPerStepAttrName = "dist.per_step";
    /// Argument and result attribute (string: a parameter's name): the
    /// parameter's whole (unreduced) gradient, summed over a step's
    /// microbatches before one reduce-scatter (FSDP under pipeline
    /// parallelism).
    static constexpr ::llvm::StringLiteral kUnshardedGradAttrName =
        "dist.unsharded_grad";
  }];
}

class Dist_Op<string mnemonic, list<Trait> traits = []>
    : Op<Dist_Dialect, mnemonic, !listconcat(traits, [Titan_TensorSizesFit])>;

#endif // TITAN_DIALECT_DIST_IR_DISTDIALECT_TD
