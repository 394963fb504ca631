//===- AttentionReference.cu - exact causal GQA attention kernels ---------===//
//
// One block per query row (forward, dQ) or key row (dK, dV), head dim
// spread over the block's threads, scores as fixed-order block sums.
// O(S^2 D) work with no tiling: these are the parity kernels (f32, which
// cuDNN's SDPA does not take) and the fallback without cuDNN, not the fast
// path.
//
//===----------------------------------------------------------------------===//

#include "Attention.h"

#include "DeviceUtils.cuh"

using namespace titanrt;
using namespace titanrt::cuda;
using namespace titanrt::cuda::device;

namespace {

/// Head dims per thread: D <= kThreads * kPerThread.
constexpr int kPerThread = 2;

/// Forward: grid (S, Hq, B). Online softmax over keys 0..i.
template <typename T>
__global__ void forwardKernel(const T *q, const T *k, const T *v, T *out,
                              float *lse, AttentionShape s, float scale) {
  int64_t i = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  int64_t group = s.qHeads / s.kvHeads, D = s.headDim;
  int64_t ldq = s.qHeads * D, ldk = s.kvHeads * D;
  const T *qi = q + (b * s.seq + i) * ldq + h * D;
  const T *kb = k + b * s.seq * ldk + (h / group) * D;
  const T *vb = v + b * s.seq * ldk + (h / group) * D;
  float qd[kPerThread], acc[kPerThread];
  for (int c = 0; c < kPerThread; ++c) {
    int64_t d = threadIdx.x + c * kThreads;
    qd[c] = d < D ? load(qi, d) : 0.0f;
    acc[c] = 0;
  }
  float m = -INFINITY, l = 0;
  for (int64_t j = 0; j <= i; ++j) {
    float dot = 0;
    for (int c = 0; c < kPerThread; ++c) {
      int64_t d = threadIdx.x + c * kThreads;
      if (d < D)
        dot += qd[c] * load(kb + j * ldk, d);
    }
    float score = scale * blockSum(dot);
    float mNew = fmaxf(m, score);
    float correction = expf(m - mNew), p = expf(score - mNew);
    l = l * correction + p;
    for (int c = 0; c < kPerThread; ++c) {
      int64_t d = threadIdx.x + c * kThreads;
      if (d < D)
        acc[c] = acc[c] * correction + p * load(vb + j * ldk, d);
    }
    m = mNew;
  }
  T *oi = out + (b * s.seq + i) * ldq + h * D;
  for (int c = 0; c < kPerThread; ++c) {
    int64_t d = threadIdx.x + c * kThreads;
    if (d < D)
      store(oi, d, acc[c] / l);
  }
  if (threadIdx.x == 0)
    lse[(b * s.qHeads + h) * s.seq + i] = m + logf(l);
}

/// dQ: grid (S, Hq, B). dS_ij = P_ij (dO_i . V_j - dO_i . O_i).
template <typename T>
__global__ void gradQueryKernel(const T *q, const T *k, const T *v,
                                const T *out, const float *lse, const T *dout,
                                T *dq, AttentionShape s, float scale) {
  int64_t i = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  int64_t group = s.qHeads / s.kvHeads, D = s.headDim;
  int64_t ldq = s.qHeads * D, ldk = s.kvHeads * D;
  int64_t row = (b * s.seq + i) * ldq + h * D;
  const T *kb = k + b * s.seq * ldk + (h / group) * D;
  const T *vb = v + b * s.seq * ldk + (h / group) * D;
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
  for (int64_t j = 0; j <= i; ++j) {
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
  for (int c = 0; c < kPerThread; ++c) {
    int64_t d = threadIdx.x + c * kThreads;
    if (d < D)
      store(dq + row, d, acc[c]);
  }
}

/// dK, dV: grid (S, Hkv, B); sums over the group's query heads and the
/// query rows i >= j, in that order.
template <typename T>
__global__ void gradKeyValueKernel(const T *q, const T *k, const T *v,
                                   const T *out, const float *lse,
                                   const T *dout, T *dk, T *dv,
                                   AttentionShape s, float scale) {
  int64_t j = blockIdx.x, kvh = blockIdx.y, b = blockIdx.z;
  int64_t group = s.qHeads / s.kvHeads, D = s.headDim;
  int64_t ldq = s.qHeads * D, ldk = s.kvHeads * D;
  int64_t krow = (b * s.seq + j) * ldk + kvh * D;
  float kd[kPerThread], vd[kPerThread], dkAcc[kPerThread], dvAcc[kPerThread];
  for (int c = 0; c < kPerThread; ++c) {
    int64_t d = threadIdx.x + c * kThreads;
    kd[c] = d < D ? load(k + krow, d) : 0.0f;
    vd[c] = d < D ? load(v + krow, d) : 0.0f;
    dkAcc[c] = dvAcc[c] = 0;
  }
  for (int64_t h = kvh * group; h < (kvh + 1) * group; ++h)
    for (int64_t i = j; i < s.seq; ++i) {
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

void checkShape(const AttentionShape &s, const char *kernel) {
  if (s.headDim > int64_t(kThreads) * kPerThread || s.kvHeads <= 0 ||
      s.qHeads % s.kvHeads != 0 || s.seq > 65535 || s.qHeads > 65535 ||
      s.batch > 65535)
    kernelFatal(std::string(kernel) +
                ": the exact attention kernels take head dim " +
                "<= " + std::to_string(kThreads * kPerThread) +
                ", seq, heads and batch <= 65535 and whole GQA groups; got B " +
                std::to_string(s.batch) + " S " + std::to_string(s.seq) +
                " Hq " + std::to_string(s.qHeads) + " Hkv " +
                std::to_string(s.kvHeads) + " D " + std::to_string(s.headDim));
}
} // namespace

void titanrt::cuda::attentionReference(ElementType type, const void *q,
                                       const void *k, const void *v, void *out,
                                       float *lse, const AttentionShape &s,
                                       double scale, cudaStream_t stream) {
  checkShape(s, "attention");
  dim3 grid(unsigned(s.seq), unsigned(s.qHeads), unsigned(s.batch));
  dispatch(type, [&](auto *tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    forwardKernel<T><<<grid, kThreads, 0, stream>>>(
        static_cast<const T *>(q), static_cast<const T *>(k),
        static_cast<const T *>(v), static_cast<T *>(out), lse, s, float(scale));
  });
  checkLaunch("attention");
}

void titanrt::cuda::attentionGradReference(ElementType type, const void *q,
                                           const void *k, const void *v,
                                           const void *out, const float *lse,
                                           const void *dout, void *dq, void *dk,
                                           void *dv, const AttentionShape &s,
                                           double scale, cudaStream_t stream) {
  checkShape(s, "attention_grad");
  dim3 rows(unsigned(s.seq), unsigned(s.qHeads), unsigned(s.batch));
  dim3 keys(unsigned(s.seq), unsigned(s.kvHeads), unsigned(s.batch));
  dispatch(type, [&](auto *tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    gradQueryKernel<T><<<rows, kThreads, 0, stream>>>(
        static_cast<const T *>(q), static_cast<const T *>(k),
        static_cast<const T *>(v), static_cast<const T *>(out), lse,
        static_cast<const T *>(dout), static_cast<T *>(dq), s, float(scale));
    checkLaunch("attention_grad (dq)");
    gradKeyValueKernel<T><<<keys, kThreads, 0, stream>>>(
        static_cast<const T *>(q), static_cast<const T *>(k),
        static_cast<const T *>(v), static_cast<const T *>(out), lse,
        static_cast<const T *>(dout), static_cast<T *>(dk),
        static_cast<T *>(dv), s, float(scale));
    checkLaunch("attention_grad (dk, dv)");
  });
}
