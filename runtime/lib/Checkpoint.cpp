//===- Checkpoint.cpp - distributed checkpoints and exports ---------------===//

#include "Checkpoint.h"

#include "Communicator.h"
#include "Error.h"
#include "FileIO.h"
#include "HFCheckpoint.h"
#include "ShardLayout.h"

#include "titan/Contract/TrainConfig.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <array>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <tuple>

#include <unistd.h>

#include <xxhash.h>

using namespace titanrt;
using llvm::StringRef;

const char *const titanrt::kStateKinds[3] = {"param", "exp_avg", "exp_avg_sq"};

namespace {

constexpr const char *kFormat = "titan-checkpoint";
constexpr int64_t kVersion = 1;
constexpr const char *kIndexFile = "index.json";
constexpr const char *kExportFile = "model.safetensors";
/// A block's checksum in the index: XXH3's 64 bits of its bytes in the
/// shard file, as 16 hex digits (JSON numbers do not hold 64 bits).
constexpr const char *kChecksumKey = "xxh3_64";

/// Fault injection for tests: TITAN_FAULT_KILL_IN_SAVE=<step>:<rank>[:<sig>]
/// makes that rank get signal <sig> (KILL, as a lost machine would, when
/// absent; TERM or INT, as from a scheduler or a user) in the save of that
/// step, after writing its shard file and before the save is complete.
void maybeDieInSave(int64_t step, int64_t rank) {
  const char *env = std::getenv("TITAN_FAULT_KILL_IN_SAVE");
  if (!env || !*env)
    return;
  auto [stepText, rest] = StringRef(env).split(':');
  auto [rankText, sigText] = rest.split(':');
  int sig = llvm::StringSwitch<int>(sigText)
                .Cases({"", "KILL"}, SIGKILL)
                .Case("TERM", SIGTERM)
                .Case("INT", SIGINT)
                .Default(0);
  int64_t s, r;
  if (stepText.getAsInteger(10, s) || rankText.getAsInteger(10, r) || !sig)
    fatal(std::string("TITAN_FAULT_KILL_IN_SAVE='") + env +
          "' is not <step>:<rank>[:KILL|TERM|INT]");
  if (s == step && r == rank)
    ::raise(sig);
}

/// What a save of `step` that fails leaves, for its error message
/// (ENOSPC, say): the folders are renamed into place only once complete.
std::string unsavedNote(int64_t step, StringRef what = "checkpoint") {
  return "the " + what.str() + " of step " + std::to_string(step) +
         " is not saved (its unfinished step-" + std::to_string(step) +
         ".tmp folder is removed at the next start); the checkpoints saved "
         "before it are intact";
}

/// The step of a folder named exactly "step-<N>", or -1.
int64_t stepOfFolderName(StringRef name) {
  int64_t step;
  if (!name.consume_front("step-") || name.empty() ||
      !llvm::all_of(name, [](char ch) { return llvm::isDigit(ch); }) ||
      name.getAsInteger(10, step))
    return -1;
  return step;
}

std::string shapeString(llvm::ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

/// An integer array of exactly `rank` entries, each >= 0, or nullopt.
std::optional<std::vector<int64_t>> intArray(const llvm::json::Value *v,
                                             size_t rank) {
  const llvm::json::Array *a = v ? v->getAsArray() : nullptr;
  if (!a || a->size() != rank)
    return std::nullopt;
  std::vector<int64_t> out;
  for (const llvm::json::Value &e : *a) {
    std::optional<int64_t> i = e.getAsInteger();
    if (!i || *i < 0)
      return std::nullopt;
    out.push_back(*i);
  }
  return out;
}

/// "data_positions": [{"document": d, "token": t}, ...], one per
/// data-parallel rank.
llvm::json::Array writeDataPositions(llvm::ArrayRef<DataPosition> positions) {
  llvm::json::Array array;
  for (const DataPosition &p : positions)
    array.push_back(
        llvm::json::Object{{"document", p.document}, {"token", p.token}});
  return array;
}

/// The positions of "data_positions"; the error says what is wrong.
llvm::Expected<std::vector<DataPosition>>
readDataPositions(const llvm::json::Value &value) {
  std::vector<DataPosition> positions;
  const llvm::json::Array *array = value.getAsArray();
  if (!array)
    return llvm::createStringError("\"data_positions\" is not an array");
  for (const llvm::json::Value &entry : *array) {
    const llvm::json::Object *o = entry.getAsObject();
    std::optional<int64_t> document =
        o ? o->getInteger("document") : std::nullopt;
    std::optional<int64_t> token = o ? o->getInteger("token") : std::nullopt;
    if (!document || *document < 0 || !token || *token < 0)
      return llvm::createStringError(
          "\"data_positions\" needs objects with non-negative \"document\" "
          "and \"token\"");
    positions.push_back({*document, *token});
  }
  return positions;
}

/// "data_files": [{"file": name, "bytes": b, "modified": utc}, ...].
llvm::json::Array writeDataFiles(llvm::ArrayRef<DataFile> files) {
  llvm::json::Array array;
  for (const DataFile &f : files)
    array.push_back(llvm::json::Object{
        {"file", f.name}, {"bytes", f.bytes}, {"modified", f.modified}});
  return array;
}

llvm::Expected<std::vector<DataFile>>
readDataFiles(const llvm::json::Value &value) {
  std::vector<DataFile> files;
  const llvm::json::Array *array = value.getAsArray();
  if (!array)
    return llvm::createStringError("\"data_files\" is not an array");
  for (const llvm::json::Value &entry : *array) {
    const llvm::json::Object *o = entry.getAsObject();
    std::optional<StringRef> name = o ? o->getString("file") : std::nullopt;
    std::optional<int64_t> bytes = o ? o->getInteger("bytes") : std::nullopt;
    std::optional<StringRef> modified =
        o ? o->getString("modified") : std::nullopt;
    if (!name || !bytes || *bytes < 0 || !modified)
      return llvm::createStringError(
          "\"data_files\" needs objects with a \"file\" name, "
          "non-negative \"bytes\" and a \"modified\" time");
    files.push_back({name->str(), *bytes, modified->str()});
  }
  return files;
}

/// The index of a checkpoint, checked against the model: every state
/// tensor is there with the model's shape, as float32, and its blocks lie
/// in bounds, do not overlap and cover it exactly.
struct CheckpointIndex {
  struct Block {
    size_t file;  ///< into files
    size_t entry; ///< the tensor's index in that file's list
    Box box;
    /// Absent in checkpoints of runtimes before checksums.
    std::optional<uint64_t> checksum;
  };
  struct File {
    std::string name;
    std::vector<TensorRef> tensors; ///< names and block shapes
    std::unique_ptr<SafetensorsReader> reader;
  };
  TrainingState state;
  std::vector<File> files;
  /// "<kind>:<parameter>" -> its blocks.
  llvm::StringMap<std::vector<Block>> blocks;
  /// Whether some block has no checksum (loaded unverified).
  bool unverified = false;

  CheckpointIndex() = default;

  /// Reads `folder`'s index; an error stops the run.
  CheckpointIndex(const std::string &folder, const Manifest &m) {
    std::string path = joinPath(folder, kIndexFile);
    requireRegularFile(path, "checkpoint index");
    uint64_t size = 0;
    if (std::error_code ec = llvm::sys::fs::file_size(path, size))
      fatal("cannot read checkpoint index '" + path + "': " + ec.message() +
            (ec == std::errc::no_such_file_or_directory
                 ? " (not a complete titan checkpoint)"
                 : ""));
    // One entry per block: generous for thousands of ranks.
    if (size > (uint64_t(1) << 30))
      fatal("checkpoint index '" + path + "' is " + std::to_string(size) +
            " bytes, more than 1 GiB: not a titan checkpoint index");
    auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                              /*RequiresNullTerminator=*/false);
    if (!buffer)
      fatal("cannot read checkpoint index '" + path +
            "': " + buffer.getError().message());
    if (llvm::Error error = parse((*buffer)->getBuffer(), path, folder, m))
      fatal(llvm::toString(std::move(error)));
  }

  /// Reads the index text `text` of the checkpoint in `folder` (`path` in
  /// messages): the error names what is wrong.
  llvm::Error parse(StringRef text, const std::string &path,
                    const std::string &folder, const Manifest &m) {
    llvm::Expected<llvm::json::Value> json = llvm::json::parse(text);
    if (!json)
      return llvm::createStringError(
          "checkpoint index '" + path +
          "' is not valid JSON: " + llvm::toString(json.takeError()));
    const llvm::json::Object *o = json->getAsObject();
    auto bad = [&](const std::string &what) {
      return llvm::createStringError("checkpoint index '" + path +
                                     "': " + what);
    };
    if (!o || o->getString("format") != StringRef(kFormat))
      return bad(std::string("not a titan checkpoint (\"format\" is not \"") +
                 kFormat + "\")");
    if (o->getInteger("version") != kVersion)
      return bad("unsupported version (this runtime reads version " +
                 std::to_string(kVersion) + ")");

    const llvm::json::Object *st = o->getObject("training_state");
    std::optional<int64_t> step = st ? st->getInteger("step") : std::nullopt;
    std::optional<int64_t> samples =
        st ? st->getInteger("samples_consumed") : std::nullopt;
    std::optional<int64_t> tokens =
        st ? st->getInteger("tokens_seen") : std::nullopt;
    const llvm::json::Object *rng = st ? st->getObject("rng") : nullptr;
    std::optional<int64_t> seed = rng ? rng->getInteger("seed") : std::nullopt;
    if (!step || *step < 0 || !samples || *samples < 0 || !tokens ||
        *tokens < 0 || !seed)
      return bad("\"training_state\" needs non-negative \"step\", "
                 "\"samples_consumed\", \"tokens_seen\" and \"rng\".\"seed\"");
    state = {*step, *samples, *tokens, uint64_t(*seed), {}};
    if (const llvm::json::Value *positions = st->get("data_positions")) {
      llvm::Expected<std::vector<DataPosition>> read =
          readDataPositions(*positions);
      if (!read)
        return bad(llvm::toString(read.takeError()));
      state.dataPositions = std::move(*read);
    }
    if (const llvm::json::Value *files = st->get("data_files")) {
      llvm::Expected<std::vector<DataFile>> read = readDataFiles(*files);
      if (!read)
        return bad(llvm::toString(read.takeError()));
      state.dataFiles = std::move(*read);
    }
    int64_t folderStep =
        stepOfFolderName(llvm::sys::path::filename(StringRef(folder)));
    if (folderStep >= 0 && folderStep != *step)
      return bad("it is in folder step-" + std::to_string(folderStep) +
                 " but holds step " + std::to_string(*step));

    const llvm::json::Object *tensors = o->getObject("tensors");
    if (!tensors)
      return bad("no \"tensors\" object");
    llvm::StringMap<const Manifest::Param *> expected;
    for (const char *kind : kStateKinds)
      for (const Manifest::Param &p : m.allParams)
        expected[std::string(kind) + ":" + p.name] = &p;
    for (const auto &entry : *tensors)
      if (!expected.count(entry.first))
        return bad("unexpected tensor '" + entry.first.str() +
                   "' (not a parameter or optimizer state of this model)");

    std::map<std::string, size_t> fileIndex;
    // In a fixed order (kinds, then parameters), so each file's list of
    // tensors is deterministic.
    for (const char *kind : kStateKinds)
      for (const Manifest::Param &p : m.allParams) {
        std::string key = std::string(kind) + ":" + p.name;
        const llvm::json::Object *t = tensors->getObject(key);
        if (!t)
          return bad("missing tensor '" + key + "'");
        std::optional<std::vector<int64_t>> shape =
            intArray(t->get("shape"), p.shape.size());
        if (!shape || *shape != p.shape)
          return bad("tensor '" + key + "' does not have the model's shape " +
                     shapeString(p.shape));
        if (t->getString("dtype") != StringRef(safetensorsName(Dtype::f32)))
          return bad("tensor '" + key + "' is not F32");
        const llvm::json::Array *list = t->getArray("blocks");
        if (!list || list->empty())
          return bad("tensor '" + key + "' has no blocks");
        std::vector<Block> &out = blocks[key];
        int64_t covered = 0;
        for (const llvm::json::Value &b : *list) {
          const llvm::json::Object *bo = b.getAsObject();
          std::optional<StringRef> file =
              bo ? bo->getString("file") : std::nullopt;
          std::optional<std::vector<int64_t>> start =
              bo ? intArray(bo->get("start"), p.shape.size()) : std::nullopt;
          std::optional<std::vector<int64_t>> size =
              bo ? intArray(bo->get("size"), p.shape.size()) : std::nullopt;
          // Files are plain names inside the checkpoint folder.
          if (!file || file->empty() || file->contains('/') ||
              file->starts_with(".") || !start || !size)
            return bad("tensor '" + key +
                       "' has a block without a plain \"file\" name, \"start\" "
                       "and \"size\"");
          Box box{*start, *size};
          std::optional<uint64_t> checksum;
          if (const llvm::json::Value *c = bo->get(kChecksumKey)) {
            std::optional<StringRef> hex = c->getAsString();
            uint64_t value;
            if (!hex || hex->size() != 16 || hex->getAsInteger(16, value))
              return bad("tensor '" + key + "' has a block whose \"" +
                         kChecksumKey + "\" is not 16 hex digits");
            checksum = value;
          }
          unverified |= !checksum;
          for (size_t d = 0; d < p.shape.size(); ++d)
            if (box.size[d] == 0 || box.size[d] > p.shape[d] ||
                box.start[d] > p.shape[d] - box.size[d])
              return bad("tensor '" + key + "' has a block at " +
                         shapeString(box.start) + " of size " +
                         shapeString(box.size) + " outside its shape " +
                         shapeString(p.shape));
          auto [it, added] = fileIndex.try_emplace(file->str(), files.size());
          if (added)
            files.push_back({file->str(), {}, nullptr});
          File &f = files[it->second];
          out.push_back({it->second, f.tensors.size(), box, checksum});
          f.tensors.push_back({key, box.size, nullptr});
          covered += box.numel();
        }
        std::vector<Box> boxes;
        for (const Block &b : out)
          boxes.push_back(b.box);
        if (auto pair = findOverlap(boxes))
          return bad("tensor '" + key + "' has overlapping blocks at " +
                     shapeString(boxes[pair->first].start) + " and " +
                     shapeString(boxes[pair->second].start));
        // Disjoint blocks in bounds with the tensor's volume cover it.
        if (covered != numel(p.shape))
          return bad("the blocks of tensor '" + key + "' cover " +
                     std::to_string(covered) + " of its " +
                     std::to_string(numel(p.shape)) + " elements");
      }
    return llvm::Error::success();
  }

  /// The reader of file `i`, opened (and its header checked against the
  /// index) on first use: a rank opens only the files holding its blocks.
  const SafetensorsReader &reader(const std::string &folder, size_t i) {
    File &f = files[i];
    if (!f.reader)
      f.reader = std::make_unique<SafetensorsReader>(joinPath(folder, f.name),
                                                     f.tensors);
    return *f.reader;
  }
};

/// Calls `visit(set, param, rank, box)` for each block of a full checkpoint
/// of `sets`, in the index's order: by set, parameter, then the rank that
/// writes it (the first of the ranks holding it).
template <typename Visit>
void forEachSavedBlock(const Manifest &m, llvm::ArrayRef<StateSet> sets,
                       Visit visit) {
  std::vector<std::vector<int64_t>> coords;
  for (int64_t r = 0; r < m.worldSize(); ++r)
    coords.push_back(meshCoordinates(m.mesh, r));
  for (const StateSet &set : sets)
    for (const Manifest::Param &p : m.allParams)
      for (int64_t r = 0; r < m.worldSize(); ++r) {
        Box box = shardBox(p, m.mesh, coords[r]);
        if (!box.empty() && writesShard(p, coords[r]))
          visit(set, p, r, box);
      }
}

/// XXH3 of `count` floats as they are stored (F32 little-endian, the
/// host's order).
uint64_t blockChecksum(const float *data, int64_t count) {
  return XXH3_64bits(data, size_t(count) * sizeof(float));
}

/// Whether `rank` hashes `block` (the `index`-th of tensor `key`, of
/// parameter `p`) whole when it loads `region` of it. Each block is
/// verified by the ranks that read it whole anyway; where none does (a
/// load into another layout), by one of the ranks reading parts of it,
/// picked by the block, so the extra reads spread over the ranks and no
/// block is read whole more than once.
bool verifiesBlock(const Manifest &m, const Manifest::Param &p,
                   const std::string &key, size_t index, const Box &block,
                   const Box &region, int64_t rank) {
  if (region.size == block.size)
    return true;
  std::vector<int64_t> readers;
  for (int64_t r = 0; r < m.worldSize(); ++r) {
    // Under pipeline parallelism only the parameter's stage loads it.
    std::vector<int64_t> coordinates = meshCoordinates(m.mesh, r);
    if (p.pipelineRank >= 0 && coordinates[kPP] != p.pipelineRank)
      continue;
    Box part = intersect(shardBox(p, m.mesh, coordinates), block);
    if (part.size == block.size)
      return false;
    if (!part.empty())
      readers.push_back(r);
  }
  uint64_t pick = XXH3_64bits(key.data(), key.size()) + index;
  return readers[pick % readers.size()] == rank;
}

/// Reads `region` of `block` from `file` into `out` (laid out as `dst`).
/// With `verify` (and a checksum) the block is read whole, in pieces
/// hashed as they come (in place where a piece lies inside one run of the
/// region, else through a scratch piece): a mismatch stops the run, naming
/// the tensor `key`, the block and `path`. Otherwise only the region is
/// read.
void readBlock(const SafetensorsReader &file,
               const CheckpointIndex::Block &block, const Box &region,
               const Storage &dst, float *out, bool verify,
               const std::string &key, const std::string &path) {
  std::vector<std::array<int64_t, 3>> runs; // block offset, out offset, count
  forEachRun(Storage{block.box.start, block.box.size}, dst, region,
             [&](int64_t s, int64_t d, int64_t n) {
               runs.push_back({s, d, n});
             });
  if (!block.checksum || !verify) {
    for (auto [s, d, n] : runs)
      file.read(block.entry, s, n, out + d);
    return;
  }
  constexpr int64_t kPiece = int64_t(1) << 22; // 16 MiB
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(
      XXH3_createState(), &XXH3_freeState);
  if (!state || XXH3_64bits_reset(state.get()) != XXH_OK)
    fatal("cannot allocate an XXH3 state");
  std::vector<float> scratch;
  size_t next = 0; // the first run not ending before the piece
  for (int64_t first = 0, total = block.box.numel(); first < total;
       first += kPiece) {
    int64_t end = std::min(total, first + kPiece);
    while (next < runs.size() && runs[next][0] + runs[next][2] <= first)
      ++next;
    bool inPlace = next < runs.size() && runs[next][0] <= first &&
                   end <= runs[next][0] + runs[next][2];
    if (!inPlace)
      scratch.resize(size_t(end - first));
    float *piece = inPlace ? out + runs[next][1] + (first - runs[next][0])
                           : scratch.data();
    file.read(block.entry, first, end - first, piece);
    XXH3_64bits_update(state.get(), piece, size_t(end - first) * sizeof(float));
    for (size_t i = next; !inPlace && i < runs.size() && runs[i][0] < end;
         ++i) {
      auto [s, d, n] = runs[i];
      int64_t lo = std::max(s, first), hi = std::min(s + n, end);
      std::copy(piece + (lo - first), piece + (hi - first), out + d + (lo - s));
    }
  }
  uint64_t read = XXH3_64bits_digest(state.get());
  if (read != *block.checksum)
    fatal("checkpoint file '" + path + "' is corrupt: the block of tensor '" +
          key + "' at " + shapeString(block.box.start) + " of size " +
          shapeString(block.box.size) + " has " + kChecksumKey + " " +
          llvm::utohexstr(read, /*LowerCase=*/true, 16) +
          ", the index records " +
          llvm::utohexstr(*block.checksum, /*LowerCase=*/true, 16));
}

} // namespace

llvm::Error titanrt::checkCheckpointIndex(StringRef text,
                                          const std::string &path,
                                          const Manifest &m) {
  CheckpointIndex index;
  return index.parse(text, path, llvm::sys::path::parent_path(path).str(), m);
}

Checkpointer::Checkpointer(const titan::TrainConfig &config,
                           const Manifest &manifest, Communicator *comm)
    : config_(config), manifest_(manifest), comm_(comm),
      coords_(meshCoordinates(manifest.mesh, comm ? comm->rank() : 0)),
      leader_(!comm || comm->rank() == 0) {
  // As os.path.join in TorchTitan: an absolute folder stands alone.
  root_ = llvm::sys::path::is_absolute(config.checkpoint.folder)
              ? config.checkpoint.folder
              : joinPath(config.job.dumpFolder, config.checkpoint.folder);
}

std::string Checkpointer::stepFolder(int64_t step) const {
  return joinPath(root_, "step-" + std::to_string(step));
}

std::string Checkpointer::shardFileName(int64_t rank) const {
  return llvm::formatv("shard-{0:d5}-of-{1:d5}.safetensors", rank,
                       manifest_.worldSize())
      .str();
}

void Checkpointer::barrier() {
  if (comm_)
    comm_->barrier();
}

void Checkpointer::removeUnfinishedSaves() {
  if (leader_) {
    std::vector<std::string> unfinished;
    std::error_code ec;
    for (llvm::sys::fs::recursive_directory_iterator it(root_, ec), end;
         it != end && !ec; it.increment(ec))
      if (StringRef(it->path()).ends_with(".tmp")) {
        unfinished.push_back(it->path());
        it.no_push();
      }
    for (const std::string &path : unfinished) {
      llvm::sys::fs::remove_directories(path);
      llvm::sys::fs::remove(path);
      // A step folder left empty by that (an older runtime wrote
      // step-N/model.safetensors.tmp) goes too; removing fails otherwise.
      llvm::sys::fs::remove(llvm::sys::path::parent_path(path));
    }
  }
  barrier();
}

int64_t Checkpointer::resumeStep() {
  double step = -1;
  if (leader_) {
    int64_t requested = config_.checkpoint.loadStep;
    if (requested >= 0) {
      std::string folder = stepFolder(requested);
      if (!llvm::sys::fs::is_directory(folder))
        fatal("checkpoint.load_step " + std::to_string(requested) +
              ": there is no checkpoint '" + folder + "'");
      if (!llvm::sys::fs::exists(joinPath(folder, kIndexFile))) {
        if (llvm::sys::fs::exists(joinPath(folder, kExportFile)))
          fatal("checkpoint.load_step " + std::to_string(requested) + ": '" +
                folder +
                "' is a model-only export without optimizer state or data "
                "position; start from its weights with "
                "checkpoint.initial_load_path " +
                joinPath(folder, kExportFile));
        if (looksLikeHFCheckpoint(folder))
          fatal("checkpoint.load_step " + std::to_string(requested) + ": '" +
                folder +
                "' is a Hugging Face export without optimizer state or data "
                "position; start from its weights with "
                "checkpoint.initial_load_path " +
                folder + " and checkpoint.initial_load_in_hf = true");
        fatal("checkpoint.load_step " + std::to_string(requested) + ": '" +
              folder + "' is not a complete checkpoint (no " + kIndexFile +
              ")");
      }
      step = double(requested);
    } else if (config_.checkpoint.enable) {
      std::error_code ec;
      for (llvm::sys::fs::directory_iterator it(root_, ec), end;
           it != end && !ec; it.increment(ec)) {
        int64_t s = stepOfFolderName(llvm::sys::path::filename(it->path()));
        if (s >= 0 && double(s) > step &&
            llvm::sys::fs::exists(joinPath(it->path(), kIndexFile)))
          step = double(s);
      }
    }
  }
  if (comm_)
    comm_->hostBroadcast(&step, 1, 0, (1u << kNumAxes) - 1);
  return int64_t(step);
}

TrainingState Checkpointer::load(const std::string &folder,
                                 llvm::ArrayRef<StateSet> sets) {
  if (!llvm::sys::fs::is_directory(folder))
    fatal("checkpoint '" + folder + "' is not a folder");
  CheckpointIndex index(folder, manifest_);
  if (index.unverified && leader_)
    std::fprintf(stderr,
                 "warning: checkpoint '%s' has blocks without checksums "
                 "(saved by a runtime before they were recorded): loading "
                 "them unverified\n",
                 folder.c_str());
  for (const StateSet &set : sets)
    for (auto [p, local] : llvm::zip(manifest_.params, *set.shards)) {
      Box mine = shardBox(p, manifest_.mesh, coords_);
      // FSDP padding stays zero.
      std::fill(local.data, local.data + local.numel(), 0.0f);
      Storage dst{mine.start, p.localShape};
      std::string key = set.kind + ":" + p.name;
      for (auto [i, b] : llvm::enumerate(index.blocks[key])) {
        Box region = intersect(mine, b.box);
        if (!region.empty())
          readBlock(index.reader(folder, b.file), b, region, dst, local.data,
                    b.checksum &&
                        verifiesBlock(manifest_, p, key, i, b.box, region,
                                      comm_ ? comm_->rank() : 0),
                    key, joinPath(folder, index.files[b.file].name));
      }
    }
  // A block this rank read part of may be verified by another: none goes on
  // before every block is.
  barrier();
  return index.state;
}

bool Checkpointer::loads(StringRef part) const {
  return !llvm::is_contained(config_.checkpoint.excludeFromLoading, part);
}

TrainingState Checkpointer::resume(const std::string &folder,
                                   llvm::ArrayRef<StateSet> sets) {
  std::vector<StateSet> loaded;
  for (const StateSet &set : sets)
    if (loads(set.kind == "param" ? "model" : "optimizer"))
      loaded.push_back(set);
  TrainingState state = load(folder, loaded);
  if (!loads("dataloader")) {
    state.samplesConsumed = 0;
    state.dataPositions.clear();
    state.dataFiles.clear();
  }
  if (!loads("train_state"))
    state.step = state.tokensSeen = 0;
  return state;
}

SaveInProgress Checkpointer::beginSave(const TrainingState &state,
                                       llvm::ArrayRef<StateSet> sets) {
  ErrorContext context(unsavedNote(state.step));
  SaveInProgress save;
  save.state = state;
  save.folder = stepFolder(state.step);
  save.tmp = save.folder + ".tmp";
  for (const StateSet &set : sets)
    save.sets.push_back({set.kind, nullptr});
  if (leader_) {
    llvm::sys::fs::remove_directories(save.tmp);
    if (std::error_code ec = llvm::sys::fs::create_directories(save.tmp))
      fatal("cannot create checkpoint folder '" + save.tmp +
            "': " + ec.message());
  }
  barrier();
  return save;
}

void Checkpointer::writeOwnBlocks(SaveInProgress &save,
                                  llvm::ArrayRef<StateSet> sets) const {
  ErrorContext context(unsavedNote(save.state.step));
  // This rank's blocks, each written by the first of the ranks holding it.
  std::vector<TensorRef> mine;
  std::vector<std::vector<float>> packed; // blocks narrower than the shard
  for (const StateSet &set : sets)
    for (auto [p, local] : llvm::zip(manifest_.params, *set.shards)) {
      Box box = shardBox(p, manifest_.mesh, coords_);
      if (box.empty() || !writesShard(p, coords_))
        continue;
      std::string key = set.kind + ":" + p.name;
      if (box.size == p.localShape) {
        mine.push_back({key, box.size, local.data});
        continue;
      }
      std::vector<float> &block = packed.emplace_back(size_t(box.numel()));
      forEachRun(Storage{box.start, p.localShape}, Storage{box.start, box.size},
                 box, [&](int64_t s, int64_t d, int64_t n) {
                   std::copy(local.data + s, local.data + s + n,
                             block.data() + d);
                 });
      mine.push_back({key, box.size, block.data()});
    }
  int64_t rank = comm_ ? comm_->rank() : 0;
  if (!mine.empty())
    writeSafetensors(joinPath(save.tmp, shardFileName(rank)), mine, Dtype::f32);
  for (const TensorRef &t : mine)
    save.ownChecksums[t.name] = blockChecksum(t.data, t.numel());
  maybeDieInSave(save.state.step, rank);
}

std::string Checkpointer::save(const TrainingState &state,
                               llvm::ArrayRef<StateSet> sets) {
  SaveInProgress save = beginSave(state, sets);
  writeOwnBlocks(save, sets);
  return commitSave(save);
}

std::string Checkpointer::commitSave(SaveInProgress &save) {
  ErrorContext context(unsavedNote(save.state.step));
  const TrainingState &state = save.state;
  llvm::ArrayRef<StateSet> sets = save.sets;
  int64_t rank = comm_ ? comm_->rank() : 0;
  barrier();

  // The blocks' checksums, in the index's order: each rank hashes its own,
  // and an all-reduce brings them to the first rank as 32-bit halves
  // (exact in doubles; every other rank adds zeros).
  std::vector<double> checksums;
  forEachSavedBlock(
      manifest_, sets,
      [&](const StateSet &set, const Manifest::Param &p, int64_t r,
          const Box &) {
        uint64_t sum =
            r == rank ? save.ownChecksums.lookup(set.kind + ":" + p.name) : 0;
        checksums.push_back(double(sum >> 32));
        checksums.push_back(double(sum & 0xffffffffu));
      });
  if (comm_)
    comm_->hostAllReduce(checksums.data(), int64_t(checksums.size()),
                         Reduction::Sum, (1u << kNumAxes) - 1);

  if (leader_) {
    // Every rank's blocks follow from the layout; only their checksums
    // needed communication.
    llvm::json::Object tensors;
    size_t next = 0;
    forEachSavedBlock(
        manifest_, sets,
        [&](const StateSet &set, const Manifest::Param &p, int64_t r,
            const Box &box) {
          llvm::json::Value &tensor = tensors[set.kind + ":" + p.name];
          if (!tensor.getAsObject())
            tensor = llvm::json::Object{
                {"shape", llvm::json::Array(llvm::ArrayRef(p.shape))},
                {"dtype", safetensorsName(Dtype::f32)},
                {"blocks", llvm::json::Array()}};
          uint64_t sum =
              uint64_t(checksums[next]) << 32 | uint64_t(checksums[next + 1]);
          next += 2;
          tensor.getAsObject()->getArray("blocks")->push_back(
              llvm::json::Object{
                  {"file", shardFileName(r)},
                  {"start", llvm::json::Array(llvm::ArrayRef(box.start))},
                  {"size", llvm::json::Array(llvm::ArrayRef(box.size))},
                  {kChecksumKey,
                   llvm::utohexstr(sum, /*LowerCase=*/true, 16)}});
        });
    llvm::json::Object mesh;
    for (unsigned a = 0; a < kNumAxes; ++a)
      mesh[meshAxisName(MeshAxis(a))] = manifest_.mesh[a];
    llvm::json::Object index{
        {"format", kFormat},
        {"version", kVersion},
        {"model", manifest_.model},
        {"saved_by_mesh", std::move(mesh)},
        {"training_state",
         llvm::json::Object{
             {"step", state.step},
             {"samples_consumed", state.samplesConsumed},
             {"tokens_seen", state.tokensSeen},
             {"lr_scheduler", llvm::json::Object{{"last_step", state.step}}},
             {"rng", llvm::json::Object{{"generator", "philox4x32-10"},
                                        {"seed", int64_t(state.seed)},
                                        {"draws_after_init", 0}}}}},
        {"tensors", std::move(tensors)}};
    // A token file's position is samples_consumed alone.
    if (!state.dataPositions.empty())
      (*index.getObject("training_state"))["data_positions"] =
          writeDataPositions(state.dataPositions);
    if (!state.dataFiles.empty())
      (*index.getObject("training_state"))["data_files"] =
          writeDataFiles(state.dataFiles);
    std::string text;
    llvm::raw_string_ostream os(text);
    os << llvm::json::Value(std::move(index)) << "\n";
    writeFileDurably(joinPath(save.tmp, kIndexFile), text);
  }
  commit(save.tmp, save.folder);
  return save.folder;
}

std::string Checkpointer::exportModel(int64_t step, const StateSet &params,
                                      const std::string &exportDtype, bool hf) {
  ErrorContext context(unsavedNote(step, "model-only export"));
  std::string folder = stepFolder(step), tmp = folder + ".tmp";
  // TrainConfig admits float32, bfloat16 and float16 only.
  Dtype dtype = titan::parseTorchDtype(exportDtype).value_or(Dtype::f32);
  int64_t elementSize = dtypeBytes(dtype);
  ModelFiles files =
      hf ? hfExportFiles(tmp, manifest_, elementSize, hfMaxShardBytes())
         : titanModelFiles(joinPath(tmp, kExportFile), manifest_);
  std::vector<std::vector<int64_t>> dataStart(files.files.size());
  std::vector<std::string> headers;
  std::vector<int64_t> fileBytes(files.files.size());
  for (auto [f, file] : llvm::enumerate(files.files))
    headers.push_back(
        safetensorsHeader(file.tensors, dtype, dataStart[f], fileBytes[f]));

  if (leader_) {
    llvm::sys::fs::remove_directories(tmp);
    if (std::error_code ec = llvm::sys::fs::create_directories(tmp))
      fatal("cannot create checkpoint folder '" + tmp + "': " + ec.message());
    for (auto [f, file] : llvm::enumerate(files.files)) {
      std::string path = joinPath(tmp, file.name);
      int fd = openForWriting(path, /*create=*/true);
      writeFully(fd, headers[f].data(), headers[f].size(), 0, path);
      if (::ftruncate(fd, fileBytes[f]) != 0)
        fatal("cannot write '" + path + "': " + std::strerror(errno));
      syncAndClose(fd, path);
    }
    if (hf) {
      writeFileDurably(joinPath(tmp, "model.safetensors.index.json"),
                       hfIndexJson(files, elementSize));
      writeFileDurably(joinPath(tmp, "config.json"),
                       hfConfigJson(manifest_, exportDtype));
    }
  }
  barrier();

  // Each rank writes its blocks at their offsets (row by row where the file
  // permutes rows), converted in pieces of at most 16 Mi elements.
  constexpr int64_t kPiece = int64_t(1) << 24;
  std::vector<int> fds(files.files.size(), -1);
  std::vector<char> bytes;
  for (auto [p, local] : llvm::zip(manifest_.params, *params.shards)) {
    Box box = shardBox(p, manifest_.mesh, coords_);
    if (box.empty() || !writesShard(p, coords_))
      continue;
    const ModelFiles::Place &place = files.places.find(p.name)->second;
    std::string path = joinPath(tmp, files.files[place.file].name);
    int &fd = fds[place.file];
    if (fd < 0)
      fd = openForWriting(path, /*create=*/false);
    int64_t start = dataStart[place.file][place.entry];
    auto write = [&](const float *in, int64_t at, int64_t n) {
      for (int64_t done = 0; done < n; done += kPiece) {
        int64_t count = std::min(kPiece, n - done);
        bytes.resize(size_t(count * elementSize));
        encodeElements(in + done, count, dtype, bytes.data());
        writeFully(fd, bytes.data(), bytes.size(),
                   start + (at + done) * elementSize, path);
      }
    };
    forEachRun(Storage{box.start, p.localShape},
               Storage{std::vector<int64_t>(p.shape.size(), 0), p.shape}, box,
               [&](int64_t s, int64_t d, int64_t n) {
                 place.rows.forEachPiece(
                     d, n, p.shape.back(),
                     [&](int64_t at, int64_t offset, int64_t count) {
                       write(local.data + s + offset, at, count);
                     });
               });
  }
  for (auto [f, fd] : llvm::enumerate(fds))
    if (fd >= 0)
      syncAndClose(fd, joinPath(tmp, files.files[f].name));
  commit(tmp, folder);
  return hf ? folder : joinPath(folder, kExportFile);
}

void Checkpointer::commit(const std::string &tmp, const std::string &folder) {
  barrier(); // every rank's files are written and fsynced
  if (leader_) {
    syncFolder(tmp);
    // A checkpoint of the same step from an earlier run is replaced; until
    // the rename it stays whole under a *.tmp name the next start removes.
    std::string replaced = folder + ".replaced.tmp";
    bool exists = llvm::sys::fs::exists(folder);
    if (exists) {
      llvm::sys::fs::remove_directories(replaced);
      if (std::error_code ec = llvm::sys::fs::rename(folder, replaced))
        fatal("cannot replace checkpoint '" + folder + "': " + ec.message());
    }
    if (std::error_code ec = llvm::sys::fs::rename(tmp, folder))
      fatal("cannot move checkpoint '" + tmp + "' into place: " + ec.message());
    syncFolder(root_);
    if (exists)
      llvm::sys::fs::remove_directories(replaced);
  }
  barrier();
}

void Checkpointer::prune(const std::vector<int64_t> &saved) {
  if (!leader_ || config_.checkpoint.keepLatestK <= 0)
    return;
  std::vector<std::tuple<bool, int64_t, std::string>> found;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(root_, ec), end; it != end && !ec;
       it.increment(ec)) {
    int64_t step = stepOfFolderName(llvm::sys::path::filename(it->path()));
    if (step >= 0)
      found.emplace_back(llvm::is_contained(saved, step), step, it->path());
  }
  // Earlier runs' (false) first, each by step: the one just written sorts
  // last, so it is never among those removed.
  llvm::sort(found);
  for (size_t i = 0; i + config_.checkpoint.keepLatestK < found.size(); ++i) {
    // Renamed first: a run stopped while removing it (a signal) leaves a
    // *.tmp folder the next start removes, never a step folder with an
    // index and some of its files gone.
    std::string doomed = std::get<2>(found[i]) + ".pruned.tmp";
    if (!llvm::sys::fs::rename(std::get<2>(found[i]), doomed))
      llvm::sys::fs::remove_directories(doomed);
  }
}
