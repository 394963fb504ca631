//===- PeerTransferTest.cpp - pipeline transfers between ranks ------------===//
//
// Communicator::send and recv, the pipeline's point-to-point transfers, on
// a ring of pp ranks (run under `mpirun -np 2` or `-np 4`; the mesh is pp
// = the world). Built twice, as CommunicatorTest.cpp: against MPI (host
// buffers, tags) and, with TITAN_TEST_NCCL, against NCCL (device buffers,
// one channel per direction and flow, PeerChannels.h). Checked:
// - a channel's messages arrive in the order they were sent, several in
//   flight at once;
// - the flows are apart: activations go to the next rank and gradients to
//   the previous one, and a rank receiving both from one peer (pp 2) takes
//   them in an order that differs from the order they were sent in across
//   flows (within a flow, in order, as the schedules keep it).
//
//===----------------------------------------------------------------------===//

#include "Communicator.h"

#include "gtest/gtest.h"

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#ifdef TITAN_TEST_NCCL
#include <cuda_runtime.h>
#endif

using namespace titanrt;

namespace {

int64_t pp = 1;

Communicator &comm() { return communicator(); }

/// A buffer in the backend's memory: host memory for MPI, device memory
/// for NCCL, with host views to fill and read it.
class Buffer {
public:
  explicit Buffer(size_t n) : host(n) {
#ifdef TITAN_TEST_NCCL
    EXPECT_EQ(cudaMalloc(&device, n * sizeof(float)), cudaSuccess);
#endif
  }
  ~Buffer() {
#ifdef TITAN_TEST_NCCL
    cudaFree(device);
#endif
  }
  void *data() {
#ifdef TITAN_TEST_NCCL
    return device;
#else
    return host.data();
#endif
  }
  /// Fills it with `value + index` (in the order of the work issued).
  void fill(float value) {
    for (size_t i = 0; i < host.size(); ++i)
      host[i] = value + float(i);
#ifdef TITAN_TEST_NCCL
    EXPECT_EQ(cudaMemcpyAsync(device, host.data(), host.size() * sizeof(float),
                              cudaMemcpyHostToDevice, cudaStreamPerThread),
              cudaSuccess);
    // The host copy is reused at once.
    EXPECT_EQ(cudaStreamSynchronize(cudaStreamPerThread), cudaSuccess);
#endif
  }
  /// Its contents once the work issued so far is done.
  const std::vector<float> &read() {
#ifdef TITAN_TEST_NCCL
    EXPECT_EQ(cudaStreamSynchronize(cudaStreamPerThread), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(host.data(), device, host.size() * sizeof(float),
                         cudaMemcpyDeviceToHost),
              cudaSuccess);
#endif
    return host;
  }

private:
  std::vector<float> host;
  void *device = nullptr;
};

void expectFilled(Buffer &b, float value, const char *what) {
  const std::vector<float> &v = b.read();
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i] != value + float(i)) {
      ADD_FAILURE() << what << ": element " << i << " is " << v[i]
                    << ", expected " << value + float(i);
      return;
    }
}

int64_t me() { return comm().coordinate(kPP); }
int64_t next() { return (me() + 1) % pp; }
int64_t prev() { return (me() + pp - 1) % pp; }

TEST(PeerTransfer, MessagesArriveInOrderOnAChannel) {
  // Each rank sends 3 activations to the next rank, all in flight at once
  // (each from its own buffer, as the executor's frames and send rings
  // hold them),
  // and receives the previous rank's 3 in the order they were sent.
  constexpr size_t n = 1000;
  std::vector<std::unique_ptr<Buffer>> in, out;
  std::vector<std::unique_ptr<Request>> requests;
  for (int k = 0; k < 3; ++k) {
    in.push_back(std::make_unique<Buffer>(n));
    requests.push_back(comm().recv(in.back()->data(), Dtype::f32, int64_t(n),
                                   prev(), PeerFlow::Activations, k));
  }
  for (int k = 0; k < 3; ++k) {
    out.push_back(std::make_unique<Buffer>(n));
    out.back()->fill(float(me() * 100000 + k * 10000));
    requests.push_back(comm().send(out.back()->data(), Dtype::f32, int64_t(n),
                                   next(), PeerFlow::Activations, k));
  }
  for (auto &r : requests)
    r->finish();
  for (int k = 0; k < 3; ++k)
    expectFilled(*in[size_t(k)], float(prev() * 100000 + k * 10000),
                 "received activation");
}

TEST(PeerTransfer, FlowsAreApart) {
  // Each rank sends an activation to the next rank, then a gradient to the
  // previous one; it receives the gradient from the next rank first, then
  // the activation from the previous one (on 2 ranks, both from its one
  // peer, in the other order than the peer sent them).
  constexpr size_t n = 257;
  Buffer activation(n), gradient(n), gotActivation(n), gotGradient(n);
  activation.fill(float(me() * 1000));
  gradient.fill(float(me() * 1000 + 500));
  std::vector<std::unique_ptr<Request>> sends;
  sends.push_back(comm().send(activation.data(), Dtype::f32, int64_t(n), next(),
                              PeerFlow::Activations, 0));
  sends.push_back(comm().send(gradient.data(), Dtype::f32, int64_t(n), prev(),
                              PeerFlow::Gradients, 1));
  comm()
      .recv(gotGradient.data(), Dtype::f32, int64_t(n), next(),
            PeerFlow::Gradients, 1)
      ->finish();
  comm()
      .recv(gotActivation.data(), Dtype::f32, int64_t(n), prev(),
            PeerFlow::Activations, 0)
      ->finish();
  for (auto &s : sends)
    s->finish();
  expectFilled(gotGradient, float(next() * 1000 + 500), "received gradient");
  expectFilled(gotActivation, float(prev() * 1000), "received activation");
}

} // namespace

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const char *size = std::getenv("OMPI_COMM_WORLD_SIZE");
  int ranks = size ? std::atoi(size) : 1;
  if (ranks < 2) {
    std::printf("run this test under mpirun on 2 or more ranks\n");
    return 1;
  }
  pp = ranks;
#ifdef TITAN_TEST_NCCL
  // ctest counts exit code 77 as skipped: not enough GPUs here.
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices < ranks) {
    std::printf("skipped: the NCCL transfer test on %d ranks needs %d GPUs "
                "on one node, this machine has %d\n",
                ranks, ranks, devices);
    return 77;
  }
  initCommunicator({pp, 1, 1, 1, 1}, titanrt::Backend::NCCL);
#else
  initCommunicator({pp, 1, 1, 1, 1});
  if (const char *thread = std::getenv("TITAN_TEST_PROGRESS_THREAD"))
    comm().setProgressThread(std::atoi(thread) != 0);
#endif
  comm().preparePeers();
  int status = RUN_ALL_TESTS();
  shutdownCommunicator();
  return status;
}
