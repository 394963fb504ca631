//===- Init.cpp - deterministic parameter initialization ------------------===//

#include "Init.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/xxhash.h"

#include <cmath>
#include <random>

using namespace titanrt;

namespace {

/// Normal(0, std) truncated to [lo, hi] by rejection, as
/// torch.nn.init.trunc_normal_ defines it.
void truncNormal(float *out, int64_t n, double std, double lo, double hi,
                 std::mt19937_64 &rng) {
  std::normal_distribution<double> normal(0.0, std);
  for (int64_t i = 0; i < n; ++i) {
    double v;
    do
      v = normal(rng);
    while (v < lo || v > hi);
    out[i] = float(v);
  }
}

} // namespace

void titanrt::initializeParameters(const std::vector<TensorRef> &params,
                                   int64_t dim, uint64_t seed) {
  for (const TensorRef &p : params) {
    llvm::StringRef name = p.name;
    std::mt19937_64 rng(seed ^ llvm::xxh3_64bits(name));
    if (name.ends_with("norm.weight")) {
      std::fill(p.data, p.data + p.numel(), 1.0f);
    } else if (name == "tok_embeddings.weight") {
      std::normal_distribution<double> normal(0.0, 1.0);
      for (int64_t i = 0; i < p.numel(); ++i)
        p.data[i] = float(normal(rng));
    } else if (name == "output.weight") {
      double std = 1.0 / std::sqrt(double(dim));
      truncNormal(p.data, p.numel(), std, -3 * std, 3 * std, rng);
    } else {
      // layers.<i>.<module>.weight
      int64_t layer = 0;
      name.drop_front(name.find('.') + 1)
          .take_until([](char c) { return c == '.'; })
          .getAsInteger(10, layer);
      bool depthScaled = name.contains(".wo.") || name.contains(".w2.") ||
                         name.contains(".w3.");
      double std = depthScaled ? 0.02 / std::sqrt(2.0 * (layer + 1)) : 0.02;
      truncNormal(p.data, p.numel(), std, -2.0, 2.0, rng);
    }
  }
}
