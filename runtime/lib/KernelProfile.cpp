//===- KernelProfile.cpp - per-kernel time of the CPU target --------------===//

#include "KernelProfile.h"
#include "Parallel.h"

#include "titanrt/KernelABI.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

using namespace titanrt::profile;

namespace {

const char *const kKernelNames[] = {
#define TITAN_KERNEL_Kernel(name, impl) #name,
#include "titan/Contract/KernelCatalog.def"
    "cast", "shard_offset"};

struct Entry {
  std::atomic<int64_t> nanoseconds{0};
  std::atomic<int64_t> calls{0};
};

/// A generated kernel's calls (by its function's name).
struct GeneratedEntry {
  int64_t nanoseconds = 0, calls = 0, bytes = 0;
};

/// GB/s of a parallel copy (titan_rt_parallel_for's spans and threads)
/// moving `bytes` (half read, half written): the best of 5 runs, warm.
double copyBandwidth(int64_t bytes) {
  int64_t n = std::max<int64_t>(bytes / 8, 1);
  std::vector<float> from(static_cast<size_t>(n), 1.0f);
  std::vector<float> to(static_cast<size_t>(n));
  double best = 0;
  for (int run = 0; run < 6; ++run) {
    auto begin = std::chrono::steady_clock::now();
    titanrt::forSpans(n, titanrt::kElementSpan, [&](int64_t b, int64_t e) {
      std::memcpy(to.data() + b, from.data() + b, size_t(e - b) * 4);
    });
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - begin)
            .count();
    if (run > 0 && seconds > 0)
      best = std::max(best, double(n) * 8 / seconds / 1e9);
  }
  return best;
}

/// Printed when the library unloads, after the trainer's last step.
struct Profile {
  bool on = false;
  /// By kernel and the entry point's suffix (a titan::Dtype).
  Entry entries[kNumKernels][titan::kNumDtypes];
  std::mutex generatedMutex;
  std::map<std::string, GeneratedEntry> generated;
  /// Copy bandwidth by bytes moved, measured at the first generated call
  /// of each size (before it is timed).
  std::map<int64_t, double> copies;

  Profile() {
    const char *value = std::getenv("TITAN_KERNEL_PROFILE");
    on = value && *value && std::strcmp(value, "0") != 0;
  }
  ~Profile() {
    if (!on)
      return;
    struct Row {
      int kernel;
      unsigned type;
      int64_t ns, calls;
    };
    std::vector<Row> rows;
    int64_t total = 0;
    for (int k = 0; k < kNumKernels; ++k)
      for (unsigned t = 0; t < titan::kNumDtypes; ++t)
        if (int64_t calls = entries[k][t].calls.load()) {
          int64_t ns = entries[k][t].nanoseconds.load();
          rows.push_back({k, t, ns, calls});
          total += ns;
        }
    std::stable_sort(rows.begin(), rows.end(),
                     [](const Row &a, const Row &b) { return a.ns > b.ns; });
    const char *rank = std::getenv("OMPI_COMM_WORLD_RANK");
    if (!rank)
      rank = std::getenv("PMI_RANK");
    std::fprintf(stderr,
                 "titan kernel profile (rank %s): %.1f ms in kernels\n"
                 "%-32s %10s %12s %7s\n",
                 rank ? rank : "0", total / 1e6, "kernel", "calls", "ms",
                 "share");
    for (const Row &r : rows) {
      std::string name = std::string(kKernelNames[r.kernel]) + "_" +
                         titan::dtypeName(titan::Dtype(r.type));
      std::fprintf(stderr, "%-32s %10lld %12.1f %6.1f%%\n", name.c_str(),
                   (long long)r.calls, r.ns / 1e6,
                   total ? 100.0 * double(r.ns) / double(total) : 0.0);
    }
    printGenerated();
  }

  /// Each generated kernel's bandwidth against a copy moving as many bytes.
  void printGenerated() {
    if (generated.empty())
      return;
    std::fprintf(stderr, "%-32s %10s %12s %10s %9s %9s %6s\n",
                 "generated kernel", "calls", "ms", "MB/call", "GB/s",
                 "copy GB/s", "ratio");
    for (auto &[name, e] : generated) {
      double seconds = double(e.nanoseconds) / 1e9 / double(e.calls);
      double gbps = seconds > 0 ? double(e.bytes) / seconds / 1e9 : 0;
      double copy = copies[e.bytes];
      std::fprintf(stderr, "%-32s %10lld %12.1f %10.3f %9.1f %9.1f %6.2f\n",
                   name.c_str(), (long long)e.calls, e.nanoseconds / 1e6,
                   double(e.bytes) / 1e6, gbps, copy,
                   copy > 0 ? gbps / copy : 0.0);
    }
  }
};

/// A time point on StepTrace::now()'s clock: microseconds of the steady
/// clock.
double micros(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::micro>(t.time_since_epoch())
      .count();
}

Profile &instance() {
  static Profile profile;
  return profile;
}
// Constructed at load, so the first kernel call does not race to build it.
[[maybe_unused]] Profile &loaded = instance();

} // namespace

bool titanrt::profile::enabled() { return instance().on; }

void titanrt::profile::recordGenerated(
    const char *name, int64_t bytes,
    std::chrono::steady_clock::time_point begin,
    std::chrono::steady_clock::time_point end) {
  if (enabled()) {
    Profile &p = instance();
    std::lock_guard<std::mutex> lock(p.generatedMutex);
    GeneratedEntry &e = p.generated[name];
    e.nanoseconds +=
        std::chrono::duration_cast<std::chrono::nanoseconds>(end - begin)
            .count();
    ++e.calls;
    e.bytes = bytes;
    // The reference for this size, measured now, outside the timed call.
    if (!p.copies.count(bytes))
      p.copies[bytes] = copyBandwidth(bytes);
  }
  if (trace::recording()) {
    trace::record({"generated", "kernel", micros(begin), micros(end),
                   trace::kComputeTrack, bytes,
                   titan_rt_op ? titan_rt_op : ""});
  }
}

void titanrt::profile::record(KernelId kernel, titan::Dtype type,
                              std::chrono::steady_clock::time_point begin,
                              std::chrono::steady_clock::time_point end) {
  if (enabled()) {
    Entry &e = instance().entries[kernel][unsigned(type)];
    e.nanoseconds.fetch_add(
        std::chrono::duration_cast<std::chrono::nanoseconds>(end - begin)
            .count(),
        std::memory_order_relaxed);
    e.calls.fetch_add(1, std::memory_order_relaxed);
  }
  if (trace::recording()) {
    trace::record(
        {std::string(kKernelNames[kernel]) + "_" + titan::dtypeName(type),
         "kernel", micros(begin), micros(end), trace::kComputeTrack, -1,
         titan_rt_op ? titan_rt_op : ""});
  }
}
