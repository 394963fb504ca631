//===- DistOps.td - dist dialect attributes, types and ops -*- tablegen -*-===//

#ifndef TITAN_DIALECT_DIST_IR_DISTOPS_TD
#define TITAN_DIALECT_DIST_IR_DISTOPS_TD

include "titan/Dialect/Dist/IR/DistDialect.td"
include "titan/Dialect/Dist/IR/DistPlan.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/IR/CommonTypeConstraints.td"
include "mlir/IR/EnumAttr.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "titan/Dialect/Titan/IR/AdjointInterface.td"
include "titan/Dialect/Titan/IR/KernelInterface.td"

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

/// How an all-reduce combines the ranks' values; the value is the kernel's
/// parameter (runtime/include/titanrt/KernelABI.h).
def Dist_ReductionKind : I32EnumAttr<"ReductionKind",
    "how an all-reduce combines the ranks' values", [
      I32EnumAttrCase<"Sum", 0, "sum">,
      I32EnumAttrCase<"Avg", 1, "avg">,
      I32EnumAttrCase<"Max", 2, "max">]> {
  let cppNamespace = "::titan::dist";
  let genSpecializedAttr = 0;
}
def Dist_ReductionKindAttr
    : EnumAttr<Dist_Dialect, Dist_ReductionKind, "reduction"> {
  let assemblyFormat = "$value";
}

/// How context-parallel attention exchanges K and V (TorchTitan's
/// `context_parallel_rotate_method`).
def Dist_RotateMethod : I32EnumAttr<"RotateMethod",
    "how context-parallel attention exchanges K and V", [
      I32EnumAttrCase<"AllGather", 0, "allgather">,
      I32EnumAttrCase<"AllToAll", 1, "alltoall">]> {
  let cppNamespace = "::titan::dist";
  let genSpecializedAttr = 0;
}
def Dist_RotateMethodAttr
    : EnumAttr<Dist_Dialect, Dist_RotateMethod, "rotate"> {
  let assemblyFormat = "$value";
}

def Dist_MeshAttr : AttrDef<Dist_Dialect, "Mesh"> {
  let mnemonic = "mesh";
  let summary = "a device mesh: the size of each named axis";
  let description = [{
    `#dist.mesh<pp = 1, dp_replicate = 2, dp_shard = 2, cp = 1, tp = 2>`.
    Rank `r` has coordinates `r` written in mixed radix over
    `(pp, dp_replicate, dp_shard, cp, tp)`, `tp` varying fastest (as
    TorchTitan's device mesh; titan/Contract/MeshAxes.h is the table of the
    axes). The world size is the product of the sizes.

    `load_balanced = ["cp"]` lists the axes that split a value's dimension
    load-balanced (titan/Contract/ContextParallelLayout.h): into `2n` chunks
    for `n` ranks, rank `r` holding chunks `r` and `2n-1-r` in that order,
    as TorchTitan's context parallel splits the sequence for causal
    attention. Any other axis splits contiguously. Without the key the mesh
    takes the default of MeshAxes.h's table: the axes it marks
    load-balanced that have more than one rank (`cp` when `cp > 1`), so
    `#dist.mesh<..., cp = 2, ...>` splits cp load-balanced and
    `load_balanced = []` splits it contiguously. A written list is kept as
    written; the key is printed only when the list differs from the
    default.
  }];
  let parameters = (ins "int64_t":$pp, "int64_t":$dp_replicate,
                        "int64_t":$dp_shard, "int64_t":$cp, "int64_t":$tp,
                        "::mlir::ArrayAttr":$load_balanced);
  let skipDefaultBuilders = 1;
  let builders = [
    // A null `load_balanced` takes the default (defaultLoadBalanced); a
    // list, empty included, is kept.
    AttrBuilder<(ins "int64_t":$pp, "int64_t":$dp_replicate,
                     "int64_t":$dp_shard, "int64_t":$cp, "int64_t":$tp,
                     "::mlir::ArrayAttr":$load_balanced), [{
      return $_get($_ctxt, pp, dp_replicate, dp_shard, cp, tp,
                   load_balanced ? load_balanced
                                 : defaultLoadBalanced($_ctxt,
                                       {pp, dp_replicate, dp_shard, cp, tp}));
    }]>,
    // The load-balanced axes from the table (MeshAxes.h).
    AttrBuilder<(ins "int64_t":$pp, "int64_t":$dp_replicate,
                     "int64_t":$dp_shard, "int64_t":$cp, "int64_t":$tp), [{
      return $_get($_ctxt, pp, dp_replicate, dp_shard, cp, tp,
                   defaultLoadBalanced($_ctxt, {pp, dp_replicate, dp_shard, cp,
                                                tp}));
    }]>];
  // `struct(params)`, with load_balanced optional and its default the
  // table's for the sizes written (DistDialect.cpp).
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The axis names (MeshAxes.h), outermost first.
    static ::llvm::ArrayRef<::llvm::StringRef> getAxisNames();
    /// Size of a named axis; std::nullopt for an unknown name.
    std::optional<int64_t> getAxisSize(::llvm::StringRef axis) const;
    /// Size of `axis`.
    int64_t getSize(::titan::mesh::Axis axis) const;
    /// Index of a named axis in getAxisNames(), or -1.
    static int getAxisIndex(::llvm::StringRef axis);
    int64_t getWorldSize() const;
    /// Whether `axis` splits load-balanced (load_balanced lists it).
    bool isLoadBalanced(::llvm::StringRef axis) const;
    /// The mask of the load-balanced axes (bit i: MeshAxes.h's axis i).
    unsigned getLoadBalancedMask() const;
    /// How the group of `axes` splits a dimension: load-balanced when one
    /// of them is.
    ::titan::mesh::SplitLayout
    getSplitLayout(::llvm::ArrayRef<::llvm::StringRef> axes) const;
    ::titan::mesh::SplitLayout getSplitLayout(::mlir::ArrayAttr axes) const;
    /// The load_balanced list a mesh of `sizes` (in MeshAxes.h's order)
    /// gets by default: the table's load-balanced axes with more than one
    /// rank, in the table's order; empty when none.
    static ::mlir::ArrayAttr
    defaultLoadBalanced(::mlir::MLIRContext *ctx,
                        ::llvm::ArrayRef<int64_t> sizes);
  }];
}

def Dist_ShardingAttr : AttrDef<Dist_Dialect, "Sharding"> {
  let mnemonic = "sharding";
  let summary = "how a tensor is spread over the mesh: split dimensions and pending sums";
  let description = [{
    `#dist.sharding<[["dp_shard"], []]>`: one list of mesh axes per tensor
    dimension; a dimension of size `n` split over axes of sizes `a, b` has
    local size `n / (a * b)` (axes listed outermost first). Trailing
    unsplit dimensions may be left out; `#dist.sharding<[]>` is replicated.
    `partial = ["tp"]` lists the axes over which each rank holds one term of
    a pending reduction (`reduction = max` or `avg` for other than a sum):
    the value is the reduction of the ranks' values over those axes. The
    value is replicated over the mesh axes it does not mention. An axis
    appears at most once.

    An axis the mesh lists as `load_balanced` (context parallel's `cp`)
    splits its dimension load-balanced, as TorchTitan's context parallel
    does for causal attention: into `2n` chunks for `n` ranks, rank `r`
    holding chunks `r` and `2n-1-r` in that order (storage splits, below,
    are FSDP's and contiguous).

    Uneven FSDP: the trailing run of a dimension's storage axes
    (`dp_replicate`, `dp_shard`, `cp`) is one group of `k` shards that need not divide what
    the outer axes leave (`m`): each shard holds `ceil(m / k)` rows and the
    last are zero-padded, as FSDP2 pads. Every other axis must divide.
  }];
  let parameters = (ins "::mlir::ArrayAttr":$dims,
                        OptionalParameter<"::mlir::ArrayAttr">:$partial,
                        OptionalParameter<"::titan::dist::ReductionKindAttr">:
                          $reduction);
  let builders = [
    AttrBuilder<(ins "::mlir::ArrayAttr":$dims), [{
      return $_get($_ctxt, dims, ::mlir::ArrayAttr(),
                   ::titan::dist::ReductionKindAttr());
    }]>];
  let assemblyFormat = [{
    `<` $dims (`,` `partial` `=` $partial^)?
    (`,` `reduction` `=` `` $reduction^)? `>`
  }];
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The axes splitting dimension `dim`.
    ::llvm::SmallVector<::llvm::StringRef> getAxes(unsigned dim) const;
    /// The axes of the pending reduction, and how it combines.
    ::llvm::SmallVector<::llvm::StringRef> getPartialAxes() const;
    ::titan::dist::ReductionKind getReductionKind() const;
    /// Neither split nor partial.
    bool isReplicated() const;
    /// The local shape of a tensor of global shape `shape` on `mesh`, or
    /// failure (with `reason`) if a dimension is not divisible.
    ::mlir::FailureOr<::llvm::SmallVector<int64_t>>
    getLocalShape(::llvm::ArrayRef<int64_t> shape, MeshAttr mesh,
                  std::string *reason = nullptr) const;
  }];
}

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

def Dist_FutureType : TypeDef<Dist_Dialect, "Future"> {
  let mnemonic = "future";
  let summary = "the pending result of an asynchronous collective";
  let parameters = (ins "::mlir::RankedTensorType":$value_type);
  let assemblyFormat = "`<` $value_type `>`";
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

def Dist_FloatTensor : StaticShapeTensorOf<[AnyFloat]>;
/// TorchTitan's block-causal mask on context-parallel attention: each
/// position's document start, B x S over the whole sequence (a query's
/// document may start in any earlier chunk), as on titan.attention.
def Dist_DocumentStarts : StaticShapeTensorOf<[I32]>;
def Dist_AxisList : TypedArrayAttrBase<StrAttr, "list of mesh axis names">;

/// The communication state of the rank (in-flight transfers). Collectives
/// have their effects on it rather than on the default resource, so code
/// motion and scheduling may move compute across a start or a wait.
def Dist_CollectiveResource : Resource<"::titan::dist::CollectiveResource">;

/// The future of a collective start is used exactly once, by a dist.wait in
/// the same block: never waited twice (a double release at run time), never
/// left pending (a leak, with the input freed while the transfer reads it).
def Dist_FutureWaitedOnce : NativeOpTrait<"FutureWaitedOnce"> {
  let cppNamespace = "::titan::dist::OpTrait";
}

class Dist_CollectiveStartOp<string mnemonic, list<Trait> traits = []>
    : Dist_Op<mnemonic, traits # [Dist_FutureWaitedOnce,
        DeclareOpInterfaceMethods<Titan_AdjointOpInterface>,
        DeclareOpInterfaceMethods<Titan_KernelOpInterface,
                                  ["getKernelParams"]>,
        MemoryEffects<[MemAlloc<Dist_CollectiveResource>,
                       MemWrite<Dist_CollectiveResource>]>]> {
  let results = (outs Dist_FutureType:$future);
  let hasVerifier = 1;
}

def Dist_AllGatherStartOp : Dist_CollectiveStartOp<"all_gather_start"> {
  let summary = "start concatenating the shards of the ranks along `dim`";
  let description = [{
    Over the ranks that differ only in the mesh axes `axes`, concatenates
    every rank's `input` along `dim` in rank order (outermost axis first).
    The result's `dim` is `input`'s times the product of the axis sizes, or
    less to drop the zero padding of uneven FSDP shards (any size that
    shards back to the input's). Its adjoint is `reduce_scatter` over the
    same axes and dimension.
  }];
  let arguments = (ins StaticShapeTensorOf<[AnyType]>:$input,
                       Dist_AxisList:$axes, I64Attr:$dim);
  let assemblyFormat = [{
    $input `axes` $axes `dim` $dim attr-dict `:` type($input) `->`
    qualified(type($future))
  }];
}

def Dist_ReduceScatterStartOp
    : Dist_CollectiveStartOp<"reduce_scatter_start"> {
  let summary = "start summing over ranks and keeping this rank's part";
  let description = [{
    Over the ranks that differ only in the mesh axes `axes`, sums `input`
    elementwise and splits the sum along `dim` into one part per rank (in
    rank order); each rank receives its part. A `dim` the group does not
    divide is zero-padded first (uneven FSDP shards): each part has
    `ceil(size / ranks)` rows. Its adjoint is `all_gather`.
  }];
  let arguments = (ins StaticShapeTensorOf<[AnyFloat]>:$input,
                       Dist_AxisList:$axes, I64Attr:$dim);
  let assemblyFormat = [{
    $input `axes` $axes `dim` $dim attr-dict `:` type($input) `->`
    qualified(type($future))
  }];
}

def Dist_AllReduceStartOp : Dist_CollectiveStartOp<"all_reduce_start"> {
  let summary = "start summing, averaging or taking the maximum over ranks";
  let description = [{
    Over the ranks that differ only in the mesh axes `axes`, every rank
    receives the elementwise sum (`reduction sum`, the default), mean
    (`avg`) or maximum (`max`) of all ranks' `input`. The result is replicated over
    `axes`. Its adjoint is the same all-reduce of the gradient (sum, avg);
    `max` has none (loss parallel uses it for a shift the loss does not
    depend on).
  }];
  let arguments = (ins StaticShapeTensorOf<[AnyFloat]>:$input,
                       Dist_AxisList:$axes,
                       DefaultValuedAttr<Dist_ReductionKindAttr,
                         "::titan::dist::ReductionKind::Sum">:$reduction);
  let assemblyFormat = [{
    $input `axes` $axes (`reduction` `` $reduction^)? attr-dict `:` type($input)
    `->` qualified(type($future))
  }];
}

def Dist_AllToAllStartOp : Dist_CollectiveStartOp<"all_to_all_start"> {
  let summary = "start exchanging slices: split one dimension, concat another";
  let description = [{
    Over the ranks that differ only in `axes`, every rank splits `input`
    along `split_dim` into one part per rank and sends part `p` to rank `p`;
    the parts it receives are concatenated along `concat_dim` in rank order.
    The result's `split_dim` is divided and its `concat_dim` multiplied by the
    group size (the exchange behind context parallel's alltoall rotation and
    sequence/head re-sharding). Its adjoint swaps the two dimensions.
  }];
  let arguments = (ins StaticShapeTensorOf<[AnyType]>:$input,
                       Dist_AxisList:$axes, I64Attr:$split_dim,
                       I64Attr:$concat_dim);
  let assemblyFormat = [{
    $input `axes` $axes `split` $split_dim `concat` $concat_dim attr-dict `:`
    type($input) `->` qualified(type($future))
  }];
}

def Dist_BroadcastStartOp : Dist_CollectiveStartOp<"broadcast_start"> {
  let summary = "start sending the value of one rank of the group to all";
  let description = [{
    Every rank of the group over `axes` receives the `input` of the group's
    rank `root` (ranks numbered in rank order from 0).
  }];
  let arguments = (ins StaticShapeTensorOf<[AnyType]>:$input,
                       Dist_AxisList:$axes, I64Attr:$root);
  let assemblyFormat = [{
    $input `axes` $axes `root` $root attr-dict `:` type($input) `->`
    qualified(type($future))
  }];
}

def Dist_SendRecvStartOp : Dist_CollectiveStartOp<"send_recv_start"> {
  let summary = "start a shift: send to the rank ahead, receive from behind";
  let description = [{
    The SPMD form of send/recv along one mesh axis: every rank sends `input`
    to the rank `shift` steps further along the axis (wrapping around) and
    receives the value of the rank `shift` steps back. Ring attention and
    pipeline transfers are built from it. Its adjoint is the opposite shift.
  }];
  let arguments = (ins StaticShapeTensorOf<[AnyType]>:$input,
                       Dist_AxisList:$axes, I64Attr:$shift);
  let assemblyFormat = [{
    $input `axes` $axes `shift` $shift attr-dict `:` type($input) `->`
    qualified(type($future))
  }];
}

//===----------------------------------------------------------------------===//
// Async tensor parallel: collective matmuls (dist-async-tensor-parallel)
//===----------------------------------------------------------------------===//

def Dist_AllGatherLinearOp : Dist_Op<"all_gather_linear", [
    DeclareOpInterfaceMethods<Titan_KernelOpInterface, ["getKernelParams"]>,
    MemoryEffects<[MemRead<Dist_CollectiveResource>,
                   MemWrite<Dist_CollectiveResource>]>]> {
  let summary = "all_gather along a token dimension fused with the GEMMs reading it";
  let description = [{
    `gathered` is `dist.all_gather_start` of `input` over `axes` along `dim`
    (a dimension before the last: the GEMMs' rows), and output `i` is
    `titan.linear(gathered, weights[i])` (`grad_input`:
    `titan.linear_grad_input(gathered, weights[i])`). The kernel passes the
    shards around the ring of the group (PyTorch's micro-pipeline TP
    `fused_all_gather_matmul`): while one shard travels, the GEMMs of the
    rows already here run, each output row the same dot products as the
    GEMM over the gathered value.

    ```mlir
    %g, %q, %k = dist.all_gather_linear %x, [%wq, %wk] axes ["tp"] dim 1
        : (tensor<8x1024x256xf32>, tensor<128x256xf32>, tensor<128x256xf32>)
        -> (tensor<8x2048x256xf32>, tensor<8x2048x128xf32>,
            tensor<8x2048x128xf32>)
    ```
  }];
  let arguments = (ins Dist_FloatTensor:$input,
                       Variadic<Dist_FloatTensor>:$weights,
                       Dist_AxisList:$axes, I64Attr:$dim,
                       UnitAttr:$grad_input);
  let results = (outs Dist_FloatTensor:$gathered,
                      Variadic<Dist_FloatTensor>:$outputs);
  let assemblyFormat = [{
    $input `,` `[` $weights `]` `axes` $axes `dim` $dim
    (`grad_input` $grad_input^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Dist_LinearReduceScatterOp : Dist_Op<"linear_reduce_scatter", [
    DeclareOpInterfaceMethods<Titan_KernelOpInterface, ["getKernelParams"]>,
    MemoryEffects<[MemRead<Dist_CollectiveResource>,
                   MemWrite<Dist_CollectiveResource>]>]> {
  let summary = "GEMMs summed, then reduce_scatter along a token dimension";
  let description = [{
    `pairs` is `lhs0, w0, lhs1, w1, ...`; the result is
    `dist.reduce_scatter_start` over `axes` along `dim` (a dimension before
    the last) of the sum, in order, of `titan.linear(lhs_i, w_i)`
    (`grad_input`: `titan.linear_grad_input(lhs_i, w_i)`). The kernel
    computes the partial sums of one shard at a time and passes them
    around the ring, each rank adding its term to the one it receives
    (PyTorch's `fused_matmul_reduce_scatter`): the sum over ranks runs in
    ring order, not MPI's, so the bits may differ from the unfused form.

    ```mlir
    %r = dist.linear_reduce_scatter %h, %wo axes ["tp"] dim 1
        : (tensor<8x2048x128xf32>, tensor<256x128xf32>)
        -> tensor<8x1024x256xf32>
    ```
  }];
  let arguments = (ins Variadic<Dist_FloatTensor>:$pairs,
                       Dist_AxisList:$axes, I64Attr:$dim,
                       UnitAttr:$grad_input);
  let results = (outs Dist_FloatTensor:$result);
  let assemblyFormat = [{
    $pairs `axes` $axes `dim` $dim (`grad_input` $grad_input^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    unsigned getNumGemms() { return getPairs().size() / 2; }
    ::mlir::Value getLhs(unsigned i) { return getPairs()[2 * i]; }
    ::mlir::Value getWeight(unsigned i) { return getPairs()[2 * i + 1]; }
  }];
  let hasVerifier = 1;
}

def Dist_Float8Tensor : StaticShapeTensorOf<[F8E4M3FN, F8E5M2]>;

def Dist_AllGatherScaledMatmulOp : Dist_Op<"all_gather_scaled_matmul", [
    DeclareOpInterfaceMethods<Titan_KernelOpInterface, ["getKernelParams"]>,
    MemoryEffects<[MemRead<Dist_CollectiveResource>,
                   MemWrite<Dist_CollectiveResource>]>]> {
  let summary = "float8 all_gather along a token dimension fused with the "
                "scaled GEMMs reading it";
  let description = [{
    Float8's `dist.all_gather_linear`. `gathered` is
    `dist.all_gather_start` of the float8 `input` over `axes` along `dim`
    (a dimension before the last: the GEMMs' rows). `rhs` lists pairs
    `(weight_i, weight_scale_i)`, and output `i` is
    `titan.scaled_matmul linear(gathered, input_scale, weight_i,
    weight_scale_i)` (`grad_input`: the `grad_input` form;
    `rhs_transposed`: every weight comes K-major, as
    `titan.quantize {transposed}` writes it). `input_scale` is rank 0
    (tensorwise: one scale for every shard, so each shard's rows are the
    gathered tensor's rows). The kernel passes the float8 shards around
    the ring of the group (PyTorch's `_fused_all_gather_scaled_matmul`):
    while one shard travels, the scaled GEMMs of the rows already here
    run, each output row the dot products and scales of the GEMM over the
    gathered value. The gathered value is a result too: the backward's
    transposed copy reads it.

    ```mlir
    %g, %q = dist.all_gather_scaled_matmul %x8, %xs, [%w8, %ws] axes ["tp"] dim 1
        : (tensor<8x1024x256xf8E4M3FN>, tensor<f32>, tensor<128x256xf8E4M3FN>,
           tensor<f32>) -> (tensor<8x2048x256xf8E4M3FN>, tensor<8x2048x128xbf16>)
    ```
  }];
  let arguments = (ins Dist_Float8Tensor:$input, 0DTensorOf<[F32]>:$input_scale,
                       Variadic<AnyStaticShapeTensor>:$rhs,
                       Dist_AxisList:$axes, I64Attr:$dim,
                       UnitAttr:$grad_input, UnitAttr:$rhs_transposed);
  let results = (outs Dist_Float8Tensor:$gathered,
                      Variadic<Dist_FloatTensor>:$outputs);
  let assemblyFormat = [{
    $input `,` $input_scale `,` `[` $rhs `]` `axes` $axes `dim` $dim
    (`grad_input` $grad_input^)? (`rhs_transposed` $rhs_transposed^)?
    attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    unsigned getNumGemms() { return getRhs().size() / 2; }
    ::mlir::Value getWeight(unsigned i) { return getRhs()[2 * i]; }
    ::mlir::Value getWeightScale(unsigned i) { return getRhs()[2 * i + 1]; }
  }];
  let hasVerifier = 1;
}

def Dist_ScaledMatmulReduceScatterOp
    : Dist_Op<"scaled_matmul_reduce_scatter", [
    DeclareOpInterfaceMethods<Titan_KernelOpInterface, ["getKernelParams"]>,
    MemoryEffects<[MemRead<Dist_CollectiveResource>,
                   MemWrite<Dist_CollectiveResource>]>]> {
  let summary = "scaled GEMMs summed, then reduce_scatter along a token "
                "dimension";
  let description = [{
    Float8's `dist.linear_reduce_scatter`. `quads` is `lhs0, lhs_scale0,
    w0, w_scale0, lhs1, ...`; the result is `dist.reduce_scatter_start`
    over `axes` along `dim` (a dimension before the last) of the sum, in
    order, of `titan.scaled_matmul linear(lhs_i, lhs_scale_i, w_i,
    w_scale_i)` (`grad_input`: the `grad_input` form; `rhs_transposed`:
    every weight comes K-major). Each `lhs_scale_i` is rank 0
    (tensorwise) or one per lhs row (rowwise: the lhs's shape with its last
    dimension 1), so a shard's rows take their own scales. The kernel computes the
    partial sums of one shard at a time and passes them around the ring,
    each rank adding its term to the one it receives (PyTorch's
    `_fused_scaled_matmul_reduce_scatter`): the sum over ranks runs in
    ring order, so the bits may differ from the unfused form.

    ```mlir
    %r = dist.scaled_matmul_reduce_scatter %h8, %hs, %wo8, %wos axes ["tp"] dim 1
        : (tensor<8x2048x128xf8E4M3FN>, tensor<f32>, tensor<256x128xf8E4M3FN>,
           tensor<f32>) -> tensor<8x1024x256xbf16>
    ```
  }];
  let arguments = (ins Variadic<AnyStaticShapeTensor>:$quads,
                       Dist_AxisList:$axes, I64Attr:$dim,
                       UnitAttr:$grad_input, UnitAttr:$rhs_transposed);
  let results = (outs Dist_FloatTensor:$result);
  let assemblyFormat = [{
    $quads `axes` $axes `dim` $dim (`grad_input` $grad_input^)?
    (`rhs_transposed` $rhs_transposed^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    unsigned getNumGemms() { return getQuads().size() / 4; }
    ::mlir::Value getLhs(unsigned i) { return getQuads()[4 * i]; }
    ::mlir::Value getLhsScale(unsigned i) { return getQuads()[4 * i + 1]; }
    ::mlir::Value getWeight(unsigned i) { return getQuads()[4 * i + 2]; }
    ::mlir::Value getWeightScale(unsigned i) { return getQuads()[4 * i + 3]; }
    /// Whether `scale` is one per row of `lhs` (rowwise): lhs's shape with
    /// its last dimension 1.
    static bool isRowScale(::mlir::ShapedType lhs, ::mlir::ShapedType scale);
  }];
  let hasVerifier = 1;
}

def Dist_ShardOffsetOp : Dist_Op<"shard_offset", [Pure,
    DeclareOpInterfaceMethods<Titan_KernelOpInterface, ["getKernelParams"]>]> {
  let summary = "this rank's shard index over mesh axes, times a stride";
  let description = [{
    `index * stride`, where `index` is this rank's position in the group of
    ranks that differ only in `axes` (outermost axis first, as a sharding
    lists them). With `stride` the local size of a sharded dimension, this
    is the global index of the rank's first element: the vocabulary-parallel
    embedding and cross-entropy use it to find their slice of the
    vocabulary.

    ```mlir
    %start = dist.shard_offset axes ["tp"] stride 64000 : tensor<i32>
    ```
  }];
  let arguments = (ins Dist_AxisList:$axes, I64Attr:$stride);
  let results = (outs 0DTensorOf<[I32]>:$result);
  let assemblyFormat = "`axes` $axes `stride` $stride attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Dist_WaitOp : Dist_Op<"wait", [
    DeclareOpInterfaceMethods<Titan_AdjointOpInterface>,
    MemoryEffects<[MemRead<Dist_CollectiveResource>,
                   MemFree<Dist_CollectiveResource>]>,
    TypesMatchWith<"result type is the future's value type", "future",
                   "result",
                   "::llvm::cast<FutureType>($_self).getValueType()">]> {
  let summary = "wait for a collective and take its result";
  let arguments = (ins Dist_FutureType:$future);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$future attr-dict `:` qualified(type($future))";
  let builders = [OpBuilder<(ins "::mlir::Value":$future), [{
    build($_builder, $_state,
          ::llvm::cast<FutureType>(future.getType()).getValueType(), future);
  }]>];
}

def Dist_ReplicateOp : Dist_Op<"replicate", [Pure, Titan_BufferView,
    DeclareOpInterfaceMethods<Titan_AdjointOpInterface>,
    AllTypesMatch<["input", "result"]>]> {
  let summary = "a value replicated over mesh axes (gradient sync point)";
  let description = [{
    The identity on values: marks `input` as identical on the ranks that
    differ only in `axes`, with each of those ranks using it on different
    data. Its adjoint all-reduces (sums) the gradient over `axes`: this is
    where data-parallel gradient synchronization comes from.
  }];
  let arguments = (ins AnyRankedTensor:$input, Dist_AxisList:$axes);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input `axes` $axes attr-dict `:` type($input)";
  let hasVerifier = 1;
}


//===----------------------------------------------------------------------===//
// Shardings in the program
//===----------------------------------------------------------------------===//

def Dist_ShardingConstraintOp : Dist_Op<"sharding_constraint", [Pure,
    AllTypesMatch<["input", "result"]>]> {
  let summary = "the sharding a value must have at this point";
  let description = [{
    The identity on values, with a plan's choice that the rules cannot make
    alone: `dist-propagate-sharding` gives the result `sharding`, and
    `dist-partition` reshards the input to it and removes the op (as
    Shardy's `sharding_constraint`). TorchTitan's sequence parallel is such
    a choice: the residual stream between blocks is split along the
    sequence.

    ```mlir
    %s = dist.sharding_constraint %x to #dist.sharding<[[], ["tp"]]>
        : tensor<8x2048x4096xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, Dist_ShardingAttr:$sharding);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input `to` $sharding attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Dist_LocalShardOp : Dist_Op<"local_shard", [Pure,
    DeclareOpInterfaceMethods<Titan_AdjointOpInterface>,
    DeclareOpInterfaceMethods<Titan_KernelOpInterface, ["getKernelParams"]>]> {
  let summary = "this rank's slice of a value replicated over mesh axes";
  let description = [{
    `input`, equal on the ranks that differ only in `axes`, split along
    `dim` into one part per rank of that group (in rank order); each rank
    keeps its part. Over an axis the mesh lists as `load_balanced` the
    split is load-balanced (see `#dist.mesh`): rank `r` keeps chunks `r`
    and `2n-1-r` of `2n`.
    A copy, with no communication: resharding a replicated value to a split
    one. Its adjoint gathers the gradient.

    ```mlir
    %a = dist.local_shard %angles axes ["cp"] dim 0
        : tensor<8192x64xf32> -> tensor<4096x64xf32>
    ```
  }];
  let arguments = (ins StaticShapeTensorOf<[AnyType]>:$input,
                       Dist_AxisList:$axes, I64Attr:$dim);
  let results = (outs StaticShapeTensorOf<[AnyType]>:$result);
  let assemblyFormat = [{
    $input `axes` $axes `dim` $dim attr-dict `:` type($input) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Context parallel
//===----------------------------------------------------------------------===//

def Dist_RingAttentionOp : Dist_Op<"ring_attention", [Pure,
    DeclareOpInterfaceMethods<Titan_AdjointOpInterface>]> {
  let summary = "causal attention over a sequence split over context-parallel ranks";
  let description = [{
    `titan.attention` on operands whose sequence is split load-balanced over
    `axes` (context parallel's `cp`, which the mesh lists as
    `load_balanced`): each rank holds its two chunks of the queries, keys
    and values, and computes its queries' attention over every rank's keys,
    with the causal mask on global positions. `rotate` says how K and V reach
    the rank: `allgather` gathers them, `alltoall` passes them around the
    ring one rank per step, each step's transfer overlapping the previous
    block's attention; the blocks' results merge through their log-sum-exp.
    Blocks the causal mask excludes are skipped. `lse` is over all keys.
    With `document_starts` (B x S, the whole sequence's, on every rank)
    the mask is also block-causal by document, as on `titan.attention`.
    `dist-expand-ring-attention` expands it (and its adjoint,
    `dist.ring_attention_grad`) into collectives and
    `dist.context_attention` kernels.
  }];
  let arguments = (ins Dist_FloatTensor:$query, Dist_FloatTensor:$key,
                       Dist_FloatTensor:$value,
                       Optional<Dist_DocumentStarts>:$document_starts,
                       Dist_AxisList:$axes,
                       Dist_RotateMethodAttr:$rotate, F64Attr:$scale);
  let results = (outs Dist_FloatTensor:$result, Dist_FloatTensor:$lse);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`documents` $document_starts^)? `axes` $axes
    `rotate` `` $rotate attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Dist_RingAttentionGradOp : Dist_Op<"ring_attention_grad", [Pure]> {
  let summary = "gradients of dist.ring_attention";
  let description = [{
    From the forward's operands, its result and log-sum-exp (over all keys)
    and the result's gradient: the gradients of this rank's queries, keys
    and values. With `alltoall` the keys' and values' gradients travel the
    ring with them and arrive back at their rank; with `allgather` they are
    reduce-scattered. `document_starts` is the forward's.
  }];
  let arguments = (ins Dist_FloatTensor:$query, Dist_FloatTensor:$key,
                       Dist_FloatTensor:$value, Dist_FloatTensor:$out,
                       Dist_FloatTensor:$lse, Dist_FloatTensor:$grad,
                       Optional<Dist_DocumentStarts>:$document_starts,
                       Dist_AxisList:$axes, Dist_RotateMethodAttr:$rotate,
                       F64Attr:$scale);
  let results = (outs Dist_FloatTensor:$query_grad,
                      Dist_FloatTensor:$key_grad,
                      Dist_FloatTensor:$value_grad);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $out `,` $lse `,` $grad
    (`documents` $document_starts^)? `axes` $axes `rotate` `` $rotate
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Dist_ContextAttentionOp : Dist_Op<"context_attention", [Pure,
    DeclareOpInterfaceMethods<Titan_KernelOpInterface, ["getKernelParams"]>]> {
  let summary = "one rank's queries against one block of keys and values";
  let description = [{
    Attention of this rank's two load-balanced query chunks (the mesh
    lists `axes` as `load_balanced`) over the keys
    and values of `key`/`value`: with `kv_shift = s >= 0` they are the
    chunks of the rank `s` steps back along `axes` (a ring step); with
    `kv_shift = -1`, every rank's chunks in rank order (gathered). The
    causal mask is on global positions (and, with `document_starts`, by
    document); `result` and `lse` cover only this block's keys (a row with
    none visible has result 0 and lse -inf), ready for
    `dist.attention_merge`.
  }];
  let arguments = (ins Dist_FloatTensor:$query, Dist_FloatTensor:$key,
                       Dist_FloatTensor:$value,
                       Optional<Dist_DocumentStarts>:$document_starts,
                       Dist_AxisList:$axes,
                       I64Attr:$kv_shift, F64Attr:$scale);
  let results = (outs Dist_FloatTensor:$result, Dist_FloatTensor:$lse);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`documents` $document_starts^)? `axes` $axes
    `kv_shift` $kv_shift attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Dist_ContextAttentionGradOp : Dist_Op<"context_attention_grad", [Pure,
    DeclareOpInterfaceMethods<Titan_KernelOpInterface, ["getKernelParams"]>]> {
  let summary = "one block's share of dist.ring_attention's gradients";
  let description = [{
    For the block `dist.context_attention` computed with the same
    `kv_shift`, from the final (merged) result and log-sum-exp: this
    block's term of the queries' gradient, and the gradients of the block's
    keys and values. `deterministic` as on `titan.attention_grad`.
  }];
  let arguments = (ins Dist_FloatTensor:$query, Dist_FloatTensor:$key,
                       Dist_FloatTensor:$value, Dist_FloatTensor:$out,
                       Dist_FloatTensor:$lse, Dist_FloatTensor:$grad,
                       Optional<Dist_DocumentStarts>:$document_starts,
                       Dist_AxisList:$axes, I64Attr:$kv_shift,
                       F64Attr:$scale, UnitAttr:$deterministic);
  let results = (outs Dist_FloatTensor:$query_grad,
                      Dist_FloatTensor:$key_grad,
                      Dist_FloatTensor:$value_grad);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $out `,` $lse `,` $grad
    (`documents` $document_starts^)? `axes` $axes `kv_shift` $kv_shift
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Dist_AttentionMergeOp : Dist_Op<"attention_merge", [Pure,
    DeclareOpInterfaceMethods<Titan_KernelOpInterface>,
    AllTypesMatch<["out", "other_out", "result"]>,
    AllTypesMatch<["lse", "other_lse", "result_lse"]>]> {
  let summary = "combine two blocks' attention through their log-sum-exp";
  let description = [{
    `result_lse = log(exp(lse) + exp(other_lse))` and
    `result = exp(lse - result_lse) * out + exp(other_lse - result_lse) *
    other_out`, per query row: the online softmax across key blocks.
  }];
  let arguments = (ins Dist_FloatTensor:$out, Dist_FloatTensor:$lse,
                       Dist_FloatTensor:$other_out,
                       Dist_FloatTensor:$other_lse);
  let results = (outs Dist_FloatTensor:$result,
                      Dist_FloatTensor:$result_lse);
  let assemblyFormat = [{
    $out `,` $lse `,` $other_out `,` $other_lse attr-dict `:` type($out) `,`
    type($lse)
  }];
}

#endif // TITAN_DIALECT_DIST_IR_DISTOPS_TD
