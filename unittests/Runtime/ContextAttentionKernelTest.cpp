//===- ContextAttentionKernelTest.cpp - context parallel's attention ------===//
//
// The CPU kernels of context parallel's attention (Attention.cpp,
// ContextParallel.h) on every cp rank of TorchTitan's load-balanced layout
// and of the contiguous one (the kernels' load_balanced parameter):
// each call against a plain f64 masked attention written out here on the
// rows' global positions; the ring's partials, merged with attention_merge,
// against the all-gathered K/V's result and against titan.attention's
// kernel on the un-permuted sequence; the backward's dQ shares summed and
// its dK/dV routed back to their owners against titan.attention_grad's; and
// the bits on one thread against several.
//
//===----------------------------------------------------------------------===//

#include "ContextParallel.h"
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

using namespace titanrt;
using namespace titanrt::kernels;

namespace {

struct Case {
  int64_t degree, chunk, batch, qHeads, kvHeads, headDim;
  bool loadBalanced = true;
  /// Packed documents (TorchTitan's block_causal) with an EOS at each
  /// position with probability 1/documentEvery; 0: plain causal.
  int documentEvery = 0;
  titan::mesh::SplitLayout split() const { return {degree, loadBalanced}; }
  int64_t seq() const { return split().numChunks() * chunk; }
  int64_t local() const { return split().chunksPerRank() * chunk; }
  double scale() const { return 1.0 / std::sqrt(double(headDim)); }
};

void PrintTo(const Case &c, std::ostream *os) {
  *os << "cp " << c.degree << ", chunk " << c.chunk << ", B " << c.batch
      << ", Hq " << c.qHeads << ", Hkv " << c.kvHeads << ", D " << c.headDim
      << (c.loadBalanced ? "" : ", contiguous")
      << (c.documentEvery ? ", documents of ~" + std::to_string(c.documentEvery)
                          : "");
}

using Tensor = std::vector<double>;

/// The global positions of a buffer's rows.
std::vector<int64_t> positions(const int64_t *starts, int64_t chunks,
                               int64_t chunk) {
  std::vector<int64_t> rows;
  for (int64_t i = 0; i < chunks; ++i)
    for (int64_t t = 0; t < chunk; ++t)
      rows.push_back(starts[i] + t);
  return rows;
}

/// Rows `rows` of x, a [B, seq, width] tensor.
template <typename T>
std::vector<T> takeRows(const Tensor &x, int64_t batch, int64_t seq,
                        int64_t width, const std::vector<int64_t> &rows) {
  std::vector<T> out;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t row : rows)
      for (int64_t e = 0; e < width; ++e)
        out.push_back(T(x[(b * seq + row) * width + e]));
  return out;
}

/// x (rows `rows` of a [B, seq, width] tensor) added into `into`.
template <typename T>
void addRows(Tensor &into, int64_t batch, int64_t seq, int64_t width,
             const std::vector<int64_t> &rows, const std::vector<T> &x) {
  int64_t n = int64_t(rows.size());
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t e = 0; e < width; ++e)
        into[(b * seq + rows[i]) * width + e] += x[(b * n + i) * width + e];
}

/// Columns `rows` of a [B * H, seq] log-sum-exp.
Tensor takeLse(const Tensor &lse, int64_t seq,
               const std::vector<int64_t> &rows) {
  Tensor out;
  for (int64_t bh = 0; bh < int64_t(lse.size()) / seq; ++bh)
    for (int64_t row : rows)
      out.push_back(lse[bh * seq + row]);
  return out;
}

/// The plain f64 attention of queries at positions qPos over keys at kPos
/// (key j visible to query i iff kPos[j] <= qPos[i], and with document
/// `starts` of the whole sequence iff also kPos[j] >= its start); rows that
/// see no key get out 0 and lse -inf.
std::pair<Tensor, Tensor> masked(const Case &c, const Tensor &q,
                                 const std::vector<int64_t> &qPos,
                                 const Tensor &k, const Tensor &v,
                                 const std::vector<int64_t> &kPos,
                                 const std::vector<int32_t> &starts) {
  int64_t sq = int64_t(qPos.size()), sk = int64_t(kPos.size());
  int64_t D = c.headDim, group = c.qHeads / c.kvHeads;
  Tensor out(c.batch * sq * c.qHeads * D), lse(c.batch * c.qHeads * sq);
  std::vector<double> p(sk);
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t h = 0; h < c.qHeads; ++h)
      for (int64_t i = 0; i < sq; ++i) {
        const double *qi = &q[((b * sq + i) * c.qHeads + h) * D];
        double max = -INFINITY;
        for (int64_t j = 0; j < sk; ++j) {
          const double *kj = &k[((b * sk + j) * c.kvHeads + h / group) * D];
          double dot = 0;
          for (int64_t d = 0; d < D; ++d)
            dot += qi[d] * kj[d];
          bool visible =
              kPos[j] <= qPos[i] &&
              (starts.empty() || kPos[j] >= starts[b * c.seq() + qPos[i]]);
          p[j] = visible ? dot * c.scale() : -INFINITY;
          max = std::max(max, p[j]);
        }
        double *oi = &out[((b * sq + i) * c.qHeads + h) * D];
        double &rowLse = lse[(b * c.qHeads + h) * sq + i];
        if (max == -INFINITY) {
          rowLse = -INFINITY;
          continue;
        }
        double sum = 0;
        for (int64_t j = 0; j < sk; ++j)
          sum += std::exp(p[j] - max);
        rowLse = max + std::log(sum);
        for (int64_t j = 0; j < sk; ++j) {
          const double *vj = &v[((b * sk + j) * c.kvHeads + h / group) * D];
          double w = std::exp(p[j] - rowLse);
          for (int64_t d = 0; d < D; ++d)
            oi[d] += w * vj[d];
        }
      }
  return {out, lse};
}

Tensor random(int64_t n, std::mt19937_64 &rng) {
  std::normal_distribution<double> normal(0.0, 1.0);
  Tensor x(n);
  for (double &e : x)
    e = normal(rng);
  return x;
}

/// Relative to max(1, |want|); -inf must meet -inf.
template <typename T>
void expectClose(const std::vector<T> &got, const Tensor &want,
                 double tolerance, const std::string &what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isinf(want[i])) {
      EXPECT_EQ(double(got[i]), want[i]) << what << " at " << i;
      continue;
    }
    worst = std::max(worst, std::fabs(double(got[i]) - want[i]) /
                                std::max(1.0, std::fabs(want[i])));
  }
  EXPECT_LT(worst, tolerance) << what;
}

/// Everything one run computes, in T, for the thread-count comparison.
template <typename T> using Results = std::vector<std::vector<T>>;

/// The global inputs and titan.attention's f64 results on them.
struct Problem {
  Case c;
  Tensor q, k, v, dout;
  Tensor out, lse, dq, dk, dv;
  std::vector<int32_t> starts; ///< the whole sequence's document starts
  DocumentStarts docs;

  explicit Problem(const Case &c) : c(c) {
    std::mt19937_64 rng(c.seq() * 131 + c.qHeads * 7 + c.degree);
    int64_t qn = c.batch * c.seq() * c.qHeads * c.headDim;
    int64_t kn = c.batch * c.seq() * c.kvHeads * c.headDim;
    q = random(qn, rng), k = random(kn, rng), v = random(kn, rng);
    dout = random(qn, rng);
    if (c.documentEvery) {
      std::uniform_int_distribution<int> draw(0, c.documentEvery - 1);
      std::vector<int32_t> tokens(c.batch * c.seq());
      for (int32_t &t : tokens)
        t = draw(rng) == 0 ? 0 : 1;
      starts.resize(tokens.size());
      documentStarts(tokens.data(), c.batch, c.seq(), /*eosId=*/0,
                     starts.data());
      docs = {starts.data(), c.seq()};
    }
    out.resize(qn), lse.resize(c.batch * c.qHeads * c.seq()), dq.resize(qn);
    dk.resize(kn), dv.resize(kn);
    Tensor workspace(std::max(titan::cpu::attentionWorkspaceBytes(
                                  c.batch, c.qHeads, c.seq(), 8),
                              titan::cpu::attentionGradWorkspaceBytes(
                                  c.batch, c.kvHeads, c.seq(), 8)) /
                     8);
    attention(q.data(), k.data(), v.data(), out.data(), lse.data(), c.batch,
              c.seq(), c.qHeads, c.kvHeads, c.headDim, c.scale(),
              workspace.data(), docs);
    attentionGrad(q.data(), k.data(), v.data(), out.data(), lse.data(),
                  dout.data(), dq.data(), dk.data(), dv.data(), c.batch,
                  c.seq(), c.qHeads, c.kvHeads, c.headDim, c.scale(),
                  workspace.data(), docs);
  }
  int64_t qWidth() const { return c.qHeads * c.headDim; }
  int64_t kvWidth() const { return c.kvHeads * c.headDim; }
  std::vector<int64_t> rankRows(int64_t rank) const {
    ChunkLayout layout = contextLayout(c.split(), rank, 0, c.local());
    return positions(layout.queryStarts, layout.queryChunks, c.chunk);
  }
};

/// Scratch of the f32 or f64 kernels, NaN so a read before a write shows
/// (the compiler's plan for the load-balanced layout).
template <typename T> std::vector<T> workspace(const Case &c) {
  int64_t chunks = c.split().chunksPerRank();
  int64_t bytes =
      std::max(titan::cpu::attentionWorkspaceBytes(c.batch, c.qHeads, c.local(),
                                                   sizeof(T), chunks),
               titan::cpu::attentionGradWorkspaceBytes(
                   c.batch, c.kvHeads, c.local(), sizeof(T), chunks));
  if (c.loadBalanced)
    EXPECT_EQ(bytes, std::max(titan::cpu::contextAttentionWorkspaceBytes(
                                  c.batch, c.qHeads, c.local(), sizeof(T)),
                              titan::cpu::contextAttentionGradWorkspaceBytes(
                                  c.batch, c.kvHeads, c.local(), sizeof(T))));
  return std::vector<T>(bytes / sizeof(T), T(NAN));
}

/// Every cp rank's forward and backward, ring (every kv_shift) and
/// all-gathered (kv_shift -1), checked against `p`'s references to
/// `tolerance`, on `threads` OpenMP threads.
template <typename T>
Results<T> everyRank(const Problem &p, double tolerance, int threads) {
  const Case &c = p.c;
  int saved = titanrt::maxThreads();
  titanrt::setMaxThreads(threads);
  Results<T> results;
  std::vector<T> scratch = workspace<T>(c);
  int64_t qn = c.batch * c.local() * p.qWidth();
  int64_t lseN = c.batch * c.qHeads * c.local();
  Tensor dkRing(p.dk.size()), dvRing(p.dv.size());
  Tensor dkGathered(p.dk.size()), dvGathered(p.dv.size());
  std::vector<int64_t> everyRow;
  for (int64_t r = 0; r < c.degree; ++r)
    for (int64_t row : p.rankRows(r))
      everyRow.push_back(row);
  for (int64_t rank = 0; rank < c.degree; ++rank) {
    std::string at = "cp rank " + std::to_string(rank);
    std::vector<int64_t> rows = p.rankRows(rank);
    auto q = takeRows<T>(p.q, c.batch, c.seq(), p.qWidth(), rows);
    auto dout = takeRows<T>(p.dout, c.batch, c.seq(), p.qWidth(), rows);
    Tensor q64 = takeRows<double>(p.q, c.batch, c.seq(), p.qWidth(), rows);
    // One call per K/V buffer: the ring's steps, then the gathered one.
    auto call = [&](int64_t shift, const std::vector<int64_t> &kvRows) {
      ChunkLayout layout = contextLayout(c.split(), rank, shift, c.local());
      EXPECT_EQ(positions(layout.keyStarts, layout.keyChunks, c.chunk), kvRows);
      auto k = takeRows<T>(p.k, c.batch, c.seq(), p.kvWidth(), kvRows);
      auto v = takeRows<T>(p.v, c.batch, c.seq(), p.kvWidth(), kvRows);
      std::vector<T> out(qn), lse(lseN);
      contextAttention(q.data(), k.data(), v.data(), out.data(), lse.data(),
                       c.batch, c.qHeads, c.kvHeads, c.headDim, layout,
                       c.scale(), scratch.data(), p.docs);
      auto [want, wantLse] =
          masked(c, q64, rows,
                 takeRows<double>(p.k, c.batch, c.seq(), p.kvWidth(), kvRows),
                 takeRows<double>(p.v, c.batch, c.seq(), p.kvWidth(), kvRows),
                 kvRows, p.starts);
      std::string what = at + " kv_shift " + std::to_string(shift);
      expectClose(out, want, tolerance, what + " out");
      expectClose(lse, wantLse, tolerance, what + " lse");
      return std::make_pair(out, lse);
    };
    auto grad = [&](int64_t shift, const std::vector<int64_t> &kvRows,
                    const std::vector<T> &out, const std::vector<T> &lse,
                    Tensor &dq, Tensor &dk, Tensor &dv) {
      ChunkLayout layout = contextLayout(c.split(), rank, shift, c.local());
      auto k = takeRows<T>(p.k, c.batch, c.seq(), p.kvWidth(), kvRows);
      auto v = takeRows<T>(p.v, c.batch, c.seq(), p.kvWidth(), kvRows);
      std::vector<T> dqPart(qn), dkPart(k.size()), dvPart(v.size());
      contextAttentionGrad(
          q.data(), k.data(), v.data(), out.data(), lse.data(), dout.data(),
          dqPart.data(), dkPart.data(), dvPart.data(), c.batch, c.qHeads,
          c.kvHeads, c.headDim, layout, c.scale(), scratch.data(), p.docs);
      for (int64_t i = 0; i < qn; ++i)
        dq[i] += double(dqPart[i]);
      addRows(dk, c.batch, c.seq(), p.kvWidth(), kvRows, dkPart);
      addRows(dv, c.batch, c.seq(), p.kvWidth(), kvRows, dvPart);
      results.insert(results.end(), {dqPart, dkPart, dvPart});
    };
    // The ring: step s holds the buffer of cp rank (rank - s) mod n, its
    // partial merged into the running one.
    std::vector<T> out, lse;
    for (int64_t shift = 0; shift < c.degree; ++shift) {
      auto [part, partLse] =
          call(shift, p.rankRows((rank - shift + c.degree) % c.degree));
      results.insert(results.end(), {part, partLse});
      if (shift == 0) {
        out = part, lse = partLse;
        continue;
      }
      attentionMerge(out.data(), lse.data(), part.data(), partLse.data(),
                     out.data(), lse.data(), c.batch, c.local(), c.qHeads,
                     c.headDim);
    }
    auto [gathered, gatheredLse] = call(-1, everyRow);
    results.insert(results.end(), {out, lse, gathered, gatheredLse});
    Tensor want = takeRows<double>(p.out, c.batch, c.seq(), p.qWidth(), rows);
    Tensor wantLse = takeLse(p.lse, c.seq(), rows);
    expectClose(out, want, tolerance, at + " merged ring out");
    expectClose(lse, wantLse, tolerance, at + " merged ring lse");
    expectClose(out, Tensor(gathered.begin(), gathered.end()), tolerance,
                at + " merged ring out vs all-gathered");
    expectClose(gathered, want, tolerance, at + " all-gathered out");
    expectClose(gatheredLse, wantLse, tolerance, at + " all-gathered lse");

    // The backward from the final out and lse.
    Tensor dqRing(qn), dqGathered(qn);
    for (int64_t shift = 0; shift < c.degree; ++shift)
      grad(shift, p.rankRows((rank - shift + c.degree) % c.degree), out, lse,
           dqRing, dkRing, dvRing);
    grad(-1, everyRow, out, lse, dqGathered, dkGathered, dvGathered);
    Tensor wantDq = takeRows<double>(p.dq, c.batch, c.seq(), p.qWidth(), rows);
    expectClose(dqRing, wantDq, tolerance, at + " summed ring dq");
    expectClose(dqGathered, wantDq, tolerance, at + " all-gathered dq");
  }
  expectClose(dkRing, p.dk, tolerance, "ring dk at its owners");
  expectClose(dvRing, p.dv, tolerance, "ring dv at its owners");
  expectClose(dkGathered, p.dk, tolerance, "all-gathered dk at its owners");
  expectClose(dvGathered, p.dv, tolerance, "all-gathered dv at its owners");
  titanrt::setMaxThreads(saved);
  return results;
}

class ContextAttention : public ::testing::TestWithParam<Case> {};

TEST_P(ContextAttention, MatchesTheSingleRankAttention) {
  Problem p(GetParam());
  everyRank<double>(p, 1e-12, 1);
  Results<float> one =
      everyRank<float>(p, 1e-5 * std::sqrt(double(p.c.seq())), 1);
  // Each output is summed by one thread in a fixed order.
  Results<float> three =
      everyRank<float>(p, 1e-5 * std::sqrt(double(p.c.seq())), 3);
  ASSERT_EQ(one.size(), three.size());
  for (size_t i = 0; i < one.size(); ++i)
    EXPECT_EQ(one[i], three[i]) << "result " << i << " on 3 threads";
}

constexpr int64_t B = titan::cpu::kAttentionBlock;
constexpr int64_t C = titan::cpu::kAttentionKeyChunk;

// Chunks under a query block, across one, and across a key chunk; GQA and
// plain heads.
INSTANTIATE_TEST_SUITE_P(
    Layouts, ContextAttention,
    ::testing::Values(Case{1, B + 16, 2, 4, 2, 8}, Case{1, 5, 1, 2, 2, 4},
                      Case{2, B + 16, 1, 4, 2, 16}, Case{2, 24, 2, 2, 2, 8},
                      Case{2, C + 88, 1, 1, 1, 8}, Case{4, 24, 1, 4, 2, 8},
                      Case{4, B + 3, 1, 2, 2, 8},
                      // The contiguous layout: one chunk per rank.
                      Case{2, 24, 2, 2, 2, 8, false},
                      Case{3, B + 16, 1, 4, 2, 8, false},
                      // TorchTitan's block_causal: documents shorter than
                      // a chunk, about one, across several ranks' chunks
                      // and across a key tile.
                      Case{2, 24, 2, 2, 2, 8, true, 5},
                      Case{4, B + 3, 1, 2, 2, 8, true, 60},
                      Case{2, C + 88, 1, 1, 1, 8, true, 300},
                      Case{3, B + 16, 1, 4, 2, 8, false, 40}),
    [](const ::testing::TestParamInfo<Case> &info) {
      const Case &c = info.param;
      return "cp" + std::to_string(c.degree) + "c" + std::to_string(c.chunk) +
             "b" + std::to_string(c.batch) + "h" + std::to_string(c.qHeads) +
             "kv" + std::to_string(c.kvHeads) + "d" +
             std::to_string(c.headDim) + (c.loadBalanced ? "" : "contiguous") +
             (c.documentEvery ? "docs" + std::to_string(c.documentEvery) : "");
    });

/// Rows that saw no key on either side stay (0, -inf), without NaN, in
/// place; one side's -inf leaves the other's partial as it is.
TEST(AttentionMerge, EmptySides) {
  // B 1, S 3, H 1, D 2: row 0 empty on both sides, row 1 on the other's,
  // row 2 on neither.
  std::vector<double> out = {0, 0, 1, 2, 3, 4}, lse = {-INFINITY, 0.5, 0.25};
  std::vector<double> other = {0, 0, 0, 0, 5, 6},
                      otherLse = {-INFINITY, -INFINITY, 0.75};
  attentionMerge(out.data(), lse.data(), other.data(), otherLse.data(),
                 out.data(), lse.data(), 1, 3, 1, 2);
  double merged = std::log(std::exp(0.25) + std::exp(0.75));
  double wa = std::exp(0.25 - merged), wo = std::exp(0.75 - merged);
  EXPECT_EQ(out[0], 0.0);
  EXPECT_EQ(out[1], 0.0);
  EXPECT_EQ(lse[0], -INFINITY);
  EXPECT_EQ(out[2], 1.0);
  EXPECT_EQ(out[3], 2.0);
  EXPECT_EQ(lse[1], 0.5);
  EXPECT_NEAR(out[4], wa * 3 + wo * 5, 1e-15);
  EXPECT_NEAR(out[5], wa * 4 + wo * 6, 1e-15);
  EXPECT_NEAR(lse[2], merged, 1e-15);
}

} // namespace
