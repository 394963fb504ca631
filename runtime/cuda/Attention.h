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
// bf16/f16 where cuDNN cannot (no engine, or a build without the cuDNN
// frontend's headers), but only on short sequences
// (titan::cuda::attentionReferenceAllowed): elsewhere that is an error.
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_CUDA_ATTENTION_H
#define TITANRT_CUDA_ATTENTION_H

#include "ContextParallel.h"
#include "LinearGemm.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

namespace titanrt::cuda {

struct AttentionShape {
  int64_t batch, seq, qHeads, kvHeads, headDim;
  auto key() const {
    return std::make_tuple(batch, seq, qHeads, kvHeads, headDim);
  }
};

/// TorchTitan's block-causal mask on the device (runtime/lib/DocumentMask.h):
/// each position's document start, `seq` per batch row over the whole
/// sequence, indexed by the rows' global positions; query position p sees
/// keys [starts[b, p], p]. Null `starts`: causal only. For one cuDNN
/// problem, `queryOffset` and `keyOffset` are the global positions of its
/// first query and key rows (context parallel's chunk pairs; 0 for a whole
/// sequence).
struct DeviceDocuments {
  const int32_t *starts = nullptr;
  int64_t seq = 0;
  int64_t queryOffset = 0, keyOffset = 0;
  explicit operator bool() const { return starts != nullptr; }
};

/// Where one cuDNN SDPA problem's tensors sit: AttentionShape::seq rows of
/// queries and of keys, views into B x rows x H x D buffers whose batches
/// are each buffer's `rows` apart (the log-sum-exp's B x Hq x lseRows);
/// `causal` masks the keys after their query's row. titan.attention's
/// problem is whole buffers, causal; context parallel's pairs of chunks are
/// views, causal on the diagonal pairs only.
struct SdpaViews {
  int64_t queryRows, keyRows, outRows, lseRows, queryGradRows, keyGradRows;
  bool causal;
  static SdpaViews whole(int64_t seq) {
    return {seq, seq, seq, seq, seq, seq, true};
  }
  auto key() const {
    return std::make_tuple(queryRows, keyRows, outRows, lseRows, queryGradRows,
                           keyGradRows, causal);
  }
};

/// One pair of context parallel's cuDNN SDPA calls: query chunk
/// `queryChunk` against key chunk `keyChunk` on `views` (causal on the
/// diagonal). In the forward, `partialQuery` writes a chunk-sized partial
/// that is merged into the output (the query chunk's first pair writes it in
/// place); in the backward, `partialQuery` (`partialKey`) writes dQ (dK and
/// dV) as a chunk-sized partial added into the gradient (a chunk's first
/// pair writes it in place), and reads the query chunk's log-sum-exp packed
/// (views.lseRows is the chunk's rows). Pairs whose keys all come after
/// their queries are left out.
struct ContextPair {
  int64_t queryChunk, keyChunk;
  SdpaViews views;
  bool partialQuery, partialKey;
};

/// The pairs context_attention (`backward` false; query chunk outer) or
/// context_attention_grad (key chunk outer) runs on cuDNN, in order, for
/// s.seq local query rows laid out as `layout` says. Host code shared by
/// the kernels (ContextAttention.cu) and the graph test, so the test
/// validates the very graphs the kernels build.
std::vector<ContextPair> contextAttentionPairs(const AttentionShape &s,
                                               const ChunkLayout &layout,
                                               bool backward);

/// The exact kernels on rows that sit in the sequence as `layout` says
/// (ContextParallel.h; s.seq is the query's rows): no workspace.
/// With `docs`, masked by document as well.
void contextAttentionReference(Dtype type, const void *q, const void *k,
                               const void *v, void *out, float *lse,
                               const AttentionShape &s,
                               const ChunkLayout &layout, double scale,
                               cudaStream_t stream,
                               const DeviceDocuments &docs = {});
void contextAttentionGradReference(Dtype type, const void *q, const void *k,
                                   const void *v, const void *out,
                                   const float *lse, const void *dout, void *dq,
                                   void *dk, void *dv, const AttentionShape &s,
                                   const ChunkLayout &layout, double scale,
                                   cudaStream_t stream,
                                   const DeviceDocuments &docs = {});
/// Their one-chunk case.
void attentionReference(Dtype type, const void *q, const void *k, const void *v,
                        void *out, float *lse, const AttentionShape &s,
                        double scale, cudaStream_t stream,
                        const DeviceDocuments &docs = {});
void attentionGradReference(Dtype type, const void *q, const void *k,
                            const void *v, const void *out, const float *lse,
                            const void *dout, void *dq, void *dk, void *dv,
                            const AttentionShape &s, double scale,
                            cudaStream_t stream,
                            const DeviceDocuments &docs = {});

/// Whether this build has cuDNN's SDPA (the cudnn-frontend headers were
/// found at configure time).
bool haveCudnnAttention();

/// cuDNN's flash attention, forward and backward, bf16 or f16. Graphs are
/// built on first use of a problem (before a CUDA graph capture: the first
/// step runs eagerly) and reused.
class CudnnAttention {
public:
  CudnnAttention();
  ~CudnnAttention();
  CudnnAttention(const CudnnAttention &) = delete;
  CudnnAttention &operator=(const CudnnAttention &) = delete;

  /// `workspace` holds `workspaceBytes` (the memory plan's,
  /// titan/Contract/CUDAWorkspaces.h). cuDNN runs the heuristic's
  /// first engine that builds; where its workspace is larger than the
  /// plan's, it runs in a buffer outside the arena, allocated when the
  /// problem first runs (eagerly: growing it under a CUDA graph capture
  /// stops the run). Returns false (and runs nothing) where cuDNN has no
  /// engine for the problem (e.g. a head dim it does not take) and
  /// titan::cuda::attentionReferenceAllowed lets the exact kernels run it,
  /// after saying so once: the caller runs them. Where it does not, or
  /// TITAN_CUDNN_FALLBACK_FATAL=1 is set, the run stops, naming the problem
  /// and why. TITAN_CUDNN_LOG=1 prints each graph's engine and workspace
  /// when it first runs. `deterministic` (debug.deterministic) selects
  /// cuDNN's deterministic backward. `documents` masks by document through
  /// a score modifier, its offsets placing the problem's rows.
  bool forward(Dtype type, const void *q, const void *k, const void *v,
               void *out, float *lse, const AttentionShape &s,
               const SdpaViews &views, double scale, void *workspace,
               size_t workspaceBytes, cudaStream_t stream,
               const DeviceDocuments &documents = {});
  bool backward(Dtype type, const void *q, const void *k, const void *v,
                const void *out, const float *lse, const void *dout, void *dq,
                void *dk, void *dv, const AttentionShape &s,
                const SdpaViews &views, double scale, bool deterministic,
                void *workspace, size_t workspaceBytes, cudaStream_t stream,
                const DeviceDocuments &documents = {});

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// context_attention(_grad) (ContextParallel.h; s.seq is the query's
/// rows): in bf16/f16, each visible pair of a query chunk and a key chunk on
/// cuDNN's SDPA, causal on the diagonal pairs, a query chunk's partials
/// merged through their log-sum-exps, and the gradients of a chunk that
/// several pairs reach summed; pairs the mask excludes are skipped. f32,
/// and problems cuDNN has no engine for where the exact kernels are allowed
/// (CudnnAttention), run on the exact kernels. `workspace` holds
/// titan::cuda::contextAttention(Grad)WorkspaceBytes.
/// With `docs` (the whole sequence's starts), masked by document too: a
/// pair's rows that see none of its keys get (0, -inf) before the merge.
void contextAttention(CudnnAttention &cudnn, Dtype type, const void *q,
                      const void *k, const void *v, void *out, float *lse,
                      const AttentionShape &s, const ChunkLayout &layout,
                      double scale, void *workspace, size_t workspaceBytes,
                      cudaStream_t stream, const DeviceDocuments &docs = {});
void contextAttentionGrad(CudnnAttention &cudnn, Dtype type, const void *q,
                          const void *k, const void *v, const void *out,
                          const float *lse, const void *dout, void *dq,
                          void *dk, void *dv, const AttentionShape &s,
                          const ChunkLayout &layout, double scale,
                          bool deterministic, void *workspace,
                          size_t workspaceBytes, cudaStream_t stream,
                          const DeviceDocuments &docs = {});

/// An attention partial of some queries: outputs B x rows x Hq x D and f32
/// log-sum-exps B x Hq x lseRows, from the view's first row at `out` and
/// `lse`. A null `out` is a partial that saw no key (lse -inf).
struct PartialView {
  void *out;
  float *lse;
  int64_t rows, lseRows;
};

/// attention_merge on s.seq rows of each view: `result` = `a` and `b` joined
/// through their log-sum-exps ((0, -inf) where neither saw a key); it may
/// be `a`.
void attentionMerge(Dtype type, const PartialView &a, const PartialView &b,
                    const PartialView &result, const AttentionShape &s,
                    cudaStream_t stream);

} // namespace titanrt::cuda

#endif // TITANRT_CUDA_ATTENTION_H
