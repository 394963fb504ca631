//===- Trainer.cpp - the training loop of compiled executables ------------===//
//
// Owns every buffer the compiled functions read and write: parameters,
// gradients, AdamW moments, token batches. The compiled functions are pure
// (inputs -> outputs); updating in place is the caller's choice of aliasing
// output buffers with input ones.
//
//===----------------------------------------------------------------------===//

#include "titanrt/Trainer.h"

#include "Communicator.h"
#include "Dataset.h"
#include "Error.h"
#include "Init.h"
#include "SafeTensors.h"

#include "titan/Config/TrainConfig.h"
#include "titan/Support/Format.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
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
         key.starts_with("comm.") || key.starts_with("checkpoint.") ||
         key.starts_with("debug.") || key == "training.steps" ||
         key == "training.dataset" || key == "training.dataset_path";
}

struct Manifest {
  std::string model, config;
  int64_t localBatch = 0, seqLen = 0, vocab = 0, dim = 0;
  double flopsPerToken = 0;
  int64_t accumulationSteps = 1;
  std::vector<int64_t> mesh = {1, 1, 1, 1, 1};
  struct Param {
    std::string name;
    std::vector<int64_t> shape;      ///< of the unsharded model
    std::vector<int64_t> localShape; ///< this rank's shard
    /// Per dimension, the mesh axes splitting it (outermost first).
    std::vector<std::vector<MeshAxis>> dimAxes;
    unsigned shardMask = 0; ///< every mesh axis that splits some dimension
  };
  std::vector<Param> params;
  /// The memory plan: the arena's size and each state slot's offset.
  int64_t arenaBytes = 0;
  llvm::StringMap<std::pair<int64_t, int64_t>> slots; ///< offset, bytes
};

MeshAxis meshAxis(StringRef axis) {
  static const char *names[] = {"pp", "dp_replicate", "dp_shard", "cp", "tp"};
  for (unsigned i = 0; i < kNumAxes; ++i)
    if (axis == names[i])
      return MeshAxis(i);
  fatal("corrupt executable: unknown mesh axis '" + axis.str() + "'");
}

Manifest parseManifest(const char *text) {
  llvm::Expected<llvm::json::Value> json = llvm::json::parse(text);
  if (!json)
    fatal("corrupt executable: invalid manifest: " +
          llvm::toString(json.takeError()));
  const llvm::json::Object &o = *json->getAsObject();
  Manifest m;
  m.model = o.getString("model").value_or("").str();
  m.config = o.getString("config").value_or("").str();
  m.localBatch = o.getInteger("local_batch_size").value_or(0);
  m.seqLen = o.getInteger("seq_len").value_or(0);
  m.vocab = o.getInteger("vocab_size").value_or(0);
  m.dim = o.getInteger("dim").value_or(0);
  m.flopsPerToken = o.getNumber("flops_per_token").value_or(0);
  m.accumulationSteps = o.getInteger("accumulation_steps").value_or(1);
  if (const llvm::json::Array *mesh = o.getArray("mesh"))
    for (auto [i, size] : llvm::enumerate(*mesh))
      m.mesh[i] = *size.getAsInteger();
  for (const llvm::json::Value &p : *o.getArray("params")) {
    const llvm::json::Object &po = *p.getAsObject();
    Manifest::Param param;
    param.name = po.getString("name")->str();
    for (const llvm::json::Value &d : *po.getArray("shape"))
      param.shape.push_back(*d.getAsInteger());
    param.localShape = param.shape;
    if (const llvm::json::Array *local = po.getArray("local_shape")) {
      param.localShape.clear();
      for (const llvm::json::Value &d : *local)
        param.localShape.push_back(*d.getAsInteger());
    }
    param.dimAxes.resize(param.shape.size());
    if (const llvm::json::Array *dims = po.getArray("sharding"))
      for (auto [d, axes] : llvm::enumerate(*dims))
        for (const llvm::json::Value &axis : *axes.getAsArray()) {
          if (d >= param.shape.size())
            fatal("corrupt executable: sharding of '" + param.name +
                  "' has more dimensions than its shape");
          MeshAxis a = meshAxis(*axis.getAsString());
          param.dimAxes[d].push_back(a);
          param.shardMask |= 1u << a;
        }
    m.params.push_back(std::move(param));
  }
  m.arenaBytes = o.getInteger("arena_bytes").value_or(0);
  if (const llvm::json::Object *slots = o.getObject("slots"))
    for (const auto &[name, range] : *slots) {
      const llvm::json::Array *r = range.getAsArray();
      if (!r || r->size() != 2 || !(*r)[0].getAsInteger() ||
          !(*r)[1].getAsInteger() ||
          *(*r)[0].getAsInteger() + *(*r)[1].getAsInteger() > m.arenaBytes)
        fatal("corrupt executable: slot '" + name.str() +
              "' lies outside the planned arena");
      m.slots[name] = {*(*r)[0].getAsInteger(), *(*r)[1].getAsInteger()};
    }
  return m;
}

int64_t numel(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// The rank's memory: one allocation of the planned size, made once. The
/// compiled steps address everything in it by planned offsets; the runtime
/// finds the state it owns (parameters, gradients, optimizer moments, the
/// step's inputs and outputs) by slot name.
class Arena {
public:
  explicit Arena(const Manifest &m) : m(m) {
    size_t bytes = size_t(std::max<int64_t>(m.arenaBytes, kAlignment));
    base = static_cast<char *>(std::aligned_alloc(kAlignment, bytes));
    if (!base)
      fatal("out of host memory: cannot allocate the planned arena of " +
            std::to_string(m.arenaBytes) + " bytes (" +
            titan::humanBytes(double(m.arenaBytes)) +
            "; titan-compile --emit=memory shows what it holds)");
    // A pattern no computation writes, so the high-water mark can be read
    // back after a step.
    for (size_t i = 0; i < bytes / sizeof(uint64_t); ++i)
      reinterpret_cast<uint64_t *>(base)[i] = kUntouched;
  }
  ~Arena() { std::free(base); }
  Arena(const Arena &) = delete;
  Arena &operator=(const Arena &) = delete;

  char *data() { return base; }

  /// The slot `name`, which must hold `bytes` bytes.
  template <typename T> T *slot(const std::string &name, int64_t bytes) {
    auto it = m.slots.find(name);
    if (it == m.slots.end() || it->second.second != bytes)
      fatal("corrupt executable: the memory plan has no slot '" + name +
            "' of " + std::to_string(bytes) + " bytes");
    return reinterpret_cast<T *>(base + it->second.first);
  }

  /// The end of the highest 256-byte block written since the start.
  int64_t highWaterMark() const {
    const auto *words = reinterpret_cast<const uint64_t *>(base);
    int64_t n = m.arenaBytes / int64_t(sizeof(uint64_t));
    while (n > 0 && words[n - 1] == kUntouched)
      --n;
    int64_t end = n * int64_t(sizeof(uint64_t));
    return (end + kAlignment - 1) / kAlignment * kAlignment;
  }

private:
  static constexpr int64_t kAlignment = 256;
  static constexpr uint64_t kUntouched = 0x7ff4dead7ff4deadull; // NaN, NaN
  const Manifest &m;
  char *base = nullptr;
};

/// float32 tensors, one per parameter: this rank's shards in the arena
/// (slots "<kind>:<name>"), or whole tensors in memory of their own.
struct TensorSet {
  /// The whole tensors' memory (empty for arena shards).
  std::unique_ptr<float, decltype(&std::free)> storage{nullptr, &std::free};
  std::vector<TensorRef> refs;
  /// This rank's shards, in the arena slots of kind `kind`.
  TensorSet(const Manifest &m, Arena &arena, const std::string &kind) {
    for (const Manifest::Param &p : m.params)
      refs.push_back(
          {p.name, p.localShape,
           arena.slot<float>(kind + ":" + p.name, numel(p.localShape) * 4)});
  }
  /// Whole tensors, zeroed, in one allocation whose failure names its size
  /// (only a save gathers them: init and loading fill the shards directly).
  explicit TensorSet(const Manifest &m) {
    int64_t total = 0;
    for (const Manifest::Param &p : m.params)
      total += numel(p.shape);
    storage.reset(static_cast<float *>(
        std::calloc(size_t(std::max<int64_t>(total, 1)), sizeof(float))));
    if (!storage)
      fatal("out of host memory: the whole model's parameters (" +
            std::to_string(total * int64_t(sizeof(float))) +
            " bytes, gathered for a checkpoint save) do not fit");
    float *next = storage.get();
    for (const Manifest::Param &p : m.params) {
      refs.push_back({p.name, p.shape, next});
      next += numel(p.shape);
    }
  }
  void zero() {
    for (TensorRef &t : refs)
      std::fill(t.data, t.data + t.numel(), 0.0f);
  }
};

/// Calls `copy(wholeOffset, localOffset, count)` for each contiguous run of
/// this rank's block of parameter `p` (runs along the last dimension). A
/// dimension split over axes a1..ak is divided by each in turn (outermost
/// first); the innermost may leave an uneven remainder (FSDP padding), so a
/// rank's block can be shorter than its local shape, the rest being zero.
template <typename Copy>
void forEachShardRun(const Manifest::Param &p, const Communicator *comm,
                     Copy copy) {
  size_t rank = p.shape.size();
  if (rank == 0) {
    copy(0, 0, 1);
    return;
  }
  std::vector<int64_t> start(rank, 0), valid(p.shape);
  for (size_t d = 0; d < rank; ++d) {
    int64_t n = p.shape[d];
    for (size_t j = 0; j < p.dimAxes[d].size(); ++j) {
      MeshAxis a = p.dimAxes[d][j];
      int64_t parts = comm->meshShape()[a], c = comm->coordinate(a);
      int64_t rows = (n + parts - 1) / parts;
      start[d] += c * rows;
      n = std::clamp<int64_t>(n - c * rows, 0, rows);
    }
    valid[d] = n;
  }
  for (int64_t v : valid)
    if (v == 0)
      return;                          // a padding-only block
  std::vector<int64_t> index(rank, 0); // odometer over the leading dims
  while (true) {
    int64_t whole = 0, local = 0;
    for (size_t d = 0; d < rank; ++d) {
      int64_t i = d + 1 < rank ? index[d] : 0;
      whole = whole * p.shape[d] + start[d] + i;
      local = local * p.localShape[d] + i;
    }
    copy(whole, local, valid.back());
    int64_t d = int64_t(rank) - 2;
    for (; d >= 0; --d) {
      if (++index[d] < valid[d])
        break;
      index[d] = 0;
    }
    if (d < 0)
      return;
  }
}

/// Fills this rank's shard of each parameter i by calling
/// `fill(i, first, count, out)` for each contiguous run of its block
/// (elements [first, first + count) of the whole tensor, row-major).
template <typename Fill>
void fillShards(const Manifest &m, TensorSet &shards, const Communicator *comm,
                Fill fill) {
  for (auto [i, p, local] : llvm::enumerate(m.params, shards.refs)) {
    if (!p.shardMask) {
      fill(i, 0, local.numel(), local.data);
      continue;
    }
    forEachShardRun(p, comm, [&, i = i](int64_t w, int64_t l, int64_t n) {
      fill(i, w, n, local.data + l);
    });
  }
}

/// Reassembles whole tensors from every rank's shards: each rank places its
/// block in a zeroed tensor and the group of ranks holding the distinct
/// blocks sums them (exact: every element has one nonzero term).
void gatherFromShards(const Manifest &m, const TensorSet &shards,
                      TensorSet &whole, Communicator *comm) {
  for (auto [p, local, full] : llvm::zip(m.params, shards.refs, whole.refs)) {
    if (!p.shardMask) {
      std::copy(local.data, local.data + local.numel(), full.data);
      continue;
    }
    std::vector<float> placed(full.numel(), 0.0f);
    forEachShardRun(p, comm, [&](int64_t w, int64_t l, int64_t n) {
      std::copy(local.data + l, local.data + l + n, placed.begin() + w);
    });
    comm->allReduce(placed.data(), full.data, DataType::F32, full.numel(),
                    Reduction::Sum, p.shardMask)
        ->finish();
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

/// <dump_folder>/<checkpoint.folder>
std::string checkpointRoot(const titan::TrainConfig &c) {
  llvm::SmallString<256> root(c.job.dumpFolder);
  llvm::sys::path::append(root, c.checkpoint.folder);
  return root.str().str();
}

/// <dump_folder>/<checkpoint.folder>/step-<step>/model.safetensors
std::string checkpointPath(const titan::TrainConfig &c, int64_t step) {
  llvm::SmallString<256> path(checkpointRoot(c));
  llvm::sys::path::append(path, "step-" + std::to_string(step),
                          "model.safetensors");
  return path.str().str();
}

/// Keeps at most `keep_latest_k` step-N checkpoint folders (0: all): the
/// ones an earlier run left in a reused folder go first, oldest first, then
/// this run's oldest; the one just written (`saved`) always stays.
void pruneCheckpoints(const titan::TrainConfig &c,
                      const std::vector<int64_t> &saved) {
  if (c.checkpoint.keepLatestK <= 0)
    return;
  std::vector<std::tuple<bool, int64_t, std::string>> found;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(checkpointRoot(c), ec), end;
       it != end && !ec; it.increment(ec)) {
    StringRef name = llvm::sys::path::filename(it->path());
    int64_t step;
    if (name.consume_front("step-") && !name.getAsInteger(10, step))
      found.emplace_back(llvm::is_contained(saved, step), step, it->path());
  }
  // Earlier runs' (false) first, each by step: the one just written sorts
  // last, so it is never among those removed.
  llvm::sort(found);
  for (size_t i = 0; i + c.checkpoint.keepLatestK < found.size(); ++i)
    llvm::sys::fs::remove_directories(std::get<2>(found[i]));
}

/// Removes what a save that was killed left behind: `*.tmp` files in the
/// step folders, and a step folder left empty by that (never a complete
/// checkpoint, never loaded).
void removeUnfinishedSaves(const titan::TrainConfig &c) {
  std::vector<std::string> unfinished;
  std::error_code ec;
  for (llvm::sys::fs::recursive_directory_iterator it(checkpointRoot(c), ec),
       end;
       it != end && !ec; it.increment(ec))
    if (StringRef(it->path()).ends_with(".tmp"))
      unfinished.push_back(it->path());
  for (const std::string &file : unfinished) {
    llvm::sys::fs::remove(file);
    // Fails, leaving it, unless the folder is now empty.
    llvm::sys::fs::remove(llvm::sys::path::parent_path(file));
  }
}

} // namespace

int titanrt::trainMain(int argc, char **argv, const CompiledModel &model) {
  Manifest m = parseManifest(model.manifest);

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
  if (c.checkpoint.loadStep != -1)
    fatal("checkpoint.load_step: resuming a run (with its optimizer state) is "
          "not implemented yet; start from weights with "
          "checkpoint.initial_load_path");
  if (c.checkpoint.initialLoadInHf)
    fatal("checkpoint.initial_load_in_hf is not supported yet: load "
          "safetensors with TorchTitan parameter names");

  // One process per rank of the mesh; single-rank runs need no MPI.
  int64_t world = 1;
  for (int64_t size : m.mesh)
    world *= size;
  if (world == 1)
    refuseMultiRankLaunch();
  Communicator *comm = world > 1 ? &initCommunicator(m.mesh) : nullptr;
  // TorchTitan's [comm] timeouts: the start-up's until the first step ends.
  if (comm)
    comm->setTimeout(double(c.comm.initTimeoutSeconds));
  bool leader = !comm || comm->rank() == 0;
  int64_t dp = m.mesh[kDPReplicate] * m.mesh[kDPShard];
  int64_t dpIndex = comm ? comm->coordinate(kDPReplicate) * m.mesh[kDPShard] +
                               comm->coordinate(kDPShard)
                         : 0;

  // Everything the steps touch lives in the planned arena.
  Arena arena(m);
  TensorSet params(m, arena, "param"), grads(m, arena, "grad"),
      expAvg(m, arena, "exp_avg"), expAvgSq(m, arena, "exp_avg_sq");
  expAvg.zero();
  expAvgSq.zero();
  int64_t numParams = 0, localParams = 0;
  for (const Manifest::Param &p : m.params) {
    numParams += numel(p.shape);
    localParams += numel(p.localShape);
  }

  params.zero(); // FSDP padding rows stay zero
  if (!c.checkpoint.initialLoadPath.empty()) {
    // The file is mapped and checked whole; each rank reads its blocks.
    std::string path = c.checkpoint.initialLoadPath;
    if (llvm::sys::fs::is_directory(path))
      path += "/model.safetensors";
    std::vector<TensorRef> expected;
    for (const Manifest::Param &p : m.params)
      expected.push_back({p.name, p.shape, nullptr});
    SafetensorsReader file(path, expected);
    fillShards(m, params, comm,
               [&](size_t i, int64_t first, int64_t count, float *out) {
                 file.read(i, first, count, out);
               });
  } else {
    // Each rank draws only its own block: values depend on the element's
    // global index, not on the layout.
    uint64_t seed = uint64_t(c.debug.seed.value_or(0));
    fillShards(m, params, comm,
               [&](size_t i, int64_t first, int64_t count, float *out) {
                 initializeRange(m.params[i].name, m.dim, seed, first, count,
                                 out);
               });
  }

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
  int32_t *tokens = arena.slot<int32_t>("input:tokens", tokenBytes);
  int32_t *labels = arena.slot<int32_t>("input:labels", tokenBytes);
  float *loss = arena.slot<float>("output:loss", 4);
  float *gradNorm = arena.slot<float>("output:grad_norm", 4);
  float *lr = arena.slot<float>("output:lr", 4);
  int64_t *stepIndex = arena.slot<int64_t>("input:step", 8);
  int64_t *totalStepsSlot = arena.slot<int64_t>("input:total_steps", 8);

  if (std::error_code ec = llvm::sys::fs::create_directories(c.job.dumpFolder))
    fatal("cannot create job.dump_folder '" + c.job.dumpFolder +
          "': " + ec.message());
  llvm::SmallString<256> metricsPath(c.job.dumpFolder);
  llvm::sys::path::append(metricsPath, "metrics.jsonl");
  std::error_code ec;
  // Only the first rank reports; every rank computes the same loss.
  llvm::raw_fd_ostream metrics(leader ? metricsPath.str() : "/dev/null", ec);
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

  int64_t totalSteps = c.training.steps;
  std::vector<int64_t> savedSteps; ///< the checkpoints this run wrote
  if (leader && c.checkpoint.enable)
    removeUnfinishedSaves(c);
  auto start = std::chrono::steady_clock::now();
  for (int64_t step = 0; step < totalSteps; ++step) {
    auto stepStart = std::chrono::steady_clock::now();
    if (comm) {
      comm->setContext("step " + std::to_string(step + 1));
      if (step == 1)
        comm->setTimeout(double(c.comm.trainTimeoutSeconds));
    }
    double lossSum = 0;
    // Microbatch gradients add into the gradient slots (the compiled step
    // scales the loss by 1 / accumulation, as TorchTitan does).
    if (accumulation > 1)
      grads.zero();
    for (int64_t micro = 0; micro < accumulation; ++micro) {
      for (int64_t row = 0; row < batch; ++row)
        data.sample(step * global + (micro * dp + dpIndex) * batch + row,
                    tokens + row * seq, labels + row * seq);
      model.forwardBackward(arena.data());
      lossSum += *loss;
    }
    // A non-finite loss stops the run before the update, so the state stays
    // the last good one; a non-finite gradient norm after it. Either way no
    // checkpoint is written from it.
    bool finiteLoss = std::isfinite(lossSum);
    if (finiteLoss) {
      *stepIndex = step;
      *totalStepsSlot = totalSteps;
      model.optimizerStep(arena.data());
    }
    bool finite = finiteLoss && std::isfinite(*gradNorm);

    auto now = std::chrono::steady_clock::now();
    double stepSeconds = std::chrono::duration<double>(now - stepStart).count();
    double elapsed = std::chrono::duration<double>(now - start).count();
    double tokensPerSecond = double(global * seq) / stepSeconds;
    double meanLoss = lossSum / double(accumulation);
    // The first line also has the planned arena, what the step really used
    // of it (the end of the highest block written), and the process's peak
    // resident memory so far (init, loading, the first step).
    std::string memory =
        step == 0 ? llvm::formatv(", \"arena_planned_bytes\": {0}, "
                                  "\"arena_peak_bytes\": {1}, "
                                  "\"rss_peak_bytes\": {2}",
                                  m.arenaBytes, arena.highWaterMark(),
                                  peakResidentBytes())
                        .str()
                  : "";
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
        finiteLoss ? jsonNumber(*gradNorm) : "null",
        finiteLoss ? jsonNumber(*lr) : "null",
        llvm::formatv("{0:f1}", tokensPerSecond).str(),
        llvm::formatv("{0:f4}", stepSeconds).str(), jsonNumber(tflops), mfu,
        llvm::formatv("{0:f3}", elapsed).str(), memory, nonFinite);
    metrics.flush();
    if (!finite)
      stopOnNonFinite(step + 1, finiteLoss ? "gradient norm" : "loss",
                      finiteLoss ? double(*gradNorm) : meanLoss,
                      firstNonFinite(finiteLoss ? grads : params,
                                     finiteLoss ? "gradient" : "parameter",
                                     finiteLoss ? params : grads,
                                     finiteLoss ? "parameter" : "gradient"),
                      leader);
    if ((step + 1) % c.metrics.logFreq == 0 || step + 1 == totalSteps ||
        step == 0) {
      std::printf("step %5lld | loss %9.5f | grad_norm %8.4f | lr %.3e | "
                  "%8.0f tokens/s",
                  (long long)(step + 1), meanLoss, double(*gradNorm),
                  double(*lr), tokensPerSecond);
      if (m.flopsPerToken > 0)
        std::printf(" | %6.1f GFLOP/s",
                    tokensPerSecond * m.flopsPerToken * 1e-9);
      double eta = elapsed / double(step + 1) * double(totalSteps - step - 1);
      std::printf(" | arena %s, RSS %s | %.1f s, ETA %.0f s\n",
                  titan::humanBytes(double(m.arenaBytes)).c_str(),
                  titan::humanBytes(double(residentBytes())).c_str(), elapsed,
                  eta);
      std::fflush(stdout);
    }

    bool last = step + 1 == totalSteps;
    if (c.checkpoint.enable &&
        (last || (step + 1) % c.checkpoint.interval == 0)) {
      TensorSet whole(m);
      gatherFromShards(m, params, whole, comm);
      if (leader) {
        std::string file = checkpointPath(c, step + 1);
        saveSafetensors(file, whole.refs,
                        last && c.checkpoint.lastSaveModelOnly
                            ? c.checkpoint.exportDtype
                            : "float32");
        savedSteps.push_back(step + 1);
        pruneCheckpoints(c, savedSteps);
        std::printf("saved %s\n", file.c_str());
      }
    }
  }
  if (comm)
    shutdownCommunicator();
  return 0;
}
