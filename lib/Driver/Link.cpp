//===- Link.cpp - a compiled job's objects and executable -----------------===//
//
// Object emission and the link through the target's backend, with this
// build's runtime folder and driver flags (compile definitions from CMake).
//
//===----------------------------------------------------------------------===//

#include "titan/Driver/Link.h"

#include "titan/Driver/PipelineJob.h"
#include "titan/Target/Host/ExecutableLink.h"
#include "titan/Target/Host/ObjectFile.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

using namespace titan;
using namespace titan::driver;

namespace {
llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message.str());
}

/// The space-separated flags of a compile definition, as a std::vector
/// (flags themselves hold commas: -fno-sanitize=vptr,function).
std::vector<std::string> splitFlags(llvm::StringRef list) {
  llvm::SmallVector<llvm::StringRef> items;
  list.split(items, ' ', -1, false);
  return {items.begin(), items.end()};
}

/// Writes the pipeline ranks' program table (and main()) to a temporary
/// C++ source; returns its path.
llvm::Expected<std::string>
writeProgramTable(const std::vector<std::vector<std::string>> &programs) {
  llvm::SmallString<128> path;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("titan-programs", "cpp", path))
    return error("cannot create a temporary source file: " + ec.message());
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec) {
    llvm::sys::fs::remove(path);
    return error("cannot write '" + path + "': " + ec.message());
  }
  os << pipelineTableSource(programs);
  return path.str().str();
}
} // namespace

std::string driver::runtimeDir() {
  if (std::optional<std::string> env =
          llvm::sys::Process::GetEnv("TITAN_RUNTIME_DIR"))
    return *env;
  return TITAN_DEFAULT_RUNTIME_DIR;
}

llvm::Error driver::linkExecutable(const LinkInputs &inputs,
                                   const target::TargetBackend &target) {
  if (inputs.objects.empty())
    return error("internal error: nothing to link");
  RuntimeLink link;
  link.runtimeDir = runtimeDir();
  target::TargetLink targetLink = target.getTargetLink(link.runtimeDir);
  link.kernelLibraries = std::move(targetLink.kernelLibraries);
  link.systemLibraries = std::move(targetLink.systemLibraries);
  link.libraryDirs = std::move(targetLink.libraryDirs);
  // Host steps call libtitanrt_host's entries, on any target.
  if (inputs.hostSteps)
    link.kernelLibraries.push_back("-ltitanrt_host");
  link.driver = TITAN_RUNTIME_LINK_DRIVER;
  link.driverFlags = splitFlags(TITAN_RUNTIME_LINK_FLAGS);
  link.extraInputs.assign(inputs.objects.begin() + 1, inputs.objects.end());
  std::string table;
  if (!inputs.pipelinePrograms.empty()) {
    llvm::Expected<std::string> written =
        writeProgramTable(inputs.pipelinePrograms);
    if (!written)
      return written.takeError();
    table = *written;
    link.extraInputs.push_back(table);
  }
  llvm::Error linked =
      linkTrainingExecutable(inputs.objects.front(), inputs.outputPath, link);
  if (!table.empty())
    llvm::sys::fs::remove(table);
  return linked;
}

llvm::Expected<std::string>
driver::writeObject(mlir::ModuleOp module, llvm::StringRef path,
                    llvm::StringRef tempPrefix,
                    const target::TargetBackend &target) {
  llvm::SmallString<128> objectPath(path);
  if (path.empty())
    if (std::error_code ec =
            llvm::sys::fs::createTemporaryFile(tempPrefix, "o", objectPath))
      return error("cannot create a temporary object file: " + ec.message());
  // The backends' default emission is the host's, which the registry
  // does not link; the driver does.
  registerHostObjectEmitter();
  if (llvm::Error e = target.emitObject(module, objectPath))
    return std::move(e);
  return objectPath.str().str();
}
