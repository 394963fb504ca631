//===- Attention.cpp - causal flash attention on the CPU ------------------===//
//
// FlashAttention-2's algorithm on CPU threads. Blocks of 64 query rows meet
// chunks of up to 512 key columns (titan/Target/CPU/KernelWorkspaces.h):
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
//===----------------------------------------------------------------------===//

#include "Gemm.h"
#include "Kernels.h"
#include "VectorMath.h"

#include "titan/Target/CPU/KernelWorkspaces.h"

#include <omp.h>

#include <algorithm>
#include <cmath>

using titan::cpu::attentionGradTasks;
using titan::cpu::attentionSlotElements;
using titan::cpu::attentionSlots;
using titan::cpu::attentionTasks;
using titan::cpu::attentionTileCols;
using titan::cpu::attentionTileRows;

namespace titanrt::kernels {
namespace {

/// Key columns [0, visible(i)) of tile row i are at or before its query's
/// position; `diagonal` is the query block's first row minus the key
/// chunk's first column (>= 0: chunks start on block boundaries, never
/// after the query block).
inline int64_t visible(int64_t i, int64_t diagonal, int64_t cols) {
  return std::min(cols, i + diagonal + 1);
}

// The tile bodies, compiled once per x86-64 level (VectorMath.h).

/// The online softmax's step for one S tile (rows x cols, row stride `ld`):
/// each row's max of the visible scaled scores joins the running max `m`,
/// `alpha` gets the factor the row's earlier sum and output are rescaled
/// by, the tile becomes P = exp(scale * s - m) (0 where masked), and its
/// row sums join the running sum `l`.
template <typename T>
TITAN_VECTOR_CLONES void onlineSoftmax(T *s, int64_t ld, int64_t rows,
                                       int64_t cols, int64_t diagonal, T scale,
                                       T *m, T *l, T *alpha) {
  for (int64_t i = 0; i < rows; ++i) {
    T *row = s + i * ld;
    int64_t n = visible(i, diagonal, cols);
    T max = m[i];
#pragma omp simd reduction(max : max)
    for (int64_t j = 0; j < n; ++j)
      max = std::max(max, row[j] * scale);
    T sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int64_t j = 0; j < n; ++j) {
      T p = vmath::fastExp(row[j] * scale - max);
      row[j] = p;
      sum += p;
    }
    std::fill(row + n, row + cols, T(0));
    alpha[i] = vmath::fastExp(m[i] - max);
    l[i] = l[i] * alpha[i] + sum;
    m[i] = max;
  }
}

/// The backward's P = exp(scale * s - lse) from the forward's log-sum-exp
/// (0 where masked), in place.
template <typename T>
TITAN_VECTOR_CLONES void probabilities(T *s, int64_t ld, const T *lse,
                                       int64_t rows, int64_t cols,
                                       int64_t diagonal, T scale) {
  for (int64_t i = 0; i < rows; ++i) {
    T *row = s + i * ld;
    int64_t n = visible(i, diagonal, cols);
    T shift = lse[i];
#pragma omp simd
    for (int64_t j = 0; j < n; ++j)
      row[j] = vmath::fastExp(row[j] * scale - shift);
    std::fill(row + n, row + cols, T(0));
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

/// The threads attention uses: OpenMP's, at most one per workspace slot.
int attentionThreads(int64_t tasks) {
  return int(std::min<int64_t>(omp_get_max_threads(), attentionSlots(tasks)));
}

} // namespace

template <typename T>
void attention(const T *q, const T *k, const T *v, T *out, T *lse,
               int64_t batch, int64_t seq, int64_t qHeads, int64_t kvHeads,
               int64_t headDim, double scale, T *workspace) {
  int64_t group = qHeads / kvHeads;
  int64_t ldq = qHeads * headDim, ldk = kvHeads * headDim;
  int64_t slot = attentionSlotElements(seq);
  int64_t rowsTile = attentionTileRows(seq), ld = attentionTileCols(seq);
  int64_t blocks = (seq + rowsTile - 1) / rowsTile;
  int64_t heads = batch * qHeads, tasks = attentionTasks(batch, qHeads, seq);
  T scaleT = T(scale);
  // The last query blocks (the most key chunks) are handed out first.
#pragma omp parallel for schedule(dynamic) num_threads(attentionThreads(tasks))
  for (int64_t task = 0; task < tasks; ++task) {
    int64_t block = blocks - 1 - task / heads;
    int64_t b = task % heads / qHeads, h = task % qHeads;
    T *s = workspace + omp_get_thread_num() * slot;
    T *m = s + 2 * rowsTile * ld, *l = m + rowsTile, *alpha = l + rowsTile;
    int64_t r0 = block * rowsTile, rows = std::min(rowsTile, seq - r0);
    const T *qb = q + (b * seq + r0) * ldq + h * headDim;
    T *ob = out + (b * seq + r0) * ldq + h * headDim;
    const T *kh = k + b * seq * ldk + (h / group) * headDim;
    const T *vh = v + b * seq * ldk + (h / group) * headDim;
    std::fill(m, m + rows, T(-INFINITY));
    std::fill(l, l + rows, T(0));
    for (int64_t c0 = 0; c0 < r0 + rows; c0 += ld) {
      int64_t cols = std::min(ld, r0 + rows - c0);
      gemmOnThisThread(false, true, rows, cols, headDim, T(1), qb, ldq,
                       kh + c0 * ldk, ldk, T(0), s, ld);
      onlineSoftmax(s, ld, rows, cols, r0 - c0, scaleT, m, l, alpha);
      if (c0 > 0)
        for (int64_t i = 0; i < rows; ++i)
          for (int64_t d = 0; d < headDim; ++d)
            ob[i * ldq + d] *= alpha[i];
      gemmOnThisThread(false, false, rows, headDim, cols, T(1), s, ld,
                       vh + c0 * ldk, ldk, T(c0 > 0), ob, ldq);
    }
    T *lseRow = lse + (b * qHeads + h) * seq + r0;
    for (int64_t i = 0; i < rows; ++i) {
      T inv = T(1) / l[i];
      for (int64_t d = 0; d < headDim; ++d)
        ob[i * ldq + d] *= inv;
      lseRow[i] = m[i] + std::log(l[i]);
    }
  }
}

template <typename T>
void attentionGrad(const T *q, const T *k, const T *v, const T *out,
                   const T *lse, const T *dout, T *dq, T *dk, T *dv,
                   int64_t batch, int64_t seq, int64_t qHeads, int64_t kvHeads,
                   int64_t headDim, double scale, T *workspace) {
  int64_t group = qHeads / kvHeads;
  int64_t ldq = qHeads * headDim, ldk = kvHeads * headDim;
  int64_t tasks = attentionGradTasks(batch, kvHeads);
  int64_t slot = attentionSlotElements(seq);
  int64_t rowsTile = attentionTileRows(seq), ld = attentionTileCols(seq);
  T scaleT = T(scale);
#pragma omp parallel for schedule(dynamic) num_threads(attentionThreads(tasks))
  for (int64_t task = 0; task < tasks; ++task) {
    int64_t b = task / kvHeads, g = task % kvHeads;
    T *p = workspace + omp_get_thread_num() * slot;
    T *dp = p + rowsTile * ld, *rowDot = dp + rowsTile * ld + 3 * rowsTile;
    int64_t kvOff = b * seq * ldk + g * headDim;
    for (int64_t s = 0; s < seq; ++s)
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
      // Key chunk outer, so its dK and dV rows stay in cache while every
      // query block at or below its first column adds to them.
      for (int64_t c0 = 0; c0 < seq; c0 += ld) {
        const T *kc = k + kvOff + c0 * ldk, *vc = v + kvOff + c0 * ldk;
        T *dkc = dk + kvOff + c0 * ldk, *dvc = dv + kvOff + c0 * ldk;
        for (int64_t r0 = c0; r0 < seq; r0 += rowsTile) {
          int64_t rows = std::min(rowsTile, seq - r0);
          int64_t cols = std::min(ld, r0 + rows - c0);
          const T *qr = q + qOff + r0 * ldq, *dor = dout + qOff + r0 * ldq;
          gemmOnThisThread(false, true, rows, cols, headDim, T(1), qr, ldq, kc,
                           ldk, T(0), p, ld);
          probabilities(p, ld, lseHead + r0, rows, cols, r0 - c0, scaleT);
          // dV += P^T dO
          gemmOnThisThread(true, false, cols, headDim, rows, T(1), p, ld, dor,
                           ldq, T(1), dvc, ldk);
          // dP = dO V^T, then dS in place
          gemmOnThisThread(false, true, rows, cols, headDim, T(1), dor, ldq, vc,
                           ldk, T(0), dp, ld);
          scoreGrad(p, dp, ld, rowDot + r0, rows, cols, scaleT);
          // dQ += dS K, dK += dS^T Q
          gemmOnThisThread(false, false, rows, headDim, cols, T(1), dp, ld, kc,
                           ldk, T(1), dq + qOff + r0 * ldq, ldq);
          gemmOnThisThread(true, false, cols, headDim, rows, T(1), dp, ld, qr,
                           ldq, T(1), dkc, ldk);
        }
      }
    }
  }
}

#define INSTANTIATE(T)                                                         \
  template void attention<T>(const T *, const T *, const T *, T *, T *,        \
                             int64_t, int64_t, int64_t, int64_t, int64_t,      \
                             double, T *);                                     \
  template void attentionGrad<T>(                                              \
      const T *, const T *, const T *, const T *, const T *, const T *, T *,   \
      T *, T *, int64_t, int64_t, int64_t, int64_t, int64_t, double, T *);

INSTANTIATE(float)
INSTANTIATE(double)
#undef INSTANTIATE

} // namespace titanrt::kernels
