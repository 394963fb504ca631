//===- HardwareFuzzer.cpp - the cost model's hardware TOML ----------------===//
//
// titan-hardware-fuzzer: the input is a hardware description (--hardware
// FILE; seeds: test/Tools/Inputs/*.toml and the shipped descriptions as
// printHardwareToml writes them), read as titan-compile reads it.
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"

#include "titan/Cost/Hardware.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string path = titan::fuzz::writeScratchFile("hardware.toml", data, size);
  llvm::Expected<titan::cost::Hardware> hw =
      titan::cost::loadHardwareFile(path);
  if (!hw)
    titan::fuzz::expectedRefusal(hw.takeError());
  return 0;
}
