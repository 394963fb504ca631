//===- AttentionTest.cpp - GPU attention vs the CPU kernels ---------------===//
//
// titan.attention and attention_grad on the GPU against the CPU target's
// kernels on the same (rounded) inputs, causal with GQA, on odd sizes: the
// exact kernels in f32 (within 1e-5 relative plus 1e-6) and, in bf16, both
// the exact kernels and cuDNN's flash attention (within 2^-7 relative plus
// 2e-2 absolute: bf16 outputs, and flash attention rounds P to bf16 before
// P V), its backward both default and deterministic, each in the workspace
// the memory plan holds for it (titan/Contract/CUDAWorkspaces.h; more
// is an error). The exact kernels' and cuDNN's deterministic gradients are
// bitwise the same on a second run. With TorchTitan's block-causal mask
// (random documents) both sides take the same starts: cuDNN through its
// score modifier.
//
//===----------------------------------------------------------------------===//

#include "Attention.h"

#include "DeviceTestUtils.h"
#include "Kernels.h"

#include "titan/Contract/CPUWorkspaces.h"
#include "titan/Contract/CUDAWorkspaces.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <vector>

using namespace titanrt;
using namespace titanrt::cuda;
using namespace titanrt::cuda::test;

namespace {

struct Case {
  int64_t batch, seq, qHeads, kvHeads, headDim;
};
// Head dims cuDNN takes (multiples of 8 up to 256) and odd sequences.
const Case kCases[] = {
    {1, 1, 1, 1, 8}, {2, 37, 4, 2, 16}, {1, 128, 8, 2, 64}, {1, 70, 4, 1, 128}};

struct Inputs {
  std::vector<float> q, k, v, dout;
  Inputs(const Case &c, Dtype t) {
    size_t nq = size_t(c.batch * c.seq * c.qHeads * c.headDim);
    size_t nk = size_t(c.batch * c.seq * c.kvHeads * c.headDim);
    q = rounded(random(nq, 1, -2, 2), t);
    k = rounded(random(nk, 2, -2, 2), t);
    v = rounded(random(nk, 3), t);
    dout = rounded(random(nq, 4), t);
  }
};

/// The CPU kernels' results: out, lse, dq, dk, dv.
struct Expected {
  std::vector<float> out, lse, dq, dk, dv;
  Expected(const Case &c, const Inputs &in, double scale, Dtype t,
           const DocumentStarts &docs) {
    out.resize(in.q.size());
    lse.resize(size_t(c.batch * c.qHeads * c.seq));
    std::vector<float> ws(size_t(
        std::max(
            titan::cpu::attentionWorkspaceBytes(c.batch, c.qHeads, c.seq, 4),
            titan::cpu::attentionGradWorkspaceBytes(c.batch, c.kvHeads, c.seq,
                                                    4)) /
        4));
    kernels::attention(in.q.data(), in.k.data(), in.v.data(), out.data(),
                       lse.data(), c.batch, c.seq, c.qHeads, c.kvHeads,
                       c.headDim, scale, ws.data(), docs);
    // The backward reads the forward's output as stored (bf16 on a GPU).
    out = rounded(out, t);
    dq.resize(in.q.size());
    dk.resize(in.k.size());
    dv.resize(in.v.size());
    kernels::attentionGrad(in.q.data(), in.k.data(), in.v.data(), out.data(),
                           lse.data(), in.dout.data(), dq.data(), dk.data(),
                           dv.data(), c.batch, c.seq, c.qHeads, c.kvHeads,
                           c.headDim, scale, ws.data(), docs);
  }
};

void check(Dtype t, bool flash, bool deterministic = false,
           bool documents = false) {
  CudnnAttention cudnn;
  for (const Case &c : kCases) {
    SCOPED_TRACE("B " + std::to_string(c.batch) + " S " +
                 std::to_string(c.seq) + " Hq " + std::to_string(c.qHeads) +
                 " Hkv " + std::to_string(c.kvHeads) + " D " +
                 std::to_string(c.headDim));
    double scale = 1.0 / std::sqrt(double(c.headDim));
    Inputs in(c, t);
    std::vector<int32_t> starts =
        documents ? randomStarts(c.batch, c.seq, 8, 5) : std::vector<int32_t>();
    DeviceArray<int32_t> gpuStarts(starts);
    DocumentStarts cpuDocs;
    DeviceDocuments gpuDocs;
    if (documents) {
      cpuDocs = {starts.data(), c.seq};
      gpuDocs = {gpuStarts.ptr, c.seq};
    }
    Expected want(c, in, scale, t, cpuDocs);
    AttentionShape s{c.batch, c.seq, c.qHeads, c.kvHeads, c.headDim};
    DeviceBuffer q(in.q, t), k(in.k, t), v(in.v, t), dout(in.dout, t);
    DeviceBuffer out(in.q.size(), t), dq(in.q.size(), t), dk(in.k.size(), t),
        dv(in.v.size(), t);
    DeviceBuffer lse(want.lse.size(), Dtype::f32);
    size_t fwdBytes =
        size_t(titan::cuda::attentionWorkspaceBytes(c.batch, c.qHeads, c.seq));
    size_t bwdBytes = size_t(titan::cuda::attentionGradWorkspaceBytes(
        c.batch, c.qHeads, c.seq, c.headDim, deterministic));
    DeviceBuffer workspace(std::max(fwdBytes, bwdBytes) / 4, Dtype::f32);
    if (flash) {
      ASSERT_TRUE(cudnn.forward(t, q.ptr, k.ptr, v.ptr, out.ptr,
                                static_cast<float *>(lse.ptr), s,
                                SdpaViews::whole(s.seq), scale, workspace.ptr,
                                fwdBytes, nullptr, gpuDocs));
    } else {
      attentionReference(t, q.ptr, k.ptr, v.ptr, out.ptr,
                         static_cast<float *>(lse.ptr), s, scale, nullptr,
                         gpuDocs);
    }
    double absolute = t == Dtype::f32 ? 1e-6 : 2e-2;
    expectClose(out.read(), want.out, t, absolute, "out");
    expectClose(lse.read(), want.lse, Dtype::f32, t == Dtype::f32 ? 1e-6 : 1e-2,
                "lse");
    // The backward from the CPU's forward results, so both sides start
    // from the same O and lse.
    DeviceBuffer wantOut(want.out, t), wantLse(want.lse, Dtype::f32);
    auto backward = [&] {
      if (flash)
        ASSERT_TRUE(cudnn.backward(
            t, q.ptr, k.ptr, v.ptr, wantOut.ptr,
            static_cast<float *>(wantLse.ptr), dout.ptr, dq.ptr, dk.ptr, dv.ptr,
            s, SdpaViews::whole(s.seq), scale, deterministic, workspace.ptr,
            bwdBytes, nullptr, gpuDocs));
      else
        attentionGradReference(t, q.ptr, k.ptr, v.ptr, wantOut.ptr,
                               static_cast<float *>(wantLse.ptr), dout.ptr,
                               dq.ptr, dk.ptr, dv.ptr, s, scale, nullptr,
                               gpuDocs);
    };
    backward();
    std::vector<float> gotDq = dq.read(), gotDk = dk.read(), gotDv = dv.read();
    expectClose(gotDq, want.dq, t, absolute, "dq");
    expectClose(gotDk, want.dk, t, absolute, "dk");
    expectClose(gotDv, want.dv, t, absolute, "dv");
    if (!flash || deterministic) { // the same bits again
      backward();
      EXPECT_EQ(dq.read(), gotDq);
      EXPECT_EQ(dk.read(), gotDk);
      EXPECT_EQ(dv.read(), gotDv);
    }
  }
}

TEST(Attention, ExactKernelsF32) { check(Dtype::f32, false); }
TEST(Attention, ExactKernelsBF16) { check(Dtype::bf16, false); }
TEST(Attention, CudnnFlashBF16) {
  if (!haveCudnnAttention())
    GTEST_SKIP() << "built without the cudnn-frontend headers";
  check(Dtype::bf16, true);
}
TEST(Attention, CudnnFlashBF16Deterministic) {
  if (!haveCudnnAttention())
    GTEST_SKIP() << "built without the cudnn-frontend headers";
  check(Dtype::bf16, true, true);
}
TEST(Attention, DocumentMaskedExactKernelsF32) {
  check(Dtype::f32, false, false, /*documents=*/true);
}
TEST(Attention, DocumentMaskedCudnnFlashBF16) {
  if (!haveCudnnAttention())
    GTEST_SKIP() << "built without the cudnn-frontend headers";
  check(Dtype::bf16, true, false, /*documents=*/true);
  check(Dtype::bf16, true, true, /*documents=*/true);
}

} // namespace
