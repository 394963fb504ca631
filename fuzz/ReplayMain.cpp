//===- ReplayMain.cpp - run a fuzz target's inputs without libFuzzer ------===//
//
// The main() of a fuzz target in a build without libFuzzer (gcc; any
// sanitizers): each argument is an input file or a folder of them, run
// once through LLVMFuzzerTestOneInput in a fixed order. ctest runs the
// committed seeds and regression inputs this way, so a fixed crash stays
// fixed in every build.
//
//===----------------------------------------------------------------------===//

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int *argc,
                                                          char ***argv);

namespace {
/// The files named by `arg`: itself, or a folder's regular files (sorted,
/// recursively).
void collectInputs(const std::string &arg, std::vector<std::string> &out) {
  if (!llvm::sys::fs::is_directory(arg)) {
    out.push_back(arg);
    return;
  }
  std::error_code ec;
  std::vector<std::string> found;
  for (llvm::sys::fs::recursive_directory_iterator it(arg, ec), end;
       it != end && !ec; it.increment(ec))
    if (llvm::sys::fs::is_regular_file(it->path()))
      found.push_back(it->path());
  std::sort(found.begin(), found.end());
  out.insert(out.end(), found.begin(), found.end());
}
} // namespace

int main(int argc, char **argv) {
  if (LLVMFuzzerInitialize)
    LLVMFuzzerInitialize(&argc, &argv);
  std::vector<std::string> inputs;
  for (int i = 1; i < argc; ++i)
    if (argv[i][0] != '-') // libFuzzer's flags mean nothing here
      collectInputs(argv[i], inputs);
  if (inputs.empty()) {
    llvm::errs() << "usage: " << argv[0]
                 << " INPUT-FILE-OR-FOLDER...: runs each input once (a build "
                    "without libFuzzer)\n";
    return 2;
  }
  for (const std::string &path : inputs) {
    auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                              /*RequiresNullTerminator=*/false);
    if (!buffer) {
      llvm::errs() << "error: cannot read " << path << ": "
                   << buffer.getError().message() << "\n";
      return 1;
    }
    llvm::StringRef bytes = (*buffer)->getBuffer();
    // A copy of its own size, so ASan sees a read past the input's end;
    // never null, as libFuzzer's inputs (new[0] is not).
    std::unique_ptr<uint8_t[]> copy(new uint8_t[bytes.size()]);
    std::copy(bytes.begin(), bytes.end(), copy.get());
    LLVMFuzzerTestOneInput(copy.get(), bytes.size());
  }
  llvm::outs() << "ran " << inputs.size() << " inputs\n";
  return 0;
}
