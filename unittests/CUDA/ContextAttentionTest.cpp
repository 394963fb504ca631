//===- ContextAttentionTest.cpp - GPU context attention vs the CPU's ------===//
//
// context_attention, context_attention_grad and attention_merge on the GPU
// against the CPU target's kernels (runtime/lib/Attention.cpp) on the same
// (rounded) inputs, on every cp rank of a load-balanced layout, for the
// all-gathered K/V and every ring shift: the exact kernels in f32 and, in
// bf16, cuDNN's SDPA per pair of chunks (or the exact kernels in a build
// without cuDNN), to DeviceTestUtils' tolerances. The backward takes the
// final out and lse (the CPU's all-gathered forward), as the ring does; the
// ring's partials merged on the GPU match the CPU's merge. With TorchTitan's
// block-causal mask (documents that cross chunk and rank boundaries, so
// that some pairs have rows that see none of their keys) both sides take
// the same whole-sequence starts.
//
//===----------------------------------------------------------------------===//

#include "Attention.h"
#include "ContextParallel.h"

#include "DeviceTestUtils.h"
#include "Kernels.h"

#include "titan/Contract/CPUWorkspaces.h"
#include "titan/Contract/CUDAWorkspaces.h"

#include "gtest/gtest.h"

#include <cmath>
#include <string>
#include <vector>

using namespace titanrt;
using namespace titanrt::cuda;
using namespace titanrt::cuda::test;

namespace {

struct Case {
  int64_t degree, chunk, batch, qHeads, kvHeads, headDim;
  int64_t local() const { return 2 * chunk; }
};
// Head dims cuDNN takes, chunks under and across 64 rows, GQA.
const Case kCases[] = {{1, 37, 2, 4, 2, 16},
                       {2, 24, 1, 2, 2, 64},
                       {2, 70, 1, 8, 2, 128},
                       {4, 16, 2, 4, 1, 32}};

/// Rows [first, first + rows) of a B x seq x width tensor.
std::vector<float> slice(const std::vector<float> &x, int64_t batch,
                         int64_t seq, int64_t width, int64_t first,
                         int64_t rows) {
  std::vector<float> out;
  for (int64_t b = 0; b < batch; ++b)
    out.insert(out.end(), x.begin() + (b * seq + first) * width,
               x.begin() + (b * seq + first + rows) * width);
  return out;
}

/// The CPU kernels' forward of one K/V buffer.
std::pair<std::vector<float>, std::vector<float>>
cpuForward(const Case &c, const ChunkLayout &layout,
           const std::vector<float> &q, const std::vector<float> &k,
           const std::vector<float> &v, double scale,
           const DocumentStarts &docs) {
  std::vector<float> out(q.size()), lse(size_t(c.batch * c.qHeads * c.local()));
  std::vector<float> ws(size_t(titan::cpu::contextAttentionWorkspaceBytes(
                            c.batch, c.qHeads, c.local(), 4)) /
                        4);
  kernels::contextAttention(q.data(), k.data(), v.data(), out.data(),
                            lse.data(), c.batch, c.qHeads, c.kvHeads, c.headDim,
                            layout, scale, ws.data(), docs);
  return {out, lse};
}

void check(Dtype t, bool deterministic = false, bool documents = false) {
  CudnnAttention cudnn;
  for (const Case &c : kCases) {
    double scale = 1.0 / std::sqrt(double(c.headDim));
    int64_t qWidth = c.qHeads * c.headDim, kvWidth = c.kvHeads * c.headDim;
    int64_t gathered = c.degree * c.local();
    AttentionShape s{c.batch, c.local(), c.qHeads, c.kvHeads, c.headDim};
    size_t fwdBytes = size_t(titan::cuda::contextAttentionWorkspaceBytes(
        c.batch, c.qHeads, c.local(), c.headDim));
    size_t bwdBytes = size_t(titan::cuda::contextAttentionGradWorkspaceBytes(
        c.batch, c.qHeads, c.kvHeads, c.local(), c.headDim, deterministic));
    DeviceBuffer workspace(std::max(fwdBytes, bwdBytes) / 4 + 1, Dtype::f32);
    double absolute = t == Dtype::f32 ? 1e-6 : 2e-2;
    // Every rank's K/V in rank order: the all-gathered buffer, whose slices
    // are the ring's.
    std::vector<float> kAll =
        rounded(random(size_t(c.batch * gathered * kvWidth), 2, -2, 2), t);
    std::vector<float> vAll =
        rounded(random(size_t(c.batch * gathered * kvWidth), 3), t);
    std::vector<int32_t> starts =
        documents ? randomStarts(c.batch, gathered, c.chunk, 4)
                  : std::vector<int32_t>();
    DeviceArray<int32_t> gpuStarts(starts);
    DocumentStarts cpuDocs;
    DeviceDocuments gpuDocs;
    if (documents) {
      cpuDocs = {starts.data(), gathered};
      gpuDocs = {gpuStarts.ptr, gathered};
    }
    for (int64_t rank = 0; rank < c.degree; ++rank) {
      SCOPED_TRACE("cp " + std::to_string(c.degree) + " rank " +
                   std::to_string(rank) + " chunk " + std::to_string(c.chunk) +
                   " B " + std::to_string(c.batch) + " Hq " +
                   std::to_string(c.qHeads) + " Hkv " +
                   std::to_string(c.kvHeads) + " D " +
                   std::to_string(c.headDim));
      size_t qn = size_t(c.batch * c.local() * qWidth);
      std::vector<float> q = rounded(random(qn, 10 + uint32_t(rank), -2, 2), t);
      std::vector<float> dout = rounded(random(qn, 20 + uint32_t(rank)), t);
      DeviceBuffer gpuQ(q, t), gpuDout(dout, t);
      // The final out and lse: the all-gathered forward's.
      auto [finalOut, finalLse] =
          cpuForward(c, loadBalancedLayout(rank, c.degree, -1, c.local()), q,
                     kAll, vAll, scale, cpuDocs);
      finalOut = rounded(finalOut, t);
      DeviceBuffer gpuFinalOut(finalOut, t), gpuFinalLse(finalLse, Dtype::f32);
      DeviceBuffer merged(qn, t), mergedLse(finalLse.size(), Dtype::f32);
      std::vector<float> cpuMerged, cpuMergedLse;
      for (int64_t shift = -1; shift < c.degree; ++shift) {
        SCOPED_TRACE("kv_shift " + std::to_string(shift));
        ChunkLayout layout =
            loadBalancedLayout(rank, c.degree, shift, c.local());
        int64_t owner = shift < 0 ? 0 : layout.keyStarts[0] / c.chunk;
        int64_t keySeq = layout.keySeq();
        std::vector<float> k =
            slice(kAll, c.batch, gathered, kvWidth, owner * c.local(), keySeq);
        std::vector<float> v =
            slice(vAll, c.batch, gathered, kvWidth, owner * c.local(), keySeq);
        auto [out, lse] = cpuForward(c, layout, q, k, v, scale, cpuDocs);
        DeviceBuffer gpuK(k, t), gpuV(v, t), gotOut(qn, t),
            gotLse(lse.size(), Dtype::f32);
        contextAttention(cudnn, t, gpuQ.ptr, gpuK.ptr, gpuV.ptr, gotOut.ptr,
                         static_cast<float *>(gotLse.ptr), s, layout, scale,
                         workspace.ptr, fwdBytes, nullptr, gpuDocs);
        expectClose(gotOut.read(), out, t, absolute, "out");
        expectClose(gotLse.read(), lse, Dtype::f32,
                    t == Dtype::f32 ? 1e-6 : 1e-2, "lse");

        // The backward of this K/V buffer from the final out and lse.
        std::vector<float> dq(qn), dk(k.size()), dv(v.size());
        std::vector<float> ws(
            size_t(titan::cpu::contextAttentionGradWorkspaceBytes(
                c.batch, c.kvHeads, c.local(), 4)) /
            4);
        kernels::contextAttentionGrad(
            q.data(), k.data(), v.data(), finalOut.data(), finalLse.data(),
            dout.data(), dq.data(), dk.data(), dv.data(), c.batch, c.qHeads,
            c.kvHeads, c.headDim, layout, scale, ws.data(), cpuDocs);
        DeviceBuffer gotDq(qn, t), gotDk(k.size(), t), gotDv(v.size(), t);
        contextAttentionGrad(
            cudnn, t, gpuQ.ptr, gpuK.ptr, gpuV.ptr, gpuFinalOut.ptr,
            static_cast<float *>(gpuFinalLse.ptr), gpuDout.ptr, gotDq.ptr,
            gotDk.ptr, gotDv.ptr, s, layout, scale, deterministic,
            workspace.ptr, bwdBytes, nullptr, gpuDocs);
        expectClose(gotDq.read(), dq, t, absolute, "dq");
        expectClose(gotDk.read(), dk, t, absolute, "dk");
        expectClose(gotDv.read(), dv, t, absolute, "dv");

        // The ring's partials merged, on both sides, from the same ones.
        if (shift < 0)
          continue;
        DeviceBuffer part(rounded(out, t), t), partLse(lse, Dtype::f32);
        PartialView into{merged.ptr, static_cast<float *>(mergedLse.ptr),
                         c.local(), c.local()};
        PartialView from{part.ptr, static_cast<float *>(partLse.ptr), c.local(),
                         c.local()};
        std::vector<float> partOut = rounded(out, t);
        if (shift == 0) {
          attentionMerge(t, from, {nullptr, nullptr, 0, 0}, into, s, nullptr);
          cpuMerged = partOut, cpuMergedLse = lse;
          continue;
        }
        attentionMerge(t, into, from, into, s, nullptr);
        kernels::attentionMerge(cpuMerged.data(), cpuMergedLse.data(),
                                partOut.data(), lse.data(), cpuMerged.data(),
                                cpuMergedLse.data(), c.batch, c.local(),
                                c.qHeads, c.headDim);
        cpuMerged = rounded(cpuMerged, t);
      }
      expectClose(merged.read(), cpuMerged, t, absolute, "merged ring out");
      expectClose(mergedLse.read(), cpuMergedLse, Dtype::f32, 1e-6,
                  "merged ring lse");
    }
  }
}

TEST(ContextAttention, ExactKernelsF32) { check(Dtype::f32); }
TEST(ContextAttention, PairsBF16) { check(Dtype::bf16); }
TEST(ContextAttention, PairsBF16Deterministic) { check(Dtype::bf16, true); }
TEST(ContextAttention, DocumentMaskedExactKernelsF32) {
  check(Dtype::f32, false, /*documents=*/true);
}
TEST(ContextAttention, DocumentMaskedPairsBF16) {
  check(Dtype::bf16, false, /*documents=*/true);
}

} // namespace
