// RUN: titan-opt %s -split-input-file -titan-widen-gemm-results | FileCheck %s

// FSDP's f32 weight gradient: the bf16 GEMM writes f32 itself, and the cast
// is gone.
// CHECK-LABEL: func.func @grad_weight
// CHECK-SAME: (%[[DY:.*]]: tensor<2x8x16xbf16>, %[[X:.*]]: tensor<2x8x32xbf16>)
// CHECK-NEXT: %[[W:.*]] = titan.linear_grad_weight %[[DY]], %[[X]] : (tensor<2x8x16xbf16>, tensor<2x8x32xbf16>) -> tensor<16x32xf32>
// CHECK-NEXT: return %[[W]]
func.func @grad_weight(%dy: tensor<2x8x16xbf16>, %x: tensor<2x8x32xbf16>) -> tensor<16x32xf32> {
  %0 = titan.linear_grad_weight %dy, %x : (tensor<2x8x16xbf16>, tensor<2x8x32xbf16>) -> tensor<16x32xbf16>
  %1 = titan.cast %0 : tensor<16x32xbf16> to tensor<16x32xf32>
  return %1 : tensor<16x32xf32>
}

// -----

// Float8's weight-gradient GEMM: its attributes stay, it stays in place
// (before the op between it and the cast).
// CHECK-LABEL: func.func @scaled_grad_weight
// CHECK-NEXT: %[[W:.*]] = titan.scaled_matmul grad_weight %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {lhs_transposed, rhs_transposed} : {{.*}} -> tensor<16x32xf32>
// CHECK-NEXT: %[[Y:.*]] = titan.add
// CHECK-NEXT: return %[[W]], %[[Y]]
func.func @scaled_grad_weight(%dy: tensor<16x16xf8E5M2>, %sdy: tensor<f32>, %x: tensor<32x16xf8E4M3FN>, %sx: tensor<f32>, %a: tensor<4xf32>) -> (tensor<16x32xf32>, tensor<4xf32>) {
  %0 = titan.scaled_matmul grad_weight %dy, %sdy, %x, %sx {lhs_transposed, rhs_transposed} : (tensor<16x16xf8E5M2>, tensor<f32>, tensor<32x16xf8E4M3FN>, tensor<f32>) -> tensor<16x32xbf16>
  %1 = titan.add %a, %a : tensor<4xf32>
  %2 = titan.cast %0 : tensor<16x32xbf16> to tensor<16x32xf32>
  return %2, %1 : tensor<16x32xf32>, tensor<4xf32>
}

// -----

// Left alone: a bf16 result something else reads (it needs the rounding),
// a cast to f64 (no GEMM writes it from bf16), a GEMM without the trait
// (titan.linear), a narrowing cast.
// CHECK-LABEL: func.func @kept
// CHECK: titan.linear_grad_weight {{.*}} -> tensor<16x32xbf16>
// CHECK: titan.cast {{.*}} to tensor<16x32xf32>
// CHECK: titan.linear_grad_weight {{.*}} -> tensor<16x32xbf16>
// CHECK: titan.cast {{.*}} to tensor<16x32xf64>
// CHECK: titan.linear {{.*}} -> tensor<2x8x16xbf16>
// CHECK: titan.cast {{.*}} to tensor<2x8x16xf32>
// CHECK: titan.linear_grad_weight {{.*}} -> tensor<16x32xf32>
// CHECK: titan.cast {{.*}} to tensor<16x32xbf16>
func.func @kept(%dy: tensor<2x8x16xbf16>, %x: tensor<2x8x32xbf16>, %w: tensor<16x32xbf16>, %dy32: tensor<2x8x16xf32>, %x32: tensor<2x8x32xf32>) -> (tensor<16x32xf32>, tensor<16x32xbf16>, tensor<16x32xf64>, tensor<2x8x16xf32>, tensor<16x32xbf16>) {
  %0 = titan.linear_grad_weight %dy, %x : (tensor<2x8x16xbf16>, tensor<2x8x32xbf16>) -> tensor<16x32xbf16>
  %1 = titan.cast %0 : tensor<16x32xbf16> to tensor<16x32xf32>
  %2 = titan.linear_grad_weight %dy, %x : (tensor<2x8x16xbf16>, tensor<2x8x32xbf16>) -> tensor<16x32xbf16>
  %3 = titan.cast %2 : tensor<16x32xbf16> to tensor<16x32xf64>
  %4 = titan.linear %x, %w : (tensor<2x8x32xbf16>, tensor<16x32xbf16>) -> tensor<2x8x16xbf16>
  %5 = titan.cast %4 : tensor<2x8x16xbf16> to tensor<2x8x16xf32>
  %6 = titan.linear_grad_weight %dy32, %x32 : (tensor<2x8x16xf32>, tensor<2x8x32xf32>) -> tensor<16x32xf32>
  %7 = titan.cast %6 : tensor<16x32xf32> to tensor<16x32xbf16>
  return %1, %0, %3, %5, %7 : tensor<16x32xf32>, tensor<16x32xbf16>, tensor<16x32xf64>, tensor<2x8x16xf32>, tensor<16x32xbf16>
}
