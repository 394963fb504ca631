//===- FileIO.h - durable file writes and bounded reads ---------*- C++ -*-===//
//
// POSIX calls with their retries and their errors in one place: every
// failure is fatal and names the file, and writes meant to survive a crash
// end with fsync.
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_LIB_FILEIO_H
#define TITANRT_LIB_FILEIO_H

#include "llvm/ADT/StringRef.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace titanrt {

/// Opens `path` for writing: created (or truncated) when `create`, else it
/// must exist.
/// `folder`/`name`, with the platform's separator.
std::string joinPath(llvm::StringRef folder, llvm::StringRef name);

int openForWriting(const std::string &path, bool create);
/// Opens `path` for reading; `what` it is names it in the error.
int openForReading(const std::string &path, const std::string &what);

/// Writes all `bytes` at file offset `offset` (pwrite), retrying short
/// writes.
void writeFully(int fd, const void *data, size_t bytes, int64_t offset,
                const std::string &path);
/// Reads exactly `bytes` at file offset `offset` (pread); a file that ends
/// first is fatal.
void readFully(int fd, void *out, size_t bytes, int64_t offset,
               const std::string &path);

/// fsync, then close.
void syncAndClose(int fd, const std::string &path);
/// fsync of a folder, so that the files created or renamed in it survive a
/// crash of the machine.
void syncFolder(const std::string &folder);

/// Writes `text` to a new file `path` and fsyncs it.
void writeFileDurably(const std::string &path, const std::string &text);

} // namespace titanrt

#endif // TITANRT_LIB_FILEIO_H
