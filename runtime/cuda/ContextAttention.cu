//===- ContextAttention.cu - context parallel's attention on the GPU ------===//
//
// context_attention(_grad) and attention_merge (Attention.h). cuDNN's SDPA
// runs each visible pair of a query chunk and a key chunk on strided views
// of the buffers (contextAttentionPairs, CudnnGraphs.cpp, which the graph
// test validates): the first pair of a query chunk writes the output and
// log-sum-exp in place, each later one a chunk-sized partial that the merge
// kernel joins in; the backward's first pair reaching a gradient chunk
// writes it in place, later ones add a chunk-sized partial. Pairs whose
// keys all come after their queries are never run, and rows no pair
// reaches are cleared (output 0, lse -inf; gradients 0). With TorchTitan's
// block-causal mask every pair runs cuDNN's score modifier at the pair's
// global positions; a pair's rows whose document starts after its last key
// see none of it, and the forward sets them to (0, -inf) before the merge
// whatever cuDNN wrote there (their backward terms are 0: the final
// log-sum-exp is finite and the masked probabilities are 0). f32 runs on the
// exact kernels (AttentionReference.cu), as titan.attention does, and so
// does a bf16/f16 problem cuDNN cannot run where CudnnAttention allows it
// (short sequences; elsewhere it stops the run).
//
//===----------------------------------------------------------------------===//

#include "Attention.h"

#include "DeviceUtils.cuh"

#include "titan/Contract/CUDAWorkspaces.h"

#include <type_traits>

using namespace titanrt;
using namespace titanrt::cuda;
using namespace titanrt::cuda::device;
using titan::cuda::alignTo256;

namespace {

/// Grid (rows, heads, batch): one row of each view per block, the head dim
/// over its threads. Every thread reads both log-sum-exps before thread 0
/// writes the result's (which may be a's).
template <typename T>
__global__ void mergeKernel(PartialView a, PartialView b, PartialView r,
                            AttentionShape s) {
  int64_t i = blockIdx.x, h = blockIdx.y, n = blockIdx.z;
  int64_t D = s.headDim, ld = s.qHeads * D, head = n * s.qHeads + h;
  float la = a.out ? a.lse[head * a.lseRows + i] : -INFINITY;
  float lb = b.out ? b.lse[head * b.lseRows + i] : -INFINITY;
  float max = fmaxf(la, lb);
  bool empty = max == -INFINITY;
  float merged = empty ? max : max + log1pf(expf(fminf(la, lb) - max));
  // A weight of 0 (that side saw no key) never reads its output.
  float wa = empty ? 0.0f : expf(la - merged);
  float wb = empty ? 0.0f : expf(lb - merged);
  const T *ao =
      a.out ? static_cast<const T *>(a.out) + (n * a.rows + i) * ld + h * D
            : nullptr;
  const T *bo =
      b.out ? static_cast<const T *>(b.out) + (n * b.rows + i) * ld + h * D
            : nullptr;
  T *ro = static_cast<T *>(r.out) + (n * r.rows + i) * ld + h * D;
  for (int64_t d = threadIdx.x; d < D; d += kThreads)
    store(ro, d,
          (wa == 0.0f ? 0.0f : wa * load(ao, d)) +
              (wb == 0.0f ? 0.0f : wb * load(bo, d)));
  __syncthreads();
  if (threadIdx.x == 0)
    r.lse[head * r.lseRows + i] = merged;
}

/// dst += src on `rows` rows of `width` per batch, the batches dstRows and
/// srcRows rows apart: a chunk-sized partial gradient into its chunk.
template <typename T>
__global__ void addRowsKernel(T *dst, int64_t dstRows, const T *src,
                              int64_t srcRows, int64_t rows, int64_t width,
                              int64_t total) {
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total;
       e += int64_t(gridDim.x) * blockDim.x) {
    int64_t n = e / (rows * width), at = e % (rows * width);
    int64_t o = n * dstRows * width + at;
    store(dst, o, load(dst, o) + load(src, n * srcRows * width + at));
  }
}

/// Grid (rows, heads, batch): a forward partial's rows whose document
/// starts after `lastKey` (the pair's last key position) saw no key of the
/// pair: (0, -inf), whatever the masked softmax left there. `queryOffset` is
/// the view's first row's position; `starts` the whole sequence's, rows of
/// startsSeq.
template <typename T>
__global__ void clearUnseenRowsKernel(PartialView v, AttentionShape s,
                                      const int32_t *starts, int64_t startsSeq,
                                      int64_t queryOffset, int64_t lastKey) {
  int64_t i = blockIdx.x, h = blockIdx.y, n = blockIdx.z;
  if (starts[n * startsSeq + queryOffset + i] <= lastKey)
    return;
  int64_t D = s.headDim;
  T *o = static_cast<T *>(v.out) + (n * v.rows + i) * s.qHeads * D + h * D;
  for (int64_t d = threadIdx.x; d < D; d += kThreads)
    store(o, d, 0.0f);
  if (threadIdx.x == 0)
    v.lse[(n * s.qHeads + h) * v.lseRows + i] = -INFINITY;
}

void clearUnseenRows(Dtype type, const PartialView &v, const AttentionShape &s,
                     const DeviceDocuments &docs, cudaStream_t stream) {
  dim3 grid(unsigned(s.seq), unsigned(s.qHeads), unsigned(s.batch));
  dispatch(type, [&](auto *tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    clearUnseenRowsKernel<T><<<grid, kThreads, 0, stream>>>(
        v, s, docs.starts, docs.seq, docs.queryOffset,
        docs.keyOffset + s.seq - 1);
  });
  checkLaunch("context_attention (rows outside the pair's documents)");
}

/// The documents of one pair: its chunks' global positions (none without
/// the mask).
DeviceDocuments pairDocuments(const DeviceDocuments &docs,
                              const ChunkLayout &layout, const ContextPair &p) {
  if (!docs)
    return {};
  DeviceDocuments pair = docs;
  pair.queryOffset = layout.queryStarts[p.queryChunk];
  pair.keyOffset = layout.keyStarts[p.keyChunk];
  return pair;
}

/// `bytes` on from `base`.
template <typename P> P *advance(P *base, int64_t bytes) {
  using Byte = std::conditional_t<std::is_const_v<P>, const char, char>;
  return reinterpret_cast<P *>(reinterpret_cast<Byte *>(base) + bytes);
}

/// Rows `row` on of a B x rows x heads x D buffer.
template <typename P>
P *rowsFrom(P *base, Dtype type, int64_t row, int64_t heads, int64_t headDim) {
  return advance(base, row * heads * headDim * dtypeBytes(type));
}

void addRows(Dtype type, void *dst, int64_t dstRows, const void *src,
             int64_t srcRows, int64_t batch, int64_t rows, int64_t width,
             cudaStream_t stream) {
  int64_t total = batch * rows * width;
  dispatch(type, [&](auto *tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    addRowsKernel<T><<<blocksFor(total), kThreads, 0, stream>>>(
        static_cast<T *>(dst), dstRows, static_cast<const T *>(src), srcRows,
        rows, width, total);
  });
  checkLaunch("context_attention_grad (sum of partials)");
}

/// Copies query chunk `queryChunk`'s log-sum-exps (B x Hq x c of the
/// B x Hq x s.seq `lse`) to `packed`, B x Hq x c.
void packLse(float *packed, const float *lse, const AttentionShape &s,
             int64_t c, int64_t queryChunk, cudaStream_t stream) {
  size_t row = size_t(c) * sizeof(float);
  if (cudaMemcpy2DAsync(packed, row, lse + queryChunk * c,
                        size_t(s.seq) * sizeof(float), row,
                        size_t(s.batch * s.qHeads), cudaMemcpyDeviceToDevice,
                        stream) != cudaSuccess)
    kernelFatal("context_attention_grad: cudaMemcpy2DAsync of the "
                "log-sum-exp failed");
}

/// Zeroes `rows` rows of `width` per batch, the batches bufferRows apart.
void clearRows(Dtype type, void *dst, int64_t bufferRows, int64_t batch,
               int64_t rows, int64_t width, cudaStream_t stream) {
  size_t row = size_t(width * dtypeBytes(type));
  if (cudaMemset2DAsync(dst, size_t(bufferRows) * row, 0, size_t(rows) * row,
                        size_t(batch), stream) != cudaSuccess)
    kernelFatal("context_attention_grad: cudaMemset2DAsync failed");
}

/// The forward on cuDNN, pair by pair (contextAttentionPairs); false
/// (after any number of pairs) when cuDNN has no engine for one and the
/// exact kernels may stand in: they then rerun all.
bool pairsForward(CudnnAttention &cudnn, Dtype type, const void *q,
                  const void *k, const void *v, void *out, float *lse,
                  const AttentionShape &s, const ChunkLayout &layout,
                  double scale, void *workspace, size_t workspaceBytes,
                  cudaStream_t stream, const DeviceDocuments &docs) {
  int64_t c = layout.chunk, D = s.headDim;
  AttentionShape pair{s.batch, c, s.qHeads, s.kvHeads, D};
  int64_t partialBytes = alignTo256(s.batch * c * s.qHeads * D * 4);
  int64_t lseBytes = alignTo256(s.batch * s.qHeads * c * 4);
  PartialView part{
      workspace, static_cast<float *>(advance(workspace, partialBytes)), c, c};
  void *scratch = advance(workspace, partialBytes + lseBytes);
  size_t scratchBytes = workspaceBytes - size_t(partialBytes + lseBytes);
  auto whole = [&](int64_t qc) {
    return PartialView{rowsFrom(out, type, qc * c, s.qHeads, D), lse + qc * c,
                       s.seq, s.seq};
  };
  bool written[ChunkLayout::kMaxQueryChunks] = {};
  for (const ContextPair &p : contextAttentionPairs(s, layout, false)) {
    PartialView into = p.partialQuery ? part : whole(p.queryChunk);
    DeviceDocuments pairDocs = pairDocuments(docs, layout, p);
    if (!cudnn.forward(type, rowsFrom(q, type, p.queryChunk * c, s.qHeads, D),
                       rowsFrom(k, type, p.keyChunk * c, s.kvHeads, D),
                       rowsFrom(v, type, p.keyChunk * c, s.kvHeads, D),
                       into.out, into.lse, pair, p.views, scale, scratch,
                       scratchBytes, stream, pairDocs))
      return false;
    if (docs)
      clearUnseenRows(type, into, pair, pairDocs, stream);
    if (p.partialQuery)
      attentionMerge(type, whole(p.queryChunk), part, whole(p.queryChunk), pair,
                     stream);
    written[p.queryChunk] = true;
  }
  for (int64_t qc = 0; qc < layout.queryChunks; ++qc)
    if (!written[qc]) // no visible key: (0, -inf)
      attentionMerge(type, {nullptr, nullptr, 0, 0}, {nullptr, nullptr, 0, 0},
                     whole(qc), pair, stream);
  return true;
}

/// The backward on cuDNN, pair by pair (key chunk outer); false as
/// pairsForward.
bool pairsBackward(CudnnAttention &cudnn, Dtype type, const void *q,
                   const void *k, const void *v, const void *out,
                   const float *lse, const void *dout, void *dq, void *dk,
                   void *dv, const AttentionShape &s, const ChunkLayout &layout,
                   double scale, bool deterministic, void *workspace,
                   size_t workspaceBytes, cudaStream_t stream,
                   const DeviceDocuments &docs) {
  int64_t c = layout.chunk, keySeq = layout.keySeq(), D = s.headDim;
  AttentionShape pair{s.batch, c, s.qHeads, s.kvHeads, D};
  int64_t dqBytes = alignTo256(s.batch * c * s.qHeads * D * 4);
  int64_t dkvBytes = alignTo256(s.batch * c * s.kvHeads * D * 4);
  void *dqPart = workspace, *dkPart = advance(workspace, dqBytes);
  void *dvPart = advance(dkPart, dkvBytes);
  void *scratch = advance(dvPart, dkvBytes);
  size_t scratchBytes = workspaceBytes - size_t(dqBytes + 2 * dkvBytes);
  // The packed log-sum-exp (contextAttentionPairs) sits after the 16-bit dQ
  // partial, in the region the plan sizes for an f32 one
  // (contextAttentionGradWorkspaceBytes): 2 B c Hq D bytes are free there,
  // at least the lse's 4 B Hq c for any head dim of 2 or more.
  int64_t lseOffset = s.batch * c * s.qHeads * D * dtypeBytes(type);
  if (lseOffset + s.batch * s.qHeads * c * 4 > dqBytes)
    kernelFatal("context_attention_grad: head dim " + std::to_string(D) +
                " leaves no room for the packed log-sum-exp");
  float *packedLse = static_cast<float *>(advance(dqPart, lseOffset));
  bool dqWritten[ChunkLayout::kMaxQueryChunks] = {};
  bool dkvWritten[ChunkLayout::kMaxKeyChunks] = {};
  int64_t packedChunk = -1; // whose log-sum-exp packedLse holds
  for (const ContextPair &p : contextAttentionPairs(s, layout, true)) {
    int64_t qc = p.queryChunk, kc = p.keyChunk;
    void *dqView = rowsFrom(dq, type, qc * c, s.qHeads, D);
    void *dkView = rowsFrom(dk, type, kc * c, s.kvHeads, D);
    void *dvView = rowsFrom(dv, type, kc * c, s.kvHeads, D);
    if (qc != packedChunk)
      packLse(packedLse, lse, s, c, qc, stream);
    packedChunk = qc;
    if (!cudnn.backward(
            type, rowsFrom(q, type, qc * c, s.qHeads, D),
            rowsFrom(k, type, kc * c, s.kvHeads, D),
            rowsFrom(v, type, kc * c, s.kvHeads, D),
            rowsFrom(out, type, qc * c, s.qHeads, D), packedLse,
            rowsFrom(dout, type, qc * c, s.qHeads, D),
            p.partialQuery ? dqPart : dqView, p.partialKey ? dkPart : dkView,
            p.partialKey ? dvPart : dvView, pair, p.views, scale, deterministic,
            scratch, scratchBytes, stream, pairDocuments(docs, layout, p)))
      return false;
    if (p.partialQuery)
      addRows(type, dqView, s.seq, dqPart, c, s.batch, c, s.qHeads * D, stream);
    if (p.partialKey)
      for (auto [view, part] : {std::pair(dkView, dkPart), {dvView, dvPart}})
        addRows(type, view, keySeq, part, c, s.batch, c, s.kvHeads * D, stream);
    dqWritten[qc] = dkvWritten[kc] = true;
  }
  for (int64_t qc = 0; qc < layout.queryChunks; ++qc)
    if (!dqWritten[qc])
      clearRows(type, rowsFrom(dq, type, qc * c, s.qHeads, D), s.seq, s.batch,
                c, s.qHeads * D, stream);
  for (int64_t kc = 0; kc < layout.keyChunks; ++kc)
    if (!dkvWritten[kc])
      for (void *grad : {dk, dv})
        clearRows(type, rowsFrom(grad, type, kc * c, s.kvHeads, D), keySeq,
                  s.batch, c, s.kvHeads * D, stream);
  return true;
}

} // namespace

void titanrt::cuda::attentionMerge(Dtype type, const PartialView &a,
                                   const PartialView &b,
                                   const PartialView &result,
                                   const AttentionShape &s,
                                   cudaStream_t stream) {
  if (s.seq > 0x7fffffff || s.qHeads > 65535 || s.batch > 65535)
    kernelFatal("attention_merge: at most 2^31 - 1 rows and 65535 heads and "
                "batches; got S " +
                std::to_string(s.seq) + " H " + std::to_string(s.qHeads) +
                " B " + std::to_string(s.batch));
  dim3 grid(unsigned(s.seq), unsigned(s.qHeads), unsigned(s.batch));
  dispatch(type, [&](auto *tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    mergeKernel<T><<<grid, kThreads, 0, stream>>>(a, b, result, s);
  });
  checkLaunch("attention_merge");
}

void titanrt::cuda::contextAttention(
    CudnnAttention &cudnn, Dtype type, const void *q, const void *k,
    const void *v, void *out, float *lse, const AttentionShape &s,
    const ChunkLayout &layout, double scale, void *workspace,
    size_t workspaceBytes, cudaStream_t stream, const DeviceDocuments &docs) {
  if (type != Dtype::f32 &&
      pairsForward(cudnn, type, q, k, v, out, lse, s, layout, scale, workspace,
                   workspaceBytes, stream, docs))
    return;
  contextAttentionReference(type, q, k, v, out, lse, s, layout, scale, stream,
                            docs);
}

void titanrt::cuda::contextAttentionGrad(
    CudnnAttention &cudnn, Dtype type, const void *q, const void *k,
    const void *v, const void *out, const float *lse, const void *dout,
    void *dq, void *dk, void *dv, const AttentionShape &s,
    const ChunkLayout &layout, double scale, bool deterministic,
    void *workspace, size_t workspaceBytes, cudaStream_t stream,
    const DeviceDocuments &docs) {
  if (type != Dtype::f32 &&
      pairsBackward(cudnn, type, q, k, v, out, lse, dout, dq, dk, dv, s, layout,
                    scale, deterministic, workspace, workspaceBytes, stream,
                    docs))
    return;
  contextAttentionGradReference(type, q, k, v, out, lse, dout, dq, dk, dv, s,
                                layout, scale, stream, docs);
}
