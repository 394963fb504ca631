// RUN: titan-opt %s -kernel-generate-pointwise | FileCheck %s

// A non-finite global gradient norm skips the AdamW step on every target
// from this one body (OptimizerSemantics.cpp): titan.adamw_scalars makes
// the clipping coefficient NaN for a NaN or an infinite norm, and each
// element of titan.adamw keeps its parameter and moments when the
// coefficient is NaN, in the same pass (a scalar test and three selects;
// a finite norm's results are the update's, untouched).
// CHECK-LABEL: func.func @adamw_skip(
// CHECK:       kernel.generic ins(%arg0, %arg1, %arg2 : memref<f32>, memref<f32>, memref<i64>) outs(%arg3, %arg4, %arg5, %arg6 : {{.*}})
// CHECK-NEXT:  ^bb0(%{{.*}}: f32, %[[NORM:.*]]: f32, %{{.*}}: i64):
// CHECK:         %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK:         %[[ABOVE:.*]] = arith.cmpf olt, %[[ONE]], %[[FACTOR:.*]] : f32
// CHECK-NEXT:    %[[CLIPPED:.*]] = arith.select %[[ABOVE]], %[[ONE]], %[[FACTOR]] : f32
// CHECK-NEXT:    %[[INF:.*]] = arith.constant 0x7F800000 : f32
// CHECK-NEXT:    %[[ABS:.*]] = math.absf %[[NORM]] : f32
// CHECK-NEXT:    %[[FINITE:.*]] = arith.cmpf one, %[[ABS]], %[[INF]] : f32
// CHECK-NEXT:    %[[NAN:.*]] = arith.constant 0x7FC00000 : f32
// CHECK-NEXT:    %[[COEF:.*]] = arith.select %[[FINITE]], %[[CLIPPED]], %[[NAN]] : f32
// CHECK:         kernel.yield %[[COEF]], {{.*}} : f32, f32, f32, f32
// CHECK:       kernel.generic ins(%arg7, %arg8, %arg9, %arg10, %arg3, %arg4, %arg5, %arg6 : {{.*}}) outs(%arg7, %arg9, %arg10 : {{.*}})
// CHECK-NEXT:  ^bb0(%[[P:[^:]*]]: f32, %[[G:[^:]*]]: f32, %[[M:[^:]*]]: f32, %[[V:[^:]*]]: f32, %[[C:[^:]*]]: f32,
// CHECK:         %[[NEWM:.*]] = arith.addf %{{.*}}, %{{.*}} : f32
// CHECK:         %[[NEWV:.*]] = arith.addf %{{.*}}, %{{.*}} : f32
// CHECK-NEXT:    arith.constant
// CHECK-NEXT:    math.sqrt %[[NEWV]] : f32
// CHECK:         arith.mulf %{{.*}}, %[[NEWM]] : f32
// CHECK-NEXT:    arith.divf
// CHECK-NEXT:    %[[NEWP:.*]] = arith.addf %{{.*}}, %{{.*}} : f32
// CHECK-NEXT:    %[[SKIP:.*]] = arith.cmpf uno, %[[C]], %[[C]] : f32
// CHECK-NEXT:    %[[PR:.*]] = arith.select %[[SKIP]], %[[P]], %[[NEWP]] : f32
// CHECK-NEXT:    %[[MR:.*]] = arith.select %[[SKIP]], %[[M]], %[[NEWM]] : f32
// CHECK-NEXT:    %[[VR:.*]] = arith.select %[[SKIP]], %[[V]], %[[NEWV]] : f32
// CHECK-NEXT:    kernel.yield %[[PR]], %[[MR]], %[[VR]] : f32, f32, f32
func.func @adamw_skip(%lr: memref<f32>, %norm: memref<f32>, %step: memref<i64>, %c: memref<f32>, %d: memref<f32>, %ss: memref<f32>, %bc: memref<f32>, %p: memref<8xf32>, %g: memref<8xf32>, %m: memref<8xf32>, %v: memref<8xf32>) {
  %s = kernel.stream 0
  kernel.call "adamw_scalars"(%lr, %norm, %step : memref<f32>, memref<f32>, memref<i64>) outs(%c, %d, %ss, %bc : memref<f32>, memref<f32>, memref<f32>, memref<f32>) on %s params [9.000000e-01, 9.500000e-01, 1.000000e-01, 1.000000e+00]
  kernel.call "adamw"(%p, %g, %m, %v, %c, %d, %ss, %bc : memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%p, %m, %v : memref<8xf32>, memref<8xf32>, memref<8xf32>) on %s params [9.000000e-01, 9.500000e-01, 1.000000e-08]
  return
}

// f64 master weights: the coefficient arrives rounded to f64 (NaN stays
// NaN) and the same test keeps the state.
// CHECK-LABEL: func.func @adamw_skip_f64(
// CHECK:       kernel.generic ins(%arg0, %arg1, %arg2, %arg3, %arg4, %{{.*}}) outs(%arg0, %arg2, %arg3 : {{.*}})
// CHECK-NEXT:  ^bb0(%[[P:[^:]*]]: f64, %{{[^:]*}}: f64, %[[M:[^:]*]]: f64, %[[V:[^:]*]]: f64, %[[C:[^:]*]]: f64,
// CHECK:         %[[SKIP:.*]] = arith.cmpf uno, %[[C]], %[[C]] : f64
// CHECK-NEXT:    arith.select %[[SKIP]], %[[P]], %{{.*}} : f64
// CHECK-NEXT:    arith.select %[[SKIP]], %[[M]], %{{.*}} : f64
// CHECK-NEXT:    arith.select %[[SKIP]], %[[V]], %{{.*}} : f64
func.func @adamw_skip_f64(%p: memref<8xf64>, %g: memref<8xf64>, %m: memref<8xf64>, %v: memref<8xf64>, %c: memref<f64>) {
  %s = kernel.stream 0
  kernel.call "adamw"(%p, %g, %m, %v, %c, %c, %c, %c : memref<8xf64>, memref<8xf64>, memref<8xf64>, memref<8xf64>, memref<f64>, memref<f64>, memref<f64>, memref<f64>) outs(%p, %m, %v : memref<8xf64>, memref<8xf64>, memref<8xf64>) on %s params [9.000000e-01, 9.500000e-01, 1.000000e-08]
  return
}
