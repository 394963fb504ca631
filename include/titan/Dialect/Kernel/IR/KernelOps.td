//===- KernelOps.td - kernel dialect types and ops ---------*- tablegen -*-===//

#ifndef TITAN_DIALECT_KERNEL_IR_KERNELOPS_TD
#define TITAN_DIALECT_KERNEL_IR_KERNELOPS_TD

include "titan/Dialect/Kernel/IR/KernelDialect.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/IR/CommonTypeConstraints.td"
include "mlir/IR/EnumAttr.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

def Kernel_StreamType : TypeDef<Kernel_Dialect, "Stream"> {
  let mnemonic = "stream";
  let summary = "an in-order queue of kernel calls";
  let description = [{
    Calls on one stream run in program order. Stream 0 is compute;
    `kernel-schedule-collectives` puts each collective's start and wait on
    stream `1 + axis mask` of its group (one stream per group of mesh
    axes), which a target maps to that group's communication stream or
    thread. The lowering drops the operand today: the CPU target runs
    every call in order and the communicators run each group's collectives
    on their own (MPI's requests), the CUDA target enqueues every kernel on
    one compute stream and the NCCL communicator runs each group's
    collectives on that group's stream, ordered against it by events.
  }];
}

def Kernel_RequestType : TypeDef<Kernel_Dialect, "Request"> {
  let mnemonic = "request";
  let summary = "an in-flight collective, completed by kernel.wait";
}

/// The communication state of the rank: collectives' effects are on it, so
/// compute may move across a start or a wait (their buffers stay ordered by
/// their own read/write effects).
def Kernel_CommunicationResource
    : Resource<"::titan::kernel::CommunicationResource">;

def Kernel_StaticMemRef : StaticShapeMemRefOf<[AnyType]>;

//===----------------------------------------------------------------------===//
// Buffers
//===----------------------------------------------------------------------===//

/// Where a buffer lives: a memref's memory space. Device memory is the
/// default (no memory space); host memory is the target's pinned host arena
/// (training.enable_cpu_offload on a GPU), which kernel-plan-memory places
/// apart and the lowering addresses from the runtime's titan_rt_host_arena.
def Kernel_MemorySpace : I32EnumAttr<"MemorySpace", "where a buffer lives", [
      I32EnumAttrCase<"Device", 0, "device">,
      I32EnumAttrCase<"Host", 1, "host">]> {
  let cppNamespace = "::titan::kernel";
  let genSpecializedAttr = 0;
}
/// `memref<4xf32, #kernel.memory_space<host>>`.
def Kernel_MemorySpaceAttr
    : EnumAttr<Kernel_Dialect, Kernel_MemorySpace, "memory_space"> {
  let assemblyFormat = "`<` $value `>`";
}

/// What a buffer holds, for the memory plan's breakdown.
def Kernel_AllocKind : I32EnumAttr<"AllocKind", "what a buffer holds", [
      I32EnumAttrCase<"Activation", 0, "activation">,
      I32EnumAttrCase<"Temporary", 1, "temporary">,
      I32EnumAttrCase<"Collective", 2, "collective">,
      I32EnumAttrCase<"Workspace", 3, "workspace">,
      I32EnumAttrCase<"Copy", 4, "copy">,
      // A device buffer through which a kernel reads or writes host memory
      // (kernel-offload-state), or the host's image of a device buffer in
      // a host step.
      I32EnumAttrCase<"Staging", 5, "staging">]> {
  let cppNamespace = "::titan::kernel";
  let genSpecializedAttr = 0;
}
/// Bare in the op's format (`kernel.alloc activation`; the attribute's printer
/// leads with a space, hence the format's ``), `#kernel<kind activation>`
/// elsewhere.
def Kernel_AllocKindAttr : EnumAttr<Kernel_Dialect, Kernel_AllocKind, "kind"> {
  let assemblyFormat = "$value";
}

def Kernel_AllocOp : Kernel_Op<"alloc", [
    MemoryEffects<[MemAlloc<DefaultResource, 0, FullEffect>]>]> {
  let summary = "a buffer of the step, placed by the memory plan";
  let description = [{
    A buffer alive from here to its last use (through views, and for a
    collective's operands until its `kernel.wait`). `kind` says what it
    holds, for the plan's breakdown: `activation` (forward values kept for
    the backward), `temporary`, `collective` (a collective's result),
    `workspace` (a kernel's scratch) or `copy` (a low-precision copy of a
    parameter, under mixed precision). `kernel-plan-memory` sets `offset`, its
    place in the rank's arena.

    ```mlir
    %0 = kernel.alloc activation {offset = 4096 : i64} : memref<8x64x256xf32>
    ```
  }];
  let arguments = (ins Kernel_AllocKindAttr:$kind,
                       OptionalAttr<I64Attr>:$offset);
  let results = (outs Kernel_StaticMemRef:$buffer);
  let assemblyFormat = "`` $kind attr-dict `:` type($buffer)";
  let hasVerifier = 1;
}

def Kernel_ViewOp : Kernel_Op<"view", [Pure]> {
  let summary = "the same bytes seen with another static type, or part of them";
  let description = [{
    A reshape (or an identity such as `dist.replicate`): no code runs and
    the result aliases `source`; both types have the same size in bytes.
    With `offset`, the result is the bytes of `source` from that offset on
    (a contiguous `titan.slice`): it must fit inside. The memory plan keeps
    `source`'s buffer alive while any view of it is used.

    ```mlir
    %v = kernel.view %b : memref<8x64x256xf32> to memref<8x64x16x16xf32>
    %h = kernel.view %b offset 65536 : memref<8x64x256xf32> to memref<4x64x256xf32>
    ```
  }];
  let arguments = (ins Kernel_StaticMemRef:$source,
                       OptionalAttr<I64Attr>:$offset);
  let results = (outs Kernel_StaticMemRef:$result);
  let assemblyFormat = [{
    $source (`offset` $offset^)? attr-dict `:` type($source) `to` type($result)
  }];
  let hasVerifier = 1;
}

def Kernel_StreamOp : Kernel_Op<"stream", [Pure]> {
  let summary = "the stream with a given index";
  let arguments = (ins ConfinedAttr<I64Attr, [IntNonNegative]>:$index);
  let results = (outs Kernel_StreamType:$stream);
  let assemblyFormat = "$index attr-dict";
}

//===----------------------------------------------------------------------===//
// Kernel calls, copies and collectives
//===----------------------------------------------------------------------===//

def Kernel_CallOp : Kernel_Op<"call", [AttrSizedOperandSegments]> {
  let summary = "one library kernel on buffers";
  let description = [{
    Runs kernel `kernel` (a titan op's `KernelOpInterface` name) with the
    element type of its first floating-point buffer: it reads `inputs`,
    writes `outputs` and may use `workspace` as scratch. `params` are the
    kernel's scalar parameters in ABI order (`i64` and `f64` attributes); the
    buffers' static shapes complete the call. An output may be one of the
    inputs' buffers only where the op's contract allows it (in place). The
    verifier checks the kernel, its parameters' types and number and its
    buffers' numbers against the kernel catalog
    (titan/Contract/KernelCatalog.def).

    ```mlir
    kernel.call "rms_norm"(%x, %w : memref<16x256xf32>, memref<256xf32>)
        outs(%y : memref<16x256xf32>) on %s params [1.0e-05 : f64]
    ```
  }];
  let arguments = (ins StrAttr:$kernel,
                       Arg<Variadic<Kernel_StaticMemRef>, "", [MemRead]>:$inputs,
                       Arg<Variadic<Kernel_StaticMemRef>, "", [MemWrite]>:$outputs,
                       Arg<Optional<MemRefRankOf<[I8], [1]>>, "",
                           [MemRead, MemWrite]>:$workspace,
                       Kernel_StreamType:$stream, ArrayAttr:$params);
  let assemblyFormat = [{
    $kernel `(` ($inputs^ `:` type($inputs))? `)`
    `outs` `(` $outputs `:` type($outputs) `)`
    (`workspace` `(` $workspace^ `:` type($workspace) `)`)?
    `on` $stream `params` $params attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Whether it calls kernel `id` of the catalog.
    bool calls(::titan::catalog::KernelId id) {
      return getKernel() == ::titan::catalog::name(id);
    }
  }];
}

def Kernel_CopyOp : Kernel_Op<"copy"> {
  let summary = "copy a buffer into another of the same shape";
  let description = [{
    Copies `source` into `target`, which have the same shape and element
    type, in device memory or host memory (`#kernel.memory_space<host>`):
    kernel-offload-state stages offloaded state through copies between the
    two. In a device step the copy is ordered with the step's kernels; in a
    host step (`kernel.host_step`) it has completed when the next op runs.
  }];
  let arguments = (ins Arg<Kernel_StaticMemRef, "", [MemRead]>:$source,
                       Arg<Kernel_StaticMemRef, "", [MemWrite]>:$target,
                       Kernel_StreamType:$stream);
  let assemblyFormat = [{
    $source `,` $target `on` $stream attr-dict `:` type($source) `,` type($target)
  }];
  let hasVerifier = 1;
}

def Kernel_CopyStartOp : Kernel_Op<"copy_start", [
    MemoryEffects<[MemWrite<Kernel_CommunicationResource>]>]> {
  let summary = "start a copy between host and device memory";
  let description = [{
    Copies `source` into `target` (same shape and element type, one in host
    memory and one on the device: offloaded state, kernel-offload-state)
    on the target's copy engine, overlapping the kernels issued after it;
    both buffers stay in use until the `kernel.wait` of the returned
    request, after which `target` holds the copy.

    ```mlir
    %r = kernel.copy_start %h, %d on %s
        : memref<64xf32, #kernel.memory_space<host>>, memref<64xf32>
        -> !kernel.request
    ```
  }];
  let arguments = (ins Arg<Kernel_StaticMemRef, "", [MemRead]>:$source,
                       Arg<Kernel_StaticMemRef, "", [MemWrite]>:$target,
                       Kernel_StreamType:$stream);
  let results = (outs Kernel_RequestType:$request);
  let assemblyFormat = [{
    $source `,` $target `on` $stream attr-dict `:` type($source) `,`
    type($target) `->` qualified(type($request))
  }];
  let hasVerifier = 1;
}

def Kernel_CollectiveStartOp : Kernel_Op<"collective_start", [
    MemoryEffects<[MemWrite<Kernel_CommunicationResource>]>]> {
  let summary = "start a collective on buffers";
  let description = [{
    Starts collective `kernel` (`all_gather_start`, ...; see
    `dist.*_start`) reading `input` and writing `output`, with `workspace`
    for the communicator's staging (gathers and scatters along an inner
    dimension or of padded shards, all-to-all); all three stay in use until
    the `kernel.wait` of the returned request.

    ```mlir
    %r = kernel.collective_start "all_gather_start"(%x : memref<4x8xf32>)
        outs(%y : memref<8x8xf32>) on %s params [0, 0, 4] -> !kernel.request
    ```
  }];
  let arguments = (ins StrAttr:$kernel,
                       Arg<Kernel_StaticMemRef, "", [MemRead]>:$input,
                       Arg<Kernel_StaticMemRef, "", [MemWrite]>:$output,
                       Arg<Optional<MemRefRankOf<[I8], [1]>>, "",
                           [MemRead, MemWrite]>:$workspace,
                       Kernel_StreamType:$stream, ArrayAttr:$params);
  let results = (outs Kernel_RequestType:$request);
  let assemblyFormat = [{
    $kernel `(` $input `:` type($input) `)` `outs` `(` $output `:`
    type($output) `)` (`workspace` `(` $workspace^ `:` type($workspace) `)`)?
    `on` $stream `params` $params attr-dict `->` qualified(type($request))
  }];
  let hasVerifier = 1;
}

def Kernel_WaitOp : Kernel_Op<"wait", [
    MemoryEffects<[MemRead<Kernel_CommunicationResource>,
                   MemWrite<Kernel_CommunicationResource>]>]> {
  let summary = "complete a collective or a copy: its output is ready";
  let arguments = (ins Kernel_RequestType:$request, Kernel_StreamType:$stream);
  let assemblyFormat = "$request `on` $stream attr-dict";
  let extraClassDeclaration = [{
    /// The collective it completes (null for a copy).
    CollectiveStartOp getStart() {
      return getRequest().getDefiningOp<CollectiveStartOp>();
    }
    /// The copy it completes (null for a collective).
    CopyStartOp getCopyStart() {
      return getRequest().getDefiningOp<CopyStartOp>();
    }
  }];
}

//===----------------------------------------------------------------------===//
// Generated kernels
//===----------------------------------------------------------------------===//

/// How a kernel.generic combines the values its body yields for a
/// reduction buffer over every index.
def Kernel_ReductionKind : I32EnumAttr<"ReductionKind",
    "how a generated kernel reduces over its indices", [
      // The largest absolute value, NaN winning (torch.max's propagation),
      // as f32; 0 over no element. Exact and independent of order.
      I32EnumAttrCase<"AbsMax", 0, "absmax">,
      // In a row kernel, a buffer of C (the row length) elements of the
      // computation type (f32 or f64): element j is the sum over every row
      // of the body's value at that row's column j (a norm's weight
      // gradient). The rows are summed in P blocks fixed by the kernel's
      // workspace, each block's rows in order, then the blocks' sums in
      // block order: the same bits for any thread count or grid.
      I32EnumAttrCase<"ColumnSum", 1, "column_sum">]> {
  let cppNamespace = "::titan::kernel";
  let genSpecializedAttr = 0;
}
def Kernel_ReductionKindAttr
    : EnumAttr<Kernel_Dialect, Kernel_ReductionKind, "reduction"> {
  let assemblyFormat = "`<` $value `>`";
}
def Kernel_ReductionKindArrayAttr
    : TypedArrayAttrBase<Kernel_ReductionKindAttr, "reduction kinds">;

def Kernel_GenericOp : Kernel_Op<"generic", [AttrSizedOperandSegments,
    SingleBlockImplicitTerminator<"YieldOp">]> {
  let summary = "a pointwise kernel the compiler generates from its body";
  let description = [{
    Runs `body` once per element index: its arguments are the elements of
    `inputs` at that index (their element types), and its `kernel.yield`
    gives the elements of `outputs` there (theirs). Every buffer has the
    kernel's element count N (the largest) or one element. A buffer of N
    elements is read and written in row-major order, so an output may be
    an input's buffer (each index is read before it is written). A
    one-element buffer is broadcast (when N > 1): an input is read at every
    index, and an output is written once, with a value that may depend
    only on the one-element inputs (a scale computed from an amax,
    written for later kernels while every element uses it), so it cannot
    also be an input. The body is arith/math ops without side effects:
    each target's lowering generates the kernel from it, computing what
    depends only on the broadcast inputs once (`kernel-generate-pointwise`
    builds it from the ops' scalar semantics and fuses producers into
    their consumers); no library implements it.

    `reductions` are buffers the kernel reduces into: the body yields a
    value for each (after the outputs'), and the buffer receives their
    combination over every index, as `reduction_kinds` says (`absmax`: one
    f32, the largest absolute value; `column_sum`: see row kernels). A fused producer's
    amax is computed while its values are in registers, without a second
    read. The combination is exact and independent of the order, so the
    result is the same for any thread count or grid.

    `transposed_outputs` lists the outputs written transposed (a float8
    cast's K-major copy): with C the leading dimension of such an output
    and R = N / C (N its segment's element count), the value of index
    r * C + j goes to element j * R + r (the inputs are R x C row-major,
    the output C x R). A transposed output has N elements and is no input.
    Its kernel runs in tiles, each read along rows and written along
    columns, so the other outputs and the reductions come from the same
    read (Transformer Engine's cast-transpose).

    `segments` makes one launch of independent kernels of any sizes
    (horizontal fusion, as FSDP2's copy-in casts a layer's shards at
    once): triples (inputs, outputs, reductions) count each segment's
    buffers, in order. Segment k runs over its own element count (its
    largest buffer's), as if it were its own kernel: the body's part it
    runs is what its yielded values depend on, which only its arguments
    may feed; no segment may touch a buffer another writes, as they run in
    no order. Empty: one segment of every buffer. In a kernel of several
    segments with transposed outputs, a segment that writes one runs in
    tiles over its own rows and columns (the cast-transposes of several
    tensors in one launch), the others element by element (the
    recomputed rotations of q and k beside the attention output's
    cast-transpose).

    `row_length` C (0: none) makes a row kernel, which runs by rows of C
    elements (Inductor's persistent reductions): an input of C elements
    (but one of N) is read at the index's column (a norm's weight), and
    the body may take row reductions (`kernel.row_sum`, `kernel.row_max`,
    `kernel.row_logsumexp`), each over the index's row of a value computed
    from elements, and the column (`kernel.column`). A reduction may
    depend on others (a norm's gradient on its sums): a target computes a
    row's reductions in stages, each stage one read of the row (from the
    cache after the first), before its elements. An input read
    through the map `d0 floordiv C` has an element per row (a label), read
    once per row; an output of R = N / C elements, R < N, has one per row
    (a log-sum-exp, or with one row the kernel's total), written once per
    row with a value computed from the row's reductions, its per-row
    inputs and the broadcast inputs. A kernel with no other outputs and
    no reductions reads a row only for its reductions. A row kernel has
    one segment and no transposed outputs, and maps no input otherwise.

    A row kernel's `column_sum` reductions (C elements each, of one type T,
    f32 or f64) sum a value over the rows, per column (a norm's weight
    gradient: a reduction across rows, which no row's block sees whole).
    They need `workspace`, P x K x C elements of T for K column sums: the
    rows fall in P blocks (block b: rows [b R / P, (b + 1) R / P) of R),
    block b sums its rows' values in row order into its K x C partial
    sums, and a second pass adds the P blocks' partials in block order
    into each column sum. P is in the IR (the workspace's shape), not left
    to the launch: any thread count or grid groups the rows alike, so the
    same values give the same bits, and the host and GPU lowerings of one
    kernel sum in the same order (XLA and Inductor split such reductions
    the same way).

    `input_maps` (empty, or one per input) reads an input elsewhere than at
    the index: input k's argument at index i is its element `map_k(i)`
    (of the row-major buffer; i is the segment's index), an affine map of
    one dimension and one result that the verifier proves stays inside the
    buffer for every i (interval bounds; mod and floordiv by positive
    constants of non-negative values). An identity map is the rules above.
    One buffer may be several inputs under different maps (RoPE reads each
    element and its pair partner, `(d0 floordiv 2) * 2 + 1 - d0 mod 2`,
    and its cos/sin table at the index's position and pair); a mapped
    input is read at another index than the one written, so no output may
    be its buffer, and its element count does not size the kernel.
    `kernel.index` gives the body the index itself. Segments in tiles
    (writing a transposed output) have neither, nor row kernels (but for
    their per-row inputs).

    ```mlir
    kernel.generic ins(%g, %u : memref<8x64xbf16>, memref<8x64xbf16>)
        outs(%y : memref<8x64xbf16>) on %s {
    ^bb0(%a: bf16, %b: bf16):
      %x = arith.extf %a : bf16 to f32
      ...
      kernel.yield %r : bf16
    }
    ```
  }];
  let arguments = (ins
      Arg<Variadic<Kernel_StaticMemRef>, "", [MemRead]>:$inputs,
      Arg<Variadic<Kernel_StaticMemRef>, "", [MemWrite]>:$outputs,
      Arg<Optional<Kernel_StaticMemRef>, "",
          [MemRead, MemWrite]>:$workspace,
      Arg<Variadic<Kernel_StaticMemRef>, "", [MemWrite]>:$reductions,
      Kernel_StreamType:$stream,
      DefaultValuedAttr<Kernel_ReductionKindArrayAttr, "{}">:$reduction_kinds,
      DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$transposed_outputs,
      DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$segments,
      DefaultValuedAttr<I64Attr, "0">:$row_length,
      DefaultValuedAttr<AffineMapArrayAttr, "{}">:$input_maps);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    (`ins` `(` $inputs^ `:` type($inputs) `)`)?
    (`outs` `(` $outputs^ `:` type($outputs) `)`)?
    (`workspace` `(` $workspace^ `:` type($workspace) `)`)?
    (`reduce` $reduction_kinds^ `(` $reductions `:` type($reductions) `)`)?
    `on` $stream $body attr-dict
  }];
  let builders = [
    OpBuilder<(ins "::mlir::ValueRange":$inputs, "::mlir::ValueRange":$outputs,
                   "::mlir::Value":$stream), [{
      build($_builder, $_state, inputs, outputs, ::mlir::Value(),
            ::mlir::ValueRange(), stream, $_builder.getArrayAttr({}),
            $_builder.getDenseI64ArrayAttr({}),
            $_builder.getDenseI64ArrayAttr({}), $_builder.getI64IntegerAttr(0),
            $_builder.getArrayAttr({}));
    }]>,
    OpBuilder<(ins "::mlir::ValueRange":$inputs, "::mlir::ValueRange":$outputs,
                   "::mlir::ValueRange":$reductions, "::mlir::Value":$stream,
                   "::mlir::ArrayAttr":$reduction_kinds), [{
      build($_builder, $_state, inputs, outputs, ::mlir::Value(), reductions,
            stream, reduction_kinds, $_builder.getDenseI64ArrayAttr({}),
            $_builder.getDenseI64ArrayAttr({}), $_builder.getI64IntegerAttr(0),
            $_builder.getArrayAttr({}));
    }]>,
    OpBuilder<(ins "::mlir::ValueRange":$inputs, "::mlir::ValueRange":$outputs,
                   "::mlir::ValueRange":$reductions, "::mlir::Value":$stream,
                   "::mlir::ArrayAttr":$reduction_kinds,
                   "::mlir::DenseI64ArrayAttr":$transposed_outputs), [{
      build($_builder, $_state, inputs, outputs, ::mlir::Value(), reductions,
            stream, reduction_kinds, transposed_outputs,
            $_builder.getDenseI64ArrayAttr({}), $_builder.getI64IntegerAttr(0),
            $_builder.getArrayAttr({}));
    }]>];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    /// The kernel's element count: that of its largest buffer (but the
    /// mapped inputs' and the workspace).
    int64_t getNumElements();
    /// Input `index`'s map from the kernel's index to its element: its
    /// `input_maps` entry, or the identity.
    ::mlir::AffineMap getInputMap(unsigned index);
    /// Whether input `index` is read through a map other than the
    /// identity.
    bool isMapped(unsigned index);
    /// Whether any input is mapped or the body takes kernel.index: the
    /// kernel reads elsewhere than at the index it writes.
    bool readsAcrossIndices();
    /// The bytes one launch reads and writes: each segment's buffers once
    /// (a buffer several of its inputs read, under different maps, is read
    /// once: the other reads hit the cache), the workspace once. A row
    /// kernel's rows of more than kRowCacheBytes are read again from
    /// memory for each further pass (getRowPasses).
    int64_t getTrafficBytes();
    /// How many times a row kernel reads each row: once per stage of its
    /// row reductions (a reduction of values that depend on another's
    /// comes a pass later), and once more for its elements when it writes
    /// any; 0 for other kernels.
    int64_t getRowPasses();
    /// Each row reduction's pass over the row (1 for one of elements
    /// alone; one more than the latest pass a value it reduces depends on).
    ::llvm::DenseMap<::mlir::Operation *, int64_t> getRowReductionPasses();
    /// Whether the kernel writes anything per element: an output that is
    /// neither broadcast nor per-row, or a reduction (otherwise a row
    /// kernel reads its rows only for their reductions).
    bool writesElements();
    /// The bytes of a row a later pass finds in the cache: a block's share
    /// of a GPU SM's 256 KiB L1 at the 8 blocks an SM the launcher allows
    /// (an RMSNorm's rows of 8 KiB are; the cross-entropy's 128256 bf16
    /// logits a row are not).
    static constexpr int64_t kRowCacheBytes = 32 * 1024;
    /// Whether `buffer` (an input or output) is broadcast: one element, in
    /// a kernel (a segment) of more.
    bool isBroadcast(::mlir::Value buffer);
    /// The body's values that are the same at every index: the broadcast
    /// inputs' arguments and what is computed from them alone.
    ::llvm::DenseSet<::mlir::Value> getUniformValues();
    /// Whether input `buffer` of a row kernel is read at the index's
    /// column: C elements (the row length) in a kernel of more.
    bool isPerColumn(::mlir::Value buffer);
    /// Whether input `index` of a row kernel is read once per row (mapped
    /// by `d0 floordiv C`).
    bool isPerRowInput(unsigned index);
    /// Whether output `buffer` of a row kernel has an element per row:
    /// R = N / C elements, fewer than N.
    bool isPerRowOutput(::mlir::Value buffer);
    /// The body's values that are the same at every index of a row: the
    /// uniform values, the per-row inputs' arguments, the row reductions
    /// and what is computed from those alone.
    ::llvm::DenseSet<::mlir::Value> getRowUniformValues();
    /// The reductions of kind `kind`, in order.
    ::llvm::SmallVector<::mlir::Value> getReductionsOfKind(ReductionKind kind);
    /// Whether reduction `buffer` is a column sum.
    bool isColumnSum(::mlir::Value buffer);
    /// P, the row blocks of a row kernel's column sums (its workspace's
    /// elements over K x C); 0 without column sums.
    int64_t getColumnSumBlocks();
    /// Whether output `buffer` is written transposed.
    bool isTransposed(::mlir::Value buffer);
    /// (R, C) of a kernel of one segment with transposed outputs: its
    /// index r * C + j is row r, column j.
    std::optional<std::pair<int64_t, int64_t>> getTransposedShape();
    /// (R, C) of segment `segment` when it writes transposed outputs (a
    /// kernel with transposed outputs runs every segment in tiles).
    std::optional<std::pair<int64_t, int64_t>>
    getTransposedShape(const GenericSegment &segment);
    /// The kernel's segments (one, of every buffer, unless horizontally
    /// fused); empty when `segments` does not partition the buffers.
    ::llvm::SmallVector<GenericSegment> getSegmentList();
    /// The body's ops segment `segment` runs: those its yielded values
    /// depend on.
    ::llvm::DenseSet<::mlir::Operation *>
    getSegmentOps(const GenericSegment &segment);

  private:
    ::mlir::LogicalResult verifyTransposedOutputs();
    ::mlir::LogicalResult verifySegments();
    ::mlir::LogicalResult verifyRows();
    ::mlir::LogicalResult verifyReductions();
    ::mlir::LogicalResult verifyInputMaps();
  }];
}

def Kernel_IndexOp : Kernel_Op<"index", [Pure, HasParent<"GenericOp">]> {
  let summary = "the index a kernel.generic body computes";
  let description = [{
    The element index the body runs at, in its segment: 0 to N - 1 in
    row-major order (linalg.index's, flattened). RoPE takes its pair
    element's parity from it. Not in row kernels or segments in tiles.

    ```mlir
    %i = kernel.index : i64
    ```
  }];
  let results = (outs I64:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
}

class Kernel_RowReductionOp<string mnemonic>
    : Kernel_Op<mnemonic, [Pure, AllTypesMatch<["value", "result"]>,
                           HasParent<"GenericOp">]> {
  // The computation types of generated kernels.
  let arguments = (ins AnyTypeOf<[F32, F64]>:$value);
  let results = (outs AnyTypeOf<[F32, F64]>:$result);
  let assemblyFormat = "$value attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Kernel_RowSumOp : Kernel_RowReductionOp<"row_sum"> {
  let summary = "the sum of a value over the index's row of a row kernel";
  let description = [{
    In a row kernel (`row_length` C), the sum of `value` over the C indices
    of the current index's row, the same at each of them. `value` may
    depend on other row reductions (a target computes those in an earlier
    read of the row). The sum's order is fixed by C and the target alone,
    so a kernel gives the same bits for any thread count or grid.

    ```mlir
    %ss = kernel.row_sum %sq : f32
    ```
  }];
}

def Kernel_RowMaxOp : Kernel_RowReductionOp<"row_max"> {
  let summary = "the largest value over the index's row of a row kernel";
  let description = [{
    In a row kernel, the maximum of `value` over the index's row, as
    `arith.maximumf` combines (NaN wins, -0 below +0, as `torch.max`):
    exact, so the same bits in any order, on every target. A row of
    -infinity gives -infinity.

    ```mlir
    %m = kernel.row_max %x : f32
    ```
  }];
}

def Kernel_RowLogSumExpOp : Kernel_RowReductionOp<"row_logsumexp"> {
  let summary = "log(sum(exp(value))) over the index's row of a row kernel";
  let description = [{
    In a row kernel, the log of the sum of exponentials of `value` over the
    index's row, shifted by the row's max for range (a softmax's
    normalizer): `m + log(sum(exp(value - m)))` with `m` the row's max. A
    target may take it in one read of the row (a GPU block merges running
    (max, sum) pairs, as FlashAttention and the online softmax do) or two
    (the host: `kernel.row_max`, then `kernel.row_sum` of the shifted
    exponentials, from the cache); the order is fixed by the row length
    and the target. A row whose max is infinite gives a result that is
    not finite.

    ```mlir
    %lse = kernel.row_logsumexp %x : f32
    ```
  }];
}

def Kernel_ColumnOp : Kernel_Op<"column", [Pure, HasParent<"GenericOp">]> {
  let summary = "the index's column in a row kernel";
  let description = [{
    The column (0 to C - 1) of the index in a row kernel of rows of C: the
    cross-entropy's target logit is the row's element whose column is its
    label.

    ```mlir
    %j = kernel.column : i64
    ```
  }];
  let results = (outs I64:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Kernel_YieldOp : Kernel_Op<"yield", [Pure, Terminator,
    HasParent<"GenericOp">]> {
  let summary = "the output elements of a kernel.generic body";
  let arguments = (ins Variadic<AnyType>:$values);
  let builders = [OpBuilder<(ins), [{ build($_builder, $_state, {}); }]>];
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
}

#endif // TITAN_DIALECT_KERNEL_IR_KERNELOPS_TD
