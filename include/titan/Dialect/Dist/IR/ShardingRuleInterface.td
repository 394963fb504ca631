//===- ShardingRuleInterface.td - an op's sharding rule ----*- tablegen -*-===//

#ifndef TITAN_DIALECT_DIST_IR_SHARDINGRULEINTERFACE_TD
#define TITAN_DIALECT_DIST_IR_SHARDINGRULEINTERFACE_TD

include "mlir/IR/OpBase.td"

def Dist_ShardingRuleOpInterface : OpInterface<"ShardingRuleOpInterface"> {
  let cppNamespace = "::titan::dist";
  let description = [{
    How an op's operand and result dimensions correspond, in Shardy's
    factor form (titan/Dialect/Dist/IR/ShardingRule.h): every dimension is a
    product of factors; a factor shared by operands and results passes its
    sharding through, a contracted factor leaves a pending reduction when it
    is split, and some factors may not be split at all.
    `dist-propagate-sharding` and `dist-partition` read nothing else about
    the op, except through `localize`: the per-rank fix-ups an op needs when
    a factor is split (the first row of its vocabulary shard, a ring over
    the sequence). The rules know nothing about Llama; the titan ops' rules
    are external models (lib/Dialect/Dist/IR/ShardingRules.cpp), since the
    titan dialect does not depend on dist.
  }];
  let methods = [
    InterfaceMethod<"The op's factors and how its dimensions use them.",
      "::titan::dist::ShardingRule", "getShardingRule">,
    InterfaceMethod<[{
        Adjusts the op, already given its per-rank operands and result
        types, to the factors' shardings (`localizer` says which axes split
        each factor). Most ops need nothing.
      }],
      "::mlir::LogicalResult", "localize",
      (ins "::titan::dist::ShardingLocalizer &":$localizer), "",
      "return ::mlir::success();">,
  ];
}

#endif // TITAN_DIALECT_DIST_IR_SHARDINGRULEINTERFACE_TD
