//===- Manifest.cpp - what a training executable knows of its model -------===//

#include "titan/Contract/Manifest.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

using namespace titan::manifest;
namespace mesh = titan::mesh;
using llvm::StringRef;
namespace json = llvm::json;

//===----------------------------------------------------------------------===//
// Frame slots, pipeline actions
//===----------------------------------------------------------------------===//

/// The spelling of each indexed FrameSlot::Kind.
static constexpr std::pair<FrameSlot::Kind, StringRef> kFrameSlotKinds[] = {
    {FrameSlot::StageInput, "stage_input"},
    {FrameSlot::StageOutput, "stage_output"},
    {FrameSlot::StageOutputGrad, "stage_output_grad"},
    {FrameSlot::StageInputGrad, "stage_input_grad"},
    {FrameSlot::Stash, "stash"}};

StringRef FrameSlot::inputName(Kind kind) {
  switch (kind) {
  case Tokens:
    return "tokens";
  case Labels:
    return "labels";
  case DocumentStarts:
    return "document_starts";
  default:
    return "";
  }
}

std::string FrameSlot::str() const {
  std::string name = "frame" + std::to_string(stage) + ":";
  if (kind == Tokens || kind == Labels || kind == DocumentStarts)
    return name + "input:" + inputName(kind).str();
  for (auto [k, spelling] : kFrameSlotKinds)
    if (k == kind)
      return name + spelling.str() + ":" + std::to_string(index);
  llvm_unreachable("every frame slot kind has a spelling");
}

std::optional<FrameSlot> FrameSlot::parse(StringRef name) {
  FrameSlot slot;
  if (!name.consume_front("frame"))
    return std::nullopt;
  auto [digits, rest] = name.split(':');
  auto [kind, index] = rest.split(':');
  if (digits.getAsInteger(10, slot.stage) || slot.stage < 0)
    return std::nullopt;
  if (kind == "input") {
    for (Kind input : {Tokens, Labels, DocumentStarts})
      if (index == inputName(input)) {
        slot.kind = input;
        return slot;
      }
    return std::nullopt;
  }
  const auto *known = llvm::find_if(
      kFrameSlotKinds, [&](const auto &k) { return k.second == kind; });
  if (known == std::end(kFrameSlotKinds) ||
      index.getAsInteger(10, slot.index) || slot.index < 0)
    return std::nullopt;
  slot.kind = known->first;
  return slot;
}

std::string titan::manifest::evalStageFunction(int64_t stage) {
  return "eval_stage" + std::to_string(stage);
}

std::string titan::manifest::evalStageInputName(int64_t stage, int64_t index) {
  return evalStageFunction(stage) + "_input" + std::to_string(index);
}

std::string titan::manifest::evalStageOutputName(int64_t stage, int64_t index) {
  return evalStageFunction(stage) + "_output" + std::to_string(index);
}

/// The action kinds' spellings, by their codes.
static constexpr std::pair<char, StringRef> kActionKinds[] = {
    {'F', "F"},       {'B', "B"},          {'I', "I"},      {'W', "W"},
    {'f', "RECV_F"},  {'g', "SEND_F"},     {'b', "RECV_B"}, {'c', "SEND_B"},
    {'U', "UNSHARD"}, {'G', "REDUCE_GRAD"}};

/// UNSHARD and REDUCE_GRAD run once per step: they have no microbatch.
static bool isPerStep(char kind) { return kind == 'U' || kind == 'G'; }

std::string Manifest::PipelineAction::str() const {
  const auto *spelling = llvm::find_if(
      kActionKinds, [&](const auto &k) { return k.first == kind; });
  std::string text = std::to_string(stage);
  text += spelling == std::end(kActionKinds) ? StringRef(&kind, 1)
                                             : spelling->second;
  if (!isPerStep(kind))
    text += std::to_string(microbatch);
  return text;
}

std::optional<Manifest::PipelineAction>
Manifest::PipelineAction::parse(StringRef text) {
  size_t at = text.find_first_not_of("0123456789");
  if (at == StringRef::npos || at == 0)
    return std::nullopt;
  StringRef kind =
      text.substr(at).take_while([](char c) { return !llvm::isDigit(c); });
  const auto *known = llvm::find_if(
      kActionKinds, [&](const auto &k) { return k.second == kind; });
  if (known == std::end(kActionKinds))
    return std::nullopt;
  PipelineAction a;
  a.kind = known->first;
  StringRef mb = text.substr(at + kind.size());
  if (isPerStep(a.kind) && mb.empty())
    mb = "0";
  if (text.substr(0, at).getAsInteger(10, a.stage) ||
      mb.getAsInteger(10, a.microbatch))
    return std::nullopt;
  return a;
}

unsigned Manifest::Param::shardMask() const {
  unsigned mask = 0;
  for (const std::vector<MeshAxis> &axes : dimAxes)
    for (MeshAxis a : axes)
      mask |= 1u << a;
  return mask;
}

int64_t Manifest::worldSize() const {
  int64_t n = 1;
  for (int64_t size : mesh)
    n *= size;
  return n;
}

//===----------------------------------------------------------------------===//
// Printing
//===----------------------------------------------------------------------===//

/// The names of the axes of `mask`, in mesh order.
static json::Array axisNames(unsigned mask) {
  json::Array names;
  for (const mesh::AxisInfo &axis : mesh::kAxes)
    if (mask & mesh::axisBit(axis.axis))
      names.push_back(axis.name);
  return names;
}

/// A parameter; `withPipelineRank` under pipeline parallelism.
static json::Object toJSON(const Manifest::Param &p, bool withPipelineRank) {
  // The dimensions up to the last split one, as #dist.sharding lists them.
  auto split = llvm::find_if(llvm::reverse(p.dimAxes),
                             [](const auto &axes) { return !axes.empty(); });
  json::Array sharding;
  for (const std::vector<MeshAxis> &axes :
       llvm::make_range(p.dimAxes.begin(), split.base()))
    sharding.push_back(json::Array(
        llvm::map_range(axes, [](MeshAxis a) { return meshAxisName(a); })));
  json::Object o{{"name", p.name},
                 {"shape", json::Array(p.shape)},
                 {"local_shape", json::Array(p.localShape)},
                 {"sharding", std::move(sharding)}};
  if (withPipelineRank)
    o["pipeline_rank"] = p.pipelineRank;
  return o;
}

static json::Array toJSON(const std::vector<Manifest::Param> &params,
                          bool withPipelineRank) {
  json::Array list;
  for (const Manifest::Param &p : params)
    list.push_back(toJSON(p, withPipelineRank));
  return list;
}

static json::Array toJSON(const SlotRange &range) {
  return json::Array{range.first, range.second};
}

static json::Object toJSON(const Manifest::PipelineStage &s) {
  json::Object slots;
  for (const auto &[slot, range] : s.frameSlots)
    slots[slot.str()] = toJSON(range);
  json::Object o{{"stage", s.stage},
                 {"unshard", s.unshard},
                 {"forward", s.forward},
                 {"reduce_grad", s.reduceGrad},
                 {"frame_bytes", s.frameBytes},
                 {"frames", s.frames},
                 {"frame_slots", std::move(slots)}};
  if (!s.eval.empty())
    o["eval"] = s.eval;
  if (s.backward.empty()) {
    o["backward_input"] = s.backwardInput;
    o["backward_weight"] = s.backwardWeight;
  } else {
    o["backward"] = s.backward;
  }
  return o;
}

static json::Array toJSON(const std::vector<Manifest::PipelineAction> &list) {
  json::Array actions;
  for (const Manifest::PipelineAction &a : list)
    actions.push_back(a.str());
  return actions;
}

static json::Object toJSON(const Manifest::Pipeline &p) {
  json::Array stages;
  for (const Manifest::PipelineStage &s : p.stages)
    stages.push_back(toJSON(s));
  json::Object o{{"rank", p.rank},
                 {"schedule", p.schedule},
                 {"num_stages", p.numStages},
                 {"stage_ranks", json::Array(p.stageRanks)},
                 {"microbatches", p.microbatches},
                 {"microbatch_size", p.microbatchSize},
                 {"actions", toJSON(p.actions)},
                 {"stages", std::move(stages)}};
  if (!p.evalActions.empty())
    o["eval_actions"] = toJSON(p.evalActions);
  json::Array rings;
  for (const Manifest::SendRing &r : p.sendRings)
    rings.push_back(json::Array{r.peer, r.flow, r.slots, r.bytes, r.evalSlots,
                                r.evalBytes});
  o["send_rings"] = std::move(rings);
  return o;
}

/// The mismatch message for an executable of ABI `found`.
static std::string abiMismatch(int64_t found) {
  return "this executable was compiled for runtime ABI " +
         std::to_string(found) + ", the runtime is " +
         std::to_string(titan::manifest::kABIVersion) +
         ": recompile it with titan-compile";
}

/// The manifest's "abi_version" (0 when missing), or nullopt when it is not
/// an integer.
static std::optional<int64_t> abiVersionOf(const json::Object &o) {
  const json::Value *v = o.get("abi_version");
  return v ? v->getAsInteger() : std::optional<int64_t>(0);
}

std::optional<std::string>
titan::manifest::abiVersionMismatch(llvm::StringRef text) {
  llvm::Expected<json::Value> value = json::parse(text);
  if (!value) {
    llvm::consumeError(value.takeError());
    return std::nullopt;
  }
  const json::Object *o = value->getAsObject();
  if (!o)
    return std::nullopt;
  std::optional<int64_t> abi = abiVersionOf(*o);
  if (!abi || *abi == kABIVersion)
    return std::nullopt;
  return abiMismatch(*abi);
}

std::string titan::manifest::printManifest(const Manifest &m) {
  bool pipelined = m.pipeline.has_value();
  json::Object slots;
  for (const auto &slot : m.slots)
    slots[slot.getKey()] = toJSON(slot.getValue());
  json::Object o{{"abi_version", kABIVersion},
                 {"model", m.model},
                 {"config", m.config},
                 {"target", m.target},
                 {"local_batch_size", m.localBatch},
                 {"seq_len", m.seqLen},
                 {"vocab_size", m.vocab},
                 {"dim", m.dim},
                 {"flops_per_token", m.flopsPerToken},
                 {"accumulation_steps", m.accumulationSteps},
                 {"mesh", json::Array(m.mesh)},
                 {"params", toJSON(m.params, pipelined)},
                 {"arena_bytes", m.arenaBytes},
                 {"slots", std::move(slots)},
                 {"collective_axes", json::Array(m.collectiveAxes)}};
  if (m.loadBalancedAxes)
    o["load_balanced"] = axisNames(m.loadBalancedAxes);
  if (m.optimizerInBackward)
    o["optimizer_in_backward"] = true;
  if (m.hostArenaBytes > 0) {
    json::Object hostSlots;
    for (const auto &slot : m.hostSlots)
      hostSlots[slot.getKey()] = toJSON(slot.getValue());
    o["host_arena_bytes"] = m.hostArenaBytes;
    o["host_slots"] = std::move(hostSlots);
    o["optimizer_on_host"] = m.optimizerOnHost;
  }
  if (m.target == "cuda")
    o["cuda_arch"] = m.cudaArch;
  if (!m.hfConfig.empty())
    o["hf_config"] = json::Object(m.hfConfig);
  if (m.eval)
    o["eval"] = json::Object{{"local_batch_size", m.eval->localBatch},
                             {"seq_len", m.eval->seqLen}};
  if (pipelined) {
    o["all_params"] = toJSON(m.allParams, true);
    o["pipeline"] = toJSON(*m.pipeline);
  }
  std::string text;
  llvm::raw_string_ostream(text) << json::Value(std::move(o));
  return text;
}

//===----------------------------------------------------------------------===//
// Parsing
//===----------------------------------------------------------------------===//

namespace {
/// The reader: each malformed piece is an error naming it.
struct Reader {
  /// The first error.
  std::optional<std::string> error;

  void fail(const llvm::Twine &message) {
    if (!error)
      error = message.str();
  }

  std::vector<int64_t> integers(const json::Array *list, StringRef what) {
    std::vector<int64_t> values;
    if (!list)
      return values;
    for (const json::Value &v : *list) {
      std::optional<int64_t> i = v.getAsInteger();
      if (!i)
        fail(llvm::Twine(what) + " is not a list of integers");
      values.push_back(i.value_or(0));
    }
    return values;
  }

  /// Appends the axes `list` names to `axes`; false (and an error) when it
  /// names an unknown one.
  bool meshAxes(const json::Array &list, std::vector<MeshAxis> &axes) {
    for (const json::Value &axis : list) {
      StringRef name = axis.getAsString().value_or("");
      std::optional<MeshAxis> a = parseMeshAxis(name);
      if (!a) {
        fail(llvm::Twine("unknown mesh axis '") + name + "'");
        return false;
      }
      axes.push_back(*a);
    }
    return true;
  }

  /// An {name: [offset, bytes]} table that must fit in `bytes`.
  template <typename Add>
  void slots(const json::Object *table, int64_t bytes, StringRef where,
             Add add) {
    if (!table)
      return;
    for (const auto &[name, range] : *table) {
      std::vector<int64_t> r = integers(range.getAsArray(), "a slot");
      if (r.size() != 2 || r[0] < 0 || r[0] + r[1] > bytes) {
        fail(llvm::Twine("slot '") + StringRef(name) + "' lies outside " +
             where);
        return;
      }
      add(StringRef(name), SlotRange{r[0], r[1]});
    }
  }

  std::vector<Manifest::Param> params(const json::Array *list);
  Manifest::PipelineStage stage(const json::Object &o);
  Manifest::Pipeline pipeline(const json::Object &o);
  /// The pipeline actions of `list` (none when it is null), within `p`'s
  /// stages and microbatches.
  std::vector<Manifest::PipelineAction> actions(const json::Array *list,
                                                const Manifest::Pipeline &p);
};
} // namespace

std::vector<Manifest::Param> Reader::params(const json::Array *list) {
  std::vector<Manifest::Param> params;
  if (!list) {
    fail("the manifest has no parameter list");
    return params;
  }
  for (const json::Value &v : *list) {
    const json::Object *o = v.getAsObject();
    if (!o || !o->getString("name") || !o->getArray("shape")) {
      fail("a parameter has no name and shape");
      return params;
    }
    Manifest::Param &p = params.emplace_back();
    p.name = o->getString("name")->str();
    p.shape = integers(o->getArray("shape"), "a shape");
    p.localShape = o->getArray("local_shape")
                       ? integers(o->getArray("local_shape"), "a shape")
                       : p.shape;
    p.dimAxes.resize(p.shape.size());
    if (const json::Array *dims = o->getArray("sharding"))
      for (auto [d, axes] : llvm::enumerate(*dims)) {
        if (d >= p.shape.size() || !axes.getAsArray()) {
          fail("sharding of '" + p.name +
               "' has more dimensions than its shape");
          return params;
        }
        if (!meshAxes(*axes.getAsArray(), p.dimAxes[d]))
          return params;
      }
    p.pipelineRank = o->getInteger("pipeline_rank").value_or(-1);
  }
  return params;
}

Manifest::PipelineStage Reader::stage(const json::Object &o) {
  auto string = [&](StringRef key) {
    return o.getString(key).value_or("").str();
  };
  Manifest::PipelineStage s;
  s.stage = o.getInteger("stage").value_or(-1);
  s.unshard = string("unshard");
  s.reduceGrad = string("reduce_grad");
  s.forward = string("forward");
  s.backward = string("backward");
  s.backwardInput = string("backward_input");
  s.backwardWeight = string("backward_weight");
  s.eval = string("eval");
  if (s.unshard.empty() || s.reduceGrad.empty() || s.forward.empty() ||
      (s.backward.empty() &&
       (s.backwardInput.empty() || s.backwardWeight.empty())))
    fail("pipeline stage " + std::to_string(s.stage) +
         " has no forward and backward functions");
  s.frameBytes = o.getInteger("frame_bytes").value_or(-1);
  s.frames = o.getInteger("frames").value_or(-1);
  if (s.stage < 0 || s.frameBytes < 0 || s.frames < 0)
    fail("the pipeline manifest has no 'stage', 'frame_bytes' or 'frames'");
  slots(o.getObject("frame_slots"), s.frameBytes, "its pipeline frame",
        [&](StringRef name, SlotRange range) {
          std::optional<FrameSlot> slot = FrameSlot::parse(name);
          if (!slot || slot->stage != s.stage)
            return fail(llvm::Twine("frame slot '") + name +
                        "' is not of stage " + std::to_string(s.stage));
          s.frameSlots.push_back({*slot, range});
        });
  // In the printed order, so a parsed manifest prints the same text.
  llvm::sort(s.frameSlots, [](const auto &a, const auto &b) {
    return a.first.str() < b.first.str();
  });
  return s;
}

/// Whether `f` is a send ring of `p`, whose pipeline ranks are 0 to
/// `lastRank`, that `p` has none of for its peer and flow yet.
static bool validSendRing(const std::vector<int64_t> &f,
                          const Manifest::Pipeline &p, int64_t lastRank) {
  if (f.size() != 6 || f[0] < 0 || f[0] > lastRank || f[0] == p.rank ||
      f[1] < 0 || f[1] > 1 || (f[2] < 1 && f[4] < 1))
    return false;
  for (size_t list : {2, 4})
    if (f[list] < 0 || f[list] >= (1 << 16) || f[list + 1] < 0 ||
        f[list + 1] >= (int64_t(1) << 40) || f[list + 1] % 256 != 0)
      return false;
  return llvm::none_of(p.sendRings, [&](const Manifest::SendRing &r) {
    return r.peer == f[0] && r.flow == f[1];
  });
}

Manifest::Pipeline Reader::pipeline(const json::Object &o) {
  Manifest::Pipeline p;
  for (auto [key, field] : {std::pair("rank", &p.rank),
                            {"num_stages", &p.numStages},
                            {"microbatches", &p.microbatches},
                            {"microbatch_size", &p.microbatchSize}}) {
    std::optional<int64_t> v = o.getInteger(key);
    if (!v || *v < 0)
      fail(llvm::Twine("the pipeline manifest has no '") + key + "'");
    *field = v.value_or(0);
  }
  p.schedule = o.getString("schedule").value_or("").str();
  p.stageRanks = integers(o.getArray("stage_ranks"), "stage_ranks");
  if (int64_t(p.stageRanks.size()) != p.numStages)
    fail("the pipeline manifest's stage_ranks do not name a rank per stage");
  if (const json::Array *stages = o.getArray("stages"))
    for (const json::Value &v : *stages) {
      if (!v.getAsObject())
        fail("a pipeline stage is not an object");
      else
        p.stages.push_back(stage(*v.getAsObject()));
    }
  p.actions = actions(o.getArray("actions"), p);
  p.evalActions = actions(o.getArray("eval_actions"), p);
  int64_t lastRank =
      p.stageRanks.empty() ? 0 : *llvm::max_element(p.stageRanks);
  if (const json::Array *rings = o.getArray("send_rings"))
    for (const json::Value &v : *rings) {
      std::vector<int64_t> f = v.getAsArray()
                                   ? integers(v.getAsArray(), "send_rings")
                                   : std::vector<int64_t>();
      if (!validSendRing(f, p, lastRank)) {
        fail("a pipeline send ring is not [peer (another pipeline rank), "
             "flow (0 or 1), slots, bytes, eval slots, eval bytes], each "
             "list's bytes a multiple of 256 below 2^40 and its slots below "
             "2^16, once per peer and flow");
        break;
      }
      p.sendRings.push_back({f[0], f[1], f[2], f[3], f[4], f[5]});
    }
  return p;
}

std::vector<Manifest::PipelineAction>
Reader::actions(const json::Array *list, const Manifest::Pipeline &p) {
  std::vector<Manifest::PipelineAction> parsed;
  if (!list)
    return parsed;
  for (const json::Value &v : *list) {
    StringRef text = v.getAsString().value_or("");
    std::optional<Manifest::PipelineAction> a =
        Manifest::PipelineAction::parse(text);
    if (!a || a->stage >= p.numStages || a->microbatch < 0 ||
        a->microbatch >= p.microbatches)
      fail(llvm::Twine("pipeline action '") + text +
           "' is not <stage><F|B|I|W|RECV_F|SEND_F|RECV_B|SEND_B>"
           "<microbatch>, <stage>UNSHARD or <stage>REDUCE_GRAD within "
           "the schedule");
    else
      parsed.push_back(*a);
  }
  return parsed;
}

llvm::Expected<Manifest> titan::manifest::parseManifest(StringRef text) {
  llvm::Expected<json::Value> value = json::parse(text);
  if (!value)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "invalid manifest: " +
                                       llvm::toString(value.takeError()));
  const json::Object *o = value->getAsObject();
  if (!o)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "invalid manifest: not an object");
  // First: another version's other keys may mean other things.
  std::optional<int64_t> abi = abiVersionOf(*o);
  if (!abi)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "the manifest's abi_version is not an "
                                   "integer");
  if (*abi != kABIVersion)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   abiMismatch(*abi));
  Reader r;
  Manifest m;
  m.model = o->getString("model").value_or("").str();
  m.config = o->getString("config").value_or("").str();
  m.target = o->getString("target").value_or("cpu").str();
  m.cudaArch = o->getString("cuda_arch").value_or("").str();
  if (const json::Object *hf = o->getObject("hf_config"))
    m.hfConfig = *hf;
  m.localBatch = o->getInteger("local_batch_size").value_or(0);
  m.seqLen = o->getInteger("seq_len").value_or(0);
  m.vocab = o->getInteger("vocab_size").value_or(0);
  m.dim = o->getInteger("dim").value_or(0);
  m.flopsPerToken = o->getNumber("flops_per_token").value_or(0);
  m.accumulationSteps = o->getInteger("accumulation_steps").value_or(1);
  m.optimizerInBackward =
      o->getBoolean("optimizer_in_backward").value_or(false);
  if (const json::Array *mesh = o->getArray("mesh")) {
    if (mesh->size() != kNumAxes)
      r.fail("the mesh does not have one size per axis");
    else
      m.mesh = r.integers(mesh, "the mesh");
  }
  if (const json::Value *lb = o->get("load_balanced")) {
    const json::Array *axes = lb->getAsArray();
    if (!axes)
      r.fail("the manifest's load_balanced is not a list of mesh axis names");
    else
      for (const json::Value &axis : *axes) {
        std::optional<StringRef> name = axis.getAsString();
        std::optional<MeshAxis> a = name ? parseMeshAxis(*name) : std::nullopt;
        if (!a) {
          std::string text;
          llvm::raw_string_ostream(text) << axis;
          r.fail("the manifest's load_balanced names " + text +
                 ", which is not a mesh axis");
          break;
        }
        m.loadBalancedAxes |= mesh::axisBit(*a);
      }
  }
  for (int64_t mask :
       r.integers(o->getArray("collective_axes"), "collective_axes"))
    m.collectiveAxes.push_back(unsigned(mask));
  m.params = r.params(o->getArray("params"));
  m.allParams = o->getArray("all_params") ? r.params(o->getArray("all_params"))
                                          : m.params;
  m.arenaBytes = o->getInteger("arena_bytes").value_or(0);
  r.slots(o->getObject("slots"), m.arenaBytes, "the planned arena",
          [&](StringRef name, SlotRange range) { m.slots[name] = range; });
  m.hostArenaBytes = o->getInteger("host_arena_bytes").value_or(0);
  r.slots(o->getObject("host_slots"), m.hostArenaBytes, "the host arena",
          [&](StringRef name, SlotRange range) {
            if (m.slots.count(name))
              r.fail("slot '" + name.str() + "' is in both arenas");
            m.hostSlots[name] = range;
          });
  m.optimizerOnHost = o->getBoolean("optimizer_on_host").value_or(false);
  if (const json::Object *pipeline = o->getObject("pipeline"))
    m.pipeline = r.pipeline(*pipeline);
  if (const json::Object *eval = o->getObject("eval")) {
    m.eval = {eval->getInteger("local_batch_size").value_or(0),
              eval->getInteger("seq_len").value_or(0)};
    if (m.eval->localBatch < 1 || m.eval->seqLen < 1)
      r.fail("the eval step's local_batch_size and seq_len must be >= 1");
  }
  if (r.error)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), *r.error);
  return m;
}
