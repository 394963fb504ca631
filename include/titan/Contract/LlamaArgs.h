//===- LlamaArgs.h - Llama model hyper-parameters ---------------*- C++ -*-===//
//
// The dimensions of a Llama 3 model, read from a TorchTitan-style model TOML
// file (TransformerModelArgs field names) or a Hugging Face config.json, and
// the quantities derived from them.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_CONTRACT_LLAMAARGS_H
#define TITAN_CONTRACT_LLAMAARGS_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace titan {

struct TrainConfig;

/// Llama 3.1 frequency-dependent RoPE scaling.
struct RopeScaling {
  double scalingFactor = 8.0;
  double lowFreqFactor = 1.0;
  double highFreqFactor = 4.0;
  int64_t originalMaxPositionEmbeddings = 8192;
};

struct LlamaArgs {
  std::string name;   ///< flavor name or config path, for messages
  std::string source; ///< file it was read from
  int64_t dim = 4096;
  int64_t nLayers = 32;
  int64_t nHeads = 32;
  int64_t nKvHeads = 32; ///< = nHeads unless given
  int64_t vocabSize = 128256;
  int64_t multipleOf = 256;
  std::optional<double> ffnDimMultiplier;
  int64_t ffnHidden = 0; ///< derived (TOML) or intermediate_size (HF)
  double normEps = 1e-5;
  double ropeTheta = 10000;
  std::optional<RopeScaling> ropeScaling;
  int64_t maxSeqLen = 131072;
  bool tieWordEmbeddings = false; ///< output reuses tok_embeddings.weight
  /// TorchTitan's attention kernel (v0.2.1's attn_type: "sdpa", "flex" or
  /// "varlen"; v0.2.0's use_flex_attn = true is "flex") and its mask
  /// (attn_mask_type: "causal" or "block_causal").
  std::string attnType = "sdpa";
  std::string attnMaskType = "causal";

  int64_t headDim() const { return dim / nHeads; }
  /// Whether attention stays within each packed document: TorchTitan masks
  /// by document with flex attention's block-causal mask and with varlen
  /// attention (v0.2.1: causal within each EOS-delimited sequence, the
  /// same attention); SDPA is causal over the whole sequence.
  bool documentMasked() const {
    return attnType != "sdpa" && attnMaskType == "block_causal";
  }

  /// TorchTitan's FeedForward hidden size:
  /// multiple_of * ceil(int(multiplier * int(8 * dim / 3)) / multiple_of).
  static int64_t computeFfnHidden(int64_t dim, int64_t multipleOf,
                                  std::optional<double> multiplier);
};

/// A named parameter and its shape, in TorchTitan's state-dict order.
struct ParamSpec {
  std::string name;
  std::vector<int64_t> shape;
  int64_t numel() const;
};

/// The parameters of the model, in TorchTitan's state-dict order.
std::vector<ParamSpec> llamaParameters(const LlamaArgs &args);

/// The number of parameters of the model (llamaParameters' elements).
int64_t llamaParameterCount(const LlamaArgs &args);

/// Training FLOPs per token, 6N + 12 L H Q T (PaLM appendix B, as TorchTitan
/// counts it), with N the parameters excluding the token embedding (a lookup,
/// not a matmul) unless the output shares it.
double trainingFlopsPerToken(const LlamaArgs &args, int64_t seqLen);

/// Reads a model TOML file with TorchTitan TransformerModelArgs keys.
llvm::Expected<LlamaArgs> readLlamaToml(llvm::StringRef path);

/// Reads a Hugging Face Llama config.json (a file or a folder holding one).
llvm::Expected<LlamaArgs> readHFLlamaConfig(llvm::StringRef path);

/// Reads a Hugging Face Llama config.json's object; errors name `file`.
llvm::Expected<LlamaArgs> parseHFLlamaConfig(const llvm::json::Object &config,
                                             llvm::StringRef file);

/// The model as a Hugging Face LlamaConfig (config.json), which
/// parseHFLlamaConfig reads back, so transformers' LlamaForCausalLM builds
/// the same model: intermediate_size is titan's FFN hidden size, and
/// rope_scaling is "llama3" when the model scales RoPE (else null).
llvm::json::Object hfLlamaConfig(const LlamaArgs &args,
                                 llvm::StringRef torchDtype);

/// The first hyper-parameter that makes `a` and `b` different models
/// ("num_key_value_heads is 2, not 4", HF's key names), or std::nullopt.
/// The name, source and max_position_embeddings do not count: they do not
/// change what the weights mean.
std::optional<std::string> firstArchitectureDifference(const LlamaArgs &a,
                                                       const LlamaArgs &b);

/// Resolves the model a training config names by `model.flavor` alone (as
/// TorchTitan v0.2.0 does; `model.hf_assets_path` is not read): the built-in
/// flavor `<modelsDir>/<model.name>/<flavor>.toml` if there is one, else a
/// Hugging Face config.json (a `.json` path or a folder holding one), else a
/// model TOML file.
llvm::Expected<LlamaArgs> resolveLlamaModel(const TrainConfig &config,
                                            llvm::StringRef modelsDir);

} // namespace titan

#endif // TITAN_CONTRACT_LLAMAARGS_H
