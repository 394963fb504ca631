//===- PlanAutoTest.cpp - --plan auto through the driver ------------------===//
//
// planAuto on the debug model and a small budget: a ranked table and the
// best plan's config, world size and target; the JSON form; the options'
// errors.
//
//===----------------------------------------------------------------------===//

#include "DriverTestUtil.h"

#include "titan/Driver/PlanAuto.h"

#include "llvm/Support/JSON.h"

using namespace titan;
using namespace titan::driver;
using namespace titan::driver::test;

namespace {

TrainConfig planConfig() {
  return debugConfig({{"training.global_batch_size", "4"},
                      {"training.local_batch_size", "1"}});
}

HardwareRequest cpu() {
  HardwareRequest request;
  request.gpu = "cpu";
  return request;
}

PlanOptions smallPlan() {
  PlanOptions opts;
  opts.gpus = 2;
  opts.top = 3;
  opts.maxWork = 400;
  return opts;
}

TEST(DriverPlanAutoTest, RanksThePlansAndPicksTheBest) {
  TrainConfig config = planConfig();
  LlamaArgs model = modelOf(config);
  std::string table;
  llvm::raw_string_ostream os(table);
  llvm::Expected<std::optional<PlanChoice>> best =
      planAuto(model, config, cpu(), smallPlan(), os);
  ASSERT_TRUE(bool(best)) << llvm::toString(best.takeError());
  ASSERT_TRUE(*best) << table;
  EXPECT_EQ((*best)->worldSize, 2);
  ASSERT_TRUE((*best)->target);
  EXPECT_EQ((*best)->target->getName(), "cpu");
  llvm::Expected<MeshDegrees> mesh = resolveMesh((*best)->config, 2);
  ASSERT_TRUE(bool(mesh)) << llvm::toString(mesh.takeError());
  EXPECT_EQ(mesh->worldSize(), 2);
  EXPECT_EQ((*best)->config.training.globalBatchSize, 4);

  EXPECT_EQ(table.rfind("plan auto: debugmodel", 0), 0u) << table;
  // The table's rows, between its header and the search's counts, are
  // numbered from 1, best first.
  llvm::StringRef rows = llvm::StringRef(table)
                             .split("why kept\n")
                             .second.split("searched in")
                             .first;
  llvm::SmallVector<llvm::StringRef> lines;
  rows.split(lines, '\n', -1, false);
  int64_t row = 0;
  for (llvm::StringRef line : lines) {
    int64_t rank = 0;
    EXPECT_FALSE(line.trim().split(' ').first.getAsInteger(10, rank))
        << line.str();
    EXPECT_EQ(rank, ++row) << line.str();
  }
  EXPECT_GE(row, 1) << table;
  EXPECT_LE(row, 3) << table;
  EXPECT_NE(table.find("best plan: titan-compile --job.config_file ... "),
            std::string::npos)
      << table;
}

TEST(DriverPlanAutoTest, JsonListsThePlansAndChoosesNone) {
  TrainConfig config = planConfig();
  LlamaArgs model = modelOf(config);
  PlanOptions opts = smallPlan();
  opts.json = true;
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::Expected<std::optional<PlanChoice>> best =
      planAuto(model, config, cpu(), opts, os);
  ASSERT_TRUE(bool(best)) << llvm::toString(best.takeError());
  EXPECT_FALSE(*best);
  llvm::Expected<llvm::json::Value> json = llvm::json::parse(text);
  ASSERT_TRUE(bool(json)) << llvm::toString(json.takeError());
  const llvm::json::Array *candidates =
      json->getAsObject()->getArray("candidates");
  ASSERT_TRUE(candidates);
  ASSERT_FALSE(candidates->empty());
  // Best first.
  std::optional<double> previous;
  for (const llvm::json::Value &c : *candidates) {
    std::optional<double> rate =
        c.getAsObject()->getNumber("tokens_per_second_per_device");
    ASSERT_TRUE(rate);
    if (previous) {
      EXPECT_LE(*rate, *previous);
    }
    previous = rate;
  }
}

TEST(DriverPlanAutoTest, TheCostStagePrintsTheTableThenTheBestPrediction) {
  CompileOptions options = at(Stage::Cost);
  options.hardware = cpu();
  options.plan = smallPlan();
  std::string text = emit(planConfig(), options);
  size_t table = text.find("plan auto: debugmodel");
  size_t prediction = text.find("predicted step: llama3 / debugmodel on cpu, "
                                "2 devices");
  ASSERT_NE(table, std::string::npos) << text;
  ASSERT_NE(prediction, std::string::npos) << text;
  EXPECT_LT(table, prediction);
}

TEST(DriverPlanAutoTest, OptionErrorsNameTheOption) {
  TrainConfig config = planConfig();
  LlamaArgs model = modelOf(config);
  auto errorOf = [&](PlanOptions opts, TrainConfig c) {
    std::string table;
    llvm::raw_string_ostream os(table);
    llvm::Expected<std::optional<PlanChoice>> best =
        planAuto(model, c, cpu(), opts, os);
    return best ? std::string() : llvm::toString(best.takeError());
  };
  PlanOptions top = smallPlan();
  top.top = 0;
  EXPECT_EQ(errorOf(top, config), "--plan-top must be at least 1");
  PlanOptions memory = smallPlan();
  memory.memoryGiB = 0;
  EXPECT_EQ(errorOf(memory, config), "--memory-per-gpu must be positive (GiB)");
  PlanOptions none = smallPlan();
  none.gpus = 0;
  EXPECT_EQ(errorOf(none, config),
            "--plan auto needs --gpus N (the devices to plan for, >= 1)");
  EXPECT_EQ(errorOf(smallPlan(), debugConfig())
                .rfind("--plan auto needs training.global_batch_size > 0", 0),
            0u);
  PlanOptions tiny = smallPlan();
  tiny.memoryGiB = 0.001;
  EXPECT_EQ(errorOf(tiny, config)
                .rfind("--plan auto: no layout of debugmodel "
                       "on 2 x cpu fits",
                       0),
            0u);
}

} // namespace
