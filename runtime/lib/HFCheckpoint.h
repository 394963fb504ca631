//===- HFCheckpoint.h - model weights in safetensors files ------*- C++ -*-===//
//
// The whole model's weights in one or more safetensors files, in two
// layouts:
//
//   titan's model-only export   one model.safetensors, TorchTitan's names
//                               (tok_embeddings.weight, layers.0.attention.
//                               wq.weight, ...), rows as trained
//   Hugging Face's              model-0000k-of-0000n.safetensors with
//                               model.safetensors.index.json (weight_map:
//                               name -> file) and config.json, or one
//                               model.safetensors; HF's names (model.
//                               embed_tokens.weight, model.layers.0.
//                               self_attn.q_proj.weight, ...)
//
// The names follow TorchTitan v0.2.0's Llama3StateDictAdapter (from_hf_map).
// Its q/k permutation is a permutation of rows within each head: TorchTitan
// (and titan) rotate interleaved pairs (row 2i + j of a head is half j of
// pair i), HF's LlamaForCausalLM rotates halves (row j * headDim/2 + i). It
// moves whole rows, so a rank's block of wq or wk maps to rows of the file
// wherever the layout splits it: every rank reads and writes only its
// blocks, row by row where permuted, and no rank holds the whole model.
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_LIB_HFCHECKPOINT_H
#define TITANRT_LIB_HFCHECKPOINT_H

#include "Manifest.h"
#include "SafeTensors.h"

#include "titan/Contract/LlamaArgs.h"

#include "llvm/ADT/StringMap.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace titanrt {

/// Where a file puts a tensor's rows: unchanged, or (q/k projections in
/// HF's layout) `heads` heads of `headDim` rows each in rotate-half order.
struct RowOrder {
  int64_t heads = 0, headDim = 0; ///< heads == 0: unchanged

  /// The file's row of the model's row `row`.
  int64_t fileRow(int64_t row) const {
    if (heads == 0)
      return row;
    int64_t head = row / headDim, r = row % headDim;
    return head * headDim + (r % 2) * (headDim / 2) + r / 2;
  }

  /// Calls `piece(fileElement, offset, count)` for the pieces of the
  /// model's elements [first, first + count) of a tensor with rows of
  /// `cols` that are contiguous in the file: `fileElement` is the piece's
  /// first element in the file's tensor, `offset` its place in the range.
  template <typename Piece>
  void forEachPiece(int64_t first, int64_t count, int64_t cols,
                    Piece piece) const {
    if (heads == 0) {
      piece(first, int64_t(0), count);
      return;
    }
    for (int64_t done = 0; done < count;) {
      int64_t at = first + done, col = at % cols;
      int64_t n = std::min(count - done, cols - col);
      piece(fileRow(at / cols) * cols + col, done, n);
      done += n;
    }
  }
};

/// Safetensors files that together hold the whole model.
struct ModelFiles {
  struct File {
    std::string name;               ///< inside the folder
    std::vector<TensorRef> tensors; ///< names and whole shapes, in order
  };
  /// Where a parameter of the model lies.
  struct Place {
    size_t file, entry; ///< files[file].tensors[entry]
    RowOrder rows;
  };
  std::string folder;
  std::vector<File> files;
  llvm::StringMap<Place> places; ///< by the model's parameter name
};

/// titan's model-only export: the safetensors `file` with the model's
/// names.
ModelFiles titanModelFiles(const std::string &file, const Manifest &m);

/// The model's hyper-parameters, from the manifest (fatal if the executable
/// lacks them).
titan::LlamaArgs compiledModelArgs(const Manifest &m);

/// A Hugging Face export of the model in `elementSize`-byte elements:
/// tensors in the model's order, cut into files of at most `maxShardBytes`
/// of data each (a larger tensor alone in its file), as save_pretrained's
/// max_shard_size does, named model-0000k-of-0000n.safetensors.
ModelFiles hfExportFiles(const std::string &folder, const Manifest &m,
                         int64_t elementSize, int64_t maxShardBytes);

/// The size limit of an export's files: save_pretrained's default 5 GB, or
/// TITAN_HF_MAX_SHARD_BYTES (tests, and file systems with smaller limits).
int64_t hfMaxShardBytes();

/// model.safetensors.index.json of `files` (metadata.total_size: the bytes
/// of tensor data) and config.json of the model, as text.
std::string hfIndexJson(const ModelFiles &files, int64_t elementSize);
std::string hfConfigJson(const Manifest &m, const std::string &exportDtype);

/// The Hugging Face name of the model's parameter `name` (TorchTitan's),
/// as TorchTitan v0.2.0's Llama3StateDictAdapter maps it; a name it does
/// not map is a fatal error (a corrupt executable).
std::string hfName(llvm::StringRef name);

/// What a Hugging Face model.safetensors.index.json says: its files, and
/// which of them holds each of the model's parameters (in allParams order).
struct HFWeightMap {
  std::vector<std::string> fileNames;
  std::vector<size_t> fileOfParam;
};

/// Reads an HF index's text (the file `path`) against the model `m`: its
/// "weight_map" must map each of the model's tensors (HF names) and no
/// other to a plain file name. The error names what is wrong. The fuzz
/// target titan-hf-index-fuzzer calls it.
llvm::Expected<HFWeightMap> parseHFWeightMap(llvm::StringRef text,
                                             const std::string &path,
                                             const Manifest &m);

/// A Hugging Face checkpoint to load: `path` is a folder holding
/// model.safetensors.index.json and its files, or model.safetensors, or is
/// a .safetensors file. Its index must name exactly the model's tensors,
/// and its config.json, if there is one, must describe the compiled model;
/// otherwise a fatal error names the tensor or field and the file.
ModelFiles hfImportFiles(const std::string &path, const Manifest &m);

/// Whether `folder` holds a Hugging Face checkpoint (config.json or
/// model.safetensors.index.json), to suggest initial_load_in_hf.
bool looksLikeHFCheckpoint(const std::string &folder);

/// Reads ranges of the model's parameters from its files, opening (and
/// checking the header of) each file the first time a range needs it.
class ModelReader {
public:
  explicit ModelReader(ModelFiles files);

  /// Elements [first, first + count) of parameter `p` (row-major, the
  /// model's row order) as float32.
  void read(const Manifest::Param &p, int64_t first, int64_t count, float *out);

private:
  ModelFiles files_;
  std::vector<std::unique_ptr<SafetensorsReader>> readers_;
};

} // namespace titanrt

#endif // TITANRT_LIB_HFCHECKPOINT_H
