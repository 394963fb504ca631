// RUN: titan-opt %s -split-input-file | titan-opt -split-input-file | FileCheck %s
// RUN: titan-opt %s -split-input-file --mlir-print-op-generic | titan-opt -split-input-file | FileCheck %s

// CHECK: module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 2, dp_shard = 2, cp = 1, tp = 2>}
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 2, dp_shard = 2, cp = 1, tp = 2>} {
  // CHECK-LABEL: func.func @collectives
  // CHECK-SAME: {dist.sharding = #dist.sharding<{{\[}}["dp_shard"], []]>}
  func.func @collectives(%w: tensor<4x8xf32> {dist.sharding = #dist.sharding<[["dp_shard"], []]>},
                         %g: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<4x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) {
    // CHECK: %[[F:.*]] = dist.all_gather_start %{{.*}} axes ["dp_shard"] dim 0 : tensor<4x8xf32> -> !dist.future<tensor<8x8xf32>>
    // CHECK: dist.wait %[[F]] : !dist.future<tensor<8x8xf32>>
    %f = dist.all_gather_start %w axes ["dp_shard"] dim 0 : tensor<4x8xf32> -> !dist.future<tensor<8x8xf32>>
    %full = dist.wait %f : !dist.future<tensor<8x8xf32>>
    // CHECK: dist.reduce_scatter_start %{{.*}} axes ["dp_shard"] dim 0 : tensor<8x8xf32> -> !dist.future<tensor<4x8xf32>>
    %r = dist.reduce_scatter_start %g axes ["dp_shard"] dim 0 : tensor<8x8xf32> -> !dist.future<tensor<4x8xf32>>
    %shard = dist.wait %r : !dist.future<tensor<4x8xf32>>
    // CHECK: dist.all_reduce_start %{{.*}} axes ["dp_replicate", "dp_shard"] reduction avg : tensor<8x8xf32> -> !dist.future<tensor<8x8xf32>>
    %a = dist.all_reduce_start %g axes ["dp_replicate", "dp_shard"] reduction avg : tensor<8x8xf32> -> !dist.future<tensor<8x8xf32>>
    // CHECK: dist.all_reduce_start %{{.*}} axes ["tp"] reduction max : tensor<8x8xf32>
    %m = dist.all_reduce_start %g axes ["tp"] reduction max : tensor<8x8xf32> -> !dist.future<tensor<8x8xf32>>
    // The default reduction (sum) is elided.
    // CHECK: dist.all_reduce_start %{{.*}} axes ["tp"] : tensor<8x8xf32>
    %sum = dist.all_reduce_start %g axes ["tp"] reduction sum : tensor<8x8xf32> -> !dist.future<tensor<8x8xf32>>
    // Uneven shards: the gather drops padding, the scatter adds it.
    // CHECK: dist.all_gather_start %{{.*}} axes ["dp_shard"] dim 0 : tensor<4x8xf32> -> !dist.future<tensor<7x8xf32>>
    %u = dist.all_gather_start %w axes ["dp_shard"] dim 0 : tensor<4x8xf32> -> !dist.future<tensor<7x8xf32>>
    // CHECK: dist.reduce_scatter_start %{{.*}} axes ["dp_shard"] dim 1 : tensor<8x8xf32> -> !dist.future<tensor<8x4xf32>>
    %v = dist.reduce_scatter_start %g axes ["dp_shard"] dim 1 : tensor<8x8xf32> -> !dist.future<tensor<8x4xf32>>
    // CHECK: dist.shard_offset axes ["tp", "dp_shard"] stride 16 : tensor<i32>
    %o = dist.shard_offset axes ["tp", "dp_shard"] stride 16 : tensor<i32>
    %avg = dist.wait %a : !dist.future<tensor<8x8xf32>>
    %mv = dist.wait %m : !dist.future<tensor<8x8xf32>>
    %sumv = dist.wait %sum : !dist.future<tensor<8x8xf32>>
    %uv = dist.wait %u : !dist.future<tensor<7x8xf32>>
    %vv = dist.wait %v : !dist.future<tensor<8x4xf32>>
    // CHECK: dist.replicate %{{.*}} axes ["dp_replicate"] : tensor<8x8xf32>
    %rep = dist.replicate %g axes ["dp_replicate"] : tensor<8x8xf32>
    // Gathering along a later dimension (sequence parallel) and over two axes.
    // CHECK: dist.all_gather_start %{{.*}} axes ["dp_shard", "tp"] dim 1 : tensor<8x8xf32> -> !dist.future<tensor<8x32xf32>>
    %s = dist.all_gather_start %g axes ["dp_shard", "tp"] dim 1 : tensor<8x8xf32> -> !dist.future<tensor<8x32xf32>>
    %sv = dist.wait %s : !dist.future<tensor<8x32xf32>>
    // CHECK: dist.all_to_all_start %{{.*}} axes ["tp"] split 0 concat 1 : tensor<8x8xf32> -> !dist.future<tensor<4x16xf32>>
    %x = dist.all_to_all_start %g axes ["tp"] split 0 concat 1 : tensor<8x8xf32> -> !dist.future<tensor<4x16xf32>>
    %xv = dist.wait %x : !dist.future<tensor<4x16xf32>>
    // CHECK: dist.broadcast_start %{{.*}} axes ["dp_replicate", "dp_shard"] root 3 : tensor<8x8xf32> -> !dist.future<tensor<8x8xf32>>
    %b = dist.broadcast_start %g axes ["dp_replicate", "dp_shard"] root 3 : tensor<8x8xf32> -> !dist.future<tensor<8x8xf32>>
    %bv = dist.wait %b : !dist.future<tensor<8x8xf32>>
    // CHECK: dist.send_recv_start %{{.*}} axes ["tp"] shift -1 : tensor<8x8xf32> -> !dist.future<tensor<8x8xf32>>
    %p = dist.send_recv_start %g axes ["tp"] shift -1 : tensor<8x8xf32> -> !dist.future<tensor<8x8xf32>>
    %pv = dist.wait %p : !dist.future<tensor<8x8xf32>>
    return %full, %shard, %avg, %rep : tensor<8x8xf32>, tensor<4x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>
  }
}

// Explicit shardings: pending reductions, constraints, local shards and
// context parallel's ops round-trip, and so does the mesh's load-balanced
// cp (its default, so printed without the key; mesh.mlir).
// CHECK: module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 2, tp = 2>}
// CHECK-LABEL: func.func @shardings
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 2, tp = 2, load_balanced = ["cp"]>} {
  func.func @shardings(%x: tensor<2x8x4xf32>, %a: tensor<8x2xf32>, %q: tensor<2x4x4x2xf32>, %k: tensor<2x4x2x2xf32>) -> tensor<2x8x4xf32> {
    // CHECK: titan.add {{.*}} {dist.shardings = [#dist.sharding<[], partial = ["tp"], reduction = max>]}
    %p = titan.add %x, %x {dist.shardings = [#dist.sharding<[], partial = ["tp"], reduction = max>]} : tensor<2x8x4xf32>
    // CHECK: dist.sharding_constraint %{{.*}} to <{{\[}}[], ["cp", "tp"]]> : tensor<2x8x4xf32>
    %c = dist.sharding_constraint %p to <[[], ["cp", "tp"]]> : tensor<2x8x4xf32>
    // CHECK: dist.local_shard %{{.*}} axes ["cp"] dim 0 : tensor<8x2xf32> -> tensor<4x2xf32>
    %l = dist.local_shard %a axes ["cp"] dim 0 : tensor<8x2xf32> -> tensor<4x2xf32>
    // CHECK: dist.ring_attention {{.*}} axes ["cp"] rotate alltoall {scale = 5.000000e-01 : f64}
    %o:2 = dist.ring_attention %q, %k, %k axes ["cp"] rotate alltoall {scale = 0.5 : f64} : (tensor<2x4x4x2xf32>, tensor<2x4x2x2xf32>, tensor<2x4x2x2xf32>) -> (tensor<2x4x4x2xf32>, tensor<2x4x4xf32>)
    // CHECK: dist.context_attention {{.*}} axes ["cp"] kv_shift 1
    %b:2 = dist.context_attention %q, %k, %k axes ["cp"] kv_shift 1 {scale = 0.5 : f64} : (tensor<2x4x4x2xf32>, tensor<2x4x2x2xf32>, tensor<2x4x2x2xf32>) -> (tensor<2x4x4x2xf32>, tensor<2x4x4xf32>)
    // CHECK: dist.attention_merge {{.*}} : tensor<2x4x4x2xf32>, tensor<2x4x4xf32>
    %m:2 = dist.attention_merge %o#0, %o#1, %b#0, %b#1 : tensor<2x4x4x2xf32>, tensor<2x4x4xf32>
    return %c : tensor<2x8x4xf32>
  }
}

// -----

// Float8's collective matmuls.
// CHECK-LABEL: func.func @float8_rings(
// CHECK: dist.all_gather_scaled_matmul %{{.*}}, %{{.*}}, [%{{.*}}, %{{.*}}] axes ["tp"] dim 1 grad_input rhs_transposed : (tensor<2x4x8xf8E5M2>, tensor<f32>, tensor<6x8xf8E4M3FN>, tensor<1x6xf32>) -> (tensor<2x8x8xf8E5M2>, tensor<2x8x6xbf16>)
// CHECK: dist.scaled_matmul_reduce_scatter %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} axes ["tp"] dim 1 : (tensor<2x8x6xf8E4M3FN>, tensor<f32>, tensor<8x6xf8E4M3FN>, tensor<8x1xf32>) -> tensor<2x4x8xf32>
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 2>} {
  func.func @float8_rings(%d: tensor<2x4x8xf8E5M2>, %s: tensor<f32>, %w: tensor<6x8xf8E4M3FN>, %ws: tensor<1x6xf32>, %h: tensor<2x8x6xf8E4M3FN>, %wo: tensor<8x6xf8E4M3FN>, %wos: tensor<8x1xf32>) -> (tensor<2x8x6xbf16>, tensor<2x4x8xf32>) {
    %g:2 = dist.all_gather_scaled_matmul %d, %s, [%w, %ws] axes ["tp"] dim 1 grad_input rhs_transposed : (tensor<2x4x8xf8E5M2>, tensor<f32>, tensor<6x8xf8E4M3FN>, tensor<1x6xf32>) -> (tensor<2x8x8xf8E5M2>, tensor<2x8x6xbf16>)
    %r = dist.scaled_matmul_reduce_scatter %h, %s, %wo, %wos axes ["tp"] dim 1 : (tensor<2x8x6xf8E4M3FN>, tensor<f32>, tensor<8x6xf8E4M3FN>, tensor<8x1xf32>) -> tensor<2x4x8xf32>
    return %g#1, %r : tensor<2x8x6xbf16>, tensor<2x4x8xf32>
  }
}
