//===- StepCost.cpp - the predicted time of one scheduled step ------------===//
//
// A discrete walk over the step's ops in program order with one clock for
// the compute stream and one "free at" time per communication stream
// (kernel.stream's index: kernel-schedule-collectives puts each group's
// collectives on their own). Compute ops advance the clock; a collective
// starts when reached and its stream is free and ends its cost later; a
// wait advances the clock to its collective's end, and what it advances is
// the collective's exposed time. Everything is kept in ordered containers
// so the same IR always gives the same numbers and the same order.
//
//===----------------------------------------------------------------------===//

#include "titan/Cost/StepCost.h"

#include "titan/Contract/MeshAxes.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Location.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <set>

using namespace mlir;
using namespace titan;
using namespace titan::cost;

namespace {

/// The module path an op came from (its NameLoc, or a fused location's
/// first), or "".
std::string modulePath(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location part : fused.getLocations())
      if (std::string path = modulePath(part); !path.empty())
        return path;
  if (auto callSite = dyn_cast<CallSiteLoc>(loc))
    return modulePath(callSite.getCallee());
  return "";
}

/// `path` with a block's index written "*" ("layers.3.attention" ->
/// "layers.*.attention").
std::string anyBlock(StringRef path) {
  StringRef rest = path;
  if (!rest.consume_front("layers."))
    return path.str();
  StringRef index = rest.take_until([](char c) { return c == '.'; });
  if (index.empty() || !llvm::all_of(index, llvm::isDigit))
    return path.str();
  return ("layers.*" + rest.drop_front(index.size())).str();
}

/// The model part an op belongs to: the optimizer's library kernels and
/// loss parallel's by name (the generated cross-entropy by its location),
/// the rest by module path ("layers.3.attention.wq" ->
/// "layers.3"; the optimizer step's generated updates carry their
/// parameters' paths, and the prediction counts that whole function as
/// the "optimizer" part).
std::string partOf(Operation *op) {
  if (auto call = dyn_cast<kernel::CallOp>(op)) {
    StringRef kernel = call.getKernel();
    if (llvm::is_contained({"global_norm", "lr_schedule"}, kernel))
      return "optimizer";
    if (kernel.starts_with("cross_entropy") || kernel == "row_max" ||
        kernel.starts_with("sum_exp") || kernel.starts_with("target_logit"))
      return "loss";
  }
  std::string path = modulePath(op->getLoc());
  StringRef p(path);
  if (p.consume_front("layers.")) {
    StringRef index = p.take_until([](char c) { return c == '.'; });
    if (!index.empty() && llvm::all_of(index, llvm::isDigit))
      return "layers." + index.str();
  }
  StringRef head = StringRef(path).take_until([](char c) { return c == '.'; });
  for (StringRef known :
       {"tok_embeddings", "norm", "output", "loss", "optimizer"})
    if (head == known)
      return known.str();
  return "other";
}

int64_t streamIndex(Value stream) {
  if (auto op = stream.getDefiningOp<kernel::StreamOp>())
    return int64_t(op.getIndex());
  return -1;
}

class StepWalk {
public:
  StepWalk(ArrayRef<int64_t> degrees, const Hardware &hw)
      : degrees(degrees), hw(hw) {
    int64_t world = 1;
    for (int64_t d : degrees)
      world *= std::max<int64_t>(d, 1);
    ranksSharing =
        hw.ranksShareCompute ? std::min(world, hw.devicesPerNode) : 1;
  }

  StepCost run(func::FuncOp step) {
    // A pipeline stage's backward phases (stageN_backward,
    // stageN_backward_input, ..._weight) are all backward; a whole step's
    // (forward_backward) starts at the loss.
    StringRef name = step.getSymName();
    inBackward = name != "forward_backward" &&
                 (name.ends_with("_backward") || name.contains("_backward_"));
    onHost = step->hasAttr(kernel::KernelDialect::kHostStepAttrName);
    step.walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (auto call = dyn_cast<kernel::CallOp>(op))
        visitCall(call);
      else if (auto generic = dyn_cast<kernel::GenericOp>(op))
        visitGenerated(generic);
      else if (auto copy = dyn_cast<kernel::CopyOp>(op))
        visitCopy(copy);
      else if (auto start = dyn_cast<kernel::CollectiveStartOp>(op))
        visitStart(start);
      else if (auto copy = dyn_cast<kernel::CopyStartOp>(op))
        visitCopyStart(copy);
      else if (auto wait = dyn_cast<kernel::WaitOp>(op))
        visitWait(wait);
    });
    cost.seconds = t;
    for (auto &[stream, free] : streamFree)
      cost.seconds = std::max(cost.seconds, free);
    return std::move(cost);
  }

private:
  PartCost &part(Operation *op) { return part(partOf(op)); }

  PartCost &part(const std::string &name) {
    auto [it, inserted] = partIndex.try_emplace(name, cost.parts.size());
    if (inserted) {
      cost.parts.emplace_back();
      cost.parts.back().name = name;
    }
    return cost.parts[it->second];
  }

  /// `op`'s kernel entry; the backward starts at the loss (`isLoss`).
  KernelCost &kernel(Operation *op, WorkUnit unit, bool isLoss) {
    inBackward |= isLoss;
    std::string name = kernelCostName(op, inBackward);
    auto [it, inserted] = kernelIndex.try_emplace(std::make_pair(name, unit),
                                                  cost.kernels.size());
    if (inserted) {
      cost.kernels.emplace_back();
      cost.kernels.back().name = name;
      cost.kernels.back().unit = unit;
    }
    return cost.kernels[it->second];
  }

  /// `work`'s time where the step runs: a host step's kernels (the
  /// offloaded optimizer) stream host memory at the node's bandwidth
  /// shared by its ranks, a host loop's overhead each.
  double secondsOf(const KernelWork &work) {
    if (!onHost || hw.hostMemoryBytesPerSecond <= 0)
      return kernelSeconds(work, hw, ranksSharing);
    double share = double(std::max<int64_t>(hw.devicesPerNode, 1));
    return work.bytes / (hw.hostMemoryBytesPerSecond / share) +
           kHostLoopOverheadSeconds;
  }

  void compute(Operation *op, const KernelWork &work, double seconds) {
    t += seconds;
    cost.computeSeconds += seconds;
    if (work.unit != WorkUnit::Memory)
      cost.flops += work.flops;
    StepCost::UnitTotals &unit = cost.units[work.unit];
    ++unit.calls;
    unit.flops += work.flops;
    unit.bytes += work.bytes;
    unit.seconds += seconds;
    std::string partName = partOf(op);
    PartCost &p = part(partName);
    p.computeSeconds += seconds;
    p.flops += work.unit != WorkUnit::Memory ? work.flops : 0;
    ++p.calls;
    KernelCost &k = kernel(op, work.unit, partName == "loss");
    ++k.calls;
    k.flops += work.flops;
    k.bytes += work.bytes;
    k.seconds += seconds;
  }

  void visitCall(kernel::CallOp call) {
    KernelWork work = kernelWork(call);
    double seconds = secondsOf(work);
    std::optional<unsigned> mask = kernel::communicationAxisMask(call);
    std::optional<CollectiveKind> kind = collectiveKind(call.getKernel());
    if (!mask || !kind) {
      compute(call, work, seconds);
      return;
    }
    // Async TP's collective matmuls: each ring step's transfer overlaps a
    // shard's GEMMs, so the call takes the longer of the two plus one
    // step (the first shard's transfer or the last's GEMM cannot overlap).
    GroupPlacement group = placeGroup(degrees, *mask, hw.devicesPerNode);
    double bytes = 0;
    if (*kind == CollectiveKind::AllGather && !call.getOutputs().empty())
      bytes = bufferBytes(call.getOutputs()[0]); // gathered
    else if (!call.getOutputs().empty())
      bytes = bufferBytes(call.getOutputs()[0]) * double(group.size);
    double comm = collectiveSeconds(*kind, bytes, group, hw).seconds;
    double step = group.size > 1 ? comm / double(group.size - 1) : 0;
    double total = std::max(seconds, comm) + step;
    // The GEMMs are compute; the rest of the call is its ring's exposed
    // time (counted once, as a wait's).
    compute(call, work, seconds);
    double exposed = total - seconds;
    t += exposed;
    std::string axes = axesName(*mask);
    cost.commSeconds[axes] += comm;
    cost.exposedCommSeconds[axes] += exposed;
    PartCost &p = part(call);
    p.commSeconds += comm;
    p.exposedCommSeconds += exposed;
  }

  void visitGenerated(kernel::GenericOp generic) {
    KernelWork work = kernelWork(generic);
    compute(generic, work, secondsOf(work));
  }

  void visitCopy(kernel::CopyOp copy) {
    KernelWork work;
    double bytes = bufferBytes(copy.getSource());
    work.bytes = 2 * bytes;
    // Across the host link (a host step's staging), or within one memory.
    bool crosses = kernel::getMemorySpace(copy.getSource().getType()) !=
                   kernel::getMemorySpace(copy.getTarget().getType());
    compute(copy, work,
            crosses && hw.hostLinkBytesPerSecond > 0
                ? bytes / hw.hostLinkBytesPerSecond
                : secondsOf(work));
  }

  /// A copy between host and device memory on the copy stream (offloaded
  /// state): the host link's time, overlapping compute until its wait.
  void visitCopyStart(kernel::CopyStartOp copy) {
    double bytes = bufferBytes(copy.getSource());
    KernelWork work;
    work.bytes = 2 * bytes;
    double seconds = hw.hostLinkBytesPerSecond > 0
                         ? bytes / hw.hostLinkBytesPerSecond
                         : kernelSeconds(work, hw, ranksSharing);
    double &free = streamFree[streamIndex(copy.getStream())];
    free = std::max(t, free) + seconds;
    done[copy] = free;
    cost.commSeconds[kHostLink] += seconds;
    part(copy).commSeconds += seconds;
  }

  void visitStart(kernel::CollectiveStartOp start) {
    std::optional<CollectiveKind> kind = collectiveKind(start.getKernel());
    std::optional<unsigned> mask = kernel::communicationAxisMask(start);
    if (!kind || !mask)
      return;
    double in = bufferBytes(start.getInput()),
           out = bufferBytes(start.getOutput());
    // nccl-tests' sizes: the gathered or scattered whole for all_gather
    // and reduce_scatter, the buffer for the others.
    double bytes = *kind == CollectiveKind::AllGather ||
                           *kind == CollectiveKind::ReduceScatter
                       ? std::max(in, out)
                       : in;
    GroupPlacement group = placeGroup(degrees, *mask, hw.devicesPerNode);
    double seconds = collectiveSeconds(*kind, bytes, group, hw).seconds;
    int64_t stream = streamIndex(start.getStream());
    double &free = streamFree[stream];
    double begin = std::max(t, free);
    free = begin + seconds;
    done[start] = free;
    std::string axes = axesName(*mask);
    cost.commSeconds[axes] += seconds;
    part(start).commSeconds += seconds;
  }

  void visitWait(kernel::WaitOp wait) {
    if (kernel::CopyStartOp copy = wait.getCopyStart()) {
      auto it = done.find(copy);
      double exposed = it == done.end() ? 0 : std::max(0.0, it->second - t);
      t += exposed;
      cost.exposedCommSeconds[kHostLink] += exposed;
      part(copy).exposedCommSeconds += exposed;
      return;
    }
    kernel::CollectiveStartOp start = wait.getStart();
    if (!start)
      return;
    auto it = done.find(start);
    if (it == done.end())
      return;
    double exposed = std::max(0.0, it->second - t);
    t = std::max(t, it->second);
    std::optional<unsigned> mask = kernel::communicationAxisMask(start);
    cost.exposedCommSeconds[axesName(mask.value_or(0))] += exposed;
    part(start).exposedCommSeconds += exposed;
  }

  ArrayRef<int64_t> degrees;
  const Hardware &hw;
  int64_t ranksSharing = 1;
  double t = 0;
  std::map<int64_t, double> streamFree;
  llvm::DenseMap<Operation *, double> done;
  std::map<std::string, size_t> partIndex;
  std::map<std::pair<std::string, WorkUnit>, size_t> kernelIndex;
  bool inBackward = false;
  /// The step runs on the host (kernel.host_step).
  bool onHost = false;
  StepCost cost;
  /// The host link's entry among the communication groups.
  static constexpr const char *kHostLink = "host link";
  /// A host loop's fixed cost (a titan_rt_parallel_for call), seconds.
  static constexpr double kHostLoopOverheadSeconds = 5e-6;
};

} // namespace

std::string titan::cost::axesName(unsigned axisMask) {
  llvm::SmallVector<StringRef> names;
  for (const mesh::AxisInfo &axis : mesh::kAxes)
    if (axisMask & mesh::axisBit(axis.axis))
      names.push_back(axis.name);
  return names.empty() ? std::string("none") : llvm::join(names, ",");
}

std::string titan::cost::kernelCostName(Operation *op, bool backward) {
  std::string name = "generated";
  if (auto call = dyn_cast<kernel::CallOp>(op))
    name = call.getKernel().str();
  else if (isa<kernel::CopyOp>(op))
    name = "copy";
  // The module paths of a fused kernel's parts, sorted (whatever order
  // the fusion joined them in).
  std::set<std::string> paths;
  op->getLoc()->walk([&](Location l) {
    if (auto named = dyn_cast<NameLoc>(l))
      paths.insert(anyBlock(named.getName().getValue()));
    return WalkResult::advance();
  });
  if (!paths.empty())
    name += " " + llvm::join(paths, " + ");
  return backward ? name + " [backward]" : name;
}

StepCost titan::cost::costStep(func::FuncOp step, ArrayRef<int64_t> degrees,
                               const Hardware &hw) {
  return StepWalk(degrees, hw).run(step);
}
