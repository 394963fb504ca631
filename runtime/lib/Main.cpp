//===- Main.cpp - entry point of compiled training executables ------------===//
//
// Linked statically into each executable: binds the symbols the compiled
// object defines, and the device of the target's kernel library, to the
// runtime's training loop.
//
//===----------------------------------------------------------------------===//

#include "titanrt/Device.h"
#include "titanrt/Trainer.h"

extern "C" {
extern const char titan_manifest[];
void titan_forward_backward(char *arena);
void titan_optimizer_step(char *arena);
/// Defined when the step was compiled with validation.enable (weak: null
/// otherwise).
__attribute__((weak)) void titan_eval(char *arena);
}

int main(int argc, char **argv) {
  return titanrt::trainMain(argc, argv,
                            {titan_manifest, titan_forward_backward,
                             titan_optimizer_step, titan_rt_target_device(),
                             titan_eval});
}
