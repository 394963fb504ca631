// RUN: titan-opt %s -dist-amax-from-shards | FileCheck %s
// RUN: titan-opt %s -dist-amax-from-shards="parameters-only=true" | FileCheck %s --check-prefix=PARAMS

// A gathered weight's amax comes from the shards' amaxes (a max is exact,
// a gather only moves elements): tensorwise, the ranks' maximum, joined
// with tensor parallel's all-reduce; along the rows (the gathered
// dimension kept), the shards' row amaxes gathered; along the columns (the
// gathered dimension reduced), their maximum. The gather stays for the
// weight's other user.
// CHECK-LABEL: func.func @weight(
// CHECK-SAME:  %[[W:[^:]*]]: tensor<4x8xbf16>
// CHECK:       %[[G:.*]] = dist.all_gather_start %[[W]] axes ["dp_shard"] dim 0
// CHECK-NEXT:  %[[C:.*]] = titan.amax %[[W]] {dims = array<i64: 0>} : tensor<4x8xbf16> -> tensor<1x8xf32>
// CHECK-NEXT:  %[[CF:.*]] = dist.all_reduce_start %[[C]] axes ["dp_shard"] reduction max : tensor<1x8xf32>
// CHECK-NEXT:  %[[R:.*]] = titan.amax %[[W]] {dims = array<i64: 1>} : tensor<4x8xbf16> -> tensor<4x1xf32>
// CHECK-NEXT:  %[[RF:.*]] = dist.all_gather_start %[[R]] axes ["dp_shard"] dim 0 : tensor<4x1xf32> -> !dist.future<tensor<8x1xf32>>
// CHECK-NEXT:  %[[T:.*]] = titan.amax %[[W]] : tensor<4x8xbf16> -> tensor<f32>
// CHECK-NEXT:  %[[GW:.*]] = dist.wait %[[G]]
// CHECK-NEXT:  %[[TF:.*]] = dist.all_reduce_start %[[T]] axes ["dp_shard", "tp"] reduction max : tensor<f32>
// CHECK-NEXT:  %[[TW:.*]] = dist.wait %[[TF]]
// CHECK-NEXT:  %[[RW:.*]] = dist.wait %[[RF]]
// CHECK-NEXT:  %[[CW:.*]] = dist.wait %[[CF]]
// CHECK-NEXT:  return %[[TW]], %[[GW]], %[[RW]], %[[CW]]
// CHECK-NOT:   titan.amax %[[GW]]

// An uneven shard (5 rows over 2 ranks, the last zero-padded): the row
// amaxes' gather drops the padding as the weight's did; a padded zero
// never raises the maximum. Nothing else reads the gathered weight, so its
// gather is erased.
// CHECK-LABEL: func.func @uneven(
// CHECK-SAME:  %[[V:[^:]*]]: tensor<3x8xbf16>
// CHECK-NEXT:  %[[R:.*]] = titan.amax %[[V]] {dims = array<i64: 1>} : tensor<3x8xbf16> -> tensor<3x1xf32>
// CHECK-NEXT:  %[[RF:.*]] = dist.all_gather_start %[[R]] axes ["dp_shard"] dim 0 : tensor<3x1xf32> -> !dist.future<tensor<5x1xf32>>
// CHECK-NEXT:  %[[T:.*]] = titan.amax %[[V]] : tensor<3x8xbf16> -> tensor<f32>
// CHECK-NEXT:  %[[TF:.*]] = dist.all_reduce_start %[[T]] axes ["dp_shard"] reduction max
// CHECK-NEXT:  %[[TW:.*]] = dist.wait %[[TF]]
// CHECK-NEXT:  %[[RW:.*]] = dist.wait %[[RF]]
// CHECK-NEXT:  return %[[TW]], %[[RW]]

// Amaxes of anything but a gathered value: unchanged.
// CHECK-LABEL: func.func @local(
// CHECK-NEXT:  titan.amax %arg0 : tensor<4x8xbf16> -> tensor<f32>
// CHECK-NEXT:  return

// A parameter's gathered copy and a sequence-parallel activation: both
// amaxes come from the shards by default; with parameters-only (pipeline
// parallelism's pass before its phase split) only the parameter's, and the
// activation's amax keeps reading its gathered value.
// CHECK-LABEL: func.func @param_and_activation(
// CHECK-NOT:   titan.amax %{{.*}} : tensor<8x8xbf16>
// CHECK:       return
// PARAMS-LABEL: func.func @param_and_activation(
// PARAMS-SAME:  %[[P:[^:]*]]: tensor<4x8xf32> {titan.param = "w"}, %[[X:[^:]*]]: tensor<4x8xbf16>
// PARAMS:       %[[PB:.*]] = titan.cast %[[P]]
// PARAMS:       titan.amax %[[PB]] : tensor<4x8xbf16> -> tensor<f32>
// PARAMS:       %[[XG:.*]] = dist.wait %{{.*}} : !dist.future<tensor<8x8xbf16>>
// PARAMS:       titan.amax %[[XG]] : tensor<8x8xbf16> -> tensor<f32>
// PARAMS:       return
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 2, cp = 1, tp = 2>} {
  func.func @weight(%w: tensor<4x8xbf16>) -> (tensor<f32>, tensor<8x8xbf16>, tensor<8x1xf32>, tensor<1x8xf32>) {
    %f = dist.all_gather_start %w axes ["dp_shard"] dim 0 : tensor<4x8xbf16> -> !dist.future<tensor<8x8xbf16>>
    %g = dist.wait %f : !dist.future<tensor<8x8xbf16>>
    %a = titan.amax %g : tensor<8x8xbf16> -> tensor<f32>
    %r = dist.all_reduce_start %a axes ["tp"] reduction max : tensor<f32> -> !dist.future<tensor<f32>>
    %ra = dist.wait %r : !dist.future<tensor<f32>>
    %rows = titan.amax %g {dims = array<i64: 1>} : tensor<8x8xbf16> -> tensor<8x1xf32>
    %cols = titan.amax %g {dims = array<i64: 0>} : tensor<8x8xbf16> -> tensor<1x8xf32>
    return %ra, %g, %rows, %cols : tensor<f32>, tensor<8x8xbf16>, tensor<8x1xf32>, tensor<1x8xf32>
  }
  func.func @uneven(%v: tensor<3x8xbf16>) -> (tensor<f32>, tensor<5x1xf32>) {
    %f = dist.all_gather_start %v axes ["dp_shard"] dim 0 : tensor<3x8xbf16> -> !dist.future<tensor<5x8xbf16>>
    %g = dist.wait %f : !dist.future<tensor<5x8xbf16>>
    %a = titan.amax %g : tensor<5x8xbf16> -> tensor<f32>
    %rows = titan.amax %g {dims = array<i64: 1>} : tensor<5x8xbf16> -> tensor<5x1xf32>
    return %a, %rows : tensor<f32>, tensor<5x1xf32>
  }
  func.func @local(%x: tensor<4x8xbf16>) -> tensor<f32> {
    %a = titan.amax %x : tensor<4x8xbf16> -> tensor<f32>
    return %a : tensor<f32>
  }
  func.func @param_and_activation(%p: tensor<4x8xf32> {titan.param = "w"}, %x: tensor<4x8xbf16>) -> (tensor<f32>, tensor<f32>) {
    %pb = titan.cast %p : tensor<4x8xf32> to tensor<4x8xbf16>
    %pf = dist.all_gather_start %pb axes ["dp_shard"] dim 0 : tensor<4x8xbf16> -> !dist.future<tensor<8x8xbf16>>
    %pg = dist.wait %pf : !dist.future<tensor<8x8xbf16>>
    %pa = titan.amax %pg : tensor<8x8xbf16> -> tensor<f32>
    %xf = dist.all_gather_start %x axes ["tp"] dim 0 : tensor<4x8xbf16> -> !dist.future<tensor<8x8xbf16>>
    %xg = dist.wait %xf : !dist.future<tensor<8x8xbf16>>
    %xa = titan.amax %xg : tensor<8x8xbf16> -> tensor<f32>
    return %pa, %xa : tensor<f32>, tensor<f32>
  }
}
