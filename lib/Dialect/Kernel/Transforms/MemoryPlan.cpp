//===- MemoryPlan.cpp - one static arena per rank -------------------------===//

#include "titan/Dialect/Kernel/Transforms/MemoryPlan.h"
#include "titan/Contract/Manifest.h"
#include "titan/Dialect/Kernel/Transforms/Passes.h"
#include "titan/Dialect/Titan/IR/TensorSize.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringMap.h"

#include <map>

namespace titan::kernel {
#define GEN_PASS_DEF_KERNELPLANMEMORY
#include "titan/Dialect/Kernel/Transforms/Passes.h.inc"
} // namespace titan::kernel

using namespace mlir;
using namespace titan;
using namespace titan::kernel;

int64_t titan::kernel::alignToArena(int64_t bytes) {
  int64_t a = KernelDialect::kAlignment;
  return (std::max<int64_t>(bytes, 1) + a - 1) / a * a;
}

std::optional<int64_t> titan::kernel::getFrameStage(StringRef slot) {
  if (std::optional<manifest::FrameSlot> frame =
          manifest::FrameSlot::parse(slot))
    return frame->stage;
  return std::nullopt;
}

StringRef titan::kernel::getSlotCategory(StringRef slot) {
  if (getFrameStage(slot))
    return "pipeline frames";
  if (slot.starts_with("per_step"))
    return "gathered parameters (per step)";
  if (slot.starts_with("unsharded_grad:"))
    return "unsharded gradients (per step)";
  if (slot.starts_with("param:"))
    return "parameters";
  if (slot.starts_with("grad:"))
    return "gradients";
  if (slot.starts_with("exp_avg"))
    return "optimizer state";
  return "inputs and outputs";
}

SmallVector<BufferInterval>
titan::kernel::computeBufferIntervals(func::FuncOp step) {
  DenseMap<Operation *, unsigned> index;
  for (Operation &op : step.getBody().front())
    index[&op] = index.size();
  SmallVector<BufferInterval> intervals;
  for (Operation &op : step.getBody().front()) {
    auto alloc = dyn_cast<AllocOp>(op);
    if (!alloc)
      continue;
    unsigned at = index.lookup(alloc), first = ~0u, last = at;
    SmallVector<Value> worklist = {alloc.getBuffer()};
    while (!worklist.empty()) {
      Value v = worklist.pop_back_val();
      for (Operation *user : v.getUsers()) {
        if (auto view = dyn_cast<ViewOp>(user)) {
          worklist.push_back(view.getResult());
          continue;
        }
        unsigned u = index.lookup(user);
        // A collective or a copy reads and writes its buffers until it is
        // waited for.
        if (auto start = dyn_cast<CollectiveStartOp>(user))
          u = index.lookup(*start.getRequest().getUsers().begin());
        if (auto copy = dyn_cast<CopyStartOp>(user))
          u = index.lookup(*copy.getRequest().getUsers().begin());
        first = std::min(first, index.lookup(user));
        last = std::max(last, u);
      }
    }
    if (first == ~0u)
      first = at;
    intervals.push_back(
        {alloc, first, last,
         alignToArena(*getStaticByteSize(alloc.getBuffer().getType()))});
  }
  return intervals;
}

namespace {

/// First-fit placement of buffers with lifetimes, largest first.
int64_t placeBuffers(MutableArrayRef<BufferInterval> buffers,
                     SmallVectorImpl<int64_t> &offsets) {
  SmallVector<unsigned> order(buffers.size());
  for (unsigned i = 0; i < order.size(); ++i)
    order[i] = i;
  llvm::stable_sort(order, [&](unsigned a, unsigned b) {
    if (buffers[a].bytes != buffers[b].bytes)
      return buffers[a].bytes > buffers[b].bytes;
    return buffers[a].first < buffers[b].first;
  });
  offsets.assign(buffers.size(), -1);
  SmallVector<unsigned> placed;
  int64_t extent = 0;
  SmallVector<std::pair<int64_t, int64_t>> busy;
  for (unsigned i : order) {
    const BufferInterval &buffer = buffers[i];
    busy.clear();
    for (unsigned j : placed)
      if (buffers[j].first <= buffer.last && buffer.first <= buffers[j].last)
        busy.push_back({offsets[j], offsets[j] + buffers[j].bytes});
    llvm::sort(busy);
    int64_t offset = 0;
    for (auto [begin, end] : busy) {
      if (offset + buffer.bytes <= begin)
        break;
      offset = std::max(offset, end);
    }
    offsets[i] = offset;
    placed.push_back(i);
    extent = std::max(extent, offset + buffer.bytes);
  }
  return extent;
}

} // namespace

namespace {
/// One arena's layout: its slots, then the steps' shared region.
struct ArenaLayout {
  SmallVector<NamedAttribute> slots;
  int64_t stateBytes = 0, region = 0;
  int64_t bytes() const { return stateBytes + region; }
};
} // namespace

LogicalResult titan::kernel::planMemory(ModuleOp module) {
  Builder b(module.getContext());
  SmallVector<func::FuncOp> steps(module.getOps<func::FuncOp>());

  // The slots, in order of first appearance, in the arena of their memory
  // space; a pipeline stage's frame slots in its frame, each frame from
  // offset 0.
  ArenaLayout device, host;
  auto layoutOf = [&](MemorySpace space) -> ArenaLayout & {
    return space == MemorySpace::Host ? host : device;
  };
  SmallVector<NamedAttribute> frameSlots;
  llvm::StringMap<std::pair<int64_t, Type>> slotPlace;
  std::map<int64_t, int64_t> frameBytes;
  for (func::FuncOp step : steps)
    for (unsigned i = 0, e = step.getNumArguments(); i < e; ++i) {
      auto name =
          step.getArgAttrOfType<StringAttr>(i, KernelDialect::kSlotAttrName);
      Type type = step.getArgumentTypes()[i];
      auto memref = dyn_cast<MemRefType>(type);
      if (!name || !memref || !memref.hasStaticShape())
        return step.emitOpError()
               << "argument #" << i
               << " must be a static memref with a kernel.slot to be "
                  "planned";
      std::optional<int64_t> frame = getFrameStage(name.getValue());
      ArenaLayout &arena = layoutOf(getMemorySpace(memref));
      if (frame && getMemorySpace(memref) == MemorySpace::Host)
        return step.emitOpError() << "places frame slot '" << name.getValue()
                                  << "' in host memory, which frames are not";
      int64_t &end = frame ? frameBytes[*frame] : arena.stateBytes;
      auto [it, inserted] =
          slotPlace.try_emplace(name.getValue(), std::make_pair(end, type));
      if (!inserted) {
        if (it->second.second != type)
          return step.emitOpError()
                 << "uses slot '" << name.getValue() << "' as " << type
                 << ", another step as " << it->second.second;
        continue;
      }
      int64_t bytes = *getStaticByteSize(memref);
      (frame ? frameSlots : arena.slots)
          .push_back(
              b.getNamedAttr(name, b.getDenseI64ArrayAttr({end, bytes})));
      end += alignToArena(bytes);
    }

  // Each step's buffers above its arena's slots, in one region per arena
  // that the steps share.
  for (func::FuncOp step : steps) {
    SmallVector<BufferInterval> all = computeBufferIntervals(step);
    for (MemorySpace space : {MemorySpace::Device, MemorySpace::Host}) {
      SmallVector<BufferInterval> buffers;
      for (BufferInterval &buffer : all)
        if (getMemorySpace(buffer.alloc.getType()) == space)
          buffers.push_back(buffer);
      ArenaLayout &arena = layoutOf(space);
      SmallVector<int64_t> offsets;
      arena.region = std::max(arena.region, placeBuffers(buffers, offsets));
      for (auto [buffer, offset] : llvm::zip(buffers, offsets)) {
        AllocOp alloc = buffer.alloc;
        alloc.setOffset(arena.stateBytes + offset);
      }
    }
  }
  module->setAttr(KernelDialect::kArenaBytesAttrName,
                  b.getI64IntegerAttr(device.bytes()));
  module->setAttr(KernelDialect::kSlotsAttrName,
                  b.getDictionaryAttr(device.slots));
  if (host.bytes() > 0) {
    module->setAttr(KernelDialect::kHostArenaBytesAttrName,
                    b.getI64IntegerAttr(host.bytes()));
    module->setAttr(KernelDialect::kHostSlotsAttrName,
                    b.getDictionaryAttr(host.slots));
  }
  if (!frameSlots.empty())
    module->setAttr(KernelDialect::kFrameSlotsAttrName,
                    b.getDictionaryAttr(frameSlots));
  return success();
}

namespace {
struct KernelPlanMemoryPass
    : titan::kernel::impl::KernelPlanMemoryBase<KernelPlanMemoryPass> {
  void runOnOperation() override {
    if (failed(planMemory(getOperation())))
      signalPassFailure();
  }
};
} // namespace

int64_t titan::kernel::getArenaBytes(ModuleOp module) {
  auto bytes =
      module->getAttrOfType<IntegerAttr>(KernelDialect::kArenaBytesAttrName);
  return bytes ? bytes.getInt() : 0;
}

int64_t titan::kernel::getHostArenaBytes(ModuleOp module) {
  auto bytes = module->getAttrOfType<IntegerAttr>(
      KernelDialect::kHostArenaBytesAttrName);
  return bytes ? bytes.getInt() : 0;
}
