//===- HFCheckpoint.cpp - model weights in safetensors files --------------===//

#include "HFCheckpoint.h"

#include "Error.h"
#include "FileIO.h"

#include "titan/Support/Format.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <map>

using namespace titanrt;
using llvm::StringRef;

namespace {

constexpr const char *kIndexFile = "model.safetensors.index.json";
constexpr const char *kConfigFile = "config.json";
constexpr const char *kSingleFile = "model.safetensors";

/// The folder of `file` ("." for a bare name).
std::string folderOf(StringRef file) {
  StringRef folder = llvm::sys::path::parent_path(file);
  return folder.empty() ? "." : folder.str();
}

/// TorchTitan v0.2.0's Llama3StateDictAdapter.from_hf_map, titan's name to
/// HF's, per layer and for the rest.
constexpr std::pair<const char *, const char *> kLayerNames[] = {
    {"attention.wq.weight", "self_attn.q_proj.weight"},
    {"attention.wk.weight", "self_attn.k_proj.weight"},
    {"attention.wv.weight", "self_attn.v_proj.weight"},
    {"attention.wo.weight", "self_attn.o_proj.weight"},
    {"feed_forward.w1.weight", "mlp.gate_proj.weight"},
    {"feed_forward.w3.weight", "mlp.up_proj.weight"},
    {"feed_forward.w2.weight", "mlp.down_proj.weight"},
    {"attention_norm.weight", "input_layernorm.weight"},
    {"ffn_norm.weight", "post_attention_layernorm.weight"}};
constexpr std::pair<const char *, const char *> kModelNames[] = {
    {"tok_embeddings.weight", "model.embed_tokens.weight"},
    {"norm.weight", "model.norm.weight"},
    {"output.weight", "lm_head.weight"}};

} // namespace

std::string titanrt::hfName(StringRef name) {
  for (auto [titan, hf] : kModelNames)
    if (name == titan)
      return hf;
  StringRef rest = name, layer;
  if (rest.consume_front("layers.")) {
    std::tie(layer, rest) = rest.split('.');
    for (auto [titan, hf] : kLayerNames)
      if (rest == titan)
        return ("model.layers." + layer + "." + hf).str();
  }
  fatal("corrupt executable: parameter '" + name.str() +
        "' has no Hugging Face name");
}

namespace {

/// The row order of parameter `p` in HF's layout: TorchTitan's _permute of
/// wq (n_heads heads) and wk (n_kv_heads heads).
RowOrder hfRowOrder(const Manifest::Param &p, const titan::LlamaArgs &args) {
  StringRef name = p.name;
  if (name.ends_with(".attention.wq.weight") ||
      name.ends_with(".attention.wk.weight"))
    return {p.shape[0] / args.headDim(), args.headDim()};
  return {};
}

/// The HF files' tensors for `m`: each file's names (HF's) and shapes, and
/// where each parameter lies; `fileOf(i)` chooses the file of parameter i.
template <typename FileOf>
ModelFiles hfFiles(const std::string &folder, const Manifest &m,
                   std::vector<std::string> fileNames, FileOf fileOf) {
  titan::LlamaArgs args = compiledModelArgs(m);
  ModelFiles out;
  out.folder = folder;
  for (std::string &name : fileNames)
    out.files.push_back({std::move(name), {}});
  for (auto [i, p] : llvm::enumerate(m.allParams)) {
    size_t file = fileOf(i);
    std::vector<TensorRef> &tensors = out.files[file].tensors;
    out.places[p.name] = {file, tensors.size(), hfRowOrder(p, args)};
    tensors.push_back({hfName(p.name), p.shape, nullptr});
  }
  return out;
}

/// Checks the checkpoint's config.json, if any, against the compiled model.
void checkHFConfig(const std::string &folder, const Manifest &m) {
  std::string path = joinPath(folder, kConfigFile);
  if (!llvm::sys::fs::exists(path))
    return;
  llvm::Expected<titan::LlamaArgs> theirs = titan::readHFLlamaConfig(path);
  if (!theirs)
    fatal(llvm::toString(theirs.takeError()));
  if (std::optional<std::string> d =
          titan::firstArchitectureDifference(*theirs, compiledModelArgs(m)))
    fatal("Hugging Face checkpoint '" + folder +
          "' is not the compiled model: in " + path + " " + *d +
          " (recompile with --model.hf_assets_path " + folder + ")");
}

/// The files of an HF index: which file holds each of the model's tensors.
ModelFiles hfIndexedFiles(const std::string &folder, const Manifest &m) {
  std::string path = joinPath(folder, kIndexFile);
  requireRegularFile(path, "Hugging Face index");
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    fatal("cannot read Hugging Face index '" + path +
          "': " + buffer.getError().message());
  llvm::Expected<HFWeightMap> map =
      parseHFWeightMap((*buffer)->getBuffer(), path, m);
  if (!map)
    fatal(llvm::toString(map.takeError()));
  return hfFiles(folder, m, std::move(map->fileNames),
                 [&](size_t i) { return map->fileOfParam[i]; });
}

/// Prints config.json as transformers writes it, keys sorted: its float
/// fields keep a decimal point ("factor": 8.0, not 8, which LlamaConfig's
/// rope_scaling check would warn about), in their shortest exact form.
void printConfig(llvm::json::OStream &j, const llvm::json::Object &o) {
  static const StringRef kFloats[] = {"rms_norm_eps", "rope_theta", "factor",
                                      "low_freq_factor", "high_freq_factor"};
  std::vector<StringRef> keys;
  for (const auto &entry : o)
    keys.push_back(entry.first);
  llvm::sort(keys);
  j.object([&] {
    for (StringRef key : keys) {
      const llvm::json::Value &v = *o.get(key);
      j.attributeBegin(key);
      if (const llvm::json::Object *inner = v.getAsObject()) {
        printConfig(j, *inner);
      } else if (llvm::is_contained(kFloats, key) && v.getAsNumber()) {
        std::string text = titan::formatNumber(*v.getAsNumber());
        if (text.find_first_of(".eEn") == std::string::npos)
          text += ".0";
        j.rawValue(text);
      } else {
        j.value(v);
      }
      j.attributeEnd();
    }
  });
}

} // namespace

llvm::Expected<HFWeightMap> titanrt::parseHFWeightMap(StringRef text,
                                                      const std::string &path,
                                                      const Manifest &m) {
  auto fail = [&](const std::string &what) {
    return llvm::createStringError("Hugging Face index '" + path + "'" + what);
  };
  llvm::Expected<llvm::json::Value> json = llvm::json::parse(text);
  if (!json)
    return fail(" is not valid JSON: " + llvm::toString(json.takeError()));
  const llvm::json::Object *index = json->getAsObject();
  if (!index)
    return fail(" is not a JSON object");
  const llvm::json::Object *weightMap = index->getObject("weight_map");
  if (!weightMap)
    return fail(" has no \"weight_map\" object");
  llvm::StringMap<bool> expected;
  for (const Manifest::Param &p : m.allParams)
    expected[hfName(p.name)] = true;
  std::map<std::string, size_t> fileIndex;
  HFWeightMap out;
  for (const auto &[name, file] : *weightMap) {
    std::optional<StringRef> f = file.getAsString();
    if (!expected.count(name))
      return fail(" has an unexpected tensor '" + name.str() + "'" +
                  (f ? " (in " + f->str() + ")" : "") +
                  ": not a parameter of the compiled model");
    // Files are plain names inside the folder.
    if (!f || f->empty() || f->contains('/') || f->starts_with("."))
      return fail(": tensor '" + name.str() +
                  "' is not mapped to a plain file name");
    if (fileIndex.try_emplace(f->str(), out.fileNames.size()).second)
      out.fileNames.push_back(f->str());
  }
  for (const Manifest::Param &p : m.allParams) {
    std::string name = hfName(p.name);
    const llvm::json::Value *file = weightMap->get(name);
    std::optional<StringRef> f = file ? file->getAsString() : std::nullopt;
    if (!f)
      return fail(" is missing tensor '" + name + "' (the model's " + p.name +
                  ")");
    out.fileOfParam.push_back(fileIndex.at(f->str()));
  }
  return out;
}

ModelFiles titanrt::titanModelFiles(const std::string &file,
                                    const Manifest &m) {
  ModelFiles out;
  out.folder = folderOf(file);
  out.files.push_back({llvm::sys::path::filename(file).str(), {}});
  for (const Manifest::Param &p : m.allParams) {
    out.places[p.name] = {0, out.files[0].tensors.size(), {}};
    out.files[0].tensors.push_back({p.name, p.shape, nullptr});
  }
  return out;
}

titan::LlamaArgs titanrt::compiledModelArgs(const Manifest &m) {
  if (m.hfConfig.empty())
    fatal("corrupt executable: its manifest has no model hyper-parameters "
          "(hf_config); recompile it with this titan-compile");
  llvm::Expected<titan::LlamaArgs> args =
      titan::parseHFLlamaConfig(m.hfConfig, "the executable's manifest");
  if (!args)
    fatal("corrupt executable: " + llvm::toString(args.takeError()));
  return *args;
}

int64_t titanrt::hfMaxShardBytes() {
  const char *env = std::getenv("TITAN_HF_MAX_SHARD_BYTES");
  int64_t bytes = 5'000'000'000; // save_pretrained's max_shard_size "5GB"
  if (env && (StringRef(env).getAsInteger(10, bytes) || bytes <= 0))
    fatal(std::string("TITAN_HF_MAX_SHARD_BYTES='") + env +
          "' is not a positive number of bytes");
  return bytes;
}

ModelFiles titanrt::hfExportFiles(const std::string &folder, const Manifest &m,
                                  int64_t elementSize, int64_t maxShardBytes) {
  // Greedy, in the model's order: a file is closed when the next tensor
  // would take it over the limit.
  std::vector<size_t> fileOfParam;
  size_t files = 0;
  int64_t bytes = 0;
  for (const Manifest::Param &p : m.allParams) {
    int64_t size = numel(p.shape) * elementSize;
    if (files == 0 || (bytes > 0 && bytes + size > maxShardBytes)) {
      ++files;
      bytes = 0;
    }
    bytes += size;
    fileOfParam.push_back(files - 1);
  }
  std::vector<std::string> names;
  for (size_t k = 1; k <= files; ++k)
    names.push_back(
        llvm::formatv("model-{0:d5}-of-{1:d5}.safetensors", k, files).str());
  return hfFiles(folder, m, std::move(names),
                 [&](size_t i) { return fileOfParam[i]; });
}

std::string titanrt::hfIndexJson(const ModelFiles &files, int64_t elementSize) {
  llvm::json::Object weightMap;
  int64_t total = 0;
  for (const ModelFiles::File &f : files.files)
    for (const TensorRef &t : f.tensors) {
      weightMap[t.name] = f.name;
      total += t.numel() * elementSize;
    }
  llvm::json::Object index{
      {"metadata", llvm::json::Object{{"total_size", total}}},
      {"weight_map", std::move(weightMap)}};
  std::string text;
  llvm::raw_string_ostream(text)
      << llvm::formatv("{0:2}", llvm::json::Value(std::move(index))) << "\n";
  return text;
}

std::string titanrt::hfConfigJson(const Manifest &m,
                                  const std::string &exportDtype) {
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::json::OStream j(os, /*IndentSize=*/2);
  printConfig(j, titan::hfLlamaConfig(compiledModelArgs(m), exportDtype));
  os << "\n";
  return text;
}

ModelFiles titanrt::hfImportFiles(const std::string &path, const Manifest &m) {
  if (!llvm::sys::fs::is_directory(path)) {
    // One file with every tensor.
    std::string folder = folderOf(path);
    checkHFConfig(folder, m);
    return hfFiles(folder, m, {llvm::sys::path::filename(path).str()},
                   [](size_t) { return size_t(0); });
  }
  checkHFConfig(path, m);
  if (llvm::sys::fs::exists(joinPath(path, kIndexFile)))
    return hfIndexedFiles(path, m);
  if (!llvm::sys::fs::exists(joinPath(path, kSingleFile)))
    fatal("Hugging Face checkpoint '" + path + "' has neither " + kIndexFile +
          " nor " + kSingleFile);
  return hfFiles(path, m, {kSingleFile}, [](size_t) { return size_t(0); });
}

bool titanrt::looksLikeHFCheckpoint(const std::string &folder) {
  return llvm::sys::fs::exists(joinPath(folder, kIndexFile)) ||
         llvm::sys::fs::exists(joinPath(folder, kConfigFile));
}

ModelReader::ModelReader(ModelFiles files)
    : files_(std::move(files)), readers_(files_.files.size()) {}

void ModelReader::read(const Manifest::Param &p, int64_t first, int64_t count,
                       float *out) {
  const ModelFiles::Place &place = files_.places.find(p.name)->second;
  std::unique_ptr<SafetensorsReader> &reader = readers_[place.file];
  if (!reader) {
    const ModelFiles::File &f = files_.files[place.file];
    reader = std::make_unique<SafetensorsReader>(
        joinPath(files_.folder, f.name), f.tensors);
  }
  place.rows.forEachPiece(first, count, p.shape.back(),
                          [&](int64_t at, int64_t offset, int64_t n) {
                            reader->read(place.entry, at, n, out + offset);
                          });
}
