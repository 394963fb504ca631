//===- LinkTest.cpp - objects and executables through the driver ----------===//
//
// The targets' link inputs as their backends give them, and the debug
// model compiled and linked into training executables (one program, and a
// program per pipeline rank with their table).
//
//===----------------------------------------------------------------------===//

#include "DriverTestUtil.h"

#include "titan/Driver/Link.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

using namespace titan;
using namespace titan::driver;
using namespace titan::driver::test;

namespace {

/// A fresh temporary folder, removed with its files at the end.
class TempDir {
public:
  TempDir() {
    EXPECT_FALSE(llvm::sys::fs::createUniqueDirectory("titan-driver", path));
  }
  ~TempDir() { llvm::sys::fs::remove_directories(path); }
  std::string file(llvm::StringRef name) const {
    llvm::SmallString<128> p(path);
    llvm::sys::path::append(p, name);
    return p.str().str();
  }

private:
  llvm::SmallString<128> path;
};

bool isExecutable(const std::string &path) {
  return llvm::sys::fs::exists(path) && llvm::sys::fs::can_execute(path);
}

const target::TargetBackend &backend(llvm::StringRef name) {
  return llvm::cantFail(lookupTarget(name));
}

TEST(DriverLinkTest, TheCpuTargetLinksItsKernelLibrary) {
  target::TargetLink cpu = backend("cpu").getTargetLink(runtimeDir());
  EXPECT_EQ(cpu.kernelLibraries, std::vector<std::string>{"-ltitanrt_cpu"});
  EXPECT_TRUE(cpu.systemLibraries.empty());
  EXPECT_TRUE(cpu.libraryDirs.empty());
}

TEST(DriverLinkTest, TheCudaTargetLinksItsArchivesFromTheRuntimeFolder) {
  target::TargetLink cuda = backend("cuda").getTargetLink(runtimeDir());
  ASSERT_EQ(cuda.kernelLibraries.size(), 2u);
  for (const std::string &archive : cuda.kernelLibraries) {
    EXPECT_EQ(llvm::sys::path::parent_path(archive), runtimeDir());
    EXPECT_EQ(llvm::sys::path::extension(archive), ".a");
  }
}

TEST(DriverLinkTest, NothingToLinkIsAnError) {
  llvm::Error e = linkExecutable({}, backend("cpu"));
  ASSERT_TRUE(bool(e));
  EXPECT_EQ(llvm::toString(std::move(e)), "internal error: nothing to link");
}

TEST(DriverLinkTest, ObjectStageWritesTheObject) {
  TempDir dir;
  CompileOptions options = at(Stage::Object);
  options.outputPath = dir.file("step.o");
  EXPECT_EQ(emit(debugConfig(), options), "");
  uint64_t size = 0;
  EXPECT_FALSE(llvm::sys::fs::file_size(options.outputPath, size));
  EXPECT_GT(size, 0u);
}

TEST(DriverLinkTest, ExeStageLinksATrainingExecutable) {
  TempDir dir;
  CompileOptions options = at(Stage::Exe);
  options.outputPath = dir.file("train");
  // memory_estimation.enable prints the plan beside the executable.
  std::string text =
      emit(debugConfig({{"memory_estimation.enable", "true"}}), options);
  EXPECT_NE(text.find("arena"), std::string::npos) << text;
  EXPECT_TRUE(isExecutable(options.outputPath));
}

TEST(DriverLinkTest, PipelineRanksLinkIntoOneExecutable) {
  TempDir dir;
  CompileOptions options = at(Stage::Exe);
  options.outputPath = dir.file("train-pp");
  EXPECT_EQ(emit(debugConfig({{"parallelism.pipeline_parallel_degree", "2"},
                              {"training.local_batch_size", "2"}}),
                 options),
            "");
  EXPECT_TRUE(isExecutable(options.outputPath));
  // Objects per rank with the object stage.
  options.stage = Stage::Object;
  options.outputPath = dir.file("pp.o");
  EXPECT_EQ(emit(debugConfig({{"parallelism.pipeline_parallel_degree", "2"},
                              {"training.local_batch_size", "2"}}),
                 options),
            "");
  EXPECT_TRUE(llvm::sys::fs::exists(dir.file("pp.o.0")));
  EXPECT_TRUE(llvm::sys::fs::exists(dir.file("pp.o.1")));
}

} // namespace
