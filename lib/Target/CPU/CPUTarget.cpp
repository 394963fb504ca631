//===- CPUTarget.cpp - object emission and linking for the CPU ------------===//

#include "titan/Target/CPU/CPUTarget.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"

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
  // number of layers).
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, "generic", "", options, llvm::Reloc::PIC_, std::nullopt,
      llvm::CodeGenOptLevel::None));
  llvmModule->setDataLayout(machine->createDataLayout());
  llvmModule->setTargetTriple(triple);

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

llvm::Error titan::linkTrainingExecutable(llvm::StringRef objectPath,
                                          llvm::StringRef outputPath,
                                          const RuntimeLink &link) {
  std::string driverName = llvm::sys::Process::GetEnv("CXX").value_or("c++");
  llvm::ErrorOr<std::string> driver = llvm::sys::findProgramByName(driverName);
  if (!driver)
    return makeError("cannot find the C++ driver '" + driverName +
                     "' to link the executable (set CXX)");
  llvm::SmallString<256> mainLib(link.runtimeDir);
  llvm::sys::path::append(mainLib, "libtitanrt_main.a");
  if (!llvm::sys::fs::exists(mainLib))
    return makeError("libtitanrt is not built: no '" + mainLib + "'");
  for (const std::string &lib : link.kernelLibraries) {
    llvm::SmallString<256> file(lib);
    if (llvm::StringRef(lib).starts_with("-l")) {
      file = link.runtimeDir;
      llvm::sys::path::append(file, "lib" + lib.substr(2) + ".so");
    }
    if (!llvm::sys::fs::exists(file))
      return makeError("the target's kernel library is not built: no '" + file +
                       "'");
  }
  std::string rpath = "-Wl,-rpath,$ORIGIN:" + link.runtimeDir;
  for (const std::string &dir : link.libraryDirs)
    rpath += ":" + dir;
  std::string libDir = "-L" + link.runtimeDir;
  // The object and main() first; the kernel libraries before libtitanrt,
  // which they call; the system libraries they need last.
  llvm::SmallVector<llvm::StringRef> args = {*driver, objectPath};
  for (const std::string &flag : link.driverFlags)
    args.push_back(flag);
  for (const std::string &input : link.extraInputs)
    args.push_back(input);
  args.push_back(mainLib);
  args.push_back(libDir);
  for (const std::string &lib : link.kernelLibraries)
    args.push_back(lib);
  args.push_back("-ltitanrt");
  for (const std::string &lib : link.systemLibraries)
    args.push_back(lib);
  args.append({rpath, "-o", outputPath});
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(*driver, args, std::nullopt, {}, 0, 0,
                                     &message);
  if (rc != 0)
    return makeError("linking '" + outputPath + "' failed" +
                     (message.empty() ? "" : ": " + message));
  return llvm::Error::success();
}
