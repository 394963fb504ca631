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
// CHECK-NEXT:  %[[F:.*]] = dist.all_reduce_start %[[AW]] axes ["tp"] reduction max
// CHECK-NEXT:  %[[W:.*]] = dist.wait %[[F]]
// CHECK-NEXT:  titan.float8_scale %[[W]] for f8E4M3FN
// CHECK:       titan.scaled_matmul linear {{.*}} -> tensor<2x8x16xbf16>
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 2>} {
  func.func @colwise_tensorwise(%x: tensor<2x8x32xbf16>, %w: tensor<16x32xbf16>) -> tensor<2x8x16xbf16> {
    %y = titan.float8_linear %x, %w recipe tensorwise {split_dims = array<i64: -1, 0, 2>, split_axes = ["tp"]} : (tensor<2x8x32xbf16>, tensor<16x32xbf16>) -> tensor<2x8x16xbf16>
    return %y : tensor<2x8x16xbf16>
  }
}

// -----

// Row-wise parallel, rowwise scaling: input and weight are split along K,
// the dimension their row amaxes reduce: both are all-reduced.
// CHECK-LABEL: func.func @rowwise_parallel(
// CHECK:       titan.amax %arg0 {dims = array<i64: 2>}
// CHECK-NEXT:  dist.all_reduce_start {{.*}} axes ["tp"] reduction max
// CHECK:       titan.amax %arg1 {dims = array<i64: 1>}
// CHECK-NEXT:  dist.all_reduce_start {{.*}} axes ["tp"] reduction max
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 2>} {
  func.func @rowwise_parallel(%x: tensor<2x8x16xbf16>, %w: tensor<32x16xbf16>) -> tensor<2x8x32xbf16> {
    %y = titan.float8_linear %x, %w recipe rowwise {split_dims = array<i64: 2, 1, -1>, split_axes = ["tp"]} : (tensor<2x8x16xbf16>, tensor<32x16xbf16>) -> tensor<2x8x32xbf16>
    return %y : tensor<2x8x32xbf16>
  }
}

// -----

// The gradient of a column-wise linear's output is split along N: its
// row amaxes (rowwise grad_input) are reduced over tp, its column amaxes
// (grad_weight, along the tokens) are not.
// CHECK-LABEL: func.func @colwise_grads(
// CHECK:       titan.amax %arg0 {dims = array<i64: 2>}
// CHECK-NEXT:  dist.all_reduce_start {{.*}} reduction max
// CHECK:       titan.scaled_matmul grad_input {{.*}} {rhs_transposed}
// CHECK:       titan.amax %arg0 {dims = array<i64: 0, 1>}
// CHECK-NOT:   dist.all_reduce_start
// CHECK:       titan.quantize %arg0, %{{.*}} {transposed} : (tensor<2x8x16xbf16>, tensor<1x1x16xf32>) -> tensor<16x2x8xf8E4M3FN>
// CHECK:       titan.scaled_matmul grad_weight {{.*}} {lhs_transposed, rhs_transposed}
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 2>} {
  func.func @colwise_grads(%dy: tensor<2x8x16xbf16>, %w: tensor<16x32xbf16>, %x: tensor<2x8x32xbf16>) -> (tensor<2x8x32xbf16>, tensor<16x32xbf16>) {
    %dx = titan.float8_linear_grad_input %dy, %w recipe rowwise {split_dims = array<i64: 2, 0, -1>, split_axes = ["tp"]} : (tensor<2x8x16xbf16>, tensor<16x32xbf16>) -> tensor<2x8x32xbf16>
    %dw = titan.float8_linear_grad_weight %dy, %x recipe rowwise {split_dims = array<i64: 2, -1, 0>, split_axes = ["tp"]} : (tensor<2x8x16xbf16>, tensor<2x8x32xbf16>) -> tensor<16x32xbf16>
    return %dx, %dw : tensor<2x8x32xbf16>, tensor<16x32xbf16>
  }
}

// -----

// enable_fsdp_float8_all_gather (tensorwise): the weight's f32 shard is
// cast with the whole weight's scale (the shards' amaxes all-reduced over
// dp_shard) and gathered in float8; the high-precision gather and its bf16
// cast are gone; the backward's re-gather reuses the scale.
// RUN: titan-opt %s -split-input-file -titan-expand-float8="fsdp-float8-all-gather=true" | FileCheck %s --check-prefix=GATHER
// GATHER-LABEL: func.func @gathered(
// GATHER-NOT:   all_gather_start %arg1 {{.*}}xf32>
// GATHER:       %[[A:.*]] = titan.amax %arg1 : tensor<8x32xf32> -> tensor<f32>
// GATHER-NEXT:  %[[F:.*]] = dist.all_reduce_start %[[A]] axes ["dp_shard"] reduction max
// GATHER-NEXT:  %[[M:.*]] = dist.wait %[[F]]
// GATHER-NEXT:  %[[S:.*]] = titan.float8_scale %[[M]] for f8E4M3FN : tensor<f32>
// GATHER-NEXT:  %[[Q:.*]] = titan.quantize %arg1, %[[S]] : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf8E4M3FN>
// GATHER-NEXT:  %[[G:.*]] = dist.all_gather_start %[[Q]] axes ["dp_shard"] dim 0 : tensor<8x32xf8E4M3FN> -> !dist.future<tensor<16x32xf8E4M3FN>>
// GATHER-NEXT:  %[[W:.*]] = dist.wait %[[G]]
// GATHER:       titan.scaled_matmul linear %{{.*}}, %{{.*}}, %[[W]], %[[S]]
// GATHER:       %[[Q2:.*]] = titan.quantize %arg1, %[[S]]
// GATHER-NEXT:  dist.all_gather_start %[[Q2]]
// The gathered weight comes row-major (the gather concatenates rows): its
// grad_input takes it untransposed.
// GATHER:       titan.scaled_matmul grad_input %{{.*}}, %{{.*}}, %{{.*}}, %[[S]] : (
// GATHER-NOT:   titan.cast
// Two GEMMs reading one gathered weight (a recomputed block's linear and
// its grad_input, which FSDP's backward re-gather serves together) read
// one float8 gather of it.
// GATHER-LABEL: func.func @gathered_once(
// GATHER:       %[[Q:.*]] = titan.quantize %arg1
// GATHER-NEXT:  %[[G:.*]] = dist.all_gather_start %[[Q]]
// GATHER-NEXT:  %[[W:.*]] = dist.wait %[[G]]
// GATHER:       titan.scaled_matmul linear %{{.*}}, %{{.*}}, %[[W]]
// GATHER-NOT:   dist.all_gather_start
// GATHER:       titan.scaled_matmul grad_input %{{.*}}, %{{.*}}, %[[W]]
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 2, cp = 1, tp = 1>} {
  func.func @gathered(%x: tensor<2x8x32xbf16>, %w: tensor<8x32xf32> {titan.param = "layers.0.attention.wq.weight"}, %dy: tensor<2x8x16xbf16>) -> (tensor<2x8x16xbf16>, tensor<2x8x32xbf16>) {
    %f = dist.all_gather_start %w axes ["dp_shard"] dim 0 : tensor<8x32xf32> -> !dist.future<tensor<16x32xf32>>
    %g = dist.wait %f : !dist.future<tensor<16x32xf32>>
    %c = titan.cast %g : tensor<16x32xf32> to tensor<16x32xbf16>
    %y = titan.float8_linear %x, %c recipe tensorwise : (tensor<2x8x32xbf16>, tensor<16x32xbf16>) -> tensor<2x8x16xbf16>
    %f2 = dist.all_gather_start %w axes ["dp_shard"] dim 0 : tensor<8x32xf32> -> !dist.future<tensor<16x32xf32>>
    %g2 = dist.wait %f2 : !dist.future<tensor<16x32xf32>>
    %c2 = titan.cast %g2 : tensor<16x32xf32> to tensor<16x32xbf16>
    %dx = titan.float8_linear_grad_input %dy, %c2 recipe tensorwise : (tensor<2x8x16xbf16>, tensor<16x32xbf16>) -> tensor<2x8x32xbf16>
    return %y, %dx : tensor<2x8x16xbf16>, tensor<2x8x32xbf16>
  }
  func.func @gathered_once(%x: tensor<2x8x32xbf16>, %w: tensor<8x32xf32> {titan.param = "layers.0.attention.wq.weight"}, %dy: tensor<2x8x16xbf16>) -> (tensor<2x8x16xbf16>, tensor<2x8x32xbf16>) {
    %f = dist.all_gather_start %w axes ["dp_shard"] dim 0 : tensor<8x32xf32> -> !dist.future<tensor<16x32xf32>>
    %g = dist.wait %f : !dist.future<tensor<16x32xf32>>
    %c = titan.cast %g : tensor<16x32xf32> to tensor<16x32xbf16>
    %y = titan.float8_linear %x, %c recipe tensorwise : (tensor<2x8x32xbf16>, tensor<16x32xbf16>) -> tensor<2x8x16xbf16>
    %dx = titan.float8_linear_grad_input %dy, %c recipe tensorwise : (tensor<2x8x16xbf16>, tensor<16x32xbf16>) -> tensor<2x8x32xbf16>
    return %y, %dx : tensor<2x8x16xbf16>, tensor<2x8x32xbf16>
  }
}

// -----

// One value cast one way is cast once: the q and k projections share
// their input's amax, scale and float8 copy; the gradient's amax and scale
// serve both its GEMMs (grad_input untransposed, grad_weight transposed);
// the backward's re-gather of a weight reuses the forward's amax and scale
// (the same shard gathered), and only its transposed copy is new.
// SHARE-LABEL: func.func @shared(
// SHARE:       %[[AX:.*]] = titan.amax %arg0
// SHARE-NEXT:  %[[SX:.*]] = titan.float8_scale %[[AX]] for f8E4M3FN
// SHARE-NEXT:  %[[QX:.*]] = titan.quantize %arg0, %[[SX]] :
// SHARE:       %[[AW:.*]] = titan.amax %{{.*}} : tensor<16x32xbf16>
// SHARE-NEXT:  %[[SW:.*]] = titan.float8_scale %[[AW]] for f8E4M3FN
// SHARE:       titan.scaled_matmul linear %[[QX]], %[[SX]]
// SHARE-NOT:   titan.amax %arg0
// SHARE:       titan.scaled_matmul linear %[[QX]], %[[SX]]
// SHARE:       %[[AD:.*]] = titan.amax %arg3
// SHARE-NEXT:  %[[SD:.*]] = titan.float8_scale %[[AD]] for f8E5M2
// SHARE-NEXT:  titan.quantize %arg3, %[[SD]] :
// SHARE-NEXT:  titan.quantize %{{.*}}, %[[SW]] {transposed}
// SHARE-NEXT:  titan.scaled_matmul grad_input
// SHARE-NEXT:  titan.quantize %arg3, %[[SD]] {transposed}
// SHARE-NEXT:  titan.quantize %arg0, %[[SX]] {transposed}
// SHARE-NEXT:  titan.scaled_matmul grad_weight
// RUN: titan-opt %s -split-input-file -titan-expand-float8 | FileCheck %s --check-prefix=SHARE
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 2, cp = 1, tp = 1>} {
  func.func @shared(%x: tensor<2x8x32xbf16>, %w: tensor<8x32xf32> {titan.param = "layers.0.attention.wq.weight"}, %wk: tensor<16x32xbf16>, %dy: tensor<2x8x16xbf16>) -> (tensor<2x8x16xbf16>, tensor<2x8x16xbf16>, tensor<2x8x32xbf16>, tensor<16x32xbf16>) {
    %f = dist.all_gather_start %w axes ["dp_shard"] dim 0 : tensor<8x32xf32> -> !dist.future<tensor<16x32xf32>>
    %g = dist.wait %f : !dist.future<tensor<16x32xf32>>
    %c = titan.cast %g : tensor<16x32xf32> to tensor<16x32xbf16>
    %q = titan.float8_linear %x, %c recipe tensorwise : (tensor<2x8x32xbf16>, tensor<16x32xbf16>) -> tensor<2x8x16xbf16>
    %k = titan.float8_linear %x, %wk recipe tensorwise : (tensor<2x8x32xbf16>, tensor<16x32xbf16>) -> tensor<2x8x16xbf16>
    %f2 = dist.all_gather_start %w axes ["dp_shard"] dim 0 : tensor<8x32xf32> -> !dist.future<tensor<16x32xf32>>
    %g2 = dist.wait %f2 : !dist.future<tensor<16x32xf32>>
    %c2 = titan.cast %g2 : tensor<16x32xf32> to tensor<16x32xbf16>
    %dx = titan.float8_linear_grad_input %dy, %c2 recipe tensorwise : (tensor<2x8x16xbf16>, tensor<16x32xbf16>) -> tensor<2x8x32xbf16>
    %dw = titan.float8_linear_grad_weight %dy, %x recipe tensorwise : (tensor<2x8x16xbf16>, tensor<2x8x32xbf16>) -> tensor<16x32xbf16>
    return %q, %k, %dx, %dw : tensor<2x8x16xbf16>, tensor<2x8x16xbf16>, tensor<2x8x32xbf16>, tensor<16x32xbf16>
  }
}

// -----

// Activation checkpointing's recompute copies the forward's ops onto the
// same values (titan.recomputed): the recomputed RMSNorm output, read by
// the re-gathered weight's recomputed linear and the weight gradient, has
// the forward's bits, so its casts reuse the forward's amax and scale (one
// amax of the activation in the step). A value computed differently (the
// second RMSNorm, another epsilon) has its own.
// RECOMPUTE-LABEL: func.func @recomputed(
// RECOMPUTE:       %[[N:.*]] = titan.rms_norm %arg0, %arg2 {eps = 1.000000e-05 : f64}
// RECOMPUTE-NEXT:  %[[A:.*]] = titan.amax %[[N]]
// RECOMPUTE-NEXT:  %[[S:.*]] = titan.float8_scale %[[A]] for f8E4M3FN
// RECOMPUTE:       %[[R:.*]] = titan.rms_norm %arg0, %arg2 {eps = 1.000000e-05 : f64, titan.recomputed}
// RECOMPUTE-NOT:   titan.amax %[[R]]
// RECOMPUTE:       titan.quantize %[[R]], %[[S]] :
// RECOMPUTE:       titan.quantize %[[R]], %[[S]] {transposed}
// RECOMPUTE:       %[[O:.*]] = titan.rms_norm %arg0, %arg2 {eps = {{.*}}E-7 : f64, titan.recomputed}
// RECOMPUTE:       titan.amax %[[O]]
// RUN: titan-opt %s -split-input-file -titan-expand-float8 | FileCheck %s --check-prefix=RECOMPUTE
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 2, cp = 1, tp = 1>} {
  func.func @recomputed(%x: tensor<2x8x32xbf16>, %w: tensor<8x32xf32> {titan.param = "layers.0.attention.wq.weight"}, %n: tensor<32xbf16>, %dy: tensor<2x8x16xbf16>) -> (tensor<2x8x16xbf16>, tensor<2x8x16xbf16>, tensor<16x32xbf16>, tensor<2x8x16xbf16>) {
    %f = dist.all_gather_start %w axes ["dp_shard"] dim 0 : tensor<8x32xf32> -> !dist.future<tensor<16x32xf32>>
    %g = dist.wait %f : !dist.future<tensor<16x32xf32>>
    %c = titan.cast %g : tensor<16x32xf32> to tensor<16x32xbf16>
    %h = titan.rms_norm %x, %n {eps = 1.0e-5 : f64} : (tensor<2x8x32xbf16>, tensor<32xbf16>) -> tensor<2x8x32xbf16>
    %y = titan.float8_linear %h, %c recipe tensorwise : (tensor<2x8x32xbf16>, tensor<16x32xbf16>) -> tensor<2x8x16xbf16>
    %f2 = dist.all_gather_start %w axes ["dp_shard"] dim 0 : tensor<8x32xf32> -> !dist.future<tensor<16x32xf32>>
    %g2 = dist.wait %f2 : !dist.future<tensor<16x32xf32>>
    %c2 = titan.cast %g2 : tensor<16x32xf32> to tensor<16x32xbf16>
    %r = titan.rms_norm %x, %n {eps = 1.0e-5 : f64, titan.recomputed} : (tensor<2x8x32xbf16>, tensor<32xbf16>) -> tensor<2x8x32xbf16>
    %y2 = titan.float8_linear %r, %c2 recipe tensorwise {titan.recomputed} : (tensor<2x8x32xbf16>, tensor<16x32xbf16>) -> tensor<2x8x16xbf16>
    %dw = titan.float8_linear_grad_weight %dy, %r recipe tensorwise : (tensor<2x8x16xbf16>, tensor<2x8x32xbf16>) -> tensor<16x32xbf16>
    %o = titan.rms_norm %x, %n {eps = 1.0e-6 : f64, titan.recomputed} : (tensor<2x8x32xbf16>, tensor<32xbf16>) -> tensor<2x8x32xbf16>
    %y3 = titan.float8_linear %o, %c2 recipe tensorwise : (tensor<2x8x32xbf16>, tensor<16x32xbf16>) -> tensor<2x8x16xbf16>
    return %y, %y2, %dw, %y3 : tensor<2x8x16xbf16>, tensor<2x8x16xbf16>, tensor<16x32xbf16>, tensor<2x8x16xbf16>
  }
}
