//===- RuntimeModel.cpp - the model the checkpoint fuzz targets read ------===//

#include "RuntimeModel.h"

const titan::manifest::Manifest &titan::fuzz::runtimeModel() {
  static const manifest::Manifest model = [] {
    manifest::Manifest m;
    const std::pair<const char *, std::vector<int64_t>> params[] = {
        {"tok_embeddings.weight", {16, 8}},
        {"layers.0.attention_norm.weight", {8}},
        {"layers.0.attention.wq.weight", {8, 8}},
        {"layers.0.attention.wk.weight", {8, 8}},
        {"layers.0.attention.wv.weight", {8, 8}},
        {"layers.0.attention.wo.weight", {8, 8}},
        {"layers.0.ffn_norm.weight", {8}},
        {"layers.0.feed_forward.w1.weight", {16, 8}},
        {"layers.0.feed_forward.w2.weight", {8, 16}},
        {"layers.0.feed_forward.w3.weight", {16, 8}},
        {"norm.weight", {8}},
        {"output.weight", {16, 8}}};
    for (const auto &[name, shape] : params) {
      manifest::Manifest::Param p;
      p.name = name;
      p.shape = p.localShape = shape;
      p.dimAxes.resize(shape.size());
      m.params.push_back(p);
    }
    m.allParams = m.params;
    return m;
  }();
  return model;
}
