//===- Manifest.h - what titan-compile says about an executable -*- C++ -*-===//
//
// The JSON manifest a training executable carries (titan/Manifest/
// Manifest.h, shared with the compiler that writes it): the compiled
// config, the step's static shapes, each parameter's global and local
// shape and sharding, and the memory plan's slots.
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_LIB_MANIFEST_H
#define TITANRT_LIB_MANIFEST_H

#include "Communicator.h"

#include "titan/Contract/Manifest.h"

#include <cstdint>
#include <vector>

namespace titanrt {

using titan::manifest::FrameSlot;
using titan::manifest::Manifest;
using titan::manifest::meshAxisName;

/// Parses the manifest text; a malformed one is a fatal "corrupt
/// executable" error.
Manifest parseManifest(const char *text);

/// The product of `shape` (1 for a scalar).
int64_t numel(const std::vector<int64_t> &shape);

} // namespace titanrt

#endif // TITANRT_LIB_MANIFEST_H
