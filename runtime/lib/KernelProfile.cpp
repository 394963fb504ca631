//===- KernelProfile.cpp - per-kernel time of the CPU target --------------===//

#include "KernelProfile.h"

#include "titanrt/KernelABI.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

/// Printed when the library unloads, after the trainer's last step.
struct Profile {
  bool on = false;
  /// By kernel and the entry point's suffix (a titan::Dtype).
  Entry entries[kNumKernels][titan::kNumDtypes];

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
  }
};

Profile &instance() {
  static Profile profile;
  return profile;
}
// Constructed at load, so the first kernel call does not race to build it.
[[maybe_unused]] Profile &loaded = instance();

} // namespace

bool titanrt::profile::enabled() { return instance().on; }

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
    // StepTrace::now()'s clock: microseconds of the steady clock.
    auto micros = [](std::chrono::steady_clock::time_point t) {
      return std::chrono::duration<double, std::micro>(t.time_since_epoch())
          .count();
    };
    trace::record(
        {std::string(kKernelNames[kernel]) + "_" + titan::dtypeName(type),
         "kernel", micros(begin), micros(end), trace::kComputeTrack, -1,
         titan_rt_op ? titan_rt_op : ""});
  }
}
