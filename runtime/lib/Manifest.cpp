//===- Manifest.cpp - what titan-compile says about an executable ---------===//

#include "Manifest.h"
#include "Error.h"

#include "llvm/ADT/STLExtras.h"
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
  for (const llvm::json::Value &p : *o.getArray("params")) {
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
    m.params.push_back(std::move(param));
  }
  m.arenaBytes = o.getInteger("arena_bytes").value_or(0);
  if (const llvm::json::Object *slots = o.getObject("slots"))
    for (const auto &[name, range] : *slots) {
      const llvm::json::Array *r = range.getAsArray();
      if (!r || r->size() != 2 || !(*r)[0].getAsInteger() ||
          !(*r)[1].getAsInteger() ||
          *(*r)[0].getAsInteger() + *(*r)[1].getAsInteger() > m.arenaBytes)
        fatal("corrupt executable: slot '" + name.str() +
              "' lies outside the planned arena");
      m.slots[name] = {*(*r)[0].getAsInteger(), *(*r)[1].getAsInteger()};
    }
  return m;
}
