//===- FuzzSupport.h - what titan's fuzz targets share ----------*- C++ -*-===//
//
// Each fuzz target is one input surface: LLVMFuzzerTestOneInput feeds the
// bytes to titan's reader and returns; a reader's error is the expected
// outcome of most inputs, and only a crash, a sanitizer report, a hang or
// an out-of-memory is a finding. The targets link libFuzzer in a fuzz build
// (scripts/fuzz.sh: clang, ASan + UBSan, -fsanitize=fuzzer) and
// ReplayMain.cpp elsewhere, which runs the committed inputs as a test.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_FUZZ_FUZZSUPPORT_H
#define TITAN_FUZZ_FUZZSUPPORT_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace titan::fuzz {

/// The input as text (it may hold any byte, NUL included).
inline llvm::StringRef asText(const uint8_t *data, size_t size) {
  return llvm::StringRef(reinterpret_cast<const char *>(data), size);
}

/// Writes `data` to `name` in this process's scratch folder (under
/// $TMPDIR), replacing it, and returns its path: for readers that take a
/// file. Aborts when it cannot (a harness failure, not a finding).
std::string writeScratchFile(llvm::StringRef name, const uint8_t *data,
                             size_t size);

/// Drops the error, if any: the reader refused the input, as it should. With
/// TITAN_FUZZ_VERBOSE set it prints it first (to see why a seed or a
/// corpus input is refused).
void expectedRefusal(llvm::Error error);

} // namespace titan::fuzz

#endif // TITAN_FUZZ_FUZZSUPPORT_H
