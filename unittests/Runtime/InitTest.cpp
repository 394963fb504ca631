//===- InitTest.cpp - Philox and layout-independent init ------------------===//
//
// Philox4x32-10 against Random123's published known-answer vectors (its
// tests/kat_vectors, also checked by TensorFlow's and cuRAND's test
// suites), and the init built on it: any block of a tensor equals that
// block of the whole, and each rule's draws have TorchTitan's distribution.
//
//===----------------------------------------------------------------------===//

#include "Init.h"

#include "gtest/gtest.h"

#include <cmath>
#include <vector>

using namespace titanrt;

namespace {

TEST(Philox, Random123KnownAnswers) {
  using Block = std::array<uint32_t, 4>;
  EXPECT_EQ(philox4x32({0, 0, 0, 0}, {0, 0}),
            (Block{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(philox4x32({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
                       {0xffffffff, 0xffffffff}),
            (Block{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(philox4x32({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
                       {0xa4093822, 0x299f31d0}),
            (Block{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

// A shard is computed alone: every block, bit for bit, is that block of
// the whole tensor.
TEST(Init, BlocksEqualTheWhole) {
  const int64_t n = 4099;
  std::vector<float> whole(n);
  initializeRange("layers.3.attention.wq.weight", 256, 7, 0, n, whole.data());
  for (int64_t first : {int64_t(0), int64_t(1), int64_t(1000), n - 3}) {
    int64_t count = std::min<int64_t>(517, n - first);
    std::vector<float> block(count);
    initializeRange("layers.3.attention.wq.weight", 256, 7, first, count,
                    block.data());
    for (int64_t i = 0; i < count; ++i)
      ASSERT_EQ(block[i], whole[first + i]) << "element " << first + i;
  }
}

// Other seeds and names give other values.
TEST(Init, SeedAndNameSelectTheStream) {
  float a, b, c;
  initializeRange("layers.0.attention.wq.weight", 256, 0, 5, 1, &a);
  initializeRange("layers.0.attention.wq.weight", 256, 1, 5, 1, &b);
  initializeRange("layers.0.attention.wk.weight", 256, 0, 5, 1, &c);
  EXPECT_NE(a, b);
  EXPECT_NE(a, c);
}

struct Moments {
  double mean = 0, std = 0, min = INFINITY, max = -INFINITY;
};

Moments momentsOf(const std::string &name, int64_t dim, int64_t n) {
  std::vector<float> v(n);
  initializeRange(name, dim, 0, 0, n, v.data());
  Moments m;
  for (float x : v) {
    m.mean += x;
    m.min = std::min<double>(m.min, x);
    m.max = std::max<double>(m.max, x);
  }
  m.mean /= double(n);
  for (float x : v)
    m.std += (x - m.mean) * (x - m.mean);
  m.std = std::sqrt(m.std / double(n - 1));
  return m;
}

// TorchTitan's Llama init (models/llama3/model/model.py, v0.2.0): the
// sample moments of 2^18 draws are within 5 standard errors of the rule's
// (the standard error of a std estimate is about std / sqrt(2n)).
TEST(Init, DistributionsFollowTorchTitan) {
  const int64_t n = 1 << 18;
  auto expectNormal = [&](const std::string &name, int64_t dim, double std,
                          double truncatedStd, double bound) {
    Moments m = momentsOf(name, dim, n);
    EXPECT_NEAR(m.mean, 0.0, 5 * std / std::sqrt(double(n))) << name;
    EXPECT_NEAR(m.std, truncatedStd, 5 * std / std::sqrt(2.0 * n)) << name;
    EXPECT_GE(m.min, -bound) << name;
    EXPECT_LE(m.max, bound) << name;
  };
  expectNormal("tok_embeddings.weight", 256, 1.0, 1.0, INFINITY);
  expectNormal("layers.0.attention.wq.weight", 256, 0.02, 0.02, 2.0);
  // Depth-scaled: 0.02 / sqrt(2 (layer + 1)) for layer 3.
  double deep = 0.02 / std::sqrt(8.0);
  expectNormal("layers.3.feed_forward.w2.weight", 256, deep, deep, 2.0);
  // The output projection is cut at 3 standard deviations, which narrows
  // the std to 0.98659 of the untruncated one.
  double out = 1.0 / std::sqrt(256.0);
  expectNormal("output.weight", 256, out, 0.986593 * out, 3 * out);
  Moments norm = momentsOf("layers.0.attention_norm.weight", 256, 64);
  EXPECT_EQ(norm.min, 1.0);
  EXPECT_EQ(norm.max, 1.0);
}

} // namespace
