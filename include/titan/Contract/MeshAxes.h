//===- MeshAxes.h - the device mesh's axes, one table -----------*- C++ -*-===//
//
// The axes of the device mesh (TorchTitan's pp, dp_replicate, dp_shard, cp,
// tp) and what each one does to the training step, stated once. #dist.mesh,
// the sharding rules and passes, the cost model, the manifest and the
// runtime's communicators take axes and their properties from this table
// instead of spelling names. Header-only and free of MLIR and LLVM, so the
// runtime and its CUDA sources include it.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_CONTRACT_MESHAXES_H
#define TITAN_CONTRACT_MESHAXES_H

#include <optional>
#include <string_view>

namespace titan::mesh {

/// The axes in rank-layout order, outermost first: rank r's coordinates are
/// r written in mixed radix over them, tp varying fastest (TorchTitan's
/// device mesh). Bit `a` of an axis mask is axis `a`.
enum Axis { kPP, kDPReplicate, kDPShard, kCP, kTP, kNumAxes };

/// What an axis does to the step.
struct AxisInfo {
  Axis axis;
  /// How #dist.mesh, shardings, the manifest and reports spell it.
  const char *name;
  /// Its ranks run different programs (pipeline stages): no sharding,
  /// collective or ring of a program spans it.
  bool pipeline;
  /// Splits the batch (data parallel): each rank trains on its own
  /// samples.
  bool batch;
  /// Parameters split over it are only stored split and gathered whole
  /// before use (FSDP over dp_shard, and over cp as TorchTitan's
  /// dp_shard_cp mesh does); a dimension's trailing run of such axes is
  /// one group of padded shards (FSDP2's uneven sharding).
  bool storage;
  /// Splits the sequence (context parallel).
  bool sequence;
  /// Splits the sequence load-balanced unless a mesh says otherwise
  /// (TorchTitan's context parallel; ContextParallelLayout.h): the
  /// default of #dist.mesh's load_balanced when the axis has more than one
  /// rank; a mesh that writes its list (`[]`: contiguous) overrides it.
  bool loadBalanced;
  /// Splits weights and their computation (tensor parallel).
  bool tensor;
};

/// The table, in Axis order.
inline constexpr AxisInfo kAxes[kNumAxes] = {
    // axis, name, pipeline, batch, storage, sequence, loadBalanced, tensor
    {kPP, "pp", true, false, false, false, false, false},
    {kDPReplicate, "dp_replicate", false, true, true, false, false, false},
    {kDPShard, "dp_shard", false, true, true, false, false, false},
    {kCP, "cp", false, false, true, true, true, false},
    {kTP, "tp", false, false, false, false, false, true},
};

constexpr const AxisInfo &axisInfo(Axis axis) { return kAxes[axis]; }
constexpr const char *axisName(Axis axis) { return kAxes[axis].name; }

/// The axis spelled `name`, or std::nullopt.
constexpr std::optional<Axis> parseAxis(std::string_view name) {
  for (const AxisInfo &info : kAxes)
    if (name == info.name)
      return info.axis;
  return std::nullopt;
}

/// Axis `axis`'s bit in an axis mask.
constexpr unsigned axisBit(Axis axis) { return 1u << axis; }
/// The mask of every axis (the whole world).
inline constexpr unsigned kAllAxes = (1u << kNumAxes) - 1;

/// The mask of the axes whose AxisInfo satisfies `pred`, e.g.
/// `axesWhere([](const AxisInfo &a) { return a.batch; })`.
template <typename Pred> constexpr unsigned axesWhere(Pred pred) {
  unsigned mask = 0;
  for (const AxisInfo &info : kAxes)
    if (pred(info))
      mask |= axisBit(info.axis);
  return mask;
}

} // namespace titan::mesh

#endif // TITAN_CONTRACT_MESHAXES_H
