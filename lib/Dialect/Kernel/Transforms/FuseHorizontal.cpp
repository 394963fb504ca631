//===- FuseHorizontal.cpp - independent generated kernels as one launch ---===//
//
// kernel.generic A; (allocs, views, collective starts); kernel.generic B
//   ==>  kernel.generic {A; B} with segments, at A's place
// (see Passes.td for when kernels join).
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/Kernel/Transforms/BufferAccess.h"
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

/// Ops a kernel may move above: they run nothing on its stream.
bool runsNothing(Operation *op) {
  return isa<AllocOp, ViewOp, CollectiveStartOp>(op);
}

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
  if (!name)
    return "";
  if (std::optional<int64_t> layer = getLayerIndex(*name))
    return ("layers." + Twine(*layer)).str();
  return name->take_until([](char c) { return c == '.'; }).str();
}

/// Whether `a` and `b` may share a launch by their sizes: both or neither
/// a multiple of 16 elements (a GPU's packs need every segment's).
bool packFriendly(GenericOp a, GenericOp b) {
  auto packable = [](GenericOp g) {
    return llvm::all_of(g.getSegmentList(), [](const GenericSegment &s) {
      return s.elements % 16 == 0;
    });
  };
  return packable(a) == packable(b);
}

class HorizontalFuser {
public:
  explicit HorizontalFuser(unsigned maxSegments) : maxSegments(maxSegments) {}

  /// Joins `kernel` to the kernels before it while one qualifies.
  void fuse(GenericOp kernel) {
    while (GenericOp earlier = joinable(kernel))
      kernel = join(earlier, kernel);
  }

private:
  /// The generated kernel before `kernel` on its stream that it can join.
  GenericOp joinable(GenericOp kernel) {
    if (!kernel.getTransposedOutputs().empty())
      return nullptr;
    SmallVector<Value> reads, writes;
    if (!collectAccess(kernel, reads, writes))
      return nullptr;
    auto touches = [](ArrayRef<Value> buffers, ArrayRef<Value> set) {
      return llvm::any_of(buffers,
                          [&](Value v) { return llvm::is_contained(set, v); });
    };
    std::string unit = modelUnit(kernel);
    for (Operation *op = kernel->getPrevNode(); op; op = op->getPrevNode()) {
      SmallVector<Value> opReads, opWrites;
      if (!collectAccess(op, opReads, opWrites) || touches(reads, opWrites) ||
          touches(writes, opWrites) || touches(writes, opReads))
        return nullptr;
      if (runsNothing(op))
        continue;
      auto earlier = dyn_cast<GenericOp>(op);
      if (!earlier || earlier.getStream() != kernel.getStream() ||
          unit.empty() || modelUnit(earlier) != unit ||
          !earlier.getTransposedOutputs().empty() ||
          !packFriendly(earlier, kernel) ||
          earlier.getSegmentList().size() + kernel.getSegmentList().size() >
              maxSegments ||
          !llvm::all_of(kernel->getOperands(),
                        [&](Value v) { return canDefineBefore(v, earlier); }))
        return nullptr;
      return earlier;
    }
    return nullptr;
  }

  /// One kernel at `earlier`'s place running both: `earlier`'s segments,
  /// then `kernel`'s.
  GenericOp join(GenericOp earlier, GenericOp kernel) {
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

    OpBuilder b(earlier);
    Location loc = b.getFusedLoc({earlier.getLoc(), kernel.getLoc()});
    auto joined = GenericOp::create(
        b, loc, concat(earlier.getInputs(), kernel.getInputs()),
        concat(earlier.getOutputs(), kernel.getOutputs()),
        concat(earlier.getReductions(), kernel.getReductions()),
        earlier.getStream(), b.getArrayAttr(kinds), b.getDenseI64ArrayAttr({}),
        b.getDenseI64ArrayAttr(segments));
    // Each segment reads its own arguments: `earlier`'s, then `kernel`'s.
    unsigned offset = earlier.getInputs().size();
    buildJoinedBody(b, joined, {earlier, kernel},
                    [&](unsigned part, unsigned index) {
                      return part == 0 ? index : offset + index;
                    });
    earlier.erase();
    kernel.erase();
    return joined;
  }

  unsigned maxSegments;
};

struct KernelFuseHorizontalPass
    : titan::kernel::impl::KernelFuseHorizontalBase<KernelFuseHorizontalPass> {
  using Base::Base;

  void runOnOperation() override {
    getOperation().walk([&](func::FuncOp step) {
      HorizontalFuser fuser(maxSegments);
      SmallVector<GenericOp> kernels(step.getOps<GenericOp>());
      for (GenericOp kernel : kernels)
        fuser.fuse(kernel);
    });
  }
};

} // namespace
