//===- ManifestFuzzer.cpp - an executable's manifest ----------------------===//
//
// titan-manifest-fuzzer: the input is the JSON manifest titan-compile
// embeds in a training executable (seeds: the manifests of the debug model
// under several layouts), parsed as the runtime parses it at start.
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"

#include "titan/Contract/Manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::Expected<titan::manifest::Manifest> m =
      titan::manifest::parseManifest(titan::fuzz::asText(data, size));
  if (!m)
    titan::fuzz::expectedRefusal(m.takeError());
  (void)titan::manifest::abiVersionMismatch(titan::fuzz::asText(data, size));
  return 0;
}
