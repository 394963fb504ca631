//===- ExecutableLink.cpp - the training executable's link ----------------===//

#include "titan/Target/Host/ExecutableLink.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"

using namespace titan;

static llvm::Error makeError(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg.str());
}

llvm::Error titan::linkTrainingExecutable(llvm::StringRef objectPath,
                                          llvm::StringRef outputPath,
                                          const RuntimeLink &link) {
  std::string driverName = llvm::sys::Process::GetEnv("CXX").value_or(
      link.driver.empty() ? "c++" : link.driver);
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
