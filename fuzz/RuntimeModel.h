//===- RuntimeModel.h - the checkpoint fuzz targets' model ------*- C++ -*-===//
//
// The checkpoint readers check files against the compiled model. Their
// fuzz targets use this one: a Llama of one layer with dim 8 and a vocab of
// 16 (TorchTitan's parameter names), which the seeds in fuzz/seeds hold.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_FUZZ_RUNTIMEMODEL_H
#define TITAN_FUZZ_RUNTIMEMODEL_H

#include "titan/Contract/Manifest.h"

namespace titan::fuzz {

/// The manifest of that model on one rank (only its parameters are set).
const manifest::Manifest &runtimeModel();

} // namespace titan::fuzz

#endif // TITAN_FUZZ_RUNTIMEMODEL_H
