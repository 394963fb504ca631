//===- Init.h - deterministic parameter initialization ----------*- C++ -*-===//

#ifndef TITANRT_LIB_INIT_H
#define TITANRT_LIB_INIT_H

#include <array>
#include <cstdint>
#include <string>

namespace titanrt {

/// Philox4x32-10 (Salmon et al., SC'11): the counter-based generator that
/// cuRAND and PyTorch's CUDA generator use. Element i of a tensor draws from
/// counter (i, attempt), so any block of a tensor is computed alone.
std::array<uint32_t, 4> philox4x32(std::array<uint32_t, 4> counter,
                                   std::array<uint32_t, 2> key);

/// TorchTitan's Llama init_weights with depth-scaled init: token embedding
/// N(0, 1); wq/wk/wv/w1 truncated N(0, 0.02); wo/w2/w3 truncated
/// N(0, 0.02 / sqrt(2 (layer + 1))); norms 1; output truncated
/// N(0, dim^-1/2) cut at 3 standard deviations. Fills elements
/// [first, first + count) of parameter `name` (row-major over its whole
/// shape) into `out`. Element values depend only on (seed, name, index), so
/// every layout and rank count gets bit-identical weights.
void initializeRange(const std::string &name, int64_t dim, uint64_t seed,
                     int64_t first, int64_t count, float *out);

} // namespace titanrt

#endif // TITANRT_LIB_INIT_H
