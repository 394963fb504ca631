//===- GemmPeak.cpp - the machine's GEMM rate at a step's shapes ----------===//
//
// Row-major GEMMs C[m,n] = op(A) op(B), each shape timed (min over --reps
// after two warm-ups) three ways on oneDNN: dnnl_sgemm (f32, what titan's
// CPU kernels call), the matmul primitive in f32 (brgemm, created once per
// shape) and the matmul primitive with bf16 operands and f32 results.
// Prints one JSON object per shape. bench/cpu_train_step.py passes the
// training step's linear shapes and takes the best f32 rate as the roofline.
//
//   TitanCpuGemmPeak [--reps N] m,n,k,transA,transB ...
//
//===----------------------------------------------------------------------===//

#include <dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Shape {
  long m, n, k;
  bool transA, transB;
};

template <typename F> double minSeconds(int reps, F run) {
  run();
  run();
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    auto start = std::chrono::steady_clock::now();
    run();
    best = std::min(best, std::chrono::duration<double>(
                              std::chrono::steady_clock::now() - start)
                              .count());
  }
  return best;
}

/// Seconds of one matmul primitive run with operands of type `type`, or
/// NaN where oneDNN has no kernel for it on this CPU (bf16 without
/// AVX-512).
double matmulSeconds(const Shape &s, dnnl::memory::data_type type, int reps,
                     const dnnl::engine &engine, dnnl::stream &stream,
                     std::string &impl) {
  using tag = dnnl::memory::format_tag;
  dnnl::memory::desc a({s.m, s.k}, type, s.transA ? tag::ba : tag::ab);
  dnnl::memory::desc b({s.k, s.n}, type, s.transB ? tag::ba : tag::ab);
  dnnl::memory::desc c({s.m, s.n}, dnnl::memory::data_type::f32, tag::ab);
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), engine,
                                  /*allow_empty=*/true);
  if (!pd) {
    impl = "none";
    return std::nan("");
  }
  impl = pd.impl_info_str();
  dnnl::matmul matmul(pd);
  dnnl::memory ma(a, engine), mb(b, engine), mc(c, engine);
  // Zeros: the time does not depend on the values.
  std::fill_n(static_cast<char *>(ma.get_data_handle()), a.get_size(), 0);
  std::fill_n(static_cast<char *>(mb.get_data_handle()), b.get_size(), 0);
  return minSeconds(reps, [&] {
    matmul.execute(
        stream,
        {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}});
    stream.wait();
  });
}

/// GFLOP/s as JSON: null where the kernel does not exist (NaN seconds).
std::string jsonRate(double flops, double seconds) {
  if (std::isnan(seconds))
    return "null";
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f", flops / seconds / 1e9);
  return text;
}
} // namespace

int main(int argc, char **argv) {
  int reps = 10;
  std::vector<Shape> shapes;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++i]));
      continue;
    }
    Shape s;
    int ta, tb;
    if (std::sscanf(argv[i], "%ld,%ld,%ld,%d,%d", &s.m, &s.n, &s.k, &ta, &tb) !=
            5 ||
        s.m < 1 || s.n < 1 || s.k < 1) {
      std::fprintf(stderr,
                   "TitanCpuGemmPeak: bad shape '%s' (expected "
                   "m,n,k,transA,transB with positive sizes)\n",
                   argv[i]);
      return 2;
    }
    s.transA = ta != 0;
    s.transB = tb != 0;
    shapes.push_back(s);
  }
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  for (const Shape &s : shapes) {
    std::vector<float> a(size_t(s.m * s.k), 1.0f), b(size_t(s.k * s.n), 1.0f),
        c(size_t(s.m * s.n));
    double sgemm = minSeconds(reps, [&] {
      dnnl_sgemm(s.transA ? 'T' : 'N', s.transB ? 'T' : 'N', s.m, s.n, s.k,
                 1.0f, a.data(), s.transA ? s.m : s.k, b.data(),
                 s.transB ? s.k : s.n, 0.0f, c.data(), s.n);
    });
    std::string f32Impl, bf16Impl;
    double f32 = matmulSeconds(s, dnnl::memory::data_type::f32, reps, engine,
                               stream, f32Impl);
    double bf16 = matmulSeconds(s, dnnl::memory::data_type::bf16, reps, engine,
                                stream, bf16Impl);
    double flops = 2.0 * double(s.m) * double(s.n) * double(s.k);
    std::printf("{\"m\": %ld, \"n\": %ld, \"k\": %ld, \"transA\": %d, "
                "\"transB\": %d, \"sgemm_gflops\": %s, "
                "\"matmul_f32_gflops\": %s, \"matmul_bf16_gflops\": %s, "
                "\"matmul_f32_impl\": \"%s\", \"matmul_bf16_impl\": \"%s\"}\n",
                s.m, s.n, s.k, int(s.transA), int(s.transB),
                jsonRate(flops, sgemm).c_str(), jsonRate(flops, f32).c_str(),
                jsonRate(flops, bf16).c_str(), f32Impl.c_str(),
                bf16Impl.c_str());
  }
  return 0;
}
