// RUN: titan-opt %s -canonicalize -split-input-file | FileCheck %s

// CHECK-LABEL: func.func @fuse_silu_mul
// CHECK-SAME: (%[[G:.*]]: tensor<4x8xf32>, %[[U:.*]]: tensor<4x8xf32>)
// CHECK-NEXT: %[[R:.*]] = titan.swiglu %[[G]], %[[U]] : tensor<4x8xf32>
// CHECK-NEXT: return %[[R]]
func.func @fuse_silu_mul(%g: tensor<4x8xf32>, %u: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %s = titan.silu %g : tensor<4x8xf32>
  %m = titan.mul %s, %u : tensor<4x8xf32>
  return %m : tensor<4x8xf32>
}

// -----

// The gate may be either operand of the (commutative) product.
// CHECK-LABEL: func.func @fuse_silu_mul_commuted
// CHECK-SAME: (%[[G:.*]]: tensor<4x8xf32>, %[[U:.*]]: tensor<4x8xf32>)
// CHECK-NEXT: %[[R:.*]] = titan.swiglu %[[G]], %[[U]] : tensor<4x8xf32>
func.func @fuse_silu_mul_commuted(%g: tensor<4x8xf32>, %u: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %s = titan.silu %g : tensor<4x8xf32>
  %m = titan.mul %u, %s : tensor<4x8xf32>
  return %m : tensor<4x8xf32>
}

// -----

// A silu with another user stays: fusing would compute it twice.
// CHECK-LABEL: func.func @keep_shared_silu
// CHECK: %[[S:.*]] = titan.silu
// CHECK: titan.mul %[[S]]
// CHECK-NOT: titan.swiglu
func.func @keep_shared_silu(%g: tensor<4x8xf32>, %u: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %s = titan.silu %g : tensor<4x8xf32>
  %m = titan.mul %s, %u : tensor<4x8xf32>
  return %m, %s : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_identity
// CHECK-SAME: (%[[X:.*]]: tensor<2x8xf32>)
// CHECK-NEXT: return %[[X]]
func.func @reshape_identity(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %0 = titan.reshape %x : tensor<2x8xf32> -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_chain
// CHECK-SAME: (%[[X:.*]]: tensor<2x8xf32>)
// CHECK-NEXT: %[[R:.*]] = titan.reshape %[[X]] : tensor<2x8xf32> -> tensor<4x2x2xf32>
// CHECK-NEXT: return %[[R]]
func.func @reshape_chain(%x: tensor<2x8xf32>) -> tensor<4x2x2xf32> {
  %0 = titan.reshape %x : tensor<2x8xf32> -> tensor<16xf32>
  %1 = titan.reshape %0 : tensor<16xf32> -> tensor<4x2x2xf32>
  return %1 : tensor<4x2x2xf32>
}

// -----

// A split followed by the inverse merge (the importer's head reshapes) folds away.
// CHECK-LABEL: func.func @reshape_round_trip
// CHECK-SAME: (%[[X:.*]]: tensor<2x8x16xf32>)
// CHECK-NEXT: return %[[X]]
func.func @reshape_round_trip(%x: tensor<2x8x16xf32>) -> tensor<2x8x16xf32> {
  %0 = titan.reshape %x : tensor<2x8x16xf32> -> tensor<2x8x4x4xf32>
  %1 = titan.reshape %0 : tensor<2x8x4x4xf32> -> tensor<2x8x16xf32>
  return %1 : tensor<2x8x16xf32>
}

// A cast to its own type folds away.
// CHECK-LABEL: func.func @cast_identity
// CHECK-NEXT: return %arg0
func.func @cast_identity(%a: tensor<4xbf16>) -> tensor<4xbf16> {
  %0 = titan.cast %a : tensor<4xbf16> to tensor<4xbf16>
  return %0 : tensor<4xbf16>
}
