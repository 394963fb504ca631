//===- TensorParallelInterface.td - an op's TP + SP rule ---*- tablegen -*-===//

#ifndef TITAN_DIALECT_DIST_IR_TENSORPARALLELINTERFACE_TD
#define TITAN_DIALECT_DIST_IR_TENSORPARALLELINTERFACE_TD

include "mlir/IR/OpBase.td"

def Dist_TensorParallelOpInterface : OpInterface<"TensorParallelOpInterface"> {
  let cppNamespace = "::titan::dist";
  let description = [{
    How an op runs under tensor + sequence parallelism, for `dist-partition`:
    given its operands' layouts over the `tp` axis (replicated, split along
    one dimension, or partial: a sum still pending over the ranks), the rule
    rewrites the op to its per-rank form through the rewriter (replicating
    operands it cannot use as they are, giving its results their layouts
    and per-rank types, inserting collectives). The titan ops' rules are
    external models (lib/Dialect/Dist/IR/TensorParallelModels.cpp), since
    the titan dialect does not depend on dist.
  }];
  let methods = [
    InterfaceMethod<"Rewrites the op to its tensor-parallel per-rank form.",
      "::mlir::LogicalResult", "partitionTensorParallel",
      (ins "::titan::dist::TensorParallelRewriter &":$rewriter)>,
  ];
}

#endif // TITAN_DIALECT_DIST_IR_TENSORPARALLELINTERFACE_TD
