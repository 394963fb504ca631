// Tensor-parallel Float8 linears (split_dims from dist-partition's rule):
// an amax over a dimension split across the tp ranks is all-reduced (max)
// over them, so every rank scales with the whole tensor's amax; an amax
// along an unsplit dimension stays local.
// RUN: titan-opt %s -split-input-file -titan-expand-float8 | FileCheck %s

// Column-wise (weight rows split): the weight's tensorwise amax is
// reduced; the replicated input's is not.
// CHECK-LABEL: func.func @colwise_tensorwise(
// CHECK:       %[[AX:.*]] = titan.amax %arg0 : tensor<2x8x32xbf16> -> tensor<f32>
// CHECK-NEXT:  titan.float8_scale %[[AX]] for f8E4M3FN
// CHECK:       %[[AW:.*]] = titan.amax %arg1 : tensor<16x32xbf16> -> tensor<f32>
// CHECK-NEXT:  %[[F:.*]] = dist.all_reduce_start %[[AW]] axes ["tp"] {reduction = "max"}
// CHECK-NEXT:  %[[W:.*]] = dist.wait %[[F]]
// CHECK-NEXT:  titan.float8_scale %[[W]] for f8E4M3FN
// CHECK:       titan.scaled_matmul "linear" {{.*}} -> tensor<2x8x16xbf16>
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 2>} {
  func.func @colwise_tensorwise(%x: tensor<2x8x32xbf16>, %w: tensor<16x32xbf16>) -> tensor<2x8x16xbf16> {
    %y = titan.float8_linear %x, %w {recipe = "tensorwise", split_dims = array<i64: -1, 0, 2>, split_axes = ["tp"]} : (tensor<2x8x32xbf16>, tensor<16x32xbf16>) -> tensor<2x8x16xbf16>
    return %y : tensor<2x8x16xbf16>
  }
}

// -----

// Row-wise parallel, rowwise scaling: input and weight are split along K,
// the dimension their row amaxes reduce: both are all-reduced.
// CHECK-LABEL: func.func @rowwise_parallel(
// CHECK:       titan.amax %arg0 {dims = array<i64: 2>}
// CHECK-NEXT:  dist.all_reduce_start {{.*}} axes ["tp"] {reduction = "max"}
// CHECK:       titan.amax %arg1 {dims = array<i64: 1>}
// CHECK-NEXT:  dist.all_reduce_start {{.*}} axes ["tp"] {reduction = "max"}
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 2>} {
  func.func @rowwise_parallel(%x: tensor<2x8x16xbf16>, %w: tensor<32x16xbf16>) -> tensor<2x8x32xbf16> {
    %y = titan.float8_linear %x, %w {recipe = "rowwise", split_dims = array<i64: 2, 1, -1>, split_axes = ["tp"]} : (tensor<2x8x16xbf16>, tensor<32x16xbf16>) -> tensor<2x8x32xbf16>
    return %y : tensor<2x8x32xbf16>
  }
}

// -----

// The gradient of a column-wise linear's output is split along N: its
// row amaxes (rowwise grad_input) are reduced over tp, its column amaxes
// (grad_weight, along the tokens) are not.
// CHECK-LABEL: func.func @colwise_grads(
// CHECK:       titan.amax %arg0 {dims = array<i64: 2>}
// CHECK-NEXT:  dist.all_reduce_start {{.*}} {reduction = "max"}
// CHECK:       titan.scaled_matmul "grad_input"
// CHECK:       titan.amax %arg0 {dims = array<i64: 0, 1>}
// CHECK-NOT:   dist.all_reduce_start
// CHECK:       titan.scaled_matmul "grad_weight"
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 2>} {
  func.func @colwise_grads(%dy: tensor<2x8x16xbf16>, %w: tensor<16x32xbf16>, %x: tensor<2x8x32xbf16>) -> (tensor<2x8x32xbf16>, tensor<16x32xbf16>) {
    %dx = titan.float8_linear_grad_input %dy, %w {recipe = "rowwise", split_dims = array<i64: 2, 0, -1>, split_axes = ["tp"]} : (tensor<2x8x16xbf16>, tensor<16x32xbf16>) -> tensor<2x8x32xbf16>
    %dw = titan.float8_linear_grad_weight %dy, %x {recipe = "rowwise", split_dims = array<i64: 2, -1, 0>, split_axes = ["tp"]} : (tensor<2x8x16xbf16>, tensor<2x8x32xbf16>) -> tensor<16x32xbf16>
    return %dx, %dw : tensor<2x8x32xbf16>, tensor<16x32xbf16>
  }
}
