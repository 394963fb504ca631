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
    device mesh with named axes (`dp_replicate`, `dp_shard`, `cp`, `tp`,
    `pp`; ranks are laid out row-major in that order with `tp` innermost), a
    sharding per value (which mesh axes split which tensor dimension), and
    collectives over subsets of the mesh axes. Every collective is a
    `*_start` op returning a `!dist.future` and a `dist.wait` that yields the
    value, so schedules can overlap communication with compute.
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let useDefaultTypePrinterParser = 1;
  let extraClassDeclaration = [{
    /// Module attribute holding the #dist.mesh of the program.
    static constexpr ::llvm::StringLiteral kMeshAttrName = "dist.mesh";
    /// Argument attribute: the #dist.sharding of a function argument.
    static constexpr ::llvm::StringLiteral kShardingAttrName = "dist.sharding";
    /// Function attribute: the arguments have their per-rank (local) types;
    /// without it a sharded argument has its global type.
    static constexpr ::llvm::StringLiteral kPartitionedAttrName =
        "dist.partitioned";
    /// Argument attribute: this FSDP-sharded parameter stays gathered from
    /// its forward use to its backward use (no reshard after forward).
    static constexpr ::llvm::StringLiteral kKeepGatheredAttrName =
        "dist.keep_gathered";
  }];
}

class Dist_Op<string mnemonic, list<Trait> traits = []>
    : Op<Dist_Dialect, mnemonic, !listconcat(traits, [Titan_TensorSizesFit])>;

#endif // TITAN_DIALECT_DIST_IR_DISTDIALECT_TD
