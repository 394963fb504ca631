//===- PipelineExecutor.h - runs a pipeline rank's action list --*- C++ -*-===//
//
// A pipeline-parallel rank runs its action list (the manifest's
// `pipeline.actions`, which dist-pipeline-schedule wrote and checked): its
// stages' phase functions, one microbatch frame per microbatch in flight,
// and the transfers between pipeline ranks the list names (RECV_F, SEND_F,
// RECV_B, SEND_B, point-to-point messages); between two stages on this
// rank the tensors are copied between their frames.
//
// The list is issued in order through the Device (on a GPU: enqueued on
// the compute stream, the host running ahead) and waited for once at its
// end, so the host never blocks a transfer its peers wait for (on the CPU
// it also waits at its receives and for sends already known received). A
// receive orders the work after it behind its message (on the CPU: waits,
// under the communicator's timeout). A stage's activations go from its
// frame, which lives until that microbatch's backward, after the gradient
// that shows they arrived; every other send goes from a copy in the next slot
// of a planned ring of buffers per channel, so its frame or arena slot is
// reused at once, and reusing a slot waits for a send the schedule's
// causal order allows (titan/Pipeline/SendRings.h). The order of the
// work on each rank is then the CPU's sequential order, whose transfers
// dist-pipeline-schedule proved deadlock-free, with some waits dropped.
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_LIB_PIPELINEEXECUTOR_H
#define TITANRT_LIB_PIPELINEEXECUTOR_H

#include "Communicator.h"
#include "Manifest.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

namespace titanrt {

class Device;
class StepTrace;
enum class PeerFlow;

/// A phase function of a pipeline program: (arena, frame).
using PipelineFunction = void (*)(char *arena, char *frame);

class PipelineExecutor {
public:
  /// A frame or arena slot: offset, bytes.
  using Slot = std::pair<int64_t, int64_t>;

  /// `functions` maps the manifest's phase names to the program's symbols.
  PipelineExecutor(const Manifest &m,
                   const std::map<std::string, PipelineFunction> &functions,
                   Device &device, Communicator &comm, char *arena);
  ~PipelineExecutor();
  PipelineExecutor(const PipelineExecutor &) = delete;
  PipelineExecutor &operator=(const PipelineExecutor &) = delete;

  /// Fills microbatch `mb`'s tokens and labels (microbatch size x the
  /// rank's part of the sequence each) and, for TorchTitan's block-causal
  /// mask, its document starts (microbatch size x the whole sequence);
  /// each may be null when this rank's stages do not read it.
  using FillMicrobatch = std::function<void(int64_t mb, int32_t *tokens,
                                            int32_t *labels, int32_t *starts)>;

  /// Runs the action list once (every microbatch through every local
  /// stage) and returns the sum of the microbatch losses computed here
  /// (those of the last stage; 0 on other ranks).
  double run(const FillMicrobatch &fill, StepTrace *trace = nullptr);

  /// Runs the forward-only list (validation.enable: the manifest's
  /// `pipeline.eval_actions`) once over a validation batch's microbatches
  /// and returns the sum of their losses (last stage; 0 on other ranks).
  /// The eval steps keep their boundary tensors in arena slots, one each:
  /// the list sends or hands on a stage's outputs before its next forward.
  double evaluate(const FillMicrobatch &fill);

private:
  struct Stage;
  Stage &local(int64_t stage);
  void forward(Stage &s, int64_t mb, const FillMicrobatch &fill);
  /// The frame of (s, mb), which its forward (or RECV_F) took.
  char *liveFrame(Stage &s, int64_t mb, char kind);
  /// (s, mb)'s frame, taken from the free ones if it has none yet.
  char *acquire(Stage &s, int64_t mb);
  /// A RECV_F, SEND_F, RECV_B or SEND_B action ('f', 'g', 'b', 'c').
  void transfer(Stage &s, int64_t mb, char kind);
  /// Posts the receives of RECV action `a` (kind 'f' or 'b') into its
  /// frame, which must exist.
  std::vector<std::unique_ptr<Request>> postReceive(Stage &s, int64_t mb,
                                                    char kind);
  /// Posts the receives of the RECV actions from action `next` on whose
  /// frames exist, or can be taken now without starving an action before
  /// them, so that their transfers overlap the actions in between.
  void prepostReceives(size_t next);
  /// B or I: runs `fn` and, when the previous stage is on this rank, copies
  /// the input gradients into its frame (RECV_B and SEND_B are actions).
  void backward(Stage &s, int64_t mb, PipelineFunction fn);
  /// W.
  void weight(Stage &s, int64_t mb);
  /// Waits for the activations (s, mb) sent from its frame.
  void finishActivationSends(Stage &s, int64_t mb);
  /// F of the eval list: the stage's eval step on microbatch `mb`.
  void evalForward(Stage &s, int64_t mb, const FillMicrobatch &fill);
  /// RECV_F ('f') or SEND_F ('g') of the eval list.
  void evalTransfer(Stage &s, int64_t mb, char kind);
  /// Gives (s, mb)'s frame back after its last backward action.
  void release(Stage &s, int64_t mb);
  /// Runs phase `phase` ("F", "UNSHARD") of `s` on `frame` (null: none)
  /// for microbatch `mb` (-1: none), with its span when tracing.
  void runPhase(Stage &s, const char *phase, int64_t mb, PipelineFunction fn,
                char *frame);
  /// The send rings, one per channel this rank sends on, in one
  /// allocation.
  void placeSendRings();
  /// Sends the boundary tensors `tensors` (places in `base`) to pipeline
  /// rank `peer`, stage `peerStage`, microbatch `mb`: copied into the next
  /// slot of the channel's ring, so that the frame can be reused at once.
  void sendMessage(const char *base, const std::vector<Slot> &tensors,
                   int64_t peer, bool activation, int64_t peerStage,
                   int64_t mb);
  struct SendRing;
  /// The ring of this rank's sends to `peer` of that flow, with slots in
  /// the training or the eval list.
  SendRing &ringFor(int64_t peer, bool activation, bool eval);
  /// An arena slot: where it is and its size (null where this rank's
  /// program has none).
  struct ArenaSlot {
    char *data = nullptr;
    int64_t bytes = 0;
  };
  ArenaSlot arenaSlot(const char *name) const;
  /// Copies microbatch `mb`'s loss from `slot` (checked by checkLossSlot)
  /// beside the others, in issue order.
  void keepLoss(const ArenaSlot &slot, int64_t mb);
  void checkLossSlot(const ArenaSlot &slot, const char *name) const;
  /// Ends a list: waits for its sends and its work, and returns the sum of
  /// the first `kept` losses keepLoss copied. `what` names the list.
  double finishList(int64_t kept, const std::string &context, const char *what);
  bool lastStageHere() const;
  /// The tag of boundary tensor `index` that stage `stage` receives for
  /// microbatch `mb` (direction 0: activation, 1: gradient).
  int tag(int64_t stage, int64_t mb, int direction, int64_t index) const;

  const Manifest &m;
  const Manifest::Pipeline &p;
  Device &device;
  Communicator &comm;
  char *arena;
  std::vector<std::unique_ptr<Stage>> stages;
  char *frames = nullptr;
  int64_t totalFrameBytes = 0;
  int64_t maxBoundary = 1;
  /// The last stage's loss slot, and the microbatches' losses in device
  /// memory, read once per list.
  ArenaSlot lossSlot;
  char *losses = nullptr;
  /// validation.enable: the eval steps' microbatch and loss slots (null
  /// where this rank's stages do not read or write them).
  ArenaSlot evalTokens, evalLabels, evalStarts, evalLossSlot;
  /// The host memory the microbatches' inputs (tokens, labels, document
  /// starts) are drawn into,
  /// per local stage and microbatch (training's, then eval's): unchanged
  /// until the list's work has completed (Device::copyToDeviceInOrder),
  /// and pinned where the device can.
  std::vector<int32_t> hostInputs;
  void placeHostInputs();
  /// A microbatch's inputs of `s` (of the eval step), in int32s.
  int64_t inputInts(const Stage &s) const;
  int64_t evalInputInts() const;
  std::vector<SendRing> rings;
  /// Whether the eval list is running (the rings' eval slots).
  bool evaluating = false;
  char *ringMemory = nullptr;
  /// Receives posted ahead of their RECV action, by (stage, microbatch,
  /// kind); the action waits for them.
  std::map<std::tuple<int64_t, int64_t, char>,
           std::vector<std::unique_ptr<Request>>>
      posted;
  /// The step being traced, or null.
  StepTrace *trace = nullptr;
};

} // namespace titanrt

#endif // TITANRT_LIB_PIPELINEEXECUTOR_H
