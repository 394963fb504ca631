//===- ShardingRuleTest.cpp - factor rules and their claims ---------------===//
//
// The titan ops' sharding rules on shapes the models produce (and the edges
// of reshape's factoring: size-1 dimensions, splits, merges and groups it
// cannot factor), and the factor claims propagation and partitioning share:
// first claim wins, an axis splits one dimension of any tensor, and a list
// of axes that cannot split a factor gives its longest prefix that can.
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/Dist/IR/ShardingRule.h"
#include "titan/Dialect/Titan/IR/TitanDialect.h"
#include "titan/Dialect/Titan/IR/TitanOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace titan;
using namespace titan::dist;

namespace {

class ShardingRuleTest : public ::testing::Test {
protected:
  ShardingRuleTest() {
    DialectRegistry registry;
    registerShardingRuleModels(registry);
    context.appendDialectRegistry(registry);
    context.loadDialect<TitanDialect, DistDialect>();
    mesh = MeshAttr::get(&context, 1, 1, 2, 2, 2);
  }

  Value arg(ArrayRef<int64_t> shape, Type element = {}) {
    Block *block = new Block;
    blocks.emplace_back(block);
    return block->addArgument(
        RankedTensorType::get(shape, element ? element : b.getF32Type()),
        b.getUnknownLoc());
  }

  ShardingRule reshapeRule(ArrayRef<int64_t> in, ArrayRef<int64_t> out) {
    auto op =
        ReshapeOp::create(b, b.getUnknownLoc(),
                          RankedTensorType::get(out, b.getF32Type()), arg(in));
    ops.emplace_back(op);
    return cast<ShardingRuleOpInterface>(op.getOperation()).getShardingRule();
  }

  ShardingAttr sharding(ArrayRef<SmallVector<StringRef>> dims) {
    return makeSharding(&context, dims);
  }

  MLIRContext context;
  OpBuilder b{&context};
  MeshAttr mesh;
  std::vector<std::unique_ptr<Block>> blocks;
  std::vector<OwningOpRef<Operation *>> ops;
};

using Dims = ShardingRule::TensorFactors;

Dims dims(std::initializer_list<std::initializer_list<int64_t>> list) {
  Dims d;
  for (auto factors : list)
    d.emplace_back(factors);
  return d;
}

TEST_F(ShardingRuleTest, ReshapeSplitsHeadsAndSkipsUnitDimensions) {
  // [1, 64, 256] -> [1, 64, 16, 16]: the features are heads x head dim.
  ShardingRule rule = reshapeRule({1, 64, 256}, {1, 64, 16, 16});
  EXPECT_EQ(rule.getFactors().size(), 3u);
  EXPECT_EQ(rule.getOperand(0), dims({{}, {0}, {1, 2}}));
  EXPECT_EQ(rule.getResult(0), dims({{}, {0}, {1}, {2}}));
}

TEST_F(ShardingRuleTest, ReshapeMergesAndKeepsUnfactorableGroupsWhole) {
  ShardingRule merge = reshapeRule({2, 3, 4}, {2, 12});
  EXPECT_EQ(merge.getOperand(0), dims({{0}, {1}, {2}}));
  EXPECT_EQ(merge.getResult(0), dims({{0}, {1, 2}}));
  // [6, 4] -> [4, 6]: no common factoring; one factor that stays whole.
  ShardingRule swap = reshapeRule({6, 4}, {4, 6});
  ASSERT_EQ(swap.getFactors().size(), 1u);
  EXPECT_EQ(swap.getFactors()[0].kind, FactorKind::NeedReplication);
}

TEST_F(ShardingRuleTest, SplitFeaturesMoveToTheHeads) {
  ShardingRule rule = reshapeRule({2, 8, 64}, {2, 8, 4, 16});
  FactorShardings f =
      rule.chooseFactorShardings({sharding({{}, {"cp"}, {"tp"}})}, {0}, mesh);
  EXPECT_EQ(
      rule.getResultSharding(&context, 0, f, {sharding({{}, {"cp"}, {"tp"}})}),
      sharding({{}, {"cp"}, {"tp"}}));
}

TEST_F(ShardingRuleTest, LinearWeightClaimsFirstAndInputKeepsAPrefix) {
  // Column-wise wq under sequence parallel with context parallel: the
  // weight's features take tp, so the input's sequence keeps cp only.
  auto op = LinearOp::create(b, b.getUnknownLoc(),
                             RankedTensorType::get({2, 8, 16}, b.getF32Type()),
                             arg({2, 8, 16}), arg({16, 16}));
  ops.emplace_back(op);
  ShardingRule rule =
      cast<ShardingRuleOpInterface>(op.getOperation()).getShardingRule();
  SmallVector<ShardingAttr> operands = {sharding({{}, {"cp", "tp"}}),
                                        sharding({{"tp"}})};
  FactorShardings f = rule.chooseFactorShardings(operands, {1, 0}, mesh);
  EXPECT_EQ(rule.getOperandSharding(0, f, operands[0]), sharding({{}, {"cp"}}));
  EXPECT_EQ(rule.getResultSharding(&context, 0, f, operands),
            sharding({{}, {"cp"}, {"tp"}}));
  // Row-wise: the contracted features split over tp leave a partial sum.
  SmallVector<ShardingAttr> rowwise = {sharding({{}, {}, {"tp"}}),
                                       sharding({{}, {"tp"}})};
  FactorShardings g = rule.chooseFactorShardings(rowwise, {1, 0}, mesh);
  EXPECT_EQ(rule.getResultSharding(&context, 0, g, rowwise).getPartialAxes(),
            SmallVector<StringRef>({"tp"}));
}

TEST_F(ShardingRuleTest, AttentionSplitsTheKeySequenceOnlyOverCp) {
  auto q = arg({2, 8, 4, 16}), k = arg({2, 8, 2, 16});
  auto op = AttentionOp::create(
      b, b.getUnknownLoc(), q.getType(),
      RankedTensorType::get({2, 4, 8}, b.getF32Type()), q, k, k,
      /*document_starts=*/Value(), b.getF64FloatAttr(0.25));
  ops.emplace_back(op);
  ShardingRule rule =
      cast<ShardingRuleOpInterface>(op.getOperation()).getShardingRule();
  auto seq = [&](StringRef axis) { return sharding({{}, {axis}}); };
  FactorShardings cp = rule.chooseFactorShardings(
      {seq("cp"), seq("cp"), seq("cp")}, {0, 1, 2}, mesh);
  EXPECT_EQ(rule.getOperandSharding(1, cp, seq("cp")), seq("cp"));
  FactorShardings tp = rule.chooseFactorShardings(
      {seq("tp"), seq("tp"), seq("tp")}, {0, 1, 2}, mesh);
  EXPECT_TRUE(rule.getOperandSharding(1, tp, seq("tp")).isReplicated());
}

// The block-causal mask's document starts follow the batch and stay whole
// along the sequence (a position's document may start in any earlier
// chunk), whatever splits the queries' heads or sequence.
TEST_F(ShardingRuleTest, AttentionKeepsTheDocumentStartsWhole) {
  auto q = arg({2, 8, 4, 16}), k = arg({2, 8, 2, 16});
  auto starts = arg({2, 8}, b.getI32Type());
  auto op =
      AttentionOp::create(b, b.getUnknownLoc(), q.getType(),
                          RankedTensorType::get({2, 4, 8}, b.getF32Type()), q,
                          k, k, starts, b.getF64FloatAttr(0.25));
  ops.emplace_back(op);
  ShardingRule rule =
      cast<ShardingRuleOpInterface>(op.getOperation()).getShardingRule();
  auto heads = sharding({{}, {}, {"tp"}});
  FactorShardings tp = rule.chooseFactorShardings(
      {heads, sharding({{}, {}, {"tp"}}), sharding({{}, {}, {"tp"}})},
      {0, 1, 2}, mesh);
  EXPECT_TRUE(
      rule.getOperandSharding(3, tp, sharding({{}, {}})).isReplicated());
  auto seq = sharding({{}, {"cp"}});
  FactorShardings cp = rule.chooseFactorShardings(
      {seq, seq, seq, sharding({{}, {"cp"}})}, {0, 1, 2, 3}, mesh);
  EXPECT_TRUE(
      rule.getOperandSharding(3, cp, sharding({{}, {}})).isReplicated());
}

TEST_F(ShardingRuleTest, StorageAxesAreNotTheComputation) {
  EXPECT_EQ(withoutStorageAxes(sharding({{"tp", "dp_shard", "cp"}}), 2),
            sharding({{"tp"}}));
  // FSDP's storage group pads as one: 150 rows over dp_shard x cp = 4.
  auto local =
      sharding({{"dp_shard", "cp"}}).getLocalShape({150, 4}, mesh, nullptr);
  ASSERT_TRUE(succeeded(local));
  EXPECT_EQ((*local)[0], 38);
}

} // namespace
