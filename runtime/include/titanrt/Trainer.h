//===- Trainer.h - the training loop of compiled executables ----*- C++ -*-===//

#ifndef TITANRT_TRAINER_H
#define TITANRT_TRAINER_H

#include <cstdint>

extern "C" {
/// A pipeline rank's program: its manifest and its functions (the stages'
/// phases and optimizer_step), each taking the arena and a microbatch
/// frame. titan-compile generates the table (tools/titan-compile/
/// Pipeline.cpp, which spells the same layout).
typedef void (*titan_step_fn)(char *arena, char *frame);
struct titan_program {
  const char *manifest;
  int64_t num_functions;
  const char *const *names;
  const titan_step_fn *functions;
};
/// The entry point of pipeline-parallel executables.
int titan_rt_pipeline_main(int argc, char **argv,
                           const struct titan_program *programs, int64_t count);
}

namespace titanrt {

class Device;

/// What titan-compile puts into a training executable.
struct CompiledModel {
  /// JSON: the compiled configuration (TOML text), the parameter names and
  /// shapes in argument order, and the step's static shapes.
  const char *manifest;
  /// The steps, on the rank's arena (its size and the offsets of the state
  /// slots are in the manifest). forward_backward reads param:*,
  /// input:tokens and input:labels and writes output:loss and grad:* (adds
  /// into grad:* when compiled with gradient accumulation);
  /// optimizer_step updates param:*, exp_avg:*, exp_avg_sq:* in place from
  /// grad:*, input:step and input:total_steps and writes output:grad_norm
  /// and output:lr. With the manifest's optimizer_in_backward,
  /// forward_backward does the updates itself (no grad:* slots) and
  /// optimizer_step is empty.
  void (*forwardBackward)(char *arena);
  void (*optimizerStep)(char *arena);
  /// Where the arena lives and the steps run (the target's kernel library
  /// provides it; null: the host).
  Device *device = nullptr;
  /// validation.enable: the forward-only step, which reads param:*,
  /// input:eval_tokens and input:eval_labels and writes output:eval_loss
  /// (null: compiled without validation).
  void (*eval)(char *arena) = nullptr;
  /// Pipeline parallel: one program per pipeline rank (then `manifest` and
  /// the two steps are unused); each rank runs that of its pipeline
  /// coordinate.
  const titan_program *programs = nullptr;
  int64_t numPrograms = 0;
};

/// Runs training: parses `--section.key value` run-time overrides, loads or
/// initializes the weights, iterates over the data, writes metrics and
/// checkpoints. Returns the process exit status.
int trainMain(int argc, char **argv, const CompiledModel &model);

} // namespace titanrt

#endif // TITANRT_TRAINER_H
