//===- AsyncTensorParallelTest.cpp - collective matmuls vs sync TP --------===//
//
// Run under `mpirun -np N` (the mesh is tp N; run directly, a ring of one).
// Every rank draws the same global tensors and checks the collective
// matmuls (runtime/lib/AsyncTensorParallel.h) against what sync tensor
// parallel computes from them: all_gather then the GEMM over all rows
// (bitwise where oneDNN's GEMM rows do not depend on the row blocking:
// every output row is the same dot products), and the GEMMs over all rows
// then the communicator's reduce_scatter (1e-6 relative: the ring sums the
// ranks' terms in another order than MPI).
//
//===----------------------------------------------------------------------===//

#include "AsyncTensorParallel.h"
#include "Communicator.h"
#include "Gemm.h"
#include "Kernels.h"
#include "LowPrecision.h"
#include "ScaledGemm.h"

#include "titan/Contract/CPUWorkspaces.h"

#include "gtest/gtest.h"
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace titanrt;
namespace k = titanrt::kernels;

namespace {

constexpr unsigned kTPMask = 1u << kTP;

std::vector<float> draw(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  std::vector<float> v(static_cast<size_t>(n));
  for (float &x : v)
    x = float(normal(rng));
  return v;
}

RingPlace place() {
  const int64_t ints[] = {1, 0, 0, kTPMask};
  RingCall call = decodeRingCall("test", ints, activeCommunicator() != nullptr);
  EXPECT_EQ(call.error, "");
  return ringPlace(call);
}

/// The rows of rank r's shard ([outer][rows][cols] of the [outer][n
/// rows][cols] whole).
std::vector<float> shardOf(const std::vector<float> &whole, int64_t outer,
                           int64_t rows, int64_t cols, int64_t n, int64_t r) {
  std::vector<float> s(size_t(outer * rows * cols));
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(s.data() + o * rows * cols,
                whole.data() + (o * n + r) * rows * cols,
                size_t(rows * cols) * sizeof(float));
  return s;
}

/// Whether oneDNN's f32 GEMM gives a row the same bits whatever other rows
/// the call holds. Its AVX-512 kernels do. Its AVX2 kernels compute a
/// call's last rows, and one-row calls, with other kernels a few ulps
/// apart (seen on an AVX2-only AMD EPYC: rows 62 and 63 of each 64-row
/// call differ from the same rows inside a 1024-row call).
bool rowBlockingIsBitwise() {
  unsigned isa = unsigned(dnnl_get_effective_cpu_isa());
  unsigned avx512 = unsigned(dnnl_cpu_isa_avx512_core);
  return (isa & avx512) == avx512;
}

/// The largest |a - b| / max(1, |b|).
double maxRelativeDifference(const float *a, const float *b, size_t n) {
  double worst = 0;
  for (size_t e = 0; e < n; ++e)
    worst = std::max(worst, std::fabs(double(a[e]) - b[e]) /
                                std::max(1.0, std::fabs(double(b[e]))));
  return worst;
}

/// GEMM rows computed over other row blocks than `expected`'s: its bits
/// where row blocking is bitwise, else within 1e-4 relative to
/// max(1, |expected|) (measured up to 2.4e-5 on AVX2: dot products of 256
/// terms summed in another order).
void expectSameRows(const std::vector<float> &actual,
                    const std::vector<float> &expected) {
  ASSERT_EQ(actual.size(), expected.size());
  if (rowBlockingIsBitwise())
    EXPECT_EQ(0, std::memcmp(actual.data(), expected.data(),
                             expected.size() * sizeof(float)));
  else
    EXPECT_LE(
        maxRelativeDifference(actual.data(), expected.data(), expected.size()),
        1e-4);
}

/// Whether k::linear over blocks of `block` rows gives the bits of the call
/// over all `m` rows; else the largest relative difference.
double rowBlockDifference(int64_t m, int64_t kk, int64_t n, int64_t block) {
  std::vector<float> x = draw(m * kk, 1), w = draw(n * kk, 2);
  std::vector<float> whole(size_t(m * n)), blocks(size_t(m * n));
  k::linear(x.data(), w.data(), whole.data(), m, kk, n);
  for (int64_t i = 0; i < m; i += block)
    k::linear(x.data() + i * kk, w.data(), blocks.data() + i * n,
              std::min(block, m - i), kk, n);
  return maxRelativeDifference(blocks.data(), whole.data(), whole.size());
}

// With AVX-512, a GEMM over a block of rows gives the bits of the GEMM
// over all rows at the debug model's shapes (oneDNN's sgemm; sequence
// shards of a multiple of 64 rows): what makes the gather side bitwise.
// At odd shapes oneDNN may block k differently for fewer rows: measured
// 3.1e-6 relative to max(1, |y|) at 300 x 70 x 33 in blocks of 75 (a few
// ulps of dot products of 70 terms). With AVX2 alone every shape differs
// in a few rows per call (measured up to 2.4e-5).
TEST(AsyncTensorParallel, RowBlocksAgreeWithTheWholeGemm) {
  for (auto [m, kk, n, block] :
       std::vector<std::array<int64_t, 4>>{{16384, 256, 128, 1024},
                                           {16384, 256, 384, 2048},
                                           {4096, 384, 256, 512},
                                           {4096, 256, 1024, 1024}}) {
    SCOPED_TRACE(std::to_string(m) + "x" + std::to_string(kk) + "x" +
                 std::to_string(n) + " in blocks of " + std::to_string(block));
    double difference = rowBlockDifference(m, kk, n, block);
    if (rowBlockingIsBitwise())
      EXPECT_EQ(difference, 0.0);
    else
      EXPECT_LE(difference, 1e-4);
  }
  double odd = rowBlockDifference(300, 70, 33, 75);
  std::printf("300x70x33 in blocks of 75 rows: max relative difference %.3g\n",
              odd);
  EXPECT_LE(odd, 1e-5);
}

void checkGather(bool gradInput, int64_t outer, int64_t rows, int64_t in,
                 std::vector<int64_t> outs) {
  RingPlace p = place();
  int64_t n = p.size;
  SCOPED_TRACE("tp " + std::to_string(n) + (gradInput ? " grad_input" : ""));
  std::vector<float> whole = draw(outer * n * rows * in, 7);
  std::vector<float> x = shardOf(whole, outer, rows, in, n, p.index);
  std::vector<std::vector<float>> weights, results, expected;
  std::vector<const float *> wp;
  std::vector<float *> rp;
  for (size_t i = 0; i < outs.size(); ++i) {
    weights.push_back(draw(outs[i] * in, 100 + i));
    results.emplace_back(size_t(outer * n * rows * outs[i]), NAN);
    expected.emplace_back(size_t(outer * n * rows * outs[i]));
    // Sync TP: the GEMM over the gathered rows.
    if (gradInput)
      k::linearGradInput(whole.data(), weights[i].data(), expected[i].data(),
                         outer * n * rows, outs[i], in);
    else
      k::linear(whole.data(), weights[i].data(), expected[i].data(),
                outer * n * rows, in, outs[i]);
  }
  for (size_t i = 0; i < outs.size(); ++i) {
    wp.push_back(weights[i].data());
    rp.push_back(results[i].data());
  }
  std::vector<float> gathered(whole.size(), NAN);
  std::vector<float> ws(size_t(k::allGatherLinearWorkspace(x.size())));
  k::allGatherLinear<float>(x.data(), wp.data(), gathered.data(), rp.data(),
                            outs.data(), int64_t(outs.size()), gradInput, outer,
                            rows, in, p, ws.data());
  EXPECT_EQ(0, std::memcmp(gathered.data(), whole.data(),
                           whole.size() * sizeof(float)));
  for (size_t i = 0; i < outs.size(); ++i) {
    SCOPED_TRACE("GEMM " + std::to_string(i));
    expectSameRows(results[i], expected[i]);
  }
}

TEST(AsyncTensorParallel, GatherSideComputesSyncTPsRows) {
  // The debug model's forward (wq, wk, wv of 8 x 2048 x 256 over tp), with
  // a smaller batch; a batch of 1; the row-parallel backward (grad_input).
  checkGather(false, 2, 256, 256, {128, 64, 64});
  checkGather(false, 1, 96, 40, {24});
  checkGather(true, 2, 128, 96, {64});
}

/// `v` as bf16 operands (rounded to nearest even).
std::vector<k::BFloat16> toBf16(const std::vector<float> &v) {
  std::vector<k::BFloat16> b(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    b[i].bits = floatToBf16(v[i]);
  return b;
}

// On bf16 matrix units the ring's row blocks run oneDNN's bf16 matmul, as
// the unfused 16-bit linears do: the whole GEMM's bits (its sums do not
// depend on the row blocking), the gathered shards as they were sent.
TEST(AsyncTensorParallel, Bf16GatherSideIsBitwiseTheWholeGemm) {
  if (!k::hasFastBf16Gemm())
    GTEST_SKIP() << "no bf16 matrix units (the 16-bit rings widen to f32)";
  for (bool gradInput : {false, true}) {
    RingPlace p = place();
    int64_t n = p.size, outer = 2, rows = 256, in = 256, out = 128;
    SCOPED_TRACE("tp " + std::to_string(n) + (gradInput ? " grad_input" : ""));
    std::vector<k::BFloat16> whole = toBf16(draw(outer * n * rows * in, 7));
    std::vector<k::BFloat16> weight = toBf16(draw(out * in, 8));
    std::vector<k::BFloat16> x(size_t(outer * rows * in));
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(x.data() + o * rows * in,
                  whole.data() + (o * n + p.index) * rows * in,
                  size_t(rows * in) * sizeof(k::BFloat16));
    std::vector<float> expected(size_t(outer * n * rows * out));
    // gradInput: the weight is [in, out] (titan.linear_grad_input's).
    k::gemm(false, !gradInput, outer * n * rows, out, in, 1.0f, whole.data(),
            in, weight.data(), gradInput ? out : in, 0.0f, expected.data(),
            out);
    std::vector<float> result(expected.size(), NAN);
    std::vector<k::BFloat16> gathered(whole.size());
    std::vector<k::BFloat16> ws(
        size_t(k::allGatherLinearWorkspace(int64_t(x.size()))));
    const k::BFloat16 *weights[] = {weight.data()};
    float *results[] = {result.data()};
    int64_t outs[] = {out};
    k::allGatherLinear<k::BFloat16, float>(x.data(), weights, gathered.data(),
                                           results, outs, 1, gradInput, outer,
                                           rows, in, p, ws.data());
    EXPECT_EQ(0, std::memcmp(gathered.data(), whole.data(),
                             whole.size() * sizeof(k::BFloat16)));
    EXPECT_EQ(0, std::memcmp(result.data(), expected.data(),
                             expected.size() * sizeof(float)));
  }
}

void checkScatter(bool gradInput, int64_t outer, int64_t rows, int64_t out,
                  std::vector<int64_t> ins) {
  RingPlace p = place();
  int64_t n = p.size;
  SCOPED_TRACE("tp " + std::to_string(n) + (gradInput ? " grad_input" : ""));
  // Each rank's terms differ (its own seed), as the partial sums do.
  std::vector<std::vector<float>> lhs, weights;
  std::vector<const float *> lp, wp;
  std::vector<float> partial(size_t(outer * n * rows * out));
  for (size_t i = 0; i < ins.size(); ++i) {
    lhs.push_back(draw(outer * n * rows * ins[i], 1000 * p.index + i));
    weights.push_back(draw(out * ins[i], 500 * p.index + i));
    // Sync TP: the GEMMs over all rows, summed (kernel-fuse-gemm-accumulate
    // adds the later ones into the first), then reduce_scatter.
    if (gradInput)
      k::linearGradInput(lhs[i].data(), weights[i].data(), partial.data(),
                         outer * n * rows, out, ins[i], i > 0);
    else
      k::linear(lhs[i].data(), weights[i].data(), partial.data(),
                outer * n * rows, ins[i], out, i > 0);
  }
  for (size_t i = 0; i < ins.size(); ++i) {
    lp.push_back(lhs[i].data());
    wp.push_back(weights[i].data());
  }
  std::vector<float> expected(size_t(outer * rows * out));
  if (activeCommunicator())
    communicator()
        .reduceScatter(partial.data(), expected.data(), Dtype::f32, outer,
                       n * rows, out, kTPMask)
        ->finish();
  else
    expected = partial;
  std::vector<float> result(expected.size(), NAN);
  std::vector<float> ws(size_t(
      k::linearReduceScatterWorkspace(int64_t(expected.size()), rows * out)));
  k::linearReduceScatter<float>(lp.data(), wp.data(), ins.data(),
                                int64_t(ins.size()), gradInput, result.data(),
                                outer, rows, out, p, ws.data());
  double worst = 0;
  for (size_t e = 0; e < expected.size(); ++e) {
    double scale = std::max(1.0, std::fabs(double(expected[e])));
    worst = std::max(worst, std::fabs(double(result[e]) - expected[e]) / scale);
  }
  // Rounding of the sums of n terms in two orders: a few ulps of the
  // largest term (|terms| ~ sqrt(k) ~ 20 here, f32 ulp ~ 2e-6 there),
  // relative to max(1, |sum|).
  EXPECT_LE(worst, 1e-6 * n);
  if (p.index == 0)
    std::printf("reduce-scatter side: max |async - sync| / max(1, |sync|) = "
                "%.3g on tp %lld\n",
                worst, (long long)n);
}

TEST(AsyncTensorParallel, ScatterSideIsSyncTPWithinRounding) {
  checkScatter(false, 2, 128, 256, {128});
  checkScatter(true, 2, 64, 96, {48, 48});
  checkScatter(false, 1, 40, 24, {16});
}

// bf16 (the f32 kernel on widened copies, storage = 1): each GEMM's
// partial sums and each ring sum rounded to bf16, as sync TP's bf16 GEMM
// results and the communicator's bf16 reduce_scatter (sums in float,
// rounded to nearest even) are: tp 2 bitwise (one sum, commutative) where
// the row blocks' GEMMs are; more ranks differ in the order of the rounded
// sums.
TEST(AsyncTensorParallel, ScatterSideRoundsAsBf16SyncTP) {
  RingPlace p = place();
  int64_t n = p.size, outer = 2, rows = 32, out = 64, in = 48;
  auto bf16 = [](std::vector<float> v) {
    for (float &x : v)
      x = bf16ToFloat(floatToBf16(x));
    return v;
  };
  std::vector<std::vector<float>> lhs, weights;
  std::vector<float> partial(size_t(outer * n * rows * out));
  for (int i = 0; i < 2; ++i) {
    lhs.push_back(bf16(draw(outer * n * rows * in, 70 * p.index + i)));
    weights.push_back(bf16(draw(out * in, 90 * p.index + i)));
    // The unfused bf16 GEMMs and their add (CPU: widened, so not folded
    // into the GEMM), each result rounded to bf16.
    std::vector<float> y(partial.size());
    k::linear(lhs[i].data(), weights[i].data(), y.data(), outer * n * rows, in,
              out);
    y = bf16(y);
    for (size_t e = 0; e < y.size(); ++e)
      partial[e] = i == 0 ? y[e] : partial[e] + y[e];
    partial = bf16(partial);
  }
  std::vector<uint16_t> bits(partial.size()), scattered(partial.size() / n);
  for (size_t e = 0; e < partial.size(); ++e)
    bits[e] = floatToBf16(partial[e]);
  if (activeCommunicator())
    communicator()
        .reduceScatter(bits.data(), scattered.data(), Dtype::bf16, outer,
                       n * rows, out, kTPMask)
        ->finish();
  else
    scattered = bits;
  const float *lp[2] = {lhs[0].data(), lhs[1].data()};
  const float *wp[2] = {weights[0].data(), weights[1].data()};
  int64_t ins[2] = {in, in};
  std::vector<float> result(scattered.size(), NAN);
  std::vector<float> ws(size_t(
      k::linearReduceScatterWorkspace(int64_t(result.size()), rows * out)));
  k::linearReduceScatter<float>(lp, wp, ins, 2, false, result.data(), outer,
                                rows, out, p, ws.data(), /*storage=*/1);
  // Relative to the tensor's largest sum: the sums' orders differ, and
  // each rounding is a bf16 ulp (2^-8 relative) of a partial sum.
  double worst = 0, largest = 0;
  for (size_t e = 0; e < result.size(); ++e) {
    float expected = bf16ToFloat(scattered[e]);
    worst = std::max(worst, std::fabs(double(result[e]) - expected));
    largest = std::max(largest, std::fabs(double(expected)));
  }
  worst /= std::max(largest, 1e-30);
  if (n <= 2 && rowBlockingIsBitwise())
    EXPECT_EQ(worst, 0.0);
  else
    EXPECT_LE(worst, double(n) / 256);
  if (p.index == 0)
    std::printf("bf16 reduce-scatter side on tp %lld: max difference %.3g "
                "of the largest sum\n",
                (long long)n, worst);
}

//===----------------------------------------------------------------------===//
// Float8's collective matmuls against titan.scaled_matmul's computation
// (ScaledGemm.h, the scaled_matmul entry's) over the whole tensor.
//===----------------------------------------------------------------------===//

/// Normal values cast to float8 codes (saturating), scaled by `scale`.
std::vector<uint8_t> drawFloat8(int64_t n, uint64_t seed, Dtype format,
                                float scale) {
  std::vector<float> v = draw(n, seed);
  std::vector<uint8_t> codes(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    codes[i] = floatToFp8(v[i] * scale, format, /*saturate=*/true);
  return codes;
}

/// The unfused titan.scaled_matmul (linear, or grad_input with the weight
/// K-major when `transposed`) of `rows` lhs rows, into f32.
std::vector<float> scaledGemm(const uint8_t *lhs, Dtype lhsFormat,
                              const std::vector<float> &ls, const uint8_t *w,
                              Dtype wFormat, const std::vector<float> &ws,
                              bool gradInput, bool transposed, int64_t rows,
                              int64_t in, int64_t out) {
  std::vector<float> a(size_t(rows * in)), b(size_t(in * out)),
      product(size_t(rows * out)), result(size_t(rows * out));
  k::decodeFloat8(lhs, rows, in, false, lhsFormat, a.data());
  int64_t wr = gradInput ? in : out, wc = gradInput ? out : in;
  k::decodeFloat8(w, wr, wc, transposed, wFormat, b.data());
  if (gradInput)
    k::linearGradInput(a.data(), b.data(), product.data(), rows, out, in);
  else
    k::linear(a.data(), b.data(), product.data(), rows, in, out);
  k::applyInverseScales(product.data(), ls.data(), ls.size() > 1, ws.data(),
                        ws.size() > 1, rows, out, false, result.data());
  return result;
}

void checkScaledGather(bool gradInput, bool transposed, int64_t outer,
                       int64_t rows, int64_t in, std::vector<int64_t> outs) {
  RingPlace p = place();
  int64_t n = p.size;
  SCOPED_TRACE("tp " + std::to_string(n) + (gradInput ? " grad_input" : ""));
  Dtype lhsFormat = gradInput ? Dtype::f8E5M2 : Dtype::f8E4M3FN;
  std::vector<uint8_t> whole =
      drawFloat8(outer * n * rows * in, 7, lhsFormat, 40.0f);
  std::vector<uint8_t> x(size_t(outer * rows * in));
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(x.data() + o * rows * in,
                whole.data() + (o * n + p.index) * rows * in,
                size_t(rows * in));
  float inputScale = 12.5f;
  std::vector<std::vector<uint8_t>> weights;
  std::vector<std::vector<float>> scales, results, expected;
  std::vector<const uint8_t *> wp;
  std::vector<const float *> sp;
  std::vector<float *> rp;
  std::vector<char> perColumn;
  for (size_t i = 0; i < outs.size(); ++i) {
    weights.push_back(
        drawFloat8(outs[i] * in, 100 + i, Dtype::f8E4M3FN, 100.0f));
    // Odd GEMMs: one scale per output column.
    scales.push_back(i % 2 ? draw(outs[i], 300 + i) : std::vector<float>{3});
    for (float &sc : scales.back())
      sc = 1.0f + std::fabs(sc);
    results.emplace_back(size_t(outer * n * rows * outs[i]), NAN);
    expected.push_back(scaledGemm(whole.data(), lhsFormat, {inputScale},
                                  weights[i].data(), Dtype::f8E4M3FN, scales[i],
                                  gradInput, transposed, outer * n * rows, in,
                                  outs[i]));
    perColumn.push_back(scales[i].size() > 1);
  }
  for (size_t i = 0; i < outs.size(); ++i) {
    wp.push_back(weights[i].data());
    sp.push_back(scales[i].data());
    rp.push_back(results[i].data());
  }
  k::ScaledRing ring;
  ring.gradInput = gradInput;
  ring.rhsTransposed = transposed;
  ring.lhsFormat = lhsFormat;
  ring.weights = wp.data();
  ring.weightScales = sp.data();
  ring.scalePerColumn = reinterpret_cast<const bool *>(perColumn.data());
  ring.count = int64_t(outs.size());
  int64_t weightElements = 0, widest = 0;
  for (int64_t o : outs) {
    weightElements += o * in;
    widest = std::max(widest, o);
  }
  std::vector<char> ws(
      size_t(titan::cpu::scaledRingWorkspace(
                 2, int64_t(x.size()), weightElements, rows * in, rows * widest)
                 .bytes));
  std::vector<uint8_t> gathered(whole.size(), 0xff);
  k::allGatherScaledMatmul(x.data(), &inputScale, ring, gathered.data(),
                           rp.data(), outs.data(), outer, rows, in, p,
                           ws.data());
  EXPECT_EQ(gathered, whole);
  for (size_t i = 0; i < outs.size(); ++i) {
    SCOPED_TRACE("GEMM " + std::to_string(i));
    expectSameRows(results[i], expected[i]);
  }
}

// The forward's q, k, v (e4m3 activations, the second GEMM with one scale
// per column) and the row-parallel backward's grad-input GEMM (e5m2
// gradients, K-major weights): every row the unfused scaled GEMM's bits
// where row blocking is bitwise.
TEST(AsyncTensorParallel, Float8GatherSideComputesTheScaledGemmsRows) {
  checkScaledGather(false, false, 2, 64, 64, {48, 32, 32});
  checkScaledGather(true, true, 2, 32, 48, {64});
  checkScaledGather(false, false, 1, 40, 16, {24});
}

void checkScaledScatter(bool gradInput, bool transposed, int storage,
                        bool rowwise = false) {
  RingPlace p = place();
  int64_t n = p.size, outer = 2, rows = 32, out = 48;
  std::vector<int64_t> ins = {32, 16};
  SCOPED_TRACE("tp " + std::to_string(n) + (gradInput ? " grad_input" : "") +
               " storage " + std::to_string(storage) +
               (rowwise ? " rowwise" : ""));
  Dtype lhsFormat = gradInput ? Dtype::f8E5M2 : Dtype::f8E4M3FN;
  auto store = [&](std::vector<float> v) {
    if (storage == 1)
      for (float &x : v)
        x = bf16ToFloat(floatToBf16(x));
    return v;
  };
  // Each rank's terms differ (its own seeds), as the partial sums do.
  std::vector<std::vector<uint8_t>> lhs, weights;
  std::vector<std::vector<float>> wScales;
  // One lhs scale, or (rowwise) one per row: powers of two, as the
  // rowwise recipes round them.
  std::vector<std::vector<float>> lScales;
  std::vector<float> partial(size_t(outer * n * rows * out));
  for (size_t i = 0; i < ins.size(); ++i) {
    lhs.push_back(drawFloat8(outer * n * rows * ins[i], 1000 * p.index + i,
                             lhsFormat, 30.0f));
    weights.push_back(
        drawFloat8(out * ins[i], 500 * p.index + i, Dtype::f8E4M3FN, 50.0f));
    if (rowwise) {
      std::vector<float> perRow = draw(outer * n * rows, 700 * p.index + i);
      for (float &x : perRow)
        x = std::exp2(std::floor(2 * x) + 3);
      lScales.push_back(perRow);
    } else {
      lScales.push_back({float(8 + i)});
    }
    wScales.push_back(i ? std::vector<float>(size_t(out), 2.5f)
                        : std::vector<float>{4.0f});
    // Sync TP: the scaled GEMMs over all rows, summed, rounded to the
    // storage type as its buffers are, then reduce_scatter.
    std::vector<float> y =
        store(scaledGemm(lhs[i].data(), lhsFormat, lScales[i],
                         weights[i].data(), Dtype::f8E4M3FN, wScales[i],
                         gradInput, transposed, outer * n * rows, ins[i], out));
    for (size_t e = 0; e < y.size(); ++e)
      partial[e] = i == 0 ? y[e] : partial[e] + y[e];
    partial = store(partial);
  }
  std::vector<float> expected(partial.size() / size_t(n));
  if (activeCommunicator()) {
    if (storage == 1) {
      std::vector<uint16_t> bits(partial.size()), scattered(expected.size());
      for (size_t e = 0; e < partial.size(); ++e)
        bits[e] = floatToBf16(partial[e]);
      communicator()
          .reduceScatter(bits.data(), scattered.data(), Dtype::bf16, outer,
                         n * rows, out, kTPMask)
          ->finish();
      for (size_t e = 0; e < expected.size(); ++e)
        expected[e] = bf16ToFloat(scattered[e]);
    } else {
      communicator()
          .reduceScatter(partial.data(), expected.data(), Dtype::f32, outer,
                         n * rows, out, kTPMask)
          ->finish();
    }
  } else {
    expected = partial;
  }
  std::vector<const uint8_t *> lp, wp;
  std::vector<const float *> lsp, wsp;
  char perColumn[2] = {0, 1}, lhsPerRow[2] = {rowwise, rowwise};
  int64_t weightElements = 0;
  for (size_t i = 0; i < ins.size(); ++i) {
    lp.push_back(lhs[i].data());
    wp.push_back(weights[i].data());
    lsp.push_back(lScales[i].data());
    wsp.push_back(wScales[i].data());
    weightElements += ins[i] * out;
  }
  k::ScaledRing ring;
  ring.gradInput = gradInput;
  ring.rhsTransposed = transposed;
  ring.lhsFormat = lhsFormat;
  ring.weights = wp.data();
  ring.weightScales = wsp.data();
  ring.scalePerColumn = reinterpret_cast<const bool *>(perColumn);
  ring.count = 2;
  std::vector<char> ws(size_t(
      titan::cpu::scaledRingWorkspace(3, int64_t(expected.size()) * 4,
                                      weightElements, rows * 32, rows * out)
          .bytes));
  std::vector<float> result(expected.size(), NAN);
  k::scaledMatmulReduceScatter(
      lp.data(), lsp.data(), reinterpret_cast<const bool *>(lhsPerRow),
      ins.data(), ring, result.data(), outer, rows, out, p, ws.data(), storage);
  double worst = 0, largest = 0;
  for (size_t e = 0; e < result.size(); ++e) {
    worst = std::max(worst, std::fabs(double(result[e]) - expected[e]));
    largest = std::max(largest, std::fabs(double(expected[e])));
  }
  worst /= std::max(largest, 1e-30);
  // tp 2: MPI's one addition (bitwise where the row blocks' GEMMs are);
  // more ranks sum in ring order: f32 ulps, or a bf16 ulp (2^-8) of a
  // partial sum per rounding.
  if (n <= 2 && rowBlockingIsBitwise())
    EXPECT_EQ(worst, 0.0);
  else
    EXPECT_LE(worst, storage ? double(n) / 256 : 1e-6 * double(n));
  if (p.index == 0)
    std::printf("float8 reduce-scatter side on tp %lld (storage %d): max "
                "difference %.3g of the largest sum\n",
                (long long)n, storage, worst);
}

// The row-parallel forward (wo: e4m3) and the column-parallel backward's
// summed grad-input GEMMs (e5m2 gradients, K-major weights), in f32 and
// bf16 storage; rowwise, each row block with its rows' scales.
TEST(AsyncTensorParallel, Float8ScatterSideIsTheScaledGemmsWithinRounding) {
  checkScaledScatter(false, false, 0);
  checkScaledScatter(true, true, 0);
  checkScaledScatter(true, true, 1);
  checkScaledScatter(false, false, 0, /*rowwise=*/true);
  checkScaledScatter(true, true, 1, /*rowwise=*/true);
}

} // namespace

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const char *size = std::getenv("OMPI_COMM_WORLD_SIZE");
  int ranks = size ? std::atoi(size) : 1;
  if (ranks > 1)
    initCommunicator({1, 1, 1, 1, ranks});
  bool quiet = ranks > 1 && communicator().rank() != 0;
  if (quiet)
    delete ::testing::UnitTest::GetInstance()->listeners().Release(
        ::testing::UnitTest::GetInstance()
            ->listeners()
            .default_result_printer());
  int rc = RUN_ALL_TESTS();
  if (ranks > 1)
    shutdownCommunicator();
  return rc;
}
