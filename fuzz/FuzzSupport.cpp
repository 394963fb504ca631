//===- FuzzSupport.cpp - what titan's fuzz targets share ------------------===//

#include "FuzzSupport.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <cstdlib>

std::string titan::fuzz::writeScratchFile(llvm::StringRef name,
                                          const uint8_t *data, size_t size) {
  // One folder per process: parallel fuzzing jobs (-jobs) share $TMPDIR.
  static std::string folder;
  static const bool made = [] {
    llvm::SmallString<128> path;
    llvm::sys::path::system_temp_directory(/*ErasedOnReboot=*/true, path);
    llvm::sys::path::append(
        path,
        "titan-fuzz-" + std::to_string(llvm::sys::Process::getProcessId()));
    if (std::error_code ec = llvm::sys::fs::create_directories(path)) {
      llvm::errs() << "fuzz harness: cannot create " << path << ": "
                   << ec.message() << "\n";
      std::abort();
    }
    folder = std::string(path);
    // Gone when the process exits (libFuzzer's runs end in exit()).
    std::atexit([] { (void)llvm::sys::fs::remove_directories(folder); });
    return true;
  }();
  (void)made;
  llvm::SmallString<128> path(folder);
  llvm::sys::path::append(path, name);
  std::FILE *file = std::fopen(path.c_str(), "wb");
  if (!file || std::fwrite(data, 1, size, file) != size ||
      std::fclose(file) != 0) {
    llvm::errs() << "fuzz harness: cannot write " << path << "\n";
    std::abort();
  }
  return std::string(path);
}

void titan::fuzz::expectedRefusal(llvm::Error error) {
  static const bool verbose = std::getenv("TITAN_FUZZ_VERBOSE") != nullptr;
  if (!error)
    return;
  if (verbose)
    llvm::errs() << "refused: " << llvm::toString(std::move(error)) << "\n";
  else
    llvm::consumeError(std::move(error));
}
