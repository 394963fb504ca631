//===- SafeTensors.cpp - safetensors checkpoint I/O -----------------------===//
//
// Format: 8-byte little-endian header length, a JSON header mapping names to
// {dtype, shape, data_offsets}, then the raw little-endian data.
//
//===----------------------------------------------------------------------===//

#include "SafeTensors.h"
#include "Error.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>
#include <set>

using namespace titanrt;

int64_t TensorRef::numel() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

namespace {

uint16_t floatToBF16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7fffffff) > 0x7f800000) // NaN stays NaN
    return uint16_t((bits >> 16) | 0x40);
  // Round to nearest even, as PyTorch's conversion does.
  bits += 0x7fff + ((bits >> 16) & 1);
  return uint16_t(bits >> 16);
}

float bf16ToFloat(uint16_t h) {
  uint32_t bits = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t floatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  int32_t exp = int32_t((x >> 23) & 0xff) - 127 + 15;
  uint32_t mant = x & 0x7fffff;
  if (((x >> 23) & 0xff) == 0xff) // inf / nan
    return uint16_t(sign | 0x7c00 | (mant ? 0x200 : 0));
  if (exp >= 31)
    return uint16_t(sign | 0x7c00);
  if (exp <= 0) { // subnormal or zero
    if (exp < -10)
      return uint16_t(sign);
    mant |= 0x800000;
    uint32_t shift = uint32_t(14 - exp);
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1)))
      ++half;
    return uint16_t(sign | half);
  }
  uint32_t half = sign | (uint32_t(exp) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (half & 1)))
    ++half; // may carry into the exponent, which is correct rounding
  return uint16_t(half);
}

float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else { // normalize a subnormal
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while (!(mant & 0x400));
      bits = sign | uint32_t(127 - 15 - e) << 23 | (mant & 0x3ff) << 13;
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000 | mant << 13;
  } else {
    bits = sign | (exp - 15 + 127) << 23 | mant << 13;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

} // namespace

void titanrt::saveSafetensors(const std::string &path,
                              const std::vector<TensorRef> &tensors,
                              const std::string &exportDtype) {
  std::string dtype = exportDtype == "bfloat16"  ? "BF16"
                      : exportDtype == "float16" ? "F16"
                                                 : "F32";
  int64_t elementSize = dtype == "F32" ? 4 : 2;
  llvm::json::Object header;
  int64_t offset = 0;
  for (const TensorRef &t : tensors) {
    int64_t bytes = t.numel() * elementSize;
    header[t.name] = llvm::json::Object{
        {"dtype", dtype},
        {"shape", llvm::json::Array(llvm::ArrayRef<int64_t>(t.shape))},
        {"data_offsets", llvm::json::Array{offset, offset + bytes}}};
    offset += bytes;
  }
  header["__metadata__"] = llvm::json::Object{{"format", "pt"}};
  std::string text;
  llvm::raw_string_ostream(text) << llvm::json::Value(std::move(header));
  while (text.size() % 8)
    text += ' ';

  llvm::SmallString<256> dir(path);
  llvm::sys::path::remove_filename(dir);
  if (!dir.empty())
    if (std::error_code ec = llvm::sys::fs::create_directories(dir))
      fatal("cannot create checkpoint folder '" + dir.str().str() +
            "': " + ec.message());
  std::string tmp = path + ".tmp";
  std::error_code ec;
  {
    llvm::raw_fd_ostream out(tmp, ec);
    if (ec)
      fatal("cannot write checkpoint '" + tmp + "': " + ec.message());
    uint64_t headerSize = text.size();
    char sizeBytes[8];
    for (int i = 0; i < 8; ++i)
      sizeBytes[i] = char((headerSize >> (8 * i)) & 0xff);
    out.write(sizeBytes, 8);
    out << text;
    std::vector<uint16_t> narrow;
    for (const TensorRef &t : tensors) {
      if (elementSize == 4) {
        out.write(reinterpret_cast<const char *>(t.data), t.numel() * 4);
        continue;
      }
      narrow.resize(t.numel());
      for (int64_t i = 0; i < t.numel(); ++i)
        narrow[i] =
            dtype == "BF16" ? floatToBF16(t.data[i]) : floatToHalf(t.data[i]);
      out.write(reinterpret_cast<const char *>(narrow.data()), t.numel() * 2);
    }
    out.close();
    if (out.has_error())
      fatal("writing checkpoint '" + tmp +
            "' failed: " + out.error().message());
  }
  if (std::error_code rc = llvm::sys::fs::rename(tmp, path))
    fatal("cannot move checkpoint into place at '" + path +
          "': " + rc.message());
}

void titanrt::loadSafetensors(const std::string &path,
                              const std::vector<TensorRef> &tensors) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    fatal("cannot read checkpoint '" + path +
          "': " + buffer.getError().message());
  llvm::StringRef file = (*buffer)->getBuffer();
  if (file.size() < 8)
    fatal("checkpoint '" + path + "' is truncated: no header");
  uint64_t headerSize = 0;
  for (int i = 0; i < 8; ++i)
    headerSize |= uint64_t(uint8_t(file[i])) << (8 * i);
  if (headerSize > file.size() - 8)
    fatal("checkpoint '" + path + "' is truncated: its header needs " +
          std::to_string(headerSize) + " bytes");
  llvm::Expected<llvm::json::Value> header =
      llvm::json::parse(file.substr(8, headerSize));
  if (!header)
    fatal("checkpoint '" + path +
          "' has an invalid header: " + llvm::toString(header.takeError()));
  const llvm::json::Object *entries = header->getAsObject();
  if (!entries)
    fatal("checkpoint '" + path + "' has an invalid header: not an object");
  llvm::StringRef data = file.drop_front(8 + headerSize);

  std::set<std::string> expected;
  for (const TensorRef &t : tensors)
    expected.insert(t.name);
  for (const auto &entry : *entries)
    if (entry.first != "__metadata__" && !expected.count(entry.first.str()))
      fatal("checkpoint '" + path + "' has an unexpected tensor '" +
            entry.first.str() + "' (not a parameter of this model)");

  for (const TensorRef &t : tensors) {
    const llvm::json::Object *info = entries->getObject(t.name);
    if (!info)
      fatal("checkpoint '" + path + "' is missing tensor '" + t.name + "'");
    std::vector<int64_t> shape;
    if (const llvm::json::Array *dims = info->getArray("shape"))
      for (const llvm::json::Value &d : *dims)
        shape.push_back(d.getAsInteger().value_or(-1));
    if (shape != t.shape)
      fatal("checkpoint '" + path + "': tensor '" + t.name + "' has shape " +
            shapeString(shape) + ", the model expects " + shapeString(t.shape));
    std::string dtype = info->getString("dtype").value_or("").str();
    int64_t elementSize = dtype == "F32" ? 4 : 2;
    if (dtype != "F32" && dtype != "BF16" && dtype != "F16")
      fatal("checkpoint '" + path + "': tensor '" + t.name + "' has dtype '" +
            dtype + "' (supported: F32, BF16, F16)");
    const llvm::json::Array *offsets = info->getArray("data_offsets");
    int64_t begin = offsets && offsets->size() == 2
                        ? (*offsets)[0].getAsInteger().value_or(-1)
                        : -1;
    int64_t end = offsets && offsets->size() == 2
                      ? (*offsets)[1].getAsInteger().value_or(-1)
                      : -1;
    if (begin < 0 || end - begin != t.numel() * elementSize)
      fatal("checkpoint '" + path + "': tensor '" + t.name +
            "' has invalid data_offsets");
    if (uint64_t(end) > data.size())
      fatal("checkpoint '" + path + "' is truncated: tensor '" + t.name +
            "' ends at byte " + std::to_string(end) + " of " +
            std::to_string(data.size()));
    const char *src = data.data() + begin;
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (elementSize == 4) {
        std::memcpy(&t.data[i], src + 4 * i, 4);
      } else {
        uint16_t h;
        std::memcpy(&h, src + 2 * i, 2);
        t.data[i] = dtype == "BF16" ? bf16ToFloat(h) : halfToFloat(h);
      }
    }
  }
}
