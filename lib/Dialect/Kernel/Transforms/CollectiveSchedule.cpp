//===- CollectiveSchedule.cpp - --emit=schedule for single programs -------===//

#include "titan/Dialect/Kernel/Transforms/CollectiveSchedule.h"
#include "titan/Dialect/Titan/IR/TensorSize.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace titan;
using namespace titan::kernel;

namespace {

/// The module path an op came from (its NameLoc, or a fused location's
/// first), or "-".
std::string modulePath(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location part : fused.getLocations())
      if (std::string path = modulePath(part); path != "-")
        return path;
  return "-";
}

/// Input, output and workspace bytes of a collective (each buffer once).
int64_t collectiveBytes(CollectiveStartOp start) {
  llvm::SmallSetVector<Value, 3> roots;
  roots.insert(viewedBuffer(start.getInput()));
  roots.insert(viewedBuffer(start.getOutput()));
  if (Value ws = start.getWorkspace())
    roots.insert(viewedBuffer(ws));
  int64_t bytes = 0;
  for (Value root : roots)
    bytes += getStaticByteSize(root.getType()).value_or(0);
  return bytes;
}

int64_t streamIndex(Value stream) {
  if (auto op = stream.getDefiningOp<StreamOp>())
    return int64_t(op.getIndex());
  return -1;
}

void printStep(func::FuncOp step, raw_ostream &os) {
  // The ops that run something, in order.
  SmallVector<Operation *> ops;
  for (Operation &op : step.getBody().front())
    if (isa<CallOp, GenericOp, CopyOp, CollectiveStartOp, WaitOp>(op))
      ops.push_back(&op);
  DenseMap<Operation *, unsigned> index;
  for (auto [i, op] : llvm::enumerate(ops))
    index[op] = i;
  // Collectives numbered in the order they start; compute calls before
  // each op, for the windows.
  DenseMap<Operation *, unsigned> number;
  SmallVector<unsigned> callsBefore(ops.size() + 1, 0);
  for (auto [i, op] : llvm::enumerate(ops)) {
    callsBefore[i + 1] =
        callsBefore[i] + (isa<CallOp, GenericOp, CopyOp>(op) ? 1 : 0);
    if (isa<CollectiveStartOp>(op))
      number.try_emplace(op, number.size());
  }
  unsigned overlapping = 0, inFlight = 0, peakCount = 0;
  int64_t bytes = 0, peakBytes = 0;
  os << step.getSymName() << ":\n";
  for (auto [i, op] : llvm::enumerate(ops)) {
    std::string name, note;
    int64_t stream = -1;
    if (auto call = dyn_cast<CallOp>(op)) {
      name = call.getKernel().str();
      stream = streamIndex(call.getStream());
    } else if (auto generic = dyn_cast<GenericOp>(op)) {
      name = "generated";
      stream = streamIndex(generic.getStream());
    } else if (auto copy = dyn_cast<CopyOp>(op)) {
      name = "copy";
      stream = streamIndex(copy.getStream());
    } else if (auto start = dyn_cast<CollectiveStartOp>(op)) {
      name = start.getKernel().str();
      stream = streamIndex(start.getStream());
      Operation *wait = nullptr;
      for (Operation *user : start.getRequest().getUsers())
        if (isa<WaitOp>(user) && index.count(user))
          wait = user;
      if (wait) {
        unsigned between = callsBefore[index[wait]] - callsBefore[i + 1];
        overlapping += between > 0 ? 1 : 0;
        note = llvm::formatv("#{0} starts, waited at {1} ({2} compute "
                             "call{3} between)",
                             number[op], index[wait], between,
                             between == 1 ? "" : "s");
      } else {
        note = llvm::formatv("#{0} starts, not waited here", number[op]);
      }
      ++inFlight;
      bytes += collectiveBytes(start);
      if (bytes > peakBytes || (bytes == peakBytes && inFlight > peakCount)) {
        peakBytes = bytes;
        peakCount = inFlight;
      }
    } else {
      auto wait = cast<WaitOp>(op);
      stream = streamIndex(wait.getStream());
      CollectiveStartOp started = wait.getStart();
      name = "wait";
      if (started && number.count(started)) {
        note = llvm::formatv("#{0} ({1}) completes", number[started],
                             started.getKernel());
        --inFlight;
        bytes -= collectiveBytes(started);
      }
    }
    os << llvm::formatv("  {0,5} {1,-24} stream {2,-2} {3}", i, name, stream,
                        modulePath(op->getLoc()));
    if (!note.empty())
      os << "  " << note;
    os << "\n";
  }
  os << llvm::formatv("  {0}: {1} collectives, {2} overlap at least one "
                      "compute call; at peak {3} in flight, {4} bytes "
                      "(input + output + workspace)\n",
                      step.getSymName(), number.size(), overlapping, peakCount,
                      peakBytes);
}

} // namespace

void titan::kernel::printCollectiveSchedule(ModuleOp module, raw_ostream &os) {
  for (auto step : module.getOps<func::FuncOp>())
    if (!step.isExternal() && step.getBody().hasOneBlock())
      printStep(step, os);
}
