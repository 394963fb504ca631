//===- KernelABI.cpp - C entry points called by compiled steps ------------===//
//
// Decodes the (buffers, shapes, attrs) calling convention of KernelABI.h and
// dispatches to the kernel templates.
//
//===----------------------------------------------------------------------===//

#include "titanrt/KernelABI.h"

#include "Error.h"
#include "Kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <vector>

using namespace titanrt;
namespace k = titanrt::kernels;

namespace {

struct Shape {
  std::vector<int64_t> dims;
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : dims)
      n *= d;
    return n;
  }
  int64_t back() const { return dims.back(); }
  int64_t dim(int64_t i) const { return dims[i]; }
  /// Elements before the last dimension.
  int64_t rows() const { return dims.empty() ? 1 : numel() / back(); }
};

/// Reads the shapes of `count` buffers.
std::vector<Shape> readShapes(const int64_t *shapes, int count) {
  std::vector<Shape> out(count);
  for (int i = 0; i < count; ++i) {
    int64_t rank = *shapes++;
    out[i].dims.assign(shapes, shapes + rank);
    shapes += rank;
  }
  return out;
}

template <typename T> T *buf(void **buffers, int i) {
  return static_cast<T *>(buffers[i]);
}

/// Ops with an optional vocab_start operand: attrs = {1 if present}; the
/// operand then follows the indices.
const int32_t *vocabStart(void **b, const double *a, int index) {
  return a[0] != 0 ? buf<int32_t>(b, index) : nullptr;
}
template <typename T>
void embedding(void **b, const int64_t *s, const double *a) {
  int out = a[0] != 0 ? 3 : 2;
  auto sh = readShapes(s, out + 1);
  k::embedding(buf<T>(b, 0), buf<int32_t>(b, 1), buf<T>(b, out), sh[1].numel(),
               sh[0].dim(0), sh[0].dim(1), vocabStart(b, a, 2));
}
template <typename T>
void embeddingGrad(void **b, const int64_t *s, const double *a) {
  int out = a[0] != 0 ? 3 : 2;
  auto sh = readShapes(s, out + 1);
  k::embeddingGrad(buf<T>(b, 0), buf<int32_t>(b, 1), buf<T>(b, out),
                   sh[1].numel(), sh[out].dim(0), sh[out].dim(1),
                   vocabStart(b, a, 2));
}
template <typename T> void rowMax(void **b, const int64_t *s, const double *) {
  auto sh = readShapes(s, 1);
  k::rowMax(buf<T>(b, 0), buf<T>(b, 1), sh[0].rows(), sh[0].back());
}
template <typename T> void sumExp(void **b, const int64_t *s, const double *) {
  auto sh = readShapes(s, 1);
  k::sumExp(buf<T>(b, 0), buf<T>(b, 1), buf<T>(b, 2), sh[0].rows(),
            sh[0].back());
}
template <typename T>
void sumExpGrad(void **b, const int64_t *s, const double *) {
  auto sh = readShapes(s, 1);
  k::sumExpGrad(buf<T>(b, 0), buf<T>(b, 1), buf<T>(b, 2), buf<T>(b, 3),
                sh[0].rows(), sh[0].back());
}
template <typename T>
void targetLogit(void **b, const int64_t *s, const double *a) {
  auto sh = readShapes(s, 1);
  k::targetLogit(buf<T>(b, 0), buf<int32_t>(b, 1), buf<T>(b, a[0] != 0 ? 3 : 2),
                 sh[0].rows(), sh[0].back(), vocabStart(b, a, 2));
}
template <typename T>
void targetLogitGrad(void **b, const int64_t *s, const double *a) {
  int out = a[0] != 0 ? 3 : 2;
  auto sh = readShapes(s, out + 1);
  k::targetLogitGrad(buf<T>(b, 0), buf<int32_t>(b, 1), buf<T>(b, out),
                     sh[out].rows(), sh[out].back(), vocabStart(b, a, 2));
}
template <typename T>
void crossEntropyFromStats(void **b, const int64_t *s, const double *) {
  auto sh = readShapes(s, 1);
  *buf<float>(b, 3) = float(k::crossEntropyFromStats(
      buf<T>(b, 0), buf<T>(b, 1), buf<T>(b, 2), sh[0].numel()));
}
template <typename T>
void crossEntropyFromStatsGrad(void **b, const int64_t *s, const double *) {
  auto sh = readShapes(s, 1);
  k::crossEntropyFromStatsGrad(buf<T>(b, 0), double(*buf<float>(b, 1)),
                               buf<T>(b, 2), buf<T>(b, 3), sh[0].numel());
}
template <typename T>
void rmsNorm(void **b, const int64_t *s, const double *a) {
  auto sh = readShapes(s, 3);
  k::rmsNorm(buf<T>(b, 0), buf<T>(b, 1), buf<T>(b, 2), sh[0].rows(),
             sh[0].back(), a[0]);
}
template <typename T>
void rmsNormGrad(void **b, const int64_t *s, const double *a) {
  auto sh = readShapes(s, 5);
  k::rmsNormGrad(buf<T>(b, 0), buf<T>(b, 1), buf<T>(b, 2), buf<T>(b, 3),
                 buf<T>(b, 4), sh[0].rows(), sh[0].back(), a[0]);
}
template <typename T>
void ropeAngles(void **b, const int64_t *s, const double *a) {
  auto sh = readShapes(s, 1);
  k::ropeAngles(buf<float>(b, 0), sh[0].dim(0), sh[0].dim(1), a[0], a[1] != 0,
                a[2], a[3], a[4], a[5]);
}
template <typename T> void rope(void **b, const int64_t *s, const double *a) {
  auto sh = readShapes(s, 3);
  k::rope(buf<T>(b, 0), buf<float>(b, 1), buf<T>(b, 2), sh[0].dim(0),
          sh[0].dim(1), sh[0].dim(2), sh[0].dim(3) / 2, a[0] != 0);
}
template <typename T>
void attention(void **b, const int64_t *s, const double *a) {
  auto sh = readShapes(s, 4);
  k::attention(buf<T>(b, 0), buf<T>(b, 1), buf<T>(b, 2), buf<T>(b, 3),
               sh[0].dim(0), sh[0].dim(1), sh[0].dim(2), sh[1].dim(2),
               sh[0].dim(3), a[0]);
}
template <typename T>
void attentionGrad(void **b, const int64_t *s, const double *a) {
  auto sh = readShapes(s, 7);
  k::attentionGrad(buf<T>(b, 0), buf<T>(b, 1), buf<T>(b, 2), buf<T>(b, 3),
                   buf<T>(b, 4), buf<T>(b, 5), buf<T>(b, 6), sh[0].dim(0),
                   sh[0].dim(1), sh[0].dim(2), sh[1].dim(2), sh[0].dim(3),
                   a[0]);
}
template <typename T> void linear(void **b, const int64_t *s, const double *) {
  auto sh = readShapes(s, 3);
  k::linear(buf<T>(b, 0), buf<T>(b, 1), buf<T>(b, 2), sh[0].rows(),
            sh[0].back(), sh[1].dim(0));
}
template <typename T>
void linearGradInput(void **b, const int64_t *s, const double *) {
  auto sh = readShapes(s, 3);
  k::linearGradInput(buf<T>(b, 0), buf<T>(b, 1), buf<T>(b, 2), sh[0].rows(),
                     sh[1].dim(1), sh[1].dim(0));
}
template <typename T>
void linearGradWeight(void **b, const int64_t *s, const double *) {
  auto sh = readShapes(s, 3);
  k::linearGradWeight(buf<T>(b, 0), buf<T>(b, 1), buf<T>(b, 2), sh[0].rows(),
                      sh[1].back(), sh[0].back());
}
template <typename T> void swiglu(void **b, const int64_t *s, const double *) {
  auto sh = readShapes(s, 1);
  k::swiglu(buf<T>(b, 0), buf<T>(b, 1), buf<T>(b, 2), sh[0].numel());
}
template <typename T>
void swigluGrad(void **b, const int64_t *s, const double *) {
  auto sh = readShapes(s, 1);
  k::swigluGrad(buf<T>(b, 0), buf<T>(b, 1), buf<T>(b, 2), buf<T>(b, 3),
                buf<T>(b, 4), sh[0].numel());
}
template <typename T> void silu(void **b, const int64_t *s, const double *) {
  auto sh = readShapes(s, 1);
  k::silu(buf<T>(b, 0), buf<T>(b, 1), sh[0].numel());
}
template <typename T>
void siluGrad(void **b, const int64_t *s, const double *) {
  auto sh = readShapes(s, 1);
  k::siluGrad(buf<T>(b, 0), buf<T>(b, 1), buf<T>(b, 2), sh[0].numel());
}
template <typename T> void mul(void **b, const int64_t *s, const double *) {
  auto sh = readShapes(s, 1);
  k::mul(buf<T>(b, 0), buf<T>(b, 1), buf<T>(b, 2), sh[0].numel());
}
template <typename T> void add(void **b, const int64_t *s, const double *) {
  auto sh = readShapes(s, 1);
  k::add(buf<T>(b, 0), buf<T>(b, 1), buf<T>(b, 2), sh[0].numel());
}
template <typename T> void sqrt(void **b, const int64_t *s, const double *) {
  auto sh = readShapes(s, 1);
  for (int64_t i = 0; i < sh[0].numel(); ++i)
    buf<T>(b, 1)[i] = std::sqrt(buf<T>(b, 0)[i]);
}
template <typename T> void fill(void **b, const int64_t *s, const double *a) {
  auto sh = readShapes(s, 1);
  T *out = buf<T>(b, 0);
  std::fill(out, out + sh[0].numel(), T(a[0]));
}
template <typename T> void reshape(void **b, const int64_t *s, const double *) {
  auto sh = readShapes(s, 1);
  if (b[0] != b[1])
    std::copy(buf<T>(b, 0), buf<T>(b, 0) + sh[0].numel(), buf<T>(b, 1));
}
template <typename T>
void crossEntropy(void **b, const int64_t *s, const double *) {
  auto sh = readShapes(s, 2);
  *buf<float>(b, 2) = float(k::crossEntropy(buf<T>(b, 0), buf<int32_t>(b, 1),
                                            sh[1].numel(), sh[0].back()));
}
template <typename T>
void crossEntropyGrad(void **b, const int64_t *s, const double *) {
  auto sh = readShapes(s, 2);
  k::crossEntropyGrad(buf<T>(b, 0), buf<int32_t>(b, 1), *buf<float>(b, 2),
                      buf<T>(b, 3), sh[1].numel(), sh[0].back());
}
/// attrs: {number of inputs}. Per-tensor norms are rounded to float32 before
/// the norm of norms, as torch.nn.utils.clip_grad_norm_ stacks them.
template <typename T>
void globalNorm(void **b, const int64_t *s, const double *a) {
  int count = int(a[0]);
  auto sh = readShapes(s, count);
  double total = 0;
  for (int i = 0; i < count; ++i) {
    float norm = float(std::sqrt(k::sumOfSquares(buf<T>(b, i), sh[i].numel())));
    total += double(norm) * norm;
  }
  *buf<float>(b, count) = float(std::sqrt(total));
}
/// attrs: {lr, warmup_steps, decay_ratio (-1: none), decay type, min factor}.
template <typename T>
void lrSchedule(void **b, const int64_t *, const double *a) {
  *buf<float>(b, 2) =
      float(k::lrSchedule(*buf<int64_t>(b, 0), *buf<int64_t>(b, 1), a[0],
                          int64_t(a[1]), a[2], int(a[3]), a[4]));
}
/// attrs: {beta1, beta2, eps, weight_decay, max_norm}. Results may alias the
/// parameter and moment operands.
template <typename T> void adamw(void **b, const int64_t *s, const double *a) {
  auto sh = readShapes(s, 1);
  int64_t n = sh[0].numel();
  T *param = buf<T>(b, 7), *m = buf<T>(b, 8), *v = buf<T>(b, 9);
  if (param != buf<T>(b, 0))
    std::copy(buf<T>(b, 0), buf<T>(b, 0) + n, param);
  if (m != buf<T>(b, 2))
    std::copy(buf<T>(b, 2), buf<T>(b, 2) + n, m);
  if (v != buf<T>(b, 3))
    std::copy(buf<T>(b, 3), buf<T>(b, 3) + n, v);
  k::adamw(param, buf<T>(b, 1), m, v, n, double(*buf<float>(b, 4)),
           *buf<float>(b, 5), *buf<int64_t>(b, 6), a[0], a[1], a[2], a[3],
           a[4]);
}

} // namespace

extern "C" {

void *titan_rt_alloc(int64_t bytes) {
  // 64-byte alignment for vector loads; at least one byte for 0-d tensors.
  size_t size = (size_t(std::max<int64_t>(bytes, 1)) + 63) / 64 * 64;
  void *ptr = std::aligned_alloc(64, size);
  if (!ptr)
    fatal("out of memory allocating " + std::to_string(bytes) + " bytes");
  return ptr;
}

void titan_rt_free(void *ptr) { std::free(ptr); }

#define TITAN_RT_DEFINE(name, impl)                                            \
  void titan_rt_##name##_f32(void **b, const int64_t *s, const double *a) {    \
    impl<float>(b, s, a);                                                      \
  }                                                                            \
  void titan_rt_##name##_f64(void **b, const int64_t *s, const double *a) {    \
    impl<double>(b, s, a);                                                     \
  }

TITAN_RT_DEFINE(embedding, embedding)
TITAN_RT_DEFINE(embedding_grad, embeddingGrad)
TITAN_RT_DEFINE(rms_norm, rmsNorm)
TITAN_RT_DEFINE(rms_norm_grad, rmsNormGrad)
TITAN_RT_DEFINE(rope_angles, ropeAngles)
TITAN_RT_DEFINE(rope, rope)
TITAN_RT_DEFINE(attention, attention)
TITAN_RT_DEFINE(attention_grad, attentionGrad)
TITAN_RT_DEFINE(linear, linear)
TITAN_RT_DEFINE(linear_grad_input, linearGradInput)
TITAN_RT_DEFINE(linear_grad_weight, linearGradWeight)
TITAN_RT_DEFINE(swiglu, swiglu)
TITAN_RT_DEFINE(swiglu_grad, swigluGrad)
TITAN_RT_DEFINE(silu, silu)
TITAN_RT_DEFINE(silu_grad, siluGrad)
TITAN_RT_DEFINE(mul, mul)
TITAN_RT_DEFINE(add, add)
TITAN_RT_DEFINE(sqrt, sqrt)
TITAN_RT_DEFINE(fill, fill)
TITAN_RT_DEFINE(reshape, reshape)
TITAN_RT_DEFINE(cross_entropy, crossEntropy)
TITAN_RT_DEFINE(cross_entropy_grad, crossEntropyGrad)
TITAN_RT_DEFINE(row_max, rowMax)
TITAN_RT_DEFINE(sum_exp, sumExp)
TITAN_RT_DEFINE(sum_exp_grad, sumExpGrad)
TITAN_RT_DEFINE(target_logit, targetLogit)
TITAN_RT_DEFINE(target_logit_grad, targetLogitGrad)
TITAN_RT_DEFINE(cross_entropy_from_stats, crossEntropyFromStats)
TITAN_RT_DEFINE(cross_entropy_from_stats_grad, crossEntropyFromStatsGrad)
TITAN_RT_DEFINE(global_norm, globalNorm)
TITAN_RT_DEFINE(lr_schedule, lrSchedule)
TITAN_RT_DEFINE(adamw, adamw)

#undef TITAN_RT_DEFINE
} // extern "C"
