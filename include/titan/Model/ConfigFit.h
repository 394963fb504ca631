//===- ConfigFit.h - does a training config fit a model? --------*- C++ -*-===//

#ifndef TITAN_MODEL_CONFIGFIT_H
#define TITAN_MODEL_CONFIGFIT_H

#include "llvm/Support/Error.h"

namespace titan {

struct LlamaArgs;
struct TrainConfig;

/// Checks that the training config's sequence length and parallel degrees fit
/// the model: tensor parallel must divide heads, kv heads, FFN width,
/// vocabulary and (sequence parallel) sequence; context parallel must divide
/// the sequence into 2*cp load-balanced chunks; pipeline stages must divide
/// the layers. The error names every degree and dimension that does not fit.
/// Checks that need the world size (data-parallel degrees) run at launch.
llvm::Error checkModelFitsConfig(const LlamaArgs &args,
                                 const TrainConfig &config);

} // namespace titan

#endif // TITAN_MODEL_CONFIGFIT_H
