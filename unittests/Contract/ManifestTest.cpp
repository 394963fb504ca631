//===- ManifestTest.cpp - the manifest's one definition -------------------===//
//
// What the compiler prints, the runtime parses back whole: every field
// round-trips, and so do the frame slot names and pipeline actions.
//
//===----------------------------------------------------------------------===//

#include "titan/Contract/Manifest.h"

#include "llvm/Support/Error.h"

#include <gtest/gtest.h>

using namespace titan::manifest;

namespace {

Manifest::Param param(std::string name, std::vector<int64_t> shape,
                      std::vector<int64_t> localShape,
                      std::vector<std::vector<MeshAxis>> dimAxes) {
  Manifest::Param p;
  p.name = std::move(name);
  p.shape = std::move(shape);
  p.localShape = std::move(localShape);
  p.dimAxes = std::move(dimAxes);
  return p;
}

/// A manifest with every field set.
Manifest fullManifest(bool pipelined) {
  Manifest m;
  m.model = "llama3 debugmodel";
  m.hfConfig = llvm::json::Object{
      {"hidden_size", 256},
      {"rope_scaling", llvm::json::Object{{"rope_type", "llama3"}}}};
  m.config = "[training]\nsteps = 10\n";
  m.target = "cpu";
  m.localBatch = 4;
  m.seqLen = 128;
  m.vocab = 2048;
  m.dim = 256;
  m.flopsPerToken = 123456789.25;
  m.accumulationSteps = 2;
  m.mesh = {2, 1, 2, 2, 2};
  m.loadBalancedAxes = titan::mesh::axisBit(kCP);
  m.params = {param("tok_embeddings.weight", {2048, 256}, {1024, 128},
                    {{kDPShard}, {kTP}}),
              param("layers.0.attention.wq.weight", {256, 256}, {128, 256},
                    {{kTP}, {}}),
              param("norm.weight", {256}, {256}, {{}})};
  m.allParams = m.params;
  m.arenaBytes = 4096;
  m.slots["param:norm.weight"] = {0, 1024};
  m.slots["input:step"] = {1024, 8};
  m.collectiveAxes = {4, 16, 20};
  if (!pipelined) {
    m.eval = Manifest::Eval{2, 64};
    return m;
  }
  m.allParams.push_back(
      param("output.weight", {2048, 256}, {1024, 128}, {{kDPShard}, {kTP}}));
  for (auto *params : {&m.params, &m.allParams})
    for (Manifest::Param &p : *params)
      p.pipelineRank = p.name == "output.weight" ? 1 : 0;
  Manifest::Pipeline &p = m.pipeline.emplace();
  p.rank = 0;
  p.numStages = 2;
  p.microbatches = 2;
  p.microbatchSize = 2;
  p.schedule = "1F1B";
  p.stageRanks = {0, 1};
  for (const char *action : {"0UNSHARD", "0F0", "0SEND_F0", "0F1", "0RECV_B0",
                             "0B0", "0SEND_B1", "0REDUCE_GRAD"})
    p.actions.push_back(*Manifest::PipelineAction::parse(action));
  // Validation's forward-only list and the stage's eval step.
  for (const char *action : {"0F0", "0SEND_F0", "0F1", "0SEND_F1"})
    p.evalActions.push_back(*Manifest::PipelineAction::parse(action));
  Manifest::PipelineStage &s = p.stages.emplace_back();
  s.eval = evalStageFunction(0);
  s.stage = 0;
  s.unshard = "stage0_unshard";
  s.forward = "stage0_forward";
  s.backward = "stage0_backward";
  s.reduceGrad = "stage0_reduce_grad";
  s.frameBytes = 1536;
  s.frames = 2;
  s.frameSlots = {{{0, FrameSlot::Tokens, 0}, {0, 512}},
                  {{0, FrameSlot::StageOutput, 0}, {512, 1024}}};
  p.sendRings = {{1, 0, 2, 1024, 1, 512}};
  return m;
}

void expectSameParams(const std::vector<Manifest::Param> &a,
                      const std::vector<Manifest::Param> &b) {
  ASSERT_EQ(a.size(), b.size());
  for (auto [x, y] : llvm::zip(a, b)) {
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.shape, y.shape);
    EXPECT_EQ(x.localShape, y.localShape);
    EXPECT_EQ(x.dimAxes, y.dimAxes);
    EXPECT_EQ(x.pipelineRank, y.pipelineRank);
  }
}

void expectSame(const Manifest &a, const Manifest &b) {
  EXPECT_EQ(a.model, b.model);
  EXPECT_EQ(llvm::json::Value(llvm::json::Object(a.hfConfig)),
            llvm::json::Value(llvm::json::Object(b.hfConfig)));
  EXPECT_EQ(a.config, b.config);
  EXPECT_EQ(a.target, b.target);
  EXPECT_EQ(a.cudaArch, b.cudaArch);
  EXPECT_EQ(a.localBatch, b.localBatch);
  EXPECT_EQ(a.seqLen, b.seqLen);
  EXPECT_EQ(a.vocab, b.vocab);
  EXPECT_EQ(a.dim, b.dim);
  EXPECT_EQ(a.flopsPerToken, b.flopsPerToken);
  EXPECT_EQ(a.accumulationSteps, b.accumulationSteps);
  EXPECT_EQ(a.optimizerInBackward, b.optimizerInBackward);
  EXPECT_EQ(a.mesh, b.mesh);
  EXPECT_EQ(a.loadBalancedAxes, b.loadBalancedAxes);
  expectSameParams(a.params, b.params);
  expectSameParams(a.allParams, b.allParams);
  EXPECT_EQ(a.arenaBytes, b.arenaBytes);
  EXPECT_EQ(a.slots.size(), b.slots.size());
  for (const auto &slot : a.slots)
    EXPECT_EQ(slot.getValue(), b.slots.lookup(slot.getKey()));
  EXPECT_EQ(a.collectiveAxes, b.collectiveAxes);
  ASSERT_EQ(a.eval.has_value(), b.eval.has_value());
  if (a.eval) {
    EXPECT_EQ(a.eval->localBatch, b.eval->localBatch);
    EXPECT_EQ(a.eval->seqLen, b.eval->seqLen);
  }
  ASSERT_EQ(a.pipeline.has_value(), b.pipeline.has_value());
  if (!a.pipeline)
    return;
  const Manifest::Pipeline &p = *a.pipeline, &q = *b.pipeline;
  EXPECT_EQ(p.rank, q.rank);
  EXPECT_EQ(p.numStages, q.numStages);
  EXPECT_EQ(p.microbatches, q.microbatches);
  EXPECT_EQ(p.microbatchSize, q.microbatchSize);
  EXPECT_EQ(p.schedule, q.schedule);
  EXPECT_EQ(p.stageRanks, q.stageRanks);
  ASSERT_EQ(p.actions.size(), q.actions.size());
  for (auto [x, y] : llvm::zip(p.actions, q.actions))
    EXPECT_EQ(x.str(), y.str());
  ASSERT_EQ(p.evalActions.size(), q.evalActions.size());
  for (auto [x, y] : llvm::zip(p.evalActions, q.evalActions))
    EXPECT_EQ(x.str(), y.str());
  ASSERT_EQ(p.sendRings.size(), q.sendRings.size());
  for (auto [x, y] : llvm::zip(p.sendRings, q.sendRings))
    EXPECT_EQ(
        std::tie(x.peer, x.flow, x.slots, x.bytes, x.evalSlots, x.evalBytes),
        std::tie(y.peer, y.flow, y.slots, y.bytes, y.evalSlots, y.evalBytes));
  ASSERT_EQ(p.stages.size(), q.stages.size());
  for (auto [x, y] : llvm::zip(p.stages, q.stages)) {
    EXPECT_EQ(x.stage, y.stage);
    EXPECT_EQ(x.unshard, y.unshard);
    EXPECT_EQ(x.forward, y.forward);
    EXPECT_EQ(x.backward, y.backward);
    EXPECT_EQ(x.backwardInput, y.backwardInput);
    EXPECT_EQ(x.backwardWeight, y.backwardWeight);
    EXPECT_EQ(x.reduceGrad, y.reduceGrad);
    EXPECT_EQ(x.frameBytes, y.frameBytes);
    EXPECT_EQ(x.frames, y.frames);
    EXPECT_EQ(x.frameSlots, y.frameSlots);
    EXPECT_EQ(x.eval, y.eval);
  }
}

Manifest roundTrip(const Manifest &m) {
  llvm::Expected<Manifest> parsed = parseManifest(printManifest(m));
  if (!parsed) {
    ADD_FAILURE() << llvm::toString(parsed.takeError());
    return {};
  }
  return std::move(*parsed);
}

TEST(ManifestTest, RoundTrips) {
  Manifest m = fullManifest(/*pipelined=*/false);
  expectSame(m, roundTrip(m));
  EXPECT_EQ(printManifest(roundTrip(m)), printManifest(m));
}

TEST(ManifestTest, RoundTripsAPipelineRank) {
  Manifest m = fullManifest(/*pipelined=*/true);
  expectSame(m, roundTrip(m));
  EXPECT_EQ(printManifest(roundTrip(m)), printManifest(m));
}

TEST(ManifestTest, MalformedSendRingsAreRefused) {
  Manifest m = fullManifest(/*pipelined=*/true);
  std::string good = printManifest(m);
  std::string ring = R"("send_rings":[[1,0,2,1024,1,512]])";
  ASSERT_NE(good.find(ring), std::string::npos) << good;
  std::string want = "a pipeline send ring is not [peer (another pipeline "
                     "rank), flow (0 or 1), slots, bytes, eval slots, eval "
                     "bytes], each list's bytes a multiple of 256 below 2^40 "
                     "and its slots below 2^16, once per peer and flow";
  for (const char *bad :
       {R"("send_rings":[[0,0,2,1024,1,512]])",          // to itself
        R"("send_rings":[[2,0,2,1024,1,512]])",          // no such rank
        R"("send_rings":[[1,2,2,1024,1,512]])",          // no such flow
        R"("send_rings":[[1,0,0,1024,0,512]])",          // no slot
        R"("send_rings":[[1,0,2,1000,1,512]])",          // unaligned
        R"("send_rings":[[1,0,2,1024]])",                // old layout
        R"("send_rings":[[1,0,2,1099511627776,1,512]])", // too large
        R"("send_rings":[[1,0,2,1024,1,512],[1,0,1,256,0,0]])"}) {
    std::string text = good;
    text.replace(text.find(ring), ring.size(), bad);
    llvm::Expected<Manifest> parsed = parseManifest(text);
    ASSERT_FALSE(bool(parsed)) << bad;
    EXPECT_NE(llvm::toString(parsed.takeError()).find(want), std::string::npos)
        << bad;
  }
}

TEST(ManifestTest, RoundTripsTheCudaTarget) {
  Manifest m = fullManifest(/*pipelined=*/false);
  m.target = "cuda";
  m.cudaArch = "sm_90a";
  expectSame(m, roundTrip(m));
}

TEST(ManifestTest, WithoutPipelineAllParamsAreParams) {
  std::string text = printManifest(fullManifest(/*pipelined=*/false));
  EXPECT_EQ(text.find("all_params"), std::string::npos);
  EXPECT_EQ(text.find("pipeline_rank"), std::string::npos);
  EXPECT_EQ(text.find("cuda_arch"), std::string::npos);
}

TEST(ManifestTest, LoadBalancedAxesAreNamedOnlyWhenThereAreSome) {
  Manifest m = fullManifest(/*pipelined=*/false);
  EXPECT_NE(printManifest(m).find(R"("load_balanced":["cp"])"),
            std::string::npos);
  m.loadBalancedAxes = 0;
  EXPECT_EQ(printManifest(m).find("load_balanced"), std::string::npos);
  expectSame(m, roundTrip(m));
}

TEST(ManifestTest, OptimizerInBackwardIsWrittenOnlyWhenSet) {
  Manifest m = fullManifest(/*pipelined=*/false);
  EXPECT_EQ(printManifest(m).find("optimizer_in_backward"), std::string::npos);
  EXPECT_FALSE(roundTrip(m).optimizerInBackward);
  m.optimizerInBackward = true;
  EXPECT_NE(printManifest(m).find(R"("optimizer_in_backward":true)"),
            std::string::npos);
  expectSame(m, roundTrip(m));
}

// training.enable_cpu_offload's host arena: written only when there is
// one, its slots apart from the device arena's.
TEST(ManifestTest, HostArenaIsWrittenOnlyWhenThere) {
  Manifest m = fullManifest(/*pipelined=*/false);
  EXPECT_EQ(printManifest(m).find("host_"), std::string::npos);
  m.hostArenaBytes = 4096;
  m.hostSlots["grad:norm.weight"] = {256, 1024};
  m.optimizerOnHost = true;
  Manifest back = roundTrip(m);
  expectSame(m, back);
  EXPECT_EQ(back.hostArenaBytes, 4096);
  EXPECT_EQ(back.hostSlots.lookup("grad:norm.weight"),
            (titan::manifest::SlotRange{256, 1024}));
  EXPECT_TRUE(back.optimizerOnHost);
  EXPECT_FALSE(back.slots.count("grad:norm.weight"));
}

/// `json`, an object's keys without its braces, as a manifest of this
/// runtime's ABI.
std::string current(const std::string &json) {
  return "{\"abi_version\": " + std::to_string(kABIVersion) +
         (json.empty() ? "" : ", ") + json + "}";
}

/// parseManifest's error message for `text`, or "" when it parses.
std::string parseError(const std::string &text) {
  llvm::Expected<Manifest> m = parseManifest(text);
  return m ? "" : llvm::toString(m.takeError());
}

TEST(ManifestTest, MalformedIsAnError) {
  const std::string texts[] = {
      "not json",
      current(""),
      current(R"("params": [{"name": "w", "shape": [2],
                              "sharding": [["xy"]]}])"),
      current(R"("params": [], "load_balanced": ["sp"])"),
      current(R"("params": [], "arena_bytes": 8, "slots": {"a": [4, 8]})"),
      current(R"("params": [], "host_arena_bytes": 8,
                 "host_slots": {"a": [4, 8]})"),
      current(R"("params": [], "arena_bytes": 256, "slots": {"a": [0, 8]},
                 "host_arena_bytes": 256, "host_slots": {"a": [0, 8]})"),
      current(R"("params": [],
                 "eval": {"local_batch_size": 0, "seq_len": 8})")};
  for (const std::string &text : texts) {
    llvm::Expected<Manifest> m = parseManifest(text);
    EXPECT_FALSE(bool(m)) << text;
    if (!m)
      llvm::consumeError(m.takeError());
  }
}

TEST(ManifestTest, LoadBalancedMustNameMeshAxes) {
  EXPECT_EQ(parseError(current(R"("params": [], "load_balanced": "cp")")),
            "the manifest's load_balanced is not a list of mesh axis names");
  EXPECT_EQ(parseError(current(R"("params": [], "load_balanced": {"cp": 1})")),
            "the manifest's load_balanced is not a list of mesh axis names");
  EXPECT_EQ(parseError(current(R"("params": [], "load_balanced": ["sp"])")),
            "the manifest's load_balanced names \"sp\", which is not a mesh "
            "axis");
  EXPECT_EQ(parseError(current(R"("params": [], "load_balanced": [3])")),
            "the manifest's load_balanced names 3, which is not a mesh axis");
  EXPECT_EQ(parseError(current(R"("params": [], "load_balanced": ["cp"])")),
            "");
  EXPECT_EQ(parseError(current(R"("params": [], "load_balanced": [])")), "");
}

TEST(ManifestTest, RecordsTheABIVersion) {
  std::string text = printManifest(fullManifest(/*pipelined=*/false));
  EXPECT_NE(text.find("\"abi_version\":" + std::to_string(kABIVersion)),
            std::string::npos)
      << text;
}

TEST(ManifestTest, AnotherABIVersionIsRefused) {
  std::string want = "this executable was compiled for runtime ABI 0, the "
                     "runtime is " +
                     std::to_string(kABIVersion) +
                     ": recompile it with titan-compile";
  // Written before the version existed.
  EXPECT_EQ(abiVersionMismatch(R"({"params": []})"), want);
  EXPECT_EQ(parseError(R"({"params": []})"), want);
  // This version, or not a manifest: parseManifest's to judge.
  EXPECT_EQ(abiVersionMismatch(
                "{\"abi_version\": " + std::to_string(kABIVersion) + "}"),
            std::nullopt);
  EXPECT_EQ(abiVersionMismatch("not json"), std::nullopt);
  // A newer or older version, whatever the rest says.
  for (int64_t version : {kABIVersion + 1, kABIVersion - 1})
    EXPECT_EQ(parseError("{\"abi_version\": " + std::to_string(version) +
                         R"(, "params": [], "load_balanced": 7})"),
              "this executable was compiled for runtime ABI " +
                  std::to_string(version) + ", the runtime is " +
                  std::to_string(kABIVersion) +
                  ": recompile it with titan-compile");
  EXPECT_EQ(parseError(R"({"abi_version": "1", "params": []})"),
            "the manifest's abi_version is not an integer");
}

TEST(FrameSlotTest, PrintsAndParses) {
  struct Case {
    FrameSlot slot;
    const char *text;
  } cases[] = {
      {{0, FrameSlot::StageInput, 3}, "frame0:stage_input:3"},
      {{1, FrameSlot::StageOutput, 0}, "frame1:stage_output:0"},
      {{2, FrameSlot::StageOutputGrad, 1}, "frame2:stage_output_grad:1"},
      {{3, FrameSlot::StageInputGrad, 2}, "frame3:stage_input_grad:2"},
      {{12, FrameSlot::Stash, 7}, "frame12:stash:7"},
      {{0, FrameSlot::Tokens, 0}, "frame0:input:tokens"},
      {{4, FrameSlot::Labels, 0}, "frame4:input:labels"},
      {{1, FrameSlot::DocumentStarts, 0}, "frame1:input:document_starts"}};
  for (const Case &c : cases) {
    EXPECT_EQ(c.slot.str(), c.text);
    std::optional<FrameSlot> parsed = FrameSlot::parse(c.text);
    ASSERT_TRUE(parsed) << c.text;
    EXPECT_EQ(*parsed, c.slot) << c.text;
  }
}

TEST(FrameSlotTest, OtherSlotsAreNotFrameSlots) {
  for (const char *text :
       {"param:tok_embeddings.weight", "input:tokens", "per_step0:1",
        "frame:stash:0", "frame0", "frame0:stash", "frame0:stash:x",
        "frame-1:stash:0", "frame0:bogus:0", "frame0:input:other"})
    EXPECT_FALSE(FrameSlot::parse(text)) << text;
}

TEST(EvalStageSlotsTest, NamesAreArenaSlotsNotFrameSlots) {
  // Validation's pipeline stages keep their boundary tensors in the arena.
  EXPECT_EQ(evalStageFunction(2), "eval_stage2");
  EXPECT_EQ(evalStageInputName(2, 0), "eval_stage2_input0");
  EXPECT_EQ(evalStageOutputName(1, 3), "eval_stage1_output3");
  EXPECT_FALSE(FrameSlot::parse("input:" + evalStageInputName(2, 0)));
}

TEST(PipelineActionTest, PrintsAndParses) {
  for (const char *text :
       {"0F0", "1B3", "2I1", "2W1", "0RECV_F2", "1SEND_F0", "3RECV_B4",
        "0SEND_B1", "1UNSHARD", "1REDUCE_GRAD"}) {
    std::optional<Manifest::PipelineAction> a =
        Manifest::PipelineAction::parse(text);
    ASSERT_TRUE(a) << text;
    EXPECT_EQ(a->str(), text);
  }
  for (const char *text : {"F0", "0X1", "0F", "0Fx"})
    EXPECT_FALSE(Manifest::PipelineAction::parse(text)) << text;
}

} // namespace
