//===- KernelABI.cpp - the CUDA target's kernel entry points --------------===//
//
// The titan_rt_<kernel>_<dtype> symbols of KernelABI.h on device buffers:
// each decodes its call as the CPU target's does (KernelCall.h) and
// enqueues the kernel on the compute stream; nothing synchronizes, so the
// whole step can be captured as one CUDA graph. 16-bit entries read and
// write bf16/f16 buffers directly (f32 arithmetic inside, one rounding per
// output), so they need none of the CPU target's widened copies. f64
// exists only on the CPU target, for the gradient checks.
//
//===----------------------------------------------------------------------===//

#include "titanrt/KernelABI.h"

#include "Attention.h"
#include "Communicator.h"
#include "ContextParallel.h"
#include "CudaDevice.h"
#include "Elementwise.h"
#include "Error.h"
#include "Float8.h"
#include "FusedKernels.h"
#include "KernelArgs.h"
#include "KernelCall.h"
#include "LocalShard.h"

#include "titan/Contract/CUDAWorkspaces.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

using namespace titanrt;
using namespace titanrt::cuda;
using titanrt::abi::Call;
using titanrt::abi::Shape;

namespace {

/// One call's arguments with its element types.
struct Args : Call {
  const int64_t *types;
  /// Buffer i's element type (operands first, then results).
  Dtype type(int i) const {
    if (std::optional<Dtype> t = cudaDtype(types[2 + i]))
      return *t;
    kernelFatal("CUDA target: buffer " + std::to_string(i) +
                " of a kernel call has element type code " +
                std::to_string(types[2 + i]) + ", which no CUDA kernel takes");
  }
  /// Bytes per element of buffer i.
  int64_t bytes(int i) const { return dtypeBytes(type(i)); }
  cudaStream_t stream() const { return kernelContext().stream; }
};

/// Stops the step on a decoding's message, if it has one.
void check(const std::string &error) {
  if (!error.empty())
    kernelFatal("CUDA target: " + error);
}

void embedding(const Args &c) {
  int out = c.hasVocabStart() ? 3 : 2;
  Shape weight = c.shape(0);
  cuda::embedding(c.type(0), c.buffers[0], c.buf<int32_t>(1), c.buffers[out],
                  c.shape(1).numel(), weight.dim(0), weight.dim(1),
                  c.vocabStart(), c.stream());
}
void embeddingGrad(const Args &c) {
  int out = c.hasVocabStart() ? 3 : 2;
  Shape table = c.shape(out);
  cuda::embeddingGrad(c.type(0), c.buffers[0], c.buf<int32_t>(1),
                      c.buffers[out], c.shape(1).numel(), table.dim(0),
                      table.dim(1), c.vocabStart(), c.workspace, c.stream());
}
/// ints: {scaled, original_max_position_embeddings}; floats: {theta,
/// scaling_factor, low_freq_factor, high_freq_factor}
void ropeAngles(const Args &c) {
  Shape s = c.shape(0);
  cuda::ropeAngles(c.buf<float>(0), s.dim(0), s.dim(1), c.floats[0],
                   c.ints[0] != 0, c.floats[1], c.floats[2], c.floats[3],
                   double(c.ints[1]), c.stream());
}
AttentionShape attentionShape(const Args &c) {
  AttentionDims d = attentionDims(c.shape(0), c.shape(1));
  check(d.error);
  return {d.batch, d.seq, d.qHeads, d.kvHeads, d.headDim};
}
/// Whether the call has the optional document_starts after `inputs`
/// required inputs (the `types` header counts the inputs).
bool hasDocumentStarts(const Args &c, int64_t inputs) {
  return c.types && c.types[0] > inputs;
}
/// The optional document starts after `inputs` required inputs (i32 [B,
/// S]), and where the outputs begin.
struct DocumentInput {
  DeviceDocuments docs;
  int out;
};
/// Checks that they are the query's batch x at least `positions` (every
/// global position the kernel reads): cuDNN's graphs and the exact kernels
/// index them by the rows' positions.
DocumentInput documentInput(const Args &c, int inputs, int64_t batch,
                            int64_t positions) {
  if (!hasDocumentStarts(c, inputs))
    return {{}, inputs};
  Shape starts = c.shape(inputs);
  if (starts.rank != 2 || starts.dim(0) != batch || starts.dim(1) < positions)
    check("attention: document_starts must be B x S with B = " +
          std::to_string(batch) + " and S >= " + std::to_string(positions));
  return {{c.buf<int32_t>(inputs), starts.dim(1)}, inputs + 1};
}
/// One past the last sequence position of `layout`'s chunks.
int64_t positionsOf(const ChunkLayout &layout) {
  int64_t end = 0;
  for (int64_t i = 0; i < layout.queryChunks; ++i)
    end = std::max(end, layout.queryStarts[i] + layout.chunk);
  for (int64_t i = 0; i < layout.keyChunks; ++i)
    end = std::max(end, layout.keyStarts[i] + layout.chunk);
  return end;
}
/// (q, k, v[, document_starts]) -> (out, lse); floats: {scale}
void attention(const Args &c) {
  AttentionShape s = attentionShape(c);
  Dtype t = c.type(0);
  auto [docs, out] = documentInput(c, 3, s.batch, s.seq);
  if (t != Dtype::f32 && kernelContext().attention.forward(
                             t, c.buffers[0], c.buffers[1], c.buffers[2],
                             c.buffers[out], c.buf<float>(out + 1), s,
                             SdpaViews::whole(s.seq), c.floats[0], c.workspace,
                             size_t(titan::cuda::attentionWorkspaceBytes(
                                 s.batch, s.qHeads, s.seq)),
                             c.stream(), docs))
    return;
  attentionReference(t, c.buffers[0], c.buffers[1], c.buffers[2],
                     c.buffers[out], c.buf<float>(out + 1), s, c.floats[0],
                     c.stream(), docs);
}
/// (q, k, v, out, lse, dout[, document_starts]) -> (dq, dk, dv); floats:
/// {scale}; ints: {deterministic}
void attentionGrad(const Args &c) {
  AttentionShape s = attentionShape(c);
  Dtype t = c.type(0);
  bool deterministic = c.ints[0] != 0;
  auto [docs, out] = documentInput(c, 6, s.batch, s.seq);
  if (t != Dtype::f32 &&
      kernelContext().attention.backward(
          t, c.buffers[0], c.buffers[1], c.buffers[2], c.buffers[3],
          c.buf<float>(4), c.buffers[5], c.buffers[out], c.buffers[out + 1],
          c.buffers[out + 2], s, SdpaViews::whole(s.seq), c.floats[0],
          deterministic, c.workspace,
          size_t(titan::cuda::attentionGradWorkspaceBytes(
              s.batch, s.qHeads, s.seq, s.headDim, deterministic)),
          c.stream(), docs))
    return;
  attentionGradReference(t, c.buffers[0], c.buffers[1], c.buffers[2],
                         c.buffers[3], c.buf<float>(4), c.buffers[5],
                         c.buffers[out], c.buffers[out + 1], c.buffers[out + 2],
                         s, c.floats[0], c.stream(), docs);
}
/// (q, k, v[, document_starts]) -> (out, lse); floats: {scale}; ints:
/// {degree, kv_shift, load_balanced, number of cp axes, axes...}
void contextAttention(const Args &c) {
  AttentionShape s = attentionShape(c);
  ChunkLayout layout = contextParallelLayout("context_attention", c.ints, s.seq,
                                             c.shape(1).dim(1));
  auto [docs, out] = documentInput(c, 3, s.batch, positionsOf(layout));
  cuda::contextAttention(kernelContext().attention, c.type(0), c.buffers[0],
                         c.buffers[1], c.buffers[2], c.buffers[out],
                         c.buf<float>(out + 1), s, layout, c.floats[0],
                         c.workspace,
                         size_t(titan::cuda::contextAttentionWorkspaceBytes(
                             s.batch, s.qHeads, s.seq, s.headDim)),
                         c.stream(), docs);
}
/// (q, k, v, out, lse, dout[, document_starts]) -> (dq, dk, dv); floats:
/// {scale}; ints: {deterministic, then contextAttention's}.
void contextAttentionGrad(const Args &c) {
  AttentionShape s = attentionShape(c);
  bool deterministic = c.ints[0] != 0;
  ChunkLayout layout = contextParallelLayout(
      "context_attention_grad", c.ints + 1, s.seq, c.shape(1).dim(1));
  auto [docs, out] = documentInput(c, 6, s.batch, positionsOf(layout));
  cuda::contextAttentionGrad(
      kernelContext().attention, c.type(0), c.buffers[0], c.buffers[1],
      c.buffers[2], c.buffers[3], c.buf<float>(4), c.buffers[5], c.buffers[out],
      c.buffers[out + 1], c.buffers[out + 2], s, layout, c.floats[0],
      deterministic, c.workspace,
      size_t(titan::cuda::contextAttentionGradWorkspaceBytes(
          s.batch, s.qHeads, s.kvHeads, s.seq, s.headDim, deterministic)),
      c.stream(), docs);
}
/// (out, lse, other_out, other_lse) -> (result, result_lse); the
/// log-sum-exps are f32, as attention's.
void attentionMerge(const Args &c) {
  Shape o = c.shape(0);
  int64_t seq = o.dim(1);
  cuda::attentionMerge(c.type(0), {c.buffers[0], c.buf<float>(1), seq, seq},
                       {c.buffers[2], c.buf<float>(3), seq, seq},
                       {c.buffers[4], c.buf<float>(5), seq, seq},
                       {o.dim(0), seq, o.dim(2), o.dim(2), o.dim(3)},
                       c.stream());
}
/// ints: {} or {accumulate}: kernel-fuse-gemm-accumulate's GEMM that adds
/// into its result (cuBLASLt's beta = 1).
void gemm(const Args &c, LinearProduct product, GemmDims d) {
  GemmProblem p{product,
                d.m,
                d.k,
                d.n,
                c.type(0),
                c.type(2),
                c.ints != nullptr && c.ints[0] != 0};
  kernelContext().gemms.run(p, c.buffers[0], c.buffers[1], c.buffers[2],
                            c.workspace, c.stream());
}
void linear(const Args &c) {
  gemm(c, LinearProduct::Forward, linearDims(c.shape(0), c.shape(1)));
}
void linearGradInput(const Args &c) {
  gemm(c, LinearProduct::GradInput,
       linearGradInputDims(c.shape(0), c.shape(1)));
}
void linearGradWeight(const Args &c) {
  gemm(c, LinearProduct::GradWeight,
       linearGradWeightDims(c.shape(0), c.shape(1)));
}
/// Async TP's collective matmuls (runtime/lib/AsyncTensorParallel.h has
/// the ring): ints {count, dim, grad_input, axis_mask}. The shifts run on
/// the tp group's NCCL stream, the GEMMs (cuBLASLt) and copies on the
/// compute stream; the communicator orders them by events (a shift starts
/// after the compute stream's work so far, finish() makes the compute
/// stream wait for it), so a shard's transfer overlaps the GEMMs of the
/// shard before it; RingSchedule.h has the order of shards and buffers.
/// Unverified on a GPU.
struct Ring : RingCall {
  int64_t index = 0, size = 1;
};
/// The call's ints and this rank's place in its ring.
Ring ring(const Args &c, const char *kernel) {
  Ring r;
  static_cast<RingCall &>(r) =
      decodeRingCall(kernel, c.ints, activeCommunicator() != nullptr);
  check(r.error);
  RingPlace place = ringPlace(r);
  r.index = place.index;
  r.size = place.size;
  return r;
}
void ringGemm(Dtype type, bool gradInput, int64_t rows, int64_t in, int64_t out,
              const void *lhs, const void *weight, void *result,
              bool accumulate, void *workspace, cudaStream_t stream) {
  GemmDims d = ringGemmDims(gradInput, rows, in, out);
  GemmProblem p{gradInput ? LinearProduct::GradInput : LinearProduct::Forward,
                d.m,
                d.k,
                d.n,
                type,
                type,
                accumulate};
  kernelContext().gemms.run(p, lhs, weight, result, workspace, stream);
}
/// The all-gather ring on the device (RingSchedule.h) over `outer` shards
/// of `shardBytes` each, of `type`: every step copies the shard held into
/// `gathered` at its place and queues `gemms(chunk)` on its rows while the
/// next shard arrives in `incoming`.
template <typename ChunkGemms>
void gatherRing(const Args &c, const Ring &r, int64_t outer, Dtype type,
                int64_t shardBytes, char *gathered, void *const incoming[2],
                const char *kernel, ChunkGemms &&gemms) {
  for (int64_t s = 0; s < r.size; ++s) {
    ring::AllGatherStep step = ring::allGatherStep(r.index, r.size, s);
    const void *held =
        step.held == ring::kOutside ? c.buffers[0] : incoming[step.held];
    std::unique_ptr<Request> next;
    if (step.incoming != ring::kOutside)
      next = communicator().sendRecv(held, incoming[step.incoming], type,
                                     outer * shardBytes / dtypeBytes(type), 1,
                                     r.axisMask);
    checkCuda(cudaMemcpy2DAsync(gathered + step.chunk * shardBytes,
                                size_t(r.size * shardBytes), held,
                                size_t(shardBytes), size_t(shardBytes),
                                size_t(outer), cudaMemcpyDeviceToDevice,
                                c.stream()),
              std::string(kernel) + "'s shard copy");
    gemms(step.chunk);
    if (next)
      next->finish();
  }
}

/// The reduce-scatter ring on the device over a result of `shard`
/// elements of `type`: every step queues `term(chunk, partial)`, this
/// rank's term of shard `chunk`, into a partial sum (the result on the
/// last step), adds the sums received and sends them on.
template <typename ChunkTerm>
void scatterRing(const Args &c, const Ring &r, void *result, Dtype type,
                 int64_t shard, void *const partials[2], void *received,
                 ChunkTerm &&term) {
  std::unique_ptr<Request> pending;
  for (int64_t s = 0; s < r.size; ++s) {
    ring::ReduceScatterStep step = ring::reduceScatterStep(r.index, r.size, s);
    char *partial = static_cast<char *>(
        step.partial == ring::kOutside ? result : partials[step.partial]);
    term(step.chunk, partial);
    if (step.addsReceived) {
      pending->finish();
      pending.reset();
      cuda::add(type, partial, received, partial, shard, c.stream());
    }
    if (step.sends)
      pending = communicator().sendRecv(partial, received, type, shard, 1,
                                        r.axisMask);
  }
}
/// (input, weight...) -> (gathered, result...)
void allGatherLinear(const Args &c) {
  Ring r = ring(c, "all_gather_linear");
  Shape x = c.shape(0);
  RingLayout l = ringLayout(x, r.dim);
  int64_t count = r.count, in = x.back();
  Dtype type = c.type(0);
  int64_t bytes = c.bytes(0);
  AllGatherLinearCarve carve = carveAllGatherLinear(l, in, bytes);
  int64_t shard = carve.shardBytes;
  char *ws = static_cast<char *>(c.workspace);
  char *gathered = static_cast<char *>(c.buffers[1 + count]);
  void *buffers[2] = {ws + carve.incoming[0], ws + carve.incoming[1]};
  gatherRing(
      c, r, l.outer, type, shard, gathered, buffers, "all_gather_linear",
      [&](int64_t chunk) {
        for (int64_t i = 0; i < count; ++i) {
          int64_t out = c.shape(int(2 + count + i)).back();
          char *result = static_cast<char *>(c.buffers[2 + count + i]);
          for (int64_t o = 0; o < l.outer; ++o)
            ringGemm(type, r.gradInput, l.rows, in, out,
                     gathered + (o * r.size + chunk) * shard, c.buffers[1 + i],
                     result + ((o * r.size + chunk) * l.rows * out) * bytes,
                     /*accumulate=*/false, c.workspace, c.stream());
        }
      });
}
/// (lhs, weight, lhs, weight, ...) -> (result)
void linearReduceScatter(const Args &c) {
  Ring r = ring(c, "linear_reduce_scatter");
  int64_t count = r.count;
  Shape result = c.shape(int(2 * count));
  RingLayout l = ringLayout(result, r.dim);
  int64_t out = result.back();
  Dtype type = c.type(0);
  int64_t bytes = c.bytes(0);
  LinearReduceScatterCarve carve = carveLinearReduceScatter(l, out, bytes);
  char *ws = static_cast<char *>(c.workspace);
  void *partials[2] = {ws + carve.partials[0], ws + carve.partials[1]};
  scatterRing(c, r, c.buffers[2 * count], type, carve.shardElements, partials,
              ws + carve.received, [&](int64_t chunk, char *partial) {
                for (int64_t i = 0; i < count; ++i) {
                  int64_t in = c.shape(int(2 * i)).back();
                  const char *lhs = static_cast<const char *>(c.buffers[2 * i]);
                  for (int64_t o = 0; o < l.outer; ++o)
                    ringGemm(type, r.gradInput, l.rows, in, out,
                             lhs + ((o * r.size + chunk) * l.rows * in) * bytes,
                             c.buffers[2 * i + 1],
                             partial + o * l.rows * out * bytes,
                             /*accumulate=*/i > 0, c.workspace, c.stream());
                }
              });
}
/// floats: {value}
void fill(const Args &c) {
  cuda::fill(c.type(0), c.buffers[0], c.shape(0).numel(), c.floats[0],
             c.stream());
}
/// ints: {number of inputs}; the gradients are f32.
void globalNorm(const Args &c) {
  int64_t count = c.ints[0];
  std::vector<NormTensor> tensors;
  tensors.reserve(size_t(count));
  for (int64_t i = 0; i < count; ++i)
    tensors.push_back({c.buf<float>(int(i)), c.shape(int(i)).numel()});
  cuda::globalNorm(tensors.data(), count, c.buf<float>(int(count)), c.workspace,
                   c.stream());
}
/// ints: {warmup_steps, decay type}; floats: {lr, decay_ratio (-1: none),
/// min_lr_factor}.
void lrSchedule(const Args &c) {
  cuda::lrSchedule(c.buf<int64_t>(0), c.buf<int64_t>(1), c.buf<float>(2),
                   c.floats[0], c.ints[0], c.floats[1], int(c.ints[1]),
                   c.floats[2], c.stream());
}
/// titan.slice, titan.slice_grad (the box in zeros) and titan.concat: box
/// copies (runtime/lib/KernelABI.cpp has the contracts).
void slice(const Args &c) {
  Shape in = c.shape(0), out = c.shape(1);
  cuda::copyBox(c.buffers[0], c.buffers[1], size_t(c.bytes(0)),
                slicePlan(in, out, c.ints + 1), c.stream());
}
void sliceGrad(const Args &c) {
  Shape grad = c.shape(0), out = c.shape(1);
  checkCuda(cudaMemsetAsync(c.buffers[1], 0, size_t(out.numel() * c.bytes(1)),
                            c.stream()),
            "slice_grad: zeroing its result");
  cuda::copyBox(c.buffers[0], c.buffers[1], size_t(c.bytes(0)),
                sliceGradPlan(grad, out, c.ints + 1), c.stream());
}
void concat(const Args &c) {
  int64_t count = c.ints[0], dim = c.ints[1];
  Shape out = c.shape(int(count));
  int64_t offset = 0;
  for (int64_t i = 0; i < count; ++i) {
    Shape in = c.shape(int(i));
    cuda::copyBox(c.buffers[i], c.buffers[count], size_t(c.bytes(int(i))),
                  concatPlan(in, out, dim, offset), c.stream());
    offset += in.dim(dim);
  }
}

/// dist.local_shard: one strided device copy per kept part; ints: {dim,
/// load_balanced, number of axes, axis indices...}
void localShard(const Args &c) {
  GroupPlace place = groupPlace(c.ints + 2);
  LocalShardPlan p = planLocalShard(c.shape(0), c.ints[0], place.index,
                                    {place.size, c.ints[1] != 0});
  size_t bytes = size_t(c.bytes(0));
  auto *in = static_cast<const char *>(c.buffers[0]);
  auto *out = static_cast<char *>(c.buffers[1]);
  for (int64_t j = 0; j < p.parts; ++j)
    checkCuda(cudaMemcpy2DAsync(out + p.dstOffset[j] * bytes,
                                p.dstPitch * bytes, in + p.srcOffset[j] * bytes,
                                p.srcPitch * bytes, p.width * bytes, p.rows,
                                cudaMemcpyDeviceToDevice, c.stream()),
              "dist.local_shard");
}
void castKernel(const Args &c) {
  cuda::cast(c.type(0), c.buffers[0], c.type(1), c.buffers[1],
             c.shape(0).numel(), c.stream());
}

/// Float8 (runtime/lib/KernelABI.cpp has the contracts).
void amax(const Args &c) {
  Shape s = c.shape(0);
  cuda::amax(c.type(0), c.buffers[0], c.buf<float>(1), s.rows(), s.back(),
             int(c.ints[0]), c.stream());
}
void quantize(const Args &c) {
  Shape s = c.shape(0);
  cuda::quantize(c.type(0), c.buffers[0], c.buf<float>(1), c.buf<uint8_t>(2),
                 s.rows(), s.back(), scaleMode(c.shape(1)), c.ints[0] == 1,
                 c.ints[1] != 0, c.stream());
}
/// Float8 operand `i` of a scaled GEMM, its scale `i + 1`: a transposed
/// one (`transposed`, its last dimension first) as the matrix it was.
cuda::ScaledOperand scaledOperand(const Args &c, int i, bool transposed) {
  ScaledOperandDims d =
      scaledOperandDims(c.shape(i), c.shape(i + 1), transposed);
  return {c.buf<uint8_t>(i),   c.type(i),      d.rows,    d.cols,
          c.buf<float>(i + 1), d.vectorScales, transposed};
}
/// (lhs f8, lhs scale, rhs f8, rhs scale) -> (result); ints: {form, lhs
/// format, rhs format, lhs transposed, rhs transposed, accumulate}. A
/// scale with more than one element is one per row (lhs) or column (rhs)
/// of the result.
void scaledMatmul(const Args &c) {
  Shape result = c.shape(4);
  cuda::scaledMatmul(kernelContext().gemms, int(c.ints[0]),
                     scaledOperand(c, 0, c.ints[3] != 0),
                     scaledOperand(c, 2, c.ints[4] != 0), c.type(4),
                     c.buffers[4], result.rows(), result.back(), c.workspace,
                     c.stream(), /*accumulate=*/c.ints[5] != 0);
}

/// A row block of a Float8 ring's lhs: `rows` float8 rows of `in` codes
/// and their scales (one for all, or `perRow`: one each, from `scale`).
struct RingLhs {
  const void *codes;
  Dtype type;
  const float *scale;
  bool perRow;
};

/// One row block's scaled GEMM of Float8's collective matmuls: `lhs`'s
/// `rows` x `in` block times the weight of buffer `weight` (its scale the
/// buffer after it), into the `rows` x `cols` `out` of `type`, the scratch
/// carved at the workspace's start (carveScaledRing).
void ringScaledGemm(const Args &c, const Ring &r, RingLhs lhs, int64_t rows,
                    int64_t in, int weight, bool rhsTransposed, Dtype type,
                    void *out, int64_t cols, bool accumulate) {
  cuda::ScaledOperand l{static_cast<const uint8_t *>(lhs.codes),
                        lhs.type,
                        rows,
                        in,
                        lhs.scale,
                        lhs.perRow,
                        /*transposed=*/false};
  cuda::scaledMatmul(kernelContext().gemms, r.gradInput ? 1 : 0, l,
                     scaledOperand(c, weight, rhsTransposed), type, out, rows,
                     cols, c.workspace, c.stream(), accumulate);
}
/// The bound on the ring's scaled GEMM scratch (the compiler's rule,
/// titan::cuda::scaledRingGemmBytes): weights from buffer `first` on,
/// every `stride` buffers.
int64_t scaledRingGemmBytes(const Args &c, const Ring &r, int64_t rows,
                            int64_t in, int first, int stride, int64_t cols,
                            bool rhsTransposed) {
  int64_t weights = 0;
  for (int64_t i = 0; i < r.count; ++i)
    weights = std::max(weights, c.shape(int(first + stride * i)).numel());
  return titan::cuda::scaledRingGemmBytes(r.gradInput, rows, in, weights, cols,
                                          rhsTransposed);
}
/// (input, input scale, (weight, weight scale)...) -> (gathered,
/// result...); ints {count, dim, grad_input, axis_mask, lhs_format,
/// rhs_format, rhs_transposed}.
void allGatherScaledMatmul(const Args &c) {
  Ring r = ring(c, "all_gather_scaled_matmul");
  Shape x = c.shape(0);
  RingLayout l = ringLayout(x, r.dim);
  int64_t count = r.count, in = x.back(), shard = l.rows * in;
  bool rhsT = c.ints[6] != 0;
  int gatheredIndex = int(2 + 2 * count);
  int64_t widest = 0;
  for (int64_t i = 0; i < count; ++i)
    widest = std::max(widest, c.shape(int(gatheredIndex + 1 + i)).back());
  ScaledRingCarve carve =
      carveScaledRing(scaledRingGemmBytes(c, r, l.rows, in, 2, 2, widest, rhsT),
                      2, l.outer * shard);
  char *ws = static_cast<char *>(c.workspace);
  char *gathered = static_cast<char *>(c.buffers[gatheredIndex]);
  void *buffers[2] = {ws + carve.shard[0], ws + carve.shard[1]};
  gatherRing(c, r, l.outer, c.type(0), shard, gathered, buffers,
             "all_gather_scaled_matmul", [&](int64_t chunk) {
               for (int64_t i = 0; i < count; ++i) {
                 int result = int(gatheredIndex + 1 + i);
                 int64_t out = c.shape(result).back();
                 char *to = static_cast<char *>(c.buffers[result]);
                 for (int64_t o = 0; o < l.outer; ++o)
                   ringScaledGemm(c, r,
                                  {gathered + (o * r.size + chunk) * shard,
                                   c.type(0), c.buf<float>(1), false},
                                  l.rows, in, int(2 + 2 * i), rhsT,
                                  c.type(result),
                                  to + (o * r.size + chunk) * l.rows * out *
                                           c.bytes(result),
                                  out, /*accumulate=*/false);
               }
             });
}
/// ((lhs, lhs scale, weight, weight scale)...) -> (result); ints {count,
/// dim, grad_input, axis_mask, storage, lhs_format, rhs_format,
/// rhs_transposed}.
void scaledMatmulReduceScatter(const Args &c) {
  Ring r = ring(c, "scaled_matmul_reduce_scatter");
  int64_t count = r.count;
  int resultIndex = int(4 * count);
  Shape result = c.shape(resultIndex);
  RingLayout l = ringLayout(result, r.dim);
  int64_t out = result.back(), widest = 0;
  bool rhsT = c.ints[7] != 0;
  Dtype type = c.type(resultIndex);
  int64_t bytes = c.bytes(resultIndex);
  for (int64_t i = 0; i < count; ++i)
    widest = std::max(widest, c.shape(int(4 * i)).back());
  int64_t shard = l.outer * l.rows * out;
  ScaledRingCarve carve = carveScaledRing(
      scaledRingGemmBytes(c, r, l.rows, widest, 2, 4, out, rhsT), 3,
      shard * bytes);
  char *ws = static_cast<char *>(c.workspace);
  void *partials[2] = {ws + carve.shard[0], ws + carve.shard[1]};
  scatterRing(c, r, c.buffers[resultIndex], type, shard, partials,
              ws + carve.shard[2], [&](int64_t chunk, char *partial) {
                for (int64_t i = 0; i < count; ++i) {
                  int64_t in = c.shape(int(4 * i)).back();
                  const uint8_t *lhs = c.buf<uint8_t>(int(4 * i));
                  const float *scale = c.buf<float>(int(4 * i + 1));
                  // Rowwise: a row block takes its rows' scales.
                  bool perRow = c.shape(int(4 * i + 1)).numel() > 1;
                  for (int64_t o = 0; o < l.outer; ++o) {
                    int64_t first = (o * r.size + chunk) * l.rows;
                    ringScaledGemm(c, r,
                                   {lhs + first * in, c.type(int(4 * i)),
                                    perRow ? scale + first : scale, perRow},
                                   l.rows, in, int(4 * i + 2), rhsT, type,
                                   partial + o * l.rows * out * bytes, out,
                                   /*accumulate=*/i > 0);
                  }
                }
              });
}

[[noreturn]] void noF64(const char *kernel) {
  kernelFatal(std::string("CUDA target: ") + kernel +
              " on f64 buffers: f64 kernels exist only on the CPU target (the "
              "gradient checks); compile with --target=cpu");
}

} // namespace

extern "C" {

#define TITAN_RT_DEFINE_TYPE(name, impl, suffix)                               \
  void titan_rt_##name##_##suffix(void **b, const int64_t *s,                  \
                                  const int64_t *i, const double *f, void *w,  \
                                  const int64_t *t) {                          \
    Args args;                                                                 \
    static_cast<Call &>(args) = Call{b, s, i, f, w};                           \
    args.types = t;                                                            \
    KernelEvents timed(#name "_" #suffix);                                     \
    impl(args);                                                                \
  }
#define TITAN_RT_DEFINE(name, impl)                                            \
  TITAN_RT_DEFINE_TYPE(name, impl, f32)                                        \
  TITAN_RT_DEFINE_TYPE(name, impl, bf16)                                       \
  TITAN_RT_DEFINE_TYPE(name, impl, f16)                                        \
  void titan_rt_##name##_f64(void **, const int64_t *, const int64_t *,        \
                             const double *, void *, const int64_t *) {        \
    noF64(#name);                                                              \
  }

#define TITAN_KERNEL_Kernel(name, impl) TITAN_RT_DEFINE(name, impl)
#include "titan/Contract/KernelCatalog.def"
TITAN_RT_DEFINE(cast, castKernel)

#undef TITAN_RT_DEFINE
#undef TITAN_RT_DEFINE_TYPE

/// Within the arena, or between it and the pinned host arena
/// (training.enable_cpu_offload), which unified addressing tells apart.
void titan_rt_copy(void *dst, const void *src, int64_t bytes) {
  checkCuda(cudaMemcpyAsync(dst, src, size_t(bytes), cudaMemcpyDefault,
                            kernelContext().stream),
            "kernel.copy of " + std::to_string(bytes) + " bytes");
}

namespace {
/// A kernel.copy_start on the copy stream: its wait joins the copy back
/// into the compute stream.
struct CopyRequest final : Request {
  explicit CopyRequest(cudaEvent_t done) : done(done) {}
  void finish() override {
    KernelContext &k = kernelContext();
    checkCuda(cudaStreamWaitEvent(k.stream, done, 0),
              "waiting for a copy between host and device");
    k.returnEvent(done);
  }
  cudaEvent_t done;
};
} // namespace

/// Forks the copy stream from the compute stream (the copy comes after
/// the kernels issued before it, which may have used its target's memory),
/// copies, and records where it ends.
void *titan_rt_copy_start(void *dst, const void *src, int64_t bytes) {
  KernelContext &k = kernelContext();
  cudaStream_t copies = k.copyStream();
  cudaEvent_t issued = k.takeEvent(), done = k.takeEvent();
  std::string what = "kernel.copy_start of " + std::to_string(bytes) + " bytes";
  checkCuda(cudaEventRecord(issued, k.stream), what);
  checkCuda(cudaStreamWaitEvent(copies, issued, 0), what);
  k.returnEvent(issued);
  checkCuda(cudaMemcpyAsync(dst, src, size_t(bytes), cudaMemcpyDefault, copies),
            what);
  checkCuda(cudaEventRecord(done, copies), what);
  return new CopyRequest(done);
}

/// A host step's copy: ordered after the work before it, and complete when
/// this returns, so the host's next kernel may read what it wrote.
void titan_rt_copy_sync(void *dst, const void *src, int64_t bytes) {
  cudaStream_t stream = kernelContext().stream;
  checkCuda(cudaMemcpyAsync(dst, src, size_t(bytes), cudaMemcpyDefault, stream),
            "kernel.copy of " + std::to_string(bytes) + " bytes");
  checkCuda(cudaStreamSynchronize(stream),
            "a host step's kernel.copy of " + std::to_string(bytes) + " bytes");
}

/// dist.shard_offset: the rank's offset, written by a kernel (a host copy
/// could not be captured).
void titan_rt_shard_offset_i32(void **b, const int64_t *, const int64_t *a,
                               const double *, void *, const int64_t *) {
  KernelEvents timed("shard_offset_i32");
  storeInt32(static_cast<int32_t *>(b[0]), shardOffset(a),
             kernelContext().stream);
}

} // extern "C"
