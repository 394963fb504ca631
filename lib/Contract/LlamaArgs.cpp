//===- LlamaArgs.cpp - Llama model hyper-parameters -----------------------===//

#include "titan/Contract/LlamaArgs.h"
#include "titan/Contract/TrainConfig.h"
#include "titan/Support/Format.h"
#include "titan/Support/Suggest.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#define TOML_EXCEPTIONS 0
#include <toml++/toml.h>

#include "titan/Contract/TomlParse.h"

#include <cmath>

using namespace titan;
using llvm::StringRef;

static llvm::Error makeError(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg.str());
}

int64_t LlamaArgs::computeFfnHidden(int64_t dim, int64_t multipleOf,
                                    std::optional<double> multiplier) {
  int64_t hidden = 8 * dim / 3; // int(2 * (4 * dim) / 3)
  if (multiplier)
    hidden = static_cast<int64_t>(*multiplier * static_cast<double>(hidden));
  return multipleOf * ((hidden + multipleOf - 1) / multipleOf);
}

int64_t ParamSpec::numel() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::vector<ParamSpec> titan::llamaParameters(const LlamaArgs &a) {
  int64_t hd = a.headDim();
  std::vector<ParamSpec> params;
  params.push_back({"tok_embeddings.weight", {a.vocabSize, a.dim}});
  for (int64_t i = 0; i < a.nLayers; ++i) {
    std::string p = "layers." + std::to_string(i) + ".";
    params.push_back({p + "attention.wq.weight", {a.nHeads * hd, a.dim}});
    params.push_back({p + "attention.wk.weight", {a.nKvHeads * hd, a.dim}});
    params.push_back({p + "attention.wv.weight", {a.nKvHeads * hd, a.dim}});
    params.push_back({p + "attention.wo.weight", {a.dim, a.nHeads * hd}});
    params.push_back({p + "feed_forward.w1.weight", {a.ffnHidden, a.dim}});
    params.push_back({p + "feed_forward.w2.weight", {a.dim, a.ffnHidden}});
    params.push_back({p + "feed_forward.w3.weight", {a.ffnHidden, a.dim}});
    params.push_back({p + "attention_norm.weight", {a.dim}});
    params.push_back({p + "ffn_norm.weight", {a.dim}});
  }
  params.push_back({"norm.weight", {a.dim}});
  if (!a.tieWordEmbeddings)
    params.push_back({"output.weight", {a.vocabSize, a.dim}});
  return params;
}

int64_t titan::llamaParameterCount(const LlamaArgs &a) {
  int64_t total = 0;
  for (const ParamSpec &p : llamaParameters(a))
    total += p.numel();
  return total;
}

double titan::trainingFlopsPerToken(const LlamaArgs &a, int64_t seqLen) {
  int64_t total = llamaParameterCount(a);
  int64_t nonEmbedding =
      a.tieWordEmbeddings ? total : total - a.vocabSize * a.dim;
  return 6.0 * double(nonEmbedding) +
         12.0 * double(a.nLayers) * a.nHeads * a.headDim() * double(seqLen);
}

/// Structural checks shared by every source of model args.
static llvm::Error validate(const LlamaArgs &a) {
  std::vector<std::string> errs;
  auto positive = [&](StringRef key, double v) {
    if (!(v > 0))
      errs.push_back(
          llvm::formatv("{0} must be positive, got {1}", key, formatNumber(v)));
  };
  positive("dim", a.dim);
  positive("n_layers", a.nLayers);
  positive("n_heads", a.nHeads);
  positive("n_kv_heads", a.nKvHeads);
  positive("vocab_size", a.vocabSize);
  positive("multiple_of", a.multipleOf);
  positive("ffn hidden size", a.ffnHidden);
  positive("norm_eps", a.normEps);
  positive("rope_theta", a.ropeTheta);
  positive("max_seq_len", a.maxSeqLen);
  if (a.ffnDimMultiplier)
    positive("ffn_dim_multiplier", *a.ffnDimMultiplier);
  if (errs.empty()) {
    if (a.dim % a.nHeads != 0)
      errs.push_back(llvm::formatv(
          "dim ({0}) must be divisible by n_heads ({1})", a.dim, a.nHeads));
    else if (a.headDim() % 2 != 0)
      errs.push_back(llvm::formatv("head dim dim/n_heads ({0}) must be even "
                                   "for rotary embedding pairs",
                                   a.headDim()));
    if (a.nHeads % a.nKvHeads != 0)
      errs.push_back(
          llvm::formatv("n_heads ({0}) must be a multiple of n_kv_heads ({1})",
                        a.nHeads, a.nKvHeads));
  }
  if (const auto &s = a.ropeScaling) {
    positive("rope_scaling.scaling_factor", s->scalingFactor);
    positive("rope_scaling.low_freq_factor", s->lowFreqFactor);
    positive("rope_scaling.original_max_position_embeddings",
             s->originalMaxPositionEmbeddings);
    if (!(s->highFreqFactor > s->lowFreqFactor))
      errs.push_back(llvm::formatv(
          "rope_scaling.high_freq_factor ({0}) must be greater than "
          "low_freq_factor ({1})",
          formatNumber(s->highFreqFactor), formatNumber(s->lowFreqFactor)));
  }
  if (errs.empty())
    return llvm::Error::success();
  for (std::string &e : errs)
    e = a.source + ": " + e;
  return makeError(llvm::join(errs, "\n"));
}

/// "file:line:col" of a TOML value or key.
template <typename NodeOrKey>
static std::string where(StringRef path, const NodeOrKey &n) {
  return llvm::formatv("{0}:{1}:{2}", path, n.source().begin.line,
                       n.source().begin.column);
}

llvm::Expected<LlamaArgs> titan::readLlamaToml(StringRef path) {
  if (!llvm::sys::fs::exists(path))
    return makeError("cannot read model file '" + path + "': no such file");
  // A device or a FIFO would never end.
  if (!llvm::sys::fs::is_regular_file(path))
    return makeError("cannot read model file '" + path +
                     "': not a regular file");
  toml::parse_result parsed = parseTomlFileChecked(path);
  if (!parsed) {
    const toml::parse_error &err = parsed.error();
    return makeError(llvm::formatv(
        "{0}:{1}:{2}: invalid TOML: {3}", path, err.source().begin.line,
        err.source().begin.column, err.description()));
  }
  LlamaArgs a;
  a.name = llvm::sys::path::stem(path).str();
  a.source = path.str();
  std::vector<std::string> errs;
  bool haveKvHeads = false;

  auto readInt = [&](const toml::node &n, StringRef key, int64_t &out) {
    if (auto v = n.value_exact<int64_t>())
      out = *v;
    else
      errs.push_back(where(path, n) + ": " + key.str() + " must be an integer");
  };
  auto readFloat = [&](const toml::node &n, StringRef key, double &out) {
    if (n.is_number())
      out = *n.value<double>();
    else
      errs.push_back(where(path, n) + ": " + key.str() + " must be a number");
  };

  static const StringRef topKeys[] = {"dim",
                                      "n_layers",
                                      "n_heads",
                                      "n_kv_heads",
                                      "vocab_size",
                                      "multiple_of",
                                      "ffn_dim_multiplier",
                                      "norm_eps",
                                      "rope_theta",
                                      "max_seq_len",
                                      "rope_scaling",
                                      "use_flex_attn",
                                      "attn_type",
                                      "attn_mask_type"};
  static const StringRef scalingKeys[] = {"scaling_factor", "low_freq_factor",
                                          "high_freq_factor",
                                          "original_max_position_embeddings"};
  for (auto &&[name, node] : parsed.table()) {
    StringRef key = name.str();
    if (key == "dim")
      readInt(node, key, a.dim);
    else if (key == "n_layers")
      readInt(node, key, a.nLayers);
    else if (key == "n_heads")
      readInt(node, key, a.nHeads);
    else if (key == "n_kv_heads") {
      readInt(node, key, a.nKvHeads);
      haveKvHeads = true;
    } else if (key == "vocab_size")
      readInt(node, key, a.vocabSize);
    else if (key == "multiple_of")
      readInt(node, key, a.multipleOf);
    else if (key == "ffn_dim_multiplier") {
      double m = 1.0;
      readFloat(node, key, m);
      a.ffnDimMultiplier = m;
    } else if (key == "norm_eps")
      readFloat(node, key, a.normEps);
    else if (key == "rope_theta")
      readFloat(node, key, a.ropeTheta);
    else if (key == "max_seq_len")
      readInt(node, key, a.maxSeqLen);
    else if (key == "rope_scaling") {
      const toml::table *t = node.as_table();
      if (!t) {
        errs.push_back(where(path, node) + ": rope_scaling must be a table");
        continue;
      }
      RopeScaling s;
      int seen = 0;
      for (auto &&[sname, snode] : *t) {
        StringRef skey = sname.str();
        if (skey == "scaling_factor")
          readFloat(snode, skey, s.scalingFactor);
        else if (skey == "low_freq_factor")
          readFloat(snode, skey, s.lowFreqFactor);
        else if (skey == "high_freq_factor")
          readFloat(snode, skey, s.highFreqFactor);
        else if (skey == "original_max_position_embeddings")
          readInt(snode, skey, s.originalMaxPositionEmbeddings);
        else {
          errs.push_back(where(path, sname) + ": unknown key 'rope_scaling." +
                         skey.str() + "'" + didYouMean(skey, scalingKeys));
          continue;
        }
        ++seen;
      }
      if (seen != 4 && errs.empty())
        errs.push_back(where(path, node) +
                       ": [rope_scaling] needs scaling_factor, "
                       "low_freq_factor, high_freq_factor and "
                       "original_max_position_embeddings");
      a.ropeScaling = s;
    } else if (key == "use_flex_attn") {
      // TorchTitan v0.2.0's spelling of v0.2.1's attn_type = "flex".
      if (std::optional<bool> v = node.value<bool>())
        a.attnType = *v ? "flex" : "sdpa";
      else
        errs.push_back(where(path, node) + ": use_flex_attn must be a bool");
    } else if (key == "attn_type") {
      std::optional<std::string> v = node.value<std::string>();
      if (v && (*v == "sdpa" || *v == "flex" || *v == "varlen"))
        a.attnType = *v;
      else
        errs.push_back(where(path, node) +
                       ": attn_type must be \"sdpa\", \"flex\" or "
                       "\"varlen\" (TorchTitan v0.2.1's attention types)");
    } else if (key == "attn_mask_type") {
      // TorchTitan v0.2.0's get_attention_masks knows these two.
      std::optional<std::string> v = node.value<std::string>();
      if (v && (*v == "causal" || *v == "block_causal"))
        a.attnMaskType = *v;
      else
        errs.push_back(where(path, node) +
                       ": attn_mask_type must be \"causal\" or "
                       "\"block_causal\" (TorchTitan's mask types)");
    } else {
      errs.push_back(where(path, name) + ": unknown model key '" + key.str() +
                     "'" + didYouMean(key, topKeys));
    }
  }
  // TorchTitan v0.2.1's get_attention_masks raises the same.
  if (errs.empty() && a.attnType == "varlen" &&
      a.attnMaskType != "block_causal")
    errs.push_back(path.str() +
                   ": attn_type = \"varlen\" needs attn_mask_type = "
                   "\"block_causal\" (varlen attention is causal within "
                   "each document)");
  if (!errs.empty())
    return makeError(llvm::join(errs, "\n"));
  if (!haveKvHeads)
    a.nKvHeads = a.nHeads;
  if (a.dim > 0 && a.multipleOf > 0)
    a.ffnHidden =
        LlamaArgs::computeFfnHidden(a.dim, a.multipleOf, a.ffnDimMultiplier);
  if (llvm::Error e = validate(a))
    return std::move(e);
  return a;
}

llvm::Expected<LlamaArgs> titan::readHFLlamaConfig(StringRef path) {
  llvm::SmallString<256> file(path);
  if (llvm::sys::fs::is_directory(file))
    llvm::sys::path::append(file, "config.json");
  auto buffer = llvm::MemoryBuffer::getFile(file);
  if (!buffer)
    return makeError("cannot read Hugging Face config '" + file +
                     "': " + buffer.getError().message());
  llvm::Expected<llvm::json::Value> json =
      llvm::json::parse((*buffer)->getBuffer());
  if (!json)
    return makeError(file + ": invalid JSON: " + toString(json.takeError()));
  const llvm::json::Object *obj = json->getAsObject();
  if (!obj)
    return makeError(file + ": expected a JSON object");
  llvm::Expected<LlamaArgs> args = parseHFLlamaConfig(*obj, file);
  if (args)
    args->name =
        llvm::sys::path::filename(llvm::sys::path::parent_path(file)).str();
  return args;
}

llvm::Expected<LlamaArgs>
titan::parseHFLlamaConfig(const llvm::json::Object &config, StringRef file) {
  const llvm::json::Object *obj = &config;

  std::vector<std::string> errs;
  auto getInt = [&](StringRef key, std::optional<int64_t> dflt) -> int64_t {
    if (const llvm::json::Value *v = obj->get(key)) {
      if (auto i = v->getAsInteger())
        return *i;
      errs.push_back(("'" + key + "' must be an integer").str());
      return 0;
    }
    if (!dflt)
      errs.push_back(("missing required key '" + key + "'").str());
    return dflt.value_or(0);
  };
  auto getNumber = [&](const llvm::json::Object &o, StringRef key,
                       std::optional<double> dflt) -> double {
    if (const llvm::json::Value *v = o.get(key)) {
      if (auto d = v->getAsNumber())
        return *d;
      errs.push_back(("'" + key + "' must be a number").str());
      return 0;
    }
    if (!dflt)
      errs.push_back(("missing required key '" + key + "'").str());
    return dflt.value_or(0);
  };

  if (auto type = obj->getString("model_type"); type && *type != "llama")
    errs.push_back(("model_type '" + *type +
                    "' is not supported (expected "
                    "'llama')")
                       .str());
  if (auto act = obj->getString("hidden_act"); act && *act != "silu")
    errs.push_back(
        ("hidden_act '" + *act + "' is not supported (expected 'silu')").str());
  for (StringRef key : {"attention_bias", "mlp_bias"})
    if (obj->getBoolean(key).value_or(false))
      errs.push_back(
          (key + " = true is not supported (Llama has no biases)").str());

  LlamaArgs a;
  a.name = file.str();
  a.source = file.str();
  a.dim = getInt("hidden_size", std::nullopt);
  a.nLayers = getInt("num_hidden_layers", std::nullopt);
  a.nHeads = getInt("num_attention_heads", std::nullopt);
  a.nKvHeads = getInt("num_key_value_heads", a.nHeads);
  a.vocabSize = getInt("vocab_size", std::nullopt);
  a.ffnHidden = getInt("intermediate_size", std::nullopt);
  a.normEps = getNumber(*obj, "rms_norm_eps", 1e-6);
  a.maxSeqLen = getInt("max_position_embeddings", 2048);
  a.tieWordEmbeddings = obj->getBoolean("tie_word_embeddings").value_or(false);
  a.multipleOf = 1;
  if (obj->get("head_dim") && a.nHeads > 0) {
    int64_t headDim = getInt("head_dim", std::nullopt);
    if (headDim != a.dim / a.nHeads)
      errs.push_back(llvm::formatv("head_dim ({0}) != hidden_size / "
                                   "num_attention_heads ({1}) is not "
                                   "supported",
                                   headDim, a.dim / a.nHeads));
  }

  // Newer transformers releases move RoPE settings into "rope_parameters".
  const llvm::json::Object *rope = obj->getObject("rope_parameters");
  if (!rope)
    rope = obj->getObject("rope_scaling");
  a.ropeTheta = getNumber(rope && rope->get("rope_theta") ? *rope : *obj,
                          "rope_theta", 10000.0);
  if (rope) {
    std::optional<StringRef> type = rope->getString("rope_type");
    if (!type)
      type = rope->getString("type");
    if (type && *type == "llama3") {
      RopeScaling s;
      s.scalingFactor = getNumber(*rope, "factor", std::nullopt);
      s.lowFreqFactor = getNumber(*rope, "low_freq_factor", std::nullopt);
      s.highFreqFactor = getNumber(*rope, "high_freq_factor", std::nullopt);
      s.originalMaxPositionEmbeddings = static_cast<int64_t>(
          getNumber(*rope, "original_max_position_embeddings", std::nullopt));
      a.ropeScaling = s;
    } else if (type && *type != "default") {
      errs.push_back(("rope type '" + *type +
                      "' is not supported (expected 'llama3' or 'default')")
                         .str());
    }
  } else if (const llvm::json::Value *v = obj->get("rope_scaling");
             v && v->kind() != llvm::json::Value::Null) {
    errs.push_back("'rope_scaling' must be an object or null");
  }
  if (!errs.empty()) {
    for (std::string &e : errs)
      e = a.source + ": " + e;
    return makeError(llvm::join(errs, "\n"));
  }
  if (llvm::Error e = validate(a))
    return std::move(e);
  return a;
}

llvm::json::Object titan::hfLlamaConfig(const LlamaArgs &a,
                                        StringRef torchDtype) {
  llvm::json::Value ropeScaling = nullptr;
  if (const std::optional<RopeScaling> &s = a.ropeScaling)
    ropeScaling = llvm::json::Object{
        {"rope_type", "llama3"},
        {"factor", s->scalingFactor},
        {"low_freq_factor", s->lowFreqFactor},
        {"high_freq_factor", s->highFreqFactor},
        {"original_max_position_embeddings", s->originalMaxPositionEmbeddings}};
  return llvm::json::Object{
      {"architectures", llvm::json::Array{"LlamaForCausalLM"}},
      {"model_type", "llama"},
      {"hidden_size", a.dim},
      {"intermediate_size", a.ffnHidden},
      {"num_hidden_layers", a.nLayers},
      {"num_attention_heads", a.nHeads},
      {"num_key_value_heads", a.nKvHeads},
      {"head_dim", a.headDim()},
      {"vocab_size", a.vocabSize},
      {"rms_norm_eps", a.normEps},
      {"rope_theta", a.ropeTheta},
      {"rope_scaling", std::move(ropeScaling)},
      {"max_position_embeddings", a.maxSeqLen},
      {"tie_word_embeddings", a.tieWordEmbeddings},
      {"torch_dtype", torchDtype},
      {"hidden_act", "silu"},
      {"attention_bias", false},
      {"mlp_bias", false}};
}

std::optional<std::string>
titan::firstArchitectureDifference(const LlamaArgs &a, const LlamaArgs &b) {
  std::optional<std::string> d;
  auto check = [&](auto x, auto y, StringRef key) {
    auto text = [](auto v) {
      if constexpr (std::is_same_v<decltype(v), bool>)
        return std::string(v ? "true" : "false");
      else
        return formatNumber(double(v));
    };
    if (!d && x != y)
      d = key.str() + " is " + text(x) + ", not " + text(y);
  };
  check(a.dim, b.dim, "hidden_size");
  check(a.ffnHidden, b.ffnHidden, "intermediate_size");
  check(a.nLayers, b.nLayers, "num_hidden_layers");
  check(a.nHeads, b.nHeads, "num_attention_heads");
  check(a.nKvHeads, b.nKvHeads, "num_key_value_heads");
  check(a.vocabSize, b.vocabSize, "vocab_size");
  check(a.tieWordEmbeddings, b.tieWordEmbeddings, "tie_word_embeddings");
  check(a.normEps, b.normEps, "rms_norm_eps");
  check(a.ropeTheta, b.ropeTheta, "rope_theta");
  check(a.ropeScaling.has_value(), b.ropeScaling.has_value(),
        "rope_scaling (llama3) present");
  if (a.ropeScaling && b.ropeScaling) {
    const RopeScaling &x = *a.ropeScaling, &y = *b.ropeScaling;
    check(x.scalingFactor, y.scalingFactor, "rope_scaling.factor");
    check(x.lowFreqFactor, y.lowFreqFactor, "rope_scaling.low_freq_factor");
    check(x.highFreqFactor, y.highFreqFactor, "rope_scaling.high_freq_factor");
    check(x.originalMaxPositionEmbeddings, y.originalMaxPositionEmbeddings,
          "rope_scaling.original_max_position_embeddings");
  }
  return d;
}

llvm::Expected<LlamaArgs> titan::resolveLlamaModel(const TrainConfig &config,
                                                   StringRef modelsDir) {
  // TorchTitan v0.2.0: the flavor alone defines the model;
  // model.hf_assets_path holds the tokenizer and HF checkpoint assets.
  StringRef flavor = config.model.flavor;
  llvm::SmallString<256> dir(modelsDir);
  llvm::sys::path::append(dir, config.model.name);
  llvm::SmallString<256> file(dir);
  llvm::sys::path::append(file, flavor + ".toml");
  if (llvm::sys::fs::exists(file)) {
    llvm::Expected<LlamaArgs> args = readLlamaToml(file);
    if (args)
      args->name = flavor.str();
    return args;
  }
  if (flavor.ends_with(".json") || llvm::sys::fs::is_directory(flavor))
    return readHFLlamaConfig(flavor);
  if (flavor.ends_with(".toml") || flavor.contains('/'))
    return readLlamaToml(flavor);

  // Unknown flavor: list what is there.
  std::vector<std::string> flavors;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec))
    if (StringRef(it->path()).ends_with(".toml"))
      flavors.push_back(llvm::sys::path::stem(it->path()).str());
  llvm::sort(flavors);
  std::vector<StringRef> refs(flavors.begin(), flavors.end());
  if (flavors.empty())
    return makeError("model.flavor: no built-in flavors found in '" + dir +
                     "' (set TITAN_MODELS_DIR, or give a model file path)");
  return makeError("model.flavor: unknown flavor '" + flavor + "' for model '" +
                   config.model.name + "'" + didYouMean(flavor, refs) +
                   " (built-in: " + llvm::join(flavors, ", ") +
                   "; or give a path to a model .toml file or to a Hugging "
                   "Face config.json or its folder)");
}
