//===- Attention.h - causal GQA attention on the GPU ------------*- C++ -*-===//
//
// titan.attention and titan.attention_grad on device buffers, with the CPU
// kernels' contract (runtime/lib/Kernels.h): q and out are B x S x Hq x D,
// k and v B x S x Hkv x D (query head h reads kv head h / (Hq / Hkv)), the
// log-sum-exp of each scaled score row B x Hq x S in f32; the backward
// takes the forward's output and log-sum-exp and recomputes the
// probabilities from them.
//
// bf16 and f16 run on cuDNN's fused flash attention (CudnnAttention: the
// frontend's SDPA graphs, built once per shape and cached); f32, which
// cuDNN's SDPA does not take, runs on exact reference kernels (one block
// per row, online softmax, fixed summation order: deterministic) used by
// the parity runs against the CPU target. The reference kernels also take
// bf16/f16, for builds without the cuDNN frontend's headers.
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_CUDA_ATTENTION_H
#define TITANRT_CUDA_ATTENTION_H

#include "LinearGemm.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <tuple>

namespace titanrt::cuda {

struct AttentionShape {
  int64_t batch, seq, qHeads, kvHeads, headDim;
  auto key() const {
    return std::make_tuple(batch, seq, qHeads, kvHeads, headDim);
  }
};

/// The exact kernels: no workspace.
void attentionReference(ElementType type, const void *q, const void *k,
                        const void *v, void *out, float *lse,
                        const AttentionShape &s, double scale,
                        cudaStream_t stream);
void attentionGradReference(ElementType type, const void *q, const void *k,
                            const void *v, const void *out, const float *lse,
                            const void *dout, void *dq, void *dk, void *dv,
                            const AttentionShape &s, double scale,
                            cudaStream_t stream);

/// Whether this build has cuDNN's SDPA (the cudnn-frontend headers were
/// found at configure time).
bool haveCudnnAttention();

/// cuDNN's flash attention, forward and backward, bf16 or f16. Graphs are
/// built on first use of a shape (before a CUDA graph capture: the first
/// step runs eagerly) and reused.
class CudnnAttention {
public:
  CudnnAttention();
  ~CudnnAttention();
  CudnnAttention(const CudnnAttention &) = delete;
  CudnnAttention &operator=(const CudnnAttention &) = delete;

  /// `workspace` holds `workspaceBytes` (the memory plan's bound); when
  /// cuDNN asks for more, a buffer of its size is allocated once, outside
  /// any capture, with a warning. Returns false (and runs nothing) where
  /// cuDNN has no engine for the problem (e.g. a head dim it does not
  /// take), after saying so once: the caller runs the exact kernels.
  bool forward(ElementType type, const void *q, const void *k, const void *v,
               void *out, float *lse, const AttentionShape &s, double scale,
               void *workspace, size_t workspaceBytes, cudaStream_t stream);
  bool backward(ElementType type, const void *q, const void *k, const void *v,
                const void *out, const float *lse, const void *dout, void *dq,
                void *dk, void *dv, const AttentionShape &s, double scale,
                void *workspace, size_t workspaceBytes, cudaStream_t stream);

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace titanrt::cuda

#endif // TITANRT_CUDA_ATTENTION_H
