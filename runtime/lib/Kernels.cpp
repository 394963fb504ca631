//===- Kernels.cpp - CPU reference kernels of the titan ops ---------------===//

#include "Kernels.h"

#include "Error.h"
#include "Gemm.h"
#include "Parallel.h"
#include "VectorMath.h"

#include "titan/Contract/CPUWorkspaces.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

using namespace titanrt;

namespace {

// The loops marked `omp parallel for` have independent iterations (rows or
// elements, nothing reduced across them; Parallel.h).

void checkToken(int32_t token, int64_t index, int64_t vocab, const char *what) {
  if (token < 0 || token >= vocab)
    kernelFatal(std::string(what) + " id " + std::to_string(token) +
                " at position " + std::to_string(index) +
                " is outside the vocabulary [0, " + std::to_string(vocab) +
                ")");
}

// The per-row and per-span bodies below are compiled once per x86-64 level
// (VectorMath.h); the exponentials are f32 for f32 kernels (vmath::fastExp,
// within 2 ulp), libm's for the f64 ones.

} // namespace

namespace titanrt::kernels {

template <typename T>
void embedding(const T *weight, const int32_t *tokens, T *out, int64_t n,
               int64_t vocab, int64_t dim, const int32_t *vocabStart) {
#pragma omp parallel for if (n * dim >= kParallelWork)
  for (int64_t i = 0; i < n; ++i) {
    int64_t row = tokens[i];
    if (vocabStart) {
      row -= *vocabStart;
      if (row < 0 || row >= vocab) {
        std::fill(out + i * dim, out + (i + 1) * dim, T(0));
        continue;
      }
    } else {
      checkToken(tokens[i], i, vocab, "token");
    }
    std::memcpy(out + i * dim, weight + row * dim, dim * sizeof(T));
  }
}

template <typename T>
void embeddingGrad(const T *grad, const int32_t *tokens, T *out, int64_t n,
                   int64_t vocab, int64_t dim, const int32_t *vocabStart) {
  std::fill(out, out + vocab * dim, T(0));
  for (int64_t i = 0; i < n; ++i) {
    int64_t row = tokens[i];
    if (vocabStart) {
      row -= *vocabStart;
      if (row < 0 || row >= vocab)
        continue;
    } else {
      checkToken(tokens[i], i, vocab, "token");
    }
    T *dst = out + row * dim;
    for (int64_t d = 0; d < dim; ++d)
      dst[d] += grad[i * dim + d];
  }
}

void ropeAngles(float *freqsCis, int64_t seq, int64_t pairs, double theta,
                bool scaled, double factor, double lowFreqFactor,
                double highFreqFactor, double originalMaxPositions,
                float *invFreq) {
  const float pi = 3.14159265358979323846f;
  int64_t headDim = 2 * pairs;
  for (int64_t j = 0; j < pairs; ++j) {
    float exponent = float(2 * j) / float(headDim);
    invFreq[j] = 1.0f / std::pow(float(theta), exponent);
    if (!scaled)
      continue;
    float f = invFreq[j];
    float wavelen = 2.0f * pi / f;
    float lowWavelen = float(originalMaxPositions / lowFreqFactor);
    float highWavelen = float(originalMaxPositions / highFreqFactor);
    if (wavelen > lowWavelen) {
      invFreq[j] = f / float(factor);
    } else if (!(wavelen < highWavelen)) {
      float smooth =
          (float(originalMaxPositions) / wavelen - float(lowFreqFactor)) /
          float(highFreqFactor - lowFreqFactor);
      invFreq[j] = (1.0f - smooth) * f / float(factor) + smooth * f;
    }
  }
  for (int64_t p = 0; p < seq; ++p)
    for (int64_t j = 0; j < pairs; ++j) {
      float angle = float(p) * invFreq[j];
      freqsCis[2 * (p * pairs + j)] = std::cos(angle);
      freqsCis[2 * (p * pairs + j) + 1] = std::sin(angle);
    }
}

template <typename In, typename Out>
void linear(const In *x, const In *w, Out *y, int64_t m, int64_t k, int64_t n,
            bool accumulate) {
  gemm(false, true, m, n, k, Out(1), x, k, w, k, Out(accumulate), y, n);
}

template <typename In, typename Out>
void linearGradInput(const In *dy, const In *w, Out *dx, int64_t m, int64_t k,
                     int64_t n, bool accumulate) {
  gemm(false, false, m, k, n, Out(1), dy, n, w, k, Out(accumulate), dx, k);
}

template <typename In, typename Out>
void linearGradWeight(const In *dy, const In *x, Out *dw, int64_t m, int64_t k,
                      int64_t n, bool accumulate) {
  gemm(true, false, n, k, m, Out(1), dy, n, x, k, Out(accumulate), dw, k);
}

template void linear<BFloat16, float>(const BFloat16 *, const BFloat16 *,
                                      float *, int64_t, int64_t, int64_t, bool);
template void linearGradInput<BFloat16, float>(const BFloat16 *,
                                               const BFloat16 *, float *,
                                               int64_t, int64_t, int64_t, bool);
template void linearGradWeight<BFloat16, float>(const BFloat16 *,
                                                const BFloat16 *, float *,
                                                int64_t, int64_t, int64_t,
                                                bool);

#define INSTANTIATE(T)                                                         \
  template void embedding<T>(const T *, const int32_t *, T *, int64_t,         \
                             int64_t, int64_t, const int32_t *);               \
  template void embeddingGrad<T>(const T *, const int32_t *, T *, int64_t,     \
                                 int64_t, int64_t, const int32_t *);           \
  template void linear<T>(const T *, const T *, T *, int64_t, int64_t,         \
                          int64_t, bool);                                      \
  template void linearGradInput<T>(const T *, const T *, T *, int64_t,         \
                                   int64_t, int64_t, bool);                    \
  template void linearGradWeight<T>(const T *, const T *, T *, int64_t,        \
                                    int64_t, int64_t, bool);

INSTANTIATE(float)
INSTANTIATE(double)
#undef INSTANTIATE

} // namespace titanrt::kernels
