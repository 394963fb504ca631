//===- Device.h - where compiled steps run ----------------------*- C++ -*-===//
//
// The training loop (Trainer.cpp) is the same for every target; what
// differs is where the planned arena is allocated, how the host reaches the
// state in it, and how a step function is run. Each target's kernel
// library (libtitanrt_cpu, libtitanrt_cuda) provides one Device, returned
// by titan_rt_target_device(), which the executable's main() passes to the
// loop.
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_DEVICE_H
#define TITANRT_DEVICE_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace titanrt {

enum class Backend;

class Device {
public:
  virtual ~Device() = default;

  /// The titan-compile --target this device runs: "cpu" or "cuda".
  virtual std::string target() const = 0;
  /// "cpu", or the GPU's name and index.
  virtual std::string describe() const = 0;
  /// Called once after the communicator (if any) exists and before
  /// anything else: picks the rank's GPU among those the process sees.
  virtual void select(int64_t localRank) { (void)localRank; }
  /// The communicator backend of multi-rank runs on this device.
  virtual Backend communicatorBackend() const = 0;

  /// Allocates the arena once, every 8-byte word set to `pattern` (which
  /// no computation writes, so the high-water mark can be found).
  virtual char *allocateArena(int64_t bytes, uint64_t pattern) = 0;
  virtual void freeArena(char *arena) = 0;
  /// Allocates the host arena of training.enable_cpu_offload once, zeroed:
  /// host memory the device's copies reach directly (pinned on a GPU),
  /// which the compiled steps address from titan_rt_host_arena.
  virtual char *allocateHostArena(int64_t bytes) = 0;
  virtual void freeHostArena(char *arena) = 0;
  /// Whether the host may read and write arena addresses directly.
  virtual bool hostAccessible() const = 0;
  /// Copies between host memory and the arena (after the steps before).
  virtual void copyToHost(void *dst, const char *src, size_t bytes) = 0;
  virtual void copyToDevice(char *dst, const void *src, size_t bytes) = 0;
  virtual void zero(char *dst, size_t bytes) = 0;

  /// Which compiled step a run is of (each may be captured once).
  /// (Eval: validation's forward-only step.)
  enum class Step { ForwardBackward, OptimizerStep, Eval };
  /// Runs `step` on `arena` and returns when its results can be read.
  virtual void run(Step which, void (*step)(char *arena), char *arena) = 0;
  /// Pipeline parallelism runs a rank's action list as work issued in
  /// order (on a GPU: enqueued on the compute stream, the host running
  /// ahead; on the CPU: done at once) and waits only at the end of the
  /// list, so that the host never blocks a transfer its peers wait for.
  ///
  /// Runs the phase function `fn(arena, frame)` (frame may be null) in
  /// issue order; a target with graphs captures each (fn, frame) pair once
  /// and replays it (the phase's addresses are fixed by the pair). `name`
  /// says what it is in errors ("pipeline stage 1's forward").
  virtual void runPhase(const std::string &name,
                        void (*fn)(char *arena, char *frame), char *arena,
                        char *frame) = 0;
  /// Copies `bytes` from `src` to `dst`, both in device memory, in issue
  /// order.
  virtual void copyWithin(char *dst, const char *src, size_t bytes) = 0;
  /// Copies `bytes` of host memory at `src` into device memory in issue
  /// order; `src` must stay unchanged until synchronize() returns.
  virtual void copyToDeviceInOrder(char *dst, const void *src,
                                   size_t bytes) = 0;
  /// Pins host memory that copyToDeviceInOrder reads (a GPU copies from
  /// pinned memory without staging it; failing that, it stays pageable);
  /// unpin before freeing it.
  virtual void pinHostMemory(void *ptr, size_t bytes) {
    (void)ptr;
    (void)bytes;
  }
  virtual void unpinHostMemory(void *ptr) { (void)ptr; }
  /// Returns once every piece of work issued so far has completed, `what`
  /// naming it in an error.
  virtual void synchronize(const std::string &what) { (void)what; }

  /// Run-time options: CUDA graphs on or off (targets without graphs
  /// ignore it).
  virtual void setGraphs(bool enabled) { (void)enabled; }
  /// Destroys the captured graphs (a later run captures anew). Called
  /// before the communicator is torn down: a graph that captured NCCL work
  /// keeps its communicators referenced, and NCCL's teardown waits for that
  /// (RankShutdown.h). Idempotent.
  virtual void releaseGraphs() {}
  /// Frees the device's library handles and what releaseGraphs() frees.
  /// Called once at the end of a run, while the GPU runtime is certainly
  /// still loaded: static destructors may run after it has unloaded, so
  /// nothing that calls into it is destroyed there (an exit on error
  /// leaves them to the driver's process teardown).
  virtual void release() {}
};

/// The CPU: the arena is host memory, steps run on the calling thread.
Device &hostDevice();

} // namespace titanrt

extern "C" {
/// Defined by each target's kernel library.
titanrt::Device *titan_rt_target_device(void);
}

#endif // TITANRT_DEVICE_H
