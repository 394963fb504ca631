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
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
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

void titan::registerHostObjectEmitter() {
  target::setHostObjectEmitter(emitObjectFile);
}
