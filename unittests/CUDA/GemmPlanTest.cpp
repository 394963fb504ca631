//===- GemmPlanTest.cpp - cuBLASLt GEMM plans without a GPU ---------------===//
//
// The host side of the CUDA target's GEMMs (runtime/cuda/GemmPlan.h), on a
// machine with the CUDA toolkit and no GPU (TitanCudaHostTest never
// skips): the operands' alignments and the plan key, the column-major
// mapping of the three row-major products (checked by multiplying small
// matrices through it), the float8 choices, and real cuBLASLt descriptors
// and preferences read back (cuBLASLt creates those without a device).
//
//===----------------------------------------------------------------------===//

#include "GemmPlan.h"
#include "Float8.h"

#include <gtest/gtest.h>

#include <map>
#include <utility>
#include <vector>

using namespace titanrt::cuda;
using titan::cuda::ScaledMatmulForm;

namespace {

TEST(GemmPlan, AddressAlignmentIsTheLargestPowerOfTwoUpTo256) {
  EXPECT_EQ(addressAlignment(0), 256u);
  EXPECT_EQ(addressAlignment(0x100), 256u);
  EXPECT_EQ(addressAlignment(0x7f000), 256u); // capped
  EXPECT_EQ(addressAlignment(0x180), 128u);
  EXPECT_EQ(addressAlignment(0x1010), 16u);
  EXPECT_EQ(addressAlignment(0x1002), 2u);
  EXPECT_EQ(addressAlignment(0x1003), 1u);
  EXPECT_EQ(pointerAlignment(nullptr), 256u);
}

TEST(GemmPlan, AlignmentsFollowTheOperandRoles) {
  // A is the second input, B the first, C and D the result.
  auto *base = reinterpret_cast<char *>(uintptr_t(1) << 20);
  GemmAlignments a = gemmAlignments(base + 8, base + 64, base + 2);
  EXPECT_EQ(a.a, 64u);
  EXPECT_EQ(a.b, 8u);
  EXPECT_EQ(a.c, 2u);
  EXPECT_EQ(a.d, 2u);
  GemmAlignments none;
  EXPECT_EQ(none.key(), std::make_tuple(256u, 256u, 256u, 256u));
}

GemmProblem bf16Forward() {
  return {LinearProduct::Forward, 64, 128, 32, Dtype::bf16, Dtype::bf16};
}

TEST(GemmPlan, PlanKeyTellsAlignmentsAndFloat8ModesApart) {
  GemmProblem p = bf16Forward();
  GemmAlignments aligned, view;
  view.b = 16;
  std::map<GemmPlanKey, int> plans;
  plans[{p, aligned}] = 1;
  plans[{p, view}] = 2;
  plans[{p, aligned}] = 3; // the same plan again
  EXPECT_EQ(plans.size(), 2u);
  EXPECT_EQ((plans[{p, aligned}]), 3);
  EXPECT_EQ((plans[{p, view}]), 2);

  GemmProblem fast = p;
  fast.fastAccumulation = true;
  EXPECT_NE(p.key(), fast.key());
  GemmProblem rowwise = p;
  rowwise.scaling = GemmScaling::OuterVector;
  EXPECT_NE(p.key(), rowwise.key());
  GemmProblem mixed = p;
  mixed.second = Dtype::f8E5M2;
  EXPECT_NE(p.key(), mixed.key());
}

/// C = op(A) op(B) on column-major matrices, as cuBLASLt computes it.
std::vector<float> columnMajorProduct(const ColumnMajorGemm &g,
                                      const std::vector<float> &a,
                                      const std::vector<float> &b) {
  auto at = [](const std::vector<float> &m, ColumnMajorMatrix s,
               cublasOperation_t op, int64_t i, int64_t j) {
    return op == CUBLAS_OP_N ? m[j * s.rows + i] : m[i * s.rows + j];
  };
  int64_t depth = g.opA == CUBLAS_OP_N ? g.a.cols : g.a.rows;
  std::vector<float> c(size_t(g.c.rows * g.c.cols));
  for (int64_t i = 0; i < g.c.rows; ++i)
    for (int64_t j = 0; j < g.c.cols; ++j) {
      float sum = 0;
      for (int64_t l = 0; l < depth; ++l)
        sum += at(a, g.a, g.opA, i, l) * at(b, g.b, g.opB, l, j);
      c[j * g.c.rows + i] = sum;
    }
  return c;
}

std::vector<float> iota(int64_t n, float step) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[i] = float((i * 7) % 11) * step - 2.0f;
  return v;
}

/// The row-major product of `product` (LinearGemm.h's formulas) on x [m,
/// k], w [n, k], dy [m, n], computed directly.
std::vector<float> rowMajorProduct(LinearProduct product, int64_t m, int64_t k,
                                   int64_t n, const std::vector<float> &x,
                                   const std::vector<float> &w,
                                   const std::vector<float> &dy) {
  std::vector<float> out;
  auto sum = [](int64_t len, auto term) {
    float s = 0;
    for (int64_t l = 0; l < len; ++l)
      s += term(l);
    return s;
  };
  if (product == LinearProduct::Forward) // y[m,n] = x w^T
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        out.push_back(
            sum(k, [&](int64_t l) { return x[i * k + l] * w[j * k + l]; }));
  else if (product == LinearProduct::GradInput) // dx[m,k] = dy w
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < k; ++j)
        out.push_back(
            sum(n, [&](int64_t l) { return dy[i * n + l] * w[l * k + j]; }));
  else // dw[n,k] = dy^T x
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < k; ++j)
        out.push_back(
            sum(m, [&](int64_t l) { return dy[l * n + i] * x[l * k + j]; }));
  return out;
}

TEST(GemmPlan, ColumnMajorMappingComputesTheRowMajorProducts) {
  int64_t m = 3, k = 5, n = 4;
  std::vector<float> x = iota(m * k, 0.5f), w = iota(n * k, 0.25f),
                     dy = iota(m * n, 0.75f);
  struct Case {
    LinearProduct product;
    const std::vector<float> &first, &second; // run()'s inputs
  };
  for (Case c : {Case{LinearProduct::Forward, x, w},
                 Case{LinearProduct::GradInput, dy, w},
                 Case{LinearProduct::GradWeight, dy, x}}) {
    GemmProblem p{c.product, m, k, n, Dtype::f32, Dtype::f32};
    ColumnMajorGemm g = columnMajorGemm(p);
    // The stored matrices hold exactly the row-major buffers.
    EXPECT_EQ(g.a.rows * g.a.cols, int64_t(c.second.size()));
    EXPECT_EQ(g.b.rows * g.b.cols, int64_t(c.first.size()));
    // C^T, stored column-major, is the row-major result.
    EXPECT_EQ(columnMajorProduct(g, c.second, c.first),
              rowMajorProduct(c.product, m, k, n, x, w, dy))
        << p.describe();
  }
}

TEST(GemmPlan, ColumnMajorMappingMatchesTheHeaderFormulas) {
  // m = 3, k = 5, n = 4; each row is LinearGemm.h's formula for it.
  struct Case {
    LinearProduct product;
    cublasOperation_t opA, opB;
    std::pair<int64_t, int64_t> a, b, c; ///< column-major rows, cols
  };
  const Case cases[] = {
      // Forward: y^T [n, m] = (w [k, n])^T x [k, m], "TN".
      {LinearProduct::Forward,
       CUBLAS_OP_T,
       CUBLAS_OP_N,
       {5, 4},
       {5, 3},
       {4, 3}},
      // GradInput: dx^T [k, m] = w [k, n] dy [n, m], "NN".
      {LinearProduct::GradInput,
       CUBLAS_OP_N,
       CUBLAS_OP_N,
       {5, 4},
       {4, 3},
       {5, 3}},
      // GradWeight: dw^T [k, n] = x [k, m] (dy [n, m])^T, "NT".
      {LinearProduct::GradWeight,
       CUBLAS_OP_N,
       CUBLAS_OP_T,
       {5, 3},
       {4, 3},
       {5, 4}},
  };
  for (const Case &want : cases) {
    GemmProblem p{want.product, 3, 5, 4, Dtype::f32, Dtype::f32};
    ColumnMajorGemm g = columnMajorGemm(p);
    SCOPED_TRACE(p.describe());
    EXPECT_EQ(g.opA, want.opA);
    EXPECT_EQ(g.opB, want.opB);
    EXPECT_EQ(std::make_pair(g.a.rows, g.a.cols), want.a);
    EXPECT_EQ(std::make_pair(g.b.rows, g.b.cols), want.b);
    EXPECT_EQ(std::make_pair(g.c.rows, g.c.cols), want.c);
  }
}

TEST(GemmPlan, RowwiseVersionGate) {
  EXPECT_EQ(cublasLtVersionName(130100), "13.1.0");
  EXPECT_EQ(cublasLtVersionName(120804), "12.8.4");
  EXPECT_EQ(rowwiseFloat8VersionError(120900), "");
  EXPECT_EQ(rowwiseFloat8VersionError(130100), "");
  std::string error = rowwiseFloat8VersionError(120804);
  EXPECT_NE(error.find("rowwise Float8 needs cuBLASLt 12.9.0 or later"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("loaded 12.8.4"), std::string::npos) << error;
  EXPECT_NE(error.find("\"tensorwise\""), std::string::npos) << error;
  EXPECT_NE(rowwiseFloat8VersionError(110000), "");
  EXPECT_EXIT(requireRowwiseFloat8(size_t(120300)), testing::ExitedWithCode(1),
              "rowwise Float8 needs cuBLASLt 12.9.0 or later.*loaded 12.3.0");
}

TEST(GemmPlan, FastAccumulationOnlyForTheOutputGemm) {
  EXPECT_TRUE(scaledMatmulFastAccumulation(ScaledMatmulForm::Linear));
  EXPECT_FALSE(scaledMatmulFastAccumulation(ScaledMatmulForm::GradInput));
  EXPECT_FALSE(scaledMatmulFastAccumulation(ScaledMatmulForm::GradWeight));
}

ScaledOperand operand(Dtype type, int64_t rows, int64_t cols, bool perElement) {
  return {nullptr, type, rows, cols, nullptr, perElement, false};
}

TEST(GemmPlan, ScaledMatmulProblemPerForm) {
  // linear: x [8, 32] . w [16, 32]^T -> [8, 16], tensorwise.
  GemmProblem p = scaledMatmulProblem(0, operand(Dtype::f8E4M3FN, 8, 32, false),
                                      operand(Dtype::f8E4M3FN, 16, 32, false),
                                      Dtype::bf16, 8, 16);
  EXPECT_EQ(p.product, LinearProduct::Forward);
  EXPECT_EQ(p.k, 32);
  EXPECT_EQ(p.scaling, GemmScaling::Tensorwise);
  EXPECT_TRUE(p.fastAccumulation);
  // grad_input: dy [8, 16] . w [16, 32] -> [8, 32], rowwise.
  p = scaledMatmulProblem(1, operand(Dtype::f8E5M2, 8, 16, true),
                          operand(Dtype::f8E4M3FN, 16, 32, true), Dtype::f32, 8,
                          32);
  EXPECT_EQ(p.k, 16);
  EXPECT_EQ(p.operands, Dtype::f8E5M2);
  ASSERT_TRUE(p.second.has_value());
  EXPECT_EQ(*p.second, Dtype::f8E4M3FN);
  EXPECT_EQ(p.scaling, GemmScaling::OuterVector);
  EXPECT_FALSE(p.fastAccumulation);
  // grad_weight: dy^T [16, 8] . x [8, 32] -> [16, 32].
  p = scaledMatmulProblem(2, operand(Dtype::f8E5M2, 8, 16, false),
                          operand(Dtype::f8E4M3FN, 8, 32, true), Dtype::f32, 16,
                          32);
  EXPECT_EQ(p.k, 8);
  EXPECT_EQ(p.scaling, GemmScaling::OuterVector);
  EXPECT_FALSE(p.fastAccumulation);
  EXPECT_FALSE(p.accumulate);
}

// kernel-fuse-gemm-accumulate's scaled GEMM adds into its result (beta =
// 1): a problem, a plan and a name of its own.
TEST(GemmPlan, ScaledMatmulProblemAccumulates) {
  ScaledOperand dy = operand(Dtype::f8E5M2, 8, 16, false),
                w = operand(Dtype::f8E4M3FN, 16, 32, false);
  GemmProblem overwrite = scaledMatmulProblem(1, dy, w, Dtype::bf16, 8, 32);
  GemmProblem accumulate =
      scaledMatmulProblem(1, dy, w, Dtype::bf16, 8, 32, /*accumulate=*/true);
  EXPECT_FALSE(overwrite.accumulate);
  EXPECT_TRUE(accumulate.accumulate);
  EXPECT_NE(overwrite.key(), accumulate.key());
  EXPECT_NE(accumulate.describe().find("(accumulate)"), std::string::npos)
      << accumulate.describe();
}

/// Reads attribute `what` of a cuBLASLt object with its getter `get`
/// (cublasLtMatmulDescGetAttribute, ...), all of which take (object, what,
/// buffer, size, written).
template <typename T, typename Getter, typename Object, typename Attribute>
T readAttribute(Getter get, Object object, Attribute what) {
  T value{};
  size_t written = 0;
  EXPECT_EQ(get(object, what, &value, sizeof(value), &written),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(written, sizeof(value));
  return value;
}
template <typename T>
T descriptorAttribute(cublasLtMatmulDesc_t op,
                      cublasLtMatmulDescAttributes_t what) {
  return readAttribute<T>(cublasLtMatmulDescGetAttribute, op, what);
}
template <typename T>
T layoutAttribute(cublasLtMatrixLayout_t layout,
                  cublasLtMatrixLayoutAttribute_t what) {
  return readAttribute<T>(cublasLtMatrixLayoutGetAttribute, layout, what);
}
template <typename T>
T preferenceAttribute(cublasLtMatmulPreference_t preference,
                      cublasLtMatmulPreferenceAttributes_t what) {
  return readAttribute<T>(cublasLtMatmulPreferenceGetAttribute, preference,
                          what);
}

void expectLayout(cublasLtMatrixLayout_t layout, cudaDataType_t type,
                  ColumnMajorMatrix m) {
  EXPECT_EQ(layoutAttribute<uint32_t>(layout, CUBLASLT_MATRIX_LAYOUT_TYPE),
            uint32_t(type));
  EXPECT_EQ(layoutAttribute<uint64_t>(layout, CUBLASLT_MATRIX_LAYOUT_ROWS),
            uint64_t(m.rows));
  EXPECT_EQ(layoutAttribute<uint64_t>(layout, CUBLASLT_MATRIX_LAYOUT_COLS),
            uint64_t(m.cols));
  EXPECT_EQ(layoutAttribute<int64_t>(layout, CUBLASLT_MATRIX_LAYOUT_LD),
            m.rows);
}

TEST(GemmPlan, RowwiseFloat8DescriptorsReadBack) {
  GemmProblem p{LinearProduct::Forward, 64, 128, 32, Dtype::f8E5M2, Dtype::f32};
  p.second = Dtype::f8E4M3FN;
  p.scaling = GemmScaling::OuterVector;
  p.fastAccumulation = true;
  float rowScales[64], columnScales[32];
  GemmDescriptors d = createGemmDescriptors(p, {rowScales, columnScales});
  EXPECT_EQ(descriptorAttribute<int32_t>(d.op, CUBLASLT_MATMUL_DESC_TRANSA),
            int32_t(CUBLAS_OP_T));
  EXPECT_EQ(descriptorAttribute<int32_t>(d.op, CUBLASLT_MATMUL_DESC_TRANSB),
            int32_t(CUBLAS_OP_N));
  EXPECT_EQ(descriptorAttribute<int8_t>(d.op, CUBLASLT_MATMUL_DESC_FAST_ACCUM),
            1);
  for (auto mode :
       {CUBLASLT_MATMUL_DESC_A_SCALE_MODE, CUBLASLT_MATMUL_DESC_B_SCALE_MODE})
    EXPECT_EQ(descriptorAttribute<int32_t>(d.op, mode),
              int32_t(CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F));
  // A (the second input) is scaled per result column, B per row.
  EXPECT_EQ(descriptorAttribute<const void *>(
                d.op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER),
            static_cast<const void *>(columnScales));
  EXPECT_EQ(descriptorAttribute<const void *>(
                d.op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER),
            static_cast<const void *>(rowScales));
  ColumnMajorGemm g = columnMajorGemm(p);
  expectLayout(d.a, CUDA_R_8F_E4M3, g.a);
  expectLayout(d.b, CUDA_R_8F_E5M2, g.b);
  expectLayout(d.c, CUDA_R_32F, g.c);
  destroyGemmDescriptors(d);
  EXPECT_EQ(d.op, nullptr);
}

TEST(GemmPlan, PlainDescriptorsLeaveFloat8ModesOff) {
  GemmProblem p = bf16Forward();
  p.product = LinearProduct::GradWeight;
  GemmDescriptors d = createGemmDescriptors(p, {});
  EXPECT_EQ(descriptorAttribute<int8_t>(d.op, CUBLASLT_MATMUL_DESC_FAST_ACCUM),
            0);
  EXPECT_EQ(descriptorAttribute<int32_t>(d.op, CUBLASLT_MATMUL_DESC_TRANSB),
            int32_t(CUBLAS_OP_T));
  EXPECT_EQ(
      descriptorAttribute<int32_t>(d.op, CUBLASLT_MATMUL_DESC_A_SCALE_MODE),
      int32_t(CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F));
  expectLayout(d.c, CUDA_R_16BF, columnMajorGemm(p).c);
  destroyGemmDescriptors(d);
}

TEST(GemmPlan, PreferenceCarriesWorkspaceAndAlignments) {
  GemmAlignments alignments;
  alignments.a = 16, alignments.b = 2, alignments.c = alignments.d = 128;
  cublasLtMatmulPreference_t preference =
      createGemmPreference(bf16Forward(), uint64_t(32) << 20, alignments);
  EXPECT_EQ(preferenceAttribute<uint64_t>(
                preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES),
            uint64_t(32) << 20);
  EXPECT_EQ(preferenceAttribute<uint32_t>(
                preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES),
            16u);
  EXPECT_EQ(preferenceAttribute<uint32_t>(
                preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES),
            2u);
  EXPECT_EQ(preferenceAttribute<uint32_t>(
                preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES),
            128u);
  EXPECT_EQ(preferenceAttribute<uint32_t>(
                preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES),
            128u);
  cublasLtMatmulPreferenceDestroy(preference);
}

} // namespace
