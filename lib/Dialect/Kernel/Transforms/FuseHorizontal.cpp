//===- FuseHorizontal.cpp - independent generated kernels as one launch ---===//
//
// kernel.generic A; (allocs, views, collective starts); kernel.generic B
//   ==>  kernel.generic {A; B} with segments, at A's place
// (see Passes.td for when kernels join).
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/Kernel/Transforms/BufferAccess.h"
#include "titan/Dialect/Kernel/Transforms/CollectiveOverlap.h"
#include "titan/Dialect/Kernel/Transforms/JoinedBody.h"
#include "titan/Dialect/Kernel/Transforms/Passes.h"
#include "titan/Dialect/Titan/IR/ModuleNames.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace titan::kernel {
#define GEN_PASS_DEF_KERNELFUSEHORIZONTAL
#include "titan/Dialect/Kernel/Transforms/Passes.h.inc"
} // namespace titan::kernel

using namespace mlir;
using namespace titan;
using namespace titan::kernel;

namespace {

/// The (inputs, outputs, reductions) triples of `generic`'s segments.
SmallVector<int64_t> segmentTriples(GenericOp generic) {
  SmallVector<int64_t> triples;
  for (const GenericSegment &s : generic.getSegmentList())
    triples.append({int64_t(s.inputEnd - s.inputBegin),
                    int64_t(s.outputEnd - s.outputBegin),
                    int64_t(s.reductionEnd - s.reductionBegin)});
  return triples;
}

/// The model unit a kernel belongs to: its transformer block ("layers.3"),
/// else the top module it came from ("tok_embeddings", "output"), by its
/// location's module name; "" when it has none (and then joins nothing: a
/// run of such kernels would grow with the model's depth).
std::string modelUnit(GenericOp kernel) {
  std::optional<StringRef> name = getModuleName(kernel.getLoc());
  return name ? getModelUnit(*name) : "";
}

/// Whether one of `starts` sends what `kernel` writes: joining a later
/// kernel to `kernel` would start that collective only after the later
/// kernel's work too (a context-parallel exchange of k after q's RoPE; a
/// gradient's reduce-scatter after the next gradient's cast).
bool startsAfter(GenericOp kernel, ArrayRef<CollectiveStartOp> starts) {
  return llvm::any_of(starts, [&](CollectiveStartOp start) {
    Value sent = viewedBuffer(start.getInput());
    return llvm::any_of(kernel.getOutputs(),
                        [&](Value out) { return viewedBuffer(out) == sent; });
  });
}

/// Whether `a` and `b` may share a launch by their sizes: the segments of
/// both that run element by element are all, or none, a multiple of 16
/// elements (a GPU's packs need every such segment's; segments in tiles
/// take none).
bool packFriendly(GenericOp a, GenericOp b) {
  auto packable = [](GenericOp g) -> std::optional<bool> {
    std::optional<bool> all;
    for (const GenericSegment &s : g.getSegmentList())
      if (!g.getTransposedShape(s))
        all = all.value_or(true) && s.elements % 16 == 0;
    return all;
  };
  std::optional<bool> pa = packable(a), pb = packable(b);
  return !pa || !pb || *pa == *pb;
}

/// Whether `buffer` (through views) is written only by `writer` and read
/// only as collectives' inputs: a parameter shard's cast for its gather.
bool feedsCollectivesOnly(Value buffer, Operation *writer) {
  for (Operation *user : buffer.getUsers()) {
    if (auto view = dyn_cast<ViewOp>(user)) {
      if (!feedsCollectivesOnly(view.getResult(), writer))
        return false;
      continue;
    }
    auto start = dyn_cast<CollectiveStartOp>(user);
    if (user != writer &&
        (!start || start.getInput() != buffer || start.getOutput() == buffer ||
         start.getWorkspace() == buffer))
      return false;
  }
  return true;
}

/// Whether `kernel` casts parameter shards for their gathers (FSDP's
/// mixed-precision or float8 cast): it reads only the step's state and
/// one-element buffers (scales), and writes one-element buffers (the
/// scales it computes) and buffers only collective starts read.
bool isShardCast(GenericOp kernel) {
  return kernel.getReductions().empty() &&
         kernel.getTransposedOutputs().empty() &&
         llvm::all_of(kernel.getInputs(), isStateOrOneElement) &&
         llvm::all_of(kernel.getOutputs(), [&](Value v) {
           Value root = viewedBuffer(v);
           return isOneElement(v) || (root.getDefiningOp<AllocOp>() &&
                                      feedsCollectivesOnly(root, kernel));
         });
}

/// Whether `kernel` only reduces the step's state (block arguments, through
/// views) into reductions, writing no element: the parameters' float8
/// amaxes dist-batch-parameter-amaxes computes at the step's start, one
/// kernel per model unit, all of them read by one all-reduce. Such kernels
/// join across units: nothing of a unit's schedule waits on them but that
/// all-reduce, and maxSegments bounds the joined kernel.
bool reducesStateOnly(GenericOp kernel) {
  return kernel.getOutputs().empty() && !kernel.getReductions().empty() &&
         llvm::all_of(kernel.getInputs(), [](Value v) {
           return isa<BlockArgument>(viewedBuffer(v));
         });
}

class HorizontalFuser {
public:
  HorizontalFuser(unsigned maxSegments, unsigned maxHoist)
      : maxSegments(maxSegments), maxHoist(maxHoist) {}

  /// Joins `kernel` to the kernels before it while one qualifies.
  void fuse(GenericOp kernel) {
    while (Join found = joinable(kernel))
      kernel = join(found, kernel);
  }

private:
  /// A kernel to join, and whether the joined kernel runs at the later
  /// one's place (the earlier one moving down) rather than the earlier's.
  struct Join {
    GenericOp earlier;
    bool atKernel = false;
    explicit operator bool() const { return bool(earlier); }
  };

  /// The generated kernel before `kernel` on its stream that it can join:
  /// the next one up past ops that run nothing, or for a shard cast, the
  /// nearest shard cast of its unit up past ops that touch none of its
  /// buffers (at most `maxHoist` ops that run something). When an op that
  /// runs nothing stands in `kernel`'s way (the wait for the gather whose
  /// result it reads), the next kernel up moves down to it instead, if
  /// nothing between touches that kernel's buffers.
  Join joinable(GenericOp kernel) {
    SmallVector<Value> reads, writes;
    if (!collectAccess(kernel, reads, writes))
      return {};
    auto touches = [](ArrayRef<Value> buffers, ArrayRef<Value> set) {
      return llvm::any_of(buffers,
                          [&](Value v) { return llvm::is_contained(set, v); });
    };
    bool hoists = isShardCast(kernel);
    bool movesDown = false;
    SmallVector<Value> betweenReads, betweenWrites;
    SmallVector<WaitOp> waits;
    SmallVector<CollectiveStartOp> starts;
    unsigned passed = 0;
    for (Operation *op = kernel->getPrevNode(); op; op = op->getPrevNode()) {
      SmallVector<Value> opReads, opWrites;
      if (!collectAccess(op, opReads, opWrites))
        return {};
      auto earlier = dyn_cast<GenericOp>(op);
      if (auto wait = dyn_cast<WaitOp>(op))
        waits.push_back(wait);
      if (auto start = dyn_cast<CollectiveStartOp>(op))
        starts.push_back(start);
      if (movesDown && runsNothing(op)) {
        llvm::append_range(betweenReads, opReads);
        llvm::append_range(betweenWrites, opWrites);
        continue;
      }
      if (movesDown) {
        if (!earlier)
          return {};
        // Neither may read what the other writes (segments run in no
        // order), nor may anything between see `earlier` move.
        SmallVector<Value> earlierReads, earlierWrites;
        if (!collectAccess(earlier, earlierReads, earlierWrites) ||
            touches(reads, earlierWrites) || touches(writes, earlierWrites) ||
            touches(writes, earlierReads) ||
            touches(earlierWrites, betweenReads) ||
            touches(earlierWrites, betweenWrites) ||
            touches(earlierReads, betweenWrites) ||
            !keepsOverlap(earlier, waits) ||
            !canJoin(earlier, kernel, /*atKernel=*/true))
          return {};
        return {earlier, /*atKernel=*/true};
      }
      if (touches(reads, opWrites) || touches(writes, opWrites) ||
          touches(writes, opReads)) {
        if (passed != 0 || hoists || !runsNothing(op))
          return {};
        movesDown = true;
      }
      llvm::append_range(betweenReads, opReads);
      llvm::append_range(betweenWrites, opWrites);
      if (movesDown || runsNothing(op))
        continue;
      // Shard casts join each other before their gathers start (FSDP2's
      // copy-in casts a block's parameters at once); no other kernel's
      // collective waits for a kernel joined to it (a context-parallel
      // gather of k for the next block's shard casts).
      if (earlier && (passed == 0 || isShardCast(earlier)) &&
          (isShardCast(earlier) || !startsAfter(earlier, starts)) &&
          canJoin(earlier, kernel))
        return {earlier};
      if (!hoists || ++passed > maxHoist)
        return {};
    }
    return {};
  }

  /// Whether `kernel` may join `earlier` (nothing between them touching
  /// their buffers): one stream and model unit, neither running by rows,
  /// the segments not in tiles with sizes that pack alike, room for the
  /// segments, and
  /// `kernel`'s buffers defined at `earlier`'s place (unless they join at
  /// `kernel`'s).
  bool canJoin(GenericOp earlier, GenericOp kernel, bool atKernel = false) {
    std::string unit = modelUnit(kernel);
    bool sameUnit = modelUnit(earlier) == unit ||
                    (reducesStateOnly(earlier) && reducesStateOnly(kernel));
    return earlier.getStream() == kernel.getStream() && !unit.empty() &&
           !earlier.getRowLength() && !kernel.getRowLength() && sameUnit &&
           packFriendly(earlier, kernel) &&
           earlier.getSegmentList().size() + kernel.getSegmentList().size() <=
               maxSegments &&
           (atKernel || llvm::all_of(kernel->getOperands(), [&](Value v) {
              return canDefineBefore(v, earlier);
            }));
  }

  /// One kernel at `earlier`'s place (or `kernel`'s) running both:
  /// `earlier`'s segments, then `kernel`'s.
  GenericOp join(Join found, GenericOp kernel) {
    GenericOp earlier = found.earlier;
    if (!found.atKernel)
      for (Value operand : kernel->getOperands())
        defineBefore(operand, earlier);
    auto concat = [](ValueRange a, ValueRange b) {
      SmallVector<Value> all(a);
      llvm::append_range(all, b);
      return all;
    };
    SmallVector<Attribute> kinds(earlier.getReductionKinds().getValue());
    llvm::append_range(kinds, kernel.getReductionKinds().getValue());
    SmallVector<int64_t> segments = segmentTriples(earlier);
    llvm::append_range(segments, segmentTriples(kernel));

    OpBuilder b(found.atKernel ? kernel : earlier);
    Location loc = b.getFusedLoc({earlier.getLoc(), kernel.getLoc()});
    auto joined = GenericOp::create(
        b, loc, concat(earlier.getInputs(), kernel.getInputs()),
        concat(earlier.getOutputs(), kernel.getOutputs()),
        /*workspace=*/Value(),
        concat(earlier.getReductions(), kernel.getReductions()),
        earlier.getStream(), b.getArrayAttr(kinds),
        b.getDenseI64ArrayAttr(joinedTransposedOutputs({earlier, kernel})),
        b.getDenseI64ArrayAttr(segments));
    // Each segment reads its own arguments (under their maps): `earlier`'s,
    // then `kernel`'s.
    if (earlier.readsAcrossIndices() || kernel.readsAcrossIndices()) {
      SmallVector<AffineMap> maps;
      for (GenericOp part : {earlier, kernel})
        for (unsigned i = 0, e = part.getInputs().size(); i < e; ++i)
          maps.push_back(part.getInputMap(i));
      joined.setInputMapsAttr(b.getAffineMapArrayAttr(maps));
    }
    unsigned offset = earlier.getInputs().size();
    buildJoinedBody(b, joined, {earlier, kernel},
                    [&](unsigned part, unsigned index) {
                      return part == 0 ? index : offset + index;
                    });
    earlier.erase();
    kernel.erase();
    return joined;
  }

  unsigned maxSegments, maxHoist;
};

struct KernelFuseHorizontalPass
    : titan::kernel::impl::KernelFuseHorizontalBase<KernelFuseHorizontalPass> {
  using Base::Base;

  void runOnOperation() override {
    getOperation().walk([&](func::FuncOp step) {
      HorizontalFuser fuser(maxSegments, maxHoist);
      SmallVector<GenericOp> kernels(step.getOps<GenericOp>());
      for (GenericOp kernel : kernels)
        fuser.fuse(kernel);
    });
  }
};

} // namespace
