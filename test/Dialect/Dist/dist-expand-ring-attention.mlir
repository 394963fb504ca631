// RUN: titan-opt %s -split-input-file -dist-expand-ring-attention | FileCheck %s

// allgather: K and V are gathered over cp and one kernel computes every
// visible block (kv_shift -1: the rank-ordered gathered chunks); the
// backward gathers them again and reduce-scatters their gradients.
// CHECK-LABEL: func.func @allgather(
// CHECK:      %[[K:.*]] = dist.all_gather_start %arg1 axes ["cp"] dim 1 : tensor<2x4x2x2xf32> -> !dist.future<tensor<2x8x2x2xf32>>
// CHECK:      %[[V:.*]] = dist.all_gather_start %arg2 axes ["cp"] dim 1
// CHECK:      dist.context_attention %arg0, %{{.*}}, %{{.*}} axes ["cp"] kv_shift -1
// CHECK:      %[[DQ:.*]], %[[DK:.*]], %[[DV:.*]] = dist.context_attention_grad {{.*}} kv_shift -1
// CHECK-NEXT: dist.reduce_scatter_start %[[DK]] axes ["cp"] dim 1 : tensor<2x8x2x2xf32> -> !dist.future<tensor<2x4x2x2xf32>>
// CHECK:      dist.reduce_scatter_start %[[DV]] axes ["cp"] dim 1
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 2, tp = 1, load_balanced = ["cp"]>} {
  func.func @allgather(%q: tensor<2x4x4x2xf32>, %k: tensor<2x4x2x2xf32>, %v: tensor<2x4x2x2xf32>, %g: tensor<2x4x4x2xf32>) -> (tensor<2x4x4x2xf32>, tensor<2x4x4x2xf32>, tensor<2x4x2x2xf32>, tensor<2x4x2x2xf32>) {
    %o:2 = dist.ring_attention %q, %k, %v axes ["cp"] rotate allgather {scale = 0.5 : f64} : (tensor<2x4x4x2xf32>, tensor<2x4x2x2xf32>, tensor<2x4x2x2xf32>) -> (tensor<2x4x4x2xf32>, tensor<2x4x4xf32>)
    %d:3 = dist.ring_attention_grad %q, %k, %v, %o#0, %o#1, %g axes ["cp"] rotate allgather {scale = 0.5 : f64} : (tensor<2x4x4x2xf32>, tensor<2x4x2x2xf32>, tensor<2x4x2x2xf32>, tensor<2x4x4x2xf32>, tensor<2x4x4xf32>, tensor<2x4x4x2xf32>) -> (tensor<2x4x4x2xf32>, tensor<2x4x2x2xf32>, tensor<2x4x2x2xf32>)
    return %o#0, %d#0, %d#1, %d#2 : tensor<2x4x4x2xf32>, tensor<2x4x4x2xf32>, tensor<2x4x2x2xf32>, tensor<2x4x2x2xf32>
  }
}

// -----

// alltoall over 2 ranks: step 0 computes the rank's own block while its K
// and V travel one rank along the ring; step 1 the neighbour's, merged
// through the log-sum-exp. In the backward the keys' and values' gradients
// travel with their block and one more step brings them home.
// CHECK-LABEL: func.func @alltoall(
// CHECK:      %[[SK:.*]] = dist.send_recv_start %arg1 axes ["cp"] shift 1
// CHECK-NEXT: %[[SV:.*]] = dist.send_recv_start %arg2 axes ["cp"] shift 1
// CHECK-NEXT: %[[O0:.*]], %[[L0:.*]] = dist.context_attention %arg0, %arg1, %arg2 axes ["cp"] kv_shift 0
// CHECK-NEXT: %[[K1:.*]] = dist.wait %[[SK]]
// CHECK-NEXT: %[[V1:.*]] = dist.wait %[[SV]]
// CHECK-NEXT: %[[O1:.*]], %[[L1:.*]] = dist.context_attention %arg0, %[[K1]], %[[V1]] axes ["cp"] kv_shift 1
// CHECK-NEXT: %[[O:.*]], %[[L:.*]] = dist.attention_merge %[[O0]], %[[L0]], %[[O1]], %[[L1]]
// CHECK:      dist.context_attention_grad %arg0, %arg1, %arg2, %[[O]], %[[L]], %arg3 axes ["cp"] kv_shift 0
// CHECK:      dist.context_attention_grad {{.*}} kv_shift 1
// CHECK:      %[[BACK:.*]] = dist.send_recv_start %{{.*}} axes ["cp"] shift 1
// CHECK:      dist.wait %[[BACK]]
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 2, tp = 1, load_balanced = ["cp"]>} {
  func.func @alltoall(%q: tensor<2x4x4x2xf32>, %k: tensor<2x4x2x2xf32>, %v: tensor<2x4x2x2xf32>, %g: tensor<2x4x4x2xf32>) -> (tensor<2x4x4x2xf32>, tensor<2x4x4x2xf32>, tensor<2x4x2x2xf32>, tensor<2x4x2x2xf32>) {
    %o:2 = dist.ring_attention %q, %k, %v axes ["cp"] rotate alltoall {scale = 0.5 : f64} : (tensor<2x4x4x2xf32>, tensor<2x4x2x2xf32>, tensor<2x4x2x2xf32>) -> (tensor<2x4x4x2xf32>, tensor<2x4x4xf32>)
    %d:3 = dist.ring_attention_grad %q, %k, %v, %o#0, %o#1, %g axes ["cp"] rotate alltoall {scale = 0.5 : f64} : (tensor<2x4x4x2xf32>, tensor<2x4x2x2xf32>, tensor<2x4x2x2xf32>, tensor<2x4x4x2xf32>, tensor<2x4x4xf32>, tensor<2x4x4x2xf32>) -> (tensor<2x4x4x2xf32>, tensor<2x4x2x2xf32>, tensor<2x4x2x2xf32>)
    return %o#0, %d#0, %d#1, %d#2 : tensor<2x4x4x2xf32>, tensor<2x4x4x2xf32>, tensor<2x4x2x2xf32>, tensor<2x4x2x2xf32>
  }
}

// -----

// TorchTitan's block-causal mask: every block kernel of both rotations
// takes the whole sequence's document starts (2 x 8 over cp 2's local 4).
// CHECK-LABEL: func.func @documents(
// CHECK:      dist.context_attention %arg0, %arg1, %arg2 documents %arg4 axes ["cp"] kv_shift 0
// CHECK:      dist.context_attention %arg0, %{{.*}}, %{{.*}} documents %arg4 axes ["cp"] kv_shift 1
// CHECK:      dist.context_attention_grad %arg0, %arg1, %arg2, %{{.*}}, %{{.*}}, %arg3 documents %arg4 axes ["cp"] kv_shift 0
// CHECK:      dist.context_attention_grad {{.*}} documents %arg4 axes ["cp"] kv_shift 1
// CHECK:      dist.context_attention %arg0, %{{.*}}, %{{.*}} documents %arg4 axes ["cp"] kv_shift -1
// CHECK:      dist.context_attention_grad {{.*}} documents %arg4 axes ["cp"] kv_shift -1
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 2, tp = 1, load_balanced = ["cp"]>} {
  func.func @documents(%q: tensor<2x4x4x2xf32>, %k: tensor<2x4x2x2xf32>, %v: tensor<2x4x2x2xf32>, %g: tensor<2x4x4x2xf32>, %s: tensor<2x8xi32>) -> (tensor<2x4x4x2xf32>, tensor<2x4x4x2xf32>, tensor<2x4x4x2xf32>) {
    %o:2 = dist.ring_attention %q, %k, %v documents %s axes ["cp"] rotate alltoall {scale = 0.5 : f64} : (tensor<2x4x4x2xf32>, tensor<2x4x2x2xf32>, tensor<2x4x2x2xf32>, tensor<2x8xi32>) -> (tensor<2x4x4x2xf32>, tensor<2x4x4xf32>)
    %d:3 = dist.ring_attention_grad %q, %k, %v, %o#0, %o#1, %g documents %s axes ["cp"] rotate alltoall {scale = 0.5 : f64} : (tensor<2x4x4x2xf32>, tensor<2x4x2x2xf32>, tensor<2x4x2x2xf32>, tensor<2x4x4x2xf32>, tensor<2x4x4xf32>, tensor<2x4x4x2xf32>, tensor<2x8xi32>) -> (tensor<2x4x4x2xf32>, tensor<2x4x2x2xf32>, tensor<2x4x2x2xf32>)
    %a:2 = dist.ring_attention %q, %k, %v documents %s axes ["cp"] rotate allgather {scale = 0.5 : f64} : (tensor<2x4x4x2xf32>, tensor<2x4x2x2xf32>, tensor<2x4x2x2xf32>, tensor<2x8xi32>) -> (tensor<2x4x4x2xf32>, tensor<2x4x4xf32>)
    %e:3 = dist.ring_attention_grad %q, %k, %v, %a#0, %a#1, %g documents %s axes ["cp"] rotate allgather {scale = 0.5 : f64} : (tensor<2x4x4x2xf32>, tensor<2x4x2x2xf32>, tensor<2x4x2x2xf32>, tensor<2x4x4x2xf32>, tensor<2x4x4xf32>, tensor<2x4x4x2xf32>, tensor<2x8xi32>) -> (tensor<2x4x4x2xf32>, tensor<2x4x2x2xf32>, tensor<2x4x2x2xf32>)
    return %o#0, %d#0, %e#0 : tensor<2x4x4x2xf32>, tensor<2x4x4x2xf32>, tensor<2x4x4x2xf32>
  }
}
