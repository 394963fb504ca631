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

#endif // TITAN_DIALECT_TITAN_TRANSFORMS_PASSES_TD
