//===- Kernels.h - CPU reference kernels of the titan ops -------*- C++ -*-===//
//
// One function template per titan op, for float and double. Each follows the
// numerics stated in the op's ODS description and, where PyTorch's order of
// floating-point operations is known (the gradient norm), that order. GEMMs go
// through Gemm.h (oneDNN; OpenBLAS for f64); attention is flash attention
// (Attention.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_LIB_KERNELS_H
#define TITANRT_LIB_KERNELS_H

#include "ContextParallel.h"
#include "DocumentMask.h"
#include "Gemm.h"

#include <cstdint>

namespace titanrt::kernels {

/// out[n, :] = weight[tokens[n], :]; tokens are checked against `vocab`.
/// With `vocabStart` the weight holds rows [*vocabStart, *vocabStart +
/// vocab) of a larger table and other tokens give zero rows.
template <typename T>
void embedding(const T *weight, const int32_t *tokens, T *out, int64_t n,
               int64_t vocab, int64_t dim, const int32_t *vocabStart = nullptr);
template <typename T>
void embeddingGrad(const T *grad, const int32_t *tokens, T *out, int64_t n,
                   int64_t vocab, int64_t dim,
                   const int32_t *vocabStart = nullptr);

/// freqsCis[p, j] = (cos, sin) of the angle of position p < seq and pair
/// j < pairs (float32 always); `invFreq` is scratch for `pairs` floats.
void ropeAngles(float *freqsCis, int64_t seq, int64_t pairs, double theta,
                bool scaled, double factor, double lowFreqFactor,
                double highFreqFactor, double originalMaxPositions,
                float *invFreq);

/// q/out: B x S x Hq x D, k/v: B x S x Hkv x D, causal; lse: B x Hq x S,
/// each score row's log-sum-exp, written by the forward and read by the
/// backward (which then recomputes P without normalizing again and takes
/// rowsum(dO * O) from the forward's O). `workspace` holds
/// titan::cpu::attention(Grad)WorkspaceBytes
/// (titan/Contract/CPUWorkspaces.h), as titan.attention's kernel contract
/// plans it. With `docs`, TorchTitan's block-causal mask: each row sees
/// only its own document's keys (DocumentMask.h).
template <typename T>
void attention(const T *q, const T *k, const T *v, T *out, T *lse,
               int64_t batch, int64_t seq, int64_t qHeads, int64_t kvHeads,
               int64_t headDim, double scale, T *workspace,
               const DocumentStarts &docs = {});
template <typename T>
void attentionGrad(const T *q, const T *k, const T *v, const T *out,
                   const T *lse, const T *dout, T *dq, T *dk, T *dv,
                   int64_t batch, int64_t seq, int64_t qHeads, int64_t kvHeads,
                   int64_t headDim, double scale, T *workspace,
                   const DocumentStarts &docs = {});

/// Attention between a query buffer and a key/value buffer whose rows are
/// chunks of the sequence (ContextParallel.h; q/out: B x layout.querySeq()
/// x Hq x D, k/v: B x layout.keySeq() x Hkv x D, lse: B x Hq x querySeq),
/// causal on the rows' positions: context_attention's partial over the keys
/// of this buffer. A query row that sees none of them gets out 0 and lse
/// -inf. `workspace` holds titan::cpu::attention(Grad)WorkspaceBytes with
/// the query's chunks (contextAttention(Grad)WorkspaceBytes for context
/// parallel's 2). attention(Grad) is the layout titanrt::wholeSequence.
/// `docs` holds the whole sequence's document starts, indexed by the rows'
/// global positions.
template <typename T>
void contextAttention(const T *q, const T *k, const T *v, T *out, T *lse,
                      int64_t batch, int64_t qHeads, int64_t kvHeads,
                      int64_t headDim, const ChunkLayout &layout, double scale,
                      T *workspace, const DocumentStarts &docs = {});
/// The backward of contextAttention's partial, from the final (merged over
/// every key block) `out` and `lse`: dq gets this key block's share of dQ
/// (the shares of all blocks sum to dQ), dk and dv this buffer's whole
/// gradients; all three are overwritten.
template <typename T>
void contextAttentionGrad(const T *q, const T *k, const T *v, const T *out,
                          const T *lse, const T *dout, T *dq, T *dk, T *dv,
                          int64_t batch, int64_t qHeads, int64_t kvHeads,
                          int64_t headDim, const ChunkLayout &layout,
                          double scale, T *workspace,
                          const DocumentStarts &docs = {});
/// attention_merge: two attention partials of the same queries (out: B x S
/// x H x D, lse: B x H x S) as one, lse' = logaddexp(lse, otherLse) and
/// out' = exp(lse - lse') out + exp(otherLse - lse') otherOut; rows with
/// -inf on both sides give (0, -inf). `result` may be `out` and `resultLse`
/// `lse`.
template <typename T>
void attentionMerge(const T *out, const T *lse, const T *otherOut,
                    const T *otherLse, T *result, T *resultLse, int64_t batch,
                    int64_t seq, int64_t heads, int64_t headDim);

/// y[m, n] = sum_k x[m, k] w[n, k]; with `accumulate`, y += that
/// (kernel-fuse-gemm-accumulate's form of a GEMM followed by an add). The
/// operands are of type In and the result of Out: both f32 or f64, or bf16
/// operands (Gemm.h's BFloat16, on bf16 matrix units) and an f32 result.
template <typename In, typename Out = In>
void linear(const In *x, const In *w, Out *y, int64_t m, int64_t k, int64_t n,
            bool accumulate = false);
/// dx[m, k] = sum_n dy[m, n] w[n, k] (+= with `accumulate`).
template <typename In, typename Out = In>
void linearGradInput(const In *dy, const In *w, Out *dx, int64_t m, int64_t k,
                     int64_t n, bool accumulate = false);
/// dw[n, k] = sum_m dy[m, n] x[m, k] (+= with `accumulate`).
template <typename In, typename Out = In>
void linearGradWeight(const In *dy, const In *x, Out *dw, int64_t m, int64_t k,
                      int64_t n, bool accumulate = false);

/// Sum of squares, accumulated in double.
/// `partials` is scratch for titan::cpu::globalNormWorkspaceBytes(n) (the
/// spans' sums, added in order).
template <typename T>
double sumOfSquares(const T *x, int64_t n, double *partials);

/// TorchTitan's warmup-stable-decay schedule (see titan.lr_schedule).
double lrSchedule(int64_t step, int64_t totalSteps, double lr,
                  int64_t warmupSteps, double decayRatio /*<0: none*/,
                  int decayType /*0 linear, 1 sqrt, 2 cosine*/,
                  double minLrFactor);

} // namespace titanrt::kernels

#endif // TITANRT_LIB_KERNELS_H
