//===- titan-compile.cpp - model + training config -> compiled job --------===//
//
//   titan-compile --job.config_file FILE [--section.key value]...
//                 [--emit=STAGE] [--target=NAME] [-o OUT]
//
// Compiles the model a TorchTitan-style training config names to the stage
// asked for, by default a training executable. The compilation is the
// driver library's (titan/Driver/Driver.h); this is its command line.
//
//===----------------------------------------------------------------------===//

#include "titan/Contract/TrainConfig.h"
#include "titan/Driver/Driver.h"
#include "titan/Driver/TargetOption.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

using namespace titan;
using driver::Stage;
namespace cl = llvm::cl;

namespace {
// What to compile, for what (the stages' values come from the driver).
cl::opt<Stage> emitStage("emit", cl::desc("Stage to emit"),
                         cl::init(Stage::Exe));
// --target's values are the registered backends (unset: the driver's cpu).
cl::opt<const target::TargetBackend *, false, driver::TargetParser>
    kernelTarget("target", cl::desc("What the executable trains on"));
cl::opt<std::string> cudaArch(
    "cuda-arch",
    cl::desc("With --target=cuda: the GPU architecture (sm_90a: H100/H200); "
             "libtitanrt_cuda must have been built for it "
             "(-DTITAN_CUDA_ARCHS)"),
    cl::init("sm_90a"));
cl::opt<int64_t> worldSize(
    "world-size",
    cl::desc("Ranks the executable runs on, >= 1 (default: the product of "
             "the parallel degrees, with data_parallel_shard_degree = -1 "
             "taken as 1)"),
    cl::init(0));

// --emit=cost's hardware, and the device an executable's plan must fit.
cl::opt<std::string> gpuName(
    "gpu", cl::value_desc("name"),
    cl::desc("With --emit=cost: the hardware to predict for (h100, "
             "h100-96gb, h200, b200, a100, cpu; default h100, or cpu with "
             "--target=cpu). A GPU compiles the CUDA program (kernel IR "
             "only: no CUDA toolkit needed). With --emit=obj or exe on a GPU "
             "target: the device whose memory the plan must fit"));
cl::opt<std::string>
    hardwareFile("hardware", cl::value_desc("file.toml"),
                 cl::desc("With --emit=cost, obj or exe: a hardware "
                          "description (TOML, a [hardware] table; overrides "
                          "--gpu)"));
cl::opt<bool> allowMemoryOvercommit(
    "allow-memory-overcommit", cl::init(false),
    cl::desc("With --emit=obj or exe: compile even when the memory plan does "
             "not fit the device's memory (GPU targets: --gpu's) or this "
             "machine's (the CPU target)"));
enum class Format { Text, JSON };
cl::opt<Format> costFormat(
    "cost-format", cl::desc("--emit=cost's output"), cl::init(Format::Text),
    cl::values(clEnumValN(Format::Text, "text", "a report (default)"),
               clEnumValN(Format::JSON, "json", "one JSON object")));

// --plan auto.
cl::opt<std::string> planMode(
    "plan", cl::value_desc("auto"),
    cl::desc("auto: search the parallel layouts of --gpus N devices (--gpu, "
             "--hardware), print the best ones and compile the best"));
cl::opt<int64_t> planGpus("gpus", cl::desc("With --plan auto: the devices"),
                          cl::init(0));
cl::opt<double> memoryPerGpu(
    "memory-per-gpu", cl::init(0),
    cl::desc("With --plan auto: GiB a rank's planned memory may use "
             "(default: the hardware's capacity less 4 GiB on GPUs for the "
             "CUDA context and NCCL)"));
cl::opt<int64_t> planTop("plan-top",
                         cl::desc("With --plan auto: the plans listed"),
                         cl::init(10));
cl::opt<Format> planFormat(
    "plan-format", cl::desc("--plan auto's output"), cl::init(Format::Text),
    cl::values(clEnumValN(Format::Text, "text",
                          "the top plans, then compile the best (default)"),
               clEnumValN(Format::JSON, "json",
                          "every fitting plan and the search's counts as one "
                          "JSON object; compiles nothing")));
cl::opt<double> planMaxSeconds(
    "plan-max-seconds", cl::init(0),
    cl::desc("With --plan auto: wall seconds the search may spend predicting "
             "(0: no limit; the result then depends on the machine)"));
cl::opt<double> planBudget(
    "plan-budget", cl::init(4000),
    cl::desc("With --plan auto: the predictions' work, in blocks compiled "
             "plus 4 per program (about 10 ms each on a 2-core machine; 0: "
             "no limit); the candidates left are counted"));
cl::opt<bool> planCheckExtrapolation(
    "plan-check-extrapolation", cl::init(false),
    cl::desc("With --plan auto: also compile the best plan at full depth and "
             "print the reduced-depth extrapolation's error"));

// Outputs.
cl::opt<std::string> scheduleTimeline(
    "schedule-timeline", cl::value_desc("file.svg"),
    cl::desc("With --emit=schedule: also draw each rank's actions over the "
             "simulated time as an SVG chart in this file"));
cl::opt<std::string> memoryTimeline(
    "memory-timeline", cl::value_desc("file.svg"),
    cl::desc("With --emit=memory: also write the planned memory over time "
             "as an SVG chart to this file"));
enum class KeyListing { None, Tsv, Markdown };
cl::opt<KeyListing> listConfigKeys(
    "list-config-keys", cl::desc("Print every training config key and exit"),
    cl::init(KeyListing::None),
    cl::values(clEnumValN(KeyListing::Tsv, "tsv",
                          "one per line: key, group (implemented, "
                          "no-meaning, refused, alias-of KEY), default"),
               clEnumValN(KeyListing::Markdown, "markdown",
                          "docs/config-keys.md")));
cl::opt<std::string> outputFilename(
    "o", cl::desc("Output file (default: stdout; ./train for --emit=exe)"),
    cl::value_desc("filename"), cl::init("-"));

/// Prints each line of `error` as titan-compile's error; returns 1.
int reportError(llvm::Error error) {
  std::string message = llvm::toString(std::move(error));
  for (llvm::StringRef line : llvm::split(message, '\n'))
    llvm::WithColor::error(llvm::errs(), "titan-compile") << line << "\n";
  return 1;
}

void warn(llvm::StringRef message) {
  llvm::WithColor::warning(llvm::errs(), "titan-compile") << message << "\n";
}

/// Splits `--section.key value` config overrides from the tool's own
/// options and parses the latter.
llvm::Expected<std::vector<ConfigOverride>> parseArguments(int argc,
                                                           char **argv) {
  std::vector<ConfigOverride> overrides;
  std::vector<const char *> toolArgs = {argv[0]};
  if (llvm::Error e = extractConfigOverrides(
          llvm::ArrayRef<const char *>(argv + 1, argv + argc), overrides,
          toolArgs))
    return std::move(e);
  // The config keys are listed after the tool's own options in --help.
  static std::string configKeyHelp;
  llvm::raw_string_ostream help(configKeyHelp);
  help << "\nTRAINING CONFIG KEYS (--section.key value | "
          "--section.key=value):\n\n";
  printTrainConfigKeys(help);
  static cl::extrahelp configHelp(configKeyHelp);
  for (const driver::StageInfo &stage : driver::stages())
    emitStage.getParser().addLiteralOption(stage.name, stage.stage,
                                           stage.description);
  kernelTarget.getParser().addRegisteredTargets();
  mlir::registerAsmPrinterCLOptions();
  mlir::registerMLIRContextCLOptions();
  mlir::registerDefaultTimingManagerCLOptions();
  mlir::registerPassManagerCLOptions();
  cl::ParseCommandLineOptions(
      toolArgs.size(), toolArgs.data(),
      "titan-compile: Llama model + TorchTitan-style training config -> "
      "compiled training job\n\n"
      "  titan-compile --job.config_file FILE [--section.key value]... "
      "[--emit=STAGE] [-o OUT]\n\n"
      "Every key of the training config can be overridden as "
      "--section.key value or --section.key=value.\n");
  return overrides;
}

/// What the options ask of the driver.
driver::CompileOptions compileOptions() {
  driver::CompileOptions options;
  options.stage = emitStage;
  options.worldSize = worldSize;
  options.cudaArch = cudaArch;
  options.scheduleTimeline = scheduleTimeline;
  options.memoryTimeline = memoryTimeline;
  if (gpuName.getNumOccurrences())
    options.hardware.gpu = gpuName;
  options.hardware.file = hardwareFile;
  if (kernelTarget.getNumOccurrences()) {
    options.target = kernelTarget->getName().str();
    options.hardware.target = options.target;
  }
  options.costJSON = costFormat == Format::JSON;
  options.allowMemoryOvercommit = allowMemoryOvercommit;
  if (!planMode.empty()) {
    driver::PlanOptions &plan = options.plan.emplace();
    plan.gpus = planGpus;
    if (memoryPerGpu.getNumOccurrences())
      plan.memoryGiB = memoryPerGpu;
    plan.top = planTop;
    plan.json = planFormat == Format::JSON;
    plan.checkExtrapolation = planCheckExtrapolation;
    plan.maxSeconds = planMaxSeconds;
    plan.maxWork = planBudget;
    options.planLog = &llvm::errs(); // when the table is not the output
  }
  options.configurePassManager = mlir::applyPassManagerCLOptions;
  options.warn = warn;
  return options;
}

/// Options that only mean something beside another: an error naming the
/// first one given without it.
std::optional<llvm::Error> misplacedOption() {
  bool program = emitStage == Stage::Object || emitStage == Stage::Exe;
  if (emitStage != Stage::Cost && planMode.empty()) {
    if (costFormat.getNumOccurrences())
      return llvm::createStringError("--cost-format describes what "
                                     "--emit=cost prints; this compilation "
                                     "emits something else");
    for (cl::Option *o :
         std::initializer_list<cl::Option *>{&gpuName, &hardwareFile})
      if (o->getNumOccurrences() && !program)
        return llvm::createStringError(
            "--" + o->ArgStr +
            " describes what --emit=cost predicts, or the device an "
            "executable's plan must fit; this compilation emits something "
            "else");
  }
  if (allowMemoryOvercommit.getNumOccurrences() && !program)
    return llvm::createStringError("--allow-memory-overcommit applies to "
                                   "--emit=obj and --emit=exe");
  if (!planMode.empty() && planMode != "auto")
    return llvm::createStringError("--plan " + planMode +
                                   ": the only planner is 'auto'");
  if (planMode.empty())
    for (cl::Option *o : std::initializer_list<cl::Option *>{
             &planGpus, &memoryPerGpu, &planTop, &planFormat,
             &planCheckExtrapolation, &planMaxSeconds, &planBudget})
      if (o->getNumOccurrences())
        return llvm::createStringError("--" + o->ArgStr + " needs --plan auto");
  return std::nullopt;
}
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  llvm::Expected<std::vector<ConfigOverride>> overrides =
      parseArguments(argc, argv);
  if (!overrides)
    return reportError(overrides.takeError());
  if (listConfigKeys != KeyListing::None) {
    if (listConfigKeys == KeyListing::Tsv)
      listTrainConfigKeys(llvm::outs());
    else
      printTrainConfigKeysMarkdown(llvm::outs());
    return 0;
  }
  // 0 is the option's "unset" (the degrees' product); written, it is wrong.
  if (worldSize.getNumOccurrences() && worldSize <= 0)
    return reportError(llvm::createStringError(
        llvm::formatv("--world-size: {0} ranks; it must be at least 1",
                      worldSize.getValue())));
  llvm::Expected<TrainConfig> config = loadTrainConfig(*overrides);
  if (!config)
    return reportError(config.takeError());
  for (const std::string &note : config->notes)
    llvm::WithColor::note(llvm::errs(), "titan-compile") << note << "\n";
  // --emit=cost needs no CUDA runtime: it stops at the kernel IR.
  if (kernelTarget && kernelTarget->getFeatures().deviceArch &&
      emitStage != Stage::Cost)
    if (llvm::Error e = driver::checkCudaTarget(cudaArch))
      return reportError(std::move(e));
  if (std::optional<llvm::Error> misplaced = misplacedOption())
    return reportError(std::move(*misplaced));
  if (config->job.printConfig)
    printTrainConfig(*config, llvm::errs());
  driver::CompileOptions options = compileOptions();
  bool toFile = emitStage == Stage::Object || emitStage == Stage::Exe;
  if (toFile && outputFilename == "-")
    outputFilename = emitStage == Stage::Exe ? "train" : "train.o";
  options.outputPath = outputFilename;
  std::string errorMessage;
  std::unique_ptr<llvm::ToolOutputFile> output;
  if (!toFile &&
      !(output = mlir::openOutputFile(outputFilename, &errorMessage)))
    return reportError(llvm::createStringError(errorMessage));
  // Objects and executables are files; what is printed beside them (the
  // memory plan of memory_estimation.enable) goes to stdout.
  llvm::raw_ostream &os = output ? output->os() : llvm::outs();
  if (emitStage == Stage::Config) {
    printTrainConfig(*config, os);
    output->keep();
    return 0;
  }
  mlir::DefaultTimingManager timing;
  mlir::applyDefaultTimingManagerCLOptions(timing);
  mlir::TimingScope rootTimer = timing.getRootScope();
  llvm::Expected<LlamaArgs> model = [&] {
    mlir::TimingScope t = rootTimer.nest("resolve model");
    return driver::resolveModel(*config);
  }();
  if (!model)
    return reportError(model.takeError());
  if (llvm::Error e =
          driver::emitStage(*config, *model, options, os, rootTimer))
    return reportError(std::move(e));
  if (output)
    output->keep();
  return 0;
}
