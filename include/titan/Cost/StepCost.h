//===- StepCost.h - the predicted time of a compiled step -------*- C++ -*-===//
//
// A walk over one step function of a rank's scheduled, memory-planned
// kernel IR (after kernel-schedule-collectives): compute calls run one
// after another on the compute stream; a collective starts on its group's
// stream when its kernel.collective_start is reached and that stream is
// free, and runs for its collective cost; a kernel.wait holds compute
// until its collective is done. What runs between a start and its wait is
// the overlap the scheduler made; the rest of a collective is exposed.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_COST_STEPCOST_H
#define TITAN_COST_STEPCOST_H

#include "titan/Cost/CollectiveCost.h"
#include "titan/Cost/KernelCost.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <map>
#include <string>
#include <vector>

namespace titan::cost {

/// The costed ops of one part of the model: a transformer block
/// ("layers.3"), "tok_embeddings", "norm", "output", "loss", "optimizer"
/// or "other" (by each op's module path, its location).
struct PartCost {
  std::string name;
  double computeSeconds = 0, commSeconds = 0, exposedCommSeconds = 0;
  double flops = 0;
  int64_t calls = 0;
};

/// The costed calls of one kernel of the step: the library kernel's name
/// (or "generated", "copy"), the module paths of its location, sorted, a
/// block's index written "*" so that every block's calls add up, and
/// " [backward]" from the loss on (a recomputed forward included; a
/// pipeline stage's backward phases whole): "generated
/// layers.*.feed_forward + layers.*.feed_forward.w2 [backward]".
struct KernelCost {
  std::string name;
  WorkUnit unit = WorkUnit::Memory;
  int64_t calls = 0;
  double flops = 0, bytes = 0, seconds = 0;
};

struct StepCost {
  /// From the step's first op to the end of its last op or wait.
  double seconds = 0;
  /// Busy time of the compute stream, and the FLOPs of its GEMMs and
  /// attention.
  double computeSeconds = 0, flops = 0;
  /// Per group of mesh axes ("dp_shard", "tp", "dp_shard,cp", ...): the
  /// collectives' total time and the part of it compute waited for; "host
  /// link": training.enable_cpu_offload's copies between host and device.
  std::map<std::string, double> commSeconds, exposedCommSeconds;
  /// Totals by roofline class, for calibration: calls, FLOPs, bytes,
  /// predicted seconds.
  struct UnitTotals {
    int64_t calls = 0;
    double flops = 0, bytes = 0, seconds = 0;
  };
  std::map<WorkUnit, UnitTotals> units;
  /// By model part, in program order of first appearance.
  std::vector<PartCost> parts;
  /// By kernel (KernelCost), in program order of first appearance.
  std::vector<KernelCost> kernels;
};

/// A costed op's KernelCost name, in the backward or not.
std::string kernelCostName(mlir::Operation *op, bool backward);

/// The mesh axes of `axisMask` as "dp_shard,cp" (mesh order).
std::string axesName(unsigned axisMask);

/// Costs `step` on `hw` for a rank of the mesh with `degrees` (pp,
/// dp_replicate, dp_shard, cp, tp): each collective over its group's
/// placement (placeGroup), each call by kernelSeconds with the ranks that
/// share a node's compute when hw.ranksShareCompute.
StepCost costStep(mlir::func::FuncOp step, llvm::ArrayRef<int64_t> degrees,
                  const Hardware &hw);

} // namespace titan::cost

#endif // TITAN_COST_STEPCOST_H
