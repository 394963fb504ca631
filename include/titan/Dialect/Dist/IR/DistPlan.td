//===- DistPlan.td - a model's parallel plan as attributes -*- tablegen -*-===//
//
// What a model plan (TorchTitan's for Llama: lib/Import/LlamaPlan.cpp) tells
// the dist passes about each parameter, so that they read attributes
// instead of parameter names. DistOps.td includes this file: its
// definitions are dist attributes like the others. The plan's other
// markers are plain attributes named in DistPlan.h.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DIALECT_DIST_IR_DISTPLAN_TD
#define TITAN_DIALECT_DIST_IR_DISTPLAN_TD

include "titan/Dialect/Dist/IR/DistDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

/// TorchTitan's tensor-parallel styles (parallelize_module's plan), as the
/// dimension of the weight each one splits.
def Dist_TensorParallelStyle : I32EnumAttr<"TensorParallelStyle",
    "how tensor parallelism splits a parameter", [
      I32EnumAttrCase<"Colwise", 0, "colwise">,
      I32EnumAttrCase<"Rowwise", 1, "rowwise">,
      I32EnumAttrCase<"Embedding", 2, "embedding">,
      I32EnumAttrCase<"Replicate", 3, "replicate">]> {
  let cppNamespace = "::titan::dist";
  let genSpecializedAttr = 0;
}

def Dist_ParamPlanAttr : AttrDef<Dist_Dialect, "ParamPlan"> {
  let mnemonic = "param_plan";
  let summary = "how a model's parallel plan splits one parameter";
  let description = [{
    `#dist.param_plan<tp = colwise, block = 3>`: the argument attribute
    `dist.param_plan` of a parameter (an argument tagged `titan.param`),
    which `dist-parallelize` and `dist-partition` read instead of its name.
    A model plan attaches it (the Llama importer attaches TorchTitan's;
    `titan-llama-plan` attaches it to hand-written IR).

    `tp`, the tensor-parallel style (TorchTitan's `parallelize_module`
    styles), says which dimension tensor parallelism splits: `colwise`
    dimension 0, a linear weight's output features (`ColwiseParallel`);
    `rowwise` dimension 1, its input features (`RowwiseParallel`);
    `embedding` dimension 0 of an embedding table, its vocabulary
    (`RowwiseParallel` on an `nn.Embedding`); `replicate` none (the norms
    of `SequenceParallel`). A parameter without a style cannot be
    tensor-parallel.

    `block` is the transformer block the parameter belongs to, FSDP's
    wrapping unit (TorchTitan's `fully_shard` per block); a parameter
    without one belongs to the root module. FSDP stores dimension 0 of
    every parameter split (`fully_shard`'s `Shard(0)`), whatever its plan.
  }];
  let parameters = (ins
      OptionalParameter<"std::optional<::titan::dist::TensorParallelStyle>">:$tp,
      OptionalParameter<"std::optional<int64_t>">:$block);
  let assemblyFormat = "`<` struct(params) `>`";
}

#endif // TITAN_DIALECT_DIST_IR_DISTPLAN_TD
