//===- Float8KernelTest.cpp - the CPU target's Float8 kernels -------------===//
//
// titan-expand-float8's kernels through their KernelABI.h entries, against
// values worked out independently: amax (per row, per column; NaN wins), the
// saturating scaled cast with broadcast scales (codes written out by hand), and
// the scaled GEMM in its three forms against an f64 sum of the fp8 values (f32
// accumulation, so to ~1e-6). The bf16 entries run the same kernels on widened
// copies. float8_scale's kernels and the whole tensor's amax are generated
// (PointwiseSemanticsTest checks their bodies, GeneratedKernelTest runs
// them).
//
//===----------------------------------------------------------------------===//

#include "LowPrecision.h"
#include "titanrt/KernelABI.h"

#include "gtest/gtest.h"

#include <cmath>
#include <random>
#include <vector>

using namespace titanrt;

namespace {

/// One call: buffers with their shapes and type codes, inputs first.
struct Call {
  std::vector<void *> buffers;
  std::vector<int64_t> shapes, codes;
  int64_t inputs = 0;
  void add(void *p, std::vector<int64_t> shape, int64_t code) {
    buffers.push_back(p);
    shapes.push_back(int64_t(shape.size()));
    shapes.insert(shapes.end(), shape.begin(), shape.end());
    codes.push_back(code);
  }
  template <typename Entry>
  void run(Entry entry, std::vector<int64_t> ints, std::vector<double> floats,
           void *workspace = nullptr) {
    std::vector<int64_t> types = {inputs, int64_t(buffers.size()) - inputs};
    types.insert(types.end(), codes.begin(), codes.end());
    entry(buffers.data(), shapes.data(), ints.data(), floats.data(), workspace,
          types.data());
  }
};

TEST(Float8Kernels, AmaxRowsColumnsAndNaN) {
  std::vector<float> x = {1, -7, 2, 3, -0.5f, 4};
  std::vector<float> rows(2), cols(3);
  for (auto [out, reduction, shape] :
       {std::tuple{rows.data(), 1, std::vector<int64_t>{2, 1}},
        {cols.data(), 2, std::vector<int64_t>{1, 3}}}) {
    Call c;
    c.add(x.data(), {2, 3}, TITAN_RT_F32);
    c.inputs = 1;
    c.add(out, shape, TITAN_RT_F32);
    c.run(titan_rt_amax_f32, {reduction}, {});
  }
  EXPECT_EQ(rows, (std::vector<float>{7, 4}));
  EXPECT_EQ(cols, (std::vector<float>{3, 7, 4}));
  // NaN propagates, as torch.max's does.
  x[4] = NAN;
  Call c;
  c.add(x.data(), {2, 3}, TITAN_RT_F32);
  c.inputs = 1;
  c.add(rows.data(), {2, 1}, TITAN_RT_F32);
  c.run(titan_rt_amax_f32, {1}, {});
  EXPECT_EQ(rows[0], 7.0f);
  EXPECT_TRUE(std::isnan(rows[1]));
}

TEST(Float8Kernels, AmaxOfBf16IsExact) {
  std::vector<uint16_t> x = {floatToBf16(-3.140625f), floatToBf16(2.5f),
                             floatToBf16(1e-3f), floatToBf16(-65280.0f)};
  float out = 0;
  std::vector<char> workspace(256);
  Call c;
  c.add(x.data(), {1, 4}, TITAN_RT_BF16);
  c.inputs = 1;
  c.add(&out, {1, 1}, TITAN_RT_F32);
  c.run(titan_rt_amax_bf16, {1}, {}, workspace.data());
  EXPECT_EQ(out, 65280.0f);
}

TEST(Float8Kernels, QuantizeSaturatesAndBroadcastsScales) {
  // Two rows, scaled 2 and 0.5 (per row), e4m3.
  std::vector<float> x = {1.0f, 300.0f, -1000.0f, NAN,
                          1.0f, 3.0f,   -0.0f,    2e-3f};
  std::vector<float> scale = {2.0f, 0.5f};
  std::vector<uint8_t> q(8);
  Call c;
  c.add(x.data(), {2, 4}, TITAN_RT_F32);
  c.add(scale.data(), {2, 1}, TITAN_RT_F32);
  c.inputs = 2;
  c.add(q.data(), {2, 4}, TITAN_RT_F8E4M3FN);
  c.run(titan_rt_quantize_f32, {0, 0}, {});
  // e4m3: 2.0 = 0x40; 600 and -2000 saturate to +-448 (0x7E, 0xFE); NaN
  // stays NaN (0x7F); 0.5 = 0x30; 1.5 = 0x3C; -0 = 0x80; 1e-3 is 0.512 of
  // the smallest subnormal 2^-9, so it rounds up to it (0x01).
  EXPECT_EQ(q, (std::vector<uint8_t>{0x40, 0x7E, 0xFE, 0x7F, 0x30, 0x3C, 0x80,
                                     0x01}));
  // e5m2: 600 lies between 512 and 640 (steps of 128 there), nearer 640 =
  // 1.25 * 2^9 (0x61); 60000 saturates to 57344 (0x7B), the largest finite.
  std::vector<float> one = {1.0f};
  std::vector<float> y = {600.0f, 60000.0f};
  std::vector<uint8_t> r(2);
  Call e;
  e.add(y.data(), {2}, TITAN_RT_F32);
  e.add(one.data(), {}, TITAN_RT_F32);
  e.inputs = 2;
  e.add(r.data(), {2}, TITAN_RT_F8E5M2);
  e.run(titan_rt_quantize_f32, {1, 0}, {});
  EXPECT_EQ(r[0], 0x61);
  EXPECT_EQ(r[1], 0x7B);
}

/// Transpose of a rows x cols byte matrix.
std::vector<uint8_t> transposed(const std::vector<uint8_t> &v, int64_t rows,
                                int64_t cols) {
  std::vector<uint8_t> t(v.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j)
      t[j * rows + r] = v[r * cols + j];
  return t;
}

// A transposed cast writes the same codes, the input's last dimension
// first: per row, per column and one scale, on a rank-3 input.
TEST(Float8Kernels, QuantizeTransposedMovesTheCodesOnly) {
  const int64_t rows = 6, cols = 5;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> value(-600.0f, 600.0f);
  std::vector<float> x(rows * cols);
  for (float &v : x)
    v = value(rng);
  std::vector<float> perRow = {1, 2, 0.5f, 4, 0.25f, 3};
  std::vector<float> perColumn = {2, 0.5f, 1, 8, 0.125f};
  std::vector<float> one = {0.75f};
  for (auto [scale, shape] : {std::pair{&perRow, std::vector<int64_t>{2, 3, 1}},
                              {&perColumn, std::vector<int64_t>{1, 1, cols}},
                              {&one, std::vector<int64_t>{}}}) {
    std::vector<uint8_t> plain(x.size()), t(x.size());
    for (auto [out, flag, outShape] :
         {std::tuple{&plain, 0, std::vector<int64_t>{2, 3, cols}},
          {&t, 1, std::vector<int64_t>{cols, 2, 3}}}) {
      Call c;
      c.add(x.data(), {2, 3, cols}, TITAN_RT_F32);
      c.add(scale->data(), shape, TITAN_RT_F32);
      c.inputs = 2;
      c.add(out->data(), outShape, TITAN_RT_F8E4M3FN);
      c.run(titan_rt_quantize_f32, {0, flag}, {});
    }
    EXPECT_EQ(t, transposed(plain, rows, cols)) << scale->size() << " scales";
  }
}

/// A 2-D shape with its last dimension moved first, and the codes of such
/// a matrix in that layout.
std::vector<int64_t> rotated(std::vector<int64_t> shape) {
  return {shape[1], shape[0]};
}
std::vector<uint8_t> transposedCodes(const std::vector<uint8_t> &v,
                                     const std::vector<int64_t> &shape) {
  return transposed(v, shape[0], shape[1]);
}

/// The scaled GEMM against an f64 sum: `form` 0 linear, 1 grad_input, 2
/// grad_weight, with per-row/column scales on both operands; with
/// `transposed`, the operands the form reduces over their leading
/// dimensions come transposed (K-major); with `accumulate`, the result is
/// added to what it held (kernel-fuse-gemm-accumulate). Returns the
/// result.
std::vector<float> checkScaledMatmul(int form, bool transposed = false,
                                     bool accumulate = false) {
  const int64_t m = 6, n = 5, k = 7;
  std::mt19937 rng(11 + form);
  std::uniform_int_distribution<int> code(0, 255);
  // Finite codes only: e4m3's NaN is S.1111.111, e5m2's infinities and
  // NaNs are S.11111.xx.
  auto randomCodes = [&](int64_t count, Dtype format) {
    std::vector<uint8_t> v(count);
    for (uint8_t &c : v) {
      do
        c = uint8_t(code(rng));
      while (format == Dtype::f8E4M3FN ? (c & 0x7F) == 0x7F
                                       : (c & 0x7C) == 0x7C);
    }
    return v;
  };
  // Operand shapes and the result's rows x cols per form.
  std::vector<int64_t> lhsShape, rhsShape, outShape, lsShape, rsShape;
  int64_t rows, cols, depth;
  if (form == 0) {
    lhsShape = {m, k}, rhsShape = {n, k}, rows = m, cols = n, depth = k;
    lsShape = {m, 1}, rsShape = {n, 1};
  } else if (form == 1) {
    lhsShape = {m, n}, rhsShape = {n, k}, rows = m, cols = k, depth = n;
    lsShape = {m, 1}, rsShape = {1, k};
  } else {
    lhsShape = {m, n}, rhsShape = {m, k}, rows = n, cols = k, depth = m;
    lsShape = {1, n}, rsShape = {1, k};
  }
  outShape = {rows, cols};
  std::vector<uint8_t> a =
      randomCodes(lhsShape[0] * lhsShape[1], Dtype::f8E4M3FN);
  std::vector<uint8_t> b =
      randomCodes(rhsShape[0] * rhsShape[1], Dtype::f8E5M2);
  std::vector<float> ls(rows), rs(cols), out(rows * cols);
  for (float &s : ls)
    s = std::ldexp(1.0f, int(code(rng) % 9) - 4);
  for (float &s : rs)
    s = std::ldexp(1.0f, int(code(rng) % 9) - 4);
  std::vector<float> old(rows * cols, 0.0f);
  if (accumulate)
    for (size_t i = 0; i < old.size(); ++i)
      out[i] = old[i] = 0.25f * float(i % 7) - 1.0f;
  auto A = [&](int64_t i, int64_t j) { // lhs as rows x depth
    int64_t idx = form == 2 ? j * lhsShape[1] + i : i * lhsShape[1] + j;
    return double(fp8ToFloat(a[idx], Dtype::f8E4M3FN));
  };
  auto B = [&](int64_t j, int64_t d) { // rhs as cols x depth
    int64_t idx = form == 0 ? j * k + d : form == 1 ? d * k + j : d * k + j;
    return double(fp8ToFloat(b[idx], Dtype::f8E5M2));
  };
  // Transposed: rows x cols stored cols x rows, the shape's last dimension
  // first.
  bool lhsT = transposed && form == 2, rhsT = transposed && form != 0;
  std::vector<uint8_t> at = lhsT ? transposedCodes(a, lhsShape) : a;
  std::vector<uint8_t> bt = rhsT ? transposedCodes(b, rhsShape) : b;
  std::vector<char> workspace(4096);
  Call c;
  c.add(at.data(), lhsT ? rotated(lhsShape) : lhsShape, TITAN_RT_F8E4M3FN);
  c.add(ls.data(), lsShape, TITAN_RT_F32);
  c.add(bt.data(), rhsT ? rotated(rhsShape) : rhsShape, TITAN_RT_F8E5M2);
  c.add(rs.data(), rsShape, TITAN_RT_F32);
  c.inputs = 4;
  c.add(out.data(), outShape, TITAN_RT_F32);
  c.run(titan_rt_scaled_matmul_f32, {form, 0, 1, lhsT, rhsT, accumulate}, {},
        workspace.data());
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      double sum = 0, magnitude = 0;
      for (int64_t d = 0; d < depth; ++d) {
        sum += A(i, d) * B(j, d);
        magnitude += std::fabs(A(i, d) * B(j, d));
      }
      double expected =
          sum / double(ls[i]) / double(rs[j]) + double(old[i * cols + j]);
      double tolerance = 1e-6 * magnitude / double(ls[i]) / double(rs[j]) +
                         1e-6 * std::fabs(expected) + 1e-30;
      EXPECT_NEAR(out[i * cols + j], expected, tolerance)
          << "form " << form << " at " << i << ", " << j;
    }
  return out;
}

TEST(Float8Kernels, ScaledMatmulLinear) { checkScaledMatmul(0); }
TEST(Float8Kernels, ScaledMatmulGradInput) { checkScaledMatmul(1); }
TEST(Float8Kernels, ScaledMatmulGradWeight) { checkScaledMatmul(2); }

// accumulate = 1 adds the scaled product to the result's old values
// (cuBLASLt's beta = 1), every form.
TEST(Float8Kernels, ScaledMatmulAccumulates) {
  for (int form : {0, 1, 2})
    checkScaledMatmul(form, false, true);
}

// K-major operands (titan.quantize's transposed ones) give the same result,
// bit for bit: only the codes' places differ.
TEST(Float8Kernels, ScaledMatmulTransposedOperands) {
  for (int form : {1, 2})
    EXPECT_EQ(checkScaledMatmul(form, true), checkScaledMatmul(form, false))
        << "form " << form;
}

} // namespace
