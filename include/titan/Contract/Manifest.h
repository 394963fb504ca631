//===- Manifest.h - what an executable knows of its model -------*- C++ -*-===//
//
// The JSON manifest that titan-compile embeds in each training executable and
// that the runtime reads at start: the compiled config, the step's static
// shapes, each parameter's whole and local shape and sharding, the memory
// plan's slots and, under pipeline parallelism, the rank's stages and
// actions. This is its one definition: the compiler fills a `Manifest` and
// prints it, the runtime parses it, so a key cannot exist on one side only.
// MLIR-free, so the runtime links it.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_CONTRACT_MANIFEST_H
#define TITAN_CONTRACT_MANIFEST_H

#include "titan/Contract/MeshAxes.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace titan::manifest {

/// The version of the contract between a compiled executable and the
/// runtime libraries (libtitanrt, the kernels' entry points) that the
/// manifest's "abi_version" records: raised whenever an executable compiled
/// before would be misread by the new runtime (a kernel's parameters, the
/// manifest's meaning). 1: the manifest's first version, with the
/// load_balanced entry of local_shard's and context_attention(_grad)'s
/// kernel parameters. 2: a pipeline rank's send rings ("send_rings"),
/// which its sends go through. 3: the training list's activations go from
/// their frames, with no ring.
inline constexpr int64_t kABIVersion = 3;

/// The error for a manifest of another ABI version ("this executable was
/// compiled for runtime ABI N, the runtime is M: recompile it with
/// titan-compile"; a missing "abi_version" reads as 0, the executables
/// written before it existed), or nullopt when `text` is of this version or
/// not a manifest at all (parseManifest says what is wrong then). The
/// runtime asks it first: such an executable is not corrupt but one to
/// compile again. A function rather than an llvm::ErrorInfo type, whose
/// static ID would be defined twice in a test that links both this library
/// and the runtime (an ODR violation under ASan).
std::optional<std::string> abiVersionMismatch(llvm::StringRef text);

/// The mesh axes (titan/Contract/MeshAxes.h), by the manifest's names.
using MeshAxis = mesh::Axis;
using mesh::kCP;
using mesh::kDPReplicate;
using mesh::kDPShard;
using mesh::kNumAxes;
using mesh::kPP;
using mesh::kTP;

/// The axis's name (MeshAxes.h's table).
inline const char *meshAxisName(MeshAxis axis) { return mesh::axisName(axis); }

/// The axis named `name`, or std::nullopt.
inline std::optional<MeshAxis> parseMeshAxis(llvm::StringRef name) {
  return mesh::parseAxis(name);
}

/// A slot's place: its offset and its bytes.
using SlotRange = std::pair<int64_t, int64_t>;

/// A slot of a pipeline stage's microbatch frame: the boundary tensors the
/// stage receives and sends and their gradients, its stashed activations,
/// and its microbatch of tokens and labels. The IR (kernel.slot) and the
/// manifest spell it "frame<stage>:<kind>:<index>" ("frame<stage>:input:
/// tokens" and "...:labels"), printed and parsed only here.
struct FrameSlot {
  enum Kind {
    StageInput,
    StageOutput,
    StageOutputGrad,
    StageInputGrad,
    Stash,
    Tokens,
    Labels,
    /// TorchTitan's block-causal mask: the microbatch's document starts
    /// over the whole sequence (every stage's attention reads them).
    DocumentStarts
  };
  int64_t stage = 0;
  Kind kind = StageInput;
  /// The boundary or stash index (0 for the microbatch inputs).
  int64_t index = 0;

  std::string str() const;
  /// The step input a Tokens, Labels or DocumentStarts slot holds (its
  /// titan.input name), "" for the other kinds.
  static llvm::StringRef inputName(Kind kind);
  /// The frame slot `name` spells, or std::nullopt for any other slot name.
  static std::optional<FrameSlot> parse(llvm::StringRef name);

  bool operator==(const FrameSlot &o) const {
    return stage == o.stage && kind == o.kind && index == o.index;
  }
};

/// Validation under pipeline parallelism: stage `stage`'s forward-only
/// step, `eval_stage<stage>`, reads boundary tensor `index` of the
/// previous stage from the arena slot "input:" + evalStageInputName and
/// writes the one it sends the next stage to "output:" +
/// evalStageOutputName; one buffer each, as the forward-only schedule
/// consumes a stage's boundary tensors before its next forward. Its
/// microbatch of tokens and labels (and document starts, with TorchTitan's
/// block-causal mask) and its loss are the eval step's slots
/// (input:eval_tokens, input:eval_labels, input:eval_document_starts,
/// output:eval_loss).
std::string evalStageFunction(int64_t stage);
std::string evalStageInputName(int64_t stage, int64_t index);
std::string evalStageOutputName(int64_t stage, int64_t index);

struct Manifest {
  struct Param {
    std::string name;
    std::vector<int64_t> shape;      ///< of the unsharded model
    std::vector<int64_t> localShape; ///< this rank's shard
    /// Per dimension, the mesh axes splitting it (outermost first).
    std::vector<std::vector<MeshAxis>> dimAxes;
    /// Under pipeline parallelism the pipeline rank holding it (-1: every
    /// rank holds it, or a block of it).
    int64_t pipelineRank = -1;

    /// Every mesh axis that splits some dimension (bit i: MeshAxis i).
    unsigned shardMask() const;
  };

  /// Pipeline parallel: what this pipeline rank's program runs.
  struct PipelineStage {
    int64_t stage = 0;
    /// The phase functions of the program's table: forward and backward,
    /// or forward, backward_input and backward_weight (zero-bubble
    /// schedules; a whole B then runs I and W).
    std::string unshard, forward, backward, backwardInput, backwardWeight,
        reduceGrad;
    /// One microbatch's frame: its size, its slots, and how many
    /// microbatches the schedule keeps in flight at most.
    int64_t frameBytes = 0, frames = 0;
    std::vector<std::pair<FrameSlot, SlotRange>> frameSlots;
    /// validation.enable: the stage's forward-only eval step
    /// (evalStageFunction), empty without validation.
    std::string eval;
  };

  /// One action of a pipeline rank's list, in TorchTitan's lowered
  /// notation <stage><F|B|I|W|RECV_F|SEND_F|RECV_B|SEND_B><microbatch>,
  /// <stage>UNSHARD or <stage>REDUCE_GRAD.
  struct PipelineAction {
    /// 'F', 'B', 'I', 'W', 'U' (UNSHARD), 'G' (REDUCE_GRAD), or the
    /// transfers: 'f' RECV_F, 'g' SEND_F, 'b' RECV_B, 'c' SEND_B.
    char kind = '?';
    int64_t stage = -1, microbatch = -1;

    std::string str() const;
    /// The action `text` spells, or std::nullopt.
    static std::optional<PipelineAction> parse(llvm::StringRef text);
  };

  /// A channel a pipeline rank sends on, and its ring of planned send
  /// buffers (titan/Pipeline/SendRings.h): the receiving pipeline rank,
  /// the flow (0: activations, 1: gradients), and for the training list
  /// and validation's forward-only list the messages the ring holds and
  /// the bytes of each (its boundary tensors, each aligned to 256; 0 for a
  /// list that does not send on it). The lists run one after the other,
  /// so each divides the same memory.
  struct SendRing {
    int64_t peer = 0, flow = 0, slots = 0, bytes = 0, evalSlots = 0,
            evalBytes = 0;
    int64_t ringBytes() const {
      return std::max(slots * bytes, evalSlots * evalBytes);
    }
    /// The bytes a boundary tensor of `tensorBytes` takes in a slot: each
    /// of a message's tensors starts 256-byte aligned.
    static int64_t placed(int64_t tensorBytes) {
      return (tensorBytes + 255) / 256 * 256;
    }
  };

  struct Pipeline {
    int64_t rank = 0, numStages = 1, microbatches = 1, microbatchSize = 1;
    std::string schedule;
    /// The pipeline rank of each stage.
    std::vector<int64_t> stageRanks;
    std::vector<PipelineAction> actions;
    /// validation.enable: the rank's forward-only list for one validation
    /// batch (forwardOnlySchedule lowered: F, RECV_F and SEND_F only).
    std::vector<PipelineAction> evalActions;
    std::vector<PipelineStage> stages;
    /// The rank's send rings, one per channel it sends on.
    std::vector<SendRing> sendRings;
  };

  std::string model;
  /// The model's hyper-parameters as a Hugging Face config.json
  /// (titan/Contract/LlamaArgs.h's hfLlamaConfig): what Hugging Face exports
  /// write and what imports are checked against.
  llvm::json::Object hfConfig;
  /// The compiled config (TOML).
  std::string config;
  /// "cpu" or "cuda" (titan-compile --target), and the GPU architecture
  /// (cuda only).
  std::string target = "cpu", cudaArch;
  int64_t localBatch = 0, seqLen = 0, vocab = 0, dim = 0;
  double flopsPerToken = 0;
  int64_t accumulationSteps = 1;
  /// optimizer.early_step_in_backward: forward_backward reads input:step
  /// and input:total_steps and updates the parameters and moments itself;
  /// there are no grad:* slots and optimizer_step is empty. Written as
  /// "optimizer_in_backward" only when true.
  bool optimizerInBackward = false;
  /// The mesh's sizes, by MeshAxis.
  std::vector<int64_t> mesh = {1, 1, 1, 1, 1};
  /// The mesh axes that split load-balanced (#dist.mesh's load_balanced;
  /// bit i: MeshAxis i): how the runtime cuts each sequence over the
  /// sequence axes (titan/Contract/ContextParallelLayout.h). Written as
  /// "load_balanced" only when not empty.
  unsigned loadBalancedAxes = 0;
  /// The parameters this rank holds (a block of), in its steps' order.
  std::vector<Param> params;
  /// Every parameter of the model: `params` except under pipeline
  /// parallelism, where the other pipeline ranks hold the rest
  /// (checkpoints index and export them all).
  std::vector<Param> allParams;
  /// The memory plan: the arena's size and each state slot's place.
  int64_t arenaBytes = 0;
  llvm::StringMap<SlotRange> slots;
  /// training.enable_cpu_offload (kernel-offload-state): the pinned host
  /// arena's size and the slots in it (parameters, gradients, optimizer
  /// state; none of them in `slots`), and whether optimizer_step runs on
  /// the host (the runtime then waits for the device before it and calls
  /// it uncaptured). Written as "host_arena_bytes", "host_slots" and
  /// "optimizer_on_host" only with a host arena.
  int64_t hostArenaBytes = 0;
  llvm::StringMap<SlotRange> hostSlots;
  bool optimizerOnHost = false;
  /// The axis masks of the mesh groups the collectives use.
  std::vector<unsigned> collectiveAxes;
  std::optional<Pipeline> pipeline;

  /// validation.enable: the compiled forward-only `eval` step's batch (rows
  /// of seqLen tokens per rank, before context parallelism's split). It
  /// reads param:* and input:eval_tokens / input:eval_labels (and
  /// input:eval_document_starts with the block-causal mask) and writes
  /// output:eval_loss.
  struct Eval {
    int64_t localBatch = 0, seqLen = 0;
  };
  std::optional<Eval> eval;

  int64_t worldSize() const;
};

/// The manifest as the text the executable embeds (deterministic: keys in
/// sorted order), with "abi_version": kABIVersion. Under pipeline
/// parallelism every parameter carries its pipeline rank and `all_params`
/// is written.
std::string printManifest(const Manifest &manifest);

/// Parses the manifest text; an error says what is malformed, or is an
/// abiVersionMismatch's message when "abi_version" is missing or not
/// kABIVersion.
llvm::Expected<Manifest> parseManifest(llvm::StringRef text);

} // namespace titan::manifest

#endif // TITAN_CONTRACT_MANIFEST_H
