//===- CollectiveBench.cpp - nccl-tests' table for titan's communicators --===//
//
// Times all_gather, reduce_scatter, all_reduce and sendrecv through
// titanrt::Communicator (MPI on host buffers; NCCL on device buffers in a
// CUDA build) and prints nccl-tests' out-of-place table: size, count,
// type, redop, root, time, algbw, busbw, #wrong. The definitions are
// nccl-tests' (v2.19.6, doc/PERFORMANCE.md and src/*.cu):
//   size  = the larger of the send and receive buffers in bytes: the
//           gathered output of all_gather, the input of reduce_scatter, the
//           buffer of all_reduce and of sendrecv;
//   count = size / element size;
//   time  = the mean iteration time of `-n` back-to-back iterations (after
//           `-w` warm-ups and one barrier, none between iterations),
//           combined over ranks as `-a` says (0 rank 0, 1 mean, 2 min,
//           3 max; default 3: a collective is as slow as its slowest rank);
//   algbw = size / time;
//   busbw = algbw x (n-1)/n (all_gather, reduce_scatter), x 2(n-1)/n
//           (all_reduce), x 1 (sendrecv).
// Each size is first run once on a known pattern (small integers, exact in
// bf16 and in any order of summation) and every output element checked;
// #wrong is the number of wrong elements summed over ranks.
//
//   mpirun -np N titan-comm-bench [-b 8] [-e 128M] [-f 2] [-n 20] [-w 5]
//       [-d float|bfloat16] [-a 0..3] [--backend mpi|nccl]
//       [--collectives all_gather,reduce_scatter,all_reduce,sendrecv]
//       [--json FILE]
//
// --json writes every row (and the machine's launch) as one JSON document
// for the communication cost model. Exits 1 when an element is wrong.
//
//===----------------------------------------------------------------------===//

#include "Communicator.h"
#include "Error.h"
#include "LowPrecision.h"

#include <mpi.h>

#ifdef TITAN_HAVE_NCCL
#include <cuda_runtime.h>
#endif

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

using namespace titanrt;

namespace {

enum class Collective { AllGather, ReduceScatter, AllReduce, SendRecv };

const char *collectiveName(Collective c) {
  switch (c) {
  case Collective::AllGather:
    return "all_gather";
  case Collective::ReduceScatter:
    return "reduce_scatter";
  case Collective::AllReduce:
    return "all_reduce";
  case Collective::SendRecv:
    return "sendrecv";
  }
  return "?";
}

struct Options {
  int64_t minBytes = 8, maxBytes = 128 << 20, factor = 2;
  int iters = 20, warmup = 5, average = 3;
  Dtype type = Dtype::f32;
  Backend backend = Backend::MPI;
  std::vector<Collective> collectives = {
      Collective::AllGather, Collective::ReduceScatter, Collective::AllReduce,
      Collective::SendRecv};
  std::string json;
};

/// Usage errors: every rank parses the same arguments, so every rank fails
/// alike and rank 0 alone says why. The first error is kept.
struct Errors {
  std::string first;
  bool help = false;
  void add(std::string message) {
    if (first.empty())
      first = std::move(message);
  }
};

/// "8", "1K", "128M", "2G" (powers of 1024, as nccl-tests' -b and -e).
int64_t parseBytes(const std::string &flag, const std::string &text,
                   Errors &errors) {
  char *end = nullptr;
  errno = 0;
  long long value = std::strtoll(text.c_str(), &end, 10);
  int64_t scale = 1;
  if (end && *end) {
    switch (*end) {
    case 'K':
    case 'k':
      scale = 1 << 10;
      break;
    case 'M':
    case 'm':
      scale = 1 << 20;
      break;
    case 'G':
    case 'g':
      scale = 1 << 30;
      break;
    default:
      scale = 0;
    }
    if (scale && end[1])
      scale = 0;
  }
  if (end == text.c_str() || errno || scale == 0 || value <= 0 ||
      value > (int64_t(1) << 40) / scale) {
    errors.add(flag + " '" + text +
               "' is not a size in bytes (a positive integer with an "
               "optional K, M or G suffix, at most 1T)");
    return 1;
  }
  return int64_t(value) * scale;
}

int parseInt(const std::string &flag, const std::string &text, int lo, int hi,
             Errors &errors) {
  char *end = nullptr;
  errno = 0;
  long value = std::strtol(text.c_str(), &end, 10);
  if (end == text.c_str() || *end || errno || value < lo || value > hi) {
    errors.add(flag + " '" + text + "' is not an integer in [" +
               std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return lo;
  }
  return int(value);
}

Options parseOptions(int argc, char **argv, Errors &errors) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      errors.help = true;
      return o;
    }
    if (i + 1 >= argc) {
      errors.add("'" + arg + "' needs a value, or is unknown");
      return o;
    }
    std::string value = argv[++i];
    if (arg == "-b" || arg == "--minbytes")
      o.minBytes = parseBytes(arg, value, errors);
    else if (arg == "-e" || arg == "--maxbytes")
      o.maxBytes = parseBytes(arg, value, errors);
    else if (arg == "-f" || arg == "--stepfactor")
      o.factor = parseInt(arg, value, 2, 1 << 20, errors);
    else if (arg == "-n" || arg == "--iters")
      o.iters = parseInt(arg, value, 1, 1 << 24, errors);
    else if (arg == "-w" || arg == "--warmup_iters")
      o.warmup = parseInt(arg, value, 0, 1 << 24, errors);
    else if (arg == "-a" || arg == "--average")
      o.average = parseInt(arg, value, 0, 3, errors);
    else if (arg == "-d" || arg == "--datatype") {
      if (value == "float" || value == "f32")
        o.type = Dtype::f32;
      else if (value == "bfloat16" || value == "bf16")
        o.type = Dtype::bf16;
      else
        errors.add("-d '" + value +
                   "' is not a data type this benchmark runs (float or "
                   "bfloat16)");
    } else if (arg == "--backend") {
      if (value == "mpi")
        o.backend = Backend::MPI;
      else if (value == "nccl")
        o.backend = Backend::NCCL;
      else
        errors.add("--backend '" + value + "' is not a backend (mpi or nccl)");
    } else if (arg == "--collectives") {
      o.collectives.clear();
      size_t start = 0;
      while (start <= value.size()) {
        size_t comma = value.find(',', start);
        std::string name =
            value.substr(start, comma == std::string::npos ? std::string::npos
                                                           : comma - start);
        bool found = false;
        for (Collective c : {Collective::AllGather, Collective::ReduceScatter,
                             Collective::AllReduce, Collective::SendRecv})
          if (name == collectiveName(c)) {
            o.collectives.push_back(c);
            found = true;
          }
        if (!found)
          errors.add("--collectives: '" + name +
                     "' is not all_gather, reduce_scatter, all_reduce "
                     "or sendrecv");
        if (comma == std::string::npos)
          break;
        start = comma + 1;
      }
    } else if (arg == "--json")
      o.json = value;
    else
      errors.add("unknown option '" + arg + "'");
  }
  if (o.minBytes > o.maxBytes)
    errors.add("-b " + std::to_string(o.minBytes) + " is larger than -e " +
               std::to_string(o.maxBytes));
#ifndef TITAN_HAVE_NCCL
  if (o.backend == Backend::NCCL)
    errors.add("--backend nccl: this build has no NCCL communicator "
               "(configure titan with CUDA and NCCL)");
#endif
  return o;
}

const char *kUsage =
    "usage: mpirun -np N titan-comm-bench [-b 8] [-e 128M] [-f 2] [-n 20] "
    "[-w 5] [-d float|bfloat16] [-a 0|1|2|3] [--backend mpi|nccl] "
    "[--collectives all_gather,reduce_scatter,all_reduce,sendrecv] "
    "[--json FILE]\n";

/// The pattern rank `rank` sends at element `i`: small integers, so sums
/// over ranks are exact in bf16 (below 2^8) whatever the order.
float pattern(int64_t rank, int64_t i) {
  return float((rank * 7 + i * 3) % 13) - 6.0f;
}

/// Host buffers of the element type, converted from and to float.
struct HostBuffer {
  Dtype type;
  std::vector<char> bytes;
  HostBuffer(Dtype type, int64_t count)
      : type(type), bytes(size_t(count * dtypeBytes(type))) {}
  void set(int64_t i, float v) {
    if (type == Dtype::f32)
      reinterpret_cast<float *>(bytes.data())[i] = v;
    else
      reinterpret_cast<uint16_t *>(bytes.data())[i] = floatToBf16(v);
  }
  float get(int64_t i) const {
    if (type == Dtype::f32)
      return reinterpret_cast<const float *>(bytes.data())[i];
    return bf16ToFloat(reinterpret_cast<const uint16_t *>(bytes.data())[i]);
  }
};

/// Buffers in the communicator's memory: host memory for MPI, device
/// memory for NCCL.
class Memory {
public:
  explicit Memory(Backend backend) : device_(backend == Backend::NCCL) {}
  void *allocate(int64_t bytes) {
#ifdef TITAN_HAVE_NCCL
    if (device_) {
      void *ptr = nullptr;
      if (cudaMalloc(&ptr, size_t(bytes)) != cudaSuccess)
        fatal("titan-comm-bench: cannot allocate " + std::to_string(bytes) +
              " bytes of device memory (lower -e)");
      return ptr;
    }
#endif
    void *ptr = std::malloc(size_t(bytes));
    if (!ptr)
      fatal("titan-comm-bench: cannot allocate " + std::to_string(bytes) +
            " bytes (lower -e)");
    return ptr;
  }
  void release(void *ptr) {
#ifdef TITAN_HAVE_NCCL
    if (device_) {
      cudaFree(ptr);
      return;
    }
#endif
    std::free(ptr);
  }
  void upload(void *dst, const HostBuffer &src) {
#ifdef TITAN_HAVE_NCCL
    if (device_) {
      check(cudaMemcpy(dst, src.bytes.data(), src.bytes.size(),
                       cudaMemcpyHostToDevice));
      return;
    }
#endif
    std::memcpy(dst, src.bytes.data(), src.bytes.size());
  }
  void download(HostBuffer &dst, const void *src) {
#ifdef TITAN_HAVE_NCCL
    if (device_) {
      check(cudaMemcpy(dst.bytes.data(), src, dst.bytes.size(),
                       cudaMemcpyDeviceToHost));
      return;
    }
#endif
    std::memcpy(dst.bytes.data(), src, dst.bytes.size());
  }
  /// Waits for the device work enqueued so far (a request's finish() only
  /// orders NCCL's work before the compute stream's).
  void synchronize() {
#ifdef TITAN_HAVE_NCCL
    if (device_)
      check(cudaDeviceSynchronize());
#endif
  }

private:
#ifdef TITAN_HAVE_NCCL
  static void check(cudaError_t rc) {
    if (rc != cudaSuccess)
      fatal(std::string("titan-comm-bench: CUDA: ") + cudaGetErrorString(rc));
  }
#endif
  bool device_;
};

/// One collective at one size: element counts per rank, and how to issue
/// it, fill its inputs and tell a right output element.
struct Case {
  Collective collective;
  int64_t ranks, rank;
  int64_t inCount, outCount;
  unsigned axisMask;
  Dtype type;

  int64_t sizeBytes() const {
    return std::max(inCount, outCount) * dtypeBytes(type);
  }
  double busFactor() const {
    double n = double(ranks);
    switch (collective) {
    case Collective::AllGather:
    case Collective::ReduceScatter:
      return (n - 1) / n;
    case Collective::AllReduce:
      return 2 * (n - 1) / n;
    case Collective::SendRecv:
      return 1;
    }
    return 1;
  }
  const char *redop() const {
    return collective == Collective::ReduceScatter ||
                   collective == Collective::AllReduce
               ? "sum"
               : "none";
  }
  std::unique_ptr<Request> issue(Communicator &comm, const void *in,
                                 void *out) const {
    switch (collective) {
    case Collective::AllGather:
      return comm.allGather(in, out, type, 1, inCount, 1, outCount, axisMask);
    case Collective::ReduceScatter:
      return comm.reduceScatter(in, out, type, 1, inCount, 1, axisMask);
    case Collective::AllReduce:
      return comm.allReduce(in, out, type, inCount, Reduction::Sum, axisMask);
    case Collective::SendRecv:
      return comm.sendRecv(in, out, type, inCount, /*shift=*/1, axisMask);
    }
    return nullptr;
  }
  /// The input of `r` at element i: all_gather's shard, reduce_scatter's
  /// and all_reduce's whole buffer, sendrecv's message.
  float input(int64_t r, int64_t i) const { return pattern(r, i); }
  float expected(int64_t i) const {
    switch (collective) {
    case Collective::AllGather:
      return pattern(i / inCount, i % inCount);
    case Collective::ReduceScatter: {
      float sum = 0;
      for (int64_t r = 0; r < ranks; ++r)
        sum += pattern(r, rank * outCount + i);
      return sum;
    }
    case Collective::AllReduce: {
      float sum = 0;
      for (int64_t r = 0; r < ranks; ++r)
        sum += pattern(r, i);
      return sum;
    }
    case Collective::SendRecv:
      return pattern((rank + ranks - 1) % ranks, i);
    }
    return 0;
  }
};

/// The case of `collective` at `bytes`, or none (count 0) where a rank's
/// share would be empty (nccl-tests prints size 0 there; a row of nothing
/// says nothing here).
Case makeCase(Collective collective, int64_t bytes, const Options &o,
              const Communicator &comm, unsigned axisMask) {
  Case c{collective, comm.worldSize(), comm.rank(), 0, 0, axisMask, o.type};
  int64_t count = bytes / dtypeBytes(o.type);
  int64_t n = c.ranks;
  switch (collective) {
  case Collective::AllGather:
    c.inCount = count / n;
    c.outCount = c.inCount * n;
    break;
  case Collective::ReduceScatter:
    c.outCount = count / n;
    c.inCount = c.outCount * n;
    break;
  case Collective::AllReduce:
  case Collective::SendRecv:
    c.inCount = c.outCount = count;
    break;
  }
  return c;
}

struct Row {
  Case c;
  double seconds, algbw, busbw;
  int64_t wrong;
};

/// Per-iteration seconds on this rank, combined over ranks as nccl-tests'
/// -a: 0 rank 0's, 1 the mean, 2 the minimum, 3 the maximum.
double combine(Communicator &comm, double seconds, int average,
               unsigned axisMask) {
  double value = seconds;
  switch (average) {
  case 0:
    comm.hostBroadcast(&value, 1, 0, axisMask);
    return value;
  case 1:
    comm.hostAllReduce(&value, 1, Reduction::Average, axisMask);
    return value;
  case 2:
    value = -seconds;
    comm.hostAllReduce(&value, 1, Reduction::Max, axisMask);
    return -value;
  default:
    comm.hostAllReduce(&value, 1, Reduction::Max, axisMask);
    return value;
  }
}

Row runCase(Communicator &comm, Memory &memory, const Case &c,
            const Options &o) {
  int64_t elt = dtypeBytes(c.type);
  void *in = memory.allocate(c.inCount * elt);
  void *out = memory.allocate(c.outCount * elt);

  // Correctness: one run on the pattern, every output element checked.
  HostBuffer hostIn(c.type, c.inCount), hostOut(c.type, c.outCount);
  for (int64_t i = 0; i < c.inCount; ++i)
    hostIn.set(i, c.input(c.rank, i));
  for (int64_t i = 0; i < c.outCount; ++i)
    hostOut.set(i, NAN);
  memory.upload(in, hostIn);
  memory.upload(out, hostOut);
  // A pageable cudaMemcpy may return before its DMA lands.
  memory.synchronize();
  c.issue(comm, in, out)->finish();
  memory.synchronize();
  memory.download(hostOut, out);
  double wrong = 0;
  for (int64_t i = 0; i < c.outCount; ++i)
    if (!(hostOut.get(i) == c.expected(i)))
      ++wrong;
  comm.hostAllReduce(&wrong, 1, Reduction::Sum, c.axisMask);

  // Timing: warm-ups, one barrier, then the iterations back to back. MPI's
  // requests finish before the next starts (nonblocking collectives may
  // not share an output buffer); NCCL's finish() only orders the streams,
  // so its iterations queue on the device as nccl-tests' do.
  for (int i = 0; i < o.warmup; ++i)
    c.issue(comm, in, out)->finish();
  memory.synchronize();
  comm.barrier();
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < o.iters; ++i)
    c.issue(comm, in, out)->finish();
  memory.synchronize();
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count() /
      o.iters;
  seconds = combine(comm, seconds, o.average, c.axisMask);
  memory.release(in);
  memory.release(out);

  double algbw = double(c.sizeBytes()) / 1e9 / seconds;
  return {c, seconds, algbw, algbw * c.busFactor(), int64_t(wrong)};
}

/// nccl-tests' getFloatStr: the widest precision that fits `width`.
std::string fit(double value, int width) {
  char text[64];
  for (const char *format : {"%*.2f", "%*.1f", "%*.0f"})
    if (std::snprintf(text, sizeof(text), format, width, value) <= width)
      return text;
  std::snprintf(text, sizeof(text), width >= 7 ? "%*.1e" : "%*.0e", width,
                value);
  return text;
}

/// nccl-tests' name of `type` (its output's "type" column).
const char *typeName(Dtype type) {
  return type == Dtype::f32 ? "float" : "bfloat16";
}

void printHeader(const char *collective) {
  std::printf("#\n# %s\n", collective);
  std::printf("# %10s  %12s  %8s  %6s  %6s           out-of-place\n", "", "",
              "", "", "");
  std::printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s\n", "size",
              "count", "type", "redop", "root", "time", "algbw", "busbw",
              "#wrong");
  std::printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s\n", "(B)",
              "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "");
}

void printRow(const Row &r) {
  std::printf("%12" PRId64 "  %12" PRId64 "  %8s  %6s  %6d  %7s  %6s  %6s  "
              "%6" PRId64 "\n",
              r.c.sizeBytes(), r.c.sizeBytes() / dtypeBytes(r.c.type),
              typeName(r.c.type), r.c.redop(), -1,
              fit(r.seconds * 1e6, 7).c_str(), fit(r.algbw, 6).c_str(),
              fit(r.busbw, 6).c_str(), r.wrong);
}

std::string jsonNumber(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.6g", value);
  return text;
}

bool writeJson(const std::string &path, const Options &o, int ranks,
               const std::vector<Row> &rows) {
  FILE *f = path == "-" ? stdout : std::fopen(path.c_str(), "w");
  if (!f)
    return false;
  std::fprintf(f,
               "{\"tool\": \"titan-comm-bench\", \"backend\": \"%s\", "
               "\"ranks\": %d, \"type\": \"%s\", \"iters\": %d, "
               "\"warmup_iters\": %d, \"average\": %d, \"results\": [",
               o.backend == Backend::NCCL ? "nccl" : "mpi", ranks,
               typeName(o.type), o.iters, o.warmup, o.average);
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row &r = rows[i];
    std::fprintf(f,
                 "%s\n  {\"collective\": \"%s\", \"size\": %" PRId64
                 ", \"count\": %" PRId64 ", \"type\": \"%s\", \"redop\": "
                 "\"%s\", \"time_us\": %s, \"algbw_gbps\": %s, "
                 "\"busbw_gbps\": %s, \"wrong\": %" PRId64 "}",
                 i ? "," : "", collectiveName(r.c.collective), r.c.sizeBytes(),
                 r.c.sizeBytes() / dtypeBytes(r.c.type), typeName(r.c.type),
                 r.c.redop(), jsonNumber(r.seconds * 1e6).c_str(),
                 jsonNumber(r.algbw).c_str(), jsonNumber(r.busbw).c_str(),
                 r.wrong);
  }
  std::fprintf(f, "\n]}\n");
  return path == "-" ? std::fflush(f) == 0 : std::fclose(f) == 0;
}

} // namespace

int main(int argc, char **argv) {
  // MPI first: the mesh (every rank on one axis) is the launch size. The
  // thread level is the one training asks for, for the progress thread.
  int threadLevel = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &threadLevel);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  Errors errors;
  Options o = parseOptions(argc, argv, errors);
  if (errors.help || !errors.first.empty()) {
    bool help = errors.first.empty();
    if (rank == 0) {
      if (!help)
        std::fprintf(stderr, "titan-comm-bench: error: %s\n",
                     errors.first.c_str());
      std::fputs(kUsage, help ? stdout : stderr);
    }
    MPI_Finalize();
    return help ? 0 : 2;
  }
#ifdef TITAN_HAVE_NCCL
  if (o.backend == Backend::NCCL) {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess)
      devices = 0;
    if (devices < ranks) {
      if (rank == 0)
        std::fprintf(stderr,
                     "titan-comm-bench: error: --backend nccl with %d ranks "
                     "needs a GPU per rank (NCCL puts one rank on a GPU), "
                     "and this machine has %d\n",
                     ranks, devices);
      MPI_Finalize();
      return 2;
    }
  }
#endif

  // Every rank on dp_shard: one group of `ranks` for every collective,
  // and sendrecv's ring along it.
  std::vector<int64_t> mesh(kNumAxes, 1);
  mesh[kDPShard] = ranks;
  unsigned axisMask = 1u << kDPShard;
  Communicator &comm = initCommunicator(mesh, o.backend);
  // As a training run has it (unless debug.no_comm_overlap): without the
  // progress thread an MPI wait polls with sleeps, which the small sizes'
  // times would measure.
  comm.setProgressThread(true);
  Memory memory(o.backend);

  // The sizes, and which of them give every rank a share.
  std::vector<int64_t> sizes;
  for (int64_t bytes = o.minBytes; bytes <= o.maxBytes; bytes *= o.factor)
    sizes.push_back(bytes);
  int64_t smallest = int64_t(ranks) * dtypeBytes(o.type);
  if (o.maxBytes < smallest) {
    if (rank == 0)
      std::fprintf(stderr,
                   "titan-comm-bench: error: -e %" PRId64
                   " bytes give none of the %d ranks an element of %s; "
                   "all_gather and reduce_scatter need at least %" PRId64
                   " bytes\n",
                   o.maxBytes, ranks, typeName(o.type), smallest);
    shutdownCommunicator();
    return 2;
  }

  if (rank == 0) {
    std::printf("# titan-comm-bench: %d ranks, backend %s, -b %" PRId64
                " -e %" PRId64 " -f %" PRId64 " -n %d -w %d -d %s -a %d\n",
                ranks, o.backend == Backend::NCCL ? "nccl" : "mpi", o.minBytes,
                o.maxBytes, o.factor, o.iters, o.warmup, typeName(o.type),
                o.average);
    std::printf("# busbw = algbw x (n-1)/n (all_gather, reduce_scatter), "
                "x 2(n-1)/n (all_reduce), x 1 (sendrecv), n = %d\n",
                ranks);
  }
  std::vector<Row> rows;
  int64_t wrong = 0;
  for (Collective collective : o.collectives) {
    if (rank == 0)
      printHeader(collectiveName(collective));
    double busSum = 0;
    int64_t tableWrong = 0;
    int counted = 0;
    for (int64_t bytes : sizes) {
      Case c = makeCase(collective, bytes, o, comm, axisMask);
      if (c.inCount == 0 || c.outCount == 0)
        continue;
      Row row = runCase(comm, memory, c, o);
      tableWrong += row.wrong;
      busSum += row.busbw;
      ++counted;
      rows.push_back(row);
      if (rank == 0) {
        printRow(row);
        std::fflush(stdout);
      }
    }
    wrong += tableWrong;
    if (rank == 0)
      std::printf("# Out of bounds values : %" PRId64 " %s\n"
                  "# Avg bus bandwidth    : %.4g\n",
                  tableWrong, tableWrong ? "FAILED" : "OK",
                  counted ? busSum / counted : 0.0);
  }
  bool jsonOk = true;
  if (rank == 0 && !o.json.empty() && !writeJson(o.json, o, ranks, rows)) {
    std::fprintf(stderr, "titan-comm-bench: error: cannot write '%s': %s\n",
                 o.json.c_str(), std::strerror(errno));
    jsonOk = false;
  }
  std::fflush(stdout);
  shutdownCommunicator();
  return wrong ? 1 : jsonOk ? 0 : 2;
}
