//===- AdjointInterface.td - an op's reverse-mode rule ------*- tablegen -*-===//

#ifndef TITAN_DIALECT_TITAN_IR_ADJOINTINTERFACE_TD
#define TITAN_DIALECT_TITAN_IR_ADJOINTINTERFACE_TD

include "mlir/IR/OpBase.td"

def Titan_AdjointOpInterface : OpInterface<"AdjointOpInterface"> {
  let cppNamespace = "::titan";
  let description = [{
    An op that `titan-autodiff` can differentiate: given the gradients of
    its results (zeros where a result has none), it builds the gradients of
    its operands at the builder's insertion point and hands each to the
    context (`AdjointContext::addGradient`). Forward values are read through
    `AdjointContext::forwardValue` (FSDP may gather a parameter again for
    the backward). An op without a gradient (a shift the loss must not
    depend on) emits an error.

    For a collective, the rule is on its `*_start` op and `resultGrads`
    holds the gradient of the value its `dist.wait` yields.
  }];
  let methods = [
    InterfaceMethod<"Builds the gradients of the operands.",
      "::mlir::LogicalResult", "buildAdjoint",
      (ins "::mlir::OpBuilder &":$builder,
           "::mlir::ArrayRef<::mlir::Value>":$resultGrads,
           "::titan::AdjointContext &":$context)>,
  ];
}

#endif // TITAN_DIALECT_TITAN_IR_ADJOINTINTERFACE_TD
