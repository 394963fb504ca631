//===- HostDevice.cpp - the CPU target's device: host memory --------------===//

#include "titanrt/Device.h"

#include "Communicator.h"
#include "Error.h"

#include "titan/Support/Format.h"

#include <cstdlib>
#include <cstring>

using namespace titanrt;

namespace {
class HostDevice final : public Device {
public:
  std::string target() const override { return "cpu"; }
  std::string describe() const override { return "cpu"; }
  Backend communicatorBackend() const override { return Backend::MPI; }

  char *allocateArena(int64_t bytes, uint64_t pattern) override {
    size_t size = 0;
    char *base = allocate(bytes, "arena", size);
    for (size_t i = 0; i < size / sizeof(uint64_t); ++i)
      reinterpret_cast<uint64_t *>(base)[i] = pattern;
    return base;
  }
  void freeArena(char *arena) override { std::free(arena); }
  char *allocateHostArena(int64_t bytes) override {
    size_t size = 0;
    char *base = allocate(bytes, "host arena", size);
    std::memset(base, 0, size);
    return base;
  }
  void freeHostArena(char *arena) override { std::free(arena); }
  bool hostAccessible() const override { return true; }
  // An empty copy may come with null pointers, which memcpy may not take.
  void copyToHost(void *dst, const char *src, size_t bytes) override {
    if (dst != src && bytes)
      std::memcpy(dst, src, bytes);
  }
  void copyToDevice(char *dst, const void *src, size_t bytes) override {
    if (dst != src && bytes)
      std::memcpy(dst, src, bytes);
  }
  void zero(char *dst, size_t bytes) override { std::memset(dst, 0, bytes); }
  void run(Step, void (*step)(char *), char *arena) override { step(arena); }
  void runPhase(const std::string &, void (*fn)(char *, char *), char *arena,
                char *frame) override {
    fn(arena, frame);
  }
  void copyWithin(char *dst, const char *src, size_t bytes) override {
    std::memcpy(dst, src, bytes);
  }
  void copyToDeviceInOrder(char *dst, const void *src, size_t bytes) override {
    std::memcpy(dst, src, bytes);
  }

private:
  static constexpr size_t kAlignment = 256;

  /// `bytes` rounded up to the alignment (`size`), aligned; the planned
  /// `what` in the error.
  static char *allocate(int64_t bytes, const char *what, size_t &size) {
    size = size_t(std::max<int64_t>(bytes, kAlignment));
    size = (size + kAlignment - 1) / kAlignment * kAlignment;
    auto *base = static_cast<char *>(std::aligned_alloc(kAlignment, size));
    if (!base)
      fatal(std::string("out of host memory: cannot allocate the planned ") +
            what + " of " + std::to_string(bytes) + " bytes (" +
            titan::humanBytes(double(bytes)) +
            "; titan-compile --emit=memory shows what it holds)");
    return base;
  }
};
} // namespace

Device &titanrt::hostDevice() {
  static HostDevice device;
  return device;
}
