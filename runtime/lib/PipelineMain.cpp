//===- PipelineMain.cpp - entry point of pipeline-parallel executables ----===//
//
// In libtitanrt_main beside Main.cpp: a pipeline-parallel executable's
// generated table defines main() and calls this with its programs, so the
// archive's Main.o (which names the single-program symbols) is not linked.
//
//===----------------------------------------------------------------------===//

#include "titanrt/Device.h"
#include "titanrt/Trainer.h"

int titan_rt_pipeline_main(int argc, char **argv, const titan_program *programs,
                           int64_t count) {
  titanrt::CompiledModel model{nullptr, nullptr, nullptr,
                               titan_rt_target_device()};
  model.programs = programs;
  model.numPrograms = count;
  return titanrt::trainMain(argc, argv, model);
}
