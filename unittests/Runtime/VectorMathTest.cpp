//===- VectorMathTest.cpp - the CPU kernels' vectorized exp ---------------===//

#include "VectorMath.h"

#include "gtest/gtest.h"

#include <cmath>
#include <limits>
#include <vector>

using titanrt::vmath::fastExp;

namespace {

/// Through a cloned, vectorized loop, as the kernels call it.
TITAN_VECTOR_CLONES void expLoop(const float *x, float *y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i)
    y[i] = fastExp(x[i]);
}

TEST(VectorMath, ExpWithinTwoUlpOfTheExactValue) {
  std::vector<float> x, y;
  for (float v = -104.0f; v <= 88.72f; v += 0.000731f)
    x.push_back(v);
  y.resize(x.size());
  expLoop(x.data(), y.data(), int64_t(x.size()));
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    double exact = std::exp(double(x[i]));
    float rounded = float(exact);
    if (!(rounded >= std::numeric_limits<float>::min()))
      continue; // subnormal results: absolute error below 2^-149 * 2
    double ulp = std::nextafter(rounded, INFINITY) - rounded;
    worst = std::max(worst, std::fabs(double(y[i]) - exact) / ulp);
  }
  EXPECT_LE(worst, 2.0);
}

TEST(VectorMath, ExpSpecialValues) {
  std::vector<float> x = {0.0f,    -0.0f, 1.0f,   -INFINITY, INFINITY, NAN,
                          -105.0f, 89.0f, -87.0f, 88.7f,     -103.0f,  1e-8f};
  std::vector<float> y(x.size());
  expLoop(x.data(), y.data(), int64_t(x.size()));
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], 1.0f);
  EXPECT_NEAR(y[2], 2.718281828f, 3e-7f);
  EXPECT_EQ(y[3], 0.0f);
  EXPECT_EQ(y[4], INFINITY);
  EXPECT_TRUE(std::isnan(y[5]));
  EXPECT_EQ(y[6], 0.0f);
  EXPECT_EQ(y[7], INFINITY);
  EXPECT_NEAR(y[8] / std::exp(-87.0f), 1.0f, 1e-6f);
  EXPECT_NEAR(y[9] / std::exp(88.7f), 1.0f, 1e-6f);
  // A subnormal result, within two of its ulps (2^-149).
  EXPECT_NEAR(double(y[10]), std::exp(-103.0), 2 * 1.4013e-45);
  EXPECT_EQ(y[11], 1.0f);
}

} // namespace
