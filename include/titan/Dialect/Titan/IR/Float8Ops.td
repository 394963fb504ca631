//===- Float8Ops.td - Float8 training ops ------------------*- tablegen -*-===//
//
// torchao's float8 training (TorchTitan's quantize.linear.float8) in two
// levels: `titan.float8_linear` and its two gradient ops say *which* GEMM
// runs in float8 under which recipe (what titan-float8 inserts and
// titan-autodiff differentiates); titan-expand-float8 then writes each as
// the amax reductions, scales, saturating casts and scaled GEMMs that run
// as kernels.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DIALECT_TITAN_IR_FLOAT8OPS_TD
#define TITAN_DIALECT_TITAN_IR_FLOAT8OPS_TD

def Titan_Float8Tensor : StaticShapeTensorOf<[F8E4M3FN, F8E5M2]>;
def Titan_F32Tensor : StaticShapeTensorOf<[F32]>;

/// torchao's float8 scaling recipes (TorchTitan's
/// `quantize.linear.float8.recipe_name`).
def Titan_Float8Recipe : I32EnumAttr<"Float8Recipe", "a float8 scaling recipe", [
      I32EnumAttrCase<"Tensorwise", 0, "tensorwise">,
      I32EnumAttrCase<"Rowwise", 1, "rowwise">,
      I32EnumAttrCase<"RowwiseWithGwHp", 2, "rowwise_with_gw_hp">]> {
  let cppNamespace = "::titan";
  let genSpecializedAttr = 0;
}
def Titan_Float8RecipeAttr
    : EnumAttr<Titan_Dialect, Titan_Float8Recipe, "float8_recipe"> {
  let assemblyFormat = "$value";
}

/// Which of titan.linear's GEMMs a titan.scaled_matmul computes; the value is
/// the kernel's parameter (runtime/include/titanrt/KernelABI.h).
def Titan_GemmForm : I32EnumAttr<"GemmForm", "one of titan.linear's GEMMs", [
      I32EnumAttrCase<"Linear", 0, "linear">,
      I32EnumAttrCase<"GradInput", 1, "grad_input">,
      I32EnumAttrCase<"GradWeight", 2, "grad_weight">]> {
  let cppNamespace = "::titan";
  let genSpecializedAttr = 0;
}
def Titan_GemmFormAttr : EnumAttr<Titan_Dialect, Titan_GemmForm, "gemm_form"> {
  let assemblyFormat = "$value";
}

class Titan_Float8GemmOp<string mnemonic, list<Trait> traits = []>
    : Titan_Op<mnemonic, !listconcat(traits, [Pure])> {
  let results = (outs Titan_FloatTensor:$result);
  let hasVerifier = 1;
  code commonDescription = [{
    `recipe` is torchao's (TorchTitan v0.2.0's
    `quantize.linear.float8.recipe_name`): `tensorwise`, `rowwise` or
    `rowwise_with_gw_hp`. `split_dims`, set by dist-partition's
    tensor-parallel rule, names for each operand and the result the
    dimension split over the mesh axes `split_axes` (-1: whole); the
    expansion all-reduces (max) an amax over such a dimension, so scales
    are those of the whole logical tensor, as torchao's are on DTensors.
  }];
}

def Titan_Float8LinearOp : Titan_Float8GemmOp<"float8_linear",
    [DeclareOpInterfaceMethods<Titan_AdjointOpInterface>]> {
  let summary = "titan.linear computed in float8 (torchao's Float8Linear)";
  let description = !strconcat([{
    `input` (`... x K`) times `weight`ᵀ (`N x K`), as `titan.linear`, but
    with both operands cast to float8 with dynamic scales: `tensorwise`
    one scale per tensor, e4m3; `rowwise` and `rowwise_with_gw_hp` one
    scale per row along K (the reduction dimension), e4m3, rounded down to
    a power of two. The product accumulates in f32 and is rounded once to
    the operands' (compute) type. Its adjoint builds
    `titan.float8_linear_grad_input` and `titan.float8_linear_grad_weight`
    with the same recipe, reading the high-precision input and weight (as
    torchao saves them).
  }], commonDescription);
  let arguments = (ins Titan_FloatTensor:$input, Titan_FloatTensor:$weight,
                   Titan_Float8RecipeAttr:$recipe,
                   OptionalAttr<DenseI64ArrayAttr>:$split_dims,
                   OptionalAttr<StrArrayAttr>:$split_axes);
  let assemblyFormat = [{
    $input `,` $weight `recipe` `` $recipe attr-dict `:`
    functional-type(operands, results)
  }];
}

def Titan_Float8LinearGradInputOp
    : Titan_Float8GemmOp<"float8_linear_grad_input"> {
  let summary = "dY · W of a titan.float8_linear, in float8 or not";
  let description = !strconcat([{
    `grad` (`... x N`) times `weight` (`N x K`), reduced over N:
    `tensorwise` dY in e5m2 and W in e4m3, one scale each; `rowwise` dY
    per row (along N) and W per column (along N), e4m3, power-of-two
    scales; `rowwise_with_gw_hp` dY per row, W one scale, e4m3,
    power-of-two scales. `split_dims` = [grad, weight, result].
  }], commonDescription);
  let arguments = (ins Titan_FloatTensor:$grad, Titan_FloatTensor:$weight,
                   Titan_Float8RecipeAttr:$recipe,
                   OptionalAttr<DenseI64ArrayAttr>:$split_dims,
                   OptionalAttr<StrArrayAttr>:$split_axes);
  let assemblyFormat = [{
    $grad `,` $weight `recipe` `` $recipe attr-dict `:`
    functional-type(operands, results)
  }];
}

def Titan_Float8LinearGradWeightOp
    : Titan_Float8GemmOp<"float8_linear_grad_weight"> {
  let summary = "dYᵀ · X of a titan.float8_linear, in float8 or not";
  let description = !strconcat([{
    `grad`ᵀ (`... x N`) times `input` (`... x K`), reduced over every
    leading position: `tensorwise` dY e5m2 and X e4m3, one scale each;
    `rowwise` both per column (along the tokens), e4m3, power-of-two
    scales; `rowwise_with_gw_hp` in high precision (`titan.linear_grad_weight`).
    `split_dims` = [grad, input, result].
  }], commonDescription);
  let arguments = (ins Titan_FloatTensor:$grad, Titan_FloatTensor:$input,
                   Titan_Float8RecipeAttr:$recipe,
                   OptionalAttr<DenseI64ArrayAttr>:$split_dims,
                   OptionalAttr<StrArrayAttr>:$split_axes);
  let assemblyFormat = [{
    $grad `,` $input `recipe` `` $recipe attr-dict `:`
    functional-type(operands, results)
  }];
}

def Titan_AmaxOp : Titan_Op<"amax", [
    DeclareOpInterfaceMethods<Titan_KernelOpInterface, ["getKernelParams"]>,
    DeclareOpInterfaceMethods<Titan_PointwiseOpInterface,
                              ["getNumAbsMaxResults"]>,
    Pure]> {
  let summary = "largest absolute value, of the tensor or along dimensions";
  let description = [{
    `max(|input|)` as f32: over every element without `dims` (a rank-0
    result: tensorwise), else over `dims`, kept as size-1 dimensions
    (axiswise): either the last dimension (one amax per row) or every
    dimension but the last (one per column). NaN propagates (torch.max).
    The value of an amax is exact (no arithmetic), so it is the same for
    any widening of the input.
  }];
  let arguments = (ins Titan_FloatTensor:$input,
                   OptionalAttr<DenseI64ArrayAttr>:$dims);
  let results = (outs Titan_F32Tensor:$result);
  let assemblyFormat = [{
    $input attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The kernel's reduction: 0 every element, 1 the last dimension, 2
    /// every dimension but the last.
    int64_t getReduction();
  }];
}

def Titan_Float8ScaleOp : Titan_Op<"float8_scale", [
    DeclareOpInterfaceMethods<Titan_KernelOpInterface, ["getKernelParams"]>,
    DeclareOpInterfaceMethods<Titan_PointwiseOpInterface>, Pure,
    SameOperandsAndResultType]> {
  let summary = "the scale that maps an amax to float8's largest value";
  let description = [{
    torchao's `amax_to_scale`, elementwise: `fmax / max(amax, 1e-12)`
    computed in f64 and rounded to f32, where fmax is the largest finite
    value of `float8_type` (448 for f8E4M3FN, 57344 for f8E5M2); with
    `round_to_power_of_2`, rounded to a power of two as torchao does,
    `exp2(floor(log2(s)))` in f32.
  }];
  let arguments = (ins Titan_F32Tensor:$amax, TypeAttr:$float8_type,
                   UnitAttr:$round_to_power_of_2);
  let results = (outs Titan_F32Tensor:$result);
  let assemblyFormat = [{
    $amax `for` $float8_type attr-dict `:` type($amax)
  }];
  let hasVerifier = 1;
}

def Titan_QuantizeOp : Titan_Op<"quantize", [
    DeclareOpInterfaceMethods<Titan_KernelOpInterface, ["getKernelParams"]>,
    DeclareOpInterfaceMethods<Titan_PointwiseOpInterface,
                              ["writesTransposed"]>, Pure]> {
  let summary = "saturating scaled cast to float8";
  let description = [{
    `to_float8(clamp(f32(input) * scale, -fmax, fmax))`, rounding to
    nearest even (bit for bit CUDA's `__nv_cvt_float_to_fp8` with
    `__NV_SATFINITE`; NaN stays NaN). `scale` is rank 0 (tensorwise) or has
    the input's rank with size 1 where an amax reduced (axiswise): it
    broadcasts.

    With `transposed`, the result holds the input with its last dimension
    moved first (`K x d0 x ... x dn` for an input `d0 x ... x dn x K`): in
    memory the transposed matrix, which is the K-major layout a
    `titan.scaled_matmul` operand reduced over its leading dimensions
    needs. The cast writes it directly (a generated kernel in tiles, on a
    GPU through shared memory), fused with the untransposed cast of the
    same input where there is one, so no separate transpose pass reads the
    float8 copy again; the values are the same, only their places move.
  }];
  let arguments = (ins Titan_FloatTensor:$input, Titan_F32Tensor:$scale,
                   UnitAttr:$transposed);
  let results = (outs Titan_Float8Tensor:$result);
  let assemblyFormat = [{
    $input `,` $scale attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Titan_TransposeOp : Titan_Op<"transpose", [
    Titan_KernelOpInterface,
    DeclareOpInterfaceMethods<Titan_PointwiseOpInterface,
                              ["writesTransposed"]>, Pure]> {
  let summary = "a tensor with its last dimension moved first";
  let description = [{
    The input's elements at `titan.quantize {transposed}`'s places: the
    result is `K x d0 x ... x dn` for an input `d0 x ... x dn x K`, the
    K-major copy a `titan.scaled_matmul` operand reduced over its leading
    dimensions needs. Of any float type, float8 included: it moves bits.
    `dist-narrow-gathers` writes it where FSDP gathers a weight already
    cast to float8 (each rank cast its shard) and a GEMM needs the
    transposed cast: the transposed copy of the gathered float8 weight is
    that cast, bit for bit. A generated kernel (in tiles, on a GPU through
    shared memory); created after autodiff, so it has no adjoint.

    ```mlir
    %wt = titan.transpose %w : tensor<16x8xf8E4M3FN> -> tensor<8x16xf8E4M3FN>
    ```
  }];
  let arguments = (ins AnyTypeOf<[Titan_FloatTensor, Titan_Float8Tensor]>:$input);
  let results = (outs AnyTypeOf<[Titan_FloatTensor, Titan_Float8Tensor]>:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Titan_ScaledMatmulOp : Titan_Op<"scaled_matmul", [
    DeclareOpInterfaceMethods<Titan_KernelOpInterface,
                              ["getKernelParams"]>,
    Titan_WidenableResult, Pure]> {
  let summary = "a GEMM of float8 operands with their scales";
  let description = [{
    One of titan.linear's three GEMMs (`form`: `linear` `... x K` times
    `N x K`ᵀ; `grad_input` `... x N` times `N x K`; `grad_weight` `... x
    N`ᵀ times `... x K` over the leading positions) on float8 operands:
    the products accumulate in f32 and the sum is multiplied by
    `(1 / lhs_scale) * (1 / rhs_scale)` (the inverse scales
    `torch._scaled_mm` takes, each broadcast along the non-reduced
    dimension of its operand), then rounded once to the result type (f32,
    bf16 or f16).

    `lhs_transposed` (`rhs_transposed`) says the operand comes transposed,
    as `titan.quantize {transposed}` writes it: its last dimension moved
    first, so the GEMM's reduction dimension is its last (K-major). Only an
    operand the form reduces over its leading dimensions may come so
    (grad_input's rhs, grad_weight's both): that is the layout cuBLASLt's
    FP8 GEMM takes, which the CUDA target otherwise makes with a transposed
    copy in its workspace. The scales keep the shapes they have for the
    untransposed operand.
  }];
  let arguments = (ins Titan_Float8Tensor:$lhs, Titan_F32Tensor:$lhs_scale,
                   Titan_Float8Tensor:$rhs, Titan_F32Tensor:$rhs_scale,
                   Titan_GemmFormAttr:$form, UnitAttr:$lhs_transposed,
                   UnitAttr:$rhs_transposed);
  let results = (outs Titan_FloatTensor:$result);
  let assemblyFormat = [{
    `` $form $lhs `,` $lhs_scale `,` $rhs `,` $rhs_scale attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // TITAN_DIALECT_TITAN_IR_FLOAT8OPS_TD
