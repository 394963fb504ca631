// RUN: titan-opt %s -split-input-file -dist-batch-parameter-amaxes | FileCheck %s

// FSDP-gathered parameters' amaxes all-reduced by maximum (a shard's bf16
// copy, a float8 all-gather's f32 shard) move to the step's start: one
// vector per group of ranks, one all-reduce each, in program order; each
// value is a one-element slice (the vector itself for a group of one), and
// the float8 scale reading one moves up with it. The first op being one of
// them (the builder's point) is fine. An activation's amax (silu's result)
// and an unsharded parameter's (no gather: its amax stays fused into the
// cast that reads it) stay where they are; a cast with another user stays.
// CHECK-LABEL: func.func @parameters(
// CHECK-SAME:  %[[W1:[^:]*]]: tensor<4x8xf32> {titan.param = "w1"}, %[[W2:[^:]*]]: tensor<2x8xf32> {titan.param = "w2"}, %[[W3:[^:]*]]: tensor<4x8xf32> {titan.param = "w3"}, %[[W4:[^:]*]]: tensor<4x8xf32> {titan.param = "w4"}, %[[X:[^:]*]]: tensor<4x8xbf16>
// CHECK-NEXT:  %[[A3:.*]] = titan.amax %[[W3]] : tensor<4x8xf32> -> tensor<f32>
// CHECK-NEXT:  %[[E3:.*]] = titan.reshape %[[A3]] : tensor<f32> -> tensor<1xf32>
// CHECK-NEXT:  %[[F3:.*]] = dist.all_reduce_start %[[E3]] axes ["dp_shard", "tp"] reduction max : tensor<1xf32>
// CHECK-NEXT:  %[[R3:.*]] = dist.wait %[[F3]]
// CHECK-NEXT:  %[[M3:.*]] = titan.reshape %[[R3]] : tensor<1xf32> -> tensor<f32>
// CHECK-NEXT:  %[[C1:.*]] = titan.cast %[[W1]] : tensor<4x8xf32> to tensor<4x8xbf16>
// CHECK-NEXT:  %[[A1:.*]] = titan.amax %[[C1]] : tensor<4x8xbf16> -> tensor<f32>
// CHECK-NEXT:  %[[E1:.*]] = titan.reshape %[[A1]] : tensor<f32> -> tensor<1xf32>
// CHECK-NEXT:  %[[A2:.*]] = titan.amax %[[W2]] : tensor<2x8xf32> -> tensor<f32>
// CHECK-NEXT:  %[[E2:.*]] = titan.reshape %[[A2]] : tensor<f32> -> tensor<1xf32>
// CHECK-NEXT:  %[[V:.*]] = titan.concat %[[E1]], %[[E2]] dim 0 : tensor<1xf32>, tensor<1xf32> -> tensor<2xf32>
// CHECK-NEXT:  %[[F:.*]] = dist.all_reduce_start %[[V]] axes ["dp_shard"] reduction max : tensor<2xf32>
// CHECK-NEXT:  %[[R:.*]] = dist.wait %[[F]]
// CHECK-NEXT:  %[[S1:.*]] = titan.slice %[[R]] [0] : tensor<2xf32> -> tensor<1xf32>
// CHECK-NEXT:  %[[M1:.*]] = titan.reshape %[[S1]] : tensor<1xf32> -> tensor<f32>
// CHECK-NEXT:  %[[SC:.*]] = titan.float8_scale %[[M1]] for f8E4M3FN
// CHECK-NEXT:  %[[S2:.*]] = titan.slice %[[R]] [1] : tensor<2xf32> -> tensor<1xf32>
// CHECK-NEXT:  %[[M2:.*]] = titan.reshape %[[S2]] : tensor<1xf32> -> tensor<f32>
// CHECK-NEXT:  dist.all_gather_start %[[W3]]
// CHECK-NEXT:  dist.wait
// CHECK-NEXT:  %[[Y:.*]] = titan.silu %[[X]]
// CHECK-NEXT:  %[[G1:.*]] = titan.cast %[[W1]] : tensor<4x8xf32> to tensor<4x8xbf16>
// CHECK-NEXT:  dist.all_gather_start %[[G1]]
// CHECK-NEXT:  dist.wait
// CHECK-NEXT:  dist.all_gather_start %[[W2]]
// CHECK-NEXT:  dist.wait
// CHECK-NEXT:  %[[AX:.*]] = titan.amax %[[Y]]
// CHECK-NEXT:  %[[FX:.*]] = dist.all_reduce_start %[[AX]]
// CHECK-NEXT:  %[[MX:.*]] = dist.wait %[[FX]]
// CHECK-NEXT:  %[[A4:.*]] = titan.amax %[[W4]]
// CHECK-NEXT:  %[[F4:.*]] = dist.all_reduce_start %[[A4]]
// CHECK-NEXT:  %[[M4:.*]] = dist.wait %[[F4]]
// CHECK-NEXT:  return %[[SC]], %[[M2]], %[[M3]], %[[MX]], %[[M4]]
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 2, cp = 1, tp = 2>} {
  func.func @parameters(%w1: tensor<4x8xf32> {titan.param = "w1"}, %w2: tensor<2x8xf32> {titan.param = "w2"}, %w3: tensor<4x8xf32> {titan.param = "w3"}, %w4: tensor<4x8xf32> {titan.param = "w4"}, %x: tensor<4x8xbf16>) -> (tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) {
    %a3 = titan.amax %w3 : tensor<4x8xf32> -> tensor<f32>
    %r3 = dist.all_reduce_start %a3 axes ["dp_shard", "tp"] reduction max : tensor<f32> -> !dist.future<tensor<f32>>
    %g3 = dist.all_gather_start %w3 axes ["dp_shard"] dim 0 : tensor<4x8xf32> -> !dist.future<tensor<8x8xf32>>
    %g3w = dist.wait %g3 : !dist.future<tensor<8x8xf32>>
    %m3 = dist.wait %r3 : !dist.future<tensor<f32>>
    %y = titan.silu %x : tensor<4x8xbf16>
    %c1 = titan.cast %w1 : tensor<4x8xf32> to tensor<4x8xbf16>
    %g1 = dist.all_gather_start %c1 axes ["dp_shard"] dim 0 : tensor<4x8xbf16> -> !dist.future<tensor<8x8xbf16>>
    %g1w = dist.wait %g1 : !dist.future<tensor<8x8xbf16>>
    %a1 = titan.amax %c1 : tensor<4x8xbf16> -> tensor<f32>
    %r1 = dist.all_reduce_start %a1 axes ["dp_shard"] reduction max : tensor<f32> -> !dist.future<tensor<f32>>
    %m1 = dist.wait %r1 : !dist.future<tensor<f32>>
    %s1 = titan.float8_scale %m1 for f8E4M3FN : tensor<f32>
    %g2 = dist.all_gather_start %w2 axes ["dp_shard"] dim 0 : tensor<2x8xf32> -> !dist.future<tensor<4x8xf32>>
    %g2w = dist.wait %g2 : !dist.future<tensor<4x8xf32>>
    %a2 = titan.amax %w2 : tensor<2x8xf32> -> tensor<f32>
    %r2 = dist.all_reduce_start %a2 axes ["dp_shard"] reduction max : tensor<f32> -> !dist.future<tensor<f32>>
    %m2 = dist.wait %r2 : !dist.future<tensor<f32>>
    %ax = titan.amax %y : tensor<4x8xbf16> -> tensor<f32>
    %rx = dist.all_reduce_start %ax axes ["dp_shard"] reduction max : tensor<f32> -> !dist.future<tensor<f32>>
    %mx = dist.wait %rx : !dist.future<tensor<f32>>
    %a4 = titan.amax %w4 : tensor<4x8xf32> -> tensor<f32>
    %r4 = dist.all_reduce_start %a4 axes ["tp"] reduction max : tensor<f32> -> !dist.future<tensor<f32>>
    %m4 = dist.wait %r4 : !dist.future<tensor<f32>>
    return %s1, %m2, %m3, %mx, %m4 : tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>
  }
}

// -----

// A parameter read the same way twice (a pipeline stage's microbatches)
// has one amax, read twice through the same slice; read through other
// casts, it has its own. An axiswise amax stays.
// CHECK-LABEL: func.func @shared(
// CHECK-NEXT:  %[[A:.*]] = titan.amax %arg0 : tensor<4x8xf32> -> tensor<f32>
// CHECK-NEXT:  titan.reshape %[[A]]
// CHECK-NEXT:  %[[C:.*]] = titan.cast %arg0 : tensor<4x8xf32> to tensor<4x8xbf16>
// CHECK-NEXT:  %[[B:.*]] = titan.amax %[[C]] : tensor<4x8xbf16> -> tensor<f32>
// CHECK-NEXT:  titan.reshape %[[B]]
// CHECK-NEXT:  titan.concat
// CHECK-NEXT:  %[[F:.*]] = dist.all_reduce_start %{{.*}} : tensor<2xf32>
// CHECK-NEXT:  %[[R:.*]] = dist.wait %[[F]]
// CHECK-NEXT:  titan.slice %[[R]] [0]
// CHECK-NEXT:  titan.reshape
// CHECK-NEXT:  titan.slice %[[R]] [0]
// CHECK-NEXT:  titan.reshape
// CHECK-NEXT:  titan.slice %[[R]] [1]
// CHECK-NEXT:  titan.reshape
// CHECK-NEXT:  dist.all_gather_start %arg0
// CHECK-NEXT:  dist.wait
// CHECK-NEXT:  titan.amax %arg0 {dims = array<i64: 1>}
// CHECK-NEXT:  return
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 2, cp = 1, tp = 1>} {
  func.func @shared(%w: tensor<4x8xf32> {titan.param = "w"}) -> (tensor<f32>, tensor<f32>, tensor<f32>, tensor<4x1xf32>) {
    %g = dist.all_gather_start %w axes ["dp_shard"] dim 0 : tensor<4x8xf32> -> !dist.future<tensor<8x8xf32>>
    %gw = dist.wait %g : !dist.future<tensor<8x8xf32>>
    %a1 = titan.amax %w : tensor<4x8xf32> -> tensor<f32>
    %r1 = dist.all_reduce_start %a1 axes ["dp_shard"] reduction max : tensor<f32> -> !dist.future<tensor<f32>>
    %m1 = dist.wait %r1 : !dist.future<tensor<f32>>
    %a2 = titan.amax %w : tensor<4x8xf32> -> tensor<f32>
    %r2 = dist.all_reduce_start %a2 axes ["dp_shard"] reduction max : tensor<f32> -> !dist.future<tensor<f32>>
    %m2 = dist.wait %r2 : !dist.future<tensor<f32>>
    %c = titan.cast %w : tensor<4x8xf32> to tensor<4x8xbf16>
    %a3 = titan.amax %c : tensor<4x8xbf16> -> tensor<f32>
    %r3 = dist.all_reduce_start %a3 axes ["dp_shard"] reduction max : tensor<f32> -> !dist.future<tensor<f32>>
    %m3 = dist.wait %r3 : !dist.future<tensor<f32>>
    %rows = titan.amax %w {dims = array<i64: 1>} : tensor<4x8xf32> -> tensor<4x1xf32>
    return %m1, %m2, %m3, %rows : tensor<f32>, tensor<f32>, tensor<f32>, tensor<4x1xf32>
  }
}

// -----

// Two parameters of one type read through the same casts: one element
// each (the reading is the parameter's, not only its types').
// CHECK-LABEL: func.func @same_type(
// CHECK:       titan.concat %{{.*}}, %{{.*}} dim 0 : tensor<1xf32>, tensor<1xf32> -> tensor<2xf32>
// CHECK:       titan.slice %{{.*}} [0]
// CHECK:       titan.slice %{{.*}} [1]
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 2, cp = 1, tp = 1>} {
  func.func @same_type(%u: tensor<4x8xf32> {titan.param = "u"}, %v: tensor<4x8xf32> {titan.param = "v"}) -> (tensor<f32>, tensor<f32>) {
    %gu = dist.all_gather_start %u axes ["dp_shard"] dim 0 : tensor<4x8xf32> -> !dist.future<tensor<8x8xf32>>
    %gv = dist.all_gather_start %v axes ["dp_shard"] dim 0 : tensor<4x8xf32> -> !dist.future<tensor<8x8xf32>>
    %gwu = dist.wait %gu : !dist.future<tensor<8x8xf32>>
    %gwv = dist.wait %gv : !dist.future<tensor<8x8xf32>>
    %a = titan.amax %u : tensor<4x8xf32> -> tensor<f32>
    %r = dist.all_reduce_start %a axes ["dp_shard"] reduction max : tensor<f32> -> !dist.future<tensor<f32>>
    %m = dist.wait %r : !dist.future<tensor<f32>>
    %b = titan.amax %v : tensor<4x8xf32> -> tensor<f32>
    %r2 = dist.all_reduce_start %b axes ["dp_shard"] reduction max : tensor<f32> -> !dist.future<tensor<f32>>
    %m2 = dist.wait %r2 : !dist.future<tensor<f32>>
    return %m, %m2 : tensor<f32>, tensor<f32>
  }
}
