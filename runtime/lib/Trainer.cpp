//===- Trainer.cpp - the training loop of compiled executables ------------===//
//
// Owns every buffer the compiled functions read and write: parameters,
// gradients, AdamW moments, token batches. The compiled functions are pure
// (inputs -> outputs); updating in place is the caller's choice of aliasing
// output buffers with input ones.
//
//===----------------------------------------------------------------------===//

#include "titanrt/Trainer.h"
#include "titanrt/Device.h"
#include "titanrt/KernelABI.h"

#include "AsyncCheckpoint.h"
#include "Checkpoint.h"
#include "Communicator.h"
#include "Dataset.h"
#include "DocumentMask.h"
#include "Error.h"
#include "HFCheckpoint.h"
#include "Init.h"
#include "Launch.h"
#include "Manifest.h"
#include "PipelineExecutor.h"
#include "RankShutdown.h"
#include "SafeTensors.h"
#include "ShardLayout.h"
#include "TensorBoard.h"
#include "Trace.h"
#include "Validator.h"

#include "titan/Contract/TrainConfig.h"
#include "titan/Support/Format.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Parallel.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <thread>
#include <tuple>
#include <vector>

#include <unistd.h>

using namespace titanrt;
using llvm::StringRef;

namespace {

/// Keys that change a run without recompiling; everything else shapes the
/// compiled program.
bool isRunTimeKey(StringRef key) {
  return key.starts_with("job.") || key.starts_with("metrics.") ||
         key.starts_with("profiling.") || key.starts_with("comm.") ||
         key.starts_with("checkpoint.") || key.starts_with("debug.") ||
         key == "training.seed" || key == "training.steps" ||
         key == "training.dataset" || key == "training.dataset_path" ||
         key == "validation.dataset" || key == "validation.dataset_path" ||
         key == "validation.freq" || key == "validation.steps";
}

/// The rank's memory: one allocation of the planned size, made once, on
/// the target's device. The compiled steps address everything in it by
/// planned offsets; the runtime finds the state it owns (parameters,
/// gradients, optimizer moments, the step's inputs and outputs) by slot
/// name.
class Arena {
public:
  Arena(const Manifest &m, Device &device) : m(m), device(device) {
    // A pattern no computation writes, so the high-water mark can be read
    // back after a step.
    base = device.allocateArena(m.arenaBytes, kUntouched);
    // training.enable_cpu_offload: the state in host memory, which the
    // steps address from titan_rt_host_arena.
    if (m.hostArenaBytes > 0) {
      hostBase = device.allocateHostArena(m.hostArenaBytes);
      titan_rt_host_arena = hostBase;
    }
  }
  ~Arena() {
    device.freeArena(base);
    if (hostBase) {
      titan_rt_host_arena = nullptr;
      device.freeHostArena(hostBase);
    }
  }
  Arena(const Arena &) = delete;
  Arena &operator=(const Arena &) = delete;

  char *data() { return base; }

  /// Whether the plan has a slot `name` (an input only some models take).
  bool has(const std::string &name) const {
    return m.slots.count(name) || m.hostSlots.count(name);
  }
  /// Whether slot `name` is in the host arena, which the host addresses.
  bool inHostMemory(const std::string &name) const {
    return m.hostSlots.count(name);
  }
  /// The address of slot `name`, which must hold `bytes` bytes.
  char *slot(const std::string &name, int64_t bytes) {
    bool host = inHostMemory(name);
    const llvm::StringMap<titan::manifest::SlotRange> &slots =
        host ? m.hostSlots : m.slots;
    auto it = slots.find(name);
    if (it == slots.end() || it->second.second != bytes)
      fatal("corrupt executable: the memory plan has no slot '" + name +
            "' of " + std::to_string(bytes) + " bytes");
    return (host ? hostBase : base) + it->second.first;
  }

  /// The end of the highest 256-byte block written since the start, read
  /// from the top down (in pieces where the arena is device memory).
  int64_t highWaterMark() const {
    constexpr int64_t kPiece = int64_t(8) << 20;
    std::vector<uint64_t> words;
    int64_t end = m.arenaBytes / int64_t(sizeof(uint64_t)) * 8;
    while (end > 0) {
      int64_t begin = std::max<int64_t>(0, end - kPiece);
      const uint64_t *piece;
      if (device.hostAccessible()) {
        piece = reinterpret_cast<const uint64_t *>(base + begin);
      } else {
        words.resize(size_t(end - begin) / 8);
        device.copyToHost(words.data(), base + begin, size_t(end - begin));
        piece = words.data();
      }
      int64_t n = (end - begin) / 8;
      while (n > 0 && piece[n - 1] == kUntouched)
        --n;
      if (n > 0) {
        int64_t top = begin + n * 8;
        return (top + kAlignment - 1) / kAlignment * kAlignment;
      }
      end = begin;
    }
    return 0;
  }

  Device &target() { return device; }

private:
  static constexpr int64_t kAlignment = 256;
  static constexpr uint64_t kUntouched = 0x7ff4dead7ff4deadull; // NaN, NaN
  const Manifest &m;
  Device &device;
  char *base = nullptr, *hostBase = nullptr;
};

/// float32 tensors, one per parameter: this rank's shards in the arena
/// (slots "<kind>:<name>"). The host works on them through `refs`: the
/// arena itself where the host can address it (the CPU), otherwise a host
/// copy that exists only between attach() and detach() (init, checkpoint
/// loads and saves), so the host never keeps a second copy of the state.
struct TensorSet {
  std::vector<TensorRef> refs;
  std::vector<char *> addresses;
  std::vector<std::vector<float>> copies;
  Device &device;
  /// The host addresses the slots: the device is the host, or the set is
  /// in the host arena (training.enable_cpu_offload).
  bool direct;

  /// No tensors: the gradients when the optimizer runs in the backward
  /// (they die there and have no slots).
  explicit TensorSet(Device &device)
      : device(device), direct(device.hostAccessible()) {}
  TensorSet(const Manifest &m, Arena &arena, const std::string &kind)
      : device(arena.target()), direct(device.hostAccessible()) {
    for (const Manifest::Param &p : m.params) {
      std::string name = kind + ":" + p.name;
      char *address = arena.slot(name, numel(p.localShape) * 4);
      // One kind's slots share an arena.
      direct = device.hostAccessible() || arena.inHostMemory(name);
      addresses.push_back(address);
      refs.push_back({p.name, p.localShape,
                      direct ? reinterpret_cast<float *>(address) : nullptr});
    }
  }
  /// Makes `refs` host memory, with the arena's values if `read` (zeros
  /// otherwise).
  void attach(bool read) {
    if (direct || !copies.empty())
      return;
    copies.resize(refs.size());
    for (auto [t, copy, address] : llvm::zip(refs, copies, addresses)) {
      copy.assign(size_t(t.numel()), 0.0f);
      t.data = copy.data();
      if (read)
        device.copyToHost(copy.data(), address, copy.size() * 4);
    }
  }
  /// Writes the host copies into the arena.
  void upload() {
    if (direct)
      return;
    for (auto [copy, address] : llvm::zip(copies, addresses))
      device.copyToDevice(address, copy.data(), copy.size() * 4);
  }
  /// Frees the host copies.
  void detach() {
    if (direct)
      return;
    copies.clear();
    for (TensorRef &t : refs)
      t.data = nullptr;
  }
  void zero() {
    for (auto [t, address] : llvm::zip(refs, addresses)) {
      if (direct)
        std::memset(address, 0, size_t(t.numel()) * 4);
      else
        device.zero(address, size_t(t.numel()) * 4);
    }
  }
};

/// The host's way to a few bytes of the arena (the step's inputs and
/// scalar outputs).
template <typename T> T read(Device &device, const char *address) {
  T value;
  device.copyToHost(&value, address, sizeof(T));
  return value;
}
template <typename T> void write(Device &device, char *address, T value) {
  device.copyToDevice(address, &value, sizeof(T));
}

/// The rank's index among the processes on its machine, from the launcher
/// (0 when launched alone): it picks the GPU.
int64_t localRank() {
  // A launcher's environment that cannot be read is the communicator's
  // error to report (a single-rank run ignores it).
  llvm::Expected<Launch> launch =
      readLaunch([](const char *name) { return std::getenv(name); });
  if (!launch) {
    llvm::consumeError(launch.takeError());
    return 0;
  }
  return launch->localRank;
}

/// Fills this rank's shard of each parameter i by calling
/// `fill(i, first, count, out)` for each contiguous run of its block
/// (elements [first, first + count) of the whole tensor, row-major).
template <typename Fill>
void fillShards(const Manifest &m, TensorSet &shards,
                const std::vector<int64_t> &coords, Fill fill) {
  for (auto [i, p, local] : llvm::enumerate(m.params, shards.refs)) {
    Box box = shardBox(p, m.mesh, coords);
    forEachRun(Storage{std::vector<int64_t>(p.shape.size(), 0), p.shape},
               Storage{box.start, p.localShape}, box,
               [&, i = i](int64_t w, int64_t l, int64_t n) {
                 fill(i, w, n, local.data + l);
               });
  }
}

/// A single-rank executable needs no MPI; launched as one of several ranks
/// (mpirun, srun) each copy would train alone and write the same files.
/// The launchers say how many ranks they started in their environment.
void refuseMultiRankLaunch() {
  // (SLURM_STEP_NUM_TASKS, not SLURM_NTASKS: a batch script's own shell
  // lives in an allocation of many tasks without being one of them.)
  for (const char *var :
       {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "SLURM_STEP_NUM_TASKS",
        "MV2_COMM_WORLD_SIZE", "WORLD_SIZE"}) {
    const char *value = std::getenv(var);
    int64_t ranks = 0;
    if (value && !StringRef(value).getAsInteger(10, ranks) && ranks > 1)
      fatal("this executable was compiled for 1 rank, but it was launched as "
            "one of " +
            std::to_string(ranks) + " (" + var + "=" + value +
            "); recompile with titan-compile --world-size " +
            std::to_string(ranks) + ", or run it without a launcher");
  }
}

/// This process's resident memory (0 where /proc is missing).
int64_t residentBytes() {
  long pages = 0, resident = 0;
  if (FILE *f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2)
      resident = 0;
    std::fclose(f);
  }
  return int64_t(resident) * int64_t(sysconf(_SC_PAGESIZE));
}

/// The most resident memory this process has had (VmHWM; 0 where /proc is
/// missing): what init, loading and the first step needed at their peak.
int64_t peakResidentBytes() {
  long long kib = 0;
  if (FILE *f = std::fopen("/proc/self/status", "r")) {
    char line[256];
    while (std::fgets(line, sizeof(line), f))
      if (std::sscanf(line, "VmHWM: %lld kB", &kib) == 1)
        break;
    std::fclose(f);
  }
  return int64_t(kib) * 1024;
}

/// `v` as a JSON number with 10 significant digits, or null when it is not
/// finite (JSON has no inf or nan).
std::string jsonNumber(double v) {
  return std::isfinite(v) ? llvm::formatv("{0:e9}", v).str() : "null";
}

/// The first element of `set` (this rank's blocks, in parameter order)
/// that is NaN or infinite, as "the gradient of 'x' (element 5 is nan)" or
/// "parameter 'x' (...)"; "" when all are finite. A sharded tensor's
/// element counts within the rank's block.
std::string firstNonFinite(const TensorSet &set, StringRef kind,
                           const Manifest &m) {
  for (auto [t, p] : llvm::zip(set.refs, m.params))
    for (int64_t i = 0, n = t.numel(); i < n; ++i)
      if (!std::isfinite(t.data[i]))
        return (kind == "gradient" ? "the gradient of '" + t.name + "'"
                                   : "parameter '" + t.name + "'") +
               " (element " + std::to_string(i) +
               (p.localShape != p.shape ? " of the rank's block" : "") +
               " is " + (std::isnan(t.data[i]) ? "nan" : "inf") + ")";
  return "";
}

/// "ranks 0, 2" or "rank 1".
std::string rankList(const std::vector<int64_t> &ranks) {
  std::vector<std::string> names;
  for (int64_t r : ranks)
    names.push_back(std::to_string(r));
  return (ranks.size() == 1 ? "rank " : "ranks ") + llvm::join(names, ", ");
}

/// The ranks that say `holds`, in order, the same list on every rank (a
/// collective: every rank calls it).
std::vector<int64_t> ranksHolding(bool holds, Communicator *comm) {
  if (!comm)
    return holds ? std::vector<int64_t>{0} : std::vector<int64_t>{};
  std::vector<double> flags(size_t(comm->worldSize()), 0.0);
  flags[size_t(comm->rank())] = holds ? 1.0 : 0.0;
  comm->hostAllReduce(flags.data(), int64_t(flags.size()), Reduction::Sum,
                      titan::mesh::kAllAxes);
  std::vector<int64_t> ranks;
  for (size_t r = 0; r < flags.size(); ++r)
    if (flags[r] != 0)
      ranks.push_back(int64_t(r));
  return ranks;
}

/// A rank with nothing to say at a stop waits, quietly, for the rank that
/// names the problem to stop every rank (fatal's MPI_Abort): its own exit
/// would race that message out of the job. It exits after a minute if
/// nothing stops it.
[[noreturn]] void waitForAbort() {
  noteStopUnderWay();
  std::fflush(stdout);
  std::this_thread::sleep_for(std::chrono::seconds(60));
  std::exit(1);
}

/// Rewrites the metrics file `path` (if there is one) with only the lines of
/// steps up to `step`.
void keepMetricsUpTo(const std::string &path, int64_t step) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return;
  std::string kept;
  llvm::SmallVector<StringRef> lines;
  (*buffer)->getBuffer().split(lines, '\n', -1, /*KeepEmpty=*/false);
  for (StringRef line : lines) {
    llvm::Expected<llvm::json::Value> v = llvm::json::parse(line);
    if (!v) {
      llvm::consumeError(v.takeError());
      continue;
    }
    const llvm::json::Object *o = v->getAsObject();
    if (o && o->getInteger("step").value_or(step + 1) <= step)
      kept += line.str() + "\n";
  }
  std::error_code ec;
  llvm::raw_fd_ostream out(path, ec);
  if (ec)
    fatal("cannot write '" + path + "': " + ec.message());
  out << kept;
}

/// Fills this rank's parameters from the model's files: each rank reads
/// only its blocks, the files' headers checked whole.
void loadModelFiles(ModelFiles files, const Manifest &m, TensorSet &params,
                    const std::vector<int64_t> &coords) {
  ModelReader reader(std::move(files));
  fillShards(m, params, coords,
             [&](size_t i, int64_t first, int64_t count, float *out) {
               reader.read(m.params[i], first, count, out);
             });
}

/// Fills this rank's parameters from titan's model-only export `path` (a
/// safetensors file, or a folder holding model.safetensors); returns the
/// file.
std::string loadWeights(const std::string &path, const Manifest &m,
                        TensorSet &params, const std::vector<int64_t> &coords) {
  std::string file = path;
  if (llvm::sys::fs::is_directory(path)) {
    if (looksLikeHFCheckpoint(path))
      fatal("checkpoint.initial_load_path '" + path +
            "' holds a Hugging Face checkpoint (config.json or "
            "model.safetensors.index.json); load it with "
            "checkpoint.initial_load_in_hf = true");
    file += "/model.safetensors";
  }
  loadModelFiles(titanModelFiles(file, m), m, params, coords);
  return file;
}

/// Draws this rank's parameters with the seeded init. Each rank draws only
/// its own block: values depend on the element's global index, not on the
/// layout, so the runs are drawn in pieces on every core.
void initializeParams(const titan::TrainConfig &c, const Manifest &m,
                      TensorSet &params, const std::vector<int64_t> &coords) {
  uint64_t seed = uint64_t(c.training.seed.value_or(0));
  struct Piece {
    size_t param;
    int64_t first, count;
    float *out;
  };
  std::vector<Piece> pieces;
  constexpr int64_t kPiece = int64_t(1) << 20;
  fillShards(m, params, coords,
             [&](size_t i, int64_t first, int64_t count, float *out) {
               for (int64_t o = 0; o < count; o += kPiece)
                 pieces.push_back(
                     {i, first + o, std::min(kPiece, count - o), out + o});
             });
  llvm::parallelFor(0, pieces.size(), [&](size_t p) {
    const Piece &piece = pieces[p];
    initializeRange(m.params[piece.param].name, m.dim, seed, piece.first,
                    piece.count, piece.out);
  });
}

/// What a resume leaves out (checkpoint.exclude_from_loading), and where
/// titan differs from TorchTitan there: one step counter drives the
/// learning-rate schedule and AdamW's bias correction, so they restart
/// only with train_state.
std::string excludedPartsNote(const titan::TrainConfig &c,
                              const Checkpointer &checkpoints) {
  const std::vector<std::string> &excluded = c.checkpoint.excludeFromLoading;
  if (excluded.empty())
    return "";
  std::string note = "not loaded (checkpoint.exclude_from_loading): " +
                     llvm::join(excluded, ", ") + "\n";
  if (checkpoints.loads("train_state") &&
      (!checkpoints.loads("lr_scheduler") || !checkpoints.loads("optimizer")))
    note += "note: the learning rate and AdamW's bias correction follow the "
            "resumed step (TorchTitan restarts its LR schedule and AdamW's "
            "step count when they are excluded); exclude train_state to "
            "restart them\n";
  return note;
}

/// Where a run starts, and what to say about it.
struct RunStart {
  TrainingState state; ///< step 0, sample 0 unless resumed
  bool resumed = false;
  std::string folder; ///< the checkpoint resumed from
  std::string message;
};

/// Fills `sets` (parameters, AdamW moments) as TorchTitan's
/// CheckpointManager.load would: from checkpoint.load_step, or with
/// checkpoint.enable from the latest complete checkpoint; otherwise from
/// initial_load_path (its weights, or with initial_load_model_only = false
/// its whole training state); otherwise by init.
RunStart restoreOrInitialize(const titan::TrainConfig &c, const Manifest &m,
                             Checkpointer &checkpoints,
                             llvm::ArrayRef<StateSet> sets, TensorSet &params,
                             llvm::ArrayRef<TensorSet *> moments,
                             const std::vector<int64_t> &coords) {
  auto start = std::chrono::steady_clock::now();
  auto seconds = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         start)
        .count();
  };
  RunStart run;
  auto resumeFrom = [&](const std::string &folder) {
    // checkpoint.exclude_from_loading: an excluded model keeps its init;
    // the moments come from the checkpoint unless excluded (else they stay
    // the zeros the device holds, without host copies).
    if (!checkpoints.loads("model"))
      initializeParams(c, m, params, coords);
    if (checkpoints.loads("optimizer"))
      for (TensorSet *set : moments)
        set->attach(/*read=*/false);
    run.state = checkpoints.resume(folder, sets);
    run.resumed = true;
    run.folder = folder;
    run.message = llvm::formatv("resumed from {0} (step {1}, {2} samples "
                                "consumed) in {3:f2} s\n",
                                folder, run.state.step,
                                run.state.samplesConsumed, seconds())
                      .str();
    run.message += excludedPartsNote(c, checkpoints);
  };
  bool usesCheckpoints = c.checkpoint.enable || c.checkpoint.loadStep >= 0;
  if (usesCheckpoints)
    checkpoints.removeUnfinishedSaves();
  int64_t resumeStep = usesCheckpoints ? checkpoints.resumeStep() : -1;
  bool hf = c.checkpoint.initialLoadInHf;
  // As TorchTitan: HF weights come from model.hf_assets_path unless
  // initial_load_path is given.
  const std::string &path = hf && c.checkpoint.initialLoadPath.empty()
                                ? c.model.hfAssetsPath
                                : c.checkpoint.initialLoadPath;
  bool isCheckpoint =
      !path.empty() && llvm::sys::fs::exists(path + "/index.json");
  if (resumeStep >= 0) {
    resumeFrom(checkpoints.stepFolder(resumeStep));
    if (!path.empty())
      run.message += "(checkpoint.initial_load_path is not used when "
                     "resuming)\n";
  } else if (hf) {
    if (path.empty())
      fatal("checkpoint.initial_load_in_hf needs a Hugging Face checkpoint "
            "folder: checkpoint.initial_load_path or model.hf_assets_path");
    if (isCheckpoint || !c.checkpoint.initialLoadModelOnly)
      fatal("checkpoint.initial_load_in_hf loads a model's weights only: " +
            (isCheckpoint ? "'" + path +
                                "' is a titan checkpoint (with index.json); "
                                "load it without initial_load_in_hf"
                          : std::string("set checkpoint.initial_load_model_"
                                        "only = true")));
    loadModelFiles(hfImportFiles(path, m), m, params, coords);
    run.message = llvm::formatv("loaded Hugging Face weights from {0} in "
                                "{1:f2} s\n",
                                path, seconds());
  } else if (!path.empty() && !c.checkpoint.initialLoadModelOnly) {
    if (!isCheckpoint)
      fatal("checkpoint.initial_load_model_only = false needs "
            "checkpoint.initial_load_path to be a titan checkpoint folder "
            "(with index.json); '" +
            path + "' is not one");
    resumeFrom(path);
  } else if (isCheckpoint) {
    // The weights of a full checkpoint, in any layout.
    checkpoints.load(path, sets.take_front());
    run.message =
        llvm::formatv("loaded weights from {0} in {1:f2} s\n", path, seconds());
  } else if (!path.empty()) {
    std::string file = loadWeights(path, m, params, coords);
    run.message =
        llvm::formatv("loaded weights from {0} in {1:f2} s\n", file, seconds());
  } else {
    initializeParams(c, m, params, coords);
  }
  return run;
}

/// Stops at a manifest compiled for another target than the kernel library
/// linked.
void checkTarget(const Manifest &m, Device &device) {
  if (m.target != device.target())
    fatal("corrupt executable: its steps were compiled for the " + m.target +
          " target but it was linked with the " + device.target() +
          " target's kernel library");
}

/// The compiled config with the command line's run-time overrides, or
/// std::nullopt after printing the usage (--help).
std::optional<titan::TrainConfig> parseRunConfig(int argc, char **argv,
                                                 const Manifest &m) {
  std::vector<titan::ConfigOverride> overrides;
  std::vector<const char *> rest;
  if (llvm::Error e = titan::extractConfigOverrides(
          llvm::ArrayRef<const char *>(argv + 1, argv + argc), overrides, rest))
    fatal(llvm::toString(std::move(e)));
  for (const char *arg : rest) {
    if (StringRef(arg) == "--help" || StringRef(arg) == "-h") {
      std::printf(
          "usage: %s [--section.key value]...\n\nRun-time keys: "
          "job.*, metrics.*, checkpoint.*, debug.*, training.steps, "
          "training.dataset_path, validation.dataset_path, "
          "validation.freq, validation.steps.\nEverything else was fixed by "
          "titan-compile.\n",
          argv[0]);
      return std::nullopt;
    }
    fatal(std::string("unexpected argument '") + arg +
          "' (options are --section.key value)");
  }
  for (const titan::ConfigOverride &o : overrides)
    if (!isRunTimeKey(o.key))
      fatal("--" + o.key +
            " is fixed when the executable is compiled; recompile with "
            "titan-compile --" +
            o.key + " " + o.value);
  llvm::Expected<titan::TrainConfig> parsed =
      titan::loadTrainConfigFromToml(m.config, "compiled config", overrides);
  if (!parsed)
    fatal(llvm::toString(parsed.takeError()));
  return std::move(*parsed);
}

/// Binds this process to its rank: its GPU and, with several ranks, the
/// communicator (null for one rank).
Communicator *startRank(const titan::TrainConfig &c, const Manifest &m,
                        Device &device) {
  // One process per rank of the mesh; single-rank runs need no MPI.
  int64_t world = m.worldSize();
  if (world == 1)
    refuseMultiRankLaunch();
  // One GPU per local rank, chosen before the communicators bind to it.
  device.select(localRank());
  // CUDA graphs: each step captured once and replayed, multi-rank ones
  // too (their communicators exist before the first capture, and the NCCL
  // watchdog watches each replay).
  device.setGraphs(!c.debug.noCudaGraphs);
  // TorchTitan's [comm] timeouts: the start-up's until the first step ends.
  if (world == 1)
    return nullptr;
  Communicator &comm = initCommunicator(m.mesh, device.communicatorBackend(),
                                        double(c.comm.initTimeoutSeconds));
  // TorchTitan's flight recorder: <dump_folder>/<save_traces_folder>/
  // <prefix><rank> (torchtitan/distributed/utils.py, init_distributed).
  llvm::SmallString<256> record(c.job.dumpFolder);
  llvm::sys::path::append(record, c.comm.saveTracesFolder,
                          c.comm.saveTracesFilePrefix +
                              std::to_string(comm.rank()));
  comm.setFlightRecorder(c.comm.traceBufSize, record.str().str());
  comm.setProgressThread(!c.debug.noCommOverlap);
  return &comm;
}

/// Fault injection for tests: TITAN_FAULT_HANG_AT_STEP=<step>:<rank> makes
/// that rank stop computing (sleep for good, its communication still
/// alive) at the start of that step, as a stuck rank would, so that its
/// peers' next collective times out.
void maybeHangAtStep(int64_t step, int64_t rank) {
  const char *env = std::getenv("TITAN_FAULT_HANG_AT_STEP");
  if (!env || !*env)
    return;
  auto [stepText, rankText] = StringRef(env).split(':');
  int64_t s, r;
  if (stepText.getAsInteger(10, s) || rankText.getAsInteger(10, r))
    fatal(std::string("TITAN_FAULT_HANG_AT_STEP='") + env +
          "' is not <step>:<rank>");
  if (s != step || r != rank)
    return;
  for (;;)
    std::this_thread::sleep_for(std::chrono::seconds(1));
}

/// A pipeline rank's own program: its functions by name.
struct PipelineProgram {
  std::map<std::string, PipelineFunction> functions;
  titan_step_fn optimizerStep = nullptr;
};

/// The program of this process's pipeline rank; `m` becomes its manifest.
PipelineProgram selectPipelineProgram(const CompiledModel &model,
                                      Communicator *comm, Manifest &m) {
  int64_t ppRank = comm ? comm->coordinate(kPP) : 0;
  if (ppRank >= model.numPrograms)
    fatal("corrupt executable: no program for pipeline rank " +
          std::to_string(ppRank));
  const titan_program &program = model.programs[ppRank];
  m = parseManifest(program.manifest);
  if (!m.pipeline || m.pipeline->rank != ppRank)
    fatal("corrupt executable: the program of pipeline rank " +
          std::to_string(ppRank) + " has no pipeline manifest for it");
  PipelineProgram own;
  for (int64_t i = 0; i < program.num_functions; ++i)
    own.functions[program.names[i]] = program.functions[i];
  auto it = own.functions.find("optimizer_step");
  if (it == own.functions.end())
    fatal("corrupt executable: pipeline rank " + std::to_string(ppRank) +
          " has no optimizer_step");
  own.optimizerStep = it->second;
  return own;
}

/// Creates the communicator groups of the collectives. Creating a group is
/// collective over every rank, so all create the same groups in the same
/// order: under pipeline parallelism the union of every pipeline rank's
/// (their programs use different ones).
void prepareGroups(const CompiledModel &model, const Manifest &m,
                   Communicator &comm) {
  std::vector<unsigned> groups = m.collectiveAxes;
  if (model.programs) {
    for (int64_t r = 0; r < model.numPrograms; ++r)
      for (unsigned mask :
           parseManifest(model.programs[r].manifest).collectiveAxes)
        groups.push_back(mask);
    llvm::sort(groups);
    groups.erase(std::unique(groups.begin(), groups.end()), groups.end());
  }
  comm.prepareGroups(groups);
}

/// The rank's training state in the arena: parameters, gradients and AdamW
/// moments, the moments and the parameters zeroed.
struct TrainingTensors {
  TensorSet params, grads, expAvg, expAvgSq;

  TrainingTensors(const Manifest &m, Arena &arena)
      : params(m, arena, "param"),
        grads(m.optimizerInBackward ? TensorSet(arena.target())
                                    : TensorSet(m, arena, "grad")),
        expAvg(m, arena, "exp_avg"), expAvgSq(m, arena, "exp_avg_sq") {
    expAvg.zero();
    expAvgSq.zero();
    params.zero(); // FSDP padding rows stay zero
  }
  StateSet paramSet() { return {"param", &params.refs}; }
  /// What a checkpoint of the training state holds.
  std::vector<StateSet> checkpointed() {
    return {
        paramSet(), {"exp_avg", &expAvg.refs}, {"exp_avg_sq", &expAvgSq.refs}};
  }
  std::array<TensorSet *, 3> paramsAndMoments() {
    return {&params, &expAvg, &expAvgSq};
  }
};

/// The step's inputs and outputs in the arena, and the host memory the
/// batch is drawn into.
struct StepSlots {
  /// Under pipeline parallelism the microbatches' tokens, labels and loss
  /// are in the stages' frames and the last stage's arena (null here).
  char *tokens = nullptr, *labels = nullptr, *loss = nullptr;
  char *gradNorm, *lr, *step, *totalSteps;
  /// TorchTitan's block-causal mask: each position's document start over
  /// the whole sequence (context parallel's ranks hold all of them), from
  /// the whole sequence's tokens (null without the mask).
  char *documentStarts = nullptr;
  /// The batch is drawn on the host: into the arena where the host can
  /// address it, else into host buffers copied over before each step.
  std::vector<int32_t> hostBatch;
  int32_t *hostTokens, *hostLabels, *hostStarts = nullptr;
  /// The whole sequences the starts come from (rows of wholeSeq tokens).
  std::vector<int32_t> wholeTokens;

  /// `seq` is the rank's share of a sequence of `wholeSeq` tokens.
  StepSlots(Arena &arena, int64_t batch, int64_t seq, int64_t wholeSeq,
            bool pipelined)
      : gradNorm(arena.slot("output:grad_norm", 4)),
        lr(arena.slot("output:lr", 4)), step(arena.slot("input:step", 8)),
        totalSteps(arena.slot("input:total_steps", 8)) {
    int64_t tokenBytes = batch * seq * int64_t(sizeof(int32_t));
    if (!pipelined) {
      tokens = arena.slot("input:tokens", tokenBytes);
      labels = arena.slot("input:labels", tokenBytes);
      loss = arena.slot("output:loss", 4);
    }
    if (!pipelined && arena.has("input:document_starts")) {
      documentStarts = arena.slot("input:document_starts",
                                  batch * wholeSeq * int64_t(sizeof(int32_t)));
      wholeTokens.resize(size_t(batch * wholeSeq));
    }
    bool host = arena.target().hostAccessible();
    if (!host && !pipelined)
      hostBatch.resize(
          size_t(2 * batch * seq + (documentStarts ? batch * wholeSeq : 0)));
    hostTokens = host ? reinterpret_cast<int32_t *>(tokens) : hostBatch.data();
    hostLabels = host ? reinterpret_cast<int32_t *>(labels)
                      : hostBatch.data() + batch * seq;
    if (documentStarts)
      hostStarts = host ? reinterpret_cast<int32_t *>(documentStarts)
                        : hostBatch.data() + 2 * batch * seq;
  }
};

/// Under pipeline parallelism the stages read their microbatch's tokens
/// and labels from their frames: checks that these hold rows of `seq`
/// tokens (the rank's share of a sequence) and the document starts rows of
/// `wholeSeq`, as Arena::slot checks the step's own inputs.
void checkFrameInputs(const Manifest &m, int64_t seq, int64_t wholeSeq) {
  int64_t rowBytes = m.pipeline->microbatchSize * int64_t(sizeof(int32_t));
  for (const Manifest::PipelineStage &stage : m.pipeline->stages)
    for (const auto &[slot, range] : stage.frameSlots) {
      bool batch =
          slot.kind == FrameSlot::Tokens || slot.kind == FrameSlot::Labels;
      int64_t bytes =
          rowBytes * (slot.kind == FrameSlot::DocumentStarts ? wholeSeq : seq);
      if ((batch || slot.kind == FrameSlot::DocumentStarts) &&
          range.second != bytes)
        fatal("corrupt executable: the memory plan has no frame slot '" +
              slot.str() + "' of " + std::to_string(bytes) + " bytes");
    }
}

/// Whether the compiled steps read document starts (TorchTitan's
/// block-causal mask): the whole step's, the eval step's or a pipeline
/// stage's.
bool readsDocumentStarts(const Manifest &m) {
  if (m.slots.count("input:document_starts") ||
      m.slots.count("input:eval_document_starts"))
    return true;
  if (m.pipeline)
    for (const Manifest::PipelineStage &stage : m.pipeline->stages)
      for (const auto &[slot, range] : stage.frameSlots)
        if (slot.kind == FrameSlot::DocumentStarts)
          return true;
  return false;
}

/// What a step measured.
struct StepResult {
  double meanLoss;
  bool finiteLoss;
  float gradNorm, lr;
  /// The step's time and the run's so far, in seconds.
  double seconds, elapsed;
};

/// A training run of one rank, from its restored state to the last step:
/// the set-up in the constructor, then train().
class Run {
public:
  Run(const titan::TrainConfig &c, const Manifest &m,
      const CompiledModel &model, Device &device, Communicator *comm,
      const PipelineProgram &program);

  /// Trains steps [firstStep, training.steps); returns the exit status.
  int train();

private:
  int64_t rank() const { return comm ? comm->rank() : 0; }
  RunStart restore();
  /// The step's batch (local batch x data-parallel degree x accumulation),
  /// checked against the compiled one.
  int64_t globalBatch() const;
  void openMetrics();
  void printStart();

  /// One step: its gradients, the update, the metrics, maybe a checkpoint.
  void trainStep(int64_t step);
  /// The summed loss of the step's microbatches, their gradients added up.
  double accumulateGradients(int64_t step, StepTrace *trace);
  double pipelinedMicrobatches(int64_t step, StepTrace *trace);
  double microbatches(int64_t step, StepTrace *trace);
  /// input:step and input:total_steps, before the step's first function.
  void writeStepInputs(int64_t step);
  /// The optimizer step; returns the gradient norm and the learning rate.
  std::pair<float, float> update(int64_t step, StepTrace *trace);
  /// Writes the step's metrics line (and its log line when due); stops the
  /// run at a non-finite loss or gradient norm.
  void report(int64_t step, const StepResult &result);
  /// Stops every rank at step `step` (from 1) whose loss or gradient norm
  /// is not finite, the first rank holding a non-finite tensor naming it.
  [[noreturn]] void stopOnNonFinite(int64_t step, const StepResult &result);
  /// TITAN_FAULT_NAN_GRAD: a NaN in this rank's gradient at step `step`
  /// (from 1), between the backward and the update.
  void maybeNanGradient(int64_t step);
  /// `tflops`: this rank's model TFLOP/s.
  void log(int64_t step, const StepResult &result, double tokensPerSecond,
           double tflops);
  void logTensorBoard(int64_t step, const StepResult &result,
                      double tokensPerSecond, double tflops);
  void saveIfDue(int64_t step);
  /// Saves the state after `steps` steps: a model-only export when `last`
  /// and checkpoint.last_save_model_only, else a whole checkpoint (in the
  /// background with checkpoint.async_mode, but for the last step's).
  void save(int64_t steps, bool last);
  /// The training state after `steps` steps, as a checkpoint records it.
  TrainingState trainingState(int64_t steps);
  /// Starts checkpoint.async_mode's save of `steps`.
  void saveInBackground(int64_t steps);
  /// Records a committed checkpoint: prunes the old ones and says so
  /// (`how`: "in 1.20 s").
  void saved(int64_t steps, const std::string &folder, const std::string &how);
  /// Commits the background save once written (each step's end) or
  /// waiting for it (`wait`: before another save and at the end).
  void finishBackgroundSave(bool wait);
  /// validation.enable: the validator on the eval step's slots (null
  /// without validation).
  std::unique_ptr<Validator> makeValidator();
  /// One validation batch through the whole-step `eval`.
  EvaluateBatch wholeStepEvaluation();
  /// One validation batch through the pipeline's eval stages.
  EvaluateBatch pipelinedEvaluation();
  /// The document starts of `rows` whole validation sequences.
  void evalDocumentStarts(const int32_t *whole, int64_t rows, int32_t *starts);
  /// Prints and records the validation loss after step `step` (from 0).
  void logValidation(int64_t step, const ValidationResult &result);
  /// The rank's part of each sample's sequence: its chunks over the axes
  /// that split the sequence (MeshAxes.h), as the manifest says they split
  /// it.
  SequenceShard sequenceShard() const {
    SequenceShard shard;
    shard.loadBalanced = false;
    std::vector<MeshAxis> axes;
    for (const titan::mesh::AxisInfo &axis : titan::mesh::kAxes)
      if (axis.sequence) {
        axes.push_back(axis.axis);
        shard.degree *= m.mesh[axis.axis];
        shard.loadBalanced |=
            (m.loadBalancedAxes & titan::mesh::axisBit(axis.axis)) != 0;
      }
    shard.rank = comm ? comm->groupIndex(axes) : 0;
    return shard;
  }
  /// The data this rank reads: its data-parallel share, its part of each
  /// sequence.
  DataOptions dataOptions() const;
  /// Every data-parallel rank's text-stream position before `sample` (for
  /// the checkpoint); empty for a token file.
  std::vector<DataPosition> dataPositions(int64_t sample);
  /// The first sample of `step`'s batch.
  int64_t firstSampleOf(int64_t step) const {
    return firstSample + (step - firstStep) * global;
  }

  const titan::TrainConfig &c;
  const Manifest &m;
  const CompiledModel &model;
  Device &device;
  Communicator *comm;
  const PipelineProgram &program;
  bool pipelined, leader;
  int64_t world, dp, dpIndex;
  int64_t numParams = 0, localParams = 0;

  /// Everything the steps touch lives in the planned arena.
  Arena arena;
  TrainingTensors state;
  std::vector<int64_t> coords;
  Checkpointer checkpoints;
  /// checkpoint.async_mode's saves (null when disabled).
  std::unique_ptr<AsyncCheckpointer> backgroundSaves;
  int64_t backgroundStep = 0; ///< the step the one in flight saves
  std::chrono::steady_clock::time_point backgroundStart;
  RunStart restored;
  std::unique_ptr<Dataset> data;
  /// The step's batch (rows of seq tokens) and its rows on this rank
  /// (rows of localSeq: under context parallel, the rank's chunks of each
  /// sequence). The cp ranks of a data-parallel index read the same
  /// samples: tokens and FLOPs count the global batch of whole sequences.
  int64_t batch, seq, localSeq, global, accumulation;
  StepSlots slots;
  /// The tokenizer's EOS id, where the block-causal mask ends a document
  /// (-1 without the mask).
  int32_t eosId = -1;
  std::unique_ptr<PipelineExecutor> pipeline;
  std::unique_ptr<Validator> validator;
  std::unique_ptr<llvm::raw_fd_ostream> metrics;
  /// metrics.enable_tensorboard's event file, on the ranks that write one.
  std::unique_ptr<EventFileWriter> tensorboard;

  /// The loop runs steps [firstStep, totalSteps); sample indices continue
  /// from the data position the checkpoint saved.
  int64_t firstStep, firstSample, totalSteps;
  std::vector<int64_t> savedSteps; ///< the checkpoints this run wrote
  std::chrono::steady_clock::time_point start;
  /// The profiler's window being recorded: its steps' spans, written into
  /// one file at its last step (torch.profiler's trace handler).
  StepTrace window;
  bool windowOpen = false;
};

Run::Run(const titan::TrainConfig &c, const Manifest &m,
         const CompiledModel &model, Device &device, Communicator *comm,
         const PipelineProgram &program)
    : c(c), m(m), model(model), device(device), comm(comm), program(program),
      pipelined(model.programs != nullptr), leader(!comm || comm->rank() == 0),
      world(m.worldSize()), dp(m.mesh[kDPReplicate] * m.mesh[kDPShard]),
      dpIndex(comm ? comm->coordinate(kDPReplicate) * m.mesh[kDPShard] +
                         comm->coordinate(kDPShard)
                   : 0),
      arena(m, device), state(m, arena),
      coords(meshCoordinates(m.mesh, rank())), checkpoints(c, m, comm),
      backgroundSaves(
          c.checkpoint.enable && !c.checkpoint.loadOnly &&
                  c.checkpoint.asyncMode != "disabled"
              ? std::make_unique<AsyncCheckpointer>(
                    checkpoints, m, comm, device,
                    c.checkpoint.asyncMode == "async_with_pinned_mem",
                    std::vector<std::string>{"param", "exp_avg", "exp_avg_sq"})
              : nullptr),
      restored(restore()), data(Dataset::open(dataOptions(), c)),
      batch(m.localBatch), seq(m.seqLen), localSeq(data->localLength()),
      global(globalBatch()), accumulation(global / (batch * dp)),
      slots(arena, m.localBatch, localSeq, m.seqLen, pipelined),
      eosId(readsDocumentStarts(m) ? tokenizerEosId(c, m.vocab) : -1),
      firstStep(restored.state.step),
      firstSample(restored.state.samplesConsumed),
      totalSteps(c.training.steps) {
  for (const Manifest::Param &p : m.allParams)
    numParams += numel(p.shape);
  for (const Manifest::Param &p : m.params)
    localParams += numel(p.localShape);
  const std::vector<DataPosition> &positions = restored.state.dataPositions;
  if (!positions.empty() && int64_t(positions.size()) != dp)
    fatal("the checkpoint holds the data positions of " +
          std::to_string(positions.size()) +
          " data-parallel ranks, this run has " + std::to_string(dp) +
          ": each rank's share of the text dataset would change (set "
          "checkpoint.exclude_from_loading = [\"dataloader\"] to start the "
          "data afresh)");
  data->checkUnchangedSince(restored.state.dataFiles, restored.folder);
  data->resume(firstSample, positions.empty()
                                ? std::nullopt
                                : std::optional(positions[size_t(dpIndex)]));
  if (pipelined) {
    checkFrameInputs(m, localSeq, seq);
    pipeline = std::make_unique<PipelineExecutor>(m, program.functions, device,
                                                  *comm, arena.data());
  }
  validator = makeValidator();
  openMetrics();
}

std::unique_ptr<Validator> Run::makeValidator() {
  if (!c.validation.enable)
    return nullptr;
  if (!m.eval)
    fatal("corrupt executable: compiled with validation.enable but without "
          "its eval step");
  EvaluateBatch evaluate =
      pipelined ? pipelinedEvaluation() : wholeStepEvaluation();
  return std::make_unique<Validator>(c, m, std::move(evaluate), comm,
                                     sequenceShard(), dp, dpIndex,
                                     arena.has("input:eval_document_starts"));
}

EvaluateBatch Run::wholeStepEvaluation() {
  if (!model.eval)
    fatal("corrupt executable: compiled with validation.enable but without "
          "its eval step");
  int64_t tokenBytes = m.eval->localBatch *
                       sequenceShard().length(m.eval->seqLen) *
                       int64_t(sizeof(int32_t));
  char *tokens = arena.slot("input:eval_tokens", tokenBytes);
  char *labels = arena.slot("input:eval_labels", tokenBytes);
  char *loss = arena.slot("output:eval_loss", 4);
  // TorchTitan's block-causal mask: the document starts of the whole
  // sequences, as in training.
  int64_t batch = m.eval->localBatch, seq = m.eval->seqLen;
  char *starts = arena.has("input:eval_document_starts")
                     ? arena.slot("input:eval_document_starts",
                                  batch * seq * int64_t(sizeof(int32_t)))
                     : nullptr;
  auto hostStarts =
      std::make_shared<std::vector<int32_t>>(starts ? size_t(batch * seq) : 0);
  return [this, tokens, labels, loss, tokenBytes, starts, hostStarts,
          batch](const int32_t *t, const int32_t *l, const int32_t *whole) {
    device.copyToDevice(tokens, t, size_t(tokenBytes));
    device.copyToDevice(labels, l, size_t(tokenBytes));
    if (starts) {
      evalDocumentStarts(whole, batch, hostStarts->data());
      device.copyToDevice(starts, hostStarts->data(),
                          hostStarts->size() * sizeof(int32_t));
    }
    device.run(Device::Step::Eval, model.eval, arena.data());
    return double(read<float>(device, loss));
  };
}

void Run::evalDocumentStarts(const int32_t *whole, int64_t rows,
                             int32_t *starts) {
  // The Validator hands whole sequences where the plan has the eval
  // step's starts (makeValidator).
  if (!whole)
    fatal("internal error: the eval step reads document starts but the "
          "validation batch came without its whole sequences");
  documentStarts(whole, rows, m.eval->seqLen, eosId, starts);
}

EvaluateBatch Run::pipelinedEvaluation() {
  // The batch splits into the training schedule's microbatches (as
  // TorchTitan's pp_schedule.eval splits it); microbatch mb is its rows
  // [mb x size, (mb + 1) x size).
  int64_t microbatches = m.pipeline->microbatches;
  int64_t size = m.eval->localBatch / microbatches;
  int64_t rowTokens = sequenceShard().length(m.eval->seqLen);
  // The stages that read the microbatch read rows of as many tokens.
  int64_t bytes = size * rowTokens * int64_t(sizeof(int32_t));
  int64_t seq = m.eval->seqLen;
  int64_t startsBytes = size * seq * int64_t(sizeof(int32_t));
  for (auto [name, expected] : {std::pair("input:eval_tokens", bytes),
                                {"input:eval_labels", bytes},
                                {"input:eval_document_starts", startsBytes}})
    if (auto it = m.slots.find(name);
        it != m.slots.end() && it->second.second != expected)
      fatal(std::string("corrupt executable: the memory plan has no slot '") +
            name + "' of " + std::to_string(expected) + " bytes");
  return [this, microbatches, size, rowTokens, bytes,
          seq](const int32_t *t, const int32_t *l, const int32_t *whole) {
    double lossSum = pipeline->evaluate(
        [&](int64_t mb, int32_t *tokens, int32_t *labels, int32_t *starts) {
          int64_t first = mb * size * rowTokens;
          if (tokens)
            std::memcpy(tokens, t + first, size_t(bytes));
          if (labels)
            std::memcpy(labels, l + first, size_t(bytes));
          if (starts)
            evalDocumentStarts(whole ? whole + mb * size * seq : nullptr, size,
                               starts);
        });
    // Each microbatch's loss counts 1 / m of the batch's (the last stage
    // has them all), as in training: every pipeline rank reports the same.
    lossSum /= double(microbatches);
    comm->hostAllReduce(&lossSum, 1, Reduction::Sum, 1u << kPP);
    return lossSum;
  };
}

DataOptions Run::dataOptions() const {
  DataOptions o;
  o.name = c.training.dataset;
  o.path = c.training.datasetPath;
  o.vocabSize = m.vocab;
  o.seqLen = m.seqLen;
  o.sequence = sequenceShard();
  o.share = {dpIndex, dp, m.localBatch, m.localBatch * m.accumulationSteps};
  return o;
}

std::vector<DataPosition> Run::dataPositions(int64_t sample) {
  std::optional<DataPosition> mine = data->position(sample);
  if (!mine)
    return {};
  if (!comm)
    return {*mine};
  // One rank of each data-parallel group contributes its (identical)
  // position; doubles hold the counts exactly.
  std::vector<double> all(size_t(2 * dp), 0.0);
  if (comm->coordinate(kPP) == 0 && comm->coordinate(kCP) == 0 &&
      comm->coordinate(kTP) == 0) {
    all[size_t(2 * dpIndex)] = double(mine->document);
    all[size_t(2 * dpIndex + 1)] = double(mine->token);
  }
  comm->hostAllReduce(all.data(), int64_t(all.size()), Reduction::Sum,
                      (1u << kNumAxes) - 1);
  std::vector<DataPosition> positions;
  for (int64_t r = 0; r < dp; ++r)
    positions.push_back(
        {int64_t(all[size_t(2 * r)]), int64_t(all[size_t(2 * r + 1)])});
  return positions;
}

RunStart Run::restore() {
  // Init and loading write host views of the state (on a GPU, host copies
  // that exist only until they are uploaded; the moments' only when a
  // checkpoint has them).
  state.params.attach(/*read=*/false);
  RunStart run =
      restoreOrInitialize(c, m, checkpoints, state.checkpointed(), state.params,
                          {&state.expAvg, &state.expAvgSq}, coords);
  for (TensorSet *set : state.paramsAndMoments()) {
    set->upload();
    set->detach();
  }
  return run;
}

int64_t Run::globalBatch() const {
  int64_t global =
      c.training.globalBatchSize > 0 ? c.training.globalBatchSize : batch * dp;
  if (global % (batch * dp) != 0)
    fatal("training.global_batch_size (" + std::to_string(global) +
          ") must be a multiple of local_batch_size x data-parallel degree (" +
          std::to_string(batch) + " x " + std::to_string(dp) + ")");
  int64_t accumulation = global / (batch * dp);
  if (accumulation != m.accumulationSteps)
    fatal("corrupt executable: compiled for " +
          std::to_string(m.accumulationSteps) +
          " gradient accumulation steps, the config asks for " +
          std::to_string(accumulation));
  return global;
}

void Run::openMetrics() {
  if (std::error_code ec = llvm::sys::fs::create_directories(c.job.dumpFolder))
    fatal("cannot create job.dump_folder '" + c.job.dumpFolder +
          "': " + ec.message());
  llvm::SmallString<256> path(c.job.dumpFolder);
  llvm::sys::path::append(path, "metrics.jsonl");
  // A resumed run continues the metrics of the run it resumes, without the
  // steps that run took after its checkpoint.
  if (leader && restored.resumed)
    keepMetricsUpTo(path.str().str(), restored.state.step);
  std::error_code ec;
  // Only the first rank reports; every rank computes the same loss.
  metrics = std::make_unique<llvm::raw_fd_ostream>(
      leader ? path.str() : "/dev/null", ec,
      restored.resumed ? llvm::sys::fs::OF_Append : llvm::sys::fs::OF_None);
  if (ec)
    fatal("cannot write '" + path.str().str() + "': " + ec.message());
  if (!leader)
    std::freopen("/dev/null", "w", stdout);
  tensorboard = openTensorBoard(c, m, comm);
}

void Run::printStart() {
  std::printf("titan: %s, %lld parameters | %lld steps of %lld x %lld tokens "
              "(local batch %lld, %lld accumulation step%s) | data %s\n",
              m.model.c_str(), (long long)numParams,
              (long long)c.training.steps, (long long)global, (long long)seq,
              (long long)batch, (long long)accumulation,
              accumulation == 1 ? "" : "s", data->describe().c_str());
  std::fflush(stdout);
  if (comm)
    std::printf("mesh: pp %lld x dp_replicate %lld x dp_shard %lld x cp %lld "
                "x tp %lld = %lld ranks | per rank: parameters %lld bytes, "
                "optimizer state %lld bytes (unsharded: %lld, %lld)\n",
                (long long)m.mesh[kPP], (long long)m.mesh[kDPReplicate],
                (long long)m.mesh[kDPShard], (long long)m.mesh[kCP],
                (long long)m.mesh[kTP], (long long)world,
                (long long)(localParams * 4), (long long)(localParams * 8),
                (long long)(numParams * 4), (long long)(numParams * 8));
  // TorchTitan's memory_estimation.enable: titan's plan is exact. (Ranks
  // of other pipeline stages plan their own; --emit=memory lists them.)
  if (c.memoryEstimation.enable)
    std::printf("memory_estimation: rank 0's planned memory %s (%lld bytes, "
                "one arena; titan-compile --emit=memory breaks it down)\n",
                titan::humanBytes(double(m.arenaBytes)).c_str(),
                (long long)m.arenaBytes);
  std::fflush(stdout);
  if (!device.hostAccessible())
    std::printf("device: %s\n", device.describe().c_str());
  if (validator)
    std::printf("validation: %s batches of %lld x %lld tokens after step 1 "
                "and every %lld steps | data %s\n",
                c.validation.steps < 0
                    ? "all"
                    : std::to_string(c.validation.steps).c_str(),
                (long long)(m.eval->localBatch * dp), (long long)m.eval->seqLen,
                (long long)c.validation.freq, validator->describe().c_str());
  std::printf("%s", restored.message.c_str());
  std::fflush(stdout);
}

int Run::train() {
  printStart();
  if (c.checkpoint.createSeedCheckpoint) {
    // TorchTitan saves the initialized model as step 0 ("last step": a
    // model-only export unless last_save_model_only is off) and stops.
    if (!c.checkpoint.enable)
      fatal("checkpoint.create_seed_checkpoint needs checkpoint.enable");
    save(0, /*last=*/true);
    std::printf("created the seed checkpoint\n");
    return 0;
  }
  if (firstStep >= totalSteps) {
    std::printf("step %lld of the checkpoint is already training.steps (%lld): "
                "nothing to train\n",
                (long long)firstStep, (long long)totalSteps);
    return 0;
  }
  start = std::chrono::steady_clock::now();
  for (int64_t step = firstStep; step < totalSteps; ++step)
    trainStep(step);
  finishBackgroundSave(/*wait=*/true);
  return 0;
}

void Run::trainStep(int64_t step) {
  auto stepStart = std::chrono::steady_clock::now();
  noteStep(step + 1);
  if (comm) {
    comm->setContext("step " + std::to_string(step + 1));
    if (step == firstStep + 1)
      comm->setTimeout(double(c.comm.trainTimeoutSeconds));
    maybeHangAtStep(step + 1, rank());
  }
  // TorchTitan's [profiling]: torch.profiler.schedule's action for this
  // step (TorchTitan calls profiler.step() after each train step, so step
  // index `step` runs under schedule(step)). Recording spans the window's
  // steps; warm-up and waiting steps record nothing.
  trace::ProfilerAction action = trace::ProfilerAction::None;
  if (c.profiling.enableProfiling)
    action = trace::profilerAction(step, c.profiling.profileFreq,
                                   c.profiling.profilerWarmup,
                                   c.profiling.profilerActive);
  bool tracing = action == trace::ProfilerAction::Record ||
                 action == trace::ProfilerAction::RecordAndSave;
  if (tracing && !windowOpen) {
    trace::setRecording(true);
    windowOpen = true;
  }
  StepTrace *trace = tracing ? &window : nullptr;
  double stepBegin = StepTrace::now();
  // The optimizer's inputs go first when forward_backward updates too.
  writeStepInputs(step);
  double lossSum = accumulateGradients(step, trace);
  maybeNanGradient(step + 1);
  // A non-finite loss stops the run before the update, so the state stays
  // the last good one (with the optimizer in the backward, the update has
  // run: the state in memory is not saved); a non-finite gradient norm
  // after an update that kept the state (titan.adamw skips it). Either way
  // no checkpoint is written from it.
  bool finiteLoss = std::isfinite(lossSum);
  auto [gradNorm, lr] =
      finiteLoss ? update(step, trace) : std::pair<float, float>(0, 0);
  if (tracing) {
    window.add("step " + std::to_string(step + 1), "step", stepBegin,
               StepTrace::now());
    // The window's last step writes it; so does the run's last step, as
    // torch.profiler's stop() saves a window cut short.
    if (action == trace::ProfilerAction::RecordAndSave ||
        step + 1 == totalSteps) {
      trace::setRecording(false);
      windowOpen = false;
      llvm::SmallString<256> folder(c.job.dumpFolder);
      llvm::sys::path::append(folder, c.profiling.saveTracesFolder);
      window.write(folder.str().str(), step + 1, rank());
    }
  }
  auto now = std::chrono::steady_clock::now();
  report(step, {lossSum / double(accumulation), finiteLoss, gradNorm, lr,
                std::chrono::duration<double>(now - stepStart).count(),
                std::chrono::duration<double>(now - start).count()});
  finishBackgroundSave(/*wait=*/false);
  saveIfDue(step);
  // After the step's checkpoint, as TorchTitan's train loop validates.
  if (validator && validator->due(step + 1)) {
    if (comm)
      comm->setContext("validation after step " + std::to_string(step + 1));
    logValidation(step, validator->validate());
  }
}

void Run::logValidation(int64_t step, const ValidationResult &r) {
  double tokensPerSecond = double(r.tokens) / r.seconds;
  // TorchTitan's validation_metrics/loss at the step, on a line of its own.
  *metrics << llvm::formatv("{{\"step\": {0}, \"validation_loss\": {1}, "
                            "\"validation_tokens_per_second\": {2}, "
                            "\"validation_time_s\": {3}}\n",
                            step + 1, jsonNumber(r.loss),
                            llvm::formatv("{0:f1}", tokensPerSecond).str(),
                            llvm::formatv("{0:f4}", r.seconds).str());
  metrics->flush();
  if (tensorboard)
    tensorboard->logScalar("validation_metrics/loss", step + 1, r.loss);
  std::printf("validate step %5lld | loss %9.5f | %lld batches | %8.0f "
              "tokens/s | %.2f s\n",
              (long long)(step + 1), r.loss, (long long)r.batches,
              tokensPerSecond, r.seconds);
  std::fflush(stdout);
}

double Run::accumulateGradients(int64_t step, StepTrace *trace) {
  // Microbatch gradients add into the gradient slots (the compiled step
  // scales the loss by 1 / accumulation, as TorchTitan does).
  if (accumulation > 1 || pipelined)
    state.grads.zero();
  if (!pipelined)
    return microbatches(step, trace);
  double lossSum = pipelinedMicrobatches(step, trace);
  // Each microbatch's loss counts 1 / m of the step's (the last stage
  // has them all): every pipeline rank reports and checks the same.
  lossSum /= double(m.pipeline->microbatches);
  comm->hostAllReduce(&lossSum, 1, Reduction::Sum, 1u << kPP);
  return lossSum;
}

double Run::pipelinedMicrobatches(int64_t step, StepTrace *trace) {
  double lossSum = 0;
  for (int64_t micro = 0; micro < accumulation; ++micro) {
    // Microbatch mb is rows [mb x size, (mb + 1) x size) of the local
    // batch: the same samples as the single-rank step.
    int64_t size = m.pipeline->microbatchSize;
    lossSum += pipeline->run(
        [&](int64_t mb, int32_t *t, int32_t *l, int32_t *starts) {
          std::vector<int32_t> scratch(static_cast<size_t>(localSeq));
          std::vector<int32_t> whole(starts ? size_t(seq) : 0);
          for (int64_t row = 0; row < size; ++row) {
            data->sample(firstSampleOf(step) + (micro * dp + dpIndex) * batch +
                             mb * size + row,
                         t ? t + row * localSeq : scratch.data(),
                         l ? l + row * localSeq : scratch.data(),
                         starts ? whole.data() : nullptr);
            // The mask's input, from the whole sequence, as in the
            // unpipelined step.
            if (starts)
              documentStarts(whole.data(), 1, seq, eosId, starts + row * seq);
          }
        },
        trace);
  }
  return lossSum;
}

double Run::microbatches(int64_t step, StepTrace *trace) {
  double lossSum = 0;
  size_t tokenBytes = size_t(batch * localSeq) * sizeof(int32_t);
  for (int64_t micro = 0; micro < accumulation; ++micro) {
    int32_t *whole = slots.documentStarts ? slots.wholeTokens.data() : nullptr;
    for (int64_t row = 0; row < batch; ++row)
      data->sample(firstSampleOf(step) + (micro * dp + dpIndex) * batch + row,
                   slots.hostTokens + row * localSeq,
                   slots.hostLabels + row * localSeq,
                   whole ? whole + row * seq : nullptr);
    device.copyToDevice(slots.tokens, slots.hostTokens, tokenBytes);
    device.copyToDevice(slots.labels, slots.hostLabels, tokenBytes);
    // The mask's input, from the whole sequences: a context-parallel
    // rank's queries may belong to documents that start in other chunks.
    if (whole) {
      documentStarts(whole, batch, seq, eosId, slots.hostStarts);
      device.copyToDevice(slots.documentStarts, slots.hostStarts,
                          size_t(batch * seq) * sizeof(int32_t));
    }
    double begin = StepTrace::now();
    device.run(Device::Step::ForwardBackward, model.forwardBackward,
               arena.data());
    if (trace)
      trace->add("forward_backward " + std::to_string(micro), "step", begin,
                 StepTrace::now());
    lossSum += read<float>(device, slots.loss);
  }
  return lossSum;
}

void Run::writeStepInputs(int64_t step) {
  write<int64_t>(device, slots.step, step);
  write<int64_t>(device, slots.totalSteps, totalSteps);
}

std::pair<float, float> Run::update(int64_t step, StepTrace *trace) {
  // optimizer.early_step_in_backward: forward_backward has updated every
  // parameter (optimizer_step is empty, as TorchTitan's container's step()
  // is a no-op).
  if (m.optimizerInBackward)
    return {read<float>(device, slots.gradNorm), read<float>(device, slots.lr)};
  double begin = StepTrace::now();
  if (pipelined) {
    device.runPhase("the pipeline rank's optimizer_step", program.optimizerStep,
                    arena.data(), nullptr);
    device.synchronize("the step optimizer_step");
  } else if (m.optimizerOnHost) {
    // training.enable_cpu_offload: AdamW on the host, once the device has
    // copied the last gradients out; its copies to and from the device
    // (the norm's all-reduce) complete as it goes, so it is never captured.
    device.synchronize("the step forward_backward");
    model.optimizerStep(arena.data());
  } else
    device.run(Device::Step::OptimizerStep, model.optimizerStep, arena.data());
  if (trace)
    trace->add("optimizer_step", "step", begin, StepTrace::now());
  return {read<float>(device, slots.gradNorm), read<float>(device, slots.lr)};
}

void Run::report(int64_t step, const StepResult &r) {
  bool finite = r.finiteLoss && std::isfinite(r.gradNorm);
  double tokensPerSecond = double(global * seq) / r.seconds;
  // Every line has the process's peak resident memory so far (init,
  // loading, the steps and the saves before it); the first also the
  // planned arena and what the step really used of it (the end of the
  // highest block written).
  std::string memory =
      (step == firstStep ? llvm::formatv(", \"arena_planned_bytes\": {0}, "
                                         "\"arena_peak_bytes\": {1}",
                                         m.arenaBytes, arena.highWaterMark())
                               .str()
                         : std::string()) +
      llvm::formatv(", \"rss_peak_bytes\": {0}", peakResidentBytes()).str();
  // Strict JSON: a non-finite value is null, named in "non_finite".
  std::string nonFinite =
      finite ? ""
             : llvm::formatv(", \"non_finite\": [\"{0}\"]",
                             r.finiteLoss ? "grad_norm" : "loss")
                   .str();
  // Model FLOPs per rank (6N + 12LHQT per token, PaLM's count) over the
  // step's time; MFU against the peak the user gives.
  double tflops = tokensPerSecond * m.flopsPerToken / double(world) * 1e-12;
  std::string mfu =
      c.metrics.peakTflops > 0
          ? llvm::formatv("{0:f4}", tflops / c.metrics.peakTflops).str()
          : "null";
  *metrics << llvm::formatv(
      "{{\"step\": {0}, \"loss\": {1}, \"grad_norm\": {2}, \"lr\": {3}, "
      "\"tokens_per_second\": {4}, \"step_time_s\": {5}, \"tflops\": {6}, "
      "\"mfu\": {7}, \"elapsed_s\": {8}{9}{10}}\n",
      step + 1, jsonNumber(r.meanLoss),
      r.finiteLoss ? jsonNumber(r.gradNorm) : "null",
      r.finiteLoss ? jsonNumber(r.lr) : "null",
      llvm::formatv("{0:f1}", tokensPerSecond).str(),
      llvm::formatv("{0:f4}", r.seconds).str(), jsonNumber(tflops), mfu,
      llvm::formatv("{0:f3}", r.elapsed).str(), memory, nonFinite);
  metrics->flush();
  if (!finite) {
    // A background save of an earlier step is committed first, as a
    // synchronous save of it would stand (every rank sees the same
    // all-reduced values, so all get here together).
    finishBackgroundSave(/*wait=*/true);
    stopOnNonFinite(step + 1, r);
  }
  if ((step + 1) % c.metrics.logFreq == 0 || step + 1 == totalSteps ||
      step == firstStep)
    log(step, r, tokensPerSecond, tflops);
}

void Run::stopOnNonFinite(int64_t step, const StepResult &r) {
  // Only the stop pays for a scan: the step itself never tests its
  // tensors (the update's guard is a scalar test of the norm).
  state.params.attach(/*read=*/true);
  state.grads.attach(/*read=*/true);
  std::string param = firstNonFinite(state.params, "parameter", m);
  std::string grad = firstNonFinite(state.grads, "gradient", m);
  // A finite loss points at a gradient; a non-finite one at a parameter.
  bool normOnly = r.finiteLoss;
  std::string tensor =
      normOnly ? (grad.empty() ? param : grad) : (param.empty() ? grad : param);
  // The norm and the loss are all-reduced: every rank is here. The first
  // rank holding a non-finite tensor (rank 0 if none) speaks for all.
  std::vector<int64_t> holders = ranksHolding(!tensor.empty(), comm);
  std::vector<int64_t> paramHolders = ranksHolding(!param.empty(), comm);
  int64_t speaker = holders.empty() ? 0 : holders.front();
  if (rank() != speaker)
    waitForAbort();
  std::string who = "rank " + std::to_string(speaker);
  std::string found;
  if (tensor.empty())
    found = std::string("every parameter and gradient of every rank is "
                        "finite (") +
            (normOnly ? "the norm overflowed" : "an activation overflowed") +
            ")";
  else
    found = "the first non-finite tensor of " + who + " is " + tensor;
  if (holders.size() > 1)
    found += " (" + rankList(holders) + " hold one)";
  if (m.optimizerInBackward)
    found += " (optimizer.early_step_in_backward updated the parameters in "
             "the backward; their gradients are not kept)";
  else if (normOnly)
    // Without the skip every parameter would be NaN (a NaN clip_coef).
    found += "; the optimizer skipped the step (" +
             (paramHolders.empty()
                  ? std::string("every parameter of every rank is finite")
                  : rankList(paramHolders) +
                        (paramHolders.size() == 1 ? " holds" : " hold") +
                        " a non-finite parameter") +
             ")";
  fatal(llvm::formatv("step {0}: the {1} is {2}; {3}; stopping without "
                      "saving a checkpoint of this state (the last one "
                      "saved, if any, is intact)",
                      step, normOnly ? "gradient norm" : "loss",
                      std::isnan(normOnly ? double(r.gradNorm) : r.meanLoss)
                          ? "nan"
                          : "inf",
                      found)
            .str());
}

void Run::maybeNanGradient(int64_t step) {
  const char *env = std::getenv("TITAN_FAULT_NAN_GRAD");
  if (!env || !*env)
    return;
  auto [stepText, rankText] = StringRef(env).split(':');
  int64_t s, r;
  if (stepText.getAsInteger(10, s) || rankText.getAsInteger(10, r) || s < 1 ||
      r < 0 || r >= world)
    fatal(std::string("TITAN_FAULT_NAN_GRAD='") + env +
          "' is not <step>:<rank> (a step from 1, a rank below " +
          std::to_string(world) + ")");
  if (m.optimizerInBackward)
    fatal("TITAN_FAULT_NAN_GRAD: with optimizer.early_step_in_backward no "
          "gradient outlives the backward");
  if (s != step || r != rank())
    return;
  // A block no other rank holds: a NaN in one copy of a replicated
  // gradient would reach only that rank's (all-reduced) norm.
  unsigned split = 0;
  for (int a = 0; a < kNumAxes; ++a)
    if (a != kPP && m.mesh[a] > 1)
      split |= 1u << a;
  for (auto [i, p] : llvm::enumerate(m.params)) {
    int64_t n = numel(p.localShape);
    if (n == 0 || (p.shardMask() & split) != split)
      continue;
    char *at = state.grads.addresses[i] + n / 2 * int64_t(sizeof(float));
    write<float>(device, at, std::numeric_limits<float>::quiet_NaN());
    std::fprintf(stderr,
                 "TITAN_FAULT_NAN_GRAD: step %lld: rank %lld wrote nan into "
                 "element %lld of %sthe gradient of '%s'\n",
                 (long long)step, (long long)r, (long long)(n / 2),
                 p.localShape != p.shape ? "its block of " : "",
                 p.name.c_str());
    return;
  }
  fatal("TITAN_FAULT_NAN_GRAD: rank " + std::to_string(r) +
        " holds no gradient block of its own (each is also another "
        "rank's: data-parallel replicas or context-parallel ranks)");
}

void Run::log(int64_t step, const StepResult &r, double tokensPerSecond,
              double tflops) {
  std::printf("step %5lld | loss %9.5f | grad_norm %8.4f | lr %.3e | "
              "%8.0f tokens/s",
              (long long)(step + 1), r.meanLoss, double(r.gradNorm),
              double(r.lr), tokensPerSecond);
  if (m.flopsPerToken > 0)
    std::printf(" | %6.1f GFLOP/s", tokensPerSecond * m.flopsPerToken * 1e-9);
  double eta =
      r.elapsed / double(step + 1 - firstStep) * double(totalSteps - step - 1);
  std::printf(" | arena %s, RSS %s | %.1f s, ETA %.0f s\n",
              titan::humanBytes(double(m.arenaBytes)).c_str(),
              titan::humanBytes(double(residentBytes())).c_str(), r.elapsed,
              eta);
  std::fflush(stdout);
  if (tensorboard)
    logTensorBoard(step, r, tokensPerSecond, tflops);
}

/// TorchTitan's scalars (MetricsProcessor.log, train.py's extra_metrics)
/// that titan measures, under its tags: throughput and TFLOP/s per device;
/// memory from the plan (reserved: the arena is allocated whole, once) and
/// the arena's high-water mark (active), plus the process's peak RSS.
void Run::logTensorBoard(int64_t step, const StepResult &r,
                         double tokensPerSecond, double tflops) {
  constexpr double kGiB = double(int64_t(1) << 30);
  std::vector<std::pair<StringRef, double>> scalars = {
      {"loss_metrics/global_avg_loss", r.meanLoss},
      {"grad_norm", r.gradNorm},
      {"lr", r.lr},
      {"n_tokens_seen", double(firstSampleOf(step + 1) * seq)},
      {"throughput(tps)", tokensPerSecond / double(world)},
      {"tflops", tflops},
      {"time_metrics/end_to_end(s)", r.seconds},
      {"memory/max_reserved(GiB)", double(m.arenaBytes) / kGiB},
      {"memory/max_active(GiB)", double(arena.highWaterMark()) / kGiB},
      {"memory/rss_peak(GiB)", double(peakResidentBytes()) / kGiB}};
  if (c.metrics.peakTflops > 0)
    scalars.push_back({"mfu(%)", 100 * tflops / c.metrics.peakTflops});
  for (auto [tag, value] : scalars)
    tensorboard->logScalar(tag, step + 1, value);
}

void Run::saveIfDue(int64_t step) {
  bool last = step + 1 == totalSteps;
  // checkpoint.load_only: checkpoints are read, never written (TorchTitan).
  if (!c.checkpoint.enable || c.checkpoint.loadOnly ||
      !(last || (step + 1) % c.checkpoint.interval == 0 ||
        (step == 0 && c.checkpoint.enableFirstStepCheckpoint)))
    return;
  save(step + 1, last);
}

void Run::save(int64_t steps, bool last) {
  bool modelOnly = last && c.checkpoint.lastSaveModelOnly;
  if (backgroundSaves && !last) {
    saveInBackground(steps);
    return;
  }
  finishBackgroundSave(/*wait=*/true);
  auto saveStart = std::chrono::steady_clock::now();
  std::string folder;
  // Host views of what the save writes: a model-only export reads the
  // parameters alone.
  state.params.attach(/*read=*/true);
  if (!modelOnly)
    for (TensorSet *set : {&state.expAvg, &state.expAvgSq})
      set->attach(/*read=*/true);
  if (modelOnly)
    folder = checkpoints.exportModel(steps, state.paramSet(),
                                     c.checkpoint.exportDtype,
                                     c.checkpoint.lastSaveInHf);
  else
    folder = checkpoints.save(trainingState(steps), state.checkpointed());
  for (TensorSet *set : state.paramsAndMoments())
    set->detach();
  saved(steps, folder,
        llvm::formatv("in {0:f2} s",
                      std::chrono::duration<double>(
                          std::chrono::steady_clock::now() - saveStart)
                          .count()));
}

TrainingState Run::trainingState(int64_t steps) {
  int64_t samples = firstSampleOf(steps);
  TrainingState saved{steps, samples, samples * seq,
                      uint64_t(c.training.seed.value_or(0)),
                      dataPositions(samples)};
  saved.dataFiles = data->files();
  return saved;
}

void Run::saveInBackground(int64_t steps) {
  finishBackgroundSave(/*wait=*/true);
  auto stageStart = std::chrono::steady_clock::now();
  std::array<TensorSet *, 3> sets = state.paramsAndMoments();
  backgroundSaves->start(
      trainingState(steps), [&](size_t set, size_t param, float *out) {
        const TensorSet &from = *sets[set];
        size_t bytes = size_t(from.refs[param].numel()) * sizeof(float);
        // The host arena (training.enable_cpu_offload) is host memory.
        if (from.direct)
          std::memcpy(out, from.addresses[param], bytes);
        else
          device.copyToHost(out, from.addresses[param], bytes);
      });
  backgroundStep = steps;
  backgroundStart = std::chrono::steady_clock::now();
  std::printf(
      "staged step %lld's checkpoint in %.2f s; writing it in the "
      "background\n",
      (long long)steps,
      std::chrono::duration<double>(backgroundStart - stageStart).count());
  std::fflush(stdout);
}

void Run::finishBackgroundSave(bool wait) {
  if (!backgroundSaves || !backgroundSaves->inFlight())
    return;
  std::optional<std::string> folder =
      wait ? backgroundSaves->wait() : backgroundSaves->poll();
  if (folder)
    saved(backgroundStep, *folder,
          llvm::formatv("in the background, committed {0:f2} s after staging",
                        std::chrono::duration<double>(
                            std::chrono::steady_clock::now() - backgroundStart)
                            .count()));
}

void Run::saved(int64_t steps, const std::string &folder,
                const std::string &how) {
  savedSteps.push_back(steps);
  checkpoints.prune(savedSteps);
  std::printf("saved %s %s\n", folder.c_str(), how.c_str());
  std::fflush(stdout);
}

} // namespace

int titanrt::trainMain(int argc, char **argv, const CompiledModel &model) {
  // A pipeline-parallel executable holds a program per pipeline rank; the
  // first one's manifest has what every rank shares (the config, the mesh,
  // the target) until the rank knows its pipeline coordinate.
  bool pipelined = model.programs != nullptr;
  Manifest m =
      parseManifest(pipelined ? model.programs[0].manifest : model.manifest);
  Device &device = model.device ? *model.device : hostDevice();
  checkTarget(m, device);
  std::optional<titan::TrainConfig> c = parseRunConfig(argc, argv, m);
  if (!c)
    return 0; // --help
  Communicator *comm = startRank(*c, m, device);
  stopOnSignals(comm ? comm->rank() : 0, comm != nullptr);
  PipelineProgram program;
  if (pipelined)
    program = selectPipelineProgram(model, comm, m);
  if (comm) {
    prepareGroups(model, m, *comm);
    if (pipelined)
      comm->preparePeers();
  }
  Run run(*c, m, model, device, comm, program);
  int status = run.train();
  auto endCommunicator = [] { shutdownCommunicator(); };
  finishRank(device, comm ? llvm::function_ref<void()>(endCommunicator)
                          : llvm::function_ref<void()>());
  return status;
}
