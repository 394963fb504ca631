// RUN: titan-opt %s -split-input-file -titan-optimizer="lr=0.003 beta2=0.99 weight-decay=0.01 max-norm=0.5 warmup-steps=10 decay-ratio=0.25 decay-type=cosine min-lr-factor=0.1" -verify-diagnostics | FileCheck %s
// RUN: titan-opt %s -split-input-file -titan-optimizer -verify-diagnostics | FileCheck %s --check-prefix=DEFAULTS

// CHECK-LABEL: func.func @optimizer_step(
// CHECK-SAME: %[[A:[^:]*]]: tensor<4x2xf32> {titan.param = "a"}, %[[B:[^:]*]]: tensor<3xf32> {titan.param = "b"},
// CHECK-SAME: %[[GA:[^:]*]]: tensor<4x2xf32> {titan.grad = "a"}, %[[GB:[^:]*]]: tensor<3xf32> {titan.grad = "b"},
// CHECK-SAME: %[[MA:[^:]*]]: tensor<4x2xf32> {titan.exp_avg = "a"}, %[[MB:[^:]*]]: tensor<3xf32> {titan.exp_avg = "b"},
// CHECK-SAME: %[[VA:[^:]*]]: tensor<4x2xf32> {titan.exp_avg_sq = "a"}, %[[VB:[^:]*]]: tensor<3xf32> {titan.exp_avg_sq = "b"},
// CHECK-SAME: %[[STEP:[^:]*]]: tensor<i64> {titan.input = "step"}, %[[TOTAL:[^:]*]]: tensor<i64> {titan.input = "total_steps"})
// CHECK-SAME: -> (tensor<4x2xf32> {titan.param = "a"}, tensor<3xf32> {titan.param = "b"}, tensor<4x2xf32> {titan.exp_avg = "a"}, tensor<3xf32> {titan.exp_avg = "b"}, tensor<4x2xf32> {titan.exp_avg_sq = "a"}, tensor<3xf32> {titan.exp_avg_sq = "b"}, tensor<f32> {titan.output = "grad_norm"}, tensor<f32> {titan.output = "lr"})
// CHECK:      %[[NORM:.*]] = titan.global_norm %[[GA]], %[[GB]] : (tensor<4x2xf32>, tensor<3xf32>) -> tensor<f32>
// CHECK:      %[[LR:.*]] = titan.lr_schedule %[[STEP]], %[[TOTAL]] decay cosine {decay_ratio = 2.500000e-01 : f64, lr = 3.000000e-03 : f64, min_lr_factor = 1.000000e-01 : f64, warmup_steps = 10 : i64}
// The step's scalars once, in the parameters' type, for every update.
// CHECK:      %[[C:[^,]*]], %[[D:[^,]*]], %[[SS:[^,]*]], %[[BC:[^ ]*]] = titan.adamw_scalars %[[LR]], %[[NORM]], %[[STEP]] {beta1 = 9.000000e-01 : f64, beta2 = 0.98999999999999999 : f64, max_norm = 5.000000e-01 : f64, weight_decay = 1.000000e-02 : f64} : tensor<f32>, tensor<i64> -> tensor<f32>
// CHECK:      %[[PA:[^,]*]], %[[MA2:[^,]*]], %[[VA2:[^ ]*]] = titan.adamw %[[A]], %[[GA]], %[[MA]], %[[VA]] scalars(%[[C]], %[[D]], %[[SS]], %[[BC]]) {beta1 = 9.000000e-01 : f64, beta2 = 0.98999999999999999 : f64, eps = 1.000000e-08 : f64} : tensor<4x2xf32>, tensor<f32>
// CHECK:      %[[PB:[^,]*]], %[[MB2:[^,]*]], %[[VB2:[^ ]*]] = titan.adamw %[[B]], %[[GB]], %[[MB]], %[[VB]] scalars(%[[C]], %[[D]], %[[SS]], %[[BC]])
// CHECK:      return %[[PA]], %[[PB]], %[[MA2]], %[[MB2]], %[[VA2]], %[[VB2]], %[[NORM]], %[[LR]]
// Defaults are TorchTitan's; no decay_ratio means decay right after warmup.
// DEFAULTS: titan.lr_schedule {{.*}} decay linear {lr = 8.000000e-04 : f64, min_lr_factor = 0.000000e+00 : f64, warmup_steps = 200 : i64}
// DEFAULTS: titan.adamw_scalars {{.*}} {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, max_norm = 1.000000e+00 : f64, weight_decay = 1.000000e-01 : f64}
// DEFAULTS: titan.adamw {{.*}} {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, eps = 1.000000e-08 : f64}
func.func @forward(%a: tensor<4x2xf32> {titan.param = "a"}, %t: tensor<2xi32> {titan.input = "tokens"},
                   %b: tensor<3xf32> {titan.param = "b"}) -> tensor<f32> {
  %f = titan.fill 0.0 : tensor<f32>
  return %f : tensor<f32>
}

// -----

// expected-error @+1 {{'func.func' op has no arguments tagged 'titan.param' to optimize}}
func.func @forward(%x: tensor<4xf32>) -> tensor<f32> {
  %f = titan.fill 0.0 : tensor<f32>
  return %f : tensor<f32>
}

// -----

// f32 and f64 parameters: the step's scalars once for each type.
// CHECK-LABEL: func.func @optimizer_step(
// CHECK:      %[[C32:[^,]*]], %[[D32:[^,]*]], %[[S32:[^,]*]], %[[B32:[^ ]*]] = titan.adamw_scalars {{.*}} -> tensor<f32>
// CHECK:      titan.adamw {{.*}} scalars(%[[C32]], %[[D32]], %[[S32]], %[[B32]]) {{.*}} : tensor<4xf32>, tensor<f32>
// CHECK:      %[[C64:[^,]*]], %[[D64:[^,]*]], %[[S64:[^,]*]], %[[B64:[^ ]*]] = titan.adamw_scalars {{.*}} -> tensor<f64>
// CHECK:      titan.adamw {{.*}} scalars(%[[C64]], %[[D64]], %[[S64]], %[[B64]]) {{.*}} : tensor<3xf64>, tensor<f64>
// CHECK:      titan.adamw {{.*}} scalars(%[[C32]], %[[D32]], %[[S32]], %[[B32]]) {{.*}} : tensor<2xf32>, tensor<f32>
// CHECK-NOT:  titan.adamw_scalars
func.func @forward(%a: tensor<4xf32> {titan.param = "a"}, %b: tensor<3xf64> {titan.param = "b"},
                   %c: tensor<2xf32> {titan.param = "c"}) -> tensor<f32> {
  %f = titan.fill 0.0 : tensor<f32>
  return %f : tensor<f32>
}

// -----

// expected-error @+1 {{titan-optimizer: parameter 'w' is 'bf16'; AdamW updates f32 or f64 master weights}}
func.func @forward(%w: tensor<4xbf16> {titan.param = "w"}) -> tensor<f32> {
  %f = titan.fill 0.0 : tensor<f32>
  return %f : tensor<f32>
}

// -----

// expected-error @+1 {{titan-optimizer: no function named 'forward'}}
module {
}

// An unknown decay shape is a pass-option error.
// RUN: not titan-opt %s -split-input-file -titan-optimizer=decay-type=step 2>&1 | FileCheck %s --check-prefix=BAD-DECAY
// BAD-DECAY: error: titan-optimizer: decay-type must be linear, sqrt or cosine, got 'step'
