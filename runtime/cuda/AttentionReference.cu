//===- AttentionReference.cu - exact causal GQA attention kernels ---------===//
//
// One block per query row (forward, dQ) or key row (dK, dV), head dim
// spread over the block's threads, scores as fixed-order block sums. Rows
// sit in the sequence as a ChunkLayout says (context parallel's chunks;
// titan.attention is one chunk); keys after a query's position, and with
// TorchTitan's block-causal mask those before its document's start, are
// never visited.
// O(S^2 D) work with no tiling: these are the parity kernels (f32, which
// cuDNN's SDPA does not take) and the fallback without cuDNN, not the fast
// path.
//
//===----------------------------------------------------------------------===//

#include "Attention.h"

#include "ContextParallel.h"
#include "DeviceUtils.cuh"

using namespace titanrt;
using namespace titanrt::cuda;
using namespace titanrt::cuda::device;

namespace {

/// Head dims per thread: D <= kThreads * kPerThread.
constexpr int kPerThread = 2;

/// Query row i's position, and the key rows of chunk `kc` at or before
/// position `at`: its first keysUpTo(...) rows.
__device__ inline int64_t queryPosition(const ChunkLayout &l, int64_t i) {
  return l.queryStarts[i / l.chunk] + i % l.chunk;
}
__device__ inline int64_t keysUpTo(const ChunkLayout &l, int64_t kc,
                                   int64_t at) {
  return max(int64_t(0), min(l.chunk, at - l.keyStarts[kc] + 1));
}
/// The first key position query position `at` of batch row `b` sees: its
/// document's start, or 0 without the mask.
__device__ inline int64_t firstVisibleKey(const DeviceDocuments &docs,
                                          int64_t b, int64_t at) {
  return docs.starts ? docs.starts[b * docs.seq + at] : 0;
}
/// The first row of a key chunk (at position keyStart) at or after
/// position `first`.
__device__ inline int64_t firstKeyRow(int64_t keyStart, int64_t first) {
  return max(int64_t(0), first - keyStart);
}

/// Forward: grid (Sq, Hq, B). Online softmax over the visible keys, key
/// chunk by key chunk; a row that sees none gets 0 and lse -inf.
template <typename T>
__global__ void forwardKernel(const T *q, const T *k, const T *v, T *out,
                              float *lse, AttentionShape s, ChunkLayout l,
                              float scale, DeviceDocuments docs) {
  int64_t i = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  int64_t group = s.qHeads / s.kvHeads, D = s.headDim;
  int64_t ldq = s.qHeads * D, ldk = s.kvHeads * D;
  int64_t keySeq = l.keyChunks * l.chunk, at = queryPosition(l, i);
  int64_t first = firstVisibleKey(docs, b, at);
  const T *qi = q + (b * s.seq + i) * ldq + h * D;
  float qd[kPerThread], acc[kPerThread];
  for (int c = 0; c < kPerThread; ++c) {
    int64_t d = threadIdx.x + c * kThreads;
    qd[c] = d < D ? load(qi, d) : 0.0f;
    acc[c] = 0;
  }
  float m = -INFINITY, sum = 0;
  for (int64_t kc = 0; kc < l.keyChunks; ++kc) {
    const T *kb = k + (b * keySeq + kc * l.chunk) * ldk + (h / group) * D;
    const T *vb = v + (b * keySeq + kc * l.chunk) * ldk + (h / group) * D;
    for (int64_t j = firstKeyRow(l.keyStarts[kc], first),
                 keys = keysUpTo(l, kc, at);
         j < keys; ++j) {
      float dot = 0;
      for (int c = 0; c < kPerThread; ++c) {
        int64_t d = threadIdx.x + c * kThreads;
        if (d < D)
          dot += qd[c] * load(kb + j * ldk, d);
      }
      float score = scale * blockSum(dot);
      float mNew = fmaxf(m, score);
      float correction = expf(m - mNew), p = expf(score - mNew);
      sum = sum * correction + p;
      for (int c = 0; c < kPerThread; ++c) {
        int64_t d = threadIdx.x + c * kThreads;
        if (d < D)
          acc[c] = acc[c] * correction + p * load(vb + j * ldk, d);
      }
      m = mNew;
    }
  }
  T *oi = out + (b * s.seq + i) * ldq + h * D;
  for (int c = 0; c < kPerThread; ++c) {
    int64_t d = threadIdx.x + c * kThreads;
    if (d < D)
      store(oi, d, sum > 0 ? acc[c] / sum : 0.0f);
  }
  if (threadIdx.x == 0)
    lse[(b * s.qHeads + h) * s.seq + i] = sum > 0 ? m + logf(sum) : -INFINITY;
}

/// dQ: grid (Sq, Hq, B). dS_ij = P_ij (dO_i . V_j - dO_i . O_i).
template <typename T>
__global__ void gradQueryKernel(const T *q, const T *k, const T *v,
                                const T *out, const float *lse, const T *dout,
                                T *dq, AttentionShape s, ChunkLayout l,
                                float scale, DeviceDocuments docs) {
  int64_t i = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  int64_t group = s.qHeads / s.kvHeads, D = s.headDim;
  int64_t ldq = s.qHeads * D, ldk = s.kvHeads * D;
  int64_t keySeq = l.keyChunks * l.chunk, at = queryPosition(l, i);
  int64_t first = firstVisibleKey(docs, b, at);
  int64_t row = (b * s.seq + i) * ldq + h * D;
  float qd[kPerThread], g[kPerThread], acc[kPerThread];
  float rowDot = 0;
  for (int c = 0; c < kPerThread; ++c) {
    int64_t d = threadIdx.x + c * kThreads;
    qd[c] = d < D ? load(q + row, d) : 0.0f;
    g[c] = d < D ? load(dout + row, d) : 0.0f;
    rowDot += d < D ? g[c] * load(out + row, d) : 0.0f;
    acc[c] = 0;
  }
  rowDot = blockSum(rowDot);
  float rowLse = lse[(b * s.qHeads + h) * s.seq + i];
  for (int64_t kc = 0; kc < l.keyChunks; ++kc) {
    const T *kb = k + (b * keySeq + kc * l.chunk) * ldk + (h / group) * D;
    const T *vb = v + (b * keySeq + kc * l.chunk) * ldk + (h / group) * D;
    for (int64_t j = firstKeyRow(l.keyStarts[kc], first),
                 keys = keysUpTo(l, kc, at);
         j < keys; ++j) {
      float qk = 0, gv = 0;
      for (int c = 0; c < kPerThread; ++c) {
        int64_t d = threadIdx.x + c * kThreads;
        if (d < D) {
          qk += qd[c] * load(kb + j * ldk, d);
          gv += g[c] * load(vb + j * ldk, d);
        }
      }
      float p = expf(scale * blockSum(qk) - rowLse);
      float ds = p * (blockSum(gv) - rowDot);
      for (int c = 0; c < kPerThread; ++c) {
        int64_t d = threadIdx.x + c * kThreads;
        if (d < D)
          acc[c] += scale * ds * load(kb + j * ldk, d);
      }
    }
  }
  for (int c = 0; c < kPerThread; ++c) {
    int64_t d = threadIdx.x + c * kThreads;
    if (d < D)
      store(dq + row, d, acc[c]);
  }
}

/// dK, dV: grid (Sk, Hkv, B); sums over the group's query heads and, per
/// query chunk, the query rows at or after the key's position (and in its
/// document), in that order.
template <typename T>
__global__ void gradKeyValueKernel(const T *q, const T *k, const T *v,
                                   const T *out, const float *lse,
                                   const T *dout, T *dk, T *dv,
                                   AttentionShape s, ChunkLayout l, float scale,
                                   DeviceDocuments docs) {
  int64_t j = blockIdx.x, kvh = blockIdx.y, b = blockIdx.z;
  int64_t group = s.qHeads / s.kvHeads, D = s.headDim;
  int64_t ldq = s.qHeads * D, ldk = s.kvHeads * D;
  int64_t keySeq = l.keyChunks * l.chunk;
  int64_t at = l.keyStarts[j / l.chunk] + j % l.chunk;
  int64_t krow = (b * keySeq + j) * ldk + kvh * D;
  float kd[kPerThread], vd[kPerThread], dkAcc[kPerThread], dvAcc[kPerThread];
  for (int c = 0; c < kPerThread; ++c) {
    int64_t d = threadIdx.x + c * kThreads;
    kd[c] = d < D ? load(k + krow, d) : 0.0f;
    vd[c] = d < D ? load(v + krow, d) : 0.0f;
    dkAcc[c] = dvAcc[c] = 0;
  }
  for (int64_t h = kvh * group; h < (kvh + 1) * group; ++h)
    for (int64_t qc = 0; qc < l.queryChunks; ++qc)
      for (int64_t i = qc * l.chunk + max(int64_t(0), at - l.queryStarts[qc]);
           i < (qc + 1) * l.chunk; ++i) {
        // The same for every thread of the block: the block sums below stay
        // uniform.
        if (firstVisibleKey(docs, b, queryPosition(l, i)) > at)
          continue;
        int64_t row = (b * s.seq + i) * ldq + h * D;
        float qk = 0, gv = 0, go = 0;
        for (int c = 0; c < kPerThread; ++c) {
          int64_t d = threadIdx.x + c * kThreads;
          if (d < D) {
            float g = load(dout + row, d);
            qk += load(q + row, d) * kd[c];
            gv += g * vd[c];
            go += g * load(out + row, d);
          }
        }
        float p =
            expf(scale * blockSum(qk) - lse[(b * s.qHeads + h) * s.seq + i]);
        float ds = p * (blockSum(gv) - blockSum(go));
        for (int c = 0; c < kPerThread; ++c) {
          int64_t d = threadIdx.x + c * kThreads;
          if (d < D) {
            dvAcc[c] += p * load(dout + row, d);
            dkAcc[c] += scale * ds * load(q + row, d);
          }
        }
      }
  for (int c = 0; c < kPerThread; ++c) {
    int64_t d = threadIdx.x + c * kThreads;
    if (d < D) {
      store(dk + krow, d, dkAcc[c]);
      store(dv + krow, d, dvAcc[c]);
    }
  }
}

void checkShape(const AttentionShape &s, const ChunkLayout &l,
                const char *kernel) {
  if (s.headDim > int64_t(kThreads) * kPerThread || s.kvHeads <= 0 ||
      s.qHeads % s.kvHeads != 0 || s.seq > 65535 || l.keySeq() > 65535 ||
      s.qHeads > 65535 || s.batch > 65535)
    kernelFatal(std::string(kernel) +
                ": the exact attention kernels take head dim " +
                "<= " + std::to_string(kThreads * kPerThread) +
                ", seq, heads and batch <= 65535 and whole GQA groups; got B " +
                std::to_string(s.batch) + " S " + std::to_string(s.seq) +
                " Sk " + std::to_string(l.keySeq()) + " Hq " +
                std::to_string(s.qHeads) + " Hkv " + std::to_string(s.kvHeads) +
                " D " + std::to_string(s.headDim));
}
} // namespace

void titanrt::cuda::contextAttentionReference(
    Dtype type, const void *q, const void *k, const void *v, void *out,
    float *lse, const AttentionShape &s, const ChunkLayout &layout,
    double scale, cudaStream_t stream, const DeviceDocuments &docs) {
  checkShape(s, layout, "attention");
  dim3 grid(unsigned(s.seq), unsigned(s.qHeads), unsigned(s.batch));
  dispatch(type, [&](auto *tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    forwardKernel<T><<<grid, kThreads, 0, stream>>>(
        static_cast<const T *>(q), static_cast<const T *>(k),
        static_cast<const T *>(v), static_cast<T *>(out), lse, s, layout,
        float(scale), docs);
  });
  checkLaunch("attention");
}

void titanrt::cuda::contextAttentionGradReference(
    Dtype type, const void *q, const void *k, const void *v, const void *out,
    const float *lse, const void *dout, void *dq, void *dk, void *dv,
    const AttentionShape &s, const ChunkLayout &layout, double scale,
    cudaStream_t stream, const DeviceDocuments &docs) {
  checkShape(s, layout, "attention_grad");
  dim3 rows(unsigned(s.seq), unsigned(s.qHeads), unsigned(s.batch));
  dim3 keys(unsigned(layout.keySeq()), unsigned(s.kvHeads), unsigned(s.batch));
  dispatch(type, [&](auto *tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    gradQueryKernel<T><<<rows, kThreads, 0, stream>>>(
        static_cast<const T *>(q), static_cast<const T *>(k),
        static_cast<const T *>(v), static_cast<const T *>(out), lse,
        static_cast<const T *>(dout), static_cast<T *>(dq), s, layout,
        float(scale), docs);
    checkLaunch("attention_grad (dq)");
    gradKeyValueKernel<T><<<keys, kThreads, 0, stream>>>(
        static_cast<const T *>(q), static_cast<const T *>(k),
        static_cast<const T *>(v), static_cast<const T *>(out), lse,
        static_cast<const T *>(dout), static_cast<T *>(dk),
        static_cast<T *>(dv), s, layout, float(scale), docs);
    checkLaunch("attention_grad (dk, dv)");
  });
}

void titanrt::cuda::attentionReference(Dtype type, const void *q, const void *k,
                                       const void *v, void *out, float *lse,
                                       const AttentionShape &s, double scale,
                                       cudaStream_t stream,
                                       const DeviceDocuments &docs) {
  contextAttentionReference(type, q, k, v, out, lse, s, wholeSequence(s.seq),
                            scale, stream, docs);
}

void titanrt::cuda::attentionGradReference(Dtype type, const void *q,
                                           const void *k, const void *v,
                                           const void *out, const float *lse,
                                           const void *dout, void *dq, void *dk,
                                           void *dv, const AttentionShape &s,
                                           double scale, cudaStream_t stream,
                                           const DeviceDocuments &docs) {
  contextAttentionGradReference(type, q, k, v, out, lse, dout, dq, dk, dv, s,
                                wholeSequence(s.seq), scale, stream, docs);
}
