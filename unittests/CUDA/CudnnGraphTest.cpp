//===- CudnnGraphTest.cpp - titan's cuDNN SDPA graphs, without a GPU ------===//
//
// Validates every cuDNN SDPA graph titan builds (CudnnGraphs.h's builder,
// the runtime's own) for sm_90 with no device and no cuDNN handle: the
// forward, the backward and the deterministic backward of titan.attention,
// and context parallel's chunk pairs (contextAttentionPairs, the runtime's
// own), at the parity model's, the debug model's and the 8B model's shapes
// (also with TorchTitan's block-causal mask) and at 128K context parallel
// over 8 and 16 ranks. validate() checks the
// graph's shapes, strides, types and the SDPA support surface for the
// target, and lowering it to cuDNN's backend operation graph needs no
// handle either; choosing an engine does (without a GPU cuDNN's heuristics
// find no engine configs), as does the engine's workspace.
//
//===----------------------------------------------------------------------===//

#include "CudnnGraphs.h"

#include "ContextParallel.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

using namespace titanrt;
using namespace titanrt::cuda;

namespace {

constexpr int kHopper = 90;

struct NamedShape {
  const char *name;
  AttentionShape shape;
};

/// titan.attention's shapes: the GPU parity model (test/Integration/Inputs/
/// parity*.toml), the debug model (B 8, S 2048, 16 heads of 16) and the 8B
/// model (B 1, S 8192, 32 query and 8 kv heads of 128).
const NamedShape kModels[] = {{"parity", {4, 32, 4, 2, 16}},
                              {"debugmodel", {8, 2048, 16, 16, 16}},
                              {"8B", {1, 8192, 32, 8, 128}}};

double scaleOf(const AttentionShape &s) {
  return 1.0 / std::sqrt(double(s.headDim));
}

/// The forward, the backward and the deterministic backward of `s` on
/// `views`, each in bf16 and f16.
std::vector<SdpaProblem> allPasses(const AttentionShape &s,
                                   const SdpaViews &views) {
  std::vector<SdpaProblem> problems;
  for (Dtype type : {Dtype::bf16, Dtype::f16})
    for (auto [backward, deterministic] :
         {std::pair(false, false), {true, false}, {true, true}})
      problems.push_back({backward, deterministic, type, s, views, scaleOf(s)});
  return problems;
}

void expectValid(const std::vector<SdpaProblem> &problems) {
  for (const SdpaProblem &p : problems)
    EXPECT_EQ(validateSdpaGraph(p, kHopper), "") << describe(p);
}

/// Every distinct SDPA problem context parallel runs at `seq` global rows
/// over `degree` ranks (B 1, the 8B model's heads): each rank's pairs with
/// the all-gathered K/V and with each step of the ring's.
std::map<decltype(SdpaProblem().key()), SdpaProblem>
contextParallelProblems(int64_t seq, int64_t degree) {
  int64_t local = seq / degree;
  AttentionShape s{1, local, 32, 8, 128};
  AttentionShape pair{1, local / 2, 32, 8, 128};
  std::map<decltype(SdpaProblem().key()), SdpaProblem> problems;
  for (int64_t rank = 0; rank < degree; ++rank)
    for (int64_t kvShift = -1; kvShift < degree; ++kvShift) {
      ChunkLayout layout = loadBalancedLayout(rank, degree, kvShift, local);
      for (bool backward : {false, true})
        for (const ContextPair &cp : contextAttentionPairs(s, layout, backward))
          for (const SdpaProblem &p : allPasses(pair, cp.views))
            if (p.backward == backward)
              problems.emplace(p.key(), p);
    }
  return problems;
}

TEST(CudnnGraph, WholeSequenceGraphsValidate) {
  for (const NamedShape &m : kModels) {
    SCOPED_TRACE(m.name);
    expectValid(allPasses(m.shape, SdpaViews::whole(m.shape.seq)));
  }
}

// TorchTitan's block-causal mask (flex/varlen attention): the document
// starts reach cuDNN's SDPA as a score modifier, which replaces its causal
// mask, forward and backward.
TEST(CudnnGraph, DocumentMaskedGraphsValidate) {
  for (const NamedShape &m : kModels) {
    SCOPED_TRACE(m.name);
    std::vector<SdpaProblem> problems =
        allPasses(m.shape, SdpaViews::whole(m.shape.seq));
    for (SdpaProblem &p : problems) {
      p.documents = true;
      p.documentSeq = m.shape.seq;
    }
    expectValid(problems);
  }
  AttentionShape s = kModels[1].shape;
  SdpaProblem p{false,
                false,
                Dtype::bf16,
                s,
                SdpaViews::whole(s.seq),
                scaleOf(s),
                /*documents=*/true,
                /*documentSeq=*/s.seq};
  EXPECT_NE(describe(p).find(", block-causal by document"), std::string::npos);
}

// The mask on context parallel's chunk pairs at 128K over 8 ranks: the
// same graphs with the starts (rows of the whole 131072) and the pair's
// positions as inputs, so pairs of one shape share a graph.
TEST(CudnnGraph, DocumentMaskedContextParallelGraphsValidate) {
  auto problems = contextParallelProblems(131072, 8);
  std::map<decltype(SdpaProblem().key()), SdpaProblem> masked;
  for (auto &[key, p] : problems) {
    SdpaProblem d = p;
    d.documents = true;
    d.documentSeq = 131072;
    masked.emplace(d.key(), d);
  }
  EXPECT_EQ(masked.size(), problems.size());
  for (auto &[key, p] : masked)
    EXPECT_EQ(validateSdpaGraph(p, kHopper), "") << describe(p);
}

TEST(CudnnGraph, ContextParallel128KGraphsValidate) {
  for (int64_t degree : {8, 16}) {
    SCOPED_TRACE("cp " + std::to_string(degree));
    auto problems = contextParallelProblems(131072, degree);
    int diagonal = 0, offDiagonal = 0, partial = 0;
    for (auto &[key, p] : problems) {
      EXPECT_EQ(p.shape.seq, 131072 / degree / 2);
      (p.views.causal ? diagonal : offDiagonal) += 1;
      partial += p.views.outRows == p.shape.seq ||
                 p.views.queryGradRows == p.shape.seq ||
                 p.views.keyGradRows == p.shape.seq;
    }
    // Causal diagonal pairs, unmasked off-diagonal ones, and partials.
    EXPECT_GT(diagonal, 0);
    EXPECT_GT(offDiagonal, 0);
    EXPECT_GT(partial, 0);
    std::printf("cp %lld: %zu distinct SDPA graphs\n",
                static_cast<long long>(degree), problems.size());
    for (auto &[key, p] : problems)
      EXPECT_EQ(validateSdpaGraph(p, kHopper), "") << describe(p);
  }
}

/// Rank 0 of 2, its own K/V (ring step 0): query and key chunks at
/// positions 0 and 3c.
TEST(CudnnGraph, ContextPairsOfOneRank) {
  int64_t c = 4;
  AttentionShape s{1, 2 * c, 4, 2, 16};
  ChunkLayout layout = loadBalancedLayout(0, 2, 0, 2 * c);
  std::vector<ContextPair> forward = contextAttentionPairs(s, layout, false);
  ASSERT_EQ(forward.size(), 3u);
  // Query chunk 1 sees key chunk 0 whole, then its diagonal as a partial.
  EXPECT_TRUE(forward[0].views.causal);
  EXPECT_FALSE(forward[0].partialQuery);
  EXPECT_EQ(forward[1].queryChunk, 1);
  EXPECT_EQ(forward[1].keyChunk, 0);
  EXPECT_FALSE(forward[1].views.causal);
  EXPECT_FALSE(forward[1].partialQuery);
  EXPECT_EQ(forward[1].views.outRows, 2 * c);
  EXPECT_TRUE(forward[2].views.causal);
  EXPECT_TRUE(forward[2].partialQuery);
  EXPECT_EQ(forward[2].views.outRows, c);
  EXPECT_EQ(forward[2].views.lseRows, c);

  std::vector<ContextPair> backward = contextAttentionPairs(s, layout, true);
  ASSERT_EQ(backward.size(), 3u);
  // Key chunk outer: (0, 0), (1, 0) adds into dK/dV 0, (1, 1) into dQ 1.
  EXPECT_FALSE(backward[0].partialQuery || backward[0].partialKey);
  // cuDNN before 9.26 takes only a packed log-sum-exp in the backward.
  for (const ContextPair &pair : backward)
    EXPECT_EQ(pair.views.lseRows, c);
  EXPECT_EQ(backward[1].queryChunk, 1);
  EXPECT_FALSE(backward[1].partialQuery);
  EXPECT_TRUE(backward[1].partialKey);
  EXPECT_EQ(backward[1].views.keyGradRows, c);
  EXPECT_EQ(backward[1].views.queryGradRows, 2 * c);
  EXPECT_TRUE(backward[2].partialQuery);
  EXPECT_FALSE(backward[2].partialKey);
  EXPECT_EQ(backward[2].views.queryGradRows, c);
  EXPECT_EQ(backward[2].views.keyGradRows, 2 * c);
}

/// A head dim cuDNN does not take: titan's message names the problem and
/// carries cuDNN's reason.
TEST(CudnnGraph, UnsupportedHeadDimIsReported) {
  AttentionShape s{1, 8192, 32, 8, 300};
  SdpaProblem p{false,     false, Dtype::bf16, s, SdpaViews::whole(s.seq),
                scaleOf(s)};
  std::string error = validateSdpaGraph(p, kHopper);
  EXPECT_NE(error.find("cuDNN cannot run the flash-attention forward of B 1 "
                       "S 8192 Hq 32 Hkv 8 D 300 bf16: cuDNN says: "),
            std::string::npos)
      << error;
  std::printf("head dim 300: %s\n", error.c_str());
}

} // namespace
