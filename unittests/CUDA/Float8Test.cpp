//===- Float8Test.cpp - the CUDA Float8 kernels against the CPU contracts -===//
//
// amax (whole tensor, per row, per column on a 2-D grid of atomic maxima;
// NaN wins; empty inputs launch nothing), the byte transpose past
// gridDim.y's 65535 tiles, the saturating cast row-major and transposed
// (bit for bit the CPU's), and titan.scaled_matmul's three forms on
// cuBLASLt's scaled FP8 GEMM (tensorwise scale pointers, rowwise
// outer-vector scales, a scalar broadcast against a vector) into f32 and
// bf16, against the CPU target's math: the f32 sum of the decoded float8
// products times (1 / lhs_scale) * (1 / rhs_scale), rounded once; with the
// gradients' operands K-major, bit for bit the result of the copies.
//
//===----------------------------------------------------------------------===//

#include "Float8.h"

#include "DeviceTestUtils.h"
#include "LowPrecision.h"

#include "titan/Contract/CUDAWorkspaces.h"

#include "gtest/gtest.h"

#include <cmath>
#include <vector>

using namespace titanrt;
using namespace titanrt::cuda;
using namespace titanrt::cuda::test;

namespace {

std::vector<float> amaxOnDevice(const std::vector<float> &x, Dtype t,
                                int64_t rows, int64_t cols, int reduction) {
  DeviceBuffer in(x, t);
  size_t n = reduction == 0 ? 1 : reduction == 1 ? rows : cols;
  // A stale value the kernel must overwrite.
  DeviceBuffer out(std::vector<float>(n, 123.0f), Dtype::f32);
  amax(t, in.ptr, static_cast<float *>(out.ptr), rows, cols, reduction,
       nullptr);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  return out.read();
}

std::vector<float> amaxOnHost(const std::vector<float> &x, int64_t rows,
                              int64_t cols, int reduction) {
  std::vector<float> out(reduction == 0   ? 1
                         : reduction == 1 ? rows
                                          : cols,
                         0.0f);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j) {
      float &m = out[reduction == 0 ? 0 : reduction == 1 ? r : j];
      float a = std::fabs(x[r * cols + j]);
      m = std::isnan(m) || std::isnan(a) ? NAN : std::max(m, a);
    }
  return out;
}

TEST(Float8, AmaxMatchesTheCpuContract) {
  struct Shape {
    int64_t rows, cols;
  };
  // Tall ones spread the column maxima over many row shares.
  for (Shape s : {Shape{1, 1}, Shape{7, 33}, Shape{5000, 100}, Shape{40000, 3},
                  Shape{2, 70000}})
    for (Dtype t : {Dtype::f32, Dtype::bf16}) {
      std::vector<float> x =
          rounded(random(size_t(s.rows * s.cols), 5, -8, 8), t);
      for (int reduction : {0, 1, 2}) {
        SCOPED_TRACE(testing::Message() << s.rows << " x " << s.cols
                                        << ", reduction " << reduction);
        // A max is exact: bitwise.
        EXPECT_EQ(amaxOnDevice(x, t, s.rows, s.cols, reduction),
                  amaxOnHost(x, s.rows, s.cols, reduction));
      }
    }
}

TEST(Float8, AmaxNaNWinsAndEmptyInputs) {
  std::vector<float> x = {1, -7, 2, NAN, -0.5f, 4};
  EXPECT_TRUE(std::isnan(amaxOnDevice(x, Dtype::f32, 2, 3, 0)[0]));
  std::vector<float> rows = amaxOnDevice(x, Dtype::f32, 2, 3, 1);
  EXPECT_EQ(rows[0], 7.0f);
  EXPECT_TRUE(std::isnan(rows[1]));
  std::vector<float> cols = amaxOnDevice(x, Dtype::f32, 2, 3, 2);
  EXPECT_TRUE(std::isnan(cols[0]));
  EXPECT_EQ(cols[1], 7.0f);
  EXPECT_EQ(cols[2], 4.0f);
  // No rows: nothing to launch (and nothing written); no columns: zeros.
  amax(Dtype::f32, nullptr, nullptr, 0, 5, 1, nullptr);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(amaxOnDevice({}, Dtype::f32, 0, 3, 2), std::vector<float>(3, 0.0f));
  EXPECT_EQ(amaxOnDevice({}, Dtype::f32, 4, 0, 1), std::vector<float>(4, 0.0f));
  EXPECT_EQ(amaxOnDevice({}, Dtype::f32, 0, 0, 0), std::vector<float>(1, 0.0f));
}

TEST(Float8, TransposeBytesPastTheGridLimit) {
  // 65535 tiles of 32 columns is 2097120 columns.
  for (auto [rows, cols] :
       {std::pair<int64_t, int64_t>{33, 65}, {3, 2100000}, {2100000, 2}}) {
    std::vector<uint8_t> in(size_t(rows * cols));
    for (size_t i = 0; i < in.size(); ++i)
      in[i] = uint8_t(i * 2654435761u >> 13);
    DeviceArray<uint8_t> src(in);
    DeviceArray<uint8_t> dst(std::vector<uint8_t>(in.size()));
    transposeBytes(src.ptr, dst.ptr, rows, cols, nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<uint8_t> out(in.size());
    cudaMemcpy(out.data(), dst.ptr, out.size(), cudaMemcpyDeviceToHost);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        ASSERT_EQ(out[c * rows + r], in[r * cols + c]) << r << ", " << c;
  }
}

// The cast against the CPU contract's (LowPrecision.h's floatToFp8, bit
// for bit __nv_cvt_float_to_fp8), row-major and transposed (the K-major
// operand of a scaled GEMM, written through the transpose's tiles, past
// gridDim.y's 65535 column tiles too), for each scale mode.
TEST(Float8, QuantizeMatchesTheCpuContract) {
  for (auto [rows, cols] :
       {std::pair<int64_t, int64_t>{33, 65}, {256, 48}, {3, 2100000}})
    for (Dtype t : {Dtype::f32, Dtype::bf16})
      for (int scaleMode : {0, 1, 2})
        for (bool e5m2 : {false, true}) {
          SCOPED_TRACE(testing::Message()
                       << rows << " x " << cols << ", scale mode " << scaleMode
                       << (e5m2 ? ", e5m2" : ", e4m3"));
          // Past both formats' largest values, so some saturate.
          std::vector<float> x =
              rounded(random(size_t(rows * cols), 21, -70000, 70000), t);
          std::vector<float> scales = random(scaleMode == 0   ? 1
                                             : scaleMode == 1 ? rows
                                                              : cols,
                                             22, 0.01f, 4);
          Dtype format = e5m2 ? Dtype::f8E5M2 : Dtype::f8E4M3FN;
          std::vector<uint8_t> expected(x.size());
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t c = 0; c < cols; ++c) {
              float s = scales[scaleMode == 0 ? 0 : scaleMode == 1 ? r : c];
              expected[r * cols + c] =
                  floatToFp8(x[r * cols + c] * s, format, /*saturate=*/true);
            }
          DeviceBuffer in(x, t);
          DeviceArray<float> scale(scales);
          for (bool transposed : {false, true}) {
            DeviceArray<uint8_t> out(std::vector<uint8_t>(x.size()));
            quantize(t, in.ptr, scale.ptr, out.ptr, rows, cols, scaleMode, e5m2,
                     transposed, nullptr);
            ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
            std::vector<uint8_t> codes(x.size());
            cudaMemcpy(codes.data(), out.ptr, codes.size(),
                       cudaMemcpyDeviceToHost);
            for (int64_t r = 0; r < rows; ++r)
              for (int64_t c = 0; c < cols; ++c)
                ASSERT_EQ(codes[transposed ? c * rows + r : r * cols + c],
                          expected[r * cols + c])
                    << (transposed ? "transposed, " : "") << r << ", " << c;
          }
        }
}

/// One float8 operand: its codes, their values, its scales.
struct Operand {
  int64_t rows, cols;
  Dtype type;
  std::vector<uint8_t> codes;
  std::vector<float> values, scales;
  float value(int64_t r, int64_t c) const { return values[r * cols + c]; }
};

Operand makeOperand(int64_t rows, int64_t cols, Dtype type, size_t scales,
                    uint32_t seed) {
  Operand o{rows, cols, type, {}, {}, {}};
  // Integers in [-4, 4]: Hopper's FP8 tensor cores accumulate with about
  // 14 significant bits (DeepSeek-V3's measurement), not f32's 24; with
  // products of at most 16 and at most 512 terms every partial sum is an
  // integer of at most 2^13, exact in any order at that precision, so the
  // comparison checks the layouts and the scales.
  for (float x : random(size_t(rows * cols), seed, -4.49f, 4.49f)) {
    o.codes.push_back(floatToFp8(std::nearbyint(x), type, /*saturate=*/true));
    o.values.push_back(fp8ToFloat(o.codes.back(), type));
  }
  // Powers of two (the rowwise recipes') and others.
  std::vector<float> s = random(scales, seed + 1, 0.25f, 64.0f);
  for (size_t i = 0; i < scales; ++i)
    o.scales.push_back(i % 2 ? std::exp2(std::floor(std::log2(s[i]))) : s[i]);
  return o;
}

/// The CPU target's scaled_matmul: lhs and rhs as the form reads them.
std::vector<float> scaledMatmulOnHost(int form, const Operand &lhs,
                                      const Operand &rhs, int64_t rows,
                                      int64_t cols, int64_t depth) {
  std::vector<float> out(size_t(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j) {
      float acc = 0;
      for (int64_t t = 0; t < depth; ++t) {
        float a = form == 2 ? lhs.value(t, r) : lhs.value(r, t);
        float b = form == 0 ? rhs.value(j, t) : rhs.value(t, j);
        acc += a * b;
      }
      float invL = 1.0f / lhs.scales[lhs.scales.size() > 1 ? r : 0];
      float invR = 1.0f / rhs.scales[rhs.scales.size() > 1 ? j : 0];
      out[r * cols + j] = acc * (invL * invR);
    }
  return out;
}

/// Sum of |terms| of each result element, the scale of its rounding error.
std::vector<float> magnitudes(int form, const Operand &lhs, const Operand &rhs,
                              int64_t rows, int64_t cols, int64_t depth) {
  Operand l = lhs, r = rhs;
  for (float &v : l.values)
    v = std::fabs(v);
  for (float &v : r.values)
    v = std::fabs(v);
  return scaledMatmulOnHost(form, l, r, rows, cols, depth);
}

/// `o`'s codes stored transposed (cols x rows): titan.quantize's K-major
/// layout.
std::vector<uint8_t> transposedCodes(const Operand &o) {
  std::vector<uint8_t> t(o.codes.size());
  for (int64_t r = 0; r < o.rows; ++r)
    for (int64_t c = 0; c < o.cols; ++c)
      t[c * o.rows + r] = o.codes[r * o.cols + c];
  return t;
}

/// scaledMatmul on device; with `kMajor`, the operands the form reduces
/// over their leading dimensions come transposed (no copies in the
/// workspace), else the GEMM copies them. `twice` runs it again, adding
/// into the result (accumulate, as kernel-fuse-gemm-accumulate asks).
std::vector<float> scaledMatmulOnDevice(int form, const Operand &lhs,
                                        const Operand &rhs, Dtype result,
                                        int64_t rows, int64_t cols, bool kMajor,
                                        bool twice = false) {
  bool lhsT = kMajor && form == 2, rhsT = kMajor && form != 0;
  DeviceArray<uint8_t> a(lhsT ? transposedCodes(lhs) : lhs.codes),
      b(rhsT ? transposedCodes(rhs) : rhs.codes);
  DeviceArray<float> as(lhs.scales), bs(rhs.scales);
  DeviceBuffer out(size_t(rows * cols), result);
  titan::cuda::ScaledMatmulWorkspace parts = titan::cuda::scaledMatmulWorkspace(
      titan::cuda::ScaledMatmulForm(form), lhs.rows * lhs.cols,
      rhs.rows * rhs.cols, rows, cols, lhsT, rhsT);
  EXPECT_EQ(parts.copiesLhs || parts.copiesRhs, form != 0 && !kMajor);
  void *workspace = nullptr;
  EXPECT_EQ(cudaMalloc(&workspace, size_t(parts.bytes)), cudaSuccess);
  LinearGemms gemms(size_t(titan::cuda::kGemmWorkspaceBytes));
  for (int run = 0; run < (twice ? 2 : 1); ++run)
    scaledMatmul(gemms, form,
                 {a.ptr, lhs.type, lhs.rows, lhs.cols, as.ptr,
                  lhs.scales.size() > 1, lhsT},
                 {b.ptr, rhs.type, rhs.rows, rhs.cols, bs.ptr,
                  rhs.scales.size() > 1, rhsT},
                 result, out.ptr, rows, cols, workspace, nullptr,
                 /*accumulate=*/run > 0);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<float> actual = out.read();
  cudaFree(workspace);
  return actual;
}

void runScaledMatmul(int form, int64_t m, int64_t k, int64_t n, Dtype lhsType,
                     bool lhsRowwise, bool rhsRowwise, Dtype result) {
  // Operand shapes and the result's as KernelABI.cpp's contract has them.
  int64_t lr = m, lc = form == 0 ? k : n;
  int64_t rr = form == 2 ? m : n, rc = k;
  int64_t rows = form == 2 ? n : m, cols = form == 0 ? n : k;
  int64_t depth = form == 0 ? k : form == 1 ? n : m;
  Operand lhs = makeOperand(lr, lc, lhsType, lhsRowwise ? rows : 1, 11);
  Operand rhs = makeOperand(rr, rc, Dtype::f8E4M3FN, rhsRowwise ? cols : 1, 12);
  SCOPED_TRACE(testing::Message()
               << "form " << form << ", m " << m << ", k " << k << ", n " << n
               << ", lhs " << (lhsRowwise ? "rowwise" : "tensorwise")
               << ", rhs " << (rhsRowwise ? "rowwise" : "tensorwise")
               << (result == Dtype::bf16 ? ", bf16" : ", f32"));
  std::vector<float> expected =
      scaledMatmulOnHost(form, lhs, rhs, rows, cols, depth);
  std::vector<float> size = magnitudes(form, lhs, rhs, rows, cols, depth);

  std::vector<float> actual =
      scaledMatmulOnDevice(form, lhs, rhs, result, rows, cols, false);
  // The float8 products are exact in f32; their f32 sums in another order
  // differ by at most depth roundings of the terms' magnitude; bf16 adds
  // one rounding (2^-8 relative).
  double sums = double(depth + 2) * std::ldexp(1.0, -23);
  double unit = result == Dtype::bf16 ? std::ldexp(1.0, -8) : 0;
  for (size_t i = 0; i < expected.size(); ++i)
    ASSERT_NEAR(actual[i], expected[i],
                sums * size[i] + unit * std::fabs(expected[i]))
        << "element " << i;
  // Accumulating (beta = 1) adds the scaled product to what the result
  // holds: here the same product, so twice it, with one rounding more.
  std::vector<float> sum =
      scaledMatmulOnDevice(form, lhs, rhs, result, rows, cols, false, true);
  for (size_t i = 0; i < expected.size(); ++i)
    ASSERT_NEAR(sum[i], 2 * expected[i],
                2 * (sums * size[i] + 2 * unit * std::fabs(expected[i])))
        << "element " << i << " (accumulate)";
  // The gradients' operands K-major (as titan.quantize writes them): the
  // same bytes reach cuBLASLt, so the same result, bit for bit.
  if (form != 0) {
    EXPECT_EQ(scaledMatmulOnDevice(form, lhs, rhs, result, rows, cols, true),
              actual)
        << "K-major operands";
  }
}

// cuBLASLt's FP8 dimensions are multiples of 16 (titan-compile refuses the
// rest on --target=cuda).
struct Dims {
  int64_t m, k, n;
};
const Dims kDims[] = {{16, 16, 16}, {64, 128, 48}, {256, 96, 512}};

TEST(Float8, ScaledMatmulTensorwise) {
  for (Dims d : kDims)
    for (int form : {0, 1, 2})
      for (Dtype result : {Dtype::bf16, Dtype::f32}) {
        // The linear's e4m3 x e4m3, the gradients' e5m2 x e4m3.
        Dtype lhs = form == 0 ? Dtype::f8E4M3FN : Dtype::f8E5M2;
        runScaledMatmul(form, d.m, d.k, d.n, lhs, false, false, result);
      }
}

TEST(Float8, ScaledMatmulRowwise) {
  for (Dims d : kDims)
    for (int form : {0, 1, 2})
      for (Dtype result : {Dtype::bf16, Dtype::f32})
        runScaledMatmul(form, d.m, d.k, d.n, Dtype::f8E4M3FN, true, true,
                        result);
}

// rowwise_with_gw_hp's grad_input: dY per row, W one scale (broadcast).
TEST(Float8, ScaledMatmulRowsTimesOneScale) {
  for (Dims d : kDims)
    runScaledMatmul(1, d.m, d.k, d.n, Dtype::f8E4M3FN, true, false,
                    Dtype::bf16);
}

} // namespace
