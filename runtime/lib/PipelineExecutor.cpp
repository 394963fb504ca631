//===- PipelineExecutor.cpp - runs a pipeline rank's action list ----------===//

#include "PipelineExecutor.h"

#include "Error.h"
#include "Trace.h"

#include "titanrt/Device.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringRef.h"

#include <cstring>
#include <set>

using namespace titanrt;
using llvm::StringRef;

namespace {
/// A pattern no computation writes (as the arena's).
constexpr uint64_t kUntouched = 0x7ff4dead7ff4deadull;

/// Boundary tensors travel as bytes (MPI moves the 8-bit type as bytes).
constexpr Dtype kBytes = Dtype::f8E4M3FN;

using Slot = PipelineExecutor::Slot;

PeerFlow flow(bool activation) {
  return activation ? PeerFlow::Activations : PeerFlow::Gradients;
}

bool onThisRank(const Manifest::Pipeline &p, int64_t stage) {
  return p.stageRanks[size_t(stage)] == p.rank;
}
} // namespace

struct PipelineExecutor::Stage {
  const Manifest::PipelineStage *plan = nullptr;
  int64_t index = 0;
  /// The stage's phases: unshard and reduce_grad once per step; forward;
  /// backward, or backwardInput and backwardWeight (zero-bubble schedules).
  PipelineFunction unshard = nullptr, reduceGrad = nullptr, forward = nullptr,
                   backward = nullptr, backwardInput = nullptr,
                   backwardWeight = nullptr;
  /// validation.enable: the stage's eval step and its boundary tensors'
  /// arena slots (manifest::evalStageInputName / evalStageOutputName).
  PipelineFunction eval = nullptr;
  std::vector<Slot> evalInputs, evalOutputs;
  /// The frame slots by kind, indexed by boundary index.
  std::vector<Slot> inputs, outputs, outputGrads, inputGrads;
  std::optional<Slot> tokens, labels, starts;
  /// Where this stage's microbatches' tokens, labels and document starts
  /// (then its eval microbatches') are drawn in the executor's host memory.
  int64_t hostOffset = 0, evalHostOffset = 0;
  std::vector<char *> free;
  std::map<int64_t, char *> live; ///< microbatch -> its frame
  /// Microbatches whose backward is done but whose SEND_B comes next.
  std::set<int64_t> releaseAfterSend;
  /// The activations each microbatch sent from its frame (SEND_F), by
  /// microbatch: waited for before its backward.
  std::map<int64_t, std::vector<std::unique_ptr<Request>>> activationSends;

  /// Places frame slot `name`; returns the boundary tensors it implies
  /// (its index + 1; 0 for stashes, which only the phases read, and the
  /// microbatch's inputs).
  int64_t place(const FrameSlot &name, Slot slot) {
    std::vector<Slot> *list = nullptr;
    switch (name.kind) {
    case FrameSlot::Tokens:
      tokens = slot;
      return 0;
    case FrameSlot::Labels:
      labels = slot;
      return 0;
    case FrameSlot::DocumentStarts:
      starts = slot;
      return 0;
    case FrameSlot::Stash:
      return 0;
    case FrameSlot::StageInput:
      list = &inputs;
      break;
    case FrameSlot::StageOutput:
      list = &outputs;
      break;
    case FrameSlot::StageOutputGrad:
      list = &outputGrads;
      break;
    case FrameSlot::StageInputGrad:
      list = &inputGrads;
      break;
    }
    size_t i = size_t(name.index);
    if (list->size() <= i)
      list->resize(i + 1, {-1, 0});
    (*list)[i] = slot;
    return int64_t(i) + 1;
  }
};

/// The arena slots `prefix` + name(stage, 0), name(stage, 1), ... as far
/// as the plan has them.
static std::vector<Slot> evalSlots(const Manifest &m, llvm::StringRef prefix,
                                   int64_t stage,
                                   std::string (*name)(int64_t, int64_t)) {
  std::vector<Slot> slots;
  for (int64_t i = 0;; ++i) {
    auto it = m.slots.find((prefix + name(stage, i)).str());
    if (it == m.slots.end())
      return slots;
    slots.push_back(it->second);
  }
}

PipelineExecutor::PipelineExecutor(
    const Manifest &m, const std::map<std::string, PipelineFunction> &functions,
    Device &device, Communicator &comm, char *arena)
    : m(m), p(*m.pipeline), device(device), comm(comm), arena(arena) {
  auto function = [&](const std::string &name) {
    auto it = functions.find(name);
    if (it == functions.end())
      fatal("corrupt executable: the pipeline program has no function '" +
            name + "'");
    return it->second;
  };
  for (const Manifest::PipelineStage &plan : p.stages) {
    auto stage = std::make_unique<Stage>();
    stage->plan = &plan;
    stage->index = plan.stage;
    stage->unshard = function(plan.unshard);
    stage->reduceGrad = function(plan.reduceGrad);
    stage->forward = function(plan.forward);
    if (!plan.backward.empty()) {
      stage->backward = function(plan.backward);
    } else {
      stage->backwardInput = function(plan.backwardInput);
      stage->backwardWeight = function(plan.backwardWeight);
    }
    for (const auto &[name, slot] : plan.frameSlots)
      maxBoundary = std::max(maxBoundary, stage->place(name, slot));
    if (!plan.eval.empty()) {
      stage->eval = function(plan.eval);
      stage->evalInputs = evalSlots(m, "input:", plan.stage,
                                    titan::manifest::evalStageInputName);
      stage->evalOutputs = evalSlots(m, "output:", plan.stage,
                                     titan::manifest::evalStageOutputName);
      // The eval steps are cut where the training steps are: the same
      // boundary tensors, so the peers agree on them and on their tags.
      if (stage->evalInputs.size() != stage->inputs.size() ||
          stage->evalOutputs.size() != stage->outputs.size())
        fatal("corrupt executable: pipeline stage " +
              std::to_string(plan.stage) +
              "'s eval step passes other boundary tensors than its "
              "training steps");
    }
    totalFrameBytes += plan.frameBytes * std::max<int64_t>(plan.frames, 1);
    stages.push_back(std::move(stage));
  }
  // Every message of a step has its own tag.
  if (p.microbatches * p.numStages * 2 * maxBoundary - 1 > comm.maxPeerTag())
    fatal("pipeline parallelism: " + std::to_string(p.microbatches) +
          " microbatches x " + std::to_string(p.numStages) +
          " stages need more message tags than the MPI library has (" +
          std::to_string(comm.maxPeerTag()) +
          "); use fewer microbatches (a larger "
          "parallelism.pipeline_parallel_microbatch_size)");
  frames =
      device.allocateArena(std::max<int64_t>(totalFrameBytes, 256), kUntouched);
  char *next = frames;
  for (auto &stage : stages)
    for (int64_t k = 0; k < std::max<int64_t>(stage->plan->frames, 1); ++k) {
      stage->free.push_back(next);
      next += stage->plan->frameBytes;
    }
  // The microbatches' losses are copied side by side as the list runs and
  // read once it has.
  losses = device.allocateArena(p.microbatches * int64_t(sizeof(float)), 0);
  lossSlot = arenaSlot("output:loss");
  evalTokens = arenaSlot("input:eval_tokens");
  evalLabels = arenaSlot("input:eval_labels");
  evalStarts = arenaSlot("input:eval_document_starts");
  evalLossSlot = arenaSlot("output:eval_loss");
  // Checked before a list runs: an error in the middle of one would leave
  // the peers' transfers hanging until the timeout.
  if (lastStageHere()) {
    checkLossSlot(lossSlot, "output:loss");
    for (auto &stage : stages)
      if (stage->eval)
        checkLossSlot(evalLossSlot, "output:eval_loss");
  }
  placeHostInputs();
  placeSendRings();
}

void PipelineExecutor::checkLossSlot(const ArenaSlot &slot,
                                     const char *name) const {
  if (!slot.data || slot.bytes != int64_t(sizeof(float)))
    fatal(std::string("corrupt executable: the last pipeline stage's "
                      "program has no 4-byte ") +
          name + " slot");
}

void PipelineExecutor::placeHostInputs() {
  // Per local stage and microbatch, so that no copy still pending is
  // overwritten (the V layouts draw a microbatch for two stages).
  int64_t total = 0;
  for (auto &stage : stages) {
    stage->hostOffset = total;
    total += p.microbatches * inputInts(*stage);
    stage->evalHostOffset = total;
    total += p.microbatches * evalInputInts();
  }
  hostInputs.assign(size_t(std::max<int64_t>(total, 1)), 0);
  device.pinHostMemory(hostInputs.data(), hostInputs.size() * sizeof(int32_t));
}

int64_t PipelineExecutor::inputInts(const Stage &s) const {
  int64_t bytes = 0;
  for (const std::optional<Slot> &slot : {s.tokens, s.labels, s.starts})
    bytes += slot ? slot->second : 0;
  return bytes / int64_t(sizeof(int32_t));
}

int64_t PipelineExecutor::evalInputInts() const {
  return (evalTokens.bytes + evalLabels.bytes + evalStarts.bytes) /
         int64_t(sizeof(int32_t));
}

PipelineExecutor::~PipelineExecutor() {
  // A list runs to its end (finishList) or stops the job: no send from the
  // rings is in flight here.
  rings.clear();
  device.freeArena(ringMemory);
  device.unpinHostMemory(hostInputs.data());
  device.freeArena(losses);
  device.freeArena(frames);
}

PipelineExecutor::ArenaSlot
PipelineExecutor::arenaSlot(const char *name) const {
  auto it = m.slots.find(name);
  if (it == m.slots.end())
    return {};
  return {arena + it->second.first, it->second.second};
}

PipelineExecutor::Stage &PipelineExecutor::local(int64_t stage) {
  for (auto &s : stages)
    if (s->index == stage)
      return *s;
  fatal("corrupt executable: pipeline stage " + std::to_string(stage) +
        " is not on this rank");
}

int PipelineExecutor::tag(int64_t stage, int64_t mb, int direction,
                          int64_t index) const {
  return int(((mb * p.numStages + stage) * 2 + direction) * maxBoundary +
             index);
}

void PipelineExecutor::runPhase(Stage &s, const char *phase, int64_t mb,
                                PipelineFunction fn, char *frame) {
  std::string what = "pipeline stage " + std::to_string(s.index) + "'s " +
                     phase + (frame ? " on a microbatch frame" : "");
  if (!trace)
    return device.runPhase(what, fn, arena, frame);
  // Named as TorchTitan's actions ("1F0", "0UNSHARD").
  std::string name = std::to_string(s.index) + phase;
  if (mb >= 0)
    name += std::to_string(mb);
  double begin = StepTrace::now();
  device.runPhase(what, fn, arena, frame);
  // The categories TorchTitan's traces group by (F, B, I, W, unshard,
  // reduce_grad).
  StringRef kind(phase);
  trace->add(name,
             kind == "UNSHARD"       ? "unshard"
             : kind == "REDUCE_GRAD" ? "reduce_grad"
                                     : phase,
             begin, StepTrace::now());
}

/// A channel's ring of send buffers (the manifest's send_rings).
struct PipelineExecutor::SendRing {
  int64_t peer = 0;
  PeerFlow flow = PeerFlow::Activations;
  /// The training list's slots and bytes, then the eval list's.
  int64_t slots[2] = {0, 0}, bytes[2] = {0, 0};
  char *base = nullptr;
  /// Messages sent in the running list; each slot's last message's sends.
  int64_t issued = 0;
  std::vector<std::vector<std::unique_ptr<Request>>> inFlight;
};

/// The aligned bytes of a message of `tensors`, as the driver sizes slots.
static int64_t messageBytes(const std::vector<Slot> &tensors) {
  int64_t bytes = 0;
  for (const Slot &t : tensors)
    bytes += Manifest::SendRing::placed(t.second);
  return bytes;
}

void PipelineExecutor::placeSendRings() {
  int64_t total = 0;
  for (const Manifest::SendRing &r : p.sendRings)
    total += r.ringBytes();
  ringMemory = device.allocateArena(std::max<int64_t>(total, 256), kUntouched);
  char *next = ringMemory;
  for (const Manifest::SendRing &r : p.sendRings) {
    SendRing &ring = rings.emplace_back();
    ring.peer = r.peer;
    ring.flow = flow(r.flow == 0);
    ring.slots[0] = r.slots;
    ring.bytes[0] = r.bytes;
    ring.slots[1] = r.evalSlots;
    ring.bytes[1] = r.evalBytes;
    ring.base = next;
    ring.inFlight.resize(size_t(std::max(r.slots, r.evalSlots)));
    next += r.ringBytes();
  }
  // Every send of both lists goes to a stage on another rank and every
  // copy has its ring and fits a slot: found now, not in the middle of a
  // list, where the peers would be left waiting.
  for (bool eval : {false, true})
    for (const Manifest::PipelineAction &a : eval ? p.evalActions : p.actions) {
      if (a.kind != 'g' && a.kind != 'c')
        continue;
      Stage &s = local(a.stage);
      bool activation = a.kind == 'g';
      int64_t peerStage = activation ? a.stage + 1 : a.stage - 1;
      if (peerStage < 0 || peerStage >= p.numStages || onThisRank(p, peerStage))
        fatal("corrupt executable: pipeline action " + a.str() +
              " sends to no stage on another rank");
      // Training's activations go from their frames.
      if (!eval && activation)
        continue;
      const std::vector<Slot> &tensors =
          eval ? s.evalOutputs : (activation ? s.outputs : s.inputGrads);
      SendRing &ring =
          ringFor(p.stageRanks[size_t(peerStage)], activation, eval);
      if (messageBytes(tensors) > ring.bytes[eval])
        fatal("corrupt executable: pipeline action " + a.str() + "'s " +
              std::to_string(messageBytes(tensors)) +
              " bytes do not fit its send ring's " +
              std::to_string(ring.bytes[eval]) + "-byte slots");
    }
}

PipelineExecutor::SendRing &
PipelineExecutor::ringFor(int64_t peer, bool activation, bool eval) {
  auto it = llvm::find_if(rings, [&](const SendRing &r) {
    return r.peer == peer && r.flow == flow(activation);
  });
  if (it == rings.end() || it->slots[eval] < 1)
    fatal("corrupt executable: pipeline rank " + std::to_string(p.rank) +
          " has no send ring for its " + (eval ? "eval " : "") +
          (activation ? "activations" : "gradients") + " to pipeline rank " +
          std::to_string(peer));
  return *it;
}

void PipelineExecutor::sendMessage(const char *base,
                                   const std::vector<Slot> &tensors,
                                   int64_t peer, bool activation,
                                   int64_t peerStage, int64_t mb) {
  SendRing &ring = ringFor(peer, activation, evaluating);
  // The slot's last message is one whose wait cannot close a cycle with a
  // peer (titan/Pipeline/SendRings.h: in training, one already known
  // received, so the wait costs nothing).
  int64_t slots = ring.slots[evaluating], bytes = ring.bytes[evaluating];
  size_t k = size_t(ring.issued++ % slots);
  for (std::unique_ptr<Request> &request : ring.inFlight[k])
    request->finish();
  ring.inFlight[k].clear();
  char *slot = ring.base + int64_t(k) * bytes;
  int64_t offset = 0;
  // The tag names the receiving stage.
  for (auto [i, tensor] : llvm::enumerate(tensors)) {
    device.copyWithin(slot + offset, base + tensor.first,
                      size_t(tensor.second));
    ring.inFlight[k].push_back(
        comm.send(slot + offset, kBytes, tensor.second, peer, flow(activation),
                  tag(peerStage, mb, activation ? 0 : 1, int64_t(i))));
    offset += Manifest::SendRing::placed(tensor.second);
  }
}

void PipelineExecutor::keepLoss(const ArenaSlot &slot, int64_t mb) {
  // The slot was checked when the executor was made (checkLossSlot).
  device.copyWithin(losses + mb * int64_t(sizeof(float)), slot.data,
                    sizeof(float));
}

double PipelineExecutor::finishList(int64_t kept, const std::string &context,
                                    const char *what) {
  comm.setContext(context + ", pipeline " + what + " sends");
  double begin = trace ? StepTrace::now() : 0;
  for (auto &stage : stages)
    while (!stage->activationSends.empty())
      finishActivationSends(*stage, stage->activationSends.begin()->first);
  for (SendRing &ring : rings) {
    for (auto &requests : ring.inFlight) {
      for (std::unique_ptr<Request> &request : requests)
        request->finish();
      requests.clear();
    }
    ring.issued = 0;
  }
  device.synchronize(std::string("the pipeline's ") + what + " list");
  if (trace)
    trace->add("send completion", "transfer", begin, StepTrace::now());
  comm.setContext(context);
  std::vector<float> values(static_cast<size_t>(kept));
  device.copyToHost(values.data(), losses, values.size() * sizeof(float));
  double sum = 0;
  for (float v : values)
    sum += double(v);
  return sum;
}

char *PipelineExecutor::acquire(Stage &s, int64_t mb) {
  if (auto it = s.live.find(mb); it != s.live.end())
    return it->second;
  if (s.free.empty())
    fatal("pipeline stage " + std::to_string(s.index) +
          ": the schedule keeps more microbatches in flight than its " +
          std::to_string(s.plan->frames) + " frames (corrupt executable)");
  char *frame = s.free.back();
  s.free.pop_back();
  s.live[mb] = frame;
  return frame;
}

void PipelineExecutor::forward(Stage &s, int64_t mb,
                               const FillMicrobatch &fill) {
  char *frame = acquire(s, mb);
  if (s.tokens || s.labels || s.starts) {
    // Host rows: tokens, labels, starts, each where this stage reads it.
    int32_t *next = hostInputs.data() + s.hostOffset + mb * inputInts(s);
    auto take = [&](const std::optional<Slot> &slot) -> int32_t * {
      if (!slot)
        return nullptr;
      int32_t *at = next;
      next += slot->second / int64_t(sizeof(int32_t));
      return at;
    };
    int32_t *tokens = take(s.tokens), *labels = take(s.labels),
            *starts = take(s.starts);
    fill(mb, tokens, labels, starts);
    for (auto [slot, host] : {std::pair(&s.tokens, tokens),
                              {&s.labels, labels},
                              {&s.starts, starts}})
      if (host)
        device.copyToDeviceInOrder(frame + (*slot)->first, host,
                                   size_t((*slot)->second));
  }
  // The previous stage's activations, when it is on this rank: a copy
  // between the frames (a remote one's came by RECV_F).
  int64_t prev = s.index - 1;
  if (prev >= 0 && onThisRank(p, prev)) {
    Stage &from = local(prev);
    for (auto [i, slot] : llvm::enumerate(s.inputs))
      device.copyWithin(frame + slot.first,
                        liveFrame(from, mb, 'F') + from.outputs[i].first,
                        size_t(slot.second));
  }
  runPhase(s, "F", mb, s.forward, frame);
}

void PipelineExecutor::transfer(Stage &s, int64_t mb, char kind) {
  // RECV_F: the previous stage's activations into a new frame; SEND_F this
  // stage's outputs to the next; RECV_B the next stage's gradients; SEND_B
  // this stage's input gradients to the previous one.
  bool receive = kind == 'f' || kind == 'b';
  bool activation = kind == 'f' || kind == 'g';
  char *frame =
      kind == 'f' ? acquire(s, mb) : liveFrame(s, mb, activation ? 'F' : 'B');
  int64_t peerStage = activation == receive ? s.index - 1 : s.index + 1;
  if (peerStage < 0 || peerStage >= p.numStages || onThisRank(p, peerStage))
    fatal("corrupt executable: pipeline stage " + std::to_string(s.index) +
          " transfers to or from a stage on its own rank");
  int64_t peer = p.stageRanks[size_t(peerStage)];
  const std::vector<Slot> &slots = kind == 'f'   ? s.inputs
                                   : kind == 'g' ? s.outputs
                                   : kind == 'b' ? s.outputGrads
                                                 : s.inputGrads;
  if (receive) {
    // Posted ahead by prepostReceives, or now; the wait is what the
    // transfer left exposed.
    std::vector<std::unique_ptr<Request>> requests;
    if (auto it = posted.find({s.index, mb, kind}); it != posted.end()) {
      requests = std::move(it->second);
      posted.erase(it);
    } else {
      requests = postReceive(s, mb, kind);
    }
    double begin = trace ? StepTrace::now() : 0;
    for (auto &request : requests)
      request->finish();
    if (trace)
      trace->add("recv " + std::to_string(s.index) + (activation ? "F" : "B") +
                     std::to_string(mb),
                 "transfer", begin, StepTrace::now());
    return;
  }
  if (kind == 'g') {
    // From the frame itself, which lives until this microbatch's
    // backward: that follows the gradient the next stage sent after it
    // received these activations, so the wait there costs nothing.
    auto &requests = s.activationSends[mb];
    for (auto [i, slot] : llvm::enumerate(slots))
      requests.push_back(comm.send(frame + slot.first, kBytes, slot.second,
                                   peer, PeerFlow::Activations,
                                   tag(peerStage, mb, 0, int64_t(i))));
    return;
  }
  sendMessage(frame, slots, peer, activation, peerStage, mb);
  if (kind == 'c' && s.releaseAfterSend.erase(mb))
    release(s, mb);
}

std::vector<std::unique_ptr<Request>>
PipelineExecutor::postReceive(Stage &s, int64_t mb, char kind) {
  bool activation = kind == 'f';
  char *frame = liveFrame(s, mb, activation ? 'F' : 'B');
  int64_t peerStage = activation ? s.index - 1 : s.index + 1;
  int64_t peer = p.stageRanks[size_t(peerStage)];
  const std::vector<Slot> &slots = activation ? s.inputs : s.outputGrads;
  std::vector<std::unique_ptr<Request>> requests;
  // Every message of a step has its own tag (naming this, the receiving,
  // stage), so with MPI, which matches by tag, receives posted in any
  // order match the same messages (prepostReceives runs only with MPI's
  // progress thread; NCCL matches in order, and its receives are issued at
  // their actions).
  for (auto [i, slot] : llvm::enumerate(slots))
    requests.push_back(comm.recv(
        frame + slot.first, kBytes, slot.second, peer, flow(activation),
        tag(s.index, mb, activation ? 0 : 1, int64_t(i))));
  return requests;
}

void PipelineExecutor::prepostReceives(size_t next) {
  const auto &actions = p.actions;
  for (size_t j = next; j < actions.size(); ++j) {
    const Manifest::PipelineAction &a = actions[j];
    if ((a.kind != 'f' && a.kind != 'b') ||
        posted.count({a.stage, a.microbatch, a.kind}))
      continue;
    Stage &s = local(a.stage);
    if (!s.live.count(a.microbatch)) {
      // RECV_B's frame is its forward's: not yet. RECV_F takes a new one,
      // now only if the actions before it that take frames on this stage
      // (counted as if none gave one back) still find enough.
      if (a.kind == 'b')
        continue;
      int64_t taking = 0;
      for (size_t k = next; k < j; ++k)
        if (actions[k].stage == a.stage &&
            (actions[k].kind == 'f' || actions[k].kind == 'F') &&
            !s.live.count(actions[k].microbatch))
          ++taking;
      if (int64_t(s.free.size()) <= taking)
        continue;
      acquire(s, a.microbatch);
    }
    posted[{a.stage, a.microbatch, a.kind}] =
        postReceive(s, a.microbatch, a.kind);
  }
}

char *PipelineExecutor::liveFrame(Stage &s, int64_t mb, char kind) {
  auto it = s.live.find(mb);
  if (it == s.live.end())
    fatal("corrupt executable: pipeline action " + std::to_string(s.index) +
          kind + std::to_string(mb) + " comes before its forward");
  return it->second;
}

void PipelineExecutor::backward(Stage &s, int64_t mb, PipelineFunction fn) {
  char *frame = liveFrame(s, mb, 'B');
  finishActivationSends(s, mb);
  runPhase(s, fn == s.backward ? "B" : "I", mb, fn, frame);
  // The input gradients, when the previous stage is on this rank: into its
  // frame (a remote one gets them by SEND_B).
  int64_t prev = s.index - 1;
  if (prev >= 0 && onThisRank(p, prev)) {
    Stage &to = local(prev);
    for (auto [i, slot] : llvm::enumerate(s.inputGrads))
      device.copyWithin(liveFrame(to, mb, 'B') + to.outputGrads[i].first,
                        frame + slot.first, size_t(slot.second));
  }
}

void PipelineExecutor::finishActivationSends(Stage &s, int64_t mb) {
  auto it = s.activationSends.find(mb);
  if (it == s.activationSends.end())
    return;
  for (std::unique_ptr<Request> &request : it->second)
    request->finish();
  s.activationSends.erase(it);
}

void PipelineExecutor::weight(Stage &s, int64_t mb) {
  runPhase(s, "W", mb, s.backwardWeight, liveFrame(s, mb, 'W'));
}

void PipelineExecutor::release(Stage &s, int64_t mb) {
  // Already finished before the backward in a valid list: no frame is
  // reused with a send from it in flight.
  finishActivationSends(s, mb);
  auto it = s.live.find(mb);
  s.free.push_back(it->second);
  s.live.erase(it);
}

double PipelineExecutor::run(const FillMicrobatch &fill, StepTrace *trace) {
  this->trace = trace;
  // A transfer that times out names the step and the action.
  std::string context = comm.context();
  // With communication overlap (the progress thread), receives are posted
  // as early as their frames allow; without it, at their action.
  bool overlap = comm.progressThread();
  for (size_t next = 0; next < p.actions.size(); ++next) {
    const Manifest::PipelineAction &a = p.actions[next];
    Stage &s = local(a.stage);
    comm.setContext(context + ", pipeline action " + a.str());
    if (overlap)
      prepostReceives(next);
    if (a.kind == 'U') {
      runPhase(s, "UNSHARD", -1, s.unshard, nullptr);
    } else if (a.kind == 'G') {
      runPhase(s, "REDUCE_GRAD", -1, s.reduceGrad, nullptr);
    } else if (a.kind == 'f' || a.kind == 'g' || a.kind == 'b' ||
               a.kind == 'c') {
      transfer(s, a.microbatch, a.kind);
    } else if (a.kind == 'F') {
      forward(s, a.microbatch, fill);
      if (a.stage == p.numStages - 1)
        keepLoss(lossSlot, a.microbatch);
    } else if (a.kind == 'B') {
      // A stage split for zero-bubble schedules runs a whole B as I, W.
      backward(s, a.microbatch, s.backward ? s.backward : s.backwardInput);
      if (!s.backward)
        weight(s, a.microbatch);
      // The frame is free once its input gradients are sent.
      if (a.stage > 0 && !onThisRank(p, a.stage - 1))
        s.releaseAfterSend.insert(a.microbatch);
      else
        release(s, a.microbatch);
    } else if (a.kind == 'I') {
      if (!s.backwardInput)
        fatal("corrupt executable: pipeline stage " + std::to_string(a.stage) +
              " has no input-gradient phase for action " +
              std::to_string(a.stage) + "I" + std::to_string(a.microbatch));
      backward(s, a.microbatch, s.backwardInput);
    } else {
      if (!s.backwardWeight)
        fatal("corrupt executable: pipeline stage " + std::to_string(a.stage) +
              " has no weight-gradient phase for action " +
              std::to_string(a.stage) + "W" + std::to_string(a.microbatch));
      weight(s, a.microbatch);
      release(s, a.microbatch);
    }
  }
  if (!posted.empty())
    fatal("corrupt executable: pipeline receives posted for no action of "
          "the schedule");
  double loss =
      finishList(lastStageHere() ? p.microbatches : 0, context, "training");
  this->trace = nullptr;
  return loss;
}

bool PipelineExecutor::lastStageHere() const {
  return onThisRank(p, p.numStages - 1);
}

void PipelineExecutor::evalForward(Stage &s, int64_t mb,
                                   const FillMicrobatch &fill) {
  if (!s.eval)
    fatal("corrupt executable: pipeline stage " + std::to_string(s.index) +
          " has no eval step");
  // The microbatch's rows, drawn on the host (kept until the list has
  // run) and copied in issue order.
  int32_t *next = hostInputs.data() + s.evalHostOffset + mb * evalInputInts();
  auto take = [&](const ArenaSlot &slot) -> int32_t * {
    if (!slot.data)
      return nullptr;
    int32_t *at = next;
    next += slot.bytes / int64_t(sizeof(int32_t));
    return at;
  };
  int32_t *tokens = take(evalTokens), *labels = take(evalLabels),
          *starts = take(evalStarts);
  fill(mb, tokens, labels, starts);
  for (auto [slot, host] : {std::pair(&evalTokens, tokens),
                            {&evalLabels, labels},
                            {&evalStarts, starts}})
    if (host)
      device.copyToDeviceInOrder(slot->data, host, size_t(slot->bytes));
  // The previous stage's outputs, when it is on this rank: its forward
  // came just before this one (the list goes through a microbatch's stages
  // in order).
  int64_t prev = s.index - 1;
  if (prev >= 0 && onThisRank(p, prev)) {
    Stage &from = local(prev);
    if (from.evalOutputs.size() != s.evalInputs.size())
      fatal("corrupt executable: pipeline stages " + std::to_string(prev) +
            " and " + std::to_string(s.index) +
            " disagree on their eval boundary tensors");
    for (auto [in, out] : llvm::zip(s.evalInputs, from.evalOutputs))
      device.copyWithin(arena + in.first, arena + out.first, size_t(in.second));
  }
  runPhase(s, "eval F", mb, s.eval, nullptr);
}

void PipelineExecutor::evalTransfer(Stage &s, int64_t mb, char kind) {
  bool receive = kind == 'f';
  int64_t peerStage = receive ? s.index - 1 : s.index + 1;
  if (peerStage < 0 || peerStage >= p.numStages || onThisRank(p, peerStage))
    fatal("corrupt executable: pipeline stage " + std::to_string(s.index) +
          " transfers to or from a stage on its own rank");
  int64_t peer = p.stageRanks[size_t(peerStage)];
  if (!receive) {
    sendMessage(arena, s.evalOutputs, peer, /*activation=*/true, peerStage, mb);
    return;
  }
  std::vector<std::unique_ptr<Request>> requests;
  for (auto [i, slot] : llvm::enumerate(s.evalInputs))
    requests.push_back(comm.recv(arena + slot.first, kBytes, slot.second, peer,
                                 PeerFlow::Activations,
                                 tag(s.index, mb, 0, int64_t(i))));
  for (auto &request : requests)
    request->finish();
}

double PipelineExecutor::evaluate(const FillMicrobatch &fill) {
  if (p.evalActions.empty())
    fatal("corrupt executable: compiled with validation.enable but the "
          "pipeline program has no eval actions");
  evaluating = true;
  std::string context = comm.context();
  for (const Manifest::PipelineAction &a : p.evalActions) {
    Stage &s = local(a.stage);
    comm.setContext(context + ", pipeline eval action " + a.str());
    if (a.kind == 'f' || a.kind == 'g') {
      evalTransfer(s, a.microbatch, a.kind);
    } else if (a.kind == 'F') {
      evalForward(s, a.microbatch, fill);
      if (a.stage == p.numStages - 1)
        keepLoss(evalLossSlot, a.microbatch);
    } else {
      fatal("corrupt executable: the eval list's action " + a.str() +
            " is not F, RECV_F or SEND_F");
    }
  }
  double loss =
      finishList(lastStageHere() ? p.microbatches : 0, context, "eval");
  evaluating = false;
  return loss;
}
