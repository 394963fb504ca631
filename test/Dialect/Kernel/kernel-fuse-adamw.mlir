// RUN: titan-opt %s -split-input-file -kernel-fuse-adamw | FileCheck %s

// A run of per-parameter AdamW calls sharing the norm, the LR, the step
// and the hyperparameters becomes one multi-tensor call: each tensor's
// (param, grad, exp_avg, exp_avg_sq), then the shared scalars; outputs each
// tensor's (param, exp_avg, exp_avg_sq); params [count, hyperparameters].
// CHECK-LABEL: func.func @optimizer_step(
// CHECK:       kernel.call "global_norm"
// CHECK-NEXT:  kernel.call "adamw_multi"(%arg0, %arg1, %arg2, %arg3, %arg4, %arg5, %arg6, %arg7, %arg8, %arg9, %arg10 : memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<4x2xf32>, memref<4x2xf32>, memref<4x2xf32>, memref<4x2xf32>, memref<f32>, memref<f32>, memref<i64>) outs(%arg0, %arg2, %arg3, %arg4, %arg6, %arg7 : memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<4x2xf32>, memref<4x2xf32>, memref<4x2xf32>) on %{{.*}} params [2, 9.000000e-01, {{.*}}, 1.000000e-08, 1.000000e-01, 1.000000e+00]
// CHECK-NOT:   "adamw"
// CHECK:       return
func.func @optimizer_step(%p0: memref<8xf32>, %g0: memref<8xf32>, %m0: memref<8xf32>, %v0: memref<8xf32>,
                          %p1: memref<4x2xf32>, %g1: memref<4x2xf32>, %m1: memref<4x2xf32>, %v1: memref<4x2xf32>,
                          %norm: memref<f32>, %lr: memref<f32>, %step: memref<i64>) {
  %s = kernel.stream 0
  kernel.call "global_norm"(%g0, %g1 : memref<8xf32>, memref<4x2xf32>) outs(%norm : memref<f32>) on %s params [2]
  kernel.call "adamw"(%p0, %g0, %m0, %v0, %norm, %lr, %step : memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<f32>, memref<f32>, memref<i64>) outs(%p0, %m0, %v0 : memref<8xf32>, memref<8xf32>, memref<8xf32>) on %s params [0.9, 0.95, 1.0e-8, 0.1, 1.0]
  kernel.call "adamw"(%p1, %g1, %m1, %v1, %norm, %lr, %step : memref<4x2xf32>, memref<4x2xf32>, memref<4x2xf32>, memref<4x2xf32>, memref<f32>, memref<f32>, memref<i64>) outs(%p1, %m1, %v1 : memref<4x2xf32>, memref<4x2xf32>, memref<4x2xf32>) on %s params [0.9, 0.95, 1.0e-8, 0.1, 1.0]
  return
}

// -----

// A call with other hyperparameters, one that updates a tensor the run
// already updates (the updates would not be independent), or one after
// another kernel starts a new run; a run of one stays a plain adamw.
// CHECK-LABEL: func.func @mixed(
// CHECK:       kernel.call "adamw_multi"(%arg0, %arg1, %arg2, %arg3, %arg4, %arg5, %arg6, %arg7, %arg8, %arg9, %arg10 : {{.*}} params [2, 9.000000e-01
// CHECK-NEXT:  kernel.call "adamw"(%arg0, {{.*}} params [9.000000e-01
// CHECK-NEXT:  kernel.call "adamw"({{.*}} params [8.000000e-01
// CHECK-NEXT:  kernel.call "fill"
// CHECK-NEXT:  kernel.call "adamw"({{.*}} params [9.000000e-01
// CHECK-NEXT:  return
func.func @mixed(%p: memref<8xf32>, %g: memref<8xf32>, %m: memref<8xf32>, %v: memref<8xf32>,
                 %q: memref<8xf32>, %h: memref<8xf32>, %n: memref<8xf32>, %w: memref<8xf32>,
                 %norm: memref<f32>, %lr: memref<f32>, %step: memref<i64>) {
  %s = kernel.stream 0
  kernel.call "adamw"(%p, %g, %m, %v, %norm, %lr, %step : memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<f32>, memref<f32>, memref<i64>) outs(%p, %m, %v : memref<8xf32>, memref<8xf32>, memref<8xf32>) on %s params [0.9, 0.95, 1.0e-8, 0.1, 1.0]
  kernel.call "adamw"(%q, %h, %n, %w, %norm, %lr, %step : memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<f32>, memref<f32>, memref<i64>) outs(%q, %n, %w : memref<8xf32>, memref<8xf32>, memref<8xf32>) on %s params [0.9, 0.95, 1.0e-8, 0.1, 1.0]
  kernel.call "adamw"(%p, %g, %m, %v, %norm, %lr, %step : memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<f32>, memref<f32>, memref<i64>) outs(%p, %m, %v : memref<8xf32>, memref<8xf32>, memref<8xf32>) on %s params [0.9, 0.95, 1.0e-8, 0.1, 1.0]
  kernel.call "adamw"(%q, %h, %n, %w, %norm, %lr, %step : memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<f32>, memref<f32>, memref<i64>) outs(%q, %n, %w : memref<8xf32>, memref<8xf32>, memref<8xf32>) on %s params [0.8, 0.95, 1.0e-8, 0.1, 1.0]
  kernel.call "fill"() outs(%g : memref<8xf32>) on %s params [0.0 : f64]
  kernel.call "adamw"(%p, %g, %m, %v, %norm, %lr, %step : memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<f32>, memref<f32>, memref<i64>) outs(%p, %m, %v : memref<8xf32>, memref<8xf32>, memref<8xf32>) on %s params [0.9, 0.95, 1.0e-8, 0.1, 1.0]
  return
}
