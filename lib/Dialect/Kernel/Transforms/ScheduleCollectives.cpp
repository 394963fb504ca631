//===- ScheduleCollectives.cpp - latency-hiding collective schedule -------===//
//
// Starts move up and waits move down through a step's straight line of
// kernel IR, as far as their buffers and a memory budget allow (see
// Passes.td).
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/Kernel/Transforms/BufferAccess.h"
#include "titan/Dialect/Kernel/Transforms/CollectiveSchedule.h"
#include "titan/Dialect/Kernel/Transforms/Passes.h"
#include "titan/Dialect/Titan/IR/TensorSize.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"

#include <map>

namespace titan::kernel {
#define GEN_PASS_DEF_KERNELSCHEDULECOLLECTIVES
#include "titan/Dialect/Kernel/Transforms/Passes.h.inc"
} // namespace titan::kernel

using namespace mlir;
using namespace titan;
using namespace titan::kernel;

std::optional<int64_t>
titan::kernel::collectiveStream(CollectiveStartOp start) {
  if (std::optional<unsigned> mask = communicationAxisMask(start))
    return 1 + int64_t(*mask);
  return std::nullopt;
}

int64_t titan::kernel::collectivePlannedBytes(CollectiveStartOp start) {
  int64_t bytes = 0;
  SmallVector<Value, 3> buffers = {start.getInput(), start.getOutput()};
  if (Value ws = start.getWorkspace())
    buffers.push_back(ws);
  // One buffer counted once, even if two operands view it.
  llvm::SmallSetVector<Value, 3> roots;
  for (Value v : buffers)
    if (viewedBuffer(v).getDefiningOp<AllocOp>())
      roots.insert(viewedBuffer(v));
  for (Value root : roots)
    bytes += getStaticByteSize(root.getType()).value_or(0);
  return bytes;
}

namespace {

/// A read or write of a root buffer (a kernel.alloc or a block argument).
struct Access {
  Value root;
  bool write;
};

/// A collective reads its input and writes its output and workspace from
/// its start to its wait.
void collectiveAccesses(CollectiveStartOp start,
                        SmallVectorImpl<Access> &accesses) {
  accesses.push_back({viewedBuffer(start.getInput()), false});
  accesses.push_back({viewedBuffer(start.getOutput()), true});
  if (Value ws = start.getWorkspace())
    accesses.push_back({viewedBuffer(ws), true});
}

/// The buffer accesses of `op`, or std::nullopt when it has effects the
/// pass cannot place (a barrier nothing moves across).
std::optional<SmallVector<Access>> accessesOf(Operation *op) {
  SmallVector<Access> accesses;
  if (auto start = dyn_cast<CollectiveStartOp>(op)) {
    collectiveAccesses(start, accesses);
    return accesses;
  }
  if (auto wait = dyn_cast<WaitOp>(op)) {
    CollectiveStartOp start = wait.getStart();
    if (!start)
      return std::nullopt;
    collectiveAccesses(start, accesses);
    return accesses;
  }
  // A generated kernel's body only computes (its verifier says so): its
  // effects are its buffers'.
  if (op->getNumRegions() != 0 && !isa<GenericOp>(op))
    return std::nullopt;
  if (isMemoryEffectFree(op))
    return accesses;
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  if (!effects)
    return std::nullopt;
  SmallVector<MemoryEffects::EffectInstance> instances;
  effects.getEffects(instances);
  for (const MemoryEffects::EffectInstance &effect : instances) {
    // In-flight collectives are ordered by their buffers, not by this.
    if (isa<CommunicationResource>(effect.getResource()))
      continue;
    // A new buffer: nothing before it can touch it.
    if (isa<MemoryEffects::Allocate>(effect.getEffect()))
      continue;
    Value value = effect.getValue();
    if (!value)
      return std::nullopt;
    if (!isa<MemoryEffects::Read, MemoryEffects::Write>(effect.getEffect()))
      return std::nullopt;
    accesses.push_back(
        {viewedBuffer(value), isa<MemoryEffects::Write>(effect.getEffect())});
  }
  return accesses;
}

/// Ops that only name memory (no kernel runs): they are not points of the
/// schedule where bytes are in flight, and they travel with a start.
bool isDefinition(Operation *op) { return isa<AllocOp, ViewOp, StreamOp>(op); }

/// Whether `start`'s group may hold ranks that run other programs: the
/// pipeline axis (bit 0 of the axis mask), or a collective without a mask.
/// Every rank of any other group runs this very program, and the pass is
/// deterministic, so a reordering is the same on all of them.
bool spansPrograms(CollectiveStartOp start) {
  std::optional<unsigned> mask = communicationAxisMask(start);
  return !mask || (*mask & 1) != 0;
}

/// One collective: its start and wait, their places in the original order
/// (its original window), its buffers' accesses and planned bytes.
struct Collective {
  CollectiveStartOp start;
  WaitOp wait;
  unsigned originalStart, originalWait;
  SmallVector<Access> accesses;
  int64_t bytes;
};

class Scheduler {
public:
  Scheduler(Block &block, int64_t budget, bool keepStartOrder)
      : block(block), budget(budget), keepStartOrder(keepStartOrder) {}

  void run() {
    for (Operation &op : block.without_terminator()) {
      original[&op] = order.size();
      order.push_back(&op);
    }
    for (Operation *op : order) {
      auto start = dyn_cast<CollectiveStartOp>(op);
      if (!start || !start.getRequest().hasOneUse())
        continue;
      auto wait = dyn_cast<WaitOp>(*start.getRequest().getUsers().begin());
      if (!wait || wait->getBlock() != &block)
        continue;
      Collective c{start,          wait, original[start],
                   original[wait], {},   collectivePlannedBytes(start)};
      collectiveAccesses(start, c.accesses);
      collectives.push_back(std::move(c));
    }
    for (auto [i, c] : llvm::enumerate(collectives)) {
      hoistStart(c);
      // The next collective on the same stream: a stream completes its
      // collectives in issue order, so waiting past that one's wait would
      // hide nothing more, and would hold budget later collectives need.
      Operation *next = nullptr;
      for (const Collective &d : llvm::drop_begin(collectives, i + 1))
        if (CollectiveStartOp(d.start).getStream() ==
            CollectiveStartOp(c.start).getStream()) {
          next = d.wait;
          break;
        }
      sinkWait(c, next);
    }
    Operation *terminator =
        block.mightHaveTerminator() ? block.getTerminator() : nullptr;
    for (Operation *op : order) {
      if (terminator)
        op->moveBefore(terminator);
      else
        op->moveBefore(&block, block.end());
    }
  }

private:
  Block &block;
  int64_t budget;
  bool keepStartOrder;
  /// The block's ops (without the terminator) in the current order.
  std::vector<Operation *> order;
  DenseMap<Operation *, unsigned> original;
  SmallVector<Collective> collectives;
  /// Planned bytes whose window the schedule lengthened over each op.
  DenseMap<Operation *, int64_t> extraBytes;
  /// Memoized accesses (std::nullopt: a barrier).
  DenseMap<Operation *, std::optional<SmallVector<Access>>> accessCache;

  const std::optional<SmallVector<Access>> &accesses(Operation *op) {
    auto it = accessCache.find(op);
    if (it == accessCache.end())
      it = accessCache.try_emplace(op, accessesOf(op)).first;
    return it->second;
  }

  bool conflicts(ArrayRef<Access> group, Operation *op) {
    const std::optional<SmallVector<Access>> &other = accesses(op);
    if (!other)
      return true;
    for (const Access &a : group)
      for (const Access &b : *other)
        if (a.root == b.root && (a.write || b.write))
          return true;
    return false;
  }
  bool conflicts(const Collective &c, Operation *op) {
    return conflicts(c.accesses, op);
  }

  /// Whether `op` computes `c`'s input from the step's state (a kernel
  /// reading only state slots and one-element buffers, and writing only
  /// the input's planned buffer, one-element buffers, its own workspace or
  /// a reduction, such as the amax fused into a shard's cast): mixed
  /// precision's cast of a parameter shard before its gather, or its
  /// float8 cast, which computes the weight's scale from the amax of the
  /// step's start (and writes it for the GEMMs) or reads the one the
  /// forward computed. It moves up with the start, as FSDP2 casts in its
  /// all-gather's copy-in; the carried op's accesses join those that stop
  /// the move, so it stays below what writes what it reads and what
  /// reads what it writes.
  bool isStateProducer(const Collective &c, Operation *op) {
    ValueRange inputs, outputs;
    if (auto call = dyn_cast<CallOp>(op)) {
      inputs = call.getInputs();
      outputs = call.getOutputs();
    } else if (auto generic = dyn_cast<GenericOp>(op)) {
      inputs = generic.getInputs();
      outputs = generic.getOutputs();
    } else {
      return false;
    }
    Value input = viewedBuffer(CollectiveStartOp(c.start).getInput());
    if (!input.getDefiningOp<AllocOp>())
      return false;
    return llvm::all_of(inputs, isStateOrOneElement) &&
           llvm::all_of(outputs, [&](Value v) {
             return viewedBuffer(v) == input || isOneElement(v);
           });
  }

  /// Whether `op` was between `c`'s start and wait before scheduling.
  bool inOriginalWindow(const Collective &c, Operation *op) {
    unsigned at = original.lookup(op);
    return c.originalStart < at && at < c.originalWait;
  }

  /// Whether `c`'s window may grow over `op` within the budget.
  bool fits(const Collective &c, Operation *op) {
    if (isDefinition(op) || inOriginalWindow(c, op) || budget < 0)
      return true;
    return extraBytes.lookup(op) + c.bytes <= budget;
  }

  void charge(const Collective &c, Operation *op) {
    if (!isDefinition(op) && !inOriginalWindow(c, op))
      extraBytes[op] += c.bytes;
  }

  unsigned position(Operation *op) {
    return unsigned(llvm::find(order, op) - order.begin());
  }

  /// Moves `c`'s start up to just below a conflicting op, a start it may
  /// not pass or a point where the budget is full, with the allocations and
  /// views that define its buffers and its input's producer from state.
  void hoistStart(const Collective &c) {
    unsigned from = position(c.start), to = from;
    DenseSet<Value> needed(c.start->operand_begin(), c.start->operand_end());
    DenseSet<Operation *> carried;
    // What the moving ops touch: the collective's buffers and its input's
    // producer's, once that moves with it.
    SmallVector<Access> group(c.accesses);
    while (to > 0) {
      Operation *op = order[to - 1];
      // The streams stay first.
      if (isa<StreamOp>(op))
        break;
      // Collectives of one kind keep their order: an in-order stream
      // completes the one needed first first.
      if (auto other = dyn_cast<CollectiveStartOp>(op))
        if (keepStartOrder || spansPrograms(c.start) || spansPrograms(other) ||
            other.getKernel() == CollectiveStartOp(c.start).getKernel())
          break;
      if (llvm::any_of(op->getResults(),
                       [&](Value v) { return needed.contains(v); })) {
        if (!isDefinition(op))
          break;
        carried.insert(op);
        needed.insert(op->operand_begin(), op->operand_end());
        --to;
        continue;
      }
      if (conflicts(group, op)) {
        if (!isStateProducer(c, op) || !fits(c, op))
          break;
        carried.insert(op);
        llvm::append_range(group, *accesses(op));
        needed.insert(op->operand_begin(), op->operand_end());
        --to;
        continue;
      }
      if (!fits(c, op))
        break;
      --to;
    }
    if (to == from)
      return;
    SmallVector<Operation *> moved, stayed;
    for (unsigned i = to; i < from; ++i) {
      if (carried.contains(order[i])) {
        moved.push_back(order[i]);
        continue;
      }
      stayed.push_back(order[i]);
      charge(c, order[i]);
    }
    moved.push_back(c.start);
    llvm::append_range(moved, stayed);
    llvm::copy(moved, order.begin() + to);
  }

  /// Moves `c`'s wait down to just above the terminator, an op that reads
  /// or writes its output (or writes its input), `nextWait`, or a point
  /// where the budget is full.
  void sinkWait(const Collective &c, Operation *nextWait) {
    unsigned from = position(c.wait), to = from;
    while (to + 1 < order.size()) {
      Operation *op = order[to + 1];
      if (op == nextWait || conflicts(c, op) || !fits(c, op))
        break;
      ++to;
    }
    for (unsigned i = from + 1; i <= to; ++i)
      charge(c, order[i]);
    std::rotate(order.begin() + from, order.begin() + from + 1,
                order.begin() + to + 1);
  }
};

/// Puts every collective's start and wait on its group's stream; the
/// streams are defined at the top of the block, in increasing index.
void assignStreams(Block &block) {
  std::map<int64_t, SmallVector<CollectiveStartOp>> byStream;
  for (auto start : block.getOps<CollectiveStartOp>())
    if (std::optional<int64_t> stream = collectiveStream(start))
      byStream[*stream].push_back(start);
  if (byStream.empty())
    return;
  std::map<int64_t, StreamOp> streams;
  for (auto stream : block.getOps<StreamOp>())
    streams.try_emplace(stream.getIndex(), stream);
  Operation *top = &block.front();
  OpBuilder b(top);
  for (auto &[index, starts] : byStream) {
    StreamOp &stream = streams[index];
    if (!stream)
      stream = StreamOp::create(b, block.getParentOp()->getLoc(),
                                StreamType::get(b.getContext()),
                                b.getI64IntegerAttr(index));
    else if (stream != top)
      stream->moveBefore(top);
    for (CollectiveStartOp start : starts) {
      start.getStreamMutable().set(stream);
      for (Operation *user : start.getRequest().getUsers())
        if (auto wait = dyn_cast<WaitOp>(user))
          wait.getStreamMutable().set(stream);
    }
  }
}

struct KernelScheduleCollectivesPass
    : kernel::impl::KernelScheduleCollectivesBase<
          KernelScheduleCollectivesPass> {
  using Base::Base;

  void runOnOperation() override {
    for (auto step : getOperation().getOps<func::FuncOp>()) {
      if (step.isExternal() || !step.getBody().hasOneBlock())
        continue;
      Block &block = step.getBody().front();
      assignStreams(block);
      Scheduler(block, maxInFlightBytes, keepStartOrder).run();
    }
  }
};

} // namespace
