//===- Manifest.cpp - what titan-compile says about an executable ---------===//

#include "Manifest.h"
#include "Error.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/JSON.h"

using namespace titanrt;
using llvm::StringRef;

const char *titanrt::meshAxisName(MeshAxis axis) {
  static const char *names[] = {"pp", "dp_replicate", "dp_shard", "cp", "tp"};
  return names[axis];
}

int64_t titanrt::numel(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

int64_t Manifest::worldSize() const { return numel(mesh); }

static MeshAxis meshAxis(StringRef axis) {
  for (unsigned i = 0; i < kNumAxes; ++i)
    if (axis == meshAxisName(MeshAxis(i)))
      return MeshAxis(i);
  fatal("corrupt executable: unknown mesh axis '" + axis.str() + "'");
}

/// An {name: [offset, bytes]} table that must fit in `bytes`.
static void parseSlots(const llvm::json::Object &table, int64_t bytes,
                       const char *where,
                       llvm::StringMap<std::pair<int64_t, int64_t>> &slots) {
  for (const auto &[name, range] : table) {
    const llvm::json::Array *r = range.getAsArray();
    if (!r || r->size() != 2 || !(*r)[0].getAsInteger() ||
        !(*r)[1].getAsInteger() || *(*r)[0].getAsInteger() < 0 ||
        *(*r)[0].getAsInteger() + *(*r)[1].getAsInteger() > bytes)
      fatal("corrupt executable: slot '" + name.str() + "' lies outside " +
            where);
    slots[name] = {*(*r)[0].getAsInteger(), *(*r)[1].getAsInteger()};
  }
}

static Manifest::Pipeline parsePipeline(const llvm::json::Object &o) {
  auto integer = [&](const llvm::json::Object &from, StringRef key) {
    std::optional<int64_t> v = from.getInteger(key);
    if (!v || *v < 0)
      fatal("corrupt executable: the pipeline manifest has no '" + key.str() +
            "'");
    return *v;
  };
  Manifest::Pipeline p;
  p.rank = integer(o, "rank");
  p.numStages = integer(o, "num_stages");
  p.microbatches = integer(o, "microbatches");
  p.microbatchSize = integer(o, "microbatch_size");
  p.schedule = o.getString("schedule").value_or("").str();
  if (const llvm::json::Array *ranks = o.getArray("stage_ranks"))
    for (const llvm::json::Value &r : *ranks)
      p.stageRanks.push_back(r.getAsInteger().value_or(-1));
  if (int64_t(p.stageRanks.size()) != p.numStages)
    fatal("corrupt executable: the pipeline manifest's stage_ranks do not "
          "name a rank per stage");
  if (const llvm::json::Array *stages = o.getArray("stages"))
    for (const llvm::json::Value &v : *stages) {
      const llvm::json::Object *so = v.getAsObject();
      if (!so)
        fatal("corrupt executable: a pipeline stage is not an object");
      Manifest::PipelineStage s;
      s.stage = integer(*so, "stage");
      s.unshard = so->getString("unshard").value_or("").str();
      s.reduceGrad = so->getString("reduce_grad").value_or("").str();
      s.forward = so->getString("forward").value_or("").str();
      s.backward = so->getString("backward").value_or("").str();
      s.backwardInput = so->getString("backward_input").value_or("").str();
      s.backwardWeight = so->getString("backward_weight").value_or("").str();
      if (s.unshard.empty() || s.reduceGrad.empty() || s.forward.empty() ||
          (s.backward.empty() &&
           (s.backwardInput.empty() || s.backwardWeight.empty())))
        fatal("corrupt executable: pipeline stage " + std::to_string(s.stage) +
              " has no forward and backward functions");
      s.frameBytes = integer(*so, "frame_bytes");
      s.frames = integer(*so, "frames");
      if (const llvm::json::Object *slots = so->getObject("frame_slots"))
        parseSlots(*slots, s.frameBytes, "its pipeline frame", s.frameSlots);
      p.stages.push_back(std::move(s));
    }
  // Actions in TorchTitan's lowered notation:
  // <stage><F|B|I|W|RECV_F|SEND_F|RECV_B|SEND_B><microbatch>.
  if (const llvm::json::Array *actions = o.getArray("actions"))
    for (const llvm::json::Value &v : *actions) {
      StringRef text = v.getAsString().value_or("");
      size_t at = text.find_first_not_of("0123456789");
      Manifest::PipelineAction a{'?', -1, -1};
      if (at != StringRef::npos && at > 0) {
        StringRef kind = text.substr(at).take_while(
            [](char c) { return c < '0' || c > '9'; });
        a.kind = llvm::StringSwitch<char>(kind)
                     .Case("F", 'F')
                     .Case("B", 'B')
                     .Case("I", 'I')
                     .Case("W", 'W')
                     .Case("RECV_F", 'f')
                     .Case("SEND_F", 'g')
                     .Case("RECV_B", 'b')
                     .Case("SEND_B", 'c')
                     .Case("UNSHARD", 'U')
                     .Case("REDUCE_GRAD", 'G')
                     .Default('?');
        StringRef mb = text.substr(at + kind.size());
        if ((a.kind == 'U' || a.kind == 'G') && mb.empty())
          mb = "0"; // UNSHARD and REDUCE_GRAD have no microbatch
        if (a.kind == '?' || text.substr(0, at).getAsInteger(10, a.stage) ||
            mb.getAsInteger(10, a.microbatch))
          a.stage = -1;
      }
      if (a.stage < 0 || a.stage >= p.numStages || a.microbatch < 0 ||
          a.microbatch >= p.microbatches)
        fatal("corrupt executable: pipeline action '" + text.str() +
              "' is not <stage><F|B|I|W|RECV_F|SEND_F|RECV_B|SEND_B>"
              "<microbatch>, <stage>UNSHARD or <stage>REDUCE_GRAD within the "
              "schedule");
      p.actions.push_back(a);
    }
  return p;
}

static std::vector<Manifest::Param> parseParams(const llvm::json::Array *list) {
  if (!list)
    fatal("corrupt executable: the manifest has no parameter list");
  std::vector<Manifest::Param> params;
  for (const llvm::json::Value &p : *list) {
    const llvm::json::Object &po = *p.getAsObject();
    Manifest::Param param;
    param.name = po.getString("name")->str();
    for (const llvm::json::Value &d : *po.getArray("shape"))
      param.shape.push_back(*d.getAsInteger());
    param.localShape = param.shape;
    if (const llvm::json::Array *local = po.getArray("local_shape")) {
      param.localShape.clear();
      for (const llvm::json::Value &d : *local)
        param.localShape.push_back(*d.getAsInteger());
    }
    param.dimAxes.resize(param.shape.size());
    if (const llvm::json::Array *dims = po.getArray("sharding"))
      for (auto [d, axes] : llvm::enumerate(*dims))
        for (const llvm::json::Value &axis : *axes.getAsArray()) {
          if (d >= param.shape.size())
            fatal("corrupt executable: sharding of '" + param.name +
                  "' has more dimensions than its shape");
          MeshAxis a = meshAxis(*axis.getAsString());
          param.dimAxes[d].push_back(a);
          param.shardMask |= 1u << a;
        }
    param.pipelineRank = po.getInteger("pipeline_rank").value_or(-1);
    params.push_back(std::move(param));
  }
  return params;
}

Manifest titanrt::parseManifest(const char *text) {
  llvm::Expected<llvm::json::Value> json = llvm::json::parse(text);
  if (!json)
    fatal("corrupt executable: invalid manifest: " +
          llvm::toString(json.takeError()));
  const llvm::json::Object &o = *json->getAsObject();
  Manifest m;
  m.model = o.getString("model").value_or("").str();
  m.config = o.getString("config").value_or("").str();
  m.localBatch = o.getInteger("local_batch_size").value_or(0);
  m.seqLen = o.getInteger("seq_len").value_or(0);
  m.vocab = o.getInteger("vocab_size").value_or(0);
  m.dim = o.getInteger("dim").value_or(0);
  m.flopsPerToken = o.getNumber("flops_per_token").value_or(0);
  m.accumulationSteps = o.getInteger("accumulation_steps").value_or(1);
  m.target = o.getString("target").value_or("cpu").str();
  m.cudaArch = o.getString("cuda_arch").value_or("").str();
  if (const llvm::json::Array *groups = o.getArray("collective_axes"))
    for (const llvm::json::Value &g : *groups)
      if (std::optional<int64_t> mask = g.getAsInteger())
        m.collectiveAxes.push_back(unsigned(*mask));
  if (const llvm::json::Array *mesh = o.getArray("mesh"))
    for (auto [i, size] : llvm::enumerate(*mesh))
      m.mesh[i] = *size.getAsInteger();
  m.params = parseParams(o.getArray("params"));
  m.allParams = o.getArray("all_params") ? parseParams(o.getArray("all_params"))
                                         : m.params;
  m.arenaBytes = o.getInteger("arena_bytes").value_or(0);
  if (const llvm::json::Object *slots = o.getObject("slots"))
    parseSlots(*slots, m.arenaBytes, "the planned arena", m.slots);
  if (const llvm::json::Object *pipeline = o.getObject("pipeline"))
    m.pipeline = parsePipeline(*pipeline);
  return m;
}
