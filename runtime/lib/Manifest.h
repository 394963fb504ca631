//===- Manifest.h - what titan-compile says about an executable -*- C++ -*-===//
//
// The JSON manifest a training executable carries: the compiled config, the
// step's static shapes, each parameter's global and local shape and
// sharding, and the memory plan's slots.
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_LIB_MANIFEST_H
#define TITANRT_LIB_MANIFEST_H

#include "Communicator.h"

#include "llvm/ADT/StringMap.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace titanrt {

struct Manifest {
  std::string model, config;
  /// "cpu" or "cuda" (titan-compile --target), and the GPU architecture.
  std::string target = "cpu", cudaArch;
  /// The axis masks of the mesh groups the collectives use.
  std::vector<unsigned> collectiveAxes;
  int64_t localBatch = 0, seqLen = 0, vocab = 0, dim = 0;
  double flopsPerToken = 0;
  int64_t accumulationSteps = 1;
  std::vector<int64_t> mesh = {1, 1, 1, 1, 1};
  struct Param {
    std::string name;
    std::vector<int64_t> shape;      ///< of the unsharded model
    std::vector<int64_t> localShape; ///< this rank's shard
    /// Per dimension, the mesh axes splitting it (outermost first).
    std::vector<std::vector<MeshAxis>> dimAxes;
    unsigned shardMask = 0; ///< every mesh axis that splits some dimension
    /// Under pipeline parallelism the pipeline rank holding it (-1: every
    /// rank holds it, or a block of it).
    int64_t pipelineRank = -1;
  };
  /// The parameters this rank holds (a block of), in its steps' order.
  std::vector<Param> params;
  /// Every parameter of the model: `params` except under pipeline
  /// parallelism, where the other pipeline ranks hold the rest
  /// (checkpoints index and export them all).
  std::vector<Param> allParams;
  /// The memory plan: the arena's size and each state slot's offset.
  int64_t arenaBytes = 0;
  llvm::StringMap<std::pair<int64_t, int64_t>> slots; ///< offset, bytes

  /// Pipeline parallel: what this pipeline rank's program runs.
  struct PipelineStage {
    int64_t stage = 0;
    /// The phase functions of the program's table: forward and backward,
    /// or forward, backward_input and backward_weight (zero-bubble
    /// schedules; a whole B then runs I and W).
    std::string unshard, forward, backward, backwardInput, backwardWeight,
        reduceGrad;
    /// One microbatch's frame: its size, its slots (offset, bytes), and
    /// how many microbatches the schedule keeps in flight at most.
    int64_t frameBytes = 0, frames = 0;
    llvm::StringMap<std::pair<int64_t, int64_t>> frameSlots;
  };
  struct PipelineAction {
    /// 'F', 'B', 'I', 'W', 'U' (UNSHARD), 'G' (REDUCE_GRAD), or the
    /// transfers: 'f' RECV_F, 'g' SEND_F, 'b' RECV_B, 'c' SEND_B.
    char kind;
    int64_t stage, microbatch;
  };
  struct Pipeline {
    int64_t rank = 0, numStages = 1, microbatches = 1, microbatchSize = 1;
    std::string schedule;
    std::vector<int64_t> stageRanks;
    std::vector<PipelineAction> actions;
    std::vector<PipelineStage> stages;
  };
  std::optional<Pipeline> pipeline;

  int64_t worldSize() const;
};

/// Parses the manifest text; a malformed one is a fatal "corrupt
/// executable" error.
Manifest parseManifest(const char *text);

/// The product of `shape` (1 for a scalar).
int64_t numel(const std::vector<int64_t> &shape);

/// "pp", "dp_replicate", "dp_shard", "cp", "tp".
const char *meshAxisName(MeshAxis axis);

} // namespace titanrt

#endif // TITANRT_LIB_MANIFEST_H
