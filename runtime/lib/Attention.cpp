//===- Attention.cpp - causal flash attention on the CPU ------------------===//
//
// FlashAttention-2's algorithm on CPU threads. Blocks of 64 query rows meet
// chunks of up to 512 key columns (titan/Contract/CPUWorkspaces.h):
// each score tile is one GEMM into the thread's slot of the workspace, the
// softmax is online (running max and sum per query row, the output
// rescaled as the max grows), columns past a query block's last row are
// never computed, and K/V are read in place by every query head of their
// group (GQA without copies). The forward keeps each row's log-sum-exp;
// the backward recomputes P from it (no second normalization) and takes
// rowsum(dO * O) from the forward's output, the contract cuDNN's kernels
// share on the CUDA target.
//
// Threads: the forward over (batch, query head, query block), the backward
// over (batch, KV head), whose task owns that head's dK and dV and its
// group's dQ. Every output is summed by one thread in a fixed order, so the
// bits do not depend on the thread count.
//
// Context parallel's attention (ContextParallel.h) is the same loops over
// the pairs of a query chunk and a key chunk: pairs of the same positions
// are the causal diagonal, pairs whose keys all come first need no mask,
// and pairs whose keys all come later are never visited. titan.attention
// is the layout of one chunk. attention_merge joins two partials of the
// same queries through their log-sum-exps. With document starts
// (DocumentMask.h) each row's keys also begin at its document's start:
// the tiles mask below it, and tiles wholly below a block's first start
// are never computed.
//
//===----------------------------------------------------------------------===//

#include "ContextParallel.h"
#include "DocumentMask.h"
#include "Gemm.h"
#include "Kernels.h"
#include "Threads.h"
#include "VectorMath.h"

#include "titan/Contract/CPUWorkspaces.h"

#include <algorithm>
#include <cmath>

using titan::cpu::attentionGradTasks;
using titan::cpu::attentionSlotElements;
using titan::cpu::attentionSlots;
using titan::cpu::attentionTasks;
using titan::cpu::attentionTileCols;
using titan::cpu::attentionTileRows;
using titanrt::ChunkLayout;
using titanrt::DocumentStarts;
using titanrt::wholeSequence;

namespace titanrt::kernels {
namespace {

/// Key columns [0, visible(i)) of tile row i are at or before its query's
/// position; `diagonal` is the position of the tile's first query row minus
/// that of its first key column (>= 0: tiles start on block boundaries of
/// chunks that are the same positions or entirely earlier ones, never after
/// the query block).
inline int64_t visible(int64_t i, int64_t diagonal, int64_t cols) {
  return std::min(cols, i + diagonal + 1);
}

// The tile bodies, compiled once per x86-64 level (VectorMath.h).

/// Columns [from, to) of tile row i are visible: causal (`to` from the
/// diagonal) and, with document starts (`starts` of the tile's rows,
/// `firstKey` the tile's first column's position), not before the row's
/// document.
inline std::pair<int64_t, int64_t> visibleColumns(int64_t i, int64_t diagonal,
                                                  int64_t cols,
                                                  const int32_t *starts,
                                                  int64_t firstKey) {
  int64_t to = visible(i, diagonal, cols);
  int64_t from = starts ? std::clamp<int64_t>(starts[i] - firstKey, 0, to) : 0;
  return {from, to};
}

/// The online softmax's step for one S tile (rows x cols, row stride `ld`):
/// each row's max of the visible scaled scores joins the running max `m`,
/// `alpha` gets the factor the row's earlier sum and output are rescaled
/// by, the tile becomes P = exp(scale * s - m) (0 where masked), and its
/// row sums join the running sum `l`. A row that has seen no key yet keeps
/// m = -inf and alpha 1.
template <typename T>
TITAN_VECTOR_CLONES void
onlineSoftmax(T *s, int64_t ld, int64_t rows, int64_t cols, int64_t diagonal,
              T scale, T *m, T *l, T *alpha, const int32_t *starts,
              int64_t firstKey) {
  for (int64_t i = 0; i < rows; ++i) {
    T *row = s + i * ld;
    auto [from, to] = visibleColumns(i, diagonal, cols, starts, firstKey);
    T max = m[i];
#pragma omp simd reduction(max : max)
    for (int64_t j = from; j < to; ++j)
      max = std::max(max, row[j] * scale);
    std::fill(row, row + from, T(0));
    std::fill(row + to, row + cols, T(0));
    // No visible key here and none before (from == to): nothing to rescale.
    if (max == T(-INFINITY)) {
      alpha[i] = T(1);
      continue;
    }
    T sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int64_t j = from; j < to; ++j) {
      T p = vmath::fastExp(row[j] * scale - max);
      row[j] = p;
      sum += p;
    }
    alpha[i] = vmath::fastExp(m[i] - max);
    l[i] = l[i] * alpha[i] + sum;
    m[i] = max;
  }
}

/// The backward's P = exp(scale * s - lse) from the forward's log-sum-exp
/// (0 where masked), in place.
template <typename T>
TITAN_VECTOR_CLONES void
probabilities(T *s, int64_t ld, const T *lse, int64_t rows, int64_t cols,
              int64_t diagonal, T scale, const int32_t *starts,
              int64_t firstKey) {
  for (int64_t i = 0; i < rows; ++i) {
    T *row = s + i * ld;
    auto [from, to] = visibleColumns(i, diagonal, cols, starts, firstKey);
    T shift = lse[i];
#pragma omp simd
    for (int64_t j = from; j < to; ++j)
      row[j] = vmath::fastExp(row[j] * scale - shift);
    std::fill(row, row + from, T(0));
    std::fill(row + to, row + cols, T(0));
  }
}

/// dS = scale * P * (dP - rowsum(dO * O)), into dP's tile.
template <typename T>
TITAN_VECTOR_CLONES void scoreGrad(const T *p, T *dp, int64_t ld,
                                   const T *rowDot, int64_t rows, int64_t cols,
                                   T scale) {
  for (int64_t i = 0; i < rows; ++i) {
    const T *pr = p + i * ld;
    T *dr = dp + i * ld;
    T dot = rowDot[i];
#pragma omp simd
    for (int64_t j = 0; j < cols; ++j)
      dr[j] = scale * pr[j] * (dr[j] - dot);
  }
}

/// The threads attention uses: OpenMP's, at most one per workspace slot
/// (named only by OpenMP pragmas, which a build without OpenMP skips).
[[maybe_unused]] int attentionThreads(int64_t tasks) {
  return int(std::min<int64_t>(maxThreads(), attentionSlots(tasks)));
}

/// The keys of a chunk starting at `keyStart` at or before position
/// `last`: its first visibleKeys(...) rows.
int64_t visibleKeys(int64_t last, int64_t keyStart, int64_t chunk) {
  return std::clamp<int64_t>(last - keyStart + 1, 0, chunk);
}

} // namespace

// Each query block meets the visible keys of every key chunk in turn, in
// key-buffer order, as one online softmax; a tile's diagonal is its first
// query row's position minus its first key column's (>= the tile's columns
// where the pair of chunks is entirely visible, so nothing is masked).
template <typename T>
void contextAttention(const T *q, const T *k, const T *v, T *out, T *lse,
                      int64_t batch, int64_t qHeads, int64_t kvHeads,
                      int64_t headDim, const ChunkLayout &layout, double scale,
                      T *workspace, const DocumentStarts &docs) {
  int64_t group = qHeads / kvHeads;
  int64_t ldq = qHeads * headDim, ldk = kvHeads * headDim;
  int64_t chunk = layout.chunk, chunks = layout.queryChunks;
  int64_t seq = layout.querySeq(), keySeq = layout.keySeq();
  int64_t slot = attentionSlotElements(seq, chunks);
  int64_t rowsTile = attentionTileRows(chunk), ld = attentionTileCols(chunk);
  int64_t chunkBlocks = (chunk + rowsTile - 1) / rowsTile;
  int64_t blocks = chunks * chunkBlocks, heads = batch * qHeads;
  int64_t tasks = attentionTasks(batch, qHeads, seq, chunks);
  T scaleT = T(scale);
  // The last query blocks (the most key chunks) are handed out first.
#pragma omp parallel for schedule(dynamic) num_threads(attentionThreads(tasks))
  for (int64_t task = 0; task < tasks; ++task) {
    int64_t block = blocks - 1 - task / heads;
    int64_t b = task % heads / qHeads, h = task % qHeads;
    T *s = workspace + threadIndex() * slot;
    T *m = s + 2 * rowsTile * ld, *l = m + rowsTile, *alpha = l + rowsTile;
    int64_t qc = block / chunkBlocks, inChunk = block % chunkBlocks * rowsTile;
    int64_t r0 = qc * chunk + inChunk,
            rows = std::min(rowsTile, chunk - inChunk);
    int64_t first = layout.queryStarts[qc] + inChunk;
    const T *qb = q + (b * seq + r0) * ldq + h * headDim;
    T *ob = out + (b * seq + r0) * ldq + h * headDim;
    std::fill(m, m + rows, T(-INFINITY));
    std::fill(l, l + rows, T(0));
    const int32_t *rowStarts = docs.at(b, first);
    bool started = false;
    for (int64_t kc = 0; kc < layout.keyChunks; ++kc) {
      int64_t keyStart = layout.keyStarts[kc];
      int64_t keys = visibleKeys(first + rows - 1, keyStart, chunk);
      int64_t kvOff = (b * keySeq + kc * chunk) * ldk + (h / group) * headDim;
      // Tiles wholly before the block's first document start are skipped
      // (its first row's start is the least), a whole buffer chunk too.
      if (rowStarts && keyStart + keys <= rowStarts[0])
        continue;
      int64_t skipped =
          rowStarts
              ? std::clamp<int64_t>(rowStarts[0] - keyStart, 0, keys) / ld * ld
              : 0;
      for (int64_t c0 = skipped; c0 < keys; c0 += ld) {
        int64_t cols = std::min(ld, keys - c0);
        gemmOnThisThread(false, true, rows, cols, headDim, T(1), qb, ldq,
                         k + kvOff + c0 * ldk, ldk, T(0), s, ld);
        onlineSoftmax(s, ld, rows, cols, first - keyStart - c0, scaleT, m, l,
                      alpha, rowStarts, keyStart + c0);
        if (started)
          for (int64_t i = 0; i < rows; ++i)
            for (int64_t d = 0; d < headDim; ++d)
              ob[i * ldq + d] *= alpha[i];
        gemmOnThisThread(false, false, rows, headDim, cols, T(1), s, ld,
                         v + kvOff + c0 * ldk, ldk, T(started), ob, ldq);
        started = true;
      }
    }
    T *lseRow = lse + (b * qHeads + h) * seq + r0;
    for (int64_t i = 0; i < rows; ++i) {
      // A row that saw no key (all in another document, or this buffer's
      // keys all later) gets 0 and -inf; `ob` was never written if no row
      // of the block saw one.
      bool seen = started && l[i] > T(0);
      T inv = seen ? T(1) / l[i] : T(0);
      for (int64_t d = 0; d < headDim; ++d)
        ob[i * ldq + d] = seen ? ob[i * ldq + d] * inv : T(0);
      lseRow[i] = seen ? m[i] + std::log(l[i]) : T(-INFINITY);
    }
  }
}

template <typename T>
void contextAttentionGrad(const T *q, const T *k, const T *v, const T *out,
                          const T *lse, const T *dout, T *dq, T *dk, T *dv,
                          int64_t batch, int64_t qHeads, int64_t kvHeads,
                          int64_t headDim, const ChunkLayout &layout,
                          double scale, T *workspace,
                          const DocumentStarts &docs) {
  int64_t group = qHeads / kvHeads;
  int64_t ldq = qHeads * headDim, ldk = kvHeads * headDim;
  int64_t chunk = layout.chunk, seq = layout.querySeq();
  int64_t keySeq = layout.keySeq();
  int64_t tasks = attentionGradTasks(batch, kvHeads);
  int64_t slot = attentionSlotElements(seq, layout.queryChunks);
  int64_t rowsTile = attentionTileRows(chunk), ld = attentionTileCols(chunk);
  T scaleT = T(scale);
#pragma omp parallel for schedule(dynamic) num_threads(attentionThreads(tasks))
  for (int64_t task = 0; task < tasks; ++task) {
    int64_t b = task / kvHeads, g = task % kvHeads;
    T *p = workspace + threadIndex() * slot;
    T *dp = p + rowsTile * ld, *rowDot = dp + rowsTile * ld + 3 * rowsTile;
    int64_t kvOff = b * keySeq * ldk + g * headDim;
    for (int64_t s = 0; s < keySeq; ++s)
      for (int64_t d = 0; d < headDim; ++d) {
        dk[kvOff + s * ldk + d] = T(0);
        dv[kvOff + s * ldk + d] = T(0);
      }
    for (int64_t h = g * group; h < (g + 1) * group; ++h) {
      int64_t qOff = b * seq * ldq + h * headDim;
      const T *lseHead = lse + (b * qHeads + h) * seq;
      for (int64_t s = 0; s < seq; ++s) {
        T dot = 0;
        for (int64_t d = 0; d < headDim; ++d) {
          dot += dout[qOff + s * ldq + d] * out[qOff + s * ldq + d];
          dq[qOff + s * ldq + d] = T(0);
        }
        rowDot[s] = dot;
      }
      // Key tile outer, so its dK and dV rows stay in cache while every
      // query block that sees it adds to them.
      for (int64_t kc = 0; kc < layout.keyChunks; ++kc)
        for (int64_t c0 = 0; c0 < chunk; c0 += ld) {
          int64_t keyStart = layout.keyStarts[kc], c = kc * chunk + c0;
          const T *kc0 = k + kvOff + c * ldk, *vc = v + kvOff + c * ldk;
          T *dkc = dk + kvOff + c * ldk, *dvc = dv + kvOff + c * ldk;
          for (int64_t qc = 0; qc < layout.queryChunks; ++qc) {
            int64_t queryStart = layout.queryStarts[qc];
            // The query blocks from the one holding the tile's first key.
            int64_t since = keyStart + c0 - queryStart;
            if (since >= chunk)
              continue;
            for (int64_t r0 = std::max<int64_t>(since, 0) / rowsTile * rowsTile;
                 r0 < chunk; r0 += rowsTile) {
              int64_t rows = std::min(rowsTile, chunk - r0);
              int64_t first = queryStart + r0, row = qc * chunk + r0;
              int64_t cols = std::min(
                  ld, visibleKeys(first + rows - 1, keyStart, chunk) - c0);
              // A tile wholly before the block's first document start.
              const int32_t *rowStarts = docs.at(b, first);
              if (rowStarts && keyStart + c0 + cols <= rowStarts[0])
                continue;
              const T *qr = q + qOff + row * ldq,
                      *dor = dout + qOff + row * ldq;
              gemmOnThisThread(false, true, rows, cols, headDim, T(1), qr, ldq,
                               kc0, ldk, T(0), p, ld);
              probabilities(p, ld, lseHead + row, rows, cols,
                            first - keyStart - c0, scaleT, rowStarts,
                            keyStart + c0);
              // dV += P^T dO
              gemmOnThisThread(true, false, cols, headDim, rows, T(1), p, ld,
                               dor, ldq, T(1), dvc, ldk);
              // dP = dO V^T, then dS in place
              gemmOnThisThread(false, true, rows, cols, headDim, T(1), dor, ldq,
                               vc, ldk, T(0), dp, ld);
              scoreGrad(p, dp, ld, rowDot + row, rows, cols, scaleT);
              // dQ += dS K, dK += dS^T Q
              gemmOnThisThread(false, false, rows, headDim, cols, T(1), dp, ld,
                               kc0, ldk, T(1), dq + qOff + row * ldq, ldq);
              gemmOnThisThread(true, false, cols, headDim, rows, T(1), dp, ld,
                               qr, ldq, T(1), dkc, ldk);
            }
          }
        }
    }
  }
}

template <typename T>
void attention(const T *q, const T *k, const T *v, T *out, T *lse,
               int64_t batch, int64_t seq, int64_t qHeads, int64_t kvHeads,
               int64_t headDim, double scale, T *workspace,
               const DocumentStarts &docs) {
  contextAttention(q, k, v, out, lse, batch, qHeads, kvHeads, headDim,
                   wholeSequence(seq), scale, workspace, docs);
}

template <typename T>
void attentionGrad(const T *q, const T *k, const T *v, const T *out,
                   const T *lse, const T *dout, T *dq, T *dk, T *dv,
                   int64_t batch, int64_t seq, int64_t qHeads, int64_t kvHeads,
                   int64_t headDim, double scale, T *workspace,
                   const DocumentStarts &docs) {
  contextAttentionGrad(q, k, v, out, lse, dout, dq, dk, dv, batch, qHeads,
                       kvHeads, headDim, wholeSequence(seq), scale, workspace,
                       docs);
}

// Each row's pair of partials on its own, in exact exp and log (few rows).
template <typename T>
void attentionMerge(const T *out, const T *lse, const T *otherOut,
                    const T *otherLse, T *result, T *resultLse, int64_t batch,
                    int64_t seq, int64_t heads, int64_t headDim) {
#pragma omp parallel for
  for (int64_t row = 0; row < batch * heads * seq; ++row) {
    int64_t b = row / (heads * seq), h = row / seq % heads, s = row % seq;
    int64_t at = ((b * seq + s) * heads + h) * headDim;
    T a = lse[row], o = otherLse[row], max = std::max(a, o);
    T merged = max == T(-INFINITY)
                   ? max
                   : max + std::log1p(std::exp(std::min(a, o) - max));
    // A weight of 0 (that side saw no key) never reads its output.
    T wa = max == T(-INFINITY) ? T(0) : std::exp(a - merged);
    T wo = max == T(-INFINITY) ? T(0) : std::exp(o - merged);
    for (int64_t d = 0; d < headDim; ++d)
      result[at + d] = (wa == T(0) ? T(0) : wa * out[at + d]) +
                       (wo == T(0) ? T(0) : wo * otherOut[at + d]);
    resultLse[row] = merged;
  }
}

#define INSTANTIATE(T)                                                         \
  template void attention<T>(const T *, const T *, const T *, T *, T *,        \
                             int64_t, int64_t, int64_t, int64_t, int64_t,      \
                             double, T *, const DocumentStarts &);             \
  template void attentionGrad<T>(const T *, const T *, const T *, const T *,   \
                                 const T *, const T *, T *, T *, T *, int64_t, \
                                 int64_t, int64_t, int64_t, int64_t, double,   \
                                 T *, const DocumentStarts &);                 \
  template void contextAttention<T>(                                           \
      const T *, const T *, const T *, T *, T *, int64_t, int64_t, int64_t,    \
      int64_t, const ChunkLayout &, double, T *, const DocumentStarts &);      \
  template void contextAttentionGrad<T>(                                       \
      const T *, const T *, const T *, const T *, const T *, const T *, T *,   \
      T *, T *, int64_t, int64_t, int64_t, int64_t, const ChunkLayout &,       \
      double, T *, const DocumentStarts &);                                    \
  template void attentionMerge<T>(const T *, const T *, const T *, const T *,  \
                                  T *, T *, int64_t, int64_t, int64_t,         \
                                  int64_t);

INSTANTIATE(float)
INSTANTIATE(double)
#undef INSTANTIATE

} // namespace titanrt::kernels
