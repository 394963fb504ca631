//===- TitanOps.td - titan dialect ops ---------------------*- tablegen -*-===//
//
// Every op is value-semantic on statically shaped tensors. Descriptions give
// the exact numerics that the targets implement.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DIALECT_TITAN_IR_TITANOPS_TD
#define TITAN_DIALECT_TITAN_IR_TITANOPS_TD

include "titan/Dialect/Titan/IR/TitanDialect.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/IR/OpBase.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/IR/CommonTypeConstraints.td"
include "mlir/IR/EnumAttr.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "titan/Dialect/Titan/IR/AdjointInterface.td"
include "titan/Dialect/Titan/IR/KernelInterface.td"
include "titan/Dialect/Titan/IR/PointwiseInterface.td"
include "titan/Dialect/Titan/IR/RowwiseInterface.td"

def Titan_FloatTensor : StaticShapeTensorOf<[AnyFloat]>;
def Titan_IndexTensor : StaticShapeTensorOf<[AnySignlessInteger]>;
/// A parameter's f32 (or f64) master state: what AdamW updates.
def Titan_MasterTensor : StaticShapeTensorOf<[F32, F64]>;
def Titan_ScalarFloatTensor : 0DTensorOf<[AnyFloat]>;

//===----------------------------------------------------------------------===//
// Embedding and normalization
//===----------------------------------------------------------------------===//

def Titan_EmbeddingOp : Titan_Op<"embedding", [DeclareOpInterfaceMethods<Titan_AdjointOpInterface>,
    DeclareOpInterfaceMethods<Titan_KernelOpInterface, ["getKernelParams"]>,
    Pure]> {
  let summary = "token embedding lookup";
  let description = [{
    `result[i..., :] = weight[tokens[i...], :]` for a `VxD` weight and token
    ids of any shape; the result has shape `tokens.shape x D` and the weight's
    element type. Token ids must lie in `[0, V)`; the targets check this at
    run time.

    With `vocab_start` (a 0-d i32 tensor, e.g. from `dist.shard_offset`) the
    weight holds rows `[vocab_start, vocab_start + V)` of a larger table (the
    vocabulary-parallel embedding of tensor parallelism): a token in that
    range reads row `token - vocab_start`, any other token gives a zero row,
    so summing the results over the shards gives the whole lookup.

    ```mlir
    %h = titan.embedding %w[%tokens]
        : tensor<2048x256xf32>, tensor<8x2048xi32> -> tensor<8x2048x256xf32>
    %p = titan.embedding %w_shard[%tokens] vocab_start %start : tensor<i32>
        : tensor<1024x256xf32>, tensor<8x2048xi32> -> tensor<8x2048x256xf32>
    ```
  }];
  let arguments = (ins Titan_FloatTensor:$weight, Titan_IndexTensor:$tokens,
                       Optional<0DTensorOf<[I32]>>:$vocab_start);
  let results = (outs Titan_FloatTensor:$result);
  let assemblyFormat = [{
    $weight `[` $tokens `]` (`vocab_start` $vocab_start^ `:`
    type($vocab_start))? attr-dict `:` type($weight) `,` type($tokens) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

def Titan_RMSNormOp : Titan_Op<"rms_norm", [DeclareOpInterfaceMethods<Titan_AdjointOpInterface>,
    DeclareOpInterfaceMethods<Titan_KernelOpInterface, ["getKernelParams"]>,
    DeclareOpInterfaceMethods<Titan_RowwiseOpInterface, ["getColumnOperands"]>,
    Pure]> {
  let summary = "root-mean-square normalization over the last dimension";
  let description = [{
    For each row `x` of the last dimension `D`, computed in float32 whatever
    the element type (as TorchTitan's `RMSNorm` does):
    `result = x * rsqrt(mean(x * x) + eps) * weight`, with a `D`-element
    weight. The result has the input's type.

    ```mlir
    %y = titan.rms_norm %x, %w {eps = 1.0e-05 : f64}
        : (tensor<8x2048x256xf32>, tensor<256xf32>) -> tensor<8x2048x256xf32>
    ```
  }];
  let arguments = (ins Titan_FloatTensor:$input, Titan_FloatTensor:$weight,
                       F64Attr:$eps);
  let results = (outs Titan_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Rotary position embedding
//===----------------------------------------------------------------------===//

def Titan_RopeAnglesOp : Titan_Op<"rope_angles", [DeclareOpInterfaceMethods<Titan_AdjointOpInterface>,
    DeclareOpInterfaceMethods<Titan_KernelOpInterface, ["getKernelParams"]>,
    Pure]> {
  let summary = "cos/sin table of the rotary embedding, per position and pair";
  let description = [{
    Produces the `S x (Dh/2) x 2` float32 table of the rotations for
    positions `0 .. S-1` and head dimension `Dh`: TorchTitan's
    `precompute_freqs_cis`, `freqs_cis = polar(1, angles)`, as (real,
    imaginary) pairs. With
    * `inv_freq[j] = 1 / theta^(2j / Dh)`, `j = 0 .. Dh/2-1` (float32);
    * with Llama 3.1 scaling (`scaling_factor`, `low_freq_factor`,
      `high_freq_factor`, `original_max_position_embeddings` = `L`, all four
      present or none), with `wavelen = 2*pi / inv_freq[j]`:
      wavelengths above `L / low_freq_factor` are divided by `scaling_factor`;
      wavelengths below `L / high_freq_factor` are kept; in between
      `s = (L / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)`
      and `inv_freq = (1 - s) * inv_freq / scaling_factor + s * inv_freq`;
    * `angle[p, j] = float32(p) * inv_freq[j]`,

    `result[p, j, 0] = cos(angle[p, j])` and `result[p, j, 1] =
    sin(angle[p, j])`, in float32.

    Keeping the table as a value (rather than recomputing it inside `rope`)
    computes the cosines and sines once per step instead of once per batch
    and head, and lets sequence sharding (context parallel) slice it like
    any activation.

    ```mlir
    %f = titan.rope_angles {theta = 5.0e+05 : f64} : tensor<2048x8x2xf32>
    ```
  }];
  let arguments = (ins F64Attr:$theta,
                       OptionalAttr<F64Attr>:$scaling_factor,
                       OptionalAttr<F64Attr>:$low_freq_factor,
                       OptionalAttr<F64Attr>:$high_freq_factor,
                       OptionalAttr<I64Attr>:$original_max_position_embeddings);
  let results = (outs StaticShapeTensorOf<[F32]>:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// True when the Llama 3.1 frequency scaling is applied.
    bool hasScaling() { return getScalingFactor().has_value(); }
  }];
}

def Titan_RopeOp : Titan_Op<"rope", [DeclareOpInterfaceMethods<Titan_AdjointOpInterface>,
    DeclareOpInterfaceMethods<Titan_KernelOpInterface, ["getKernelParams"]>,
    DeclareOpInterfaceMethods<Titan_PointwiseOpInterface,
                              ["getElementReads", "buildIndexedScalar"]>,
    Pure]> {
  let summary = "rotary position embedding on interleaved pairs";
  let description = [{
    Rotates `input` of shape `B x S x H x Dh` by the table `freqs_cis` of
    shape `S x (Dh/2) x 2` (from `titan.rope_angles`), pairing adjacent
    elements as TorchTitan's complex view does: for `j = 0 .. Dh/2-1`, with
    `(a, b) = (x[..., 2j], x[..., 2j+1])`, `c = freqs_cis[s, j, 0]`,
    `s = freqs_cis[s, j, 1]`:
    `result[..., 2j] = a*c - b*s`, `result[..., 2j+1] = a*s + b*c`,
    computed in float32. The result has the input's type. With `transpose`
    the rotation is by the negated angles (the inverse and transpose of the
    forward rotation): the gradient of `rope`.

    Its kernel is generated (`PointwiseOpInterface`'s element reads): each
    element reads itself, its pair partner and its position's cos and sin,
    and takes its place in the pair from its index's parity.

    ```mlir
    %q2 = titan.rope %q, %f
        : (tensor<8x2048x16x16xf32>, tensor<2048x8x2xf32>) -> tensor<8x2048x16x16xf32>
    ```
  }];
  let arguments = (ins Titan_FloatTensor:$input,
                       StaticShapeTensorOf<[F32]>:$freqs_cis,
                       UnitAttr:$transpose);
  let results = (outs Titan_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $freqs_cis (`transpose` $transpose^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

def Titan_AttentionOp : Titan_Op<"attention", [DeclareOpInterfaceMethods<Titan_AdjointOpInterface>,
    DeclareOpInterfaceMethods<Titan_KernelOpInterface, ["getKernelParams"]>,
    Pure]> {
  let summary = "causal scaled dot-product attention with grouped-query heads";
  let description = [{
    `query` is `B x S x Hq x Dh`; `key` and `value` are `B x S x Hkv x Dh` with
    `Hq` a multiple of `Hkv`. Query head `h` attends to key/value head
    `h / (Hq / Hkv)` (TorchTitan's `repeat_kv`). For each batch, head and query
    position `i`:
    `s[j] = scale * dot(query[i], key[j])` over `j <= i` (causal),
    `p[j] = softmax_j(s[j])`, `result[i] = sum_j p[j] * value[j]`. The result
    is `B x S x Hq x Dh`. The softmax is computed in the accumulator type
    (f32, or f64 for f64 operands) with the running-max trick; `lse` is its
    log-sum-exp per row, `lse[b, h, i] = log(sum_j exp(s[j]))` (`B x Hq x S`,
    in the accumulator type), which titan.attention_grad takes so that it
    need not normalize again (the softmax statistics flash attention and
    cuDNN save for the backward).

    With `document_starts` (`B x S` i32: TorchTitan's block-causal mask,
    `attn_mask_type = "block_causal"`) query position `i` of batch row `b`
    attends only to keys `document_starts[b, i] <= j <= i`: the start of its
    packed document, the position after the last EOS token before it.

    ```mlir
    %o, %lse = titan.attention %q, %k, %v {scale = 2.500000e-01 : f64}
        : (tensor<8x2048x16x16xf32>, tensor<8x2048x4x16xf32>,
           tensor<8x2048x4x16xf32>)
        -> (tensor<8x2048x16x16xf32>, tensor<8x16x2048xf32>)
    ```
  }];
  let arguments = (ins Titan_FloatTensor:$query, Titan_FloatTensor:$key,
                       Titan_FloatTensor:$value,
                       Optional<Titan_IndexTensor>:$document_starts,
                       F64Attr:$scale);
  let results = (outs Titan_FloatTensor:$result, Titan_FloatTensor:$lse);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`documents` $document_starts^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Linear layers and the feed-forward network
//===----------------------------------------------------------------------===//

def Titan_LinearOp : Titan_Op<"linear", [DeclareOpInterfaceMethods<Titan_AdjointOpInterface>,
    Titan_KernelOpInterface,
    Pure]> {
  let summary = "x · Wᵀ (a bias-free nn.Linear)";
  let description = [{
    `input` is `... x K`, `weight` is `N x K` (PyTorch's `nn.Linear` layout);
    `result[..., n] = sum_k input[..., k] * weight[n, k]`, shape `... x N`.

    ```mlir
    %y = titan.linear %x, %w
        : (tensor<8x2048x256xf32>, tensor<768x256xf32>) -> tensor<8x2048x768xf32>
    ```
  }];
  let arguments = (ins Titan_FloatTensor:$input, Titan_FloatTensor:$weight);
  let results = (outs Titan_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

class Titan_ElementwiseOp<string mnemonic, list<Trait> traits = []>
    : Titan_Op<mnemonic, !listconcat(traits, [Pure, SameOperandsAndResultType,
        DeclareOpInterfaceMethods<Titan_KernelOpInterface>,
        DeclareOpInterfaceMethods<Titan_PointwiseOpInterface>])>;

def Titan_SwiGLUOp : Titan_ElementwiseOp<"swiglu", [DeclareOpInterfaceMethods<Titan_AdjointOpInterface>]> {
  let summary = "fused SiLU-gated linear unit: silu(gate) * up";
  let description = [{
    Elementwise `result = gate * sigmoid(gate) * up`: the activation of
    Llama's feed-forward network `w2(silu(w1(x)) * w3(x))`. Equal to
    `titan.mul(titan.silu(gate), up)`, into which `titan-decompose-swiglu`
    splits it and from which canonicalization fuses it back.

    ```mlir
    %a = titan.swiglu %g, %u : tensor<8x2048x768xf32>
    ```
  }];
  let arguments = (ins Titan_FloatTensor:$gate, Titan_FloatTensor:$up);
  let results = (outs Titan_FloatTensor:$result);
  let assemblyFormat = "$gate `,` $up attr-dict `:` type($result)";
}

def Titan_SiLUOp : Titan_ElementwiseOp<"silu", [DeclareOpInterfaceMethods<Titan_AdjointOpInterface>]> {
  let summary = "elementwise x * sigmoid(x)";
  let description = [{
    ```mlir
    %y = titan.silu %x : tensor<8x2048x768xf32>
    ```
  }];
  let arguments = (ins Titan_FloatTensor:$input);
  let results = (outs Titan_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

def Titan_MulOp : Titan_ElementwiseOp<"mul", [DeclareOpInterfaceMethods<Titan_AdjointOpInterface>, Commutative]> {
  let summary = "elementwise product of two tensors of the same type";
  let description = [{
    ```mlir
    %y = titan.mul %a, %b : tensor<8x2048x768xf32>
    ```
  }];
  let arguments = (ins Titan_FloatTensor:$lhs, Titan_FloatTensor:$rhs);
  let results = (outs Titan_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
  let hasCanonicalizer = 1;
}

def Titan_SqrtOp : Titan_ElementwiseOp<"sqrt"> {
  let summary = "elementwise square root";
  let description = [{
    ```mlir
    %n = titan.sqrt %sum_of_squares : tensor<f32>
    ```
  }];
  let arguments = (ins Titan_FloatTensor:$input);
  let results = (outs Titan_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

def Titan_AddOp : Titan_ElementwiseOp<"add", [DeclareOpInterfaceMethods<Titan_AdjointOpInterface>, Commutative]> {
  let summary = "elementwise sum of two tensors of the same type (residual add)";
  let description = [{
    ```mlir
    %h2 = titan.add %h, %o : tensor<8x2048x256xf32>
    ```
  }];
  let arguments = (ins Titan_FloatTensor:$lhs, Titan_FloatTensor:$rhs);
  let results = (outs Titan_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Shape
//===----------------------------------------------------------------------===//

def Titan_ReshapeOp : Titan_Op<"reshape", [DeclareOpInterfaceMethods<Titan_AdjointOpInterface>,
    Pure, Titan_BufferView]> {
  let summary = "row-major reshape (a view in PyTorch)";
  let description = [{
    Reinterprets the row-major elements of `input` with the result's shape;
    both have the same element type and element count. The importer uses it
    to split `B x S x (H*Dh)` into heads and to merge them back.

    ```mlir
    %q4 = titan.reshape %q : tensor<8x2048x256xf32> -> tensor<8x2048x16x16xf32>
    ```
  }];
  let arguments = (ins Titan_FloatTensor:$input);
  let results = (outs Titan_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Titan_SliceOp : Titan_Op<"slice", [Pure,
    DeclareOpInterfaceMethods<Titan_AdjointOpInterface>,
    DeclareOpInterfaceMethods<Titan_KernelOpInterface, ["getKernelParams"]>]> {
  let summary = "a box of a tensor: static offsets, the result's sizes";
  let description = [{
    `result[i...] = input[offsets + i...]`: the box of `input` at `offsets`
    with the result's shape. A box that is one contiguous run of the input
    (every dimension after the first split one whole, every one before it
    of size 1) is a view at an offset into the input's buffer: no kernel
    runs and the memory plan keeps the input's buffer alive while the view
    is used. Its adjoint is `titan.slice_grad`.

    ```mlir
    %c = titan.slice %x [0, 1024, 0]
        : tensor<1x4096x256xf32> -> tensor<1x2048x256xf32>
    ```
  }];
  let arguments = (ins Titan_FloatTensor:$input, DenseI64ArrayAttr:$offsets);
  let results = (outs Titan_FloatTensor:$result);
  let assemblyFormat = [{
    $input $offsets attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The result's first element in the input's when the box is one
    /// contiguous run of it (a view), else std::nullopt.
    std::optional<int64_t> getContiguousOffset();
  }];
}

def Titan_SliceGradOp : Titan_Op<"slice_grad", [Pure,
    DeclareOpInterfaceMethods<Titan_KernelOpInterface, ["getKernelParams"]>]> {
  let summary = "gradient of titan.slice: the box placed in zeros";
  let description = [{
    A tensor of the result's shape that is `grad` in the box at `offsets`
    and zero elsewhere.
  }];
  let arguments = (ins Titan_FloatTensor:$grad, DenseI64ArrayAttr:$offsets);
  let results = (outs Titan_FloatTensor:$result);
  let assemblyFormat = [{
    $grad $offsets attr-dict `:` type($grad) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Titan_ConcatOp : Titan_Op<"concat", [Pure,
    DeclareOpInterfaceMethods<Titan_AdjointOpInterface>,
    DeclareOpInterfaceMethods<Titan_KernelOpInterface, ["getKernelParams"]>]> {
  let summary = "tensors joined along one dimension";
  let description = [{
    The inputs, of one element type and equal in every dimension but `dim`,
    one after the other along `dim`. Its adjoint slices the gradient.

    ```mlir
    %kv = titan.concat %k, %v dim 2
        : tensor<1x2048x8x64xf32>, tensor<1x2048x8x64xf32> -> tensor<1x2048x16x64xf32>
    ```
  }];
  let arguments = (ins Variadic<Titan_FloatTensor>:$inputs, I64Attr:$dim);
  let results = (outs Titan_FloatTensor:$result);
  let assemblyFormat = [{
    $inputs `dim` $dim attr-dict `:` type($inputs) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Loss
//===----------------------------------------------------------------------===//

def Titan_CrossEntropyOp : Titan_Op<"cross_entropy", [DeclareOpInterfaceMethods<Titan_AdjointOpInterface>,
    Titan_KernelOpInterface,
    DeclareOpInterfaceMethods<Titan_RowwiseOpInterface,
        ["getRowOperands", "getRowResults", "getMeanResults"]>,
    Pure]> {
  let summary = "mean cross-entropy of logits against integer labels";
  let description = [{
    `logits` is `... x V`, `labels` has the leading shape `...` with values in
    `[0, V)`. With `T` the number of label positions:
    `result = (1/T) * sum_t (logsumexp(logits[t, :]) - logits[t, labels[t]])`
    — `torch.nn.functional.cross_entropy` with mean reduction. The result is
    a 0-d float32 tensor. `lse[t] = logsumexp(logits[t, :])` (shape `...`,
    in the accumulator type: f64 for f64 logits, else f32) is each row's
    statistic, which titan.cross_entropy_grad takes so that the backward
    reads the logits once (`softmax = exp(logits - lse)`), as the softmax
    statistics of titan.attention.

    Each row is computed in the accumulator type: `m = max(x)`, `lse = m +
    log(sum exp(x - m))`, the row's loss `lse - x[label]`; a label outside
    `[0, V)` makes the row's loss (and the result) NaN, which stops a run,
    as does an infinite logit (its row's lse and loss are NaN, where
    `torch.logsumexp` gives an infinity).
    The rows' losses are summed in float64, in a fixed order, divided by
    `T` and rounded to float32 (LossSemantics.cpp; generated kernels).

    ```mlir
    %loss, %lse = titan.cross_entropy %logits, %labels
        : (tensor<8x2048x2048xf32>, tensor<8x2048xi32>)
        -> (tensor<f32>, tensor<8x2048xf32>)
    ```
  }];
  let arguments = (ins Titan_FloatTensor:$logits, Titan_IndexTensor:$labels);
  let results = (outs 0DTensorOf<[F32]>:$result, Titan_FloatTensor:$lse);
  let assemblyFormat = [{
    $logits `,` $labels attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Cross-entropy in pieces (loss parallel)
//
// With the vocabulary split over ranks, `cross_entropy` is computed from
// per-row statistics that each rank computes on its slice and that
// all-reduces combine: loss = mean(max + log(sum_exp) - target).
//===----------------------------------------------------------------------===//

def Titan_RowMaxOp : Titan_Op<"row_max", [DeclareOpInterfaceMethods<Titan_AdjointOpInterface>,
    Titan_KernelOpInterface,
    DeclareOpInterfaceMethods<Titan_RowwiseOpInterface, ["getRowResults"]>,
    Pure]> {
  let summary = "maximum over the last dimension (a shift, no gradient)";
  let description = [{
    `result[t] = max_v logits[t, v]` for `logits` of shape `... x V`; the
    result has shape `...`. Cross-entropy subtracts it for stability only:
    the loss does not depend on it, so titan-autodiff propagates no gradient
    through it (nor through the `max` operands below).

    ```mlir
    %m = titan.row_max %logits : tensor<8x2048x1024xf32> -> tensor<8x2048xf32>
    ```
  }];
  let arguments = (ins Titan_FloatTensor:$logits);
  let results = (outs Titan_FloatTensor:$result);
  let assemblyFormat = "$logits attr-dict `:` type($logits) `->` type($result)";
  let hasVerifier = 1;
}

def Titan_SumExpOp : Titan_Op<"sum_exp", [DeclareOpInterfaceMethods<Titan_AdjointOpInterface>,
    Titan_KernelOpInterface,
    DeclareOpInterfaceMethods<Titan_RowwiseOpInterface,
        ["getRowOperands", "getRowResults"]>,
    Pure]> {
  let summary = "sum over the last dimension of exp(logits - max)";
  let description = [{
    `result[t] = sum_v exp(logits[t, v] - max[t])`, accumulated in the
    accumulator type (f64 for f64 logits, else f32). `max` has the leading
    shape of `logits`.

    ```mlir
    %s = titan.sum_exp %logits, %m
        : (tensor<8x2048x1024xf32>, tensor<8x2048xf32>) -> tensor<8x2048xf32>
    ```
  }];
  let arguments = (ins Titan_FloatTensor:$logits, Titan_FloatTensor:$max);
  let results = (outs Titan_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $max attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Titan_TargetLogitOp : Titan_Op<"target_logit", [DeclareOpInterfaceMethods<Titan_AdjointOpInterface>,
    DeclareOpInterfaceMethods<Titan_KernelOpInterface, ["getKernelParams"]>,
    DeclareOpInterfaceMethods<Titan_RowwiseOpInterface,
        ["getRowOperands", "getRowResults"]>,
    Pure]> {
  let summary = "the logit of each row's label (0 outside this vocabulary slice)";
  let description = [{
    `result[t] = logits[t, labels[t] - vocab_start]` when that index lies in
    `[0, V)`, else 0 (`vocab_start` is 0 when absent, and then labels must
    lie in `[0, V)`: a label outside gives NaN, which stops a run). Summed
    over the slices of a split vocabulary this is the label's logit.

    ```mlir
    %x = titan.target_logit %logits, %labels vocab_start %start : tensor<i32>
        : (tensor<8x2048x1024xf32>, tensor<8x2048xi32>) -> tensor<8x2048xf32>
    ```
  }];
  let arguments = (ins Titan_FloatTensor:$logits, Titan_IndexTensor:$labels,
                       Optional<0DTensorOf<[I32]>>:$vocab_start);
  let results = (outs Titan_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels (`vocab_start` $vocab_start^ `:` type($vocab_start))?
    attr-dict `:` `(` type($logits) `,` type($labels) `)` `->` type($result)
  }];
  let hasVerifier = 1;
}

def Titan_CrossEntropyFromStatsOp
    : Titan_Op<"cross_entropy_from_stats", [DeclareOpInterfaceMethods<Titan_AdjointOpInterface>,
    Titan_KernelOpInterface,
    DeclareOpInterfaceMethods<Titan_RowwiseOpInterface,
        ["getRowOperands", "getMeanResults"]>,
    Pure]> {
  let summary = "mean cross-entropy from per-row max, sum of exp and target";
  let description = [{
    `result = (1/T) * sum_t (max[t] + log(sum_exp[t]) - target[t])` over the
    `T` rows: each row's loss in the operands' type (f32 for 16-bit ones),
    their mean in float64, rounded to float32; equal to
    `titan.cross_entropy` of the logits the statistics came from. The
    operands share one shape.

    ```mlir
    %loss = titan.cross_entropy_from_stats %m, %s, %x
        : (tensor<8x2048xf32>, tensor<8x2048xf32>, tensor<8x2048xf32>)
        -> tensor<f32>
    ```
  }];
  let arguments = (ins Titan_FloatTensor:$max, Titan_FloatTensor:$sum_exp,
                       Titan_FloatTensor:$target);
  let results = (outs 0DTensorOf<[F32]>:$result);
  let assemblyFormat = [{
    $max `,` $sum_exp `,` $target attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Gradients (produced by titan-autodiff)
//===----------------------------------------------------------------------===//

def Titan_CastOp : Titan_Op<"cast", [DeclareOpInterfaceMethods<Titan_AdjointOpInterface>,
    Titan_KernelOpInterface, DeclareOpInterfaceMethods<Titan_PointwiseOpInterface>,
    Pure]> {
  let summary = "convert a tensor to another floating-point element type";
  let description = [{
    Elementwise conversion between f64, f32, bf16, f16, f8E4M3FN and
    f8E5M2, with the shape unchanged. Narrowing rounds to nearest even, as
    the GPU's conversions do; values beyond the target's range become
    infinity in types that have one (f8E4M3FN has none: they saturate to
    NaN, its only special value), NaN stays NaN. Widening is exact. The
    adjoint casts the gradient back to the input's type.

    Mixed precision is casts at the edges: bf16 compute copies of fp32
    parameters, fp32 gradients out of bf16 ones, fp32 logits for the loss.

    ```mlir
    %w16 = titan.cast %w : tensor<256x256xf32> to tensor<256x256xbf16>
    ```
  }];
  let arguments = (ins Titan_FloatTensor:$input);
  let results = (outs Titan_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Titan_FillOp : Titan_Op<"fill", [DeclareOpInterfaceMethods<Titan_AdjointOpInterface>,
    DeclareOpInterfaceMethods<Titan_KernelOpInterface, ["getKernelParams"]>,
    Pure]> {
  let summary = "a tensor with every element equal to `value`";
  let description = [{
    ```mlir
    %one = titan.fill 1.0 : tensor<f32>
    ```
  }];
  let arguments = (ins F64Attr:$value);
  let results = (outs Titan_FloatTensor:$result);
  let assemblyFormat = "$value attr-dict `:` type($result)";
}

def Titan_EmbeddingGradOp : Titan_Op<"embedding_grad", [DeclareOpInterfaceMethods<Titan_KernelOpInterface, ["getKernelParams"]>,
    Pure]> {
  let summary = "gradient of titan.embedding with respect to the weight";
  let description = [{
    `result[v, :] = sum over positions i with tokens[i] == v of grad[i, :]`;
    the result is `V x D` with `V` from its type. Accumulated in float32 for
    narrower types. With `vocab_start`, row `v` collects the tokens equal to
    `v + vocab_start` and other tokens contribute nothing.
  }];
  let arguments = (ins Titan_FloatTensor:$grad, Titan_IndexTensor:$tokens,
                       Optional<0DTensorOf<[I32]>>:$vocab_start);
  let results = (outs Titan_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $tokens (`vocab_start` $vocab_start^ `:` type($vocab_start))?
    attr-dict `:` `(` type($grad) `,` type($tokens) `)` `->` type($result)
  }];
  let hasVerifier = 1;
}

def Titan_RMSNormGradOp : Titan_Op<"rms_norm_grad", [DeclareOpInterfaceMethods<Titan_KernelOpInterface, ["getKernelParams"]>,
    DeclareOpInterfaceMethods<Titan_RowwiseOpInterface,
        ["getColumnOperands", "getColumnSumResults"]>,
    Pure]> {
  let summary = "gradients of titan.rms_norm";
  let description = [{
    For `y = x * r * w` with `r = rsqrt(mean(x * x) + eps)` over the last
    dimension `D`: `input_grad = r * (g*w - x * r^2 * mean(g*w*x))` and
    `weight_grad = sum over rows of g * x * r`.
  }];
  let arguments = (ins Titan_FloatTensor:$input, Titan_FloatTensor:$weight,
                       Titan_FloatTensor:$grad, F64Attr:$eps);
  let results = (outs Titan_FloatTensor:$input_grad,
                      Titan_FloatTensor:$weight_grad);
  let assemblyFormat = [{
    $input `,` $weight `,` $grad attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Titan_AttentionGradOp : Titan_Op<"attention_grad", [DeclareOpInterfaceMethods<Titan_KernelOpInterface, ["getKernelParams"]>,
    Pure]> {
  let summary = "gradients of titan.attention";
  let description = [{
    Given the forward operands, the forward's result `out` (O) and
    log-sum-exp `lse`, and the output gradient `grad` (dO), returns the
    gradients of query, key and value. The probabilities are recomputed
    without a second normalization, `P = exp(scale * Q K^T - lse)` (causal),
    and then `dV = P^T dO`, `dP = dO V^T`, `dS = P * (dP - rowsum(dO * O))`,
    `dQ = scale * dS K`, `dK = scale * dS^T Q`; key/value gradients sum over
    the query heads that share them. `document_starts` is the forward's
    (its block-causal mask).

    `deterministic` (`debug.deterministic`, set by `titan-bufferize`) asks
    for a kernel whose gradients are the same bits on every run: on CUDA,
    cuDNN's deterministic backward, whose workspace grows as S^2; without
    it, cuDNN's default (atomic dQ accumulation), as PyTorch runs. The CPU
    kernels are deterministic either way.
  }];
  let arguments = (ins Titan_FloatTensor:$query, Titan_FloatTensor:$key,
                       Titan_FloatTensor:$value, Titan_FloatTensor:$out,
                       Titan_FloatTensor:$lse, Titan_FloatTensor:$grad,
                       Optional<Titan_IndexTensor>:$document_starts,
                       F64Attr:$scale, UnitAttr:$deterministic);
  let results = (outs Titan_FloatTensor:$query_grad,
                      Titan_FloatTensor:$key_grad,
                      Titan_FloatTensor:$value_grad);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $out `,` $lse `,` $grad
    (`documents` $document_starts^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Titan_LinearGradInputOp : Titan_Op<"linear_grad_input", [Titan_KernelOpInterface,
    Pure]> {
  let summary = "gradient of titan.linear with respect to its input: dY · W";
  let description = [{
    `grad` is `... x N`, `weight` is `N x K`; the result is `... x K`.
  }];
  let arguments = (ins Titan_FloatTensor:$grad, Titan_FloatTensor:$weight);
  let results = (outs Titan_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $weight attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Titan_LinearGradWeightOp : Titan_Op<"linear_grad_weight", [Titan_KernelOpInterface,
    Titan_WidenableResult, Pure]> {
  let summary = "gradient of titan.linear with respect to its weight: dYᵀ · X";
  let description = [{
    `grad` is `... x N`, `input` is `... x K` with the same leading shape;
    the result is `N x K`, summed over all leading positions. The sum is
    accumulated in f32 (f64 for f64 operands) and rounded once to the
    result's element type: the operands' or, for bf16 and f16 operands,
    f32 (the weight gradient FSDP reduces in f32, written by the GEMM as
    Megatron-LM's gradient-accumulation fusion writes it).
  }];
  let arguments = (ins Titan_FloatTensor:$grad, Titan_FloatTensor:$input);
  let results = (outs Titan_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $input attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Titan_SwiGLUGradOp : Titan_Op<"swiglu_grad", [Titan_KernelOpInterface,
    DeclareOpInterfaceMethods<Titan_PointwiseOpInterface>,
    Pure, SameOperandsAndResultType]> {
  let summary = "gradients of titan.swiglu";
  let description = [{
    With `s = sigmoid(gate)`: `gate_grad = grad * up * s * (1 + gate * (1 - s))`,
    `up_grad = grad * gate * s`.
  }];
  let arguments = (ins Titan_FloatTensor:$gate, Titan_FloatTensor:$up,
                       Titan_FloatTensor:$grad);
  let results = (outs Titan_FloatTensor:$gate_grad,
                      Titan_FloatTensor:$up_grad);
  let assemblyFormat = "$gate `,` $up `,` $grad attr-dict `:` type($grad)";
}

def Titan_SiLUGradOp : Titan_Op<"silu_grad", [Titan_KernelOpInterface,
    DeclareOpInterfaceMethods<Titan_PointwiseOpInterface>,
    Pure, SameOperandsAndResultType]> {
  let summary = "gradient of titan.silu: grad * s * (1 + x * (1 - s))";
  let arguments = (ins Titan_FloatTensor:$input, Titan_FloatTensor:$grad);
  let results = (outs Titan_FloatTensor:$result);
  let assemblyFormat = "$input `,` $grad attr-dict `:` type($result)";
}

def Titan_CrossEntropyGradOp : Titan_Op<"cross_entropy_grad", [Titan_KernelOpInterface,
    DeclareOpInterfaceMethods<Titan_PointwiseOpInterface,
                              ["getElementReads", "buildIndexedScalar"]>,
    Pure]> {
  let summary = "gradient of titan.cross_entropy with respect to the logits";
  let description = [{
    `result[t, :] = grad / T * (exp(logits[t, :] - lse[t]) - onehot(labels[t]))`
    (the softmax from titan.cross_entropy's `lse`) with `grad` the 0-d loss
    gradient and `T` the number of positions.
  }];
  let arguments = (ins Titan_FloatTensor:$logits, Titan_IndexTensor:$labels,
                       Titan_FloatTensor:$lse, 0DTensorOf<[F32]>:$grad);
  let results = (outs Titan_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels `,` $lse `,` $grad attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Titan_SumExpGradOp : Titan_Op<"sum_exp_grad", [Titan_KernelOpInterface,
    DeclareOpInterfaceMethods<Titan_PointwiseOpInterface,
                              ["getElementReads", "buildIndexedScalar"]>,
    Pure]> {
  let summary = "gradient of titan.sum_exp with respect to the logits";
  let description = [{
    `result[t, v] = grad[t] * exp(logits[t, v] - max[t])`; `max` gets no
    gradient (see `titan.row_max`).
  }];
  let arguments = (ins Titan_FloatTensor:$logits, Titan_FloatTensor:$max,
                       Titan_FloatTensor:$grad);
  let results = (outs Titan_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $max `,` $grad attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Titan_TargetLogitGradOp : Titan_Op<"target_logit_grad", [DeclareOpInterfaceMethods<Titan_KernelOpInterface, ["getKernelParams"]>,
    DeclareOpInterfaceMethods<Titan_PointwiseOpInterface,
                              ["getElementReads", "buildIndexedScalar"]>,
    Pure]> {
  let summary = "gradient of titan.target_logit with respect to the logits";
  let description = [{
    `result[t, v] = grad[t]` where `v == labels[t] - vocab_start`, else 0;
    the result (`... x V`) has the logits' type.
  }];
  let arguments = (ins Titan_FloatTensor:$grad, Titan_IndexTensor:$labels,
                       Optional<0DTensorOf<[I32]>>:$vocab_start);
  let results = (outs Titan_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $labels (`vocab_start` $vocab_start^ `:` type($vocab_start))?
    attr-dict `:` `(` type($grad) `,` type($labels) `)` `->` type($result)
  }];
  let hasVerifier = 1;
}

def Titan_CrossEntropyFromStatsGradOp
    : Titan_Op<"cross_entropy_from_stats_grad", [Titan_KernelOpInterface,
    DeclareOpInterfaceMethods<Titan_PointwiseOpInterface,
                              ["getElementReads", "buildIndexedScalar"]>,
    Pure]> {
  let summary = "gradients of titan.cross_entropy_from_stats";
  let description = [{
    With `T` rows and the 0-d loss gradient `grad`:
    `sum_exp_grad[t] = (grad / T) / sum_exp[t]` and `target_grad[t] =
    -(grad / T)`, in the computation type; `max` gets none.
  }];
  let arguments = (ins Titan_FloatTensor:$sum_exp, 0DTensorOf<[F32]>:$grad);
  let results = (outs Titan_FloatTensor:$sum_exp_grad,
                      Titan_FloatTensor:$target_grad);
  let assemblyFormat = [{
    $sum_exp `,` $grad attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Optimizer (produced by titan-optimizer)
//===----------------------------------------------------------------------===//

def Titan_GlobalNormOp : Titan_Op<"global_norm", [DeclareOpInterfaceMethods<Titan_KernelOpInterface, ["getKernelParams"]>,
    Pure]> {
  let summary = "L2 norm of all elements of all operands";
  let description = [{
    `sqrt(sum over operands of sum of squares)`, the `total_norm` of
    `torch.nn.utils.clip_grad_norm_` (norm of the per-tensor norms). Per-tensor
    sums are accumulated in float64.
  }];
  let arguments = (ins Variadic<Titan_FloatTensor>:$inputs);
  let results = (outs 0DTensorOf<[F32]>:$result);
  let assemblyFormat = [{
    $inputs attr-dict `:` functional-type($inputs, results)
  }];
  let hasVerifier = 1;
}

/// The learning rate's decay shape (TorchTitan's `lr_scheduler.decay_type`);
/// the value is the kernel's parameter (runtime/include/titanrt/KernelABI.h).
def Titan_LRDecay : I32EnumAttr<"LRDecay", "the learning rate's decay shape", [
      I32EnumAttrCase<"Linear", 0, "linear">,
      I32EnumAttrCase<"Sqrt", 1, "sqrt">,
      I32EnumAttrCase<"Cosine", 2, "cosine">]> {
  let cppNamespace = "::titan";
  let genSpecializedAttr = 0;
}
def Titan_LRDecayAttr : EnumAttr<Titan_Dialect, Titan_LRDecay, "lr_decay"> {
  let assemblyFormat = "$value";
}

def Titan_LRScheduleOp : Titan_Op<"lr_schedule", [DeclareOpInterfaceMethods<Titan_KernelOpInterface, ["getKernelParams"]>,
    Pure]> {
  let summary = "TorchTitan's warmup-stable-decay learning rate at a step";
  let description = [{
    `step` is the 0-based index of the step about to run and `total_steps`
    the run's `training.steps` (operands, so a run can change its length
    without recompiling). As TorchTitan v0.2.0's `build_lr_schedulers`:
    `w = min(warmup_steps, total_steps)`,
    `d = round(total_steps * decay_ratio)` (half to even; or
    `total_steps - w` without a ratio), clamped so that `w + d <= total_steps`,
    and `s = total_steps + 1 - w - d` (a "virtual last step", so the last
    real step stays above the floor). During warmup
    `factor = (step + 1) / w`; while stable `factor = 1`; otherwise with
    `p = min(1, ((step + 1) - (w + s)) / d)` the decay is `1 - p` (linear),
    `1 - sqrt(p)` (sqrt) or `(1 + cos(pi p)) / 2` (cosine), and
    `factor = min_lr_factor + (1 - min_lr_factor) * decay`.
    The result is `lr * factor`, computed in float64, returned as float32.
  }];
  let arguments = (ins 0DTensorOf<[I64]>:$step, 0DTensorOf<[I64]>:$total_steps,
                       F64Attr:$lr, I64Attr:$warmup_steps,
                       OptionalAttr<F64Attr>:$decay_ratio,
                       Titan_LRDecayAttr:$decay_type, F64Attr:$min_lr_factor);
  let results = (outs 0DTensorOf<[F32]>:$result);
  let assemblyFormat = [{
    $step `,` $total_steps `decay` `` $decay_type attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Titan_AdamWScalarsOp : Titan_Op<"adamw_scalars", [DeclareOpInterfaceMethods<Titan_KernelOpInterface, ["getKernelParams"]>,
    DeclareOpInterfaceMethods<Titan_PointwiseOpInterface>,
    Pure,
    AllTypesMatch<["lr", "grad_norm"]>,
    AllTypesMatch<["clip_coef", "decay", "step_size",
                   "bias_correction2_sqrt"]>]> {
  let summary = "the step's AdamW scalars, once for every parameter";
  let description = [{
    What `titan.adamw` multiplies and divides by, computed once a step
    rather than at every element, in PyTorch's order (which computes them
    on the host; the powers are the target's `pow`: the C library's on the
    CPU, libdevice's on a GPU):
    `clip_coef = min(1, max_norm * (1 / (grad_norm + 1e-6)))` in float32
    (`torch.nn.utils.clip_grad_norm_`), NaN when `grad_norm` is NaN or
    infinite (where PyTorch's is 0 for an infinite norm): `titan.adamw`'s
    sign to skip the step; with `t = step + 1` and
    `bias_correction = 1 - beta^t` in float64 (`torch.optim.AdamW`'s
    single-tensor path), `decay = 1 - lr * weight_decay`,
    `step_size = -(lr / bias_correction1)` and
    `bias_correction2_sqrt = sqrt(bias_correction2)`. Each is then rounded
    to the parameters' type, the results' element type.
  }];
  let arguments = (ins 0DTensorOf<[F32]>:$lr, 0DTensorOf<[F32]>:$grad_norm,
                       0DTensorOf<[I64]>:$step,
                       F64Attr:$beta1, F64Attr:$beta2,
                       F64Attr:$weight_decay, F64Attr:$max_norm);
  let results = (outs 0DTensorOf<[F32, F64]>:$clip_coef,
                      0DTensorOf<[F32, F64]>:$decay,
                      0DTensorOf<[F32, F64]>:$step_size,
                      0DTensorOf<[F32, F64]>:$bias_correction2_sqrt);
  let assemblyFormat = [{
    $lr `,` $grad_norm `,` $step attr-dict `:` type($lr) `,` type($step)
    `->` type($clip_coef)
  }];
  let hasVerifier = 1;
}

def Titan_AdamWOp : Titan_Op<"adamw", [DeclareOpInterfaceMethods<Titan_KernelOpInterface, ["getKernelParams"]>,
    DeclareOpInterfaceMethods<Titan_PointwiseOpInterface>,
    Pure,
    AllTypesMatch<["param", "grad", "exp_avg", "exp_avg_sq", "new_param",
                   "new_exp_avg", "new_exp_avg_sq"]>,
    AllTypesMatch<["clip_coef", "decay", "step_size",
                   "bias_correction2_sqrt"]>]> {
  let summary = "one AdamW update of a parameter, after global-norm clipping";
  let description = [{
    `torch.nn.utils.clip_grad_norm_` followed by `torch.optim.AdamW`
    (single-tensor path), elementwise in the parameter's type (its f32 or
    f64 master weights), each product and sum rounded (15 operations), with
    the step's scalars of `titan.adamw_scalars`:
    `g = grad * clip_coef`; `p = p * decay`;
    `m = beta1 * m + (1 - beta1) * g`;
    `v = beta2 * v + ((1 - beta2) * g) * g`;
    `p = p + (step_size * m) / (sqrt(v) / bias_correction2_sqrt + eps)`
    (`beta1`, `1 - beta1`, ... rounded to the parameter's type). Results:
    the new parameter, `m` and `v`. PyTorch moves `m` by `lerp` and adds
    `-step_size * (m / denom)` (the same values to within their roundings).
    When `clip_coef` is NaN (a non-finite global gradient norm) the results
    are `param`, `exp_avg` and `exp_avg_sq` unchanged: a NaN or an infinity
    in any gradient never reaches the weights or the moments.
  }];
  let arguments = (ins Titan_MasterTensor:$param, Titan_MasterTensor:$grad,
                       Titan_MasterTensor:$exp_avg,
                       Titan_MasterTensor:$exp_avg_sq,
                       0DTensorOf<[F32, F64]>:$clip_coef,
                       0DTensorOf<[F32, F64]>:$decay,
                       0DTensorOf<[F32, F64]>:$step_size,
                       0DTensorOf<[F32, F64]>:$bias_correction2_sqrt,
                       F64Attr:$beta1, F64Attr:$beta2, F64Attr:$eps);
  let results = (outs Titan_MasterTensor:$new_param,
                      Titan_MasterTensor:$new_exp_avg,
                      Titan_MasterTensor:$new_exp_avg_sq);
  let assemblyFormat = [{
    $param `,` $grad `,` $exp_avg `,` $exp_avg_sq `scalars` `(` $clip_coef `,`
    $decay `,` $step_size `,` $bias_correction2_sqrt `)` attr-dict `:`
    type($param) `,` type($clip_coef)
  }];
  let hasVerifier = 1;
}

include "titan/Dialect/Titan/IR/Float8Ops.td"

#endif // TITAN_DIALECT_TITAN_IR_TITANOPS_TD
