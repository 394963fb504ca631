//===- Init.cpp - deterministic parameter initialization ------------------===//

#include "Init.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/xxhash.h"

#include <algorithm>
#include <cmath>

using namespace titanrt;

std::array<uint32_t, 4> titanrt::philox4x32(std::array<uint32_t, 4> c,
                                            std::array<uint32_t, 2> k) {
  constexpr uint64_t kM0 = 0xD2511F53, kM1 = 0xCD9E8D57;
  constexpr uint32_t kW0 = 0x9E3779B9, kW1 = 0xBB67AE85;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k[0] += kW0;
      k[1] += kW1;
    }
    uint64_t p0 = kM0 * c[0], p1 = kM1 * c[2];
    c = {uint32_t(p1 >> 32) ^ c[1] ^ k[0], uint32_t(p1),
         uint32_t(p0 >> 32) ^ c[3] ^ k[1], uint32_t(p0)};
  }
  return c;
}

namespace {

/// How a parameter is drawn: N(0, std) truncated to [lo, hi], or constant.
struct InitRule {
  bool constant = false;
  double value = 0, std = 1, lo = -INFINITY, hi = INFINITY;
};

InitRule ruleFor(llvm::StringRef name, int64_t dim) {
  InitRule r;
  if (name.ends_with("norm.weight")) {
    r.constant = true;
    r.value = 1;
  } else if (name == "tok_embeddings.weight") {
    r.std = 1;
  } else if (name == "output.weight") {
    r.std = 1.0 / std::sqrt(double(dim));
    r.lo = -3 * r.std;
    r.hi = 3 * r.std;
  } else {
    // layers.<i>.<module>.weight
    int64_t layer = 0;
    name.drop_front(name.find('.') + 1)
        .take_until([](char c) { return c == '.'; })
        .getAsInteger(10, layer);
    bool depthScaled =
        name.contains(".wo.") || name.contains(".w2.") || name.contains(".w3.");
    r.std = depthScaled ? 0.02 / std::sqrt(2.0 * double(layer + 1)) : 0.02;
    // Absolute bounds, as TorchTitan's trunc_normal_(a=-2, b=2).
    r.lo = -2.0;
    r.hi = 2.0;
  }
  return r;
}

/// A standard normal from one Philox block (Box-Muller on two 53-bit
/// uniforms; u1 in (0, 1] so the logarithm is finite).
double standardNormal(const std::array<uint32_t, 4> &w) {
  constexpr double kTwoPow53 = 9007199254740992.0;
  uint64_t a = (uint64_t(w[1]) << 32 | w[0]) >> 11;
  uint64_t b = (uint64_t(w[3]) << 32 | w[2]) >> 11;
  double u1 = (double(a) + 1.0) / kTwoPow53, u2 = double(b) / kTwoPow53;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

} // namespace

void titanrt::initializeRange(const std::string &name, int64_t dim,
                              uint64_t seed, int64_t first, int64_t count,
                              float *out) {
  InitRule rule = ruleFor(name, dim);
  if (rule.constant) {
    std::fill(out, out + count, float(rule.value));
    return;
  }
  uint64_t key = seed ^ llvm::xxh3_64bits(name);
  std::array<uint32_t, 2> k = {uint32_t(key), uint32_t(key >> 32)};
  for (int64_t i = 0; i < count; ++i) {
    uint64_t index = uint64_t(first + i);
    double v = 0;
    // Rejection (torch.nn.init.trunc_normal_'s distribution); each attempt
    // has its own counter. The bounds here are at least 2 standard
    // deviations, so 64 attempts all fail with probability below 1e-100.
    for (uint32_t attempt = 0; attempt < 64; ++attempt) {
      v = rule.std *
          standardNormal(philox4x32(
              {uint32_t(index), uint32_t(index >> 32), attempt, 0}, k));
      if (v >= rule.lo && v <= rule.hi)
        break;
    }
    out[i] = float(std::clamp(v, rule.lo, rule.hi));
  }
}
