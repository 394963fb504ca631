//===- DocumentMask.h - TorchTitan's block-causal attention ----*- C++ -*-===//
//
// TorchTitan's flex-attention flavors (attn_mask_type = "block_causal")
// pack several documents into a sequence, each ending with the EOS token,
// and keep attention inside each one: query position p sees the keys of
// its own document at or before it (torchtitan/models/attention.py,
// get_document_mask_mod: a position's document is the number of EOS
// tokens before it). Documents are runs of positions, so that is one
// lower bound per query row: p sees keys [start(p), p]. The attention
// kernels take those starts over the whole sequence (every context-
// parallel rank holds all of them: its key chunks come from anywhere),
// mask with them, and skip the tiles wholly before a block's first start.
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_LIB_DOCUMENTMASK_H
#define TITANRT_LIB_DOCUMENTMASK_H

#include <cstdint>

namespace titanrt {

/// Each position's document start: `starts` is [batch, seq] over the whole
/// sequence; null for plain causal attention.
struct DocumentStarts {
  const int32_t *starts = nullptr;
  int64_t seq = 0;

  explicit operator bool() const { return starts != nullptr; }
  /// The starts of batch row `b` from global position `position` on.
  const int32_t *at(int64_t b, int64_t position) const {
    return starts ? starts + b * seq + position : nullptr;
  }
};

/// The document starts of `tokens` ([batch, seq]): position p's document
/// begins after the last `eosId` before p (at 0 when there is none); the
/// EOS itself ends its document.
inline void documentStarts(const int32_t *tokens, int64_t batch, int64_t seq,
                           int64_t eosId, int32_t *starts) {
  for (int64_t b = 0; b < batch; ++b) {
    int32_t start = 0;
    for (int64_t p = 0; p < seq; ++p) {
      starts[b * seq + p] = start;
      if (tokens[b * seq + p] == eosId)
        start = int32_t(p + 1);
    }
  }
}

} // namespace titanrt

#endif // TITANRT_LIB_DOCUMENTMASK_H
