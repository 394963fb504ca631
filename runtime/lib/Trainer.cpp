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

#include "Checkpoint.h"
#include "Communicator.h"
#include "Dataset.h"
#include "Error.h"
#include "Init.h"
#include "Manifest.h"
#include "PipelineExecutor.h"
#include "SafeTensors.h"
#include "ShardLayout.h"
#include "Trace.h"

#include "titan/Config/TrainConfig.h"
#include "titan/Support/Format.h"

#include "llvm/ADT/STLExtras.h"
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
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
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
         key == "training.steps" || key == "training.dataset" ||
         key == "training.dataset_path";
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
  }
  ~Arena() { device.freeArena(base); }
  Arena(const Arena &) = delete;
  Arena &operator=(const Arena &) = delete;

  char *data() { return base; }

  /// The address of slot `name`, which must hold `bytes` bytes.
  char *slot(const std::string &name, int64_t bytes) {
    auto it = m.slots.find(name);
    if (it == m.slots.end() || it->second.second != bytes)
      fatal("corrupt executable: the memory plan has no slot '" + name +
            "' of " + std::to_string(bytes) + " bytes");
    return base + it->second.first;
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
  char *base = nullptr;
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

  TensorSet(const Manifest &m, Arena &arena, const std::string &kind)
      : device(arena.target()) {
    for (const Manifest::Param &p : m.params) {
      char *address = arena.slot(kind + ":" + p.name, numel(p.localShape) * 4);
      addresses.push_back(address);
      refs.push_back({p.name, p.localShape,
                      device.hostAccessible()
                          ? reinterpret_cast<float *>(address)
                          : nullptr});
    }
  }
  /// Makes `refs` host memory, with the arena's values if `read` (zeros
  /// otherwise).
  void attach(bool read) {
    if (device.hostAccessible() || !copies.empty())
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
    if (device.hostAccessible())
      return;
    for (auto [copy, address] : llvm::zip(copies, addresses))
      device.copyToDevice(address, copy.data(), copy.size() * 4);
  }
  /// Frees the host copies.
  void detach() {
    if (device.hostAccessible())
      return;
    copies.clear();
    for (TensorRef &t : refs)
      t.data = nullptr;
  }
  void zero() {
    for (auto [t, address] : llvm::zip(refs, addresses))
      device.zero(address, size_t(t.numel()) * 4);
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
  for (const char *var : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                          "PMI_LOCAL_RANK", "SLURM_LOCALID", "LOCAL_RANK"}) {
    int64_t rank = 0;
    if (const char *value = std::getenv(var))
      if (!StringRef(value).getAsInteger(10, rank))
        return rank;
  }
  return 0;
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
  for (const char *var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE",
                          "SLURM_STEP_NUM_TASKS", "MV2_COMM_WORLD_SIZE"}) {
    const char *value = std::getenv(var);
    int64_t ranks = 0;
    if (value && !StringRef(value).getAsInteger(10, ranks) && ranks > 1)
      fatal("this executable was compiled for 1 rank, but it was launched as "
            "one of " +
            std::to_string(ranks) + " (" + var + "=" + value +
            "); recompile with titan-compile --world-size " +
            std::to_string(ranks) + ", or run it without mpirun/srun");
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

/// "the gradient of 'x'" for the first tensor of `first` (then of `then`)
/// holding a NaN or an infinity, in parameter order.
std::string firstNonFinite(const TensorSet &first, StringRef firstKind,
                           const TensorSet &then, StringRef thenKind) {
  for (auto [set, kind] : {std::pair(&first, firstKind), {&then, thenKind}})
    for (const TensorRef &t : set->refs)
      for (int64_t i = 0, n = t.numel(); i < n; ++i)
        if (!std::isfinite(t.data[i]))
          return (kind == "gradient" ? "the gradient of '" + t.name + "'"
                                     : "parameter '" + t.name + "'") +
                 " (element " + std::to_string(i) + " is " +
                 (std::isnan(t.data[i]) ? "nan" : "inf") + ")";
  return "";
}

/// Stops the run at a non-finite loss or gradient norm: every rank sees the
/// same (all-reduced) value and exits; the first rank says why.
[[noreturn]] void stopOnNonFinite(int64_t step, StringRef what, double value,
                                  const std::string &tensor, bool leader) {
  if (!leader) {
    std::fflush(stdout);
    std::exit(1);
  }
  fatal(llvm::formatv("step {0}: the {1} is {2}; {3}; stopping without "
                      "saving a checkpoint of this state (the last one "
                      "saved, if any, is intact)",
                      step, what, std::isnan(value) ? "nan" : "inf",
                      tensor.empty()
                          ? "every parameter and gradient of this rank is "
                            "finite (an activation overflowed)"
                          : "the first non-finite tensor of this rank is " +
                                tensor)
            .str());
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

/// Where a run starts, and what to say about it.
struct RunStart {
  TrainingState state; ///< step 0, sample 0 unless resumed
  bool resumed = false;
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
    // The moments come from the checkpoint too (else they stay the zeros
    // the device holds, without host copies).
    for (TensorSet *set : moments)
      set->attach(/*read=*/false);
    run.state = checkpoints.load(folder, sets);
    run.resumed = true;
    run.message = llvm::formatv("resumed from {0} (step {1}, {2} samples "
                                "consumed) in {3:f2} s\n",
                                folder, run.state.step,
                                run.state.samplesConsumed, seconds())
                      .str();
  };
  bool usesCheckpoints = c.checkpoint.enable || c.checkpoint.loadStep >= 0;
  if (usesCheckpoints)
    checkpoints.removeUnfinishedSaves();
  int64_t resumeStep = usesCheckpoints ? checkpoints.resumeStep() : -1;
  const std::string &path = c.checkpoint.initialLoadPath;
  bool isCheckpoint =
      !path.empty() && llvm::sys::fs::exists(path + "/index.json");
  if (resumeStep >= 0) {
    resumeFrom(checkpoints.stepFolder(resumeStep));
    if (!path.empty())
      run.message += "(checkpoint.initial_load_path is not used when "
                     "resuming)\n";
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
    // One safetensors file, its header checked whole; each rank reads its
    // blocks.
    std::string file = path;
    if (llvm::sys::fs::is_directory(file))
      file += "/model.safetensors";
    // The file holds the whole model; this rank reads its parameters'
    // blocks.
    std::vector<TensorRef> expected;
    llvm::StringMap<size_t> position;
    for (const Manifest::Param &p : m.allParams) {
      position[p.name] = expected.size();
      expected.push_back({p.name, p.shape, nullptr});
    }
    SafetensorsReader reader(file, expected);
    fillShards(m, params, coords,
               [&](size_t i, int64_t first, int64_t count, float *out) {
                 reader.read(position.lookup(m.params[i].name), first, count,
                             out);
               });
    run.message =
        llvm::formatv("loaded weights from {0} in {1:f2} s\n", file, seconds());
  } else {
    // Each rank draws only its own block: values depend on the element's
    // global index, not on the layout, so the runs are drawn in pieces on
    // every core.
    uint64_t seed = uint64_t(c.debug.seed.value_or(0));
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
  return run;
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
  if (m.target != device.target())
    fatal("corrupt executable: its steps were compiled for the " + m.target +
          " target but it was linked with the " + device.target() +
          " target's kernel library");

  std::vector<titan::ConfigOverride> overrides;
  std::vector<const char *> rest;
  if (llvm::Error e = titan::extractConfigOverrides(
          llvm::ArrayRef<const char *>(argv + 1, argv + argc), overrides, rest))
    fatal(llvm::toString(std::move(e)));
  for (const char *arg : rest) {
    if (StringRef(arg) == "--help" || StringRef(arg) == "-h") {
      std::printf("usage: %s [--section.key value]...\n\nRun-time keys: "
                  "job.*, metrics.*, checkpoint.*, debug.*, training.steps, "
                  "training.dataset_path.\nEverything else was fixed by "
                  "titan-compile.\n",
                  argv[0]);
      return 0;
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
  const titan::TrainConfig &c = *parsed;
  if (c.checkpoint.initialLoadInHf || c.checkpoint.lastSaveInHf)
    fatal(std::string("checkpoint.") +
          (c.checkpoint.initialLoadInHf ? "initial_load_in_hf"
                                        : "last_save_in_hf") +
          " is not supported yet: checkpoints use TorchTitan parameter "
          "names");

  // One process per rank of the mesh; single-rank runs need no MPI.
  int64_t world = 1;
  for (int64_t size : m.mesh)
    world *= size;
  if (world == 1)
    refuseMultiRankLaunch();
  // One GPU per local rank, chosen before the communicators bind to it.
  device.select(localRank());
  // CUDA graphs: each step captured once and replayed. Multi-rank runs
  // launch eagerly until capturing NCCL collectives (and the watchdog's
  // events) has been checked on GPUs.
  device.setGraphs(!c.debug.noCudaGraphs && world == 1);
  // TorchTitan's [comm] timeouts: the start-up's until the first step ends.
  Communicator *comm =
      world > 1 ? &initCommunicator(m.mesh, device.communicatorBackend(),
                                    double(c.comm.initTimeoutSeconds))
                : nullptr;
  // The pipeline rank's own program and its functions by name.
  std::map<std::string, PipelineFunction> programFunctions;
  titan_step_fn pipelineOptimizerStep = nullptr;
  if (pipelined) {
    int64_t ppRank = comm ? comm->coordinate(kPP) : 0;
    if (ppRank >= model.numPrograms)
      fatal("corrupt executable: no program for pipeline rank " +
            std::to_string(ppRank));
    const titan_program &program = model.programs[ppRank];
    m = parseManifest(program.manifest);
    if (!m.pipeline || m.pipeline->rank != ppRank)
      fatal("corrupt executable: the program of pipeline rank " +
            std::to_string(ppRank) + " has no pipeline manifest for it");
    for (int64_t i = 0; i < program.num_functions; ++i)
      programFunctions[program.names[i]] = program.functions[i];
    auto it = programFunctions.find("optimizer_step");
    if (it == programFunctions.end())
      fatal("corrupt executable: pipeline rank " + std::to_string(ppRank) +
            " has no optimizer_step");
    pipelineOptimizerStep = it->second;
  }
  // Creating a group is collective over every rank, so all create the
  // same groups in the same order: under pipeline parallelism the union of
  // every pipeline rank's (their programs use different ones).
  std::vector<unsigned> groups = m.collectiveAxes;
  if (pipelined) {
    for (int64_t r = 0; r < model.numPrograms; ++r)
      for (unsigned mask :
           parseManifest(model.programs[r].manifest).collectiveAxes)
        groups.push_back(mask);
    llvm::sort(groups);
    groups.erase(std::unique(groups.begin(), groups.end()), groups.end());
  }
  if (comm)
    comm->prepareGroups(groups);
  bool leader = !comm || comm->rank() == 0;
  int64_t dp = m.mesh[kDPReplicate] * m.mesh[kDPShard];
  int64_t dpIndex = comm ? comm->coordinate(kDPReplicate) * m.mesh[kDPShard] +
                               comm->coordinate(kDPShard)
                         : 0;

  // Everything the steps touch lives in the planned arena.
  Arena arena(m, device);
  TensorSet params(m, arena, "param"), grads(m, arena, "grad"),
      expAvg(m, arena, "exp_avg"), expAvgSq(m, arena, "exp_avg_sq");
  expAvg.zero();
  expAvgSq.zero();
  params.zero(); // FSDP padding rows stay zero
  int64_t numParams = 0, localParams = 0;
  for (const Manifest::Param &p : m.allParams)
    numParams += numel(p.shape);
  for (const Manifest::Param &p : m.params)
    localParams += numel(p.localShape);

  std::vector<int64_t> coords =
      meshCoordinates(m.mesh, comm ? comm->rank() : 0);
  Checkpointer checkpoints(c, m, comm);
  StateSet paramSet{"param", &params.refs};
  std::vector<StateSet> trainingSets = {
      paramSet, {"exp_avg", &expAvg.refs}, {"exp_avg_sq", &expAvgSq.refs}};
  // Init and loading write host views of the state (on a GPU, host copies
  // that exist only until they are uploaded; the moments' only when a
  // checkpoint has them).
  params.attach(/*read=*/false);
  RunStart begin = restoreOrInitialize(c, m, checkpoints, trainingSets, params,
                                       {&expAvg, &expAvgSq}, coords);
  for (TensorSet *set : {&params, &expAvg, &expAvgSq}) {
    set->upload();
    set->detach();
  }
  const TrainingState &resumed = begin.state;
  bool resuming = begin.resumed;

  Dataset data(c.training.datasetPath, m.vocab, m.seqLen);
  int64_t batch = m.localBatch, seq = m.seqLen;
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
  int64_t tokenBytes = batch * seq * int64_t(sizeof(int32_t));
  // Under pipeline parallelism the microbatches' tokens, labels and loss
  // are in the stages' frames and the last stage's arena.
  char *tokenSlot =
      pipelined ? nullptr : arena.slot("input:tokens", tokenBytes);
  char *labelSlot =
      pipelined ? nullptr : arena.slot("input:labels", tokenBytes);
  char *lossSlot = pipelined ? nullptr : arena.slot("output:loss", 4);
  char *gradNormSlot = arena.slot("output:grad_norm", 4);
  char *lrSlot = arena.slot("output:lr", 4);
  char *stepSlot = arena.slot("input:step", 8);
  char *totalStepsSlot = arena.slot("input:total_steps", 8);
  // The batch is drawn on the host: into the arena where the host can
  // address it, else into host buffers copied over before each step.
  std::vector<int32_t> hostBatch;
  if (!device.hostAccessible() && !pipelined)
    hostBatch.resize(size_t(2 * batch * seq));
  auto *tokens = device.hostAccessible()
                     ? reinterpret_cast<int32_t *>(tokenSlot)
                     : hostBatch.data();
  auto *labels = device.hostAccessible()
                     ? reinterpret_cast<int32_t *>(labelSlot)
                     : hostBatch.data() + batch * seq;
  std::unique_ptr<PipelineExecutor> pipeline;
  if (pipelined)
    pipeline = std::make_unique<PipelineExecutor>(m, programFunctions, device,
                                                  *comm, arena.data());

  if (std::error_code ec = llvm::sys::fs::create_directories(c.job.dumpFolder))
    fatal("cannot create job.dump_folder '" + c.job.dumpFolder +
          "': " + ec.message());
  llvm::SmallString<256> metricsPath(c.job.dumpFolder);
  llvm::sys::path::append(metricsPath, "metrics.jsonl");
  // A resumed run continues the metrics of the run it resumes, without the
  // steps that run took after its checkpoint.
  if (leader && resuming)
    keepMetricsUpTo(metricsPath.str().str(), resumed.step);
  std::error_code ec;
  // Only the first rank reports; every rank computes the same loss.
  llvm::raw_fd_ostream metrics(leader ? metricsPath.str() : "/dev/null", ec,
                               resuming ? llvm::sys::fs::OF_Append
                                        : llvm::sys::fs::OF_None);
  if (ec)
    fatal("cannot write '" + metricsPath.str().str() + "': " + ec.message());
  if (!leader)
    std::freopen("/dev/null", "w", stdout);

  std::printf("titan: %s, %lld parameters | %lld steps of %lld x %lld tokens "
              "(local batch %lld, %lld accumulation step%s) | data %s (%lld "
              "samples)\n",
              m.model.c_str(), (long long)numParams,
              (long long)c.training.steps, (long long)global, (long long)seq,
              (long long)batch, (long long)accumulation,
              accumulation == 1 ? "" : "s", c.training.datasetPath.c_str(),
              (long long)data.numSamples());
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
  std::fflush(stdout);

  if (!device.hostAccessible())
    std::printf("device: %s\n", device.describe().c_str());
  std::printf("%s", begin.message.c_str());
  std::fflush(stdout);
  if (leader && c.checkpoint.enable && c.checkpoint.asyncMode != "disabled")
    std::fprintf(stderr,
                 "warning: checkpoint.async_mode = \"%s\": titan saves "
                 "synchronously (the same checkpoint; the step waits for "
                 "it)\n",
                 c.checkpoint.asyncMode.c_str());

  int64_t totalSteps = c.training.steps;
  // The loop runs steps [firstStep, totalSteps); sample indices continue
  // from the data position the checkpoint saved.
  int64_t firstStep = resumed.step;
  int64_t firstSample = resumed.samplesConsumed;
  if (firstStep >= totalSteps) {
    std::printf("step %lld of the checkpoint is already training.steps (%lld): "
                "nothing to train\n",
                (long long)firstStep, (long long)totalSteps);
    if (comm)
      shutdownCommunicator();
    return 0;
  }
  std::vector<int64_t> savedSteps; ///< the checkpoints this run wrote
  auto start = std::chrono::steady_clock::now();
  for (int64_t step = firstStep; step < totalSteps; ++step) {
    auto stepStart = std::chrono::steady_clock::now();
    if (comm) {
      comm->setContext("step " + std::to_string(step + 1));
      if (step == firstStep + 1)
        comm->setTimeout(double(c.comm.trainTimeoutSeconds));
    }
    double lossSum = 0;
    // TorchTitan's [profiling]: every profile_freq-th step is traced.
    bool tracing = c.profiling.enableProfiling &&
                   (step + 1) % c.profiling.profileFreq == 0;
    StepTrace stepTrace;
    double stepBegin = StepTrace::now();
    // Microbatch gradients add into the gradient slots (the compiled step
    // scales the loss by 1 / accumulation, as TorchTitan does).
    if (accumulation > 1 || pipelined)
      grads.zero();
    for (int64_t micro = 0; micro < accumulation && pipelined; ++micro) {
      // Microbatch mb is rows [mb x size, (mb + 1) x size) of the local
      // batch: the same samples as the single-rank step.
      int64_t size = m.pipeline->microbatchSize;
      lossSum += pipeline->run(
          [&](int64_t mb, int32_t *t, int32_t *l) {
            std::vector<int32_t> scratch(static_cast<size_t>(seq));
            for (int64_t row = 0; row < size; ++row)
              data.sample(firstSample + (step - firstStep) * global +
                              (micro * dp + dpIndex) * batch + mb * size + row,
                          t ? t + row * seq : scratch.data(),
                          l ? l + row * seq : scratch.data());
          },
          tracing ? &stepTrace : nullptr);
    }
    for (int64_t micro = 0; micro < accumulation && !pipelined; ++micro) {
      for (int64_t row = 0; row < batch; ++row)
        data.sample(firstSample + (step - firstStep) * global +
                        (micro * dp + dpIndex) * batch + row,
                    tokens + row * seq, labels + row * seq);
      device.copyToDevice(tokenSlot, tokens, size_t(tokenBytes));
      device.copyToDevice(labelSlot, labels, size_t(tokenBytes));
      double begin = StepTrace::now();
      device.run(Device::Step::ForwardBackward, model.forwardBackward,
                 arena.data());
      if (tracing)
        stepTrace.add("forward_backward " + std::to_string(micro), "step",
                      begin, StepTrace::now());
      lossSum += read<float>(device, lossSlot);
    }
    // A non-finite loss stops the run before the update, so the state stays
    // the last good one; a non-finite gradient norm after it. Either way no
    // checkpoint is written from it.
    // Each microbatch's loss counts 1 / m of the step's (the last stage
    // has them all): every pipeline rank reports and checks the same.
    if (pipelined) {
      lossSum /= double(m.pipeline->microbatches);
      comm->allReduce(&lossSum, &lossSum, DataType::F64, 1, Reduction::Sum,
                      1u << kPP)
          ->finish();
    }
    bool finiteLoss = std::isfinite(lossSum);
    float gradNorm = 0, lr = 0;
    if (finiteLoss) {
      write<int64_t>(device, stepSlot, step);
      write<int64_t>(device, totalStepsSlot, totalSteps);
      double begin = StepTrace::now();
      if (pipelined)
        pipelineOptimizerStep(arena.data(), nullptr);
      else
        device.run(Device::Step::OptimizerStep, model.optimizerStep,
                   arena.data());
      if (tracing)
        stepTrace.add("optimizer_step", "step", begin, StepTrace::now());
      gradNorm = read<float>(device, gradNormSlot);
      lr = read<float>(device, lrSlot);
    }
    bool finite = finiteLoss && std::isfinite(gradNorm);
    if (tracing) {
      stepTrace.add("step " + std::to_string(step + 1), "step", stepBegin,
                    StepTrace::now());
      llvm::SmallString<256> folder(c.job.dumpFolder);
      llvm::sys::path::append(folder, c.profiling.saveTracesFolder);
      stepTrace.write(folder.str().str(), step + 1, comm ? comm->rank() : 0);
    }

    auto now = std::chrono::steady_clock::now();
    double stepSeconds = std::chrono::duration<double>(now - stepStart).count();
    double elapsed = std::chrono::duration<double>(now - start).count();
    double tokensPerSecond = double(global * seq) / stepSeconds;
    double meanLoss = lossSum / double(accumulation);
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
                               finiteLoss ? "grad_norm" : "loss")
                     .str();
    // Model FLOPs per rank (6N + 12LHQT per token, PaLM's count) over the
    // step's time; MFU against the peak the user gives.
    double tflops = tokensPerSecond * m.flopsPerToken / double(world) * 1e-12;
    std::string mfu =
        c.metrics.peakTflops > 0
            ? llvm::formatv("{0:f4}", tflops / c.metrics.peakTflops).str()
            : "null";
    metrics << llvm::formatv(
        "{{\"step\": {0}, \"loss\": {1}, \"grad_norm\": {2}, \"lr\": {3}, "
        "\"tokens_per_second\": {4}, \"step_time_s\": {5}, \"tflops\": {6}, "
        "\"mfu\": {7}, \"elapsed_s\": {8}{9}{10}}\n",
        step + 1, jsonNumber(meanLoss),
        finiteLoss ? jsonNumber(gradNorm) : "null",
        finiteLoss ? jsonNumber(lr) : "null",
        llvm::formatv("{0:f1}", tokensPerSecond).str(),
        llvm::formatv("{0:f4}", stepSeconds).str(), jsonNumber(tflops), mfu,
        llvm::formatv("{0:f3}", elapsed).str(), memory, nonFinite);
    metrics.flush();
    if (!finite) {
      // The host looks for the first non-finite tensor.
      params.attach(/*read=*/true);
      grads.attach(/*read=*/true);
      stopOnNonFinite(step + 1, finiteLoss ? "gradient norm" : "loss",
                      finiteLoss ? double(gradNorm) : meanLoss,
                      firstNonFinite(finiteLoss ? grads : params,
                                     finiteLoss ? "gradient" : "parameter",
                                     finiteLoss ? params : grads,
                                     finiteLoss ? "parameter" : "gradient"),
                      leader);
    }
    if ((step + 1) % c.metrics.logFreq == 0 || step + 1 == totalSteps ||
        step == firstStep) {
      std::printf("step %5lld | loss %9.5f | grad_norm %8.4f | lr %.3e | "
                  "%8.0f tokens/s",
                  (long long)(step + 1), meanLoss, double(gradNorm), double(lr),
                  tokensPerSecond);
      if (m.flopsPerToken > 0)
        std::printf(" | %6.1f GFLOP/s",
                    tokensPerSecond * m.flopsPerToken * 1e-9);
      double eta = elapsed / double(step + 1 - firstStep) *
                   double(totalSteps - step - 1);
      std::printf(" | arena %s, RSS %s | %.1f s, ETA %.0f s\n",
                  titan::humanBytes(double(m.arenaBytes)).c_str(),
                  titan::humanBytes(double(residentBytes())).c_str(), elapsed,
                  eta);
      std::fflush(stdout);
    }

    bool last = step + 1 == totalSteps;
    if (c.checkpoint.enable &&
        (last || (step + 1) % c.checkpoint.interval == 0 ||
         (step == 0 && c.checkpoint.enableFirstStepCheckpoint))) {
      auto saveStart = std::chrono::steady_clock::now();
      std::string saved;
      // Host views of what the save writes: a model-only export reads the
      // parameters alone.
      bool modelOnly = last && c.checkpoint.lastSaveModelOnly;
      params.attach(/*read=*/true);
      if (!modelOnly)
        for (TensorSet *set : {&expAvg, &expAvgSq})
          set->attach(/*read=*/true);
      if (modelOnly) {
        saved = checkpoints.exportModel(step + 1, paramSet,
                                        c.checkpoint.exportDtype);
      } else {
        int64_t samples = firstSample + (step + 1 - firstStep) * global;
        saved = checkpoints.save({step + 1, samples, samples * seq,
                                  uint64_t(c.debug.seed.value_or(0))},
                                 trainingSets);
      }
      for (TensorSet *set : {&params, &expAvg, &expAvgSq})
        set->detach();
      savedSteps.push_back(step + 1);
      checkpoints.prune(savedSteps);
      std::printf("saved %s in %.2f s\n", saved.c_str(),
                  std::chrono::duration<double>(
                      std::chrono::steady_clock::now() - saveStart)
                      .count());
      std::fflush(stdout);
    }
  }
  if (comm)
    shutdownCommunicator();
  return 0;
}
