//===- titan-compile.cpp - model + training config -> compiled job --------===//
//
//   titan-compile --job.config_file FILE [--section.key value]...
//                 [--emit=config|titan|summary] [-o OUT]
//
// Reads a TorchTitan-style training config, imports the model it names into
// the titan dialect and emits the requested stage.
//
//===----------------------------------------------------------------------===//

#include "Summary.h"

#include "titan/Config/TrainConfig.h"
#include "titan/Import/LlamaImporter.h"
#include "titan/InitTitan.h"
#include "titan/Model/ConfigFit.h"
#include "titan/Model/LlamaArgs.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

using namespace titan;
namespace cl = llvm::cl;

namespace {
enum class EmitStage { Config, Titan, Summary };

cl::opt<EmitStage> emitStage(
    "emit", cl::desc("Stage to emit"), cl::init(EmitStage::Summary),
    cl::values(clEnumValN(EmitStage::Config, "config",
                          "the resolved training config (TOML, every key)"),
               clEnumValN(EmitStage::Titan, "titan",
                          "the imported forward graph (titan dialect)"),
               clEnumValN(EmitStage::Summary, "summary",
                          "model, training-step and parallelism facts")));

cl::opt<std::string> outputFilename("o", cl::desc("Output file"),
                                    cl::value_desc("filename"), cl::init("-"));

int reportError(llvm::StringRef message) {
  llvm::SmallVector<llvm::StringRef> lines;
  message.split(lines, '\n');
  for (llvm::StringRef line : lines)
    llvm::WithColor::error(llvm::errs(), "titan-compile") << line << "\n";
  return 1;
}

int reportError(llvm::Error error) {
  return reportError(llvm::toString(std::move(error)));
}

std::string modelsDir() {
  if (std::optional<std::string> env =
          llvm::sys::Process::GetEnv("TITAN_MODELS_DIR"))
    return *env;
  return TITAN_DEFAULT_MODELS_DIR;
}
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);

  // `--section.key value` arguments are the training config; the rest are
  // this tool's own options, parsed by llvm::cl.
  std::vector<ConfigOverride> overrides;
  std::vector<const char *> toolArgs = {argv[0]};
  if (llvm::Error e = extractConfigOverrides(
          llvm::ArrayRef<const char *>(argv + 1, argv + argc), overrides,
          toolArgs))
    return reportError(std::move(e));

  // The config keys are listed after the tool's own options in --help.
  static std::string configKeyHelp = [] {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << "\nTRAINING CONFIG KEYS (--section.key value | "
          "--section.key=value):\n\n";
    printTrainConfigKeys(os);
    return text;
  }();
  static cl::extrahelp configHelp(configKeyHelp);

  mlir::registerAsmPrinterCLOptions();
  mlir::registerMLIRContextCLOptions();
  mlir::registerDefaultTimingManagerCLOptions();
  cl::ParseCommandLineOptions(
      toolArgs.size(), toolArgs.data(),
      "titan-compile: Llama model + TorchTitan-style training config -> "
      "compiled training job\n\n"
      "  titan-compile --job.config_file FILE [--section.key value]... "
      "[--emit=STAGE] [-o OUT]\n\n"
      "Every key of the training config can be overridden as "
      "--section.key value or --section.key=value.\n");

  llvm::Expected<TrainConfig> config = loadTrainConfig(overrides);
  if (!config)
    return reportError(config.takeError());
  if (config->job.printArgs)
    printTrainConfig(*config, llvm::errs());

  std::string errorMessage;
  auto output = mlir::openOutputFile(outputFilename, &errorMessage);
  if (!output)
    return reportError(errorMessage);

  if (emitStage == EmitStage::Config) {
    printTrainConfig(*config, output->os());
    output->keep();
    return 0;
  }

  mlir::DefaultTimingManager timing;
  mlir::applyDefaultTimingManagerCLOptions(timing);
  mlir::TimingScope rootTimer = timing.getRootScope();

  llvm::Expected<LlamaArgs> model = [&] {
    mlir::TimingScope t = rootTimer.nest("resolve model");
    return resolveLlamaModel(*config, modelsDir());
  }();
  if (!model)
    return reportError(model.takeError());
  if (llvm::Error e = checkModelFitsConfig(*model, *config))
    return reportError(std::move(e));

  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  mlir::MLIRContext context(registry);

  ImportOptions options;
  options.batchSize = config->training.localBatchSize;
  options.seqLen = config->training.seqLen;
  mlir::Builder builder(&context);
  options.elementType = config->training.dtype == "bfloat16"
                            ? mlir::Type(builder.getBF16Type())
                            : mlir::Type(builder.getF32Type());
  mlir::OwningOpRef<mlir::ModuleOp> module = [&] {
    mlir::TimingScope t = rootTimer.nest("import");
    return importLlama(context, *model, options);
  }();
  {
    mlir::TimingScope t = rootTimer.nest("verify");
    if (failed(mlir::verify(*module)))
      return reportError("internal error: the imported module does not "
                         "verify (see the diagnostics above)");
  }

  mlir::TimingScope t = rootTimer.nest("emit");
  if (emitStage == EmitStage::Titan) {
    module->print(output->os());
    output->os() << "\n";
  } else
    printSummary(*model, *config, *module, output->os());
  output->keep();
  return 0;
}
