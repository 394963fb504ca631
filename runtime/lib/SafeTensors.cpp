//===- SafeTensors.cpp - safetensors checkpoint I/O -----------------------===//
//
// Format: 8-byte little-endian header length, a JSON header mapping names to
// {dtype, shape, data_offsets}, then the raw little-endian data.
//
//===----------------------------------------------------------------------===//

#include "SafeTensors.h"
#include "Error.h"
#include "FileIO.h"
#include "LowPrecision.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <cstring>
#include <set>

#include <sys/stat.h>
#include <unistd.h>

using namespace titanrt;

int64_t TensorRef::numel() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

namespace {

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

} // namespace

const char *titanrt::safetensorsName(Dtype dtype) {
  switch (dtype) {
  case Dtype::f32:
    return "F32";
  case Dtype::f64:
    return "F64";
  case Dtype::bf16:
    return "BF16";
  case Dtype::f16:
    return "F16";
  case Dtype::i32:
    return "I32";
  case Dtype::i64:
    return "I64";
  case Dtype::f8E4M3FN:
    return "F8_E4M3";
  case Dtype::f8E5M2:
    return "F8_E5M2";
  }
  return "?";
}

std::optional<Dtype> titanrt::parseSafetensorsName(llvm::StringRef name) {
  for (Dtype dtype : titan::kDtypes)
    if (name == safetensorsName(dtype))
      return dtype;
  return std::nullopt;
}

std::string titanrt::safetensorsHeader(const std::vector<TensorRef> &tensors,
                                       Dtype dtype,
                                       std::vector<int64_t> &dataStart,
                                       int64_t &fileBytes) {
  int64_t elementSize = dtypeBytes(dtype);
  llvm::json::Object header;
  std::vector<int64_t> offsets;
  int64_t offset = 0;
  for (const TensorRef &t : tensors) {
    int64_t bytes = t.numel() * elementSize;
    header[t.name] = llvm::json::Object{
        {"dtype", safetensorsName(dtype)},
        {"shape", llvm::json::Array(llvm::ArrayRef<int64_t>(t.shape))},
        {"data_offsets", llvm::json::Array{offset, offset + bytes}}};
    offsets.push_back(offset);
    offset += bytes;
  }
  header["__metadata__"] = llvm::json::Object{{"format", "pt"}};
  std::string text;
  llvm::raw_string_ostream(text) << llvm::json::Value(std::move(header));
  // The data starts 8-byte aligned, as the format recommends.
  while (text.size() % 8)
    text += ' ';
  uint64_t headerSize = text.size();
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i)
    bytes[i] = char((headerSize >> (8 * i)) & 0xff);
  bytes += text;
  dataStart.clear();
  for (int64_t o : offsets)
    dataStart.push_back(int64_t(bytes.size()) + o);
  fileBytes = int64_t(bytes.size()) + offset;
  return bytes;
}

/// Stops the run unless `dtype` is one the writer encodes floats to.
static void requireWritableDtype(Dtype dtype) {
  if (dtype != Dtype::f32 && dtype != Dtype::bf16 && dtype != Dtype::f16)
    fatal(std::string("cannot write safetensors of dtype '") +
          titan::dtypeName(dtype) + "' (supported: f32, bf16, f16)");
}

void titanrt::encodeElements(const float *in, int64_t count, Dtype dtype,
                             char *out) {
  requireWritableDtype(dtype);
  if (dtype == Dtype::f32) {
    std::memcpy(out, in, size_t(count) * 4);
    return;
  }
  bool bf16 = dtype == Dtype::bf16;
  for (int64_t i = 0; i < count; ++i) {
    uint16_t h = bf16 ? floatToBf16(in[i]) : floatToF16(in[i]);
    std::memcpy(out + 2 * i, &h, 2);
  }
}

void titanrt::writeSafetensors(const std::string &path,
                               const std::vector<TensorRef> &tensors,
                               Dtype dtype) {
  requireWritableDtype(dtype);
  std::vector<int64_t> dataStart;
  int64_t fileBytes = 0;
  std::string header = safetensorsHeader(tensors, dtype, dataStart, fileBytes);
  int fd = openForWriting(path, /*create=*/true);
  int64_t at = 0;
  auto writeAll = [&](const void *data, size_t bytes) {
    writeFully(fd, data, bytes, at, path);
    at += int64_t(bytes);
  };
  writeAll(header.data(), header.size());
  int64_t elementSize = dtypeBytes(dtype);
  std::vector<char> narrow;
  for (const TensorRef &t : tensors) {
    if (elementSize == 4) {
      writeAll(t.data, size_t(t.numel()) * 4);
      continue;
    }
    narrow.resize(size_t(t.numel()) * 2);
    encodeElements(t.data, t.numel(), dtype, narrow.data());
    writeAll(narrow.data(), narrow.size());
  }
  syncAndClose(fd, path);
}

llvm::Expected<uint64_t>
titanrt::parseSafetensorsHeaderSize(uint64_t fileSize,
                                    const unsigned char (&lengthBytes)[8],
                                    llvm::StringRef path) {
  auto fail = [&](const std::string &what) {
    return llvm::createStringError("checkpoint '" + path.str() + "' " + what);
  };
  if (fileSize < 8)
    return fail("is truncated: no header");
  uint64_t headerSize = 0;
  for (int i = 0; i < 8; ++i)
    headerSize |= uint64_t(lengthBytes[i]) << (8 * i);
  // The safetensors format bounds its header at 100 MB.
  if (headerSize > 100'000'000)
    return fail("has a header of " + std::to_string(headerSize) +
                " bytes, more than the format's 100 MB: not a safetensors "
                "file");
  if (headerSize > fileSize - 8)
    return fail("is truncated: its header needs " + std::to_string(headerSize) +
                " bytes");
  return headerSize;
}

namespace {
/// The bytes [begin, end) that `info`'s "data_offsets" give, or nullopt
/// when they are not two integers 0 <= begin <= end.
std::optional<std::pair<int64_t, int64_t>>
dataOffsets(const llvm::json::Object &info) {
  const llvm::json::Array *offsets = info.getArray("data_offsets");
  if (!offsets || offsets->size() != 2)
    return std::nullopt;
  std::optional<int64_t> begin = (*offsets)[0].getAsInteger();
  std::optional<int64_t> end = (*offsets)[1].getAsInteger();
  if (!begin || !end || *begin < 0 || *end < *begin)
    return std::nullopt;
  return std::pair(*begin, *end);
}
} // namespace

llvm::Expected<std::vector<SafetensorsEntry>>
titanrt::parseSafetensorsHeader(llvm::StringRef headerText, uint64_t fileSize,
                                const std::vector<TensorRef> &tensors,
                                llvm::StringRef path) {
  auto fail = [&](const std::string &what) {
    return llvm::createStringError("checkpoint '" + path.str() + "'" + what);
  };
  if (fileSize < 8 + uint64_t(headerText.size()))
    return fail(" is truncated: its header needs " +
                std::to_string(headerText.size()) + " bytes");
  llvm::Expected<llvm::json::Value> header = llvm::json::parse(headerText);
  if (!header)
    return fail(" has an invalid header: " +
                llvm::toString(header.takeError()));
  const llvm::json::Object *entries = header->getAsObject();
  if (!entries)
    return fail(" has an invalid header: not an object");
  int64_t dataStart = int64_t(8 + headerText.size());
  uint64_t dataSize = fileSize - 8 - headerText.size();

  std::set<std::string> expected;
  for (const TensorRef &t : tensors)
    expected.insert(t.name);
  for (const auto &entry : *entries)
    if (entry.first != "__metadata__" && !expected.count(entry.first.str()))
      return fail(" has an unexpected tensor '" + entry.first.str() +
                  "' (not a parameter of this model)");

  std::vector<SafetensorsEntry> out;
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (const TensorRef &t : tensors) {
    const llvm::json::Object *info = entries->getObject(t.name);
    if (!info)
      return fail(" is missing tensor '" + t.name + "'");
    std::vector<int64_t> shape;
    if (const llvm::json::Array *dims = info->getArray("shape"))
      for (const llvm::json::Value &d : *dims)
        shape.push_back(d.getAsInteger().value_or(-1));
    if (shape != t.shape)
      return fail(": tensor '" + t.name + "' has shape " + shapeString(shape) +
                  ", the model expects " + shapeString(t.shape));
    llvm::StringRef name = info->getString("dtype").value_or("");
    std::optional<Dtype> dtype = parseSafetensorsName(name);
    if (dtype != Dtype::f32 && dtype != Dtype::bf16 && dtype != Dtype::f16)
      return fail(": tensor '" + t.name + "' has dtype '" + name.str() +
                  "' (supported: F32, BF16, F16)");
    std::optional<std::pair<int64_t, int64_t>> range = dataOffsets(*info);
    if (!range ||
        range->second - range->first != t.numel() * dtypeBytes(*dtype))
      return fail(": tensor '" + t.name + "' has invalid data_offsets");
    if (uint64_t(range->second) > dataSize)
      return fail(" is truncated: tensor '" + t.name + "' ends at byte " +
                  std::to_string(range->second) + " of " +
                  std::to_string(dataSize));
    ranges.push_back(*range);
    out.push_back({dataStart + range->first, *dtype});
  }
  // The tensors' bytes tile the data exactly: no tensor overlaps another
  // (a header whose offsets all start at 0 would load the same bytes into
  // every tensor), and no byte is left over.
  llvm::sort(ranges);
  int64_t covered = 0;
  for (auto [begin, end] : ranges) {
    if (begin != covered)
      return fail(" has invalid data_offsets: " +
                  std::string(begin < covered
                                  ? "two tensors overlap at byte "
                                  : "bytes are unused before byte ") +
                  std::to_string(begin));
    covered = end;
  }
  if (uint64_t(covered) != dataSize)
    return fail(" has " + std::to_string(int64_t(dataSize) - covered) +
                " bytes after its last tensor");
  return out;
}

SafetensorsReader::SafetensorsReader(const std::string &path,
                                     const std::vector<TensorRef> &tensors) {
  requireRegularFile(path, "checkpoint");
  path_ = path;
  fd_ = openForReading(path, "checkpoint");
  struct stat info;
  if (::fstat(fd_, &info) != 0)
    fatal("cannot read checkpoint '" + path + "': " + std::strerror(errno));
  uint64_t fileSize = uint64_t(info.st_size);
  unsigned char sizeBytes[8] = {};
  if (fileSize >= 8)
    readFully(fd_, sizeBytes, 8, 0, path);
  llvm::Expected<uint64_t> headerSize =
      parseSafetensorsHeaderSize(fileSize, sizeBytes, path);
  if (!headerSize)
    fatal(llvm::toString(headerSize.takeError()));
  std::string headerText(*headerSize, '\0');
  readFully(fd_, headerText.data(), *headerSize, 8, path);
  llvm::Expected<std::vector<SafetensorsEntry>> entries =
      parseSafetensorsHeader(headerText, fileSize, tensors, path);
  if (!entries)
    fatal(llvm::toString(entries.takeError()));
  tensors_ = std::move(*entries);
}

SafetensorsReader::~SafetensorsReader() {
  if (fd_ >= 0)
    ::close(fd_);
}

void SafetensorsReader::read(size_t index, int64_t first, int64_t count,
                             float *out) const {
  const SafetensorsEntry &t = tensors_[index];
  if (t.dtype == Dtype::f32) {
    readFully(fd_, out, size_t(4 * count), t.offset + 4 * first, path_);
    return;
  }
  std::vector<uint16_t> narrow(static_cast<size_t>(count));
  readFully(fd_, narrow.data(), size_t(2 * count), t.offset + 2 * first, path_);
  for (int64_t i = 0; i < count; ++i)
    out[i] =
        t.dtype == Dtype::bf16 ? bf16ToFloat(narrow[i]) : f16ToFloat(narrow[i]);
}
