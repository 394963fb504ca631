// RUN: titan-opt %s -split-input-file -dist-narrow-gathers | FileCheck %s
// RUN: echo 'module {}' | not titan-opt -titan-mixed-precision=param-type=f8 2>&1 | FileCheck %s --check-prefix=TYPE
// TYPE: titan-mixed-precision: param-type must be bf16, f16 or f32, got 'f8'

// A narrowing cast, the gathered value's only user, moves before the
// gather: the gather moves bf16.
// CHECK-LABEL: func.func @narrow(
// CHECK-SAME: %[[W:.*]]: tensor<4x8xf32>
// CHECK-NEXT: %[[C:.*]] = titan.cast %[[W]] : tensor<4x8xf32> to tensor<4x8xbf16>
// CHECK-NEXT: %[[F:.*]] = dist.all_gather_start %[[C]] axes ["dp_shard"] dim 0 : tensor<4x8xbf16> -> !dist.future<tensor<8x8xbf16>>
// CHECK-NEXT: %[[G:.*]] = dist.wait %[[F]] : !dist.future<tensor<8x8xbf16>>
// CHECK-NEXT: return %[[G]]
// Other uses of the gathered f32 value, or a widening cast: unchanged.
// CHECK-LABEL: func.func @kept(
// CHECK:      dist.all_gather_start %{{.*}} : tensor<4x8xf32> -> !dist.future<tensor<8x8xf32>>
// CHECK:      titan.cast %{{.*}} : tensor<8x8xf32> to tensor<8x8xbf16>
// CHECK:      dist.all_gather_start %{{.*}} : tensor<4x8xbf16> -> !dist.future<tensor<8x8xbf16>>
// CHECK:      titan.cast %{{.*}} : tensor<8x8xbf16> to tensor<8x8xf32>
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 2, cp = 1, tp = 1>} {
  func.func @narrow(%w: tensor<4x8xf32>) -> tensor<8x8xbf16> {
    %f = dist.all_gather_start %w axes ["dp_shard"] dim 0 : tensor<4x8xf32> -> !dist.future<tensor<8x8xf32>>
    %g = dist.wait %f : !dist.future<tensor<8x8xf32>>
    %c = titan.cast %g : tensor<8x8xf32> to tensor<8x8xbf16>
    return %c : tensor<8x8xbf16>
  }
  func.func @kept(%w: tensor<4x8xf32>, %h: tensor<4x8xbf16>) -> (tensor<8x8xbf16>, tensor<8x8xf32>, tensor<8x8xf32>) {
    %f = dist.all_gather_start %w axes ["dp_shard"] dim 0 : tensor<4x8xf32> -> !dist.future<tensor<8x8xf32>>
    %g = dist.wait %f : !dist.future<tensor<8x8xf32>>
    %c = titan.cast %g : tensor<8x8xf32> to tensor<8x8xbf16>
    %f2 = dist.all_gather_start %h axes ["dp_shard"] dim 0 : tensor<4x8xbf16> -> !dist.future<tensor<8x8xbf16>>
    %g2 = dist.wait %f2 : !dist.future<tensor<8x8xbf16>>
    %wide = titan.cast %g2 : tensor<8x8xbf16> to tensor<8x8xf32>
    return %c, %g, %wide : tensor<8x8xbf16>, tensor<8x8xf32>, tensor<8x8xf32>
  }
}

// -----

// A re-gathered weight whose float8 casts use a scale known where the
// gather starts (the forward's, as FSDP re-gathers for the backward): each
// rank casts its shard, the gather moves float8, and the transposed cast
// is the gathered float8 weight transposed (the same bits).
// CHECK-LABEL: func.func @float8(
// CHECK-SAME:  %[[W:[^:]*]]: tensor<4x8xbf16>, %[[S:[^:]*]]: tensor<f32>
// CHECK-NEXT:  %[[Q:.*]] = titan.quantize %[[W]], %[[S]] : (tensor<4x8xbf16>, tensor<f32>) -> tensor<4x8xf8E4M3FN>
// CHECK-NEXT:  %[[F:.*]] = dist.all_gather_start %[[Q]] axes ["dp_shard"] dim 0 : tensor<4x8xf8E4M3FN> -> !dist.future<tensor<8x8xf8E4M3FN>>
// CHECK-NEXT:  %[[G:.*]] = dist.wait %[[F]] : !dist.future<tensor<8x8xf8E4M3FN>>
// CHECK-NEXT:  %[[T:.*]] = titan.transpose %[[G]] : tensor<8x8xf8E4M3FN> -> tensor<8x8xf8E4M3FN>
// CHECK-NEXT:  return %[[G]], %[[T]]
// The scale comes after the gather (the forward's own amax), the casts
// disagree on the scale, or something else reads the gathered weight:
// unchanged.
// CHECK-LABEL: func.func @float8_kept(
// CHECK-COUNT-3: dist.all_gather_start %{{.*}} : tensor<4x8xbf16> -> !dist.future<tensor<8x8xbf16>>
// CHECK-NOT:   titan.transpose
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 2, cp = 1, tp = 1>} {
  func.func @float8(%w: tensor<4x8xbf16>, %s: tensor<f32>) -> (tensor<8x8xf8E4M3FN>, tensor<8x8xf8E4M3FN>) {
    %f = dist.all_gather_start %w axes ["dp_shard"] dim 0 : tensor<4x8xbf16> -> !dist.future<tensor<8x8xbf16>>
    %g = dist.wait %f : !dist.future<tensor<8x8xbf16>>
    %q = titan.quantize %g, %s : (tensor<8x8xbf16>, tensor<f32>) -> tensor<8x8xf8E4M3FN>
    %qt = titan.quantize %g, %s {transposed} : (tensor<8x8xbf16>, tensor<f32>) -> tensor<8x8xf8E4M3FN>
    return %q, %qt : tensor<8x8xf8E4M3FN>, tensor<8x8xf8E4M3FN>
  }
  func.func @float8_kept(%w: tensor<4x8xbf16>, %s: tensor<f32>) -> (tensor<8x8xf8E4M3FN>, tensor<8x8xf8E4M3FN>, tensor<8x8xf8E4M3FN>, tensor<8x8xbf16>) {
    %f = dist.all_gather_start %w axes ["dp_shard"] dim 0 : tensor<4x8xbf16> -> !dist.future<tensor<8x8xbf16>>
    %g = dist.wait %f : !dist.future<tensor<8x8xbf16>>
    %a = titan.amax %g : tensor<8x8xbf16> -> tensor<f32>
    %own = titan.float8_scale %a for f8E4M3FN : tensor<f32>
    %q = titan.quantize %g, %own : (tensor<8x8xbf16>, tensor<f32>) -> tensor<8x8xf8E4M3FN>
    %f2 = dist.all_gather_start %w axes ["dp_shard"] dim 0 : tensor<4x8xbf16> -> !dist.future<tensor<8x8xbf16>>
    %g2 = dist.wait %f2 : !dist.future<tensor<8x8xbf16>>
    %q2 = titan.quantize %g2, %s : (tensor<8x8xbf16>, tensor<f32>) -> tensor<8x8xf8E4M3FN>
    %q3 = titan.quantize %g2, %own : (tensor<8x8xbf16>, tensor<f32>) -> tensor<8x8xf8E4M3FN>
    %f3 = dist.all_gather_start %w axes ["dp_shard"] dim 0 : tensor<4x8xbf16> -> !dist.future<tensor<8x8xbf16>>
    %g3 = dist.wait %f3 : !dist.future<tensor<8x8xbf16>>
    %q4 = titan.quantize %g3, %s : (tensor<8x8xbf16>, tensor<f32>) -> tensor<8x8xf8E4M3FN>
    return %q, %q2, %q4, %g3 : tensor<8x8xf8E4M3FN>, tensor<8x8xf8E4M3FN>, tensor<8x8xf8E4M3FN>, tensor<8x8xbf16>
  }
}

// -----

// Sequence parallel's activation: the scale is the all-reduced amax of the
// shards, computed after the gather starts. Only that computation and the
// gather's wait run in between, so the shard is cast once the scale is
// known and the gather starts then, moving float8 (torchao's
// Float8ColwiseParallel); the backward's transposed cast of the gathered
// value becomes the transpose of the float8 gather.
// CHECK-LABEL: func.func @sequence_parallel(
// CHECK-SAME:  %[[X:[^:]*]]: tensor<2x4x8xbf16>
// CHECK-NEXT:  %[[A:.*]] = titan.amax %[[X]]
// CHECK-NEXT:  %[[R:.*]] = dist.all_reduce_start %[[A]]
// CHECK-NEXT:  %[[M:.*]] = dist.wait %[[R]]
// CHECK-NEXT:  %[[S:.*]] = titan.float8_scale %[[M]]
// CHECK-NEXT:  %[[Q:.*]] = titan.quantize %[[X]], %[[S]] {titan.recompute_region = 1 : i64} : (tensor<2x4x8xbf16>, tensor<f32>) -> tensor<2x4x8xf8E4M3FN>
// CHECK-NEXT:  %[[F:.*]] = dist.all_gather_start %[[Q]] axes ["tp"] dim 1 {titan.recompute_region = 1 : i64} : tensor<2x4x8xf8E4M3FN> -> !dist.future<tensor<2x8x8xf8E4M3FN>>
// CHECK-NEXT:  %[[G:.*]] = dist.wait %[[F]] {titan.recompute_region = 1 : i64} : !dist.future<tensor<2x8x8xf8E4M3FN>>
// CHECK-NEXT:  %[[T:.*]] = titan.transpose %[[G]] : tensor<2x8x8xf8E4M3FN> -> tensor<8x2x8xf8E4M3FN>
// CHECK-NEXT:  return %[[G]], %[[T]]
// Other work between the gather's start and the scale (the gather would no
// longer overlap it): unchanged.
// CHECK-LABEL: func.func @sequence_parallel_kept(
// CHECK:       dist.all_gather_start %{{.*}} : tensor<2x4x8xbf16> -> !dist.future<tensor<2x8x8xbf16>>
// CHECK-NOT:   titan.transpose
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 2>} {
  func.func @sequence_parallel(%x: tensor<2x4x8xbf16>) -> (tensor<2x8x8xf8E4M3FN>, tensor<8x2x8xf8E4M3FN>) {
    %f = dist.all_gather_start %x axes ["tp"] dim 1 {titan.recompute_region = 1 : i64} : tensor<2x4x8xbf16> -> !dist.future<tensor<2x8x8xbf16>>
    %a = titan.amax %x : tensor<2x4x8xbf16> -> tensor<f32>
    %r = dist.all_reduce_start %a axes ["tp"] reduction max : tensor<f32> -> !dist.future<tensor<f32>>
    %g = dist.wait %f {titan.recompute_region = 1 : i64} : !dist.future<tensor<2x8x8xbf16>>
    %m = dist.wait %r : !dist.future<tensor<f32>>
    %s = titan.float8_scale %m for f8E4M3FN : tensor<f32>
    %q = titan.quantize %g, %s {titan.recompute_region = 1 : i64} : (tensor<2x8x8xbf16>, tensor<f32>) -> tensor<2x8x8xf8E4M3FN>
    %qt = titan.quantize %g, %s {transposed} : (tensor<2x8x8xbf16>, tensor<f32>) -> tensor<8x2x8xf8E4M3FN>
    return %q, %qt : tensor<2x8x8xf8E4M3FN>, tensor<8x2x8xf8E4M3FN>
  }
  func.func @sequence_parallel_kept(%x: tensor<2x4x8xbf16>, %y: tensor<2x4x8xbf16>) -> (tensor<2x8x8xf8E4M3FN>, tensor<2x4x8xbf16>) {
    %f = dist.all_gather_start %x axes ["tp"] dim 1 : tensor<2x4x8xbf16> -> !dist.future<tensor<2x8x8xbf16>>
    %a = titan.amax %x : tensor<2x4x8xbf16> -> tensor<f32>
    %r = dist.all_reduce_start %a axes ["tp"] reduction max : tensor<f32> -> !dist.future<tensor<f32>>
    %other = titan.add %y, %y : tensor<2x4x8xbf16>
    %g = dist.wait %f : !dist.future<tensor<2x8x8xbf16>>
    %m = dist.wait %r : !dist.future<tensor<f32>>
    %s = titan.float8_scale %m for f8E4M3FN : tensor<f32>
    %q = titan.quantize %g, %s : (tensor<2x8x8xbf16>, tensor<f32>) -> tensor<2x8x8xf8E4M3FN>
    return %q, %other : tensor<2x8x8xf8E4M3FN>, tensor<2x4x8xbf16>
  }
}
