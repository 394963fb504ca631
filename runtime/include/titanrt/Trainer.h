//===- Trainer.h - the training loop of compiled executables ----*- C++ -*-===//

#ifndef TITANRT_TRAINER_H
#define TITANRT_TRAINER_H

namespace titanrt {

/// What titan-compile puts into a training executable.
struct CompiledModel {
  /// JSON: the compiled configuration (TOML text), the parameter names and
  /// shapes in argument order, and the step's static shapes.
  const char *manifest;
  /// (params..., tokens, labels | loss, grads...)
  void (*forwardBackward)(void **buffers);
  /// (params..., grads..., exp_avg..., exp_avg_sq..., step, total_steps |
  ///  params..., exp_avg..., exp_avg_sq..., grad_norm, lr)
  void (*optimizerStep)(void **buffers);
};

/// Runs training: parses `--section.key value` run-time overrides, loads or
/// initializes the weights, iterates over the data, writes metrics and
/// checkpoints. Returns the process exit status.
int trainMain(int argc, char **argv, const CompiledModel &model);

} // namespace titanrt

#endif // TITANRT_TRAINER_H
