//===- LowPrecisionKernelTest.cpp - bf16 kernels round once ---------------===//
//
// Every kernel's bf16 entry (what the CPU target calls for bf16 buffers)
// against the kernel's f64 entry on the same, exactly widened, inputs: each
// bf16 output must be that float64 result rounded once to nearest even,
// but for the rare element whose float64 value lies within the f32
// kernel's own rounding error of a bf16 rounding boundary (at most one
// bf16 ulp apart, and at most 1% of the elements). The linears' bf16
// entries run the bf16 matrix units where the CPU has them (AMX), the f32
// GEMM on widened copies elsewhere.
//
//===----------------------------------------------------------------------===//

#include "LowPrecision.h"
#include "titanrt/KernelABI.h"

#include "titan/Contract/CPUWorkspaces.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace titanrt;

namespace {

using Entry = void (*)(void **, const int64_t *, const int64_t *,
                       const double *, void *, const int64_t *);

/// How a buffer is held: bf16 in the kernel under test and f64 in the
/// reference ("lp"), f32 in both, i32 in both, or in the accumulator type
/// (f32 under test, f64 in the reference: attention's log-sum-exp).
enum class Kind { LowPrecision, F32, I32, Accumulator };

struct Buffer {
  std::vector<int64_t> shape;
  Kind kind = Kind::LowPrecision;
  /// Values (integers for I32); inputs only.
  std::vector<double> values;
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
};

std::mt19937 rng(7);

/// `x` rounded to bf16 (8 significant bits), to nearest even, written
/// independently of the runtime's conversion: nearbyint rounds half to even.
double roundToBf16(double x) {
  if (x == 0 || !std::isfinite(x))
    return x;
  int e;
  double m = std::frexp(x, &e); // x = m 2^e, 0.5 <= |m| < 1
  return std::ldexp(std::nearbyint(std::ldexp(m, 8)), e - 8);
}

/// Random values exactly representable in bf16.
std::vector<double> randomBf16(int64_t n, double scale = 1.0) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<double> v(n);
  for (double &x : v)
    x = bf16ToFloat(floatToBf16(float(scale) * u(rng)));
  return v;
}

struct KernelCase {
  std::string name;
  Entry bf16, f64;
  std::vector<Buffer> inputs, outputs;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  /// The f32 kernel's own workspace in elements (f32 for the bf16 entry,
  /// f64 for the reference).
  int64_t workspaceElements = 0;
};

void check(const KernelCase &k) {
  SCOPED_TRACE(k.name);
  std::vector<Buffer> all(k.inputs);
  all.insert(all.end(), k.outputs.begin(), k.outputs.end());
  std::vector<int64_t> shapes,
      types16 = {int64_t(k.inputs.size()), int64_t(k.outputs.size())},
      types64 = types16;
  for (const Buffer &b : all) {
    shapes.push_back(int64_t(b.shape.size()));
    shapes.insert(shapes.end(), b.shape.begin(), b.shape.end());
    int64_t code = b.kind == Kind::I32 ? TITAN_RT_I32
                   : b.kind == Kind::F32 || b.kind == Kind::Accumulator
                       ? TITAN_RT_F32
                       : TITAN_RT_BF16;
    types16.push_back(code);
    types64.push_back(code == TITAN_RT_BF16 || b.kind == Kind::Accumulator
                          ? int64_t(TITAN_RT_F64)
                          : code);
  }
  // Storage for both calls.
  std::vector<std::vector<uint16_t>> h(all.size());
  std::vector<std::vector<double>> d(all.size());
  std::vector<std::vector<float>> f(all.size());
  std::vector<std::vector<int32_t>> in(all.size());
  std::vector<void *> ptr16(all.size()), ptr64(all.size());
  int64_t staged = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    const Buffer &b = all[i];
    int64_t n = b.numel();
    bool input = i < k.inputs.size();
    switch (b.kind) {
    case Kind::LowPrecision:
      h[i].assign(n, 0x7fc0); // NaN: outputs must be written
      d[i].assign(n, std::nan(""));
      if (input)
        for (int64_t e = 0; e < n; ++e) {
          h[i][e] = floatToBf16(float(b.values[e]));
          d[i][e] = b.values[e];
        }
      ptr16[i] = h[i].data();
      ptr64[i] = d[i].data();
      staged += (n * 4 + 63) / 64 * 64;
      break;
    case Kind::F32:
      f[i].assign(input ? b.values.begin() : b.values.end(), b.values.end());
      f[i].resize(n);
      ptr16[i] = ptr64[i] = f[i].data();
      break;
    case Kind::Accumulator:
      f[i].assign(n, std::nanf(""));
      d[i].assign(n, std::nan(""));
      for (int64_t e = 0; e < n && input; ++e) {
        f[i][e] = float(b.values[e]);
        d[i][e] = double(f[i][e]);
      }
      ptr16[i] = f[i].data();
      ptr64[i] = d[i].data();
      break;
    case Kind::I32:
      in[i].resize(n);
      for (int64_t e = 0; e < n && input; ++e)
        in[i][e] = int32_t(b.values[e]);
      ptr16[i] = ptr64[i] = in[i].data();
      break;
    }
  }
  std::vector<char> ws16(staged + k.workspaceElements * 4 + 64);
  std::vector<double> ws64(k.workspaceElements + 1);
  k.bf16(ptr16.data(), shapes.data(), k.ints.data(), k.floats.data(),
         ws16.data(), types16.data());
  k.f64(ptr64.data(), shapes.data(), k.ints.data(), k.floats.data(),
        ws64.data(), types64.data());

  for (size_t i = k.inputs.size(); i < all.size(); ++i) {
    if (all[i].kind == Kind::Accumulator) {
      // Computed in f32 against f64: close, not rounded once.
      for (int64_t e = 0; e < all[i].numel(); ++e)
        EXPECT_NEAR(f[i][e], d[i][e], 1e-5 * std::fabs(d[i][e]) + 1e-6)
            << "output " << i << " element " << e;
      continue;
    }
    if (all[i].kind != Kind::LowPrecision)
      continue;
    int64_t n = all[i].numel(), off = 0;
    for (int64_t e = 0; e < n; ++e) {
      float once = float(roundToBf16(d[i][e]));
      float got = bf16ToFloat(h[i][e]);
      if (got == once)
        continue;
      ++off;
      // One bf16 ulp at most (2^-7 relative).
      EXPECT_LE(std::fabs(got - once), std::ldexp(std::fabs(once), -7) + 1e-30)
          << "output " << i << " element " << e << ": " << got << " vs " << once
          << " (f64 " << d[i][e] << ")";
    }
    EXPECT_LE(off, n / 100) << "output " << i << ": " << off << " of " << n
                            << " elements are not the f64 result rounded "
                               "once";
  }
}

Buffer lp(std::vector<int64_t> shape, double scale = 1.0) {
  Buffer b{shape, Kind::LowPrecision, {}};
  b.values = randomBf16(b.numel(), scale);
  return b;
}
/// Values in [0.5, 1] exactly representable in bf16: sums without
/// cancellation, whose f32 error stays relative to the result.
Buffer positive(std::vector<int64_t> shape) {
  Buffer b{shape, Kind::LowPrecision, {}};
  std::uniform_real_distribution<float> u(0.5f, 1.0f);
  for (int64_t e = 0; e < b.numel(); ++e)
    b.values.push_back(bf16ToFloat(floatToBf16(u(rng))));
  return b;
}
Buffer out(std::vector<int64_t> shape) {
  return {shape, Kind::LowPrecision, {}};
}
Buffer accumulator(std::vector<int64_t> shape, bool input = false) {
  Buffer b{shape, Kind::Accumulator, {}};
  if (input) {
    std::uniform_real_distribution<double> u(0.5, 2.0);
    for (int64_t e = 0; e < b.numel(); ++e)
      b.values.push_back(u(rng));
  }
  return b;
}
Buffer tokens(std::vector<int64_t> shape, int vocab) {
  Buffer b{shape, Kind::I32, {}};
  std::uniform_int_distribution<int> u(0, vocab - 1);
  for (int64_t e = 0; e < b.numel(); ++e)
    b.values.push_back(u(rng));
  return b;
}

#define ENTRIES(name) titan_rt_##name##_bf16, titan_rt_##name##_f64

// The pointwise ops and RMSNorm (forward and backward) are generated
// kernels (docs/codegen.md), rounded once per op by construction.
TEST(LowPrecisionKernels, FillRoundsOnce) {
  check({"fill", ENTRIES(fill), {}, {out({8})}, {}, {0.1}});
}

TEST(LowPrecisionKernels, GemmsAndAttentionRoundOnce) {
  check({"linear",
         ENTRIES(linear),
         {lp({2, 5, 16}), lp({12, 16})},
         {out({2, 5, 12})}});
  check({"linear_grad_input",
         ENTRIES(linear_grad_input),
         {lp({2, 5, 12}), lp({12, 16})},
         {out({2, 5, 16})}});
  check({"linear_grad_weight",
         ENTRIES(linear_grad_weight),
         {lp({2, 5, 12}), lp({2, 5, 16})},
         {out({12, 16})}});
  // Past one block of the GEMMs' fixed blocking (at least 64 x 64 for f32,
  // 128 x 128 on bf16 matrix units): edge blocks in both dimensions, and
  // sums over 300 positions (of positive terms: no cancellation).
  check({"linear (blocks)",
         ENTRIES(linear),
         {positive({3, 100, 72}), positive({300, 72})},
         {out({3, 100, 300})}});
  check({"linear_grad_input (blocks)",
         ENTRIES(linear_grad_input),
         {positive({3, 100, 300}), positive({300, 72})},
         {out({3, 100, 72})}});
  check({"linear_grad_weight (blocks)",
         ENTRIES(linear_grad_weight),
         {positive({3, 100, 300}), positive({3, 100, 72})},
         {out({300, 72})}});
  // A weight gradient kept in f32 (titan-widen-gemm-results): f32 against
  // the f64 kernel, unrounded.
  check({"linear_grad_weight (f32 result)",
         ENTRIES(linear_grad_weight),
         {positive({3, 100, 300}), positive({3, 100, 72})},
         {accumulator({300, 72})}});
  int64_t s = 6, d = 8;
  check({"attention",
         ENTRIES(attention),
         {lp({2, s, 4, d}), lp({2, s, 2, d}), lp({2, s, 2, d})},
         {out({2, s, 4, d}), accumulator({2, 4, s})},
         {},
         {0.35},
         titan::cpu::attentionWorkspaceBytes(2, 4, s, 4) / 4});
  // (q, k, v, out, lse, dout): out and lse are any values of their types
  // here, the kernel's contract being a function of its inputs.
  check({"attention_grad",
         ENTRIES(attention_grad),
         {lp({2, s, 4, d}), lp({2, s, 2, d}), lp({2, s, 2, d}),
          lp({2, s, 4, d}), accumulator({2, 4, s}, true), lp({2, s, 4, d})},
         {out({2, s, 4, d}), out({2, s, 2, d}), out({2, s, 2, d})},
         {},
         {0.35},
         titan::cpu::attentionGradWorkspaceBytes(2, 2, s, 4) / 4});
}

TEST(LowPrecisionKernels, EmbeddingRoundsOnce) {
  check({"embedding",
         ENTRIES(embedding),
         {lp({20, 8}), tokens({3, 5}, 20)},
         {out({3, 5, 8})},
         {0}});
  // Repeated tokens: the gradient sums rows in f32, rounds once.
  check({"embedding_grad",
         ENTRIES(embedding_grad),
         {lp({3, 5, 8}), tokens({3, 5}, 4)},
         {out({4, 8})},
         {0}});
}

TEST(LowPrecisionKernels, CastRoundsToNearestEven) {
  std::vector<double> values = {1.0 + 1.0 / 256,        // a tie: to even
                                1.0 + 3.0 / 256,        // a tie: to even
                                1.0 + 1.0 / 256 + 1e-9, // above the tie
                                -3.14159265358979,
                                1e30,   // large, negative
                                1e-40}; // subnormal in f32
  std::vector<double> expect = {1.0, 1.0 + 4.0 / 256, 1.0 + 2.0 / 256};
  std::vector<uint16_t> bf(values.size());
  std::vector<int64_t> shapes = {1, int64_t(values.size()), 1,
                                 int64_t(values.size())};
  std::vector<int64_t> types = {1, 1, TITAN_RT_F64, TITAN_RT_BF16};
  void *buffers[] = {values.data(), bf.data()};
  titan_rt_cast_f64(buffers, shapes.data(), nullptr, nullptr, nullptr,
                    types.data());
  for (size_t i = 0; i < expect.size(); ++i)
    EXPECT_EQ(bf16ToFloat(bf[i]), float(expect[i])) << i;
  EXPECT_NEAR(bf16ToFloat(bf[3]), -3.140625, 0);
  // And back to f32: exact.
  std::vector<float> back(values.size());
  std::vector<int64_t> types2 = {1, 1, TITAN_RT_BF16, TITAN_RT_F32};
  void *buffers2[] = {bf.data(), back.data()};
  titan_rt_cast_bf16(buffers2, shapes.data(), nullptr, nullptr, nullptr,
                     types2.data());
  for (size_t i = 0; i < values.size(); ++i)
    EXPECT_EQ(back[i], bf16ToFloat(bf[i]));
}

} // namespace
