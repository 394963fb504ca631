//===- CostModelTest.cpp - the cost model's parts against hand arithmetic -===//
//
// Placement of mesh groups on nodes (TorchTitan's published layouts), the
// NCCL collective formulas on a made-up machine with round numbers (the
// arithmetic is in each comment), kernel work of GEMMs and attention from
// parsed kernel IR, the step walk's overlap accounting, and hardware TOML
// files.
//
//===----------------------------------------------------------------------===//

#include "titan/Cost/CollectiveCost.h"
#include "titan/Cost/Hardware.h"
#include "titan/Cost/KernelCost.h"
#include "titan/Cost/StepCost.h"
#include "titan/Dialect/Kernel/IR/Kernel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace titan;
using namespace titan::cost;

namespace {

// Mesh axis bits: pp 1, dp_replicate 2, dp_shard 4, cp 8, tp 16.
constexpr unsigned kPP = 1, kDPShard = 4, kTP = 16;

void expectPlacement(GroupPlacement g, int64_t size, int64_t nodes,
                     int64_t perNode) {
  EXPECT_EQ(g.size, size);
  EXPECT_EQ(g.nodes, nodes);
  EXPECT_EQ(g.perNode, perNode);
}

TEST(CostPlacement, TorchTitanLayouts) {
  // 70B: FSDP 32 x TP 8 on 256 GPUs, 8 per node: tp (innermost) fills a
  // node; dp_shard strides by 8, one rank on each of 32 nodes.
  std::vector<int64_t> llama70b = {1, 1, 32, 1, 8};
  expectPlacement(placeGroup(llama70b, kTP, 8), 8, 1, 8);
  expectPlacement(placeGroup(llama70b, kDPShard, 8), 32, 32, 1);
  expectPlacement(placeGroup(llama70b, kDPShard | kTP, 8), 256, 32, 8);
  // 8B: FSDP 128: 16 nodes of 8.
  expectPlacement(placeGroup({1, 1, 128, 1, 1}, kDPShard, 8), 128, 16, 8);
  // 405B: PP 8 x FSDP 8 x TP 8 on 512 GPUs: pp strides by 64 ranks.
  std::vector<int64_t> llama405b = {8, 1, 8, 1, 8};
  expectPlacement(placeGroup(llama405b, kPP, 8), 8, 8, 1);
  expectPlacement(placeGroup(llama405b, kDPShard, 8), 8, 8, 1);
  expectPlacement(placeGroup(llama405b, kTP, 8), 8, 1, 8);
  // Axes of degree 1 and a machine with room for everything.
  expectPlacement(placeGroup({1, 1, 4, 1, 2}, kPP, 8), 1, 1, 1);
  expectPlacement(placeGroup({1, 1, 4, 1, 2}, kDPShard, 64), 4, 1, 4);
}

/// Round numbers: NVLink bus 100 GB/s with 1 us steps, 10 GB/s NICs with
/// 5 us steps, 8 devices per node.
Hardware testMachine() {
  Hardware hw;
  hw.name = "test";
  hw.peakFlopsF32 = hw.peakFlopsBF16 = 1e12;
  hw.gemmEfficiency = 0.5;
  hw.gemmHalfFlops = 0;
  hw.attentionForwardEfficiency = 0.25;
  hw.attentionBackwardEfficiency = 0.2;
  hw.memoryBytes = 1e9;
  hw.memoryBytesPerSecond = 1e6;
  hw.memoryEfficiency = 1;
  hw.kernelOverheadSeconds = 0;
  hw.devicesPerNode = 8;
  hw.intraNodeBusBytesPerSecond = 100e9;
  hw.intraNodeLatencySeconds = 1e-6;
  hw.interNodeBytesPerSecond = 10e9;
  hw.interNodeLatencySeconds = 5e-6;
  return hw;
}

TEST(CostCollective, RingFormulas) {
  Hardware hw = testMachine();
  GroupPlacement node{8, 1, 8};
  // all_gather of 80 MB in a node: 7 steps of (10 MB / 100 GB/s + 1 us)
  // = 7 x 101 us = 707 us.
  CollectiveEstimate ag =
      collectiveSeconds(CollectiveKind::AllGather, 80e6, node, hw);
  EXPECT_NEAR(ag.seconds, 707e-6, 1e-12);
  EXPECT_EQ(ag.algorithm, "ring");
  EXPECT_NEAR(
      collectiveSeconds(CollectiveKind::ReduceScatter, 80e6, node, hw).seconds,
      707e-6, 1e-12);
  // all_reduce: twice the steps, 1414 us (no tree inside a node).
  CollectiveEstimate ar =
      collectiveSeconds(CollectiveKind::AllReduce, 80e6, node, hw);
  EXPECT_NEAR(ar.seconds, 1414e-6, 1e-12);
  EXPECT_EQ(ar.algorithm, "ring");
  // One rank per node on 4 nodes: the NIC's 10 GB/s, 5 us steps: 3 x
  // (10 MB / 10 GB/s + 5 us) = 3 x 1005 us = 3015 us.
  EXPECT_NEAR(
      collectiveSeconds(CollectiveKind::AllGather, 40e6, {4, 4, 1}, hw).seconds,
      3015e-6, 1e-12);
  // 16 ranks, 8 on each of 2 nodes: min(100, 8 x 10) = 80 GB/s; 15 steps
  // of 16 MB / 16 / 80 GB/s = 12.5 us; of the 15, nNodes - 1 = 1 crosses
  // the network (5 us), 14 stay inside a node (1 us), as NCCL's tuning
  // model charges a ring: 187.5 + 5 + 14 = 206.5 us.
  EXPECT_NEAR(collectiveSeconds(CollectiveKind::AllGather, 16e6, {16, 2, 8}, hw)
                  .seconds,
              206.5e-6, 1e-12);
  // all_reduce over the same group: 2 x 15 steps, 2 x (2 - 1) of them
  // across: 375 + 10 + 28 = 413 us (the tree, 2 x 187.5 / 0.9 + 2 x 1 x 5 +
  // 2 x 7 x 1 = 440.7 us, is slower).
  CollectiveEstimate across =
      collectiveSeconds(CollectiveKind::AllReduce, 16e6, {16, 2, 8}, hw);
  EXPECT_NEAR(across.seconds, 413e-6, 1e-12);
  EXPECT_EQ(across.algorithm, "ring");
  // send/recv across nodes: 1 MB / 10 GB/s + 5 us = 105 us; inside a
  // node 1 MB / 100 GB/s + 1 us = 11 us.
  CollectiveEstimate p2p =
      collectiveSeconds(CollectiveKind::SendRecv, 1e6, {8, 8, 1}, hw);
  EXPECT_NEAR(p2p.seconds, 105e-6, 1e-12);
  EXPECT_EQ(p2p.algorithm, "p2p");
  EXPECT_NEAR(
      collectiveSeconds(CollectiveKind::SendRecv, 1e6, {2, 1, 2}, hw).seconds,
      11e-6, 1e-12);
  // all_to_all of 8 MB in a node: 7/8 x 8 MB / 100 GB/s + 7 x 1 us = 77 us.
  EXPECT_NEAR(
      collectiveSeconds(CollectiveKind::AllToAll, 8e6, node, hw).seconds, 77e-6,
      1e-12);
  // broadcast: 8 MB / 100 GB/s + 7 x 1 us = 87 us.
  EXPECT_NEAR(
      collectiveSeconds(CollectiveKind::Broadcast, 8e6, node, hw).seconds,
      87e-6, 1e-12);
  // A group of one moves nothing.
  EXPECT_EQ(
      collectiveSeconds(CollectiveKind::AllReduce, 8e6, {1, 1, 1}, hw).seconds,
      0);
}

TEST(CostCollective, TreeForSmallAllReduceAcrossNodes) {
  Hardware hw = testMachine();
  GroupPlacement nodes{8, 8, 1};
  // 1 MB over 8 nodes: ring 14 x (125 KB / 10 GB/s + 5 us) = 14 x 17.5 us
  // = 245 us; tree 2 x 7/8 x 1 MB / (0.9 x 10 GB/s) + 2 x log2(8) x 5 us
  // = 194.44 us + 30 us = 224.44 us: the tree.
  CollectiveEstimate small =
      collectiveSeconds(CollectiveKind::AllReduce, 1e6, nodes, hw);
  EXPECT_EQ(small.algorithm, "tree");
  EXPECT_NEAR(small.seconds, 1.75e6 / 9e9 + 30e-6, 1e-12);
  // 1 GB: ring 14 x (12.5 ms + 5 us) = 175.07 ms; tree 194.44 ms + 30 us:
  // the ring.
  CollectiveEstimate large =
      collectiveSeconds(CollectiveKind::AllReduce, 1e9, nodes, hw);
  EXPECT_EQ(large.algorithm, "ring");
  EXPECT_NEAR(large.seconds, 14 * (12.5e-3 + 5e-6), 1e-12);
}

TEST(CostCollective, Kinds) {
  EXPECT_EQ(collectiveKind("all_gather_start"), CollectiveKind::AllGather);
  EXPECT_EQ(collectiveKind("reduce_scatter_start"),
            CollectiveKind::ReduceScatter);
  EXPECT_EQ(collectiveKind("all_reduce_start"), CollectiveKind::AllReduce);
  EXPECT_EQ(collectiveKind("all_to_all_start"), CollectiveKind::AllToAll);
  EXPECT_EQ(collectiveKind("broadcast_start"), CollectiveKind::Broadcast);
  EXPECT_EQ(collectiveKind("send_recv_start"), CollectiveKind::SendRecv);
  EXPECT_EQ(collectiveKind("all_gather_linear"), CollectiveKind::AllGather);
  EXPECT_EQ(collectiveKind("linear_reduce_scatter"),
            CollectiveKind::ReduceScatter);
  EXPECT_EQ(collectiveKind("silu"), std::nullopt);
  EXPECT_EQ(axesName(kDPShard | kTP), "dp_shard,tp");
  EXPECT_EQ(axesName(kPP), "pp");
}

class CostIRTest : public ::testing::Test {
protected:
  CostIRTest() {
    context.loadDialect<func::FuncDialect, kernel::KernelDialect>();
  }

  func::FuncOp parse(StringRef source) {
    module = parseSourceString<ModuleOp>(source, &context);
    EXPECT_TRUE(module);
    if (!module)
      return {};
    return *module->getOps<func::FuncOp>().begin();
  }

  /// The calls of `func`, in order.
  std::vector<kernel::CallOp> calls(func::FuncOp func) {
    std::vector<kernel::CallOp> out;
    func.walk([&](kernel::CallOp call) { out.push_back(call); });
    return out;
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
};

TEST_F(CostIRTest, GemmAndAttentionWork) {
  func::FuncOp f = parse(R"mlir(
func.func @work(%x: memref<4x8x64xbf16>, %w: memref<128x64xbf16>,
                %y: memref<4x8x128xbf16>, %g: memref<32x128xf32>,
                %i: memref<32x64xf32>, %dw: memref<128x64xf32>,
                %q: memref<2x16x4x8xf32>, %k: memref<2x16x2x8xf32>,
                %v: memref<2x16x2x8xf32>, %o: memref<2x16x4x8xf32>,
                %lse: memref<2x4x16xf32>, %dq: memref<2x16x4x8xf32>,
                %dk: memref<2x16x2x8xf32>, %dv: memref<2x16x2x8xf32>) {
  %s = kernel.stream 0
  kernel.call "linear"(%x, %w : memref<4x8x64xbf16>, memref<128x64xbf16>) outs(%y : memref<4x8x128xbf16>) on %s params []
  kernel.call "linear_grad_weight"(%g, %i : memref<32x128xf32>, memref<32x64xf32>) outs(%dw : memref<128x64xf32>) on %s params []
  kernel.call "attention"(%q, %k, %v : memref<2x16x4x8xf32>, memref<2x16x2x8xf32>, memref<2x16x2x8xf32>) outs(%o, %lse : memref<2x16x4x8xf32>, memref<2x4x16xf32>) on %s params [0.35 : f64]
  kernel.call "attention_grad"(%q, %k, %v, %o, %lse, %o : memref<2x16x4x8xf32>, memref<2x16x2x8xf32>, memref<2x16x2x8xf32>, memref<2x16x4x8xf32>, memref<2x4x16xf32>, memref<2x16x4x8xf32>) outs(%dq, %dk, %dv : memref<2x16x4x8xf32>, memref<2x16x2x8xf32>, memref<2x16x2x8xf32>) on %s params [0.35 : f64, 0]
  kernel.call "silu"(%g : memref<32x128xf32>) outs(%g : memref<32x128xf32>) on %s params []
  return
}
)mlir");
  ASSERT_TRUE(f);
  std::vector<kernel::CallOp> c = calls(f);
  ASSERT_EQ(c.size(), 5u);
  // linear: M 32 (4 x 8), K 64, N 128: 2 x 32 x 128 x 64 = 524288 FLOPs;
  // bytes (2048 + 8192 + 4096) x 2.
  KernelWork linear = kernelWork(c[0]);
  EXPECT_EQ(linear.unit, WorkUnit::Gemm);
  EXPECT_DOUBLE_EQ(linear.flops, 524288);
  EXPECT_DOUBLE_EQ(linear.bytes, 28672);
  EXPECT_EQ(linear.precision, KernelWork::Precision::BF16);
  // grad_weight: the same GEMM shape, f32.
  KernelWork gradWeight = kernelWork(c[1]);
  EXPECT_DOUBLE_EQ(gradWeight.flops, 524288);
  EXPECT_EQ(gradWeight.precision, KernelWork::Precision::F32);
  // attention B 2, S 16, Hq 4, D 8, causal: 4 x B Hq S S D / 2 = 32768;
  // the backward 2.5 x that.
  KernelWork fwd = kernelWork(c[2]);
  EXPECT_EQ(fwd.unit, WorkUnit::AttentionForward);
  EXPECT_DOUBLE_EQ(fwd.flops, 32768);
  KernelWork bwd = kernelWork(c[3]);
  EXPECT_EQ(bwd.unit, WorkUnit::AttentionBackward);
  EXPECT_DOUBLE_EQ(bwd.flops, 81920);
  // silu in place: reads and writes 16 KiB.
  KernelWork silu = kernelWork(c[4]);
  EXPECT_EQ(silu.unit, WorkUnit::Memory);
  EXPECT_DOUBLE_EQ(silu.flops, 0);
  EXPECT_DOUBLE_EQ(silu.bytes, 32768);

  // Times on the test machine: memory 16 KiB x 2 / 1 MB/s; the GEMM
  // max(524288 / (1e12 x 0.5), 28672 / 1e6) = 28.672 ms (memory-bound at
  // this bandwidth).
  Hardware hw = testMachine();
  EXPECT_DOUBLE_EQ(kernelSeconds(silu, hw), 32768 / 1e6);
  EXPECT_DOUBLE_EQ(kernelSeconds(linear, hw), 28672 / 1e6);
  hw.memoryBytesPerSecond = 1e15;
  EXPECT_DOUBLE_EQ(kernelSeconds(linear, hw),
                   std::max(524288 / 0.5e12, 28672 / 1e15));
  EXPECT_DOUBLE_EQ(kernelSeconds(fwd, hw), 32768 / 0.25e12);
  // Two ranks sharing a CPU node's compute each run at half the rate.
  hw.ranksShareCompute = true;
  EXPECT_DOUBLE_EQ(kernelSeconds(fwd, hw, 2), 2 * 32768 / 0.25e12);
}

TEST(CostKernel, GemmEfficiencyCurveIsMonotone) {
  for (const Hardware &hw : builtinHardware()) {
    double lastRate = 0;
    for (double flops = 1e6; flops <= 1e13; flops *= 4) {
      KernelWork work;
      work.unit = WorkUnit::Gemm;
      work.precision = KernelWork::Precision::BF16;
      work.flops = flops;
      double rate =
          flops / (kernelSeconds(work, hw) - hw.kernelOverheadSeconds);
      EXPECT_GT(rate, lastRate) << hw.name << " at " << flops;
      EXPECT_LE(rate, hw.peakFlopsBF16 * hw.gemmEfficiency * (1 + 1e-12));
      lastRate = rate;
    }
    // A large GEMM reaches (almost) the efficiency.
    EXPECT_GT(lastRate, 0.99 * hw.peakFlopsBF16 * hw.gemmEfficiency) << hw.name;
  }
}

/// A collective over tp (mask 16, 8 ranks in a node) started before two
/// silu calls and waited after them, then one more call.
constexpr const char *kOverlapped = R"mlir(
func.func @step(%p: memref<4x8xf32>, %a: memref<16x8xf32>, %b: memref<16x8xf32>) {
  %s17 = kernel.stream 17
  %s = kernel.stream 0
  %g = kernel.alloc collective : memref<32x8xf32>
  %r = kernel.collective_start "all_gather_start"(%p : memref<4x8xf32>) outs(%g : memref<32x8xf32>) on %s17 params [0, 0, 16] -> !kernel.request loc("layers.0.attention.wq")
  kernel.call "silu"(%a : memref<16x8xf32>) outs(%b : memref<16x8xf32>) on %s params [] loc("layers.0.feed_forward")
  kernel.call "silu"(%b : memref<16x8xf32>) outs(%a : memref<16x8xf32>) on %s params [] loc("layers.1.attention_norm")
  kernel.wait %r on %s17
  kernel.call "silu"(%a : memref<16x8xf32>) outs(%b : memref<16x8xf32>) on %s params [] loc("output")
  return
}
)mlir";

TEST_F(CostIRTest, StepOverlap) {
  func::FuncOp f = parse(kOverlapped);
  ASSERT_TRUE(f);
  std::vector<int64_t> degrees = {1, 1, 1, 1, 8};
  Hardware hw = testMachine();
  // Each silu moves 1 KiB at 1 MB/s: 1.024 ms.
  double call = 1024 / 1e6;
  GroupPlacement tp = placeGroup(degrees, kTP, hw.devicesPerNode);
  for (double latency : {1e-3, 1e-4}) {
    hw.intraNodeLatencySeconds = latency;
    // 7 x (128 B / 100 GB/s + latency): 7 ms or 0.7 ms.
    double comm =
        collectiveSeconds(CollectiveKind::AllGather, 1024, tp, hw).seconds;
    StepCost cost = costStep(f, degrees, hw);
    double exposed = std::max(0.0, comm - 2 * call);
    EXPECT_DOUBLE_EQ(cost.exposedCommSeconds["tp"], exposed);
    EXPECT_DOUBLE_EQ(cost.commSeconds["tp"], comm);
    EXPECT_DOUBLE_EQ(cost.computeSeconds, 3 * call);
    EXPECT_DOUBLE_EQ(cost.seconds, std::max(comm, 2 * call) + call);
    EXPECT_EQ(cost.units[WorkUnit::Memory].calls, 3);
    // Parts in order of first appearance.
    ASSERT_EQ(cost.parts.size(), 3u);
    EXPECT_EQ(cost.parts[0].name, "layers.0");
    EXPECT_EQ(cost.parts[1].name, "layers.1");
    EXPECT_EQ(cost.parts[2].name, "output");
    EXPECT_DOUBLE_EQ(cost.parts[0].commSeconds, comm);
    EXPECT_DOUBLE_EQ(cost.parts[0].exposedCommSeconds, exposed);
    EXPECT_DOUBLE_EQ(cost.parts[0].computeSeconds, call);
    EXPECT_EQ(cost.parts[2].calls, 1);
  }
}

TEST_F(CostIRTest, StepWaitRightAfterStartIsExposed) {
  func::FuncOp f = parse(R"mlir(
func.func @step(%p: memref<4x8xf32>, %a: memref<16x8xf32>, %b: memref<16x8xf32>) {
  %s17 = kernel.stream 17
  %s = kernel.stream 0
  %g = kernel.alloc collective : memref<32x8xf32>
  %r = kernel.collective_start "all_gather_start"(%p : memref<4x8xf32>) outs(%g : memref<32x8xf32>) on %s17 params [0, 0, 16] -> !kernel.request
  kernel.wait %r on %s17
  kernel.call "silu"(%a : memref<16x8xf32>) outs(%b : memref<16x8xf32>) on %s params []
  kernel.call "silu"(%b : memref<16x8xf32>) outs(%a : memref<16x8xf32>) on %s params []
  return
}
)mlir");
  ASSERT_TRUE(f);
  std::vector<int64_t> degrees = {1, 1, 1, 1, 8};
  Hardware hw = testMachine();
  double comm =
      collectiveSeconds(CollectiveKind::AllGather, 1024,
                        placeGroup(degrees, kTP, hw.devicesPerNode), hw)
          .seconds;
  StepCost cost = costStep(f, degrees, hw);
  EXPECT_DOUBLE_EQ(cost.exposedCommSeconds["tp"], comm);
  EXPECT_DOUBLE_EQ(cost.seconds, comm + 2 * 1024 / 1e6);
  ASSERT_EQ(cost.parts.size(), 1u); // the unnamed ops: "other"
  EXPECT_EQ(cost.parts[0].name, "other");
}

TEST_F(CostIRTest, CollectiveMatmulsCountEveryGemm) {
  // Sums of several GEMMs read their (lhs, weight) pairs and the Float8
  // rings their quads: a reduce-scatter of two [2, 16, 16] x [8, 16]^T
  // GEMMs, the float8 gather feeding two [16, 8] weights, and two float8
  // GEMMs summed and scattered.
  func::FuncOp f = parse(R"mlir(
func.func @step(%r: memref<2x16x16xf32>, %w2: memref<8x16xf32>, %o: memref<2x4x8xf32>,
                %x8: memref<2x4x8xf8E4M3FN>, %s: memref<f32>, %w8: memref<16x8xf8E4M3FN>,
                %g8: memref<2x16x8xf8E4M3FN>, %y: memref<2x16x16xbf16>,
                %r8: memref<2x16x16xf8E4M3FN>, %v8: memref<8x16xf8E4M3FN>, %ob: memref<2x4x8xbf16>) {
  %st = kernel.stream 0
  kernel.call "linear_reduce_scatter"(%r, %w2, %r, %w2 : memref<2x16x16xf32>, memref<8x16xf32>, memref<2x16x16xf32>, memref<8x16xf32>) outs(%o : memref<2x4x8xf32>) on %st params [2, 1, 0, 16, 0]
  kernel.call "all_gather_scaled_matmul"(%x8, %s, %w8, %s, %w8, %s : memref<2x4x8xf8E4M3FN>, memref<f32>, memref<16x8xf8E4M3FN>, memref<f32>, memref<16x8xf8E4M3FN>, memref<f32>) outs(%g8, %y, %y : memref<2x16x8xf8E4M3FN>, memref<2x16x16xbf16>, memref<2x16x16xbf16>) on %st params [2, 1, 0, 16, 0, 0, 0]
  kernel.call "scaled_matmul_reduce_scatter"(%r8, %s, %v8, %s, %r8, %s, %v8, %s : memref<2x16x16xf8E4M3FN>, memref<f32>, memref<8x16xf8E4M3FN>, memref<f32>, memref<2x16x16xf8E4M3FN>, memref<f32>, memref<8x16xf8E4M3FN>, memref<f32>) outs(%ob : memref<2x4x8xbf16>) on %st params [2, 1, 0, 16, 1, 0, 0, 0]
  return
}
)mlir");
  ASSERT_TRUE(f);
  std::vector<kernel::CallOp> c = calls(f);
  ASSERT_EQ(c.size(), 3u);
  // Each GEMM: 2 x 512 x 8 = 8192 FLOPs (M 32, N 16, K 8 for the gather's).
  for (kernel::CallOp call : c) {
    EXPECT_DOUBLE_EQ(kernelWork(call).flops, 2 * 8192);
    EXPECT_EQ(kernelWork(call).unit, WorkUnit::Gemm);
  }
  EXPECT_EQ(kernelWork(c[1]).precision, KernelWork::Precision::FP8);
  EXPECT_EQ(kernelWork(c[2]).precision, KernelWork::Precision::FP8);
  EXPECT_EQ(collectiveKind("all_gather_scaled_matmul"),
            CollectiveKind::AllGather);
  EXPECT_EQ(collectiveKind("scaled_matmul_reduce_scatter"),
            CollectiveKind::ReduceScatter);
}

TEST_F(CostIRTest, CollectiveMatmuls) {
  // Async TP over tp 4 (mask 16): gather [2, 4, 8] along dim 1 to
  // [2, 16, 8], GEMM with a [16, 8] weight; and a reduce-scatter of
  // [2, 16, 16] x [8, 16]^T back to [2, 4, 8].
  func::FuncOp f = parse(R"mlir(
func.func @step(%x: memref<2x4x8xf32>, %w: memref<16x8xf32>, %g: memref<2x16x8xf32>,
                %r: memref<2x16x16xf32>, %w2: memref<8x16xf32>, %o: memref<2x4x8xf32>) {
  %s = kernel.stream 0
  kernel.call "all_gather_linear"(%x, %w : memref<2x4x8xf32>, memref<16x8xf32>) outs(%g, %r : memref<2x16x8xf32>, memref<2x16x16xf32>) on %s params [1, 1, 0, 16]
  kernel.call "linear_reduce_scatter"(%r, %w2 : memref<2x16x16xf32>, memref<8x16xf32>) outs(%o : memref<2x4x8xf32>) on %s params [1, 1, 0, 16, 0]
  return
}
)mlir");
  ASSERT_TRUE(f);
  std::vector<kernel::CallOp> c = calls(f);
  ASSERT_EQ(c.size(), 2u);
  // M 32, N 16, K 8: 2 x 32 x 16 x 8 = 8192 FLOPs; linear_reduce_scatter:
  // 2 |lhs| N = 2 x 512 x 8 = 8192.
  EXPECT_DOUBLE_EQ(kernelWork(c[0]).flops, 8192);
  EXPECT_EQ(kernelWork(c[0]).unit, WorkUnit::Gemm);
  EXPECT_DOUBLE_EQ(kernelWork(c[1]).flops, 8192);

  std::vector<int64_t> degrees = {1, 1, 1, 1, 4};
  Hardware hw = testMachine();
  hw.memoryBytesPerSecond = 1e15;
  GroupPlacement tp = placeGroup(degrees, kTP, hw.devicesPerNode);
  // Each call: the ring over 1 KiB (the gathered buffer; the scattered
  // one's whole) is 3 x (256 B / 100 GB/s + 1 us) ~ 3 us against a GEMM
  // of 16 ns: max(GEMM, ring) + one ring step, the rest exposed.
  double gemm = kernelSeconds(kernelWork(c[0]), hw);
  double ring =
      collectiveSeconds(CollectiveKind::AllGather, 1024, tp, hw).seconds;
  EXPECT_DOUBLE_EQ(
      ring,
      collectiveSeconds(CollectiveKind::ReduceScatter, 1024, tp, hw).seconds);
  double call = std::max(gemm, ring) + ring / 3;
  StepCost cost = costStep(f, degrees, hw);
  // The step takes both calls whole; compute is their GEMMs, the rest is
  // the rings' exposed time (counted once).
  EXPECT_DOUBLE_EQ(cost.seconds, 2 * call);
  EXPECT_DOUBLE_EQ(cost.computeSeconds, 2 * gemm);
  EXPECT_DOUBLE_EQ(cost.commSeconds["tp"], 2 * ring);
  EXPECT_DOUBLE_EQ(cost.exposedCommSeconds["tp"], 2 * (call - gemm));
  EXPECT_DOUBLE_EQ(cost.flops, 2 * 8192);
}

//===----------------------------------------------------------------------===//
// Hardware files
//===----------------------------------------------------------------------===//

std::string writeTemp(StringRef text) {
  SmallString<128> path;
  int fd;
  EXPECT_FALSE(
      llvm::sys::fs::createTemporaryFile("hardware", "toml", fd, path));
  llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
  os << text;
  return std::string(path);
}

std::string errorOf(llvm::Expected<Hardware> hw) {
  if (hw)
    return "";
  return llvm::toString(hw.takeError());
}

TEST(CostHardware, Builtins) {
  for (StringRef name : {"h100", "h100-96gb", "h200", "b200", "a100", "cpu"}) {
    const Hardware *hw = lookupHardware(name);
    ASSERT_TRUE(hw) << name.str();
    EXPECT_GT(hw->peakFlopsF32, 0);
    EXPECT_GT(hw->memoryBytesPerSecond, 0);
    EXPECT_GT(hw->intraNodeBusBytesPerSecond, 0);
  }
  EXPECT_FALSE(lookupHardware("h800"));
  EXPECT_TRUE(lookupHardware("cpu")->ranksShareCompute);
  EXPECT_EQ(lookupHardware("a100")->peakFlopsFP8, 0);
}

TEST(CostHardware, TomlRoundTrip) {
  std::vector<Hardware> all(builtinHardware().begin(), builtinHardware().end());
  Hardware odd = testMachine();
  odd.description = "a \"quoted\" \\ name\non two lines";
  odd.gemmEfficiency = 0.1 + 0.2; // needs 17 digits
  all.push_back(odd);
  for (const Hardware &hw : all) {
    std::string text;
    llvm::raw_string_ostream os(text);
    printHardwareToml(hw, os);
    std::string path = writeTemp(text);
    llvm::Expected<Hardware> loaded = loadHardwareFile(path);
    ASSERT_TRUE(bool(loaded)) << llvm::toString(loaded.takeError());
    std::string again;
    llvm::raw_string_ostream os2(again);
    printHardwareToml(*loaded, os2);
    EXPECT_EQ(text, again);
    EXPECT_EQ(loaded->name, hw.name);
    EXPECT_EQ(loaded->description, hw.description);
    EXPECT_EQ(loaded->gemmEfficiency, hw.gemmEfficiency);
    EXPECT_EQ(loaded->peakFlopsBF16, hw.peakFlopsBF16);
    EXPECT_EQ(loaded->kernelOverheadSeconds, hw.kernelOverheadSeconds);
    EXPECT_EQ(loaded->devicesPerNode, hw.devicesPerNode);
    EXPECT_EQ(loaded->ranksShareCompute, hw.ranksShareCompute);
    llvm::sys::fs::remove(path);
  }
}

TEST(CostHardware, Base) {
  std::string path = writeTemp("[hardware]\n"
                               "gemm_efficiency = 0.5\n"
                               "base = \"h200\"\n"
                               "name = \"my-h200\"\n"
                               "devices_per_node = 4\n"
                               "memory_bytes = 85899345920\n");
  llvm::Expected<Hardware> hw = loadHardwareFile(path);
  ASSERT_TRUE(bool(hw)) << llvm::toString(hw.takeError());
  EXPECT_EQ(hw->name, "my-h200");
  EXPECT_EQ(hw->gemmEfficiency, 0.5);
  EXPECT_EQ(hw->devicesPerNode, 4);
  // An integer is a number too.
  EXPECT_EQ(hw->memoryBytes, 85899345920.0);
  EXPECT_EQ(hw->memoryBytesPerSecond,
            lookupHardware("h200")->memoryBytesPerSecond);
  llvm::sys::fs::remove(path);
}

TEST(CostHardware, Errors) {
  auto load = [](StringRef text) {
    std::string path = writeTemp(text);
    std::string error = errorOf(loadHardwareFile(path));
    llvm::sys::fs::remove(path);
    return error;
  };
  std::string unknown =
      load("[hardware]\nbase = \"h100\"\ngemm_eficiency = 1\n");
  EXPECT_NE(unknown.find("unknown key 'hardware.gemm_eficiency'"),
            std::string::npos)
      << unknown;
  EXPECT_NE(unknown.find(":3:1:"), std::string::npos) << unknown;
  std::string negative =
      load("[hardware]\nbase = \"h100\"\nmemory_bytes_per_second = -1.0\n");
  EXPECT_NE(negative.find("hardware.memory_bytes_per_second must be positive"),
            std::string::npos)
      << negative;
  std::string type = load("[hardware]\nbase = \"h100\"\ndevices_per_node = "
                          "\"eight\"\n");
  EXPECT_NE(type.find("hardware.devices_per_node must be an integer"),
            std::string::npos)
      << type;
  // An integer no double holds exactly (2^53 + 1) is an error, not a
  // crash.
  std::string huge = load("[hardware]\nbase = \"h100\"\nmemory_bytes = "
                          "9007199254740993\n");
  EXPECT_NE(huge.find("hardware.memory_bytes is out of range"),
            std::string::npos)
      << huge;
  std::string fraction =
      load("[hardware]\nbase = \"h100\"\ngemm_efficiency = 1.5\n");
  EXPECT_NE(fraction.find("must be in (0, 1]"), std::string::npos) << fraction;
  std::string base = load("[hardware]\nbase = \"h900\"\n");
  EXPECT_NE(base.find("unknown hardware.base 'h900'"), std::string::npos)
      << base;
  // Without a base every rate must be set.
  std::string missing = load("[hardware]\npeak_flops_f32 = 1e12\n");
  EXPECT_NE(missing.find("hardware.memory_bytes must be positive"),
            std::string::npos)
      << missing;
  std::string section = load("[gpu]\nname = \"x\"\n");
  EXPECT_NE(section.find("unknown section [gpu]"), std::string::npos)
      << section;
  std::string syntax = load("[hardware\n");
  EXPECT_NE(syntax.find("invalid TOML"), std::string::npos) << syntax;
  std::string none = errorOf(loadHardwareFile("/nonexistent/hw.toml"));
  EXPECT_NE(none.find("no such file"), std::string::npos) << none;
}

} // namespace
