//===- LlamaArgsTest.cpp - Llama model hyper-parameters -------------------===//

#include "titan/Contract/LlamaArgs.h"
#include "titan/Contract/TrainConfig.h"

#include "gtest/gtest.h"

using namespace titan;

namespace {
int64_t totalParameters(const LlamaArgs &args) {
  int64_t total = 0;
  for (const ParamSpec &p : llamaParameters(args))
    total += p.numel();
  return total;
}

LlamaArgs builtin(llvm::StringRef flavor) {
  TrainConfig config;
  config.model.flavor = flavor.str();
  llvm::Expected<LlamaArgs> args =
      resolveLlamaModel(config, TITAN_DEFAULT_MODELS_DIR);
  EXPECT_TRUE(static_cast<bool>(args)) << llvm::toString(args.takeError());
  return *args;
}
} // namespace

// The FFN widths in ../shared/reference/llama3-flavors.md.
TEST(LlamaArgs, FfnHiddenMatchesTorchTitan) {
  EXPECT_EQ(LlamaArgs::computeFfnHidden(256, 256, std::nullopt), 768);
  EXPECT_EQ(LlamaArgs::computeFfnHidden(4096, 1024, 1.3), 14336);
  EXPECT_EQ(LlamaArgs::computeFfnHidden(8192, 4096, 1.3), 28672);
  EXPECT_EQ(LlamaArgs::computeFfnHidden(16384, 4096, 1.2), 53248);
}

TEST(LlamaArgs, BuiltinFlavorParameterCounts) {
  EXPECT_EQ(totalParameters(builtin("debugmodel")), 6163712);
  EXPECT_EQ(totalParameters(builtin("8B")), 8030261248);
  EXPECT_EQ(totalParameters(builtin("70B")), 70553706496);
  EXPECT_EQ(totalParameters(builtin("405B")), 405853388800);
}

TEST(LlamaArgs, StateDictOrderAndShapes) {
  LlamaArgs args = builtin("8B");
  std::vector<ParamSpec> params = llamaParameters(args);
  ASSERT_EQ(params.size(), 2u + 9u * 32u + 1u);
  EXPECT_EQ(params.front().name, "tok_embeddings.weight");
  EXPECT_EQ(params[1].name, "layers.0.attention.wq.weight");
  EXPECT_EQ(params[2].name, "layers.0.attention.wk.weight");
  EXPECT_EQ(params[2].shape, (std::vector<int64_t>{1024, 4096}));
  EXPECT_EQ(params[9].name, "layers.0.ffn_norm.weight");
  EXPECT_EQ(params[params.size() - 2].name, "norm.weight");
  EXPECT_EQ(params.back().name, "output.weight");
}

TEST(LlamaArgs, TiedEmbeddingsDropTheOutput) {
  LlamaArgs args = builtin("debugmodel");
  int64_t untied = totalParameters(args);
  args.tieWordEmbeddings = true;
  EXPECT_EQ(totalParameters(args), untied - args.vocabSize * args.dim);
  EXPECT_EQ(llamaParameters(args).back().name, "norm.weight");
}

TEST(LlamaArgs, UnknownFlavorListsBuiltins) {
  TrainConfig config;
  config.model.flavor = "7B";
  llvm::Expected<LlamaArgs> args =
      resolveLlamaModel(config, TITAN_DEFAULT_MODELS_DIR);
  ASSERT_FALSE(static_cast<bool>(args));
  std::string message = llvm::toString(args.takeError());
  EXPECT_NE(message.find("unknown flavor '7B'"), std::string::npos);
  EXPECT_NE(message.find("405B, 70B, 8B, debugmodel"), std::string::npos);
}

// The config.json titan writes with a Hugging Face export reads back as the
// same model, and the first differing field is named in HF's terms.
TEST(LlamaArgs, HFConfigRoundTrips) {
  for (llvm::StringRef flavor : {"debugmodel", "8B", "70B"}) {
    LlamaArgs args = builtin(flavor);
    llvm::Expected<LlamaArgs> back =
        parseHFLlamaConfig(hfLlamaConfig(args, "bfloat16"), "config.json");
    ASSERT_TRUE(static_cast<bool>(back)) << llvm::toString(back.takeError());
    EXPECT_EQ(firstArchitectureDifference(*back, args), std::nullopt)
        << flavor.str();
    back->nKvHeads = 4;
    back->ropeScaling->lowFreqFactor = 2;
    EXPECT_EQ(firstArchitectureDifference(*back, args),
              "num_key_value_heads is 4, not " + std::to_string(args.nKvHeads));
  }
}
