//===- Init.h - deterministic parameter initialization ----------*- C++ -*-===//

#ifndef TITANRT_LIB_INIT_H
#define TITANRT_LIB_INIT_H

#include "SafeTensors.h"

#include <cstdint>
#include <vector>

namespace titanrt {

/// TorchTitan's Llama init_weights with depth-scaled init: token embedding
/// N(0, 1); wq/wk/wv/w1 truncated N(0, 0.02); wo/w2/w3 truncated
/// N(0, 0.02 / sqrt(2 (layer + 1))); norms 1; output truncated
/// N(0, dim^-1/2) cut at 3 standard deviations. Each tensor draws from its own
/// stream seeded by (seed, name), so values do not depend on order or rank.
void initializeParameters(const std::vector<TensorRef> &params, int64_t dim,
                          uint64_t seed);

} // namespace titanrt

#endif // TITANRT_LIB_INIT_H
