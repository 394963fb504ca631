//===- MemoryReport.cpp - the memory plan as text and as a chart ----------===//

#include "titan/Dialect/Kernel/Transforms/MemoryPlan.h"
#include "titan/Support/Format.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace titan;
using namespace titan::kernel;

namespace {

/// Categories in report order: the state, then what a step allocates.
constexpr StringLiteral kStateCategories[] = {
    "parameters", "gradients", "optimizer state", "inputs and outputs"};
constexpr StringLiteral kStepCategories[] = {
    "low-precision copies", "activations", "temporaries",
    "collective buffers",   "workspaces",  "offload staging"};

StringRef categoryOfKind(AllocKind kind) {
  switch (kind) {
  case AllocKind::Activation:
    return "activations";
  case AllocKind::Temporary:
    return "temporaries";
  case AllocKind::Collective:
    return "collective buffers";
  case AllocKind::Workspace:
    return "workspaces";
  case AllocKind::Copy:
    return "low-precision copies";
  case AllocKind::Staging:
    return "offload staging";
  }
  llvm_unreachable("unknown alloc kind");
}

/// Bytes of each state category, from the module's planned slots (the
/// device arena's, or with `host` the host arena's).
llvm::StringMap<int64_t> stateBytes(ModuleOp module, bool host = false) {
  llvm::StringMap<int64_t> bytes;
  if (auto slots = module->getAttrOfType<DictionaryAttr>(
          host ? KernelDialect::kHostSlotsAttrName
               : KernelDialect::kSlotsAttrName))
    for (NamedAttribute slot : slots)
      bytes[getSlotCategory(slot.getName().getValue())] +=
          alignToArena(cast<DenseI64ArrayAttr>(slot.getValue())[1]);
  return bytes;
}

/// A step's live bytes by category after each of its ops.
struct StepTimeline {
  func::FuncOp step;
  SmallVector<llvm::StringMap<int64_t>> live; ///< per op
  int64_t extent = 0;                         ///< of its region
  unsigned peakOp = 0;
  int64_t peakLive = 0;
};

/// The timeline of `step`'s buffers in memory `space`, whose arena's
/// slots end at `stateEnd`.
StepTimeline computeTimeline(func::FuncOp step, int64_t stateEnd,
                             MemorySpace space = MemorySpace::Device) {
  StepTimeline t{step};
  unsigned numOps = step.getBody().front().getOperations().size();
  t.live.resize(numOps);
  for (BufferInterval &buffer : computeBufferIntervals(step)) {
    if (getMemorySpace(buffer.alloc.getType()) != space)
      continue;
    StringRef category = categoryOfKind(buffer.alloc.getKind());
    for (unsigned i = buffer.first; i <= buffer.last; ++i)
      t.live[i][category] += buffer.bytes;
    t.extent = std::max<int64_t>(t.extent,
                                 int64_t(buffer.alloc.getOffset().value_or(0)) -
                                     stateEnd + buffer.bytes);
  }
  for (unsigned i = 0; i < numOps; ++i) {
    int64_t total = 0;
    for (auto &entry : t.live[i])
      total += entry.getValue();
    if (total > t.peakLive) {
      t.peakLive = total;
      t.peakOp = i;
    }
  }
  return t;
}

int64_t totalState(const llvm::StringMap<int64_t> &state) {
  int64_t total = 0;
  for (auto &entry : state)
    total += entry.getValue();
  return total;
}

std::string bytesText(int64_t bytes) {
  return llvm::formatv("{0,17} bytes  {1,11}", formatWithCommas(bytes),
                       humanBytes(double(bytes)))
      .str();
}

/// Where a step's peak happens: the op and its source location.
std::string describeOp(func::FuncOp step, unsigned index) {
  Operation *op = &*std::next(step.getBody().front().begin(), index);
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "op " << index << " (";
  if (auto call = dyn_cast<CallOp>(op))
    os << call.getKernel();
  else if (auto start = dyn_cast<CollectiveStartOp>(op))
    os << start.getKernel();
  else if (isa<CopyStartOp>(op))
    os << "copy_start";
  else
    os << op->getName();
  if (auto name = dyn_cast<NameLoc>(op->getLoc()))
    os << " at " << name.getName().getValue();
  os << ")";
  return text;
}

/// The host arena of training.enable_cpu_offload (kernel-offload-state):
/// the offloaded state, then each step's host buffers at their peak.
void printHostMemory(ModuleOp module, raw_ostream &os) {
  int64_t hostArena = getHostArenaBytes(module);
  if (hostArena == 0)
    return;
  llvm::StringMap<int64_t> state = stateBytes(module, /*host=*/true);
  int64_t stateEnd = totalState(state);
  os << "  host memory (training.enable_cpu_offload: one pinned host arena; "
        "the arena above is the device's):\n";
  for (StringRef category : kStateCategories)
    if (int64_t bytes = state.lookup(category))
      os << llvm::formatv("    {0,-22} {1}\n", category, bytesText(bytes));
  for (func::FuncOp step : module.getOps<func::FuncOp>()) {
    StepTimeline t = computeTimeline(step, stateEnd, MemorySpace::Host);
    if (t.extent > 0)
      os << llvm::formatv("    {0,-22} {1}\n", ("@" + step.getSymName()).str(),
                          bytesText(t.extent));
  }
  os << llvm::formatv("  {0,-24} {1}\n", "host arena", bytesText(hostArena));
}

} // namespace

void titan::kernel::printMemoryReport(ModuleOp module, int64_t worldSize,
                                      raw_ostream &os) {
  auto arena =
      module->getAttrOfType<IntegerAttr>(KernelDialect::kArenaBytesAttrName);
  llvm::StringMap<int64_t> state = stateBytes(module);
  int64_t stateEnd = totalState(state);
  // A pipeline rank's program runs on the ranks of its pipeline
  // coordinate only.
  auto pipeline = module->getAttrOfType<DictionaryAttr>("dist.pipeline");
  auto pipelineRank =
      pipeline ? pipeline.getAs<IntegerAttr>("rank") : IntegerAttr();
  if (pipelineRank)
    os << "memory plan per rank (the ranks of pipeline rank "
       << pipelineRank.getInt() << " of the " << worldSize
       << "-rank mesh run this program; one arena, offsets aligned to "
       << KernelDialect::kAlignment << " bytes)\n";
  else
    os << "memory plan per rank (every rank of the " << worldSize
       << "-rank mesh runs this program; one arena, offsets aligned to "
       << KernelDialect::kAlignment << " bytes)\n";
  os << "  state for the whole run:\n";
  for (StringRef category : kStateCategories)
    os << llvm::formatv("    {0,-22} {1}\n", category,
                        bytesText(state.lookup(category)));
  // A pipeline stage's weights gathered once per step (dist-pipeline-phases).
  if (int64_t gathered = state.lookup("gathered parameters (per step)"))
    os << llvm::formatv("    {0,-22} {1}\n", "gathered parameters",
                        bytesText(gathered));
  if (int64_t summed = state.lookup("unsharded gradients (per step)"))
    os << llvm::formatv("    {0,-22} {1}\n", "unsharded gradients",
                        bytesText(summed));
  for (func::FuncOp step : module.getOps<func::FuncOp>()) {
    StepTimeline t = computeTimeline(step, stateEnd);
    os << "  @" << step.getSymName() << ": planned peak "
       << formatWithCommas(stateEnd + t.extent)
       << " bytes, live buffers peak at " << describeOp(step, t.peakOp)
       << ":\n";
    for (StringRef category : kStepCategories)
      // (Staging buffers exist only with training.enable_cpu_offload.)
      if (category != "offload staging" || getHostArenaBytes(module) > 0)
        os << llvm::formatv("    {0,-22} {1}\n", category,
                            bytesText(t.live[t.peakOp].lookup(category)));
    os << llvm::formatv("    {0,-22} {1}\n", "fragmentation",
                        bytesText(t.extent - t.peakLive));
  }
  os << llvm::formatv("  {0,-24} {1}\n", "arena",
                      bytesText(arena ? arena.getInt() : 0));
  printHostMemory(module, os);
  os << "peak: " << (arena ? arena.getInt() : 0) << " bytes\n";
}

void titan::kernel::writeMemoryTimelineSVG(ModuleOp module, StringRef title,
                                           raw_ostream &os) {
  llvm::StringMap<int64_t> state = stateBytes(module);
  int64_t stateEnd = totalState(state);
  SmallVector<StepTimeline> steps;
  size_t points = 0;
  for (func::FuncOp step : module.getOps<func::FuncOp>()) {
    steps.push_back(computeTimeline(step, stateEnd));
    points += steps.back().live.size();
  }
  auto arena =
      module->getAttrOfType<IntegerAttr>(KernelDialect::kArenaBytesAttrName);
  double top = double(arena ? arena.getInt() : 1);
  const double width = 960, height = 420, left = 90, right = 210, bottom = 40,
               upper = 40;
  double plotW = width - left - right, plotH = height - upper - bottom;
  auto x = [&](size_t i) {
    return left + plotW * double(i) / double(std::max<size_t>(points - 1, 1));
  };
  auto y = [&](double bytes) { return upper + plotH * (1 - bytes / top); };

  // Series, bottom to top: the state, then the steps' categories.
  SmallVector<StringRef> series(std::begin(kStateCategories),
                                std::end(kStateCategories));
  series.append(std::begin(kStepCategories), std::end(kStepCategories));
  const char *colors[] = {"#4e79a7", "#a0cbe8", "#f28e2b", "#ffbe7d",
                          "#bab0ac", "#59a14f", "#8cd17d", "#e15759",
                          "#b07aa1", "#76b7b2"};
  std::vector<std::vector<double>> stacked(series.size() + 1,
                                           std::vector<double>(points, 0));
  size_t at = 0;
  for (const StepTimeline &t : steps)
    for (const llvm::StringMap<int64_t> &live : t.live) {
      double sum = 0;
      for (auto [k, name] : llvm::enumerate(series)) {
        sum += double(k < std::size(kStateCategories) ? state.lookup(name)
                                                      : live.lookup(name));
        stacked[k + 1][at] = sum;
      }
      ++at;
    }

  os << llvm::formatv("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" "
                      "height=\"{1}\" font-family=\"sans-serif\" "
                      "font-size=\"12\">\n",
                      width, height);
  os << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  os << llvm::formatv("<text x=\"{0}\" y=\"22\" font-size=\"14\">{1}</text>\n",
                      left, title);
  unsigned legend = 0;
  for (size_t k = 0; k < series.size(); ++k) {
    if (stacked[k + 1] == stacked[k])
      continue;
    os << "<polygon fill=\"" << colors[k] << "\" points=\"";
    for (size_t i = 0; i < points; ++i)
      os << llvm::formatv("{0:f1},{1:f1} ", x(i), y(stacked[k + 1][i]));
    for (size_t i = points; i-- > 0;)
      os << llvm::formatv("{0:f1},{1:f1} ", x(i), y(stacked[k][i]));
    os << "\"/>\n";
    os << llvm::formatv("<rect x=\"{0}\" y=\"{1}\" width=\"12\" height=\"12\" "
                        "fill=\"{2}\"/><text x=\"{3}\" y=\"{4}\">{5}</text>\n",
                        width - right + 14, upper + 18 * legend, colors[k],
                        width - right + 32, upper + 18 * legend + 11,
                        series[k]);
    ++legend;
  }
  // Axes: the arena size on top, a tick per step boundary.
  os << llvm::formatv("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" "
                      "stroke=\"black\" stroke-dasharray=\"4\"/>\n",
                      left, y(top), left + plotW);
  os << llvm::formatv("<text x=\"{0}\" y=\"{1}\" text-anchor=\"end\">{2}"
                      "</text>\n",
                      left - 6, y(top) + 4, humanBytes(top));
  os << llvm::formatv("<text x=\"{0}\" y=\"{1}\" text-anchor=\"end\">0"
                      "</text>\n",
                      left - 6, y(0) + 4);
  size_t start = 0;
  for (StepTimeline &t : steps) {
    os << llvm::formatv("<line x1=\"{0:f1}\" y1=\"{1}\" x2=\"{0:f1}\" "
                        "y2=\"{2}\" stroke=\"black\"/>\n",
                        x(start), y(0), y(top));
    os << llvm::formatv("<text x=\"{0:f1}\" y=\"{1}\">@{2} ({3} ops)</text>\n",
                        x(start) + 4, y(0) + 16, t.step.getSymName(),
                        t.live.size());
    start += t.live.size();
  }
  os << "</svg>\n";
}
