//===- ObjectFile.cpp - a lowered step as a host object file --------------===//

#include "titan/Target/Host/ObjectFile.h"

#include "titan/Target/TargetBackend.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"

using namespace titan;

static llvm::Error makeError(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg.str());
}

void titan::embedManifest(mlir::ModuleOp module, llvm::StringRef manifest,
                          llvm::StringRef symbol) {
  mlir::OpBuilder b(module.getContext());
  b.setInsertionPointToStart(module.getBody());
  std::string text = manifest.str();
  text.push_back('\0');
  auto type = mlir::LLVM::LLVMArrayType::get(b.getI8Type(), text.size());
  mlir::LLVM::GlobalOp::create(b, module.getLoc(), type, /*isConstant=*/true,
                               mlir::LLVM::Linkage::External, symbol,
                               b.getStringAttr(text));
}

/// The CPU the generated kernels are compiled for, as llc's -mcpu.
static llvm::cl::opt<std::string> hostCPU(
    "host-cpu",
    llvm::cl::desc("The CPU the generated kernels are compiled for: "
                   "'native' (this machine's CPU and features, the default) "
                   "or an LLVM CPU name such as haswell (AVX2) or "
                   "skylake-avx512"),
    llvm::cl::init("native"));

/// Whether the module defines a function to optimize: a generated kernel
/// (the steps are optnone).
static bool hasGeneratedKernels(const llvm::Module &module) {
  return llvm::any_of(module.functions(), [](const llvm::Function &f) {
    return !f.isDeclaration() && !f.hasOptNone();
  });
}

static std::string hostFeatures() {
  llvm::SubtargetFeatures features;
  for (const auto &feature : llvm::sys::getHostCPUFeatures())
    features.AddFeature(feature.getKey(), feature.getValue());
  return features.getString();
}

/// LLVM's -O2 pipeline: the kernels' loops vectorized for `machine`.
static void optimize(llvm::Module &module, llvm::TargetMachine &machine) {
  llvm::LoopAnalysisManager loops;
  llvm::FunctionAnalysisManager functions;
  llvm::CGSCCAnalysisManager sccs;
  llvm::ModuleAnalysisManager modules;
  llvm::PassBuilder builder(&machine);
  builder.registerModuleAnalyses(modules);
  builder.registerCGSCCAnalyses(sccs);
  builder.registerFunctionAnalyses(functions);
  builder.registerLoopAnalyses(loops);
  builder.crossRegisterProxies(loops, functions, sccs, modules);
  builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2)
      .run(module, modules);
}

llvm::Error titan::emitObjectFile(mlir::ModuleOp module, llvm::StringRef path) {
  mlir::DialectRegistry registry;
  mlir::registerBuiltinDialectTranslation(registry);
  mlir::registerLLVMDialectTranslation(registry);
  module.getContext()->appendDialectRegistry(registry);

  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      mlir::translateModuleToLLVMIR(module, llvmContext);
  if (!llvmModule)
    return makeError("translation to LLVM IR failed");

  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return makeError("no LLVM target for " + triple.str() + ": " + error);
  llvm::TargetOptions options;
  // The step is a straight line of calls into the runtime, with nothing for
  // an optimizer to improve: the fast instruction selector of -O0 emits the
  // same calls in a fraction of the time (compile time is linear in the
  // number of layers). The steps are optnone; generated kernels beside them
  // are optimized and vectorized for the host's ISA, as -O2 -march=native
  // (an executable runs where it was compiled, or on the same CPUs).
  bool generated = hasGeneratedKernels(*llvmModule);
  bool native = hostCPU == "native";
  std::string cpu = !generated ? "generic"
                    : native   ? llvm::sys::getHostCPUName().str()
                               : hostCPU.getValue();
  std::string features = generated && native ? hostFeatures() : "";
  if (generated && !native &&
      !std::unique_ptr<llvm::MCSubtargetInfo>(
           target->createMCSubtargetInfo(triple, cpu, ""))
           ->isCPUStringValid(cpu))
    return makeError("--host-cpu=" + cpu + " is not a CPU LLVM knows for " +
                     triple.str());
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, cpu, features, options, llvm::Reloc::PIC_, std::nullopt,
      generated ? llvm::CodeGenOptLevel::Default
                : llvm::CodeGenOptLevel::None));
  llvmModule->setDataLayout(machine->createDataLayout());
  llvmModule->setTargetTriple(triple);
  if (generated)
    optimize(*llvmModule, *machine);

  std::error_code ec;
  llvm::raw_fd_ostream out(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return makeError("cannot write '" + path + "': " + ec.message());
  llvm::legacy::PassManager passes;
  if (machine->addPassesToEmitFile(passes, out, nullptr,
                                   llvm::CodeGenFileType::ObjectFile))
    return makeError("the LLVM target cannot emit object files");
  passes.run(*llvmModule);
  out.close();
  if (out.has_error())
    return makeError("writing '" + path + "' failed: " + out.error().message());
  return llvm::Error::success();
}

void titan::registerHostObjectEmitter() {
  target::setHostObjectEmitter(emitObjectFile);
}
