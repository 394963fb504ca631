//===- CommunicatorTest.cpp - collectives on a 2 x 2 mesh -----------------===//
//
// Run under `mpirun -np 4`: the mesh is dp_shard 2 x tp 2 (on one rank,
// every group has one member). Every rank fills
// its input with rank * 1000 + index, so each rank can compute what every
// collective must return from the inputs of its group. Built twice: against
// the MPI backend (host buffers) and, with TITAN_TEST_NCCL, against the
// NCCL backend (device buffers, one GPU per rank).
//
//===----------------------------------------------------------------------===//

#include "Communicator.h"
#include "ContextParallel.h"
#include "LowPrecision.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <thread>
#include <tuple>
#include <vector>

#ifdef TITAN_TEST_NCCL
#include <cuda_runtime.h>
#define COMMUNICATOR NCCLCommunicator
#else
#define COMMUNICATOR MPICommunicator
#endif

using namespace titanrt;

namespace {

/// Runs `collective(in, out)` on the backend's memory and waits for it:
/// host buffers for MPI, device copies for NCCL.
template <typename T>
void run(const std::vector<T> &in, std::vector<T> &out,
         const std::function<std::unique_ptr<Request>(const void *, void *)>
             &collective) {
#ifdef TITAN_TEST_NCCL
  void *din = nullptr, *dout = nullptr;
  size_t inBytes = in.size() * sizeof(T), outBytes = out.size() * sizeof(T);
  ASSERT_EQ(cudaMalloc(&din, inBytes), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dout, outBytes), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(din, in.data(), inBytes, cudaMemcpyHostToDevice),
            cudaSuccess);
  collective(din, dout)->finish();
  ASSERT_EQ(cudaStreamSynchronize(cudaStreamPerThread), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(out.data(), dout, outBytes, cudaMemcpyDeviceToHost),
            cudaSuccess);
  cudaFree(din);
  cudaFree(dout);
#else
  collective(in.data(), out.data())->finish();
#endif
}

/// dp_shard 2 x tp 2 on 4 ranks; the trivial mesh on 1 rank (every group
/// of one), which still runs each backend's full code path.
std::vector<int64_t> kMesh = {1, 1, 2, 1, 2};
constexpr unsigned kShardMask = 1u << kDPShard, kTPMask = 1u << kTP;

Communicator &comm() { return communicator(); }

std::vector<float> inputOf(int rank, size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = float(rank * 1000 + int(i));
  return v;
}

int64_t coordinateOf(int rank, int axis) {
  for (int a = kNumAxes - 1; a > axis; --a)
    rank /= int(kMesh[a]);
  return rank % kMesh[axis];
}

/// The world ranks of this rank's group over `mask`, in rank order.
std::vector<int> groupOf(unsigned mask) {
  std::vector<int> members;
  for (int r = 0; r < comm().worldSize(); ++r) {
    bool same = true;
    for (int a = 0; a < kNumAxes; ++a)
      if (!(mask & (1u << a)) &&
          coordinateOf(r, a) != comm().coordinate(MeshAxis(a)))
        same = false;
    if (same)
      members.push_back(r);
  }
  return members;
}

int indexInGroup(unsigned mask) {
  std::vector<int> g = groupOf(mask);
  return int(std::find(g.begin(), g.end(), comm().rank()) - g.begin());
}

// A [2][3][2] tensor gathered along dimension 1 over tp: [2][3P][2].
TEST(COMMUNICATOR, AllGatherMiddleDimension) {
  std::vector<int> g = groupOf(kTPMask);
  int parts = int(g.size());
  std::vector<float> in = inputOf(comm().rank(), 12), out(12 * parts);
  run(in, out, [](const void *i, void *o) {
    return comm().allGather(i, o, Dtype::f32, 2, 3, 2, 3 * kMesh[kTP], kTPMask);
  });
  for (int o = 0; o < 2; ++o)
    for (int p = 0; p < parts; ++p)
      for (int d = 0; d < 3; ++d)
        for (int i = 0; i < 2; ++i)
          EXPECT_EQ(out[(o * 3 * parts + p * 3 + d) * 2 + i],
                    float(g[p] * 1000 + (o * 3 + d) * 2 + i));
}

// A [2][2P][3] tensor summed over dp_shard and split along dimension 1.
TEST(COMMUNICATOR, ReduceScatterMiddleDimension) {
  std::vector<int> g = groupOf(kShardMask);
  int parts = int(g.size()), me = indexInGroup(kShardMask);
  std::vector<float> in = inputOf(comm().rank(), 12 * parts), out(12);
  run(in, out, [parts](const void *i, void *o) {
    return comm().reduceScatter(i, o, Dtype::f32, 2, 2 * parts, 3, kShardMask);
  });
  for (int o = 0; o < 2; ++o)
    for (int d = 0; d < 2; ++d)
      for (int i = 0; i < 3; ++i) {
        int src = (o * 2 * parts + me * 2 + d) * 3 + i;
        float expected = 0;
        for (int r : g)
          expected += float(r * 1000 + src);
        EXPECT_EQ(out[(o * 2 + d) * 3 + i], expected);
      }
}

// Uneven FSDP shards: [2][2P-1][3] reduce-scattered over dp_shard into
// parts of ceil((2P-1)/P) rows (the last zero-padded), then those parts
// all-gathered back into [2][2P-1][3] (the padding dropped).
TEST(COMMUNICATOR, UnevenReduceScatterAndAllGather) {
  std::vector<int> g = groupOf(kShardMask);
  int parts = int(g.size()), me = indexInGroup(kShardMask);
  int64_t size = 2 * parts - 1, rows = (size + parts - 1) / parts;
  std::vector<float> in = inputOf(comm().rank(), 2 * size * 3),
                     part(2 * rows * 3), back(2 * size * 3);
  run(in, part, [size](const void *i, void *o) {
    return comm().reduceScatter(i, o, Dtype::f32, 2, size, 3, kShardMask);
  });
  for (int o = 0; o < 2; ++o)
    for (int d = 0; d < rows; ++d)
      for (int i = 0; i < 3; ++i) {
        int64_t row = me * rows + d;
        float expected = 0;
        if (row < size)
          for (int r : g)
            expected += float(r * 1000 + (o * size + row) * 3 + i);
        EXPECT_EQ(part[(o * rows + d) * 3 + i], expected);
      }
  std::vector<float> mine = inputOf(comm().rank(), 2 * rows * 3);
  run(mine, back, [size, rows](const void *i, void *o) {
    return comm().allGather(i, o, Dtype::f32, 2, rows, 3, size, kShardMask);
  });
  for (int o = 0; o < 2; ++o)
    for (int64_t row = 0; row < size; ++row)
      for (int i = 0; i < 3; ++i)
        EXPECT_EQ(
            back[(o * size + row) * 3 + i],
            float(g[row / rows] * 1000 + (o * rows + row % rows) * 3 + i));
}

TEST(COMMUNICATOR, AllReduceSumMeanAndMax) {
  std::vector<double> in(5), sum(5), mean(5), max(5);
  for (int i = 0; i < 5; ++i)
    in[i] = comm().rank() * 10.0 + i;
  for (auto [out, reduction, mask] :
       {std::tuple(&sum, Reduction::Sum, kShardMask | kTPMask),
        std::tuple(&mean, Reduction::Average, kShardMask | kTPMask),
        std::tuple(&max, Reduction::Max, kTPMask)})
    run(in, *out,
        [&, reduction = reduction, mask = mask](const void *i, void *o) {
          return comm().allReduce(i, o, Dtype::f64, 5, reduction, mask);
        });
  std::vector<int> all = groupOf(kShardMask | kTPMask), tp = groupOf(kTPMask);
  double rankSum = 0;
  for (int r : all)
    rankSum += r;
  int rankMax = *std::max_element(tp.begin(), tp.end());
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(sum[i], rankSum * 10.0 + double(all.size()) * i);
    EXPECT_EQ(mean[i], rankSum * 10.0 / double(all.size()) + i);
    EXPECT_EQ(max[i], rankMax * 10.0 + i);
  }
}

// bf16 and f16 buffers keep their type: a gather moves their bits, sums and
// maxima are computed in float and rounded to nearest even. The values'
// partial sums are exact in both formats, except that 1 + 2^-9 is already
// 1 in bf16 (7 stored mantissa bits) but exact in f16 (10), so the sums of
// the third element tell the formats apart.
TEST(COMMUNICATOR, SixteenBitFloats) {
  std::vector<int> all = groupOf(kShardMask | kTPMask), tp = groupOf(kTPMask);
  int parts = int(tp.size()), ranks = int(all.size());
  for (Dtype type : {Dtype::bf16, Dtype::f16}) {
    auto from = type == Dtype::bf16 ? floatToBf16 : floatToF16;
    auto to = type == Dtype::bf16 ? bf16ToFloat : f16ToFloat;
    std::vector<uint16_t> in = {from(float(comm().rank() + 1)), from(-2.0f),
                                from(1.0f + 1.0f / 512)};
    std::vector<uint16_t> gathered(3 * parts), sum(3), max(3);
    run(in, gathered, [&](const void *i, void *o) {
      return comm().allGather(i, o, type, 1, 3, 1, 3 * parts, kTPMask);
    });
    for (int p = 0; p < parts; ++p)
      EXPECT_EQ(to(gathered[p * 3]), float(tp[p] + 1)) << dtypeName(type);
    run(in, sum, [&](const void *i, void *o) {
      return comm().allReduce(i, o, type, 3, Reduction::Sum,
                              kShardMask | kTPMask);
    });
    run(in, max, [&](const void *i, void *o) {
      return comm().allReduce(i, o, type, 3, Reduction::Max, kTPMask);
    });
    float rankSum = 0;
    for (int r : all)
      rankSum += float(r + 1);
    EXPECT_EQ(to(sum[0]), rankSum) << dtypeName(type);
    EXPECT_EQ(to(sum[1]), -2.0f * float(ranks)) << dtypeName(type);
    if (type == Dtype::bf16)
      EXPECT_EQ(to(sum[2]), float(ranks));
    else
      EXPECT_EQ(to(sum[2]), float(ranks) * (1.0f + 1.0f / 512));
    EXPECT_EQ(to(max[0]), float(*std::max_element(tp.begin(), tp.end()) + 1))
        << dtypeName(type);
  }
}

// Round to nearest even at the bf16 and f16 conversions.
TEST(COMMUNICATOR, RoundToNearestEven) {
  // 1 + 2^-8 lies halfway between bf16's 1 and 1 + 2^-7: ties go to even.
  EXPECT_EQ(bf16ToFloat(floatToBf16(1.0f + 1.0f / 256)), 1.0f);
  EXPECT_EQ(bf16ToFloat(floatToBf16(1.0f + 3.0f / 256)), 1.0f + 4.0f / 256);
  EXPECT_EQ(bf16ToFloat(floatToBf16(1.0f + 1.0f / 256 + 1.0f / 65536)),
            1.0f + 2.0f / 256);
  EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBf16(std::nanf("")))));
  EXPECT_EQ(f16ToFloat(floatToF16(1.0f + 1.0f / 2048)), 1.0f);
  EXPECT_EQ(f16ToFloat(floatToF16(65520.0f)), INFINITY); // rounds past max
}

// Shard indices follow the order a sharding lists its axes.
TEST(COMMUNICATOR, GroupIndexInListedOrder) {
  int64_t shard = comm().coordinate(kDPShard), tp = comm().coordinate(kTP);
  int64_t shards = comm().meshShape()[kDPShard], tps = comm().meshShape()[kTP];
  EXPECT_EQ(comm().groupIndex({kTP, kDPShard}), tp * shards + shard);
  EXPECT_EQ(comm().groupIndex({kDPShard, kTP}), shard * tps + tp);
  EXPECT_EQ(comm().groupIndex({kTP}), tp);
}

// context_attention's decoders take the cp rank as the index over the
// listed axes, as shard offsets do.
TEST(COMMUNICATOR, ContextParallelLayoutOfThisRank) {
  int64_t shards = comm().meshShape()[kDPShard], tps = comm().meshShape()[kTP];
  // {degree, kv_shift, load_balanced, number of axes, axes}.
  int64_t ring[] = {tps, tps - 1, 1, 1, kTP};
  ChunkLayout got = contextParallelLayout("test", ring, 8, 8);
  ChunkLayout want =
      loadBalancedLayout(comm().groupIndex({kTP}), tps, tps - 1, 8);
  EXPECT_EQ(got.chunk, 4);
  EXPECT_EQ(std::vector<int64_t>(got.queryStarts, got.queryStarts + 2),
            std::vector<int64_t>(want.queryStarts, want.queryStarts + 2));
  EXPECT_EQ(std::vector<int64_t>(got.keyStarts, got.keyStarts + 2),
            std::vector<int64_t>(want.keyStarts, want.keyStarts + 2));
  int64_t gathered[] = {shards * tps, -1, 1, 2, kTP, kDPShard};
  got = contextParallelLayout("test", gathered, 8, 8 * shards * tps);
  int64_t rank = comm().groupIndex({kTP, kDPShard});
  EXPECT_EQ(got.queryStarts[0], rank * 4);
  EXPECT_EQ(got.queryStarts[1], (2 * shards * tps - 1 - rank) * 4);
  EXPECT_EQ(got.keyChunks, 2 * shards * tps);
  // load_balanced = 0: the rank's one contiguous chunk of 8 rows.
  int64_t contiguous[] = {shards * tps, -1, 0, 2, kTP, kDPShard};
  got = contextParallelLayout("test", contiguous, 8, 8 * shards * tps);
  EXPECT_EQ(got.chunk, 8);
  EXPECT_EQ(got.queryChunks, 1);
  EXPECT_EQ(got.queryStarts[0], rank * 8);
  EXPECT_EQ(got.keyChunks, shards * tps);
}

// [2P][2] split along dimension 0 into P parts of [2][2], concatenated
// along dimension 1: [2][2P].
TEST(COMMUNICATOR, AllToAll) {
  std::vector<int> g = groupOf(kTPMask);
  int parts = int(g.size()), me = indexInGroup(kTPMask);
  std::vector<float> in = inputOf(comm().rank(), 4 * parts), out(4 * parts);
  run(in, out, [parts](const void *i, void *o) {
    return comm().allToAll(i, o, Dtype::f32, /*splitOuter=*/1, 2 * parts, 2,
                           /*concatOuter=*/2, 2, 1, kTPMask);
  });
  for (int row = 0; row < 2; ++row)
    for (int q = 0; q < parts; ++q)
      for (int col = 0; col < 2; ++col)
        EXPECT_EQ(out[row * 2 * parts + q * 2 + col],
                  float(g[q] * 1000 + (me * 2 + row) * 2 + col));
}

TEST(COMMUNICATOR, Broadcast) {
  std::vector<int> g = groupOf(kShardMask);
  int root = int(g.size()) - 1;
  std::vector<float> in = inputOf(comm().rank(), 6), out(6);
  run(in, out, [root](const void *i, void *o) {
    return comm().broadcast(i, o, Dtype::f32, 6, root, kShardMask);
  });
  EXPECT_EQ(out, inputOf(g[root], 6));
}

TEST(COMMUNICATOR, SendRecvShift) {
  std::vector<int> g = groupOf(kTPMask);
  int parts = int(g.size());
  std::vector<float> in = inputOf(comm().rank(), 3), out(3);
  run(in, out, [](const void *i, void *o) {
    return comm().sendRecv(i, o, Dtype::f32, 3, /*shift=*/1, kTPMask);
  });
  // Shifting by one: this rank receives from the one a step back.
  EXPECT_EQ(out, inputOf(g[(indexInGroup(kTPMask) + parts - 1) % parts], 3));
}

// Host values (a resume step, a loss) agree through the blocking host API
// on every backend, NCCL's included: the results are read straight from
// the host variables, with no synchronization in between.
TEST(COMMUNICATOR, HostAgreement) {
  std::vector<int> g = groupOf(kShardMask), all = groupOf(kShardMask | kTPMask);
  int root = int(g.size()) - 1;
  double step = comm().rank() == g[root] ? 42.0 : -1.0;
  comm().hostBroadcast(&step, 1, root, kShardMask);
  EXPECT_EQ(step, 42.0);
  double values[2] = {double(comm().rank()), double(comm().rank() + 1)};
  comm().hostAllReduce(values, 2, Reduction::Sum, kShardMask | kTPMask);
  double rankSum = 0;
  for (int r : all)
    rankSum += r;
  EXPECT_EQ(values[0], rankSum);
  EXPECT_EQ(values[1], rankSum + double(all.size()));
  double max = comm().rank();
  comm().hostAllReduce(&max, 1, Reduction::Max, kShardMask | kTPMask);
  EXPECT_EQ(max, double(*std::max_element(all.begin(), all.end())));
}

#ifndef TITAN_TEST_NCCL
/// Turns the MPI communicator's progress thread on or off for one test and
/// back to what it was.
struct ProgressThread {
  explicit ProgressThread(bool on) : before(comm().progressThread()) {
    comm().setProgressThread(on);
  }
  ~ProgressThread() { comm().setProgressThread(before); }
  bool before;
};

// With the progress thread, a collective issued before a compute loop
// completes during it: test() makes no MPI call then, so only the thread
// can have moved it. 256 KiB per rank needs MPI's rendezvous protocol, which
// moves only inside MPI calls. The loop computes for up to 5 s (the ranks
// oversubscribe the cores) and stops once the collective is seen complete.
TEST(COMMUNICATOR, ProgressThreadCompletesDuringCompute) {
  // Split into 2-element messages that would be 32768 all-reduces.
  if (std::getenv("TITAN_MPI_MAX_COUNT"))
    GTEST_SKIP() << "the split path is tested by the other cases";
  ProgressThread on(true);
  ASSERT_TRUE(comm().progressThread());
  comm().barrier();
  std::vector<float> in(1 << 16, float(comm().rank() + 1)), out(in.size());
  auto req =
      comm().allReduce(in.data(), out.data(), Dtype::f32, int64_t(in.size()),
                       Reduction::Sum, kShardMask | kTPMask);
  auto start = std::chrono::steady_clock::now();
  volatile double sink = 0;
  bool done = false;
  // Milliseconds alone; the bound only fails a progress thread that never
  // runs, however loaded the machine.
  while (!done &&
         std::chrono::steady_clock::now() - start < std::chrono::seconds(60)) {
    for (int i = 0; i < 100000; ++i)
      sink = sink + std::sqrt(double(i));
    done = req->test();
  }
  EXPECT_TRUE(done) << "the all-reduce did not complete during 60 s of compute";
  req->finish();
  float expected = 0;
  for (int r : groupOf(kShardMask | kTPMask))
    expected += float(r + 1);
  EXPECT_EQ(out[0], expected);
  EXPECT_EQ(out.back(), expected);
}

// The progress thread issues the same MPI calls in the same order: all
// gathers, reduce-scatters and all-reduces (sum and average) in f32 and
// bf16 give the same bits with and without it. The inputs are not
// integers, so a different reduction order would show in the last bits.
TEST(COMMUNICATOR, ProgressThreadIsBitwiseEqual) {
  int parts = int(groupOf(kTPMask).size());
  int shard = int(groupOf(kShardMask).size());
  auto collectives = [&](bool thread) {
    ProgressThread mode(thread);
    std::vector<std::vector<char>> results;
    for (Dtype type : {Dtype::f32, Dtype::bf16}) {
      int64_t bytes = dtypeBytes(type), n = 2 * 6 * 3;
      std::vector<char> in(size_t(n * bytes));
      for (int64_t i = 0; i < n; ++i) {
        float v = std::sin(float(comm().rank() * 131 + i)) * 3.3f;
        if (type == Dtype::f32)
          std::memcpy(&in[size_t(i * 4)], &v, 4);
        else {
          uint16_t h = floatToBf16(v);
          std::memcpy(&in[size_t(i * 2)], &h, 2);
        }
      }
      std::vector<char> gathered(in.size() * parts), scattered(in.size()),
          sum(in.size()), mean(in.size());
      // [2][6][3] gathered along the middle dimension over tp, and summed
      // and split along it over dp_shard.
      run(in, gathered, [&](const void *i, void *o) {
        return comm().allGather(i, o, type, 2, 6, 3, 6 * parts, kTPMask);
      });
      run(in, scattered, [&](const void *i, void *o) {
        return comm().reduceScatter(i, o, type, 2, 6, 3, kShardMask);
      });
      scattered.resize(in.size() / shard);
      for (auto [out, reduction] : {std::pair(&sum, Reduction::Sum),
                                    std::pair(&mean, Reduction::Average)})
        run(in, *out, [&, reduction = reduction](const void *i, void *o) {
          return comm().allReduce(i, o, type, n, reduction,
                                  kShardMask | kTPMask);
        });
      for (auto *r : {&gathered, &scattered, &sum, &mean})
        results.push_back(*r);
    }
    return results;
  };
  std::vector<std::vector<char>> off = collectives(false),
                                 on = collectives(true);
  ASSERT_EQ(off.size(), on.size());
  for (size_t i = 0; i < off.size(); ++i)
    EXPECT_TRUE(off[i] == on[i]) << "result " << i << " differs";
}
#endif

#ifdef TITAN_TEST_NCCL
// A collective captured into a CUDA graph on the compute stream, as a
// captured training step has it: it gets no watchdog event while captured
// (the watchdog would abort every rank on cudaErrorCapturedEvent), and each
// replay, watched with watchStream, computes the sum again. The watchdog
// polls every 100 ms; the sleep lets it query the replays' events.
TEST(COMMUNICATOR, AllReduceCapturedInGraph) {
  std::vector<int> all = groupOf(kShardMask | kTPMask);
  std::vector<float> in = inputOf(comm().rank(), 4), out(4);
  float *buffers = nullptr;
  ASSERT_EQ(cudaMalloc(&buffers, 8 * sizeof(float)), cudaSuccess);
  ASSERT_EQ(
      cudaMemcpy(buffers, in.data(), 4 * sizeof(float), cudaMemcpyHostToDevice),
      cudaSuccess);
  // As a training run does: no communicator is created under capture.
  comm().prepareGroups({kShardMask | kTPMask});
  cudaStream_t stream = cudaStreamPerThread;
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal),
            cudaSuccess);
  comm()
      .allReduce(buffers, buffers + 4, Dtype::f32, 4, Reduction::Sum,
                 kShardMask | kTPMask)
      ->finish();
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (int replay = 0; replay < 2; ++replay) {
    ASSERT_EQ(cudaMemsetAsync(buffers + 4, 0, 4 * sizeof(float), stream),
              cudaSuccess);
    ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
    comm().watchStream("the test's graph", stream);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(out.data(), buffers + 4, 4 * sizeof(float),
                         cudaMemcpyDeviceToHost),
              cudaSuccess);
    for (int i = 0; i < 4; ++i) {
      float expected = 0;
      for (int r : all)
        expected += float(r * 1000 + i);
      EXPECT_EQ(out[i], expected) << "replay " << replay;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaFree(buffers);
}
#endif

} // namespace

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  // mpirun (or torchrun) tells each process the world size; run directly,
  // it is one rank.
  const char *size = std::getenv("OMPI_COMM_WORLD_SIZE");
  if (!size)
    size = std::getenv("WORLD_SIZE");
  int ranks = size ? std::atoi(size) : 1;
  if (ranks == 1)
    kMesh = {1, 1, 1, 1, 1};
  else if (ranks != 4) {
    std::printf("run this test on 1 or 4 ranks, not %d\n", ranks);
    return 1;
  }
#ifdef TITAN_TEST_NCCL
  // ctest counts exit code 77 as skipped: not enough GPUs here.
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices < ranks) {
    std::printf("skipped: the NCCL communicator test on %d ranks needs %d "
                "GPUs on one node, this machine has %d\n",
                ranks, ranks, devices);
    return 77;
  }
  initCommunicator(kMesh, titanrt::Backend::NCCL);
#else
  initCommunicator(kMesh);
  // TITAN_TEST_PROGRESS_THREAD=1: every test with the progress thread.
  if (const char *thread = std::getenv("TITAN_TEST_PROGRESS_THREAD"))
    comm().setProgressThread(std::atoi(thread) != 0);
#endif
#ifndef TITAN_TEST_NCCL
  // TITAN_TEST_TIMEOUT=1: the [comm] timeout still fires (with and without
  // the progress thread): rank 0 waits in an all-reduce the others never
  // join, and after 1 s every rank is stopped with the timeout's message
  // (ctest matches it; the others' sleep is cut short by the abort).
  if (std::getenv("TITAN_TEST_TIMEOUT")) {
    // As a training run does: the groups exist before any collective
    // (creating one is collective over every rank, and untimed).
    comm().prepareGroups({kShardMask | kTPMask});
    comm().setTimeout(1);
    comm().setContext("the timeout test");
    double value = 1;
    if (comm().rank() == 0)
      comm().hostAllReduce(&value, 1, Reduction::Sum, kShardMask | kTPMask);
    else
      std::this_thread::sleep_for(std::chrono::seconds(60));
    std::printf("the all-reduce did not time out\n");
    return 1;
  }
#endif
  // Only rank 0 prints; every rank checks and fails the run if it fails.
  if (comm().rank() != 0)
    delete ::testing::UnitTest::GetInstance()->listeners().Release(
        ::testing::UnitTest::GetInstance()
            ->listeners()
            .default_result_printer());
  int rc = RUN_ALL_TESTS();
  shutdownCommunicator();
  return rc;
}
