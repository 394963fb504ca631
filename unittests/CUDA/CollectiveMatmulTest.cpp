//===- CollectiveMatmulTest.cpp - async TP's CUDA entries on one GPU ------===//
//
// The collective matmuls' CUDA entry points (runtime/cuda/KernelABI.cpp)
// called through the kernel ABI on one GPU with no communicator: a ring of
// one, so each entry runs its row-block GEMMs (one per outer index), the
// gathered copy and, for the reduce-scatters, its GEMMs' sum, without a
// transfer. Checked against the host's f32 math of the same GEMMs
// (titan.linear, titan.scaled_matmul: decoded float8 products summed in
// f32, times the inverse scales), within the f32 sums' rounding and each
// bf16 rounding the unfused step makes. A machine with several GPUs runs
// the rings themselves (the transfers) only in multi-GPU training.
//
//===----------------------------------------------------------------------===//

#include "DeviceTestUtils.h"
#include "LowPrecision.h"

#include "titan/Contract/CUDAWorkspaces.h"
#include "titanrt/KernelABI.h"

#include "gtest/gtest.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

using namespace titanrt;
using namespace titanrt::cuda::test;

namespace {

/// A kernel call's buffers, shapes and element types, as the step passes
/// them (operands, then results).
struct AbiCall {
  std::vector<void *> buffers;
  std::vector<int64_t> shapes;
  std::vector<int64_t> types{0, 0};
  void add(void *ptr, std::vector<int64_t> dims, int64_t code, bool result) {
    buffers.push_back(ptr);
    shapes.push_back(int64_t(dims.size()));
    shapes.insert(shapes.end(), dims.begin(), dims.end());
    types.push_back(code);
    ++types[result ? 1 : 0];
  }
};

/// A device allocation of `bytes` that frees itself.
struct DeviceBytes {
  void *ptr = nullptr;
  explicit DeviceBytes(int64_t bytes) {
    EXPECT_EQ(cudaMalloc(&ptr, size_t(bytes) + 256), cudaSuccess);
  }
  DeviceBytes(const std::vector<uint8_t> &v) : DeviceBytes(int64_t(v.size())) {
    EXPECT_EQ(cudaMemcpy(ptr, v.data(), v.size(), cudaMemcpyHostToDevice),
              cudaSuccess);
  }
  ~DeviceBytes() { cudaFree(ptr); }
};

/// Float8 codes of random integers in [-8, 8] and their values. Hopper's
/// FP8 tensor cores accumulate with about 14 significant bits (DeepSeek-V3's
/// measurement), not f32's 24: with these every product is an integer of
/// at most 64 and every partial sum of up to 64 terms one below 2^13, so
/// the GEMM is exact in any order and at that precision, and the test
/// checks the ring's plumbing and the scales, not the accumulator.
struct Float8Tensor {
  std::vector<uint8_t> codes;
  std::vector<float> values;
  Float8Tensor(size_t n, uint32_t seed, Dtype format) {
    for (float x : random(n, seed, -8.49f, 8.49f)) {
      codes.push_back(floatToFp8(std::nearbyint(x), format, /*saturate=*/true));
      values.push_back(fp8ToFloat(codes.back(), format));
    }
  }
};

/// out[r][j] = sum_t a[r][t] b(t, j) * scale(j) over `depth` terms, with
/// |terms| summed into `size` (the rounding's scale).
template <typename B, typename Scale>
void hostGemm(const std::vector<float> &a, int64_t rows, int64_t depth,
              int64_t cols, B b, Scale scale, std::vector<float> &out,
              std::vector<float> &size) {
  out.assign(size_t(rows * cols), 0);
  size.assign(size_t(rows * cols), 0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j) {
      float acc = 0, mag = 0;
      for (int64_t t = 0; t < depth; ++t) {
        acc += a[r * depth + t] * b(t, j);
        mag += std::fabs(a[r * depth + t] * b(t, j));
      }
      out[r * cols + j] = acc * scale(j);
      size[r * cols + j] = mag * std::fabs(scale(j));
    }
}

/// Within the f32 sums' rounding (depth roundings of the terms'
/// magnitude `size`) and a bf16 rounding (2^-8 relative) of each value in
/// `roundedValues` (the result's; a sum's, and its first term's).
void expectGemm(const std::vector<float> &actual,
                const std::vector<float> &expected,
                const std::vector<float> &size, int64_t depth,
                const std::vector<float> &roundedValues, const char *what) {
  double sums = double(depth + 2) * std::ldexp(1.0, -23);
  for (size_t i = 0; i < expected.size(); ++i)
    ASSERT_NEAR(actual[i], expected[i],
                sums * size[i] + std::ldexp(1.0, -8) * roundedValues[i] + 1e-30)
        << what << " element " << i;
}

std::vector<float> magnitudes(std::vector<float> v) {
  for (float &x : v)
    x = std::fabs(x);
  return v;
}

// First, so that a library failure in the Float8 cases (fatal) cannot hide
// it: all_gather_linear and linear_reduce_scatter (bf16), the collective
// matmuls of the bf16 step, on the same ring of one.
TEST(CollectiveMatmul, LinearRingsAreTheGemms) {
  const int64_t outer = 2, rows = 32, in = 64, out = 48;
  std::vector<float> x = rounded(random(size_t(outer * rows * in), 40),
                                 Dtype::bf16),
                     w = rounded(random(size_t(out * in), 41), Dtype::bf16);
  DeviceBuffer dx(x, Dtype::bf16), dw(w, Dtype::bf16),
      gathered(x.size(), Dtype::bf16),
      y(size_t(outer * rows * out), Dtype::bf16);
  AbiCall gather;
  gather.add(dx.ptr, {outer, rows, in}, TITAN_RT_BF16, false);
  gather.add(dw.ptr, {out, in}, TITAN_RT_BF16, false);
  gather.add(gathered.ptr, {outer, rows, in}, TITAN_RT_BF16, true);
  gather.add(y.ptr, {outer, rows, out}, TITAN_RT_BF16, true);
  const int64_t gatherInts[] = {1, 1, 0, 16};
  DeviceBytes ws(titan::cuda::collectiveMatmulWorkspaceBytes(
      3, outer * rows * std::max(in, out) * 2));
  titan_rt_all_gather_linear_bf16(gather.buffers.data(), gather.shapes.data(),
                                  gatherInts, nullptr, ws.ptr,
                                  gather.types.data());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(gathered.read(), x);
  std::vector<float> expected, size;
  hostGemm(
      x, outer * rows, in, out,
      [&](int64_t t, int64_t j) { return w[j * in + t]; },
      [](int64_t) { return 1.0f; }, expected, size);
  expectGemm(y.read(), expected, size, in, magnitudes(expected),
             "all_gather_linear");

  // linear_reduce_scatter of y times a [in, out] weight back to [.., in].
  std::vector<float> w2 = rounded(random(size_t(in * out), 42), Dtype::bf16);
  DeviceBuffer dw2(w2, Dtype::bf16), z(size_t(outer * rows * in), Dtype::bf16);
  AbiCall scatter;
  scatter.add(y.ptr, {outer, rows, out}, TITAN_RT_BF16, false);
  scatter.add(dw2.ptr, {in, out}, TITAN_RT_BF16, false);
  scatter.add(z.ptr, {outer, rows, in}, TITAN_RT_BF16, true);
  const int64_t scatterInts[] = {1, 1, 0, 16, 1};
  titan_rt_linear_reduce_scatter_bf16(scatter.buffers.data(),
                                      scatter.shapes.data(), scatterInts,
                                      nullptr, ws.ptr, scatter.types.data());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<float> yv = y.read(), expected2, size2;
  hostGemm(
      yv, outer * rows, out, in,
      [&](int64_t t, int64_t j) { return w2[j * out + t]; },
      [](int64_t) { return 1.0f; }, expected2, size2);
  expectGemm(z.read(), expected2, size2, out, magnitudes(expected2),
             "linear_reduce_scatter");
}

// all_gather_scaled_matmul: the forward's column-parallel GEMMs (e4m3,
// one weight with a scale per output column, one with one scale), bf16
// results, over 2 outer indices of 32 rows.
TEST(CollectiveMatmul, AllGatherScaledMatmulIsTheScaledGemms) {
  const int64_t outer = 2, rows = 32, in = 64, outs[2] = {48, 32};
  Float8Tensor x(size_t(outer * rows * in), 1, Dtype::f8E4M3FN);
  float inputScale = 8;
  Float8Tensor w0(size_t(outs[0] * in), 2, Dtype::f8E4M3FN),
      w1(size_t(outs[1] * in), 3, Dtype::f8E4M3FN);
  std::vector<float> s0 = random(size_t(outs[0]), 4, 1, 16), s1 = {2.5f};
  DeviceBytes dx(x.codes), dw0(w0.codes), dw1(w1.codes),
      gathered(outer * rows * in);
  DeviceArray<float> dxs(std::vector<float>{inputScale}), ds0(s0), ds1(s1);
  DeviceBuffer r0(size_t(outer * rows * outs[0]), Dtype::bf16),
      r1(size_t(outer * rows * outs[1]), Dtype::bf16);
  AbiCall call;
  call.add(dx.ptr, {outer, rows, in}, TITAN_RT_F8E4M3FN, false);
  call.add(dxs.ptr, {}, TITAN_RT_F32, false);
  call.add(dw0.ptr, {outs[0], in}, TITAN_RT_F8E4M3FN, false);
  call.add(ds0.ptr, {outs[0], 1}, TITAN_RT_F32, false);
  call.add(dw1.ptr, {outs[1], in}, TITAN_RT_F8E4M3FN, false);
  call.add(ds1.ptr, {}, TITAN_RT_F32, false);
  call.add(gathered.ptr, {outer, rows, in}, TITAN_RT_F8E4M3FN, true);
  call.add(r0.ptr, {outer, rows, outs[0]}, TITAN_RT_BF16, true);
  call.add(r1.ptr, {outer, rows, outs[1]}, TITAN_RT_BF16, true);
  // {count, dim, grad_input, axis_mask, lhs_format, rhs_format,
  // rhs_transposed}: the tp axis (bit 4); a ring of one without a
  // communicator.
  const int64_t ints[] = {2, 1, 0, 16, 0, 0, 0};
  DeviceBytes ws(titan::cuda::collectiveMatmulWorkspaceBytes(
      2, outer * rows * in,
      titan::cuda::scaledRingGemmBytes(false, rows, in, outs[0] * in, outs[0],
                                       false)));
  titan_rt_all_gather_scaled_matmul_bf16(call.buffers.data(),
                                         call.shapes.data(), ints, nullptr,
                                         ws.ptr, call.types.data());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<uint8_t> copy(x.codes.size());
  cudaMemcpy(copy.data(), gathered.ptr, copy.size(), cudaMemcpyDeviceToHost);
  EXPECT_EQ(copy, x.codes) << "the gathered float8 tensor";
  const Float8Tensor *weights[2] = {&w0, &w1};
  const std::vector<float> *scales[2] = {&s0, &s1};
  DeviceBuffer *results[2] = {&r0, &r1};
  for (int i = 0; i < 2; ++i) {
    std::vector<float> expected, size;
    const std::vector<float> &w = weights[i]->values;
    const std::vector<float> &s = *scales[i];
    hostGemm(
        x.values, outer * rows, in, outs[i],
        [&](int64_t t, int64_t j) { return w[j * in + t]; },
        [&](int64_t j) {
          return (1.0f / inputScale) * (1.0f / s[s.size() > 1 ? j : 0]);
        },
        expected, size);
    expectGemm(results[i]->read(), expected, size, in, magnitudes(expected),
               i ? "GEMM 1" : "GEMM 0");
  }
}

// scaled_matmul_reduce_scatter: the column-parallel backward's summed
// grad-input GEMMs (e5m2 gradients, K-major e4m3 weights), bf16: the
// second GEMM adds into the first's bf16 result (cuBLASLt's beta = 1).
TEST(CollectiveMatmul, ScaledMatmulReduceScatterSumsTheScaledGemms) {
  const int64_t outer = 2, rows = 32, out = 64, ins[2] = {48, 32};
  AbiCall call;
  std::vector<Float8Tensor> lhs, weights;
  std::vector<std::vector<uint8_t>> kMajor;
  std::vector<float> lhsScales = {4, 16};
  // One scale a weight (the tensorwise recipe's; outer-vector scales with
  // e5m2 gradients are no recipe's, so not a configuration to test here).
  std::vector<std::vector<float>> wScales = {{2.5f}, {3}};
  for (int i = 0; i < 2; ++i) {
    lhs.emplace_back(size_t(outer * rows * ins[i]), 20 + i, Dtype::f8E5M2);
    weights.emplace_back(size_t(ins[i] * out), 30 + i, Dtype::f8E4M3FN);
    // The weight [N = ins[i], K = out] stored K-major: [K, N].
    std::vector<uint8_t> t(weights[i].codes.size());
    for (int64_t n = 0; n < ins[i]; ++n)
      for (int64_t k = 0; k < out; ++k)
        t[k * ins[i] + n] = weights[i].codes[n * out + k];
    kMajor.push_back(t);
  }
  DeviceBytes l0(lhs[0].codes), l1(lhs[1].codes), w0(kMajor[0]), w1(kMajor[1]);
  DeviceArray<float> ls0(std::vector<float>{lhsScales[0]}),
      ls1(std::vector<float>{lhsScales[1]}), ws0(wScales[0]), ws1(wScales[1]);
  DeviceBuffer result(size_t(outer * rows * out), Dtype::bf16);
  void *lp[2] = {l0.ptr, l1.ptr}, *wp[2] = {w0.ptr, w1.ptr};
  float *lsp[2] = {ls0.ptr, ls1.ptr}, *wsp[2] = {ws0.ptr, ws1.ptr};
  for (int i = 0; i < 2; ++i) {
    call.add(lp[i], {outer, rows, ins[i]}, TITAN_RT_F8E5M2, false);
    call.add(lsp[i], {}, TITAN_RT_F32, false);
    call.add(wp[i], {out, ins[i]}, TITAN_RT_F8E4M3FN, false);
    if (wScales[i].size() > 1)
      call.add(wsp[i], {1, out}, TITAN_RT_F32, false);
    else
      call.add(wsp[i], {}, TITAN_RT_F32, false);
  }
  call.add(result.ptr, {outer, rows, out}, TITAN_RT_BF16, true);
  // {count, dim, grad_input, axis_mask, storage (bf16), lhs_format (e5m2),
  // rhs_format, rhs_transposed}.
  const int64_t ints[] = {2, 1, 1, 16, 1, 1, 0, 1};
  DeviceBytes ws(titan::cuda::collectiveMatmulWorkspaceBytes(
      3, outer * rows * out * 2,
      titan::cuda::scaledRingGemmBytes(true, rows, ins[0], ins[0] * out, out,
                                       true)));
  titan_rt_scaled_matmul_reduce_scatter_bf16(call.buffers.data(),
                                             call.shapes.data(), ints, nullptr,
                                             ws.ptr, call.types.data());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  // The host's sum of both, each GEMM's f32 sum of float8 products scaled.
  std::vector<float> sum, size, first;
  for (int i = 0; i < 2; ++i) {
    std::vector<float> g, m;
    const std::vector<float> &w = weights[i].values;
    const std::vector<float> &s = wScales[i];
    float inv = 1.0f / lhsScales[i];
    hostGemm(
        lhs[i].values, outer * rows, ins[i], out,
        [&](int64_t t, int64_t j) { return w[t * out + j]; },
        [&](int64_t j) { return inv * (1.0f / s[s.size() > 1 ? j : 0]); }, g,
        m);
    if (i == 0) {
      sum = g, size = m, first = magnitudes(g);
    } else {
      for (size_t e = 0; e < sum.size(); ++e)
        sum[e] += g[e], size[e] += m[e];
    }
  }
  // Two bf16 roundings: the first GEMM's result, then the sum.
  std::vector<float> roundedValues = magnitudes(sum);
  for (size_t e = 0; e < roundedValues.size(); ++e)
    roundedValues[e] += first[e];
  expectGemm(result.read(), sum, size, std::max(ins[0], ins[1]), roundedValues,
             "sum");
}

// scaled_matmul_reduce_scatter, rowwise: the row-parallel forward (e4m3,
// linear form) with one lhs scale per row; each row block takes its rows'.
TEST(CollectiveMatmul, ScaledMatmulReduceScatterTakesEachRowsScale) {
  const int64_t outer = 2, rows = 32, in = 48, out = 64;
  Float8Tensor x(size_t(outer * rows * in), 50, Dtype::f8E4M3FN),
      w(size_t(out * in), 51, Dtype::f8E4M3FN);
  std::vector<float> rowScales, colScales = random(size_t(out), 53, 1, 8);
  for (float v : random(size_t(outer * rows), 52, 0, 4))
    rowScales.push_back(std::exp2(std::floor(v)));
  DeviceBytes dx(x.codes), dw(w.codes);
  DeviceArray<float> dls(rowScales), dws(colScales);
  DeviceBuffer result(size_t(outer * rows * out), Dtype::f32);
  AbiCall call;
  call.add(dx.ptr, {outer, rows, in}, TITAN_RT_F8E4M3FN, false);
  call.add(dls.ptr, {outer, rows, 1}, TITAN_RT_F32, false);
  call.add(dw.ptr, {out, in}, TITAN_RT_F8E4M3FN, false);
  call.add(dws.ptr, {out, 1}, TITAN_RT_F32, false);
  call.add(result.ptr, {outer, rows, out}, TITAN_RT_F32, true);
  const int64_t ints[] = {1, 1, 0, 16, 0, 0, 0, 0};
  DeviceBytes ws(titan::cuda::collectiveMatmulWorkspaceBytes(
      3, outer * rows * out * 4,
      titan::cuda::scaledRingGemmBytes(false, rows, in, out * in, out, false)));
  titan_rt_scaled_matmul_reduce_scatter_f32(call.buffers.data(),
                                            call.shapes.data(), ints, nullptr,
                                            ws.ptr, call.types.data());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<float> expected, size;
  hostGemm(
      x.values, outer * rows, in, out,
      [&](int64_t t, int64_t j) { return w.values[j * in + t]; },
      [&](int64_t j) { return 1.0f / colScales[j]; }, expected, size);
  // The row scales: exact powers of two.
  for (int64_t r = 0; r < outer * rows; ++r)
    for (int64_t j = 0; j < out; ++j) {
      expected[r * out + j] /= rowScales[r];
      size[r * out + j] /= rowScales[r];
    }
  expectGemm(result.read(), expected, size, in,
             std::vector<float>(expected.size(), 0.0f), "rowwise");
}

} // namespace
