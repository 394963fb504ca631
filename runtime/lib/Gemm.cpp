//===- Gemm.cpp - the CPU kernels' GEMMs ----------------------------------===//

#include "Gemm.h"

#include "Error.h"
#include "Threads.h"

#include <cblas.h>
#include <dnnl.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include <string>

namespace titanrt::kernels {

namespace {
void sgemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
           float alpha, const float *a, int64_t lda, const float *b,
           int64_t ldb, float beta, float *c, int64_t ldc) {
  dnnl_status_t status = dnnl_sgemm(transA ? 'T' : 'N', transB ? 'T' : 'N', m,
                                    n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  if (status != dnnl_success)
    kernelFatal("oneDNN sgemm (" + std::to_string(m) + " x " +
                std::to_string(n) + " x " + std::to_string(k) +
                ") failed with status " + std::to_string(int(status)));
}

/// A GEMM's block of rows or columns of C: at least `least`, at most 16
/// blocks, fixed by the shape alone.
int64_t blockOf(int64_t size, int64_t least = 64) {
  return std::max<int64_t>(least, (size + 15) / 16);
}

/// Runs `block(i, j, rows, cols)` over the blocks of an m x n result, of
/// `rows` x `cols` elements (the last ones shorter), on the calling thread
/// alone (one thread, or inside a parallel region, where oneDNN runs
/// single-threaded) or on the threads: each block is one library call over
/// the whole k, so no sum depends on the thread count.
template <typename Block>
void forBlocks(int64_t m, int64_t n, int64_t rows, int64_t cols, Block block) {
  int64_t colBlocks = (n + cols - 1) / cols;
  int64_t blocks = (m + rows - 1) / rows * colBlocks;
  auto run = [&](int64_t index) {
    int64_t i = index / colBlocks * rows, j = index % colBlocks * cols;
    block(i, j, std::min(rows, m - i), std::min(cols, n - j));
  };
  // The same blocks on one thread, and inside a parallel region: a
  // whole-matrix call may round differently from its blocks.
  int threads = maxThreads();
  if (threads == 1 || inParallelRegion()) {
    for (int64_t index = 0; index < blocks; ++index)
      run(index);
    return;
  }
  // An active region even for one block: a team of one thread would not
  // count as one, and oneDNN would split that block over the threads.
#pragma omp parallel for schedule(static)                                      \
    num_threads(int(std::clamp <int64_t>(blocks, 2, threads)))
  for (int64_t index = 0; index < blocks; ++index)
    run(index);
}

void check(dnnl_status_t status, const char *what) {
  if (status != dnnl_success)
    kernelFatal(std::string("oneDNN ") + what + " failed with status " +
                std::to_string(int(status)));
}

dnnl_engine_t cpuEngine() {
  static dnnl_engine_t engine = [] {
    dnnl_engine_t e = nullptr;
    check(dnnl_engine_create(&e, dnnl_cpu, 0), "dnnl_engine_create");
    return e;
  }();
  return engine;
}

/// One bf16 matmul primitive: rows x cols of C over k, the operands and C
/// at their leading dimensions (a transposed operand by strides).
struct Bf16Block {
  bool transA, transB, accumulate;
  int64_t rows, cols, k, lda, ldb, ldc;
  auto key() const {
    return std::make_tuple(transA, transB, accumulate, rows, cols, k, lda, ldb,
                           ldc);
  }
  bool operator<(const Bf16Block &o) const { return key() < o.key(); }
};

struct Bf16Primitive {
  dnnl_primitive_t primitive = nullptr;
  dnnl_memory_desc_t a, b, c, scratchpad;
};

Bf16Primitive createBf16Primitive(const Bf16Block &g) {
  Bf16Primitive p;
  dnnl_dims_t aDims = {g.rows, g.k}, bDims = {g.k, g.cols},
              cDims = {g.rows, g.cols};
  dnnl_dims_t aStrides = {g.transA ? 1 : g.lda, g.transA ? g.lda : 1},
              bStrides = {g.transB ? 1 : g.ldb, g.transB ? g.ldb : 1},
              cStrides = {g.ldc, 1};
  check(dnnl_memory_desc_init_by_strides(&p.a, 2, aDims, dnnl_bf16, aStrides),
        "memory descriptor (A)");
  check(dnnl_memory_desc_init_by_strides(&p.b, 2, bDims, dnnl_bf16, bStrides),
        "memory descriptor (B)");
  check(dnnl_memory_desc_init_by_strides(&p.c, 2, cDims, dnnl_f32, cStrides),
        "memory descriptor (C)");
  dnnl_matmul_desc_t desc;
  check(dnnl_matmul_desc_init(&desc, &p.a, &p.b, nullptr, &p.c),
        "dnnl_matmul_desc_init");
  dnnl_primitive_attr_t attr = nullptr;
  check(dnnl_primitive_attr_create(&attr), "dnnl_primitive_attr_create");
  // The blocks run concurrently: each thread brings its own scratchpad (a
  // library one may be shared by all threads).
  check(
      dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user),
      "dnnl_primitive_attr_set_scratchpad_mode");
  if (g.accumulate) { // C += A B: the sum post-op (beta = 1)
    dnnl_post_ops_t ops = nullptr;
    check(dnnl_post_ops_create(&ops), "dnnl_post_ops_create");
    check(dnnl_post_ops_append_sum(ops, 1.0f), "dnnl_post_ops_append_sum");
    check(dnnl_primitive_attr_set_post_ops(attr, ops),
          "dnnl_primitive_attr_set_post_ops");
    dnnl_post_ops_destroy(ops);
  }
  dnnl_primitive_desc_t pd = nullptr;
  check(dnnl_primitive_desc_create(&pd, &desc, attr, cpuEngine(), nullptr),
        "bf16 matmul primitive descriptor");
  check(dnnl_primitive_create(&p.primitive, pd), "bf16 matmul primitive");
  p.scratchpad = *dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
  dnnl_primitive_desc_destroy(pd);
  dnnl_primitive_attr_destroy(attr);
  return p;
}

/// The primitive of `g`, created at its first use (once per process: the
/// step's GEMMs have a handful of block shapes).
const Bf16Primitive &bf16Primitive(const Bf16Block &g) {
  static std::mutex mutex;
  static std::map<Bf16Block, Bf16Primitive> primitives;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = primitives.find(g);
  if (it == primitives.end())
    it = primitives.emplace(g, createBf16Primitive(g)).first;
  return it->second;
}

/// This thread's stream (a CPU stream runs its primitives on the calling
/// thread, in order) and scratchpad.
struct ThreadContext {
  dnnl_stream_t stream = nullptr;
  std::vector<char> scratchpad;
  ~ThreadContext() {
    if (stream)
      dnnl_stream_destroy(stream);
  }
};
ThreadContext &threadContext() {
  thread_local ThreadContext context;
  if (!context.stream)
    check(dnnl_stream_create(&context.stream, cpuEngine(),
                             dnnl_stream_default_flags),
          "dnnl_stream_create");
  return context;
}

void runBf16Block(const Bf16Primitive &p, const void *a, const void *b,
                  void *c) {
  ThreadContext &context = threadContext();
  size_t scratch = dnnl_memory_desc_get_size(&p.scratchpad);
  if (context.scratchpad.size() < scratch)
    context.scratchpad.resize(scratch);
  dnnl_memory_t memory[4] = {};
  check(
      dnnl_memory_create(&memory[0], &p.a, cpuEngine(), const_cast<void *>(a)),
      "dnnl_memory_create");
  check(
      dnnl_memory_create(&memory[1], &p.b, cpuEngine(), const_cast<void *>(b)),
      "dnnl_memory_create");
  check(dnnl_memory_create(&memory[2], &p.c, cpuEngine(), c),
        "dnnl_memory_create");
  check(dnnl_memory_create(&memory[3], &p.scratchpad, cpuEngine(),
                           context.scratchpad.data()),
        "dnnl_memory_create");
  dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, memory[0]},
                             {DNNL_ARG_WEIGHTS, memory[1]},
                             {DNNL_ARG_DST, memory[2]},
                             {DNNL_ARG_SCRATCHPAD, memory[3]}};
  check(dnnl_primitive_execute(p.primitive, context.stream, 4, args),
        "bf16 matmul execute");
  check(dnnl_stream_wait(context.stream), "dnnl_stream_wait");
  for (dnnl_memory_t m : memory)
    dnnl_memory_destroy(m);
}
} // namespace

// oneDNN splits a GEMM over its threads as it sees fit, and on some CPUs
// (AVX2) it splits the sum over k, so the bits would change with the
// thread count. The GEMM is cut into blocks of C fixed by its shape, each
// a single-threaded sgemm over the whole k (forBlocks): every element's
// sum runs in one order on any number of threads. Blocks are at least 128
// columns wide: a weight gradient's 64 x 64 blocks over k = 2048 tokens
// (A transposed) ran at 70 GFLOP/s on a Sapphire Rapids core, 64 x 128
// ones at 127 and 64 x 256 at 137; the debug model's f32 step gained 10%.
void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
          float alpha, const float *a, int64_t lda, const float *b, int64_t ldb,
          float beta, float *c, int64_t ldc) {
  forBlocks(m, n, blockOf(m), blockOf(n, 128),
            [&](int64_t i, int64_t j, int64_t rows, int64_t cols) {
              const float *ai = transA ? a + i : a + i * lda;
              const float *bj = transB ? b + j * ldb : b + j;
              sgemm(transA, transB, rows, cols, k, alpha, ai, lda, bj, ldb,
                    beta, c + i * ldc + j, ldc);
            });
}

bool hasFastBf16Gemm() {
  static const bool fast = [] {
    const char *env = std::getenv("TITAN_CPU_BF16_MATMUL");
    if (env && std::string(env) == "0")
      return false;
    unsigned isa = unsigned(dnnl_get_effective_cpu_isa());
    unsigned amx = unsigned(dnnl_cpu_isa_avx512_core_amx);
    return (isa & amx) == amx;
  }();
  return fast;
}

// Blocks of at least 128 x 128: a matmul call costs more than an sgemm's,
// and the matrix units want tiles of 16 rows and 32 k.
void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
          float alpha, const BFloat16 *a, int64_t lda, const BFloat16 *b,
          int64_t ldb, float beta, float *c, int64_t ldc) {
  if (alpha != 1.0f || (beta != 0.0f && beta != 1.0f))
    kernelFatal("internal error: the bf16 GEMM takes alpha 1 and beta 0 or 1");
  int64_t rows = blockOf(m, 128), cols = blockOf(n, 128);
  // The blocks have at most four shapes (the last row and column of blocks
  // shorter): their primitives are found before the blocks run, not under
  // the cache's lock in each.
  const Bf16Primitive *shapes[2][2] = {};
  for (int lastRow = 0; lastRow < 2; ++lastRow)
    for (int lastCol = 0; lastCol < 2; ++lastCol) {
      int64_t r = lastRow ? m % rows : rows, cc = lastCol ? n % cols : cols;
      if (r > 0 && r <= m && cc > 0 && cc <= n)
        shapes[lastRow][lastCol] = &bf16Primitive(
            {transA, transB, beta != 0.0f, r, cc, k, lda, ldb, ldc});
    }
  forBlocks(m, n, rows, cols,
            [&](int64_t i, int64_t j, int64_t blockRows, int64_t blockCols) {
              const BFloat16 *ai = transA ? a + i : a + i * lda;
              const BFloat16 *bj = transB ? b + j * ldb : b + j;
              runBf16Block(*shapes[blockRows != rows][blockCols != cols], ai,
                           bj, c + i * ldc + j);
            });
}

void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
          double alpha, const double *a, int64_t lda, const double *b,
          int64_t ldb, double beta, double *c, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
              transB ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b,
              ldb, beta, c, ldc);
}

void gemmOnThisThread(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                      float alpha, const float *a, int64_t lda, const float *b,
                      int64_t ldb, float beta, float *c, int64_t ldc) {
  if (inParallelRegion() || maxThreads() == 1)
    return sgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    // Called outside an active region (a loop too small to thread): inside
    // one, oneDNN stays on the calling thread.
#pragma omp parallel num_threads(2)
#pragma omp single
  sgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void gemmOnThisThread(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                      double alpha, const double *a, int64_t lda,
                      const double *b, int64_t ldb, double beta, double *c,
                      int64_t ldc) {
  gemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

} // namespace titanrt::kernels
