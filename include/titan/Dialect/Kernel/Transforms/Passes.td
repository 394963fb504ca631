//===- Passes.td - kernel IR passes ------------------------*- tablegen -*-===//

#ifndef TITAN_DIALECT_KERNEL_TRANSFORMS_PASSES_TD
#define TITAN_DIALECT_KERNEL_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def KernelPlanMemory : Pass<"kernel-plan-memory", "::mlir::ModuleOp"> {
  let summary = "Give every buffer of a rank an offset in one static arena";
  let description = [{
    The state slots of all steps (`kernel.slot` arguments; one slot shared
    by the steps that use it, with one type) are laid out first, in order of
    first appearance; then each step's `kernel.alloc`s are placed above
    them, first fit by decreasing size (ties by program order), so that two
    buffers whose lifetimes overlap never overlap in memory. A buffer lives
    from its first use to its last use (through `kernel.view`s); a
    collective's operands live until its `kernel.wait`. All steps share the
    region above the slots, since they run one after another. Offsets and
    sizes are multiples of 256 bytes.

    Sets `offset` on every `kernel.alloc` and the module attributes
    `kernel.arena_bytes` (the rank's whole memory) and `kernel.slots`
    (`{slot = array<i64: offset, bytes>}`), which the runtime reads to place
    its state. Slots and buffers in host memory (`kernel-offload-state`)
    are planned alike in a host arena of their own
    (`kernel.host_arena_bytes`, `kernel.host_slots`). The result is
    deterministic.
  }];
}

def KernelOffloadState : Pass<"kernel-offload-state", "::mlir::ModuleOp"> {
  let summary = "Keep the sharded parameters, gradients and optimizer state "
                "in host memory (training.enable_cpu_offload)";
  let description = [{
    FSDP2's `CPUOffloadPolicy`, which TorchTitan's
    `training.enable_cpu_offload` selects, as a placement of the kernel IR:

    - the slots `param:*`, `grad:*`, `exp_avg:*` and `exp_avg_sq:*` (this
      rank's shards) move to host memory (`#kernel.memory_space<host>`),
      in every step;
    - a host step (`kernel.host_step`, which `titan-bufferize{host-steps}`
      sets on `optimizer_step`) runs its kernels on the host, so its
      buffers move to host memory too, except those a collective reads or
      writes (the communicator's are device memory);
    - a kernel that runs where one of its buffers does not live (a device
      step's kernel on an offloaded slot, a host step's on a device buffer,
      a collective on a host buffer) gets a staging buffer
      (`kernel.alloc staging`) in its own memory, copied in before it when
      it reads the buffer (a library call's outputs count as read: a GEMM
      may add into its result) and copied out after it (after a
      collective's `kernel.wait`) when it writes it.
    - in a device step the copies overlap compute: each is a
      `kernel.copy_start` on the copy stream (`kernel.stream 64`). A copy
      in starts one reader ahead (right after the previous kernel that read
      a copied-in buffer; right before its reader when the reader fetches
      more than `max-prefetch-bytes`, as a step's gradient accumulation
      does; never before the last copy out of the same buffer) and is
      waited for right before its reader; a copy out is waited for where
      the next one starts (the last before the step returns). A
      `kernel.copy` between host and device memory becomes a
      `kernel.copy_start` waited at once, in order with the others. A host
      step's copies are `kernel.copy`s, complete before its next op.
    - a host step may call only the kernels the catalog flags `kHostStep`
      (libtitanrt_host's entries), on f32 or f64 buffers: another is an
      error naming it.

    So a parameter's shard reaches the device by the cast that feeds its
    FSDP gather, and the reduce-scattered gradient goes back to the host
    after its wait, as FSDP2 copies them; AdamW, the gradient norm and the
    learning-rate schedule run on the host, and the norm's all-reduce on 4
    bytes staged through the device. The device's staging buffers are
    planned like any other, so `--emit=memory` shows what offloading leaves
    on the device; `kernel-plan-memory` places the host buffers in a host
    arena of their own. The runtime waits for the device before a host
    step.
  }];
  let options = [
    Option<"maxPrefetchBytes", "max-prefetch-bytes", "int64_t",
           /*default=*/"-1",
           "Bytes a kernel's copies in may be fetched ahead of it; a kernel "
           "that fetches more waits for them right before it (negative: "
           "any)">,
  ];
}

def KernelFuseGemmAccumulate
    : Pass<"kernel-fuse-gemm-accumulate", "::mlir::ModuleOp"> {
  let summary = "Fold an add into the GEMM that produces one of its operands";
  let description = [{
    A linear GEMM (`linear`, `linear_grad_input`, `linear_grad_weight`,
    Float8's tensorwise `scaled_matmul`: one scale an operand, as cuBLASLt
    adds into an FP8 GEMM's result with those; a rowwise one keeps its
    add) whose result is a temporary read only by an
    in-place `add` into an accumulator (`add(acc, t) outs(acc)` or
    `add(t, acc) outs(acc)`: a
    residual add, the sum of a tensor's gradients from several branches, a
    microbatch's gradient added into its slot) instead adds its product
    into the accumulator itself (`accumulate` = 1: the libraries' beta =
    1; a scaled GEMM scales its product first, as cuBLASLt's epilogue):
    the add's pass over the data and the temporary are gone. Only where
    nothing between the GEMM and the add reads or writes the accumulator,
    and no collective that reads or writes it completes in between (one
    on other buffers may: a pipeline stage's tp and cp collectives between
    a microbatch's weight-gradient GEMM and the add into its slot), and
    not for an add marked
    `kernel.separate_rounding` (a recompute region's: activation
    checkpointing must not change the numbers). The sum is the same up to
    rounding: the product is added inside the GEMM's accumulation and
    rounded once (the separate add rounded the product to the result type
    first).
  }];
}

def KernelScheduleCollectives
    : Pass<"kernel-schedule-collectives", "::mlir::ModuleOp"> {
  let summary = "Start collectives early and wait for them late (latency "
                "hiding), within a memory budget";
  let description = [{
    The passes before this one place each `kernel.wait` right after its
    `kernel.collective_start`, so no communication overlaps compute. In
    every step function (one block), this pass moves each start as early as
    its buffers allow and each wait as late as its buffers allow:

    - dependencies are through buffers: two accesses conflict when they
      touch the same root buffer (a `kernel.alloc` or a state slot, through
      `kernel.view`s, offsets ignored: conservative) and one of them writes.
      A collective reads its input and writes its output and workspace from
      its start to its wait; other ops' accesses are their memory effects
      (`kernel.call` inputs read, outputs written, workspace both;
      `kernel.copy`). An op with any other effect, or with regions, is a
      barrier. The `kernel.alloc`s and `kernel.view`s that define a start's
      buffers move up with it, and so does a `kernel.call` that computes
      its input from state slots alone (mixed precision's cast of a
      parameter shard before its gather, as FSDP2 casts in its all-gather's
      copy-in), where nothing it passes conflicts with it.
    - every rank of a group must issue the group's collectives in the same
      order (MPI, NCCL). The pass is deterministic, so ranks that run the
      same program agree whatever it does: a start may pass the start of
      another kind of collective (the backward's re-gathers move above the
      reduce-scatters issued before them) unless either one's group
      includes the pipeline axis (axis mask bit 0) or has no mask, whose
      members run other pipeline ranks' programs. Collectives of one kind
      keep their order (an in-order stream then completes the one needed
      first first); `keep-start-order` keeps the order of all starts. Waits
      may reorder.
    - a wait sinks no further than the wait of the next collective (in
      program order) on its stream: a stream completes its collectives in
      issue order, so a later wait hides nothing more and would hold budget
      that later collectives need.
    - budget: at every op, the bytes of the planned buffers (`kernel.alloc`
      roots; slots live all step anyway) of the collectives whose window now
      covers that op but did not before stay within `max-in-flight-bytes`
      (negative: no bound). Collectives are taken in program order, each
      start hoisted and then its wait sunk, so earlier collectives get the
      budget first; one larger than the budget keeps its window.

    Each collective's start and wait go on `kernel.stream <1 + axis mask>`
    (params[2] of every collective is its group's mesh-axis mask); compute
    stays on its stream.
  }];
  let options = [
    Option<"maxInFlightBytes", "max-in-flight-bytes", "int64_t",
           /*default=*/"-1",
           "Bytes of collective buffers whose lifetime the schedule may "
           "lengthen at any point (negative: unbounded)">,
    Option<"keepStartOrder", "keep-start-order", "bool", /*default=*/"false",
           "Keep the program order of all collective starts (otherwise "
           "of those of one kind, and of those whose group includes the "
           "pipeline axis)">,
  ];
}

def KernelGeneratePointwise
    : Pass<"kernel-generate-pointwise", "::mlir::ModuleOp"> {
  let summary = "Pointwise kernel calls as generated kernels, fused";
  let description = [{
    Each `kernel.call` of a pointwise op (one with titan's
    `PointwiseOpInterface`: add, mul, sqrt, silu, swiglu, their gradients,
    casts between f64, f32, bf16 and f16, the tensorwise float8 amax,
    scale and casts, transposed or not) becomes a `kernel.generic` whose
    body is the op's scalar semantics: operands widened to the computation
    type, results rounded to their element types. No library kernel runs
    it, and a 16-bit call needs no widened copies (its workspace goes).
    A call of a row op (titan's `RowwiseOpInterface`: RMSNorm and its
    gradient) becomes a row kernel (`row_length` the last dimension; its
    sums over the row are `kernel.row_sum`s, its weight read per column).
    A result summed over the rows (the weight gradient) becomes a
    `column_sum` reduction in the computation type, its partials in a
    workspace of `column-sum-blocks` row blocks (fewer when there are
    fewer than 4 rows a block), then rounded to the result's type by a pointwise kernel
    when that differs.

    Then each generated kernel absorbs the generated kernels producing its
    inputs, while it can: producer `P` fuses into consumer `C` when `P` is
    the last op to touch the buffer `C` reads and they share a stream. `P`
    then runs inside `C`, at `C`'s place, if nothing between them writes
    what `P` reads or touches what else `P` writes. Otherwise (the GEMM
    reading a float8 cast and its scale, before the transposed cast of the
    same tensor; the GEMM reading swiglu's other gradient before the amax
    of the first), `C` moves up to `P`'s place, if nothing between writes
    what `C` reads or touches what it writes (at most `max-hoist` ops up):
    the cast and its transposed copy come from one read. `C` moves up too,
    where it can, when `P` would otherwise move down past a collective's
    wait, or past an op reading the result of a collective started before
    `P` (the schedule waits before that op): `P` keeps overlapping the
    collective (RoPE's gradient of dq, fused with its amax, stays before
    the cast of dv that a context-parallel reduce-scatter delivers). `C`
    may read `P`'s result through a reshape (views without an offset, of
    one element type). The buffer between
    them is dropped when nothing else uses it (it never reaches the arena),
    otherwise the fused kernel still writes it. A transposed output (a
    transposed float8 cast's) never feeds a fused consumer, which reads by
    index; nor does a reduction, complete only after the last index (`P`'s
    reductions become the fused kernel's, after `C`'s). Each element is
    still rounded where the ops round it, so a fused kernel computes
    exactly what the ops compute one by one, whatever the grouping
    (activation checkpointing's recomputed ops fuse differently and stay
    bitwise equal). A row kernel takes in pointwise producers, but no other
    row kernel, nothing in tiles, and a pointwise consumer only when that
    drops the link or feeds a reduction and no collective reads the link
    (a sequence-parallel norm's amax then overlaps its gather).

    Then recompute: an output of a generated kernel `P` (an allocation)
    that one later generated kernel alone reads, and that it cannot take
    in (it reads `P`'s reduction: a float8 cast needs its tensor's amax),
    is computed again inside that kernel from `P`'s inputs, when nothing
    between writes them, and `P` no longer writes it. All such outputs of
    `P` are recomputed together, their readers (reading by elements at
    their own index) joined into one kernel at the first one's place (each
    later one moving up to it, its tiles the same, its outputs no larger
    than the outputs of `P` it read), and only when the inputs `P` reads
    that the readers did not read already weigh fewer bytes than the
    outputs' writes and reads saved (and no more than the outputs when a
    kernel runs between `P` and the first reader: they live longer):
    SwiGLU's two gradients (read back by their casts, 4 tensors moved) are
    recomputed from dh, h1 and h3 (3 read again) in one kernel casting
    both, and `P` keeps only their amaxes; SwiGLU's forward output (2
    inputs for 2 tensors) is not.

    Last, siblings: a kernel without segments joins an earlier generated
    kernel that reads one of its tensors (same element count and stream,
    neither touching what the other writes), moving up to it under the
    same conditions as a consumer (at most `max-hoist` ops) when its
    outputs hold at most half the bytes of that tensor (they live longer;
    the read saved is larger): a recomputed activation's cast and the
    backward's transposed cast of it, whose scale the forward computed,
    come from one read, and SwiGLU's gradient amaxes join the transposed
    cast of the recomputed h, which reads h1 and h3 too.

    Runs after the library fusion (a GEMM's accumulating add), for
    targets whose lowering generates
    kernels (TargetFeatures::generatedKernels).
  }];
  // The pointwise ops' scalar semantics are on the registered titan ops.
  let dependentDialects = ["::titan::TitanDialect"];
  let options = [
    Option<"maxBuffers", "max-buffers", "unsigned", /*default=*/"16",
           "The most buffers (inputs and outputs) one fused kernel takes">,
    Option<"maxHoist", "max-hoist", "unsigned", /*default=*/"256",
           "The most ops a consumer moves up past to fuse with its "
           "producer when ops between them read the buffer linking them "
           "(it bounds how much longer the consumer's outputs live)">,
    Option<"columnSumBlocks", "column-sum-blocks", "unsigned",
           /*default=*/"512",
           "The row blocks P a row kernel's column sums are split into: "
           "each block's partial sums, then the blocks' in order (a GPU's "
           "blocks; the partials take P x K x C elements for K sums of rows of "
           "C)">,
  ];
}

def KernelFuseHorizontal
    : Pass<"kernel-fuse-horizontal", "::mlir::ModuleOp"> {
  let summary = "Independent generated kernels as one launch";
  let description = [{
    Horizontal fusion: a generated kernel joins the generated kernel before
    it on its stream as a segment of one `kernel.generic` (one launch),
    when nothing but allocations, views and collective starts and waits
    (which touch none of the kernel's buffers: a wait only orders what
    follows it after its collective) stand between them, neither reads
    what the other writes, no collective started between them sends what
    the earlier one writes (joined, it would start only after the later
    one's work too: a gradient's reduce-scatter, a context-parallel gather
    of k; shard casts alone join past their gathers' starts), and both
    come from one model unit (a transformer block, or the embedding, the
    head: their locations' module names), unless both only reduce the
    step's state (the parameters' float8 amaxes at the step's start, one
    kernel a block, which join across blocks up to `max-segments`: 32
    launches become 7 on the 8B Float8 step). Each segment keeps its own
    element count, so kernels of any sizes join: a block's FSDP shard
    casts before their gathers become one kernel, as FSDP2's copy-in casts
    a unit's parameters at once. Per unit, a program's launches grow with
    its depth by the same count a block, which the planner's extrapolation
    from reduced depths relies on (the step-start amaxes grow by a launch
    every `max-segments` segments instead: a few launches at most, each a
    read of parameter shards whose bytes do grow linearly). When an op that runs nothing stands in
    a kernel's way (the wait for the gather whose result it reads: the
    float8 transpose of a gathered weight), the kernel before it moves down
    to it instead, if nothing between touches that kernel's buffers and
    every collective waited for between them that started before it still
    overlaps a compute op (a gradient's cast-transpose and the weight's
    transpose run in one launch after the wait of an FSDP gather issued
    ahead; a sequence-parallel gather started just before the kernel keeps
    it, its only overlap). Nothing else moves across a library
    kernel or a copy, so the stream runs the same work in the same order,
    in fewer launches, with one exception: a shard cast (a kernel reading
    only the step's state and one-element scales, writing scales and
    buffers only collectives take as inputs: a parameter shard's cast
    before its gather) moves up past up to `max-hoist`
    ops that touch none of its buffers to join the nearest shard cast of
    its unit. The collective schedule starts a block's gathers one by one
    as its memory budget allows, during the block before; their casts
    become one kernel, at the first one's place, whose shards (an eighth
    of the block's weights under FSDP 8, in float8 or bf16) wait there for
    their gathers. A cast-transpose runs in tiles, each segment writing a
    transposed output in its own; the others of its launch run element by
    element (the recomputed rotations of q and k beside the attention
    output's cast-transpose). Segments not
    in tiles join only when all or none
    have a multiple of 16 elements, so a small odd kernel never costs a
    large one its 16-byte packs on a GPU (tiles move elements one by one).

    Runs after the collective schedule (which places each gather's cast
    beside its start) and before the memory plan, for targets whose
    lowering generates kernels.
  }];
  let options = [
    Option<"maxSegments", "max-segments", "unsigned", /*default=*/"32",
           "The most kernels one launch runs">,
    Option<"maxHoist", "max-hoist", "unsigned", /*default=*/"128",
           "The most ops that run something a shard cast moves up past to "
           "join an earlier one (about a block's prefetch window: it bounds "
           "how much longer the shards live)">,
  ];
}

#endif // TITAN_DIALECT_KERNEL_TRANSFORMS_PASSES_TD
