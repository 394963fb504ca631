//===- GradientCheckTest.cpp - adjoint kernels vs finite differences ------===//
//
// Every adjoint rule of titan-autodiff ends in a gradient kernel; each is
// checked here in float64 against central differences of its forward kernel,
// for the scalar objective L = sum(forward(x) * R) with random R.
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"

#include "titan/Contract/CPUWorkspaces.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

using namespace titanrt::kernels;

namespace {

using Vec = std::vector<double>;

Vec randomVec(size_t n, std::mt19937_64 &rng, double scale = 1.0) {
  std::normal_distribution<double> normal(0.0, scale);
  Vec v(n);
  for (double &x : v)
    x = normal(rng);
  return v;
}

double dot(const Vec &a, const Vec &b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i)
    s += a[i] * b[i];
  return s;
}

/// Checks `analytic` == dL/dx by central differences, where `objective`
/// evaluates L with the current contents of `x`.
void expectGradient(Vec &x, const Vec &analytic,
                    const std::function<double()> &objective,
                    const char *what) {
  const double h = 1e-6;
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    double saved = x[i];
    x[i] = saved + h;
    double up = objective();
    x[i] = saved - h;
    double down = objective();
    x[i] = saved;
    double numeric = (up - down) / (2 * h);
    double err =
        std::abs(numeric - analytic[i]) / std::max(1.0, std::abs(numeric));
    worst = std::max(worst, err);
  }
  EXPECT_LT(worst, 1e-6) << what;
}

struct GradientCheck : ::testing::Test {
  std::mt19937_64 rng{1234};
};

TEST_F(GradientCheck, Linear) {
  int64_t m = 6, k = 5, n = 4;
  Vec x = randomVec(m * k, rng), w = randomVec(n * k, rng),
      r = randomVec(m * n, rng), y(m * n), dx(m * k), dw(n * k);
  auto loss = [&] {
    linear(x.data(), w.data(), y.data(), m, k, n);
    return dot(y, r);
  };
  linearGradInput(r.data(), w.data(), dx.data(), m, k, n);
  linearGradWeight(r.data(), x.data(), dw.data(), m, k, n);
  expectGradient(x, dx, loss, "input");
  expectGradient(w, dw, loss, "weight");
}

/// Attention's gradient by central differences, at one shape.
void checkAttention(std::mt19937_64 &rng, int64_t batch, int64_t seq,
                    int64_t qHeads, int64_t kvHeads, int64_t headDim) {
  SCOPED_TRACE("seq " + std::to_string(seq));
  double scale = 1.0 / std::sqrt(double(headDim));
  size_t nq = batch * seq * qHeads * headDim,
         nk = batch * seq * kvHeads * headDim;
  Vec q = randomVec(nq, rng), k = randomVec(nk, rng), v = randomVec(nk, rng),
      r = randomVec(nq, rng), out(nq), dq(nq), dk(nk), dv(nk),
      lse(batch * qHeads * seq);
  // The workspace the kernel contract asks for, filled with garbage: the
  // kernels must not read what they did not write.
  Vec workspace(
      std::max(
          titan::cpu::attentionWorkspaceBytes(batch, qHeads, seq, 8),
          titan::cpu::attentionGradWorkspaceBytes(batch, kvHeads, seq, 8)) /
          8,
      std::nan(""));
  auto loss = [&] {
    attention(q.data(), k.data(), v.data(), out.data(), lse.data(), batch, seq,
              qHeads, kvHeads, headDim, scale, workspace.data());
    return dot(out, r);
  };
  // The backward takes the forward's output and log-sum-exp at this point.
  loss();
  Vec out0 = out, lse0 = lse;
  attentionGrad(q.data(), k.data(), v.data(), out0.data(), lse0.data(),
                r.data(), dq.data(), dk.data(), dv.data(), batch, seq, qHeads,
                kvHeads, headDim, scale, workspace.data());
  expectGradient(q, dq, loss, "query");
  expectGradient(k, dk, loss, "key");
  expectGradient(v, dv, loss, "value");
}

TEST_F(GradientCheck, CausalGroupedQueryAttention) {
  checkAttention(rng, 2, 5, 4, 2, 3);
  // Three query and key blocks, the last one partial: the online softmax's
  // rescaling and the backward's off-diagonal tiles.
  checkAttention(rng, 1, 2 * titan::cpu::kAttentionBlock + 3, 2, 1, 2);
}

TEST_F(GradientCheck, Embedding) {
  int64_t vocab = 6, dim = 3, n = 5;
  std::vector<int32_t> tokens = {1, 4, 1, 0, 5};
  Vec w = randomVec(vocab * dim, rng), r = randomVec(n * dim, rng), y(n * dim),
      dw(vocab * dim);
  auto loss = [&] {
    embedding(w.data(), tokens.data(), y.data(), n, vocab, dim);
    return dot(y, r);
  };
  embeddingGrad(r.data(), tokens.data(), dw.data(), n, vocab, dim);
  expectGradient(w, dw, loss, "weight");
}

// The vocabulary-parallel embedding: the shards' lookups sum to the whole
// lookup and their gradients are the whole gradient's rows.
TEST_F(GradientCheck, VocabularyParallelEmbedding) {
  const int64_t vocab = 6, dim = 3, n = 5, local = 3;
  std::vector<int32_t> tokens = {1, 4, 1, 0, 5};
  Vec w = randomVec(vocab * dim, rng), r = randomVec(n * dim, rng),
      whole(n * dim), sum(n * dim, 0.0), y(n * dim), dw(vocab * dim),
      dpart(local * dim);
  embedding(w.data(), tokens.data(), whole.data(), n, vocab, dim);
  embeddingGrad(r.data(), tokens.data(), dw.data(), n, vocab, dim);
  for (int32_t start : {0, 3}) {
    embedding(w.data() + start * dim, tokens.data(), y.data(), n, local, dim,
              &start);
    for (int64_t i = 0; i < n * dim; ++i)
      sum[i] += y[i];
    embeddingGrad(r.data(), tokens.data(), dpart.data(), n, local, dim, &start);
    for (int64_t i = 0; i < local * dim; ++i)
      EXPECT_EQ(dpart[i], dw[start * dim + i]);
  }
  for (int64_t i = 0; i < n * dim; ++i)
    EXPECT_EQ(sum[i], whole[i]);
}

// TorchTitan v0.2.0's schedule (components/lr_scheduler.py): for 10 steps,
// warmup 2, decay_ratio 0.8 there are 8 decay steps and 10 + 1 - 2 - 8 = 1
// stable step (the "virtual last step"). The factors below were worked out by
// hand from that definition, not from the kernel.
TEST(LRSchedule, TorchTitanV020Factors) {
  // Per decay type (0 linear, 1 sqrt, 2 cosine): warmup 1/2, then 1 for the
  // last warmup step and the stable step, then decay step k = 1..7 of 8.
  const double factors[3][10] = {
      // linear: 1 - k/8
      {1.0 / 2, 1.0, 1.0, 7.0 / 8, 6.0 / 8, 5.0 / 8, 4.0 / 8, 3.0 / 8, 2.0 / 8,
       1.0 / 8},
      // sqrt: 1 - sqrt(k/8)
      {0.5, 1.0, 1.0, 0.64644660940672627, 0.5, 0.38762756430420553,
       0.29289321881345254, 0.20943058495790523, 0.13397459621556140,
       0.064585653306514670},
      // cosine: (1 + cos(pi k/8)) / 2
      {0.5, 1.0, 1.0, 0.96193976625564337, 0.85355339059327373,
       0.69134171618254492, 0.5, 0.30865828381745508, 0.14644660940672627,
       0.038060233744356631}};
  for (int type = 0; type < 3; ++type)
    for (int s = 0; s < 10; ++s)
      EXPECT_NEAR(lrSchedule(s, 10, 1.0, 2, 0.8, type, 0.0), factors[type][s],
                  1e-15)
          << "decay type " << type << ", step " << s;
  // A floor scales the decay: min + (1 - min) * adjustment; lr multiplies.
  EXPECT_DOUBLE_EQ(lrSchedule(9, 10, 2.0, 2, 0.8, 0, 0.2),
                   2.0 * (0.2 + 0.8 * (1.0 / 8)));
}

TEST(LRSchedule, Clamping) {
  // Warmup longer than the run is cut to the run: 4 steps of warmup 4.
  EXPECT_DOUBLE_EQ(lrSchedule(0, 4, 1.0, 10, 0.5, 0, 0.0), 1.0 / 4);
  EXPECT_DOUBLE_EQ(lrSchedule(3, 4, 1.0, 10, 0.5, 0, 0.0), 1.0);
  // warmup 3 + decay round(10 * 0.9) = 9 > 10: decay becomes 7, stable 1.
  EXPECT_DOUBLE_EQ(lrSchedule(4, 10, 1.0, 3, 0.9, 0, 0.0), 6.0 / 7);
  EXPECT_DOUBLE_EQ(lrSchedule(9, 10, 1.0, 3, 0.9, 0, 0.0), 1.0 / 7);
  // No ratio: decay = steps - warmup = 8, stable 1 (the virtual step).
  EXPECT_DOUBLE_EQ(lrSchedule(2, 10, 1.0, 2, -1.0, 0, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(lrSchedule(3, 10, 1.0, 2, -1.0, 0, 0.0), 7.0 / 8);
  // round() is half-to-even as in Python: round(10 * 0.25) = 2, stable 8
  // (half-up would give decay 3 and 1/3 at the last step).
  EXPECT_DOUBLE_EQ(lrSchedule(8, 10, 1.0, 1, 0.25, 0, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(lrSchedule(9, 10, 1.0, 1, 0.25, 0, 0.0), 1.0 / 2);
  // No warmup: the first step runs at the full rate.
  EXPECT_DOUBLE_EQ(lrSchedule(0, 10, 1.0, 0, 0.5, 0, 0.0), 1.0);
}

} // namespace
