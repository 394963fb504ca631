//===- PlanAuto.h - the layout search with the predictor --------*- C++ -*-===//
//
// --plan auto: the planner (titan/Planner/Plan.h) with the driver's
// predictor: each candidate compiled through the execution phase and
// costed (predictJob), at reduced depth: a Llama is an embedding,
// identical blocks and a head, so two compiles with k and k + 1 blocks per
// stage give the time, memory and exposed communication of any depth by
// linear extrapolation. Then the seed's decision tree and TorchTitan's
// published layout for the same job, predicted the same way, beside the
// planner's pick.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DRIVER_PLANAUTO_H
#define TITAN_DRIVER_PLANAUTO_H

#include "titan/Contract/LlamaArgs.h"
#include "titan/Contract/TrainConfig.h"
#include "titan/Cost/Hardware.h"
#include "titan/Driver/Predict.h"
#include "titan/Target/TargetBackend.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>

namespace titan {
namespace driver {

struct PlanOptions {
  int64_t gpus = 0;
  /// --memory-per-gpu in GiB (> 0); unset: the description's capacity
  /// less a reserve.
  std::optional<double> memoryGiB;
  int64_t top = 10;
  bool json = false;
  /// Also compiles the best plan at full depth and prints how far the
  /// extrapolation is from it.
  bool checkExtrapolation = false;
  /// Wall seconds the predictions may take, and their work (blocks and
  /// programs compiled); 0: no limit.
  double maxSeconds = 0, maxWork = 0;
};

/// Bytes kept out of a GPU description's capacity: the CUDA context, NCCL's
/// communicator buffers and the runtime's streams, which no memory plan
/// holds (bench/results/memory-llama3-8b.md: titan's static arena has no
/// allocator slack, so what remains outside the plan is these).
constexpr int64_t kGpuReserveBytes = int64_t(4) << 30;

/// The plan --plan auto picked: the config with its layout, and the world
/// size and target it is for.
struct PlanChoice {
  TrainConfig config;
  int64_t worldSize = 0;
  const target::TargetBackend *target = nullptr;
};

/// Runs --plan auto for `model` and `config` (its global batch and
/// sequence length) on `opts.gpus` devices of the hardware `request`
/// names, compiling for that hardware's target; prints the table (or the
/// JSON) to `os`. Returns the best plan (std::nullopt with JSON output,
/// which compiles nothing). Errors name the option or key at fault, or
/// say that no layout fits.
llvm::Expected<std::optional<PlanChoice>>
planAuto(const LlamaArgs &model, const TrainConfig &config,
         const HardwareRequest &request, const PlanOptions &opts,
         llvm::raw_ostream &os);

} // namespace driver
} // namespace titan

#endif // TITAN_DRIVER_PLANAUTO_H
