//===- AttentionKernelTest.cpp - CPU flash attention vs a plain one -------===//
//
// The CPU target's tiled attention (Attention.cpp) against the textbook
// computation written out here in f64 (the whole S x S score matrix,
// softmax, P V; the backward from the formulas of FlashAttention-2's
// appendix), at shapes that cross the tile size, with GQA; and its bits on
// one thread against several.
//
//===----------------------------------------------------------------------===//

#include "DocumentMask.h"
#include "Kernels.h"
#include "Threads.h"

#include "titan/Contract/CPUWorkspaces.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

using namespace titanrt::kernels;

namespace {

struct Shape {
  int64_t batch, seq, qHeads, kvHeads, headDim;
  int64_t q() const { return batch * seq * qHeads * headDim; }
  int64_t kv() const { return batch * seq * kvHeads * headDim; }
  int64_t rows() const { return batch * qHeads * seq; }
  double scale() const { return 1.0 / std::sqrt(double(headDim)); }
};

struct Gradients {
  std::vector<double> out, lse, dq, dk, dv;
};

/// The plain computation, in f64; with document `starts` ([B, S]) query i
/// sees keys [starts[i], i] (TorchTitan's block_causal).
Gradients reference(const Shape &s, const std::vector<double> &q,
                    const std::vector<double> &k, const std::vector<double> &v,
                    const std::vector<double> &dout,
                    const std::vector<int32_t> &starts = {}) {
  Gradients g{std::vector<double>(s.q()), std::vector<double>(s.rows()),
              std::vector<double>(s.q()), std::vector<double>(s.kv()),
              std::vector<double>(s.kv())};
  int64_t D = s.headDim, S = s.seq, group = s.qHeads / s.kvHeads;
  auto qi = [&](int64_t b, int64_t t, int64_t h, int64_t d) {
    return ((b * S + t) * s.qHeads + h) * D + d;
  };
  auto ki = [&](int64_t b, int64_t t, int64_t h, int64_t d) {
    return ((b * S + t) * s.kvHeads + h) * D + d;
  };
  std::vector<double> p(S * S), dp(S * S);
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.qHeads; ++h) {
      int64_t g0 = h / group;
      auto lo = [&](int64_t i) -> int64_t {
        return starts.empty() ? 0 : starts[b * S + i];
      };
      for (int64_t i = 0; i < S; ++i) {
        double max = -INFINITY;
        for (int64_t j = lo(i); j <= i; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < D; ++d)
            dot += q[qi(b, i, h, d)] * k[ki(b, j, g0, d)];
          p[i * S + j] = dot * s.scale();
          max = std::max(max, p[i * S + j]);
        }
        double sum = 0;
        for (int64_t j = lo(i); j <= i; ++j)
          sum += std::exp(p[i * S + j] - max);
        g.lse[(b * s.qHeads + h) * S + i] = max + std::log(sum);
        for (int64_t j = 0; j < S; ++j)
          p[i * S + j] =
              j >= lo(i) && j <= i ? std::exp(p[i * S + j] - max) / sum : 0.0;
        for (int64_t d = 0; d < D; ++d) {
          double o = 0;
          for (int64_t j = lo(i); j <= i; ++j)
            o += p[i * S + j] * v[ki(b, j, g0, d)];
          g.out[qi(b, i, h, d)] = o;
        }
      }
      for (int64_t i = 0; i < S; ++i) {
        double rowDot = 0;
        for (int64_t d = 0; d < D; ++d)
          rowDot += dout[qi(b, i, h, d)] * g.out[qi(b, i, h, d)];
        for (int64_t j = lo(i); j <= i; ++j) {
          double dpij = 0;
          for (int64_t d = 0; d < D; ++d)
            dpij += dout[qi(b, i, h, d)] * v[ki(b, j, g0, d)];
          dp[i * S + j] = p[i * S + j] * (dpij - rowDot) * s.scale();
        }
      }
      for (int64_t i = 0; i < S; ++i)
        for (int64_t j = lo(i); j <= i; ++j)
          for (int64_t d = 0; d < D; ++d) {
            g.dq[qi(b, i, h, d)] += dp[i * S + j] * k[ki(b, j, g0, d)];
            g.dk[ki(b, j, g0, d)] += dp[i * S + j] * q[qi(b, i, h, d)];
            g.dv[ki(b, j, g0, d)] += p[i * S + j] * dout[qi(b, i, h, d)];
          }
    }
  return g;
}

/// The kernels under test, in T, on `threads` OpenMP threads.
template <typename T>
std::vector<std::vector<T>>
flash(const Shape &s, const std::vector<double> &q64,
      const std::vector<double> &k64, const std::vector<double> &v64,
      const std::vector<double> &dout64, int threads,
      const std::vector<int32_t> &starts = {}) {
  std::vector<T> q(q64.begin(), q64.end()), k(k64.begin(), k64.end()),
      v(v64.begin(), v64.end()), dout(dout64.begin(), dout64.end());
  std::vector<T> out(s.q()), lse(s.rows()), dq(s.q()), dk(s.kv()), dv(s.kv());
  int64_t bytes = std::max(
      titan::cpu::attentionWorkspaceBytes(s.batch, s.qHeads, s.seq, sizeof(T)),
      titan::cpu::attentionGradWorkspaceBytes(s.batch, s.kvHeads, s.seq,
                                              sizeof(T)));
  std::vector<T> workspace(bytes / sizeof(T), T(NAN));
  int saved = titanrt::maxThreads();
  titanrt::setMaxThreads(threads);
  titanrt::DocumentStarts docs;
  if (!starts.empty())
    docs = {starts.data(), s.seq};
  attention(q.data(), k.data(), v.data(), out.data(), lse.data(), s.batch,
            s.seq, s.qHeads, s.kvHeads, s.headDim, s.scale(), workspace.data(),
            docs);
  attentionGrad(q.data(), k.data(), v.data(), out.data(), lse.data(),
                dout.data(), dq.data(), dk.data(), dv.data(), s.batch, s.seq,
                s.qHeads, s.kvHeads, s.headDim, s.scale(), workspace.data(),
                docs);
  titanrt::setMaxThreads(saved);
  return {out, lse, dq, dk, dv};
}

std::vector<double> random(int64_t n, std::mt19937_64 &rng) {
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> x(n);
  for (double &e : x)
    e = normal(rng);
  return x;
}

template <typename T>
void expectClose(const std::vector<T> &got, const std::vector<double> &want,
                 double tolerance, const char *what) {
  ASSERT_EQ(got.size(), want.size());
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i)
    worst = std::max(worst, std::fabs(double(got[i]) - want[i]) /
                                std::max(1.0, std::fabs(want[i])));
  EXPECT_LT(worst, tolerance) << what;
}

class FlashAttention : public ::testing::TestWithParam<Shape> {};

TEST_P(FlashAttention, MatchesThePlainComputation) {
  Shape s = GetParam();
  std::mt19937_64 rng(s.seq * 131 + s.qHeads);
  auto q = random(s.q(), rng), k = random(s.kv(), rng), v = random(s.kv(), rng),
       dout = random(s.q(), rng);
  Gradients want = reference(s, q, k, v, dout);
  const char *names[] = {"out", "lse", "dq", "dk", "dv"};
  std::vector<double> *wants[] = {&want.out, &want.lse, &want.dq, &want.dk,
                                  &want.dv};
  // f64: only the summation order differs. f32: the inputs' and the
  // accumulation's rounding, at the parity tests' 1e-5.
  auto got64 = flash<double>(s, q, k, v, dout, 1);
  auto got32 = flash<float>(s, q, k, v, dout, 1);
  for (int i = 0; i < 5; ++i) {
    expectClose(got64[i], *wants[i], 1e-12, names[i]);
    expectClose(got32[i], *wants[i], 1e-5 * std::sqrt(double(s.seq)), names[i]);
  }
  // Each output is summed by one thread in a fixed order.
  auto threaded = flash<float>(s, q, k, v, dout, 3);
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(threaded[i], got32[i]) << names[i] << " on 3 threads";
}

/// Packed documents: an EOS with probability 1/`every` at each position
/// (and one at position 0), starts as TorchTitan's block_causal derives
/// them.
std::vector<int32_t> packedDocuments(const Shape &s, int every,
                                     std::mt19937_64 &rng) {
  constexpr int32_t kEos = 1;
  std::uniform_int_distribution<int> draw(0, every - 1);
  std::vector<int32_t> tokens(s.batch * s.seq), starts(tokens.size());
  for (int32_t &t : tokens)
    t = draw(rng) == 0 ? kEos : 2;
  tokens[0] = kEos;
  titanrt::documentStarts(tokens.data(), s.batch, s.seq, kEos, starts.data());
  return starts;
}

// TorchTitan's block_causal mask: documents of a few positions, of about a
// tile and of several tiles, with GQA.
TEST_P(FlashAttention, DocumentMaskMatchesThePlainComputation) {
  Shape s = GetParam();
  std::mt19937_64 rng(s.seq * 17 + s.qHeads);
  auto q = random(s.q(), rng), k = random(s.kv(), rng), v = random(s.kv(), rng),
       dout = random(s.q(), rng);
  for (int every : {3, 40, 150}) {
    std::vector<int32_t> starts = packedDocuments(s, every, rng);
    Gradients want = reference(s, q, k, v, dout, starts);
    const char *names[] = {"out", "lse", "dq", "dk", "dv"};
    std::vector<double> *wants[] = {&want.out, &want.lse, &want.dq, &want.dk,
                                    &want.dv};
    auto got64 = flash<double>(s, q, k, v, dout, 1, starts);
    auto got32 = flash<float>(s, q, k, v, dout, 1, starts);
    for (int i = 0; i < 5; ++i) {
      expectClose(got64[i], *wants[i], 1e-12, names[i]);
      expectClose(got32[i], *wants[i], 1e-5 * std::sqrt(double(s.seq)),
                  names[i]);
    }
    auto threaded = flash<float>(s, q, k, v, dout, 3, starts);
    for (int i = 0; i < 5; ++i)
      EXPECT_EQ(threaded[i], got32[i]) << names[i] << " on 3 threads";
  }
}

TEST(DocumentStarts, TorchTitansBlockCausalRule) {
  // get_document_mask_mod: a position's document counts the EOS before it,
  // so an EOS ends its document and the next position starts one.
  const int32_t tokens[] = {5, 0, 7, 7, 0, 0, 3, 9, /* row 2 */ 0, 4, 4, 4};
  int32_t starts[12];
  titanrt::documentStarts(tokens, 1, 8, /*eosId=*/0, starts);
  titanrt::documentStarts(tokens + 8, 1, 4, /*eosId=*/0, starts + 8);
  const int32_t want[] = {0, 0, 2, 2, 2, 5, 6, 6, 0, 1, 1, 1};
  for (int i = 0; i < 12; ++i)
    EXPECT_EQ(starts[i], want[i]) << "position " << i;
}

constexpr int64_t B = titan::cpu::kAttentionBlock;

INSTANTIATE_TEST_SUITE_P(
    Shapes, FlashAttention,
    ::testing::Values(Shape{1, 1, 1, 1, 4}, Shape{2, 7, 4, 2, 8},
                      Shape{1, B - 1, 2, 2, 16}, Shape{1, B, 2, 1, 16},
                      Shape{2, B + 1, 4, 1, 8}, Shape{1, 3 * B + 17, 4, 2, 32},
                      Shape{1, 4 * B, 2, 2, 64},
                      // Several 512-column key tiles: whole tiles before a
                      // document start are skipped.
                      Shape{1, 1100, 2, 1, 8}),
    [](const ::testing::TestParamInfo<Shape> &info) {
      const Shape &s = info.param;
      return "b" + std::to_string(s.batch) + "s" + std::to_string(s.seq) + "h" +
             std::to_string(s.qHeads) + "kv" + std::to_string(s.kvHeads) + "d" +
             std::to_string(s.headDim);
    });

} // namespace
