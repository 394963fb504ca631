//===- TitanDialect.td - titan dialect definition ----------*- tablegen -*-===//
//
// The `titan` dialect: model-level tensor ops for Llama training graphs.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DIALECT_TITAN_IR_TITANDIALECT_TD
#define TITAN_DIALECT_TITAN_IR_TITANDIALECT_TD

include "mlir/IR/OpBase.td"

def Titan_Dialect : Dialect {
  let name = "titan";
  let cppNamespace = "::titan";
  let summary = "Model-level tensor ops for Llama training graphs";
  let description = [{
    The `titan` dialect describes one training step of a Llama model as a graph
    of value-semantic tensor ops with static shapes: token embedding, RMSNorm,
    rotary embedding, causal grouped-query attention, linear layers, the
    SiLU-gated feed-forward network, residual adds and the cross-entropy loss.
    Each op's description states its exact numerical semantics, which the CPU
    and CUDA targets implement and the parity tests check against PyTorch.

    The importer produces a `func.func` whose arguments are the model
    parameters, tagged with `titan.param = "<TorchTitan name>"`, followed by
    the token ids and labels, tagged with `titan.input = "tokens"` and
    `titan.input = "labels"`. The function returns the scalar loss.
  }];
  let hasCanonicalizer = 0;
  let useDefaultAttributePrinterParser = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    /// Argument attribute naming a model parameter (TorchTitan FQN).
    static constexpr ::llvm::StringLiteral kParamAttrName = "titan.param";
    /// Arguments holding the gradient and the AdamW moments of a parameter,
    /// tagged with the parameter's name.
    static constexpr ::llvm::StringLiteral kGradAttrName = "titan.grad";
    static constexpr ::llvm::StringLiteral kExpAvgAttrName = "titan.exp_avg";
    static constexpr ::llvm::StringLiteral kExpAvgSqAttrName =
        "titan.exp_avg_sq";
    /// Argument attribute naming a non-parameter input.
    static constexpr ::llvm::StringLiteral kInputAttrName = "titan.input";
    static constexpr ::llvm::StringLiteral kInputNames[] = {
        "tokens", "labels", "document_starts", "step", "total_steps"};
    /// Recompute regions (titan-activation-checkpoint): the transformer
    /// block whose activations the backward computes again, on each forward
    /// op of the block; ops of a region whose results the policy keeps
    /// carry `titan.save`; the copies titan-autodiff makes in the backward
    /// carry `titan.recomputed`.
    static constexpr ::llvm::StringLiteral kRecomputeRegionAttrName =
        "titan.recompute_region";
    static constexpr ::llvm::StringLiteral kSaveAttrName = "titan.save";
    static constexpr ::llvm::StringLiteral kRecomputedAttrName =
        "titan.recomputed";
    /// Result attribute naming a non-parameter output of a step.
    static constexpr ::llvm::StringLiteral kOutputAttrName = "titan.output";
    static constexpr ::llvm::StringLiteral kOutputNames[] = {
        "loss", "grad_norm", "lr"};
  }];
}

/// Every tensor of the op has a byte size that fits in int64
/// (titan/Dialect/Titan/IR/TensorSize.h).
def Titan_TensorSizesFit : NativeOpTrait<"TensorSizesFit"> {
  let cppNamespace = "::titan::OpTrait";
}

class Titan_Op<string mnemonic, list<Trait> traits = []>
    : Op<Titan_Dialect, mnemonic, !listconcat(traits, [Titan_TensorSizesFit])>;

#endif // TITAN_DIALECT_TITAN_IR_TITANDIALECT_TD
