//===- ScheduleSVG.cpp - a pipeline schedule's timeline as SVG ------------===//

#include "titan/Pipeline/Schedule.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

using namespace titan;

void titan::writeScheduleSVG(const PipelineSchedule &s,
                             const ScheduleTimeline &t, double forwardCost,
                             double backwardCost, llvm::StringRef title,
                             llvm::raw_ostream &os) {
  const double left = 70, top = 46, row = 34, gap = 8, right = 20, bottom = 40;
  double span = std::max(t.makespan, 1e-9);
  double unit = std::clamp(1100.0 / span, 6.0, 60.0); // pixels per cost unit
  double width = left + unit * span + right;
  double height = top + double(s.actions.size()) * (row + gap) + bottom;
  os << llvm::formatv("<svg xmlns=\"http://www.w3.org/2000/svg\" "
                      "width=\"{0}\" height=\"{1}\" font-family=\"sans-serif\" "
                      "font-size=\"11\">\n",
                      int(width), int(height));
  os << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  os << llvm::formatv("<text x=\"{0}\" y=\"20\" font-size=\"14\">{1}</text>\n",
                      left, title);
  os << llvm::formatv(
      "<text x=\"{0}\" y=\"36\" fill=\"#555\">{1}: {2} ranks, {3} stages, {4} "
      "microbatches; bubble {5:f3} (F = {6}, B = {7}, I = W = B / 2 per "
      "action)</text>\n",
      left, s.name, s.ranks, s.stages, s.microbatches, t.bubble, forwardCost,
      backwardCost);
  // Forwards blue, backwards orange, lighter for later stages of a rank.
  auto color = [&](const PipelineAction &a, size_t rank) {
    const auto &mine = s.stagesOfRank[rank];
    size_t local =
        size_t(std::find(mine.begin(), mine.end(), a.stage) - mine.begin());
    static const char *forward[] = {"#4e79a7", "#76b7b2", "#a0cbe8", "#59a14f"};
    static const char *backward[] = {"#e15759", "#f28e2b", "#ffbe7d",
                                     "#b07aa1"};
    static const char *input[] = {"#9c6b30", "#c49a45", "#d4b483", "#8c564b"};
    static const char *weight[] = {"#7f7f7f", "#a5a5a5", "#c7c7c7", "#5f5f5f"};
    switch (a.kind) {
    case PipelineAction::Forward:
      return forward[local % 4];
    case PipelineAction::Backward:
      return backward[local % 4];
    case PipelineAction::BackwardInput:
      return input[local % 4];
    case PipelineAction::BackwardWeight:
      return weight[local % 4];
    }
    return "#000000";
  };
  for (auto [r, actions] : llvm::enumerate(s.actions)) {
    double y = top + double(r) * (row + gap);
    os << llvm::formatv("<text x=\"8\" y=\"{0}\">rank {1}</text>\n",
                        y + row / 2 + 4, r);
    for (auto [i, a] : llvm::enumerate(actions)) {
      double cost = actionCost(a, forwardCost, backwardCost);
      double x = left + unit * t.start[r][i];
      os << llvm::formatv("<rect x=\"{0:f1}\" y=\"{1:f1}\" width=\"{2:f1}\" "
                          "height=\"{3}\" fill=\"{4}\" stroke=\"white\">"
                          "<title>{5}</title></rect>\n",
                          x, y, unit * cost, row, color(a, r), a.str());
      if (unit * cost >= 14)
        os << llvm::formatv(
            "<text x=\"{0:f1}\" y=\"{1:f1}\" "
            "text-anchor=\"middle\" fill=\"white\">{2}</text>\n",
            x + unit * cost / 2, y + row / 2 + 4, a.microbatch);
    }
  }
  double axis = top + double(s.actions.size()) * (row + gap) + 14;
  os << llvm::formatv(
      "<text x=\"{0}\" y=\"{1}\" fill=\"#555\">time (cost "
      "units) 0 .. {2:f1}; blue and teal: forward (F), red and orange: "
      "backward (B), brown: input gradient (I), grey: weight gradient (W), "
      "the second shade a rank's later stage; number: microbatch</text>\n",
      left, axis, t.makespan);
  os << "</svg>\n";
}
