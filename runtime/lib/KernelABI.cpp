//===- KernelABI.cpp - C entry points called by compiled steps ------------===//
//
// Decodes the (buffers, shapes, ints, floats, workspace) calling convention
// of KernelABI.h and dispatches to the kernel templates. Decoding allocates
// nothing: shapes are read in place from the step's constant arrays.
//
//===----------------------------------------------------------------------===//

#include "titanrt/KernelABI.h"
#include "titanrt/Device.h"

#include "AsyncTensorParallel.h"
#include "BoxCopy.h"
#include "Communicator.h"
#include "ContextParallel.h"
#include "Error.h"
#include "Gemm.h"
#include "HostKernels.h"
#include "KernelCall.h"
#include "KernelProfile.h"
#include "Kernels.h"
#include "LocalShard.h"
#include "LowPrecision.h"
#include "Parallel.h"
#include "RingSchedule.h"
#include "ScaledGemm.h"
#include "VectorMath.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

using namespace titanrt;
using titanrt::abi::Call;

using titanrt::abi::Shape;
namespace k = titanrt::kernels;

namespace {

template <typename T> void embedding(const Call &c) {
  int out = c.hasVocabStart() ? 3 : 2;
  Shape weight = c.shape(0);
  k::embedding(c.buf<T>(0), c.buf<int32_t>(1), c.buf<T>(out),
               c.shape(1).numel(), weight.dim(0), weight.dim(1),
               c.vocabStart());
}
template <typename T> void embeddingGrad(const Call &c) {
  int out = c.hasVocabStart() ? 3 : 2;
  Shape table = c.shape(out);
  k::embeddingGrad(c.buf<T>(0), c.buf<int32_t>(1), c.buf<T>(out),
                   c.shape(1).numel(), table.dim(0), table.dim(1),
                   c.vocabStart());
}
/// ints: {scaled, original_max_position_embeddings}; floats: {theta,
/// scaling_factor, low_freq_factor, high_freq_factor}
template <typename T> void ropeAngles(const Call &c) {
  Shape s = c.shape(0);
  k::ropeAngles(c.buf<float>(0), s.dim(0), s.dim(1), c.floats[0],
                c.ints[0] != 0, c.floats[1], c.floats[2], c.floats[3],
                double(c.ints[1]), static_cast<float *>(c.workspace));
}
/// Copies the box `plan` describes from `in` into `out`.
template <typename T>
void copyBox(const BoxCopyPlan &plan, const T *in, T *out) {
  forEachBoxRow(plan, [&](int64_t from, int64_t to, int64_t count) {
    std::copy_n(in + from, count, out + to);
  });
}
/// titan.slice; ints: {rank, offsets...}
template <typename T> void slice(const Call &c) {
  Shape in = c.shape(0), out = c.shape(1);
  copyBox(slicePlan(in, out, c.ints + 1), c.buf<T>(0), c.buf<T>(1));
}
/// titan.slice_grad: the box in zeros; ints: {rank, offsets...}
template <typename T> void sliceGrad(const Call &c) {
  Shape grad = c.shape(0), out = c.shape(1);
  std::fill_n(c.buf<T>(1), out.numel(), T(0));
  copyBox(sliceGradPlan(grad, out, c.ints + 1), c.buf<T>(0), c.buf<T>(1));
}
/// titan.concat; ints: {count, dim}
template <typename T> void concat(const Call &c) {
  int64_t count = c.ints[0], dim = c.ints[1];
  Shape out = c.shape(int(count));
  int64_t offset = 0;
  for (int64_t i = 0; i < count; ++i) {
    Shape in = c.shape(int(i));
    copyBox(concatPlan(in, out, dim, offset), c.buf<T>(int(i)),
            c.buf<T>(int(count)));
    offset += in.dim(dim);
  }
}
/// dist.local_shard; ints: {dim, load_balanced, number of axes, axis
/// indices...}
template <typename T> void localShard(const Call &c) {
  GroupPlace place = groupPlace(c.ints + 2);
  LocalShardPlan p = planLocalShard(c.shape(0), c.ints[0], place.index,
                                    {place.size, c.ints[1] != 0});
  const T *in = c.buf<T>(0);
  T *out = c.buf<T>(1);
  for (int64_t j = 0; j < p.parts; ++j)
    for (int64_t r = 0; r < p.rows; ++r)
      std::copy_n(in + r * p.srcPitch + p.srcOffset[j], p.width,
                  out + r * p.dstPitch + p.dstOffset[j]);
}
/// The optional document starts after `inputs` required inputs (i32 [B,
/// S]), and where the outputs begin.
struct DocumentInput {
  titanrt::DocumentStarts docs;
  int out;
};
DocumentInput documentInput(const Call &c, int inputs) {
  if (c.inputs <= inputs)
    return {{}, inputs};
  return {{c.buf<int32_t>(inputs), c.shape(inputs).dim(1)}, inputs + 1};
}
/// (q, k, v[, document_starts]) -> (out, lse); floats: {scale}; workspace:
/// S x S
template <typename T> void attention(const Call &c) {
  Shape q = c.shape(0), kv = c.shape(1);
  auto [docs, out] = documentInput(c, 3);
  k::attention(c.buf<T>(0), c.buf<T>(1), c.buf<T>(2), c.buf<T>(out),
               c.buf<T>(out + 1), q.dim(0), q.dim(1), q.dim(2), kv.dim(2),
               q.dim(3), c.floats[0], static_cast<T *>(c.workspace), docs);
}
/// (q, k, v, out, lse, dout[, document_starts]) -> (dq, dk, dv); floats:
/// {scale}; ints: {deterministic} (these kernels are either way);
/// workspace: 2 S x S
template <typename T> void attentionGrad(const Call &c) {
  Shape q = c.shape(0), kv = c.shape(1);
  auto [docs, out] = documentInput(c, 6);
  k::attentionGrad(c.buf<T>(0), c.buf<T>(1), c.buf<T>(2), c.buf<T>(3),
                   c.buf<T>(4), c.buf<T>(5), c.buf<T>(out), c.buf<T>(out + 1),
                   c.buf<T>(out + 2), q.dim(0), q.dim(1), q.dim(2), kv.dim(2),
                   q.dim(3), c.floats[0], static_cast<T *>(c.workspace), docs);
}
/// (q, k, v[, document_starts]) -> (out, lse); floats: {scale}; ints:
/// {degree, kv_shift, load_balanced, number of cp axes, axes...}
template <typename T> void contextAttention(const Call &c) {
  Shape q = c.shape(0), kv = c.shape(1);
  auto [docs, out] = documentInput(c, 3);
  k::contextAttention(
      c.buf<T>(0), c.buf<T>(1), c.buf<T>(2), c.buf<T>(out), c.buf<T>(out + 1),
      q.dim(0), q.dim(2), kv.dim(2), q.dim(3),
      contextParallelLayout("context_attention", c.ints, q.dim(1), kv.dim(1)),
      c.floats[0], static_cast<T *>(c.workspace), docs);
}
/// (q, k, v, out, lse, dout[, document_starts]) -> (dq, dk, dv); floats:
/// {scale}; ints: {deterministic (these kernels are either way), then
/// contextAttention's}.
template <typename T> void contextAttentionGrad(const Call &c) {
  Shape q = c.shape(0), kv = c.shape(1);
  auto [docs, out] = documentInput(c, 6);
  k::contextAttentionGrad(
      c.buf<T>(0), c.buf<T>(1), c.buf<T>(2), c.buf<T>(3), c.buf<T>(4),
      c.buf<T>(5), c.buf<T>(out), c.buf<T>(out + 1), c.buf<T>(out + 2),
      q.dim(0), q.dim(2), kv.dim(2), q.dim(3),
      contextParallelLayout("context_attention_grad", c.ints + 1, q.dim(1),
                            kv.dim(1)),
      c.floats[0], static_cast<T *>(c.workspace), docs);
}
/// (out, lse, other_out, other_lse) -> (result, result_lse)
template <typename T> void attentionMerge(const Call &c) {
  Shape o = c.shape(0);
  k::attentionMerge(c.buf<T>(0), c.buf<T>(1), c.buf<T>(2), c.buf<T>(3),
                    c.buf<T>(4), c.buf<T>(5), o.dim(0), o.dim(1), o.dim(2),
                    o.dim(3));
}
/// ints: {} or {accumulate} (kernel-fuse-gemm-accumulate: add into the
/// result instead of overwriting it).
bool accumulates(const Call &c) { return c.ints && c.ints[0] != 0; }
template <typename In, typename Out = In> void linear(const Call &c) {
  Shape x = c.shape(0), w = c.shape(1);
  k::linear(c.buf<In>(0), c.buf<In>(1), c.buf<Out>(2), x.rows(), x.back(),
            w.dim(0), accumulates(c));
}
template <typename In, typename Out = In> void linearGradInput(const Call &c) {
  Shape dy = c.shape(0), w = c.shape(1);
  k::linearGradInput(c.buf<In>(0), c.buf<In>(1), c.buf<Out>(2), dy.rows(),
                     w.dim(1), w.dim(0), accumulates(c));
}
template <typename In, typename Out = In> void linearGradWeight(const Call &c) {
  Shape dy = c.shape(0), x = c.shape(1);
  k::linearGradWeight(c.buf<In>(0), c.buf<In>(1), c.buf<Out>(2), dy.rows(),
                      x.back(), dy.back(), accumulates(c));
}
/// The collective matmuls' ring (AsyncTensorParallel.h): ints {count, dim,
/// grad_input, axis_mask}, decoded as the CUDA target decodes them
/// (RingSchedule.h).
RingCall ringCall(const Call &c, const char *kernel) {
  RingCall r = decodeRingCall(kernel, c.ints, activeCommunicator() != nullptr);
  if (!r.error.empty())
    kernelFatal(r.error);
  return r;
}
/// (input, weight...) -> (gathered, result...)
template <typename In, typename Out = In> void allGatherLinear(const Call &c) {
  RingCall r = ringCall(c, "all_gather_linear");
  int64_t count = r.count;
  bool gradInput = r.gradInput;
  RingPlace place = ringPlace(r);
  Shape x = c.shape(0);
  RingLayout l = ringLayout(x, r.dim);
  const In *weights[ring::kMaxGemms];
  Out *results[ring::kMaxGemms];
  int64_t outs[ring::kMaxGemms];
  for (int64_t i = 0; i < count; ++i) {
    weights[i] = c.buf<In>(int(1 + i));
    results[i] = c.buf<Out>(int(2 + count + i));
    outs[i] = c.shape(int(2 + count + i)).back();
  }
  k::allGatherLinear(c.buf<In>(0), weights, c.buf<In>(int(1 + count)), results,
                     outs, count, gradInput, l.outer, l.rows, x.back(), place,
                     c.workspace);
}
/// (lhs, weight, lhs, weight, ...) -> (result)
template <typename In, typename Out = In>
void linearReduceScatter(const Call &c) {
  RingCall r = ringCall(c, "linear_reduce_scatter");
  int64_t count = r.count;
  bool gradInput = r.gradInput;
  RingPlace place = ringPlace(r);
  Shape result = c.shape(int(2 * count));
  RingLayout l = ringLayout(result, r.dim);
  const In *lhs[ring::kMaxGemms], *weights[ring::kMaxGemms];
  int64_t ins[ring::kMaxGemms];
  for (int64_t i = 0; i < count; ++i) {
    lhs[i] = c.buf<In>(int(2 * i));
    weights[i] = c.buf<In>(int(2 * i + 1));
    ins[i] = c.shape(int(2 * i)).back();
  }
  k::linearReduceScatter(lhs, weights, ins, count, gradInput,
                         c.buf<Out>(int(2 * count)), l.outer, l.rows,
                         result.back(), place, static_cast<Out *>(c.workspace),
                         int(c.ints[4]));
}
/// Float8's ring GEMMs: the (weight, weight scale) pairs from buffer
/// `first` on (every `stride` buffers), their formats and layout from
/// ints[formats], ints[formats + 1] and ints[formats + 2].
struct ScaledRingCall {
  const uint8_t *weights[ring::kMaxGemms];
  const float *scales[ring::kMaxGemms];
  bool perColumn[ring::kMaxGemms];
  k::ScaledRing ring; // points into the arrays above: not copyable
  ScaledRingCall(const ScaledRingCall &) = delete;
  ScaledRingCall(const Call &c, const RingCall &r, int first, int stride,
                 int formats) {
    for (int64_t i = 0; i < r.count; ++i) {
      int w = int(first + stride * i);
      weights[i] = c.buf<uint8_t>(w);
      scales[i] = c.buf<float>(w + 1);
      perColumn[i] = c.shape(w + 1).numel() > 1;
    }
    ring.gradInput = r.gradInput;
    ring.lhsFormat = k::float8Format(c.ints[formats]);
    ring.rhsFormat = k::float8Format(c.ints[formats + 1]);
    ring.rhsTransposed = c.ints[formats + 2] != 0;
    ring.weights = weights;
    ring.weightScales = scales;
    ring.scalePerColumn = perColumn;
    ring.count = r.count;
  }
};
/// (input, input scale, (weight, weight scale)...) -> (gathered,
/// result...); ints {count, dim, grad_input, axis_mask, lhs_format,
/// rhs_format, rhs_transposed}.
template <typename T> void allGatherScaledMatmul(const Call &c) {
  if constexpr (!std::is_same_v<T, float>) {
    kernelFatal("all_gather_scaled_matmul produces f32, bf16 or f16");
  } else {
    RingCall r = ringCall(c, "all_gather_scaled_matmul");
    ScaledRingCall scaled(c, r, 2, 2, 4);
    int gathered = int(2 + 2 * r.count);
    float *results[ring::kMaxGemms];
    int64_t outs[ring::kMaxGemms];
    for (int64_t i = 0; i < r.count; ++i) {
      results[i] = c.buf<float>(int(gathered + 1 + i));
      outs[i] = c.shape(int(gathered + 1 + i)).back();
    }
    Shape x = c.shape(0);
    RingLayout l = ringLayout(x, r.dim);
    k::allGatherScaledMatmul(c.buf<uint8_t>(0), c.buf<float>(1), scaled.ring,
                             c.buf<uint8_t>(gathered), results, outs, l.outer,
                             l.rows, x.back(), ringPlace(r), c.workspace);
  }
}
/// ((lhs, lhs scale, weight, weight scale)...) -> (result); ints {count,
/// dim, grad_input, axis_mask, storage, lhs_format, rhs_format,
/// rhs_transposed}.
template <typename T> void scaledMatmulReduceScatter(const Call &c) {
  if constexpr (!std::is_same_v<T, float>) {
    kernelFatal("scaled_matmul_reduce_scatter produces f32, bf16 or f16");
  } else {
    RingCall r = ringCall(c, "scaled_matmul_reduce_scatter");
    ScaledRingCall scaled(c, r, 2, 4, 5);
    const uint8_t *lhs[ring::kMaxGemms];
    const float *lhsScales[ring::kMaxGemms];
    bool lhsPerRow[ring::kMaxGemms];
    int64_t ins[ring::kMaxGemms];
    for (int64_t i = 0; i < r.count; ++i) {
      lhs[i] = c.buf<uint8_t>(int(4 * i));
      lhsScales[i] = c.buf<float>(int(4 * i + 1));
      lhsPerRow[i] = c.shape(int(4 * i + 1)).numel() > 1;
      ins[i] = c.shape(int(4 * i)).back();
    }
    Shape result = c.shape(int(4 * r.count));
    RingLayout l = ringLayout(result, r.dim);
    k::scaledMatmulReduceScatter(lhs, lhsScales, lhsPerRow, ins, scaled.ring,
                                 c.buf<float>(int(4 * r.count)), l.outer,
                                 l.rows, result.back(), ringPlace(r),
                                 c.workspace, int(c.ints[4]));
  }
}
/// floats: {value}
template <typename T> void fill(const Call &c) {
  T *out = c.buf<T>(0);
  std::fill(out, out + c.shape(0).numel(), T(c.floats[0]));
}
// global_norm and lr_schedule are libtitanrt_host's (HostKernels.h), which
// host steps call on any target: one implementation, the same bits.
using host::globalNorm;
using host::lrSchedule;
//===----------------------------------------------------------------------===//
// Float8 (titan-expand-float8's kernels). Float8 buffers are raw codes,
// never widened: the 16-bit entries stage only the bf16/f16 buffers.
//===----------------------------------------------------------------------===//

/// |x| with NaN winning, as torch.max propagates it.
template <typename T> float absMax(float acc, T x) {
  float a = std::fabs(float(x));
  return std::isnan(acc) || std::isnan(a) ? NAN : std::max(acc, a);
}

/// (input) -> (f32 amax); ints: {reduction: 1 per row (last dimension), 2
/// per column (every dimension but the last)}. 0, over the whole tensor,
/// is a generated kernel (kernel.generic's absmax reduction).
template <typename T> void amax(const Call &c) {
  Shape s = c.shape(0);
  const T *x = c.buf<T>(0);
  float *out = c.buf<float>(1);
  int64_t rows = s.rows(), cols = s.back();
  switch (c.ints[0]) {
  case 0:
    kernelFatal("amax over the whole tensor is a generated kernel "
                "(kernel-generate-pointwise), not the library's");
  case 1:
    for (int64_t r = 0; r < rows; ++r) {
      float m = 0;
      for (int64_t j = 0; j < cols; ++j)
        m = absMax(m, x[r * cols + j]);
      out[r] = m;
    }
    return;
  default:
    std::fill(out, out + cols, 0.0f);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < cols; ++j)
        out[j] = absMax(out[j], x[r * cols + j]);
  }
}

/// Index of the scale of element (r, j) of a rows x cols operand: one
/// scale, one per row, or one per column.
struct ScaleIndex {
  int64_t perRow, perColumn;
  explicit ScaleIndex(Shape scale) {
    int64_t n = scale.numel();
    perRow = n > 1 && scale.back() == 1 ? 1 : 0;
    perColumn = n > 1 && !perRow ? 1 : 0;
  }
  int64_t operator()(int64_t r, int64_t j) const {
    return perRow * r + perColumn * j;
  }
};

/// (input, f32 scale) -> (float8); ints: {format, transposed}. Saturating,
/// round to nearest even, bit for bit __nv_cvt_float_to_fp8(x * s,
/// __NV_SATFINITE); transposed: element (r, j) of the rows x cols input
/// goes to (j, r).
template <typename T> void quantize(const Call &c) {
  Shape s = c.shape(0);
  const T *x = c.buf<T>(0);
  const float *scale = c.buf<float>(1);
  uint8_t *out = c.buf<uint8_t>(2);
  int64_t rows = s.rows(), cols = s.back();
  ScaleIndex at(c.shape(1));
  Dtype format = k::float8Format(c.ints[0]);
  bool transposed = c.ints[1] != 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j)
      out[transposed ? j * rows + r : r * cols + j] =
          floatToFp8(float(x[r * cols + j]) * scale[at(r, j)], format,
                     /*saturate=*/true);
}

/// (lhs f8, lhs scale, rhs f8, rhs scale) -> (result); ints: {form: 0
/// linear, 1 grad_input, 2 grad_weight, lhs format, rhs format, lhs
/// transposed, rhs transposed, accumulate}; workspace: f32 copies of both
/// operands, untransposed, then the product. The f32 GEMM of the exact f32
/// values accumulates in f32; each result element is then the product
/// times its rows' and columns' inverse scales, 1/lhs_scale * 1/rhs_scale,
/// plus the result's old value when accumulating (cuBLASLt's epilogue
/// with beta = 1).
template <typename T> void scaledMatmul(const Call &c) {
  if constexpr (!std::is_same_v<T, float>) {
    kernelFatal("scaled_matmul produces f32, bf16 or f16");
  } else {
    bool lhsT = c.ints[3] != 0, rhsT = c.ints[4] != 0;
    Shape::Matrix lhs = c.shape(0).matrix(lhsT), rhs = c.shape(2).matrix(rhsT);
    auto floatsFor = [](int64_t elements) {
      return (elements * 4 + 63) / 64 * 16;
    };
    float *a = static_cast<float *>(c.workspace);
    float *b = a + floatsFor(lhs.rows * lhs.cols);
    float *product = b + floatsFor(rhs.rows * rhs.cols);
    k::decodeFloat8(c.buf<uint8_t>(0), lhs.rows, lhs.cols, lhsT,
                    k::float8Format(c.ints[1]), a);
    k::decodeFloat8(c.buf<uint8_t>(2), rhs.rows, rhs.cols, rhsT,
                    k::float8Format(c.ints[2]), b);
    float *result = c.buf<float>(4);
    bool accumulate = c.ints[5] != 0;
    int64_t rows, cols;
    switch (c.ints[0]) {
    case 0: // lhs M x K, rhs N x K -> M x N
      rows = lhs.rows, cols = rhs.rows;
      k::linear(a, b, product, rows, lhs.cols, cols, false);
      break;
    case 1: // lhs M x N, rhs N x K -> M x K
      rows = lhs.rows, cols = rhs.cols;
      k::linearGradInput(a, b, product, rows, cols, rhs.rows, false);
      break;
    default: // lhs M x N, rhs M x K -> N x K
      rows = lhs.cols, cols = rhs.cols;
      k::linearGradWeight(a, b, product, lhs.rows, cols, rows, false);
    }
    // The lhs scale runs along the result's rows, the rhs's along its
    // columns (rank 0: one for all).
    k::applyInverseScales(product, c.buf<float>(1), c.shape(1).numel() > 1,
                          c.buf<float>(3), c.shape(3).numel() > 1, rows, cols,
                          accumulate, result);
  }
}

/// `v` rounded to float with round-to-odd: rounding that float to a 16-bit
/// format to nearest even then gives the correctly rounded result of `v`
/// (float carries more than two extra bits), with no double rounding.
float roundToOddFloat(double v) {
  float f = float(v);
  if (double(f) == v || std::isnan(v) || std::isinf(f))
    return f;
  if (std::fabs(double(f)) > std::fabs(v)) // make it the truncation
    f = std::nextafter(f, 0.0f);
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  bits |= 1u; // inexact: odd
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

// The 16-bit entries' staging (bf16 <-> f32, both ways every call), in
// vectorized spans on the kernels' threads.
template <typename From, typename To, To (*Convert)(From)>
TITAN_VECTOR_CLONES void convertSpan(const From *src, To *dst, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i)
    dst[i] = Convert(src[i]);
}
template <typename From, typename To, To (*Convert)(From)>
void convertParallel(const void *src, void *dst, int64_t n) {
  forSpans(n, kElementSpan, [&](int64_t begin, int64_t end) {
    convertSpan<From, To, Convert>(static_cast<const From *>(src) + begin,
                                   static_cast<To *>(dst) + begin, end - begin);
  });
}

/// Converts `n` elements of type `from` at `src` into type `to` at `dst`,
/// rounding to nearest even (once).
void convert(const void *src, Dtype from, void *dst, Dtype to, int64_t n) {
  // f32 -> bf16 rounds once already: no round-to-odd step needed.
  if (from == Dtype::bf16 && to == Dtype::f32)
    return convertParallel<uint16_t, float, bf16ToFloat>(src, dst, n);
  if (from == Dtype::f32 && to == Dtype::bf16)
    return convertParallel<float, uint16_t, floatToBf16>(src, dst, n);
  auto load = [&](int64_t i) -> double {
    switch (from) {
    case Dtype::f32:
      return static_cast<const float *>(src)[i];
    case Dtype::f64:
      return static_cast<const double *>(src)[i];
    case Dtype::bf16:
      return bf16ToFloat(static_cast<const uint16_t *>(src)[i]);
    case Dtype::f16:
      return f16ToFloat(static_cast<const uint16_t *>(src)[i]);
    case Dtype::f8E4M3FN:
    case Dtype::f8E5M2:
      return fp8ToFloat(static_cast<const uint8_t *>(src)[i], from);
    default:
      kernelFatal(std::string("titan_rt_cast: unsupported source element "
                              "type ") +
                  dtypeName(from));
    }
  };
  for (int64_t i = 0; i < n; ++i) {
    double v = load(i);
    switch (to) {
    case Dtype::f32:
      static_cast<float *>(dst)[i] = float(v);
      break;
    case Dtype::f64:
      static_cast<double *>(dst)[i] = v;
      break;
    case Dtype::bf16:
      static_cast<uint16_t *>(dst)[i] = floatToBf16(roundToOddFloat(v));
      break;
    case Dtype::f16:
      static_cast<uint16_t *>(dst)[i] = floatToF16(roundToOddFloat(v));
      break;
    case Dtype::f8E4M3FN:
    case Dtype::f8E5M2: // titan.cast does not saturate
      static_cast<uint8_t *>(dst)[i] =
          floatToFp8(roundToOddFloat(v), to, /*saturate=*/false);
      break;
    default:
      kernelFatal(std::string("titan_rt_cast: unsupported target element "
                              "type ") +
                  dtypeName(to));
    }
  }
}

/// Buffer `i`'s element type in a call's `types` (operands first, then
/// results).
Dtype bufferType(const int64_t *types, int64_t i) {
  if (std::optional<Dtype> type = titan::dtypeFromCode(types[2 + i]))
    return *type;
  kernelFatal("buffer " + std::to_string(i) +
              " of a kernel call has element type code " +
              std::to_string(types[2 + i]) + ", which no kernel takes");
}

/// titan.cast: buffers = {input, result}; types give both element types.
void cast(const Call &c, const int64_t *types) {
  convert(c.buffers[0], bufferType(types, 0), c.buffers[1],
          bufferType(types, 1), c.shape(0).numel());
}

bool isSixteenBit(Dtype type) { return dtypeBytes(type) == 2; }

/// Whether a kernel reads its results' old values: the GEMMs that add into
/// them.
template <void (*Kernel)(const Call &)> bool readsResults(const Call &) {
  return false;
}
template <> bool readsResults<linear<float>>(const Call &c) {
  return accumulates(c);
}
template <> bool readsResults<linearGradInput<float>>(const Call &c) {
  return accumulates(c);
}
template <> bool readsResults<linearGradWeight<float>>(const Call &c) {
  return accumulates(c);
}
template <> bool readsResults<scaledMatmul<float>>(const Call &c) {
  return c.ints[5] != 0;
}

/// The form of a 16-bit entry's kernel that takes bf16 operands as they are
/// (into f32 results): the linears' GEMMs and the collective matmuls'
/// rings on bf16 matrix units (Gemm.h); none for the others. `f32Result`
/// says which outputs the form writes in f32 (the others, a ring's
/// gathered input, it writes in bf16).
template <void (*Kernel)(const Call &)> struct Bf16Form {
  static constexpr void (*run)(const Call &) = nullptr;
};
struct GemmBf16Form {
  static bool f32Result(const Call &, int64_t buffer) { return buffer == 2; }
};
template <> struct Bf16Form<linear<float>> : GemmBf16Form {
  static constexpr void (*run)(const Call &) = linear<k::BFloat16, float>;
};
template <> struct Bf16Form<linearGradInput<float>> : GemmBf16Form {
  static constexpr void (*run)(const Call &) =
      linearGradInput<k::BFloat16, float>;
};
template <> struct Bf16Form<linearGradWeight<float>> : GemmBf16Form {
  static constexpr void (*run)(const Call &) =
      linearGradWeight<k::BFloat16, float>;
};
/// Both rings as their unfused GEMMs on the matrix units: each row block's
/// GEMM gives the bits of the whole GEMM's rows (the units' per-element
/// sums do not depend on the blocking), so async TP stays bitwise equal
/// to TP there too.
template <> struct Bf16Form<allGatherLinear<float>> {
  static constexpr void (*run)(const Call &) =
      allGatherLinear<k::BFloat16, float>;
  static bool f32Result(const Call &c, int64_t buffer) {
    return buffer >= 2 + c.ints[0]; // the results, after the gathered input
  }
};
template <> struct Bf16Form<linearReduceScatter<float>> {
  static constexpr void (*run)(const Call &) =
      linearReduceScatter<k::BFloat16, float>;
  static bool f32Result(const Call &, int64_t) { return true; }
};

/// `Kernel`'s Bf16Form on the buffers as they are, but its f32 results of
/// a 16-bit output staged in f32 at the workspace's start (where the
/// widened entry stages its copies) and rounded back; the form's own
/// workspace after them.
template <void (*Kernel)(const Call &)>
void onBf16Units(const Call &c, const int64_t *types) {
  using Form = Bf16Form<Kernel>;
  constexpr int64_t kMaxBuffers = 2 * ring::kMaxGemms + 2;
  int64_t inputs = types[0], count = types[0] + types[1];
  if (count > kMaxBuffers)
    kernelFatal("internal error: a bf16 GEMM call with more than " +
                std::to_string(kMaxBuffers) + " buffers");
  void *buffers[kMaxBuffers];
  char *scratch = static_cast<char *>(c.workspace);
  auto staged = [&](int64_t i) {
    return i >= inputs && bufferType(types, i) != Dtype::f32 &&
           Form::f32Result(c, i);
  };
  for (int64_t i = 0; i < count; ++i) {
    buffers[i] = c.buffers[i];
    if (!staged(i))
      continue;
    int64_t n = c.shape(int(i)).numel();
    buffers[i] = scratch;
    scratch += (n * int64_t(sizeof(float)) + 63) / 64 * 64;
    if (readsResults<Kernel>(c))
      convert(c.buffers[i], bufferType(types, i), buffers[i], Dtype::f32, n);
  }
  Form::run(Call{buffers, c.shapes, c.ints, c.floats, scratch, c.inputs});
  for (int64_t i = inputs; i < count; ++i)
    if (staged(i))
      convert(buffers[i], Dtype::f32, c.buffers[i], bufferType(types, i),
              c.shape(int(i)).numel());
}

/// A 16-bit entry: the f32 kernel on f32 copies of the 16-bit buffers, its
/// results rounded back (see KernelABI.h for the workspace layout); the
/// bf16 operands of a kernel with a Bf16Form go to the bf16 matrix units
/// as they are, where the CPU has them.
template <void (*Kernel)(const Call &)>
void widened(const Call &c, const int64_t *types) {
  if constexpr (Bf16Form<Kernel>::run != nullptr) {
    bool bf16Operands = true;
    for (int64_t i = 0; i < types[0]; ++i)
      bf16Operands &= bufferType(types, i) == Dtype::bf16;
    if (bf16Operands && k::hasFastBf16Gemm())
      return onBf16Units<Kernel>(c, types);
  }
  // The most buffers a call has: scaled_matmul_reduce_scatter's 16 GEMMs
  // of 4 operands, and its result.
  constexpr int64_t kMaxStaged = 4 * ring::kMaxGemms + 1;
  int64_t inputs = types[0], count = types[0] + types[1];
  void *staged[kMaxStaged];
  if (count > kMaxStaged)
    kernelFatal("internal error: a 16-bit kernel call with more than " +
                std::to_string(kMaxStaged) + " buffers");
  char *scratch = static_cast<char *>(c.workspace);
  for (int64_t i = 0; i < count; ++i) {
    staged[i] = c.buffers[i];
    Dtype type = bufferType(types, i);
    if (!isSixteenBit(type))
      continue;
    int64_t n = c.shape(int(i)).numel();
    staged[i] = scratch;
    scratch += (n * int64_t(sizeof(float)) + 63) / 64 * 64;
    if (i < inputs || readsResults<Kernel>(c))
      convert(c.buffers[i], type, staged[i], Dtype::f32, n);
  }
  Kernel(Call{staged, c.shapes, c.ints, c.floats, scratch, c.inputs});
  for (int64_t i = inputs; i < count; ++i)
    if (Dtype type = bufferType(types, i); isSixteenBit(type))
      convert(staged[i], Dtype::f32, c.buffers[i], type,
              c.shape(int(i)).numel());
}

} // namespace

extern "C" {

#define TITAN_RT_TIMED(name, type)                                             \
  titanrt::profile::ScopedTimer timer([](auto begin, auto end) {               \
    titanrt::profile::record(titanrt::profile::kKernel_##name,                 \
                             titan::Dtype::type, begin, end);                  \
  })
#define TITAN_RT_DEFINE(name, impl)                                            \
  void titan_rt_##name##_f32(void **b, const int64_t *s, const int64_t *i,     \
                             const double *f, void *w, const int64_t *t) {     \
    TITAN_RT_TIMED(name, f32);                                                 \
    impl<float>(Call{b, s, i, f, w, t ? t[0] : -1});                           \
  }                                                                            \
  void titan_rt_##name##_f64(void **b, const int64_t *s, const int64_t *i,     \
                             const double *f, void *w, const int64_t *t) {     \
    TITAN_RT_TIMED(name, f64);                                                 \
    impl<double>(Call{b, s, i, f, w, t ? t[0] : -1});                          \
  }                                                                            \
  void titan_rt_##name##_bf16(void **b, const int64_t *s, const int64_t *i,    \
                              const double *f, void *w, const int64_t *t) {    \
    TITAN_RT_TIMED(name, bf16);                                                \
    widened<impl<float>>(Call{b, s, i, f, w, t ? t[0] : -1}, t);               \
  }                                                                            \
  void titan_rt_##name##_f16(void **b, const int64_t *s, const int64_t *i,     \
                             const double *f, void *w, const int64_t *t) {     \
    TITAN_RT_TIMED(name, f16);                                                 \
    widened<impl<float>>(Call{b, s, i, f, w, t ? t[0] : -1}, t);               \
  }

#define TITAN_KERNEL_Kernel(name, impl) TITAN_RT_DEFINE(name, impl)
#include "titan/Contract/KernelCatalog.def"

#undef TITAN_RT_DEFINE

#define TITAN_RT_DEFINE_CAST(dtype)                                            \
  void titan_rt_cast_##dtype(void **b, const int64_t *s, const int64_t *i,     \
                             const double *f, void *w, const int64_t *t) {     \
    TITAN_RT_TIMED(cast, dtype);                                               \
    cast(Call{b, s, i, f, w}, t);                                              \
  }
TITAN_RT_DEFINE_CAST(f32)
TITAN_RT_DEFINE_CAST(f64)
TITAN_RT_DEFINE_CAST(bf16)
TITAN_RT_DEFINE_CAST(f16)
#undef TITAN_RT_DEFINE_CAST

void titan_rt_shard_offset_i32(void **b, const int64_t *, const int64_t *a,
                               const double *, void *, const int64_t *) {
  TITAN_RT_TIMED(shard_offset, i32);
  *static_cast<int32_t *>(b[0]) = shardOffset(a);
}
#undef TITAN_RT_TIMED

void titan_rt_copy(void *dst, const void *src, int64_t bytes) {
  std::memcpy(dst, src, size_t(bytes));
}

namespace {
/// The CPU target's copies complete when issued.
struct CompletedCopy final : Request {
  void finish() override {}
};
} // namespace

void *titan_rt_copy_start(void *dst, const void *src, int64_t bytes) {
  std::memcpy(dst, src, size_t(bytes));
  return new CompletedCopy;
}

/// The CPU target's steps run in order on the calling thread: every copy
/// has completed when it returns.
void titan_rt_copy_sync(void *dst, const void *src, int64_t bytes) {
  std::memcpy(dst, src, size_t(bytes));
}

void titan_rt_parallel_for(titan_rt_generated_kernel kernel,
                           void *const *buffers, int64_t items, int64_t span,
                           const char *name, int64_t bytes) {
  titanrt::profile::ScopedTimer timer([&](auto begin, auto end) {
    titanrt::profile::recordGenerated(name, bytes, begin, end);
  });
  // A row's work in 4-byte words (the threshold for threads counts an f32
  // kernel's elements).
  int64_t itemElements =
      span > 0 && items > 0 ? std::max<int64_t>(bytes / items / 4, 1) : 1;
  titanrt::forSpans(
      items, span > 0 ? span : titanrt::kElementSpan,
      [&](int64_t begin, int64_t end) { kernel(buffers, begin, end); },
      itemElements);
}

/// The CPU target runs its steps on the host, on host memory.
titanrt::Device *titan_rt_target_device(void) { return &hostDevice(); }

} // extern "C"
