//===- TargetBackendTest.cpp - targets as plug-ins ------------------------===//
//
// A third target, registered by this test alone: its own workspace rules
// and dtype policy, compiled for by the same pipeline as the built-in
// targets, with no dialect file touched. Also the registry itself and the
// built-in backends' policies and link descriptions.
//
//===----------------------------------------------------------------------===//

#include "titan/Target/TargetBackend.h"
#include "titan/Compiler/ConfigPipelineOptions.h"
#include "titan/Compiler/Pipelines.h"
#include "titan/Contract/CUDAWorkspaces.h"
#include "titan/Contract/TrainConfig.h"
#include "titan/Dialect/Kernel/IR/Kernel.h"
#include "titan/Dialect/Titan/IR/TitanOps.h"
#include "titan/InitTitan.h"
#include "titan/Target/CommonWorkspaces.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringMap.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace titan;
using namespace titan::target;

namespace {

constexpr llvm::StringLiteral kTestTarget = "test-npu";

/// A made-up accelerator: every GEMM takes 4 KiB of scratch, attention
/// 1000 bytes plus two per query element, and nothing else needs any. Its
/// kernels read bf16 directly.
class TestBackend : public TargetBackend {
public:
  TestBackend()
      : TargetBackend(kTestTarget, "a test-only accelerator",
                      {/*defaultParamDtype=*/"bfloat16",
                       /*widenLowPrecision=*/false}) {
    WorkspaceRules &rules = getMutableWorkspaceRules();
    rules.add<LinearOp>([](LinearOp) -> int64_t { return 4096; });
    rules.add<AttentionOp>([](AttentionOp op) -> int64_t {
      return 1000 + 2 * elementsOf(op.getQuery());
    });
  }

  TargetLink getTargetLink(llvm::StringRef runtimeDir) const override {
    TargetLink link;
    link.kernelLibraries = {(runtimeDir + "/libtitanrt_test_npu.a").str()};
    return link;
  }
};

/// The registry is the process's: register the test target once.
const TargetBackend &registerTestBackend() {
  static const bool registered = [] {
    registerAllTargetBackends();
    llvm::cantFail(registerTargetBackend(std::make_unique<TestBackend>()));
    return true;
  }();
  (void)registered;
  return *lookupTargetBackend(kTestTarget);
}

/// A step with a GEMM, an RMSNorm gradient and attention (f32).
constexpr llvm::StringLiteral kStep = R"mlir(
func.func @forward_backward(
    %w: tensor<8x8xf32> {titan.param = "w"},
    %n: tensor<8xf32> {titan.param = "n"},
    %x: tensor<1x8x8xf32> {titan.input = "tokens"})
    -> (tensor<1x8x2x4xf32> {titan.grad = "q"},
        tensor<8xf32> {titan.grad = "n"}) {
  %y = titan.linear %x, %w : (tensor<1x8x8xf32>, tensor<8x8xf32>) -> tensor<1x8x8xf32>
  %dx, %dn = titan.rms_norm_grad %x, %n, %y {eps = 1.0e-5 : f64} : (tensor<1x8x8xf32>, tensor<8xf32>, tensor<1x8x8xf32>) -> (tensor<1x8x8xf32>, tensor<8xf32>)
  %v = titan.reshape %y : tensor<1x8x8xf32> -> tensor<1x8x2x4xf32>
  %o:2 = titan.attention %v, %v, %v {scale = 0.5 : f64} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x2x8xf32>)
  return %o#0, %dn : tensor<1x8x2x4xf32>, tensor<8xf32>
}
func.func @optimizer_step(%p: tensor<8xf32> {titan.param = "n"})
    -> (tensor<8xf32> {titan.param = "n"}) {
  return %p : tensor<8xf32>
}
)mlir";

class TargetBackendTest : public ::testing::Test {
protected:
  void SetUp() override {
    registerTestBackend();
    DialectRegistry registry;
    registerAllDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  OwningOpRef<ModuleOp> parseStep() {
    return parseSourceString<ModuleOp>(kStep, &context);
  }

  /// Runs the execution phase for `targetName` on the step; the kernel
  /// calls' workspace bytes by kernel (-1: no workspace).
  llvm::StringMap<int64_t> compileStep(llvm::StringRef targetName) {
    OwningOpRef<ModuleOp> module = parseStep();
    EXPECT_TRUE(module);
    PassManager pm(&context);
    ExecutionPipelineOptions options;
    options.target = targetName.str();
    buildExecutionPipeline(pm, options);
    EXPECT_TRUE(succeeded(pm.run(*module)));
    llvm::StringMap<int64_t> workspaces;
    module->walk([&](kernel::CallOp call) {
      int64_t bytes = -1;
      if (Value workspace = call.getWorkspace()) {
        auto alloc = workspace.getDefiningOp<kernel::AllocOp>();
        EXPECT_TRUE(alloc && alloc.getOffset().has_value())
            << "the workspace is planned";
        bytes = cast<MemRefType>(workspace.getType()).getNumElements();
      }
      workspaces[call.getKernel()] = bytes;
    });
    return workspaces;
  }

  MLIRContext context{MLIRContext::Threading::DISABLED};
};

TEST_F(TargetBackendTest, RegistryHasEveryTargetByName) {
  const TargetBackend &test = registerTestBackend();
  EXPECT_EQ(test.getName(), kTestTarget);
  EXPECT_EQ(lookupTargetBackend(kTestTarget), &test);
  EXPECT_EQ(lookupTargetBackend("tpu"), nullptr);
  EXPECT_EQ(getTargetBackendNames(),
            (std::vector<std::string>{"cpu", "cuda", "test-npu"}));
  EXPECT_EQ(getTargetBackendNameList(), "cpu, cuda, test-npu");
  llvm::Error again = registerTargetBackend(std::make_unique<TestBackend>());
  ASSERT_TRUE(bool(again));
  EXPECT_EQ(llvm::toString(std::move(again)),
            "a target backend named 'test-npu' is registered already");
}

TEST_F(TargetBackendTest, OneInterfaceAnswersForEachTarget) {
  OwningOpRef<ModuleOp> module = parseStep();
  ASSERT_TRUE(module);
  Operation *linear = nullptr;
  module->walk([&](LinearOp op) { linear = op; });
  auto workspace = dyn_cast_or_null<WorkspaceOpInterface>(linear);
  ASSERT_TRUE(workspace);
  EXPECT_EQ(workspace.getWorkspaceBytes(kTestTarget), 4096);
  EXPECT_EQ(workspace.getWorkspaceBytes("cpu"), 0);
  EXPECT_EQ(workspace.getWorkspaceBytes("cuda"), cuda::kGemmWorkspaceBytes);
  EXPECT_EQ(workspace.getWorkspaceBytes("tpu"), 0);
  for (llvm::StringRef name : getTargetBackendNames())
    EXPECT_TRUE(lookupTargetBackend(name)->hasExternalModels(&context))
        << name.str();
}

TEST_F(TargetBackendTest, StepCompilesWithTheTestTargetsRules) {
  llvm::StringMap<int64_t> test = compileStep(kTestTarget);
  EXPECT_EQ(test.lookup("linear"), 4096);
  EXPECT_EQ(test.lookup("attention"), 1000 + 2 * 64);
  // A target that generates no kernels keeps RMSNorm's gradient a call,
  // without workspace.
  EXPECT_EQ(test.lookup("rms_norm_grad"), -1);
  // The same step for the CPU: its rules, not the test target's; it
  // generates RMSNorm's gradient (no call remains).
  llvm::StringMap<int64_t> cpu = compileStep("cpu");
  EXPECT_EQ(cpu.lookup("linear"), -1);
  EXPECT_FALSE(cpu.count("rms_norm_grad"));
  EXPECT_NE(cpu.lookup("attention"), test.lookup("attention"));
}

TEST_F(TargetBackendTest, UnknownTargetNamesTheRegisteredOnes) {
  OwningOpRef<ModuleOp> module = parseStep();
  ASSERT_TRUE(module);
  std::string message;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    message = diag.str();
    return success();
  });
  PassManager pm(&context);
  ExecutionPipelineOptions options;
  options.target = "tpu";
  buildExecutionPipeline(pm, options);
  EXPECT_TRUE(failed(pm.run(*module)));
  EXPECT_EQ(message, "titan-bufferize: unknown target 'tpu' (registered: "
                     "cpu, cuda, test-npu)");
}

TEST_F(TargetBackendTest, ModelsMustBeRegisteredInTheContext) {
  MLIRContext bare;
  bare.loadDialect<TitanDialect>();
  EXPECT_FALSE(registerTestBackend().hasExternalModels(&bare));
}

TEST_F(TargetBackendTest, DtypePolicyDrivesThePipelines) {
  const TargetBackend &test = registerTestBackend();
  TrainConfig config;
  EXPECT_EQ(paramDtype(config, test), "bfloat16");
  EXPECT_EQ(paramDtype(config, *lookupTargetBackend("cpu")), "float32");
  EXPECT_EQ(paramDtype(config, *lookupTargetBackend("cuda")), "bfloat16");
  config.training.mixedPrecisionParam = "float32";
  EXPECT_EQ(paramDtype(config, test), "float32");

  // The execution phase widens 16-bit kernels for the CPU only.
  auto widens = [&](llvm::StringRef name) {
    PassManager pm(&context);
    ExecutionPipelineOptions options;
    options.target = name.str();
    buildExecutionPipeline(pm, options);
    std::string text;
    llvm::raw_string_ostream os(text);
    pm.printAsTextualPipeline(os);
    return llvm::StringRef(text).contains("widen-low-precision=true");
  };
  EXPECT_FALSE(widens(kTestTarget));
  EXPECT_TRUE(widens("cpu"));
  EXPECT_FALSE(widens("cuda"));
}

TEST_F(TargetBackendTest, BuiltInTargetsDescribeTheirLink) {
  TargetLink cpu = lookupTargetBackend("cpu")->getTargetLink("/rt");
  EXPECT_EQ(cpu.kernelLibraries, std::vector<std::string>{"-ltitanrt_cpu"});
  EXPECT_TRUE(cpu.systemLibraries.empty());
  EXPECT_TRUE(cpu.libraryDirs.empty());
  TargetLink cuda = lookupTargetBackend("cuda")->getTargetLink("/rt");
  EXPECT_EQ(cuda.kernelLibraries,
            (std::vector<std::string>{"/rt/libtitanrt_cuda.a",
                                      "/rt/libtitanrt_cuda_kernels.a"}));
  EXPECT_EQ(cuda.libraryDirs.size(), 1u);
  TargetLink test = registerTestBackend().getTargetLink("/rt");
  EXPECT_EQ(test.kernelLibraries,
            std::vector<std::string>{"/rt/libtitanrt_test_npu.a"});
}

TEST_F(TargetBackendTest, BuiltInTargetsStateTheirFeatures) {
  const TargetFeatures &cpu = lookupTargetBackend("cpu")->getFeatures();
  EXPECT_TRUE(cpu.hostMemory);
  EXPECT_FALSE(cpu.float8Gemms);
  EXPECT_FALSE(cpu.asyncTensorParallel);
  EXPECT_TRUE(cpu.pipelineParallel);
  EXPECT_FALSE(cpu.deviceArch);
  const TargetFeatures &cuda = lookupTargetBackend("cuda")->getFeatures();
  EXPECT_FALSE(cuda.hostMemory);
  EXPECT_TRUE(cuda.float8Gemms);
  EXPECT_TRUE(cuda.asyncTensorParallel);
  EXPECT_TRUE(cuda.pipelineParallel);
  EXPECT_TRUE(cuda.deviceArch);
  // A target that states none has none.
  const TargetFeatures &test = registerTestBackend().getFeatures();
  EXPECT_FALSE(test.hostMemory || test.float8Gemms ||
               test.asyncTensorParallel || test.pipelineParallel ||
               test.deviceArch);
}

TEST_F(TargetBackendTest, ObjectsNeedARegisteredHostEmitter) {
  // This test links no code generator, so nothing registered the host's
  // object emission (titan-compile's driver does).
  OwningOpRef<ModuleOp> module = parseStep();
  ASSERT_TRUE(module);
  llvm::Error e = registerTestBackend().emitObject(*module, "unused.o");
  ASSERT_TRUE(bool(e));
  EXPECT_EQ(llvm::toString(std::move(e)),
            "target 'test-npu': this program writes no object files (no host "
            "object emitter is registered: "
            "titan::registerHostObjectEmitter)");
}

} // namespace
