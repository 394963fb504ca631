//===- CommunicatorTest.cpp - collectives on a 2 x 2 mesh -----------------===//
//
// Run under `mpirun -np 4`: the mesh is dp_shard 2 x tp 2. Every rank fills
// its input with rank * 1000 + index, so each rank can compute what every
// collective must return from the inputs of its group. Built twice: against
// the MPI backend (host buffers) and, with TITAN_TEST_NCCL, against the
// NCCL backend (device buffers, one GPU per rank).
//
//===----------------------------------------------------------------------===//

#include "Communicator.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cstdio>
#include <functional>
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

const std::vector<int64_t> kMesh = {1, 1, 2, 1, 2};
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

// A [2][3][2] tensor gathered along dimension 1 over tp: [2][6][2].
TEST(COMMUNICATOR, AllGatherMiddleDimension) {
  std::vector<float> in = inputOf(comm().rank(), 12), out(24);
  run(in, out, [](const void *i, void *o) {
    return comm().allGather(i, o, 4, 2, 3, 2, kTPMask);
  });
  std::vector<int> g = groupOf(kTPMask);
  for (int o = 0; o < 2; ++o)
    for (int p = 0; p < 2; ++p)
      for (int d = 0; d < 3; ++d)
        for (int i = 0; i < 2; ++i)
          EXPECT_EQ(out[(o * 6 + p * 3 + d) * 2 + i],
                    float(g[p] * 1000 + (o * 3 + d) * 2 + i));
}

// A [2][4][3] tensor summed over dp_shard and split along dimension 1.
TEST(COMMUNICATOR, ReduceScatterMiddleDimension) {
  std::vector<float> in = inputOf(comm().rank(), 24), out(12);
  run(in, out, [](const void *i, void *o) {
    return comm().reduceScatter(i, o, 4, 2, 4, 3, kShardMask);
  });
  std::vector<int> g = groupOf(kShardMask);
  int me = indexInGroup(kShardMask);
  for (int o = 0; o < 2; ++o)
    for (int d = 0; d < 2; ++d)
      for (int i = 0; i < 3; ++i) {
        int src = (o * 4 + me * 2 + d) * 3 + i;
        float expected = 0;
        for (int r : g)
          expected += float(r * 1000 + src);
        EXPECT_EQ(out[(o * 2 + d) * 3 + i], expected);
      }
}

TEST(COMMUNICATOR, AllReduceSumAndMeanOverTwoAxes) {
  std::vector<double> in(5), sum(5), mean(5);
  for (int i = 0; i < 5; ++i)
    in[i] = comm().rank() * 10.0 + i;
  std::vector<double> max(5);
  for (auto [out, reduction, mask] :
       {std::tuple(&sum, Reduction::Sum, kShardMask | kTPMask),
        std::tuple(&mean, Reduction::Average, kShardMask | kTPMask),
        std::tuple(&max, Reduction::Max, kTPMask)})
    run(in, *out,
        [&, reduction = reduction, mask = mask](const void *i, void *o) {
          return comm().allReduce(i, o, 8, 5, reduction, mask);
        });
  // The tp partner of rank r is r ^ 1; the larger rank holds the maximum.
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(sum[i], 60.0 + 4 * i);
    EXPECT_EQ(mean[i], 15.0 + i);
    EXPECT_EQ(max[i], (comm().rank() | 1) * 10.0 + i);
  }
}

// Shard indices follow the order a sharding lists its axes.
TEST(COMMUNICATOR, GroupIndexInListedOrder) {
  int64_t shard = comm().coordinate(kDPShard), tp = comm().coordinate(kTP);
  EXPECT_EQ(comm().groupIndex({kTP, kDPShard}), tp * 2 + shard);
  EXPECT_EQ(comm().groupIndex({kDPShard, kTP}), shard * 2 + tp);
  EXPECT_EQ(comm().groupIndex({kTP}), tp);
}

// [4][2] split along dimension 0 into 2 parts of [2][2], concatenated
// along dimension 1: [2][4].
TEST(COMMUNICATOR, AllToAll) {
  std::vector<float> in = inputOf(comm().rank(), 8), out(8);
  run(in, out, [](const void *i, void *o) {
    return comm().allToAll(i, o, 4, /*splitOuter=*/1, 4, 2,
                           /*concatOuter=*/2, 2, 1, kTPMask);
  });
  std::vector<int> g = groupOf(kTPMask);
  int me = indexInGroup(kTPMask);
  for (int row = 0; row < 2; ++row)
    for (int q = 0; q < 2; ++q)
      for (int col = 0; col < 2; ++col)
        EXPECT_EQ(out[row * 4 + q * 2 + col],
                  float(g[q] * 1000 + (me * 2 + row) * 2 + col));
}

TEST(COMMUNICATOR, Broadcast) {
  std::vector<float> in = inputOf(comm().rank(), 6), out(6);
  run(in, out, [](const void *i, void *o) {
    return comm().broadcast(i, o, 4, 6, /*root=*/1, kShardMask);
  });
  EXPECT_EQ(out, inputOf(groupOf(kShardMask)[1], 6));
}

TEST(COMMUNICATOR, SendRecvShift) {
  std::vector<float> in = inputOf(comm().rank(), 3), out(3);
  run(in, out, [](const void *i, void *o) {
    return comm().sendRecv(i, o, 4, 3, /*shift=*/1, kTPMask);
  });
  std::vector<int> g = groupOf(kTPMask);
  int from = g[(indexInGroup(kTPMask) + 1) % 2];
  EXPECT_EQ(out, inputOf(from, 3));
}

} // namespace

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
#ifdef TITAN_TEST_NCCL
  // ctest counts exit code 77 as skipped: no GPUs here to run on.
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices < 4) {
    std::printf("skipped: the NCCL communicator test needs 4 GPUs on one "
                "node, this machine has %d\n",
                devices);
    return 77;
  }
  initCommunicator(kMesh, titanrt::Backend::NCCL);
#else
  initCommunicator(kMesh);
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
