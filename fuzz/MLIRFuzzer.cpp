//===- MLIRFuzzer.cpp - the MLIR parser, verifiers and pipelines ----------===//
//
// titan-mlir-fuzzer: the input is .mlir text (seeds: test/**/*.mlir), cut
// at `// -----` lines as --split-input-file cuts it. Each part is
// parsed and verified with titan's dialects; a module that verifies then
// goes through one of titan's registered pass pipelines, picked by its hash
// (default options, the pass manager verifying after every pass). A
// pipeline may refuse the module with an error (most do: each expects the
// IR of its own phase); it must not crash.
//
//===----------------------------------------------------------------------===//

#include "titan/Compiler/Pipelines.h"
#include "titan/InitTitan.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/xxhash.h"

#include <cstdlib>

namespace {
mlir::DialectRegistry &registry() {
  static mlir::DialectRegistry *r = [] {
    auto *registry = new mlir::DialectRegistry;
    titan::registerAllDialects(*registry);
    return registry;
  }();
  return *r;
}
} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  titan::registerAllPasses();
  registry();
  // Every pipeline the fuzzer runs is registered under its name.
  for (llvm::StringRef name : titan::titanPipelineNames())
    if (!mlir::PassPipelineInfo::lookup(name))
      std::abort();
  return 0;
}

namespace {
/// Parses and verifies one module, then runs one of the pipelines on it,
/// picked by the text's hash: each execution is 7 times cheaper than all
/// of them, every input still meets one, and a campaign spreads its inputs
/// over all.
void parseAndRunPipelines(llvm::StringRef text) {
  mlir::MLIRContext context(registry(), mlir::MLIRContext::Threading::DISABLED);
  // Errors are the expected outcome; printing them would only slow the run.
  context.getDiagEngine().registerHandler(
      [](mlir::Diagnostic &) { return mlir::success(); });
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(text, &context);
  if (!module)
    return;
  llvm::ArrayRef<llvm::StringRef> names = titan::titanPipelineNames();
  llvm::StringRef name = names[llvm::xxh3_64bits(text) % names.size()];
  mlir::PassManager pm(&context);
  if (mlir::failed(mlir::parsePassPipeline(name, pm)))
    std::abort();
  (void)pm.run(*module);
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // Each `// -----` part is a module of its own, as titan-opt
  // --split-input-file reads the tests the seeds come from.
  llvm::StringRef rest(reinterpret_cast<const char *>(data), size);
  while (!rest.empty()) {
    auto [part, after] = rest.split("// -----");
    parseAndRunPipelines(part);
    rest = after;
  }
  return 0;
}
