// RUN: titan-opt %s -split-input-file -dist-partition | FileCheck %s
// RUN: titan-opt %s -split-input-file -dist-partition=reshard-after-forward=always -titan-autodiff=regather-params | FileCheck %s --check-prefix=GRAD

// HSDP 2x2: the per-rank program takes parameter shards, replicates each
// shard over dp_replicate, gathers it over dp_shard right before its first
// use, and averages the loss over both data-parallel axes. The parameter's
// plan puts it in block 0 (FSDP's unit).
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %[[W:.*]]: tensor<2x4xf32> {dist.keep_gathered, dist.sharding = #dist.sharding<{{\[}}["dp_shard"]]>, titan.param = "layers.0.w"}
// CHECK-SAME: %[[X:.*]]: tensor<3x4xf32>
// CHECK:      %[[R:.*]] = dist.replicate %[[W]] axes ["dp_replicate"] : tensor<2x4xf32>
// CHECK-NEXT: %[[F:.*]] = dist.all_gather_start %[[R]] axes ["dp_shard"] dim 0 : tensor<2x4xf32> -> !dist.future<tensor<4x4xf32>>
// CHECK-NEXT: %[[FULL:.*]] = dist.wait %[[F]]
// CHECK-NEXT: %[[Y:.*]] = titan.linear %[[X]], %[[FULL]]
// CHECK:      %[[L:.*]], %{{.*}} = titan.cross_entropy
// CHECK-NEXT: %[[LF:.*]] = dist.all_reduce_start %[[L]] axes ["dp_replicate", "dp_shard"] reduction avg
// CHECK-NEXT: %[[LOSS:.*]] = dist.wait %[[LF]]
// CHECK-NEXT: return %[[LOSS]]

// Differentiated: the gradient is reduce-scattered over dp_shard, then the
// shard is all-reduced over dp_replicate; the backward gathers the weight
// again (reshard after forward: "always"; with "default" the last block,
// here the only one, stays gathered) and the loss gradient is scaled by 1/4.
// GRAD-LABEL: func.func @forward_backward(
// GRAD:      titan.fill 2.500000e-01
// GRAD:      %[[AGAIN:.*]] = dist.all_gather_start %{{.*}} axes ["dp_shard"] dim 0
// GRAD:      %[[WFULL:.*]] = dist.wait %[[AGAIN]]
// GRAD:      titan.linear_grad_input %{{.*}}, %[[WFULL]]
// GRAD:      %[[DW:.*]] = titan.linear_grad_weight
// GRAD:      %[[RS:.*]] = dist.reduce_scatter_start %[[DW]] axes ["dp_shard"] dim 0 : tensor<4x4xf32> -> !dist.future<tensor<2x4xf32>>
// GRAD:      %[[SHARD:.*]] = dist.wait %[[RS]]
// GRAD:      %[[AR:.*]] = dist.all_reduce_start %[[SHARD]] axes ["dp_replicate"] : tensor<2x4xf32>
// GRAD:      %[[G:.*]] = dist.wait %[[AR]]
// GRAD:      return %{{.*}}, %[[G]]
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 2, dp_shard = 2, cp = 1, tp = 1>} {
  func.func @forward(%w: tensor<4x4xf32> {titan.param = "layers.0.w", dist.param_plan = #dist.param_plan<block = 0>, dist.sharding = #dist.sharding<[["dp_shard"]]>},
                     %x: tensor<3x4xf32>, %l: tensor<3xi32>) -> tensor<f32> {
    %y = titan.linear %x, %w : (tensor<3x4xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
    %loss, %loss_lse = titan.cross_entropy %y, %l : (tensor<3x4xf32>, tensor<3xi32>) -> (tensor<f32>, tensor<3xf32>)
    return %loss : tensor<f32>
  }
}

// -----

// DDP: replicated parameters only gain a replicate (gradient all-reduce).
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %[[W:.*]]: tensor<4x4xf32> {titan.param = "w"}
// CHECK:      %[[R:.*]] = dist.replicate %[[W]] axes ["dp_replicate"]
// CHECK-NEXT: titan.linear %{{.*}}, %[[R]]
// GRAD-LABEL: func.func @forward_backward(
// GRAD:      %[[DW:.*]] = titan.linear_grad_weight
// GRAD:      dist.all_reduce_start %[[DW]] axes ["dp_replicate"]
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 2, dp_shard = 1, cp = 1, tp = 1>} {
  func.func @forward(%w: tensor<4x4xf32> {titan.param = "w"}, %x: tensor<3x4xf32>, %l: tensor<3xi32>) -> tensor<f32> {
    %y = titan.linear %x, %w : (tensor<3x4xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
    %loss, %loss_lse = titan.cross_entropy %y, %l : (tensor<3x4xf32>, tensor<3xi32>) -> (tensor<f32>, tensor<3xf32>)
    return %loss : tensor<f32>
  }
}

// -----

// Uneven FSDP: 5 rows over 2 ranks are shards of 3 (the second padded with a
// zero row); the gather drops the padding and, in the backward, the
// gradient's reduce-scatter pads it again.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %[[W:.*]]: tensor<3x4xf32> {dist.keep_gathered, dist.sharding = #dist.sharding<{{\[}}["dp_shard"]]>, titan.param = "norm.w"}
// CHECK: dist.all_gather_start %[[W]] axes ["dp_shard"] dim 0 : tensor<3x4xf32> -> !dist.future<tensor<5x4xf32>>
// GRAD-LABEL: func.func @forward_backward(
// GRAD: dist.reduce_scatter_start %{{.*}} axes ["dp_shard"] dim 0 : tensor<5x4xf32> -> !dist.future<tensor<3x4xf32>>
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 2, cp = 1, tp = 1>} {
  func.func @forward(%w: tensor<5x4xf32> {titan.param = "norm.w", dist.sharding = #dist.sharding<[["dp_shard"]]>},
                     %x: tensor<3x4xf32>, %l: tensor<3xi32>) -> tensor<f32> {
    %y = titan.linear %x, %w : (tensor<3x4xf32>, tensor<5x4xf32>) -> tensor<3x5xf32>
    %loss, %loss_lse = titan.cross_entropy %y, %l : (tensor<3x5xf32>, tensor<3xi32>) -> (tensor<f32>, tensor<3xf32>)
    return %loss : tensor<f32>
  }
}

// -----

// One rank: nothing to do but consume the plan.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %{{.*}}: tensor<4x4xf32> {titan.param = "w"}
// CHECK-NOT: dist.{{(all|reduce|replicate|wait|local|param_plan)}}
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 1>} {
  func.func @forward(%w: tensor<4x4xf32> {titan.param = "w", dist.param_plan = #dist.param_plan<block = 0>}, %x: tensor<3x4xf32>, %l: tensor<3xi32>) -> tensor<f32> {
    %y = titan.linear %x, %w : (tensor<3x4xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
    %loss, %loss_lse = titan.cross_entropy %y, %l : (tensor<3x4xf32>, tensor<3xi32>) -> (tensor<f32>, tensor<3xf32>)
    return %loss : tensor<f32>
  }
}

// Without a mesh the pass has nothing to partition for.
// RUN: echo 'func.func @forward() { return }' | not titan-opt -dist-partition 2>&1 | FileCheck %s --check-prefix=NO-MESH
// NO-MESH: error: dist-partition: needs a function 'forward' and a #dist.mesh (run dist-parallelize first)

// An unknown policy is an error.
// RUN: echo 'module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 2, cp = 1, tp = 1>} { func.func @forward() { return } }' | not titan-opt -dist-partition=reshard-after-forward=sometimes 2>&1 | FileCheck %s --check-prefix=POLICY
// POLICY: error: dist-partition: reshard-after-forward must be default, always or never, got 'sometimes'

// -----

// A split moved from one dimension to another over the same axes is one
// all_to_all (each rank sends and keeps 1/tp of the tensor), not a gather
// and a slice; the loss then needs the vocabulary whole.
// CHECK-LABEL: func.func @forward(
// CHECK:      %[[F:.*]] = dist.all_to_all_start %arg0 axes ["tp"] split 1 concat 0 : tensor<2x8xf32> -> !dist.future<tensor<4x4xf32>>
// CHECK-NEXT: %[[M:.*]] = dist.wait %[[F]] {dist.shardings = [#dist.sharding<{{\[}}[], ["tp"]]>]}
// CHECK-NEXT: dist.all_gather_start %[[M]] axes ["tp"] dim 1 : tensor<4x4xf32> -> !dist.future<tensor<4x8xf32>>
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 2>} {
  func.func @forward(%x: tensor<4x8xf32> {dist.sharding = #dist.sharding<[["tp"]]>}, %l: tensor<4xi32>) -> tensor<f32> {
    %c = dist.sharding_constraint %x to <[[], ["tp"]]> : tensor<4x8xf32>
    %loss, %loss_lse = titan.cross_entropy %c, %l : (tensor<4x8xf32>, tensor<4xi32>) -> (tensor<f32>, tensor<4xf32>)
    return %loss : tensor<f32>
  }
}

// A plan whose block is negative is malformed.
// RUN: echo 'module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 2, cp = 1, tp = 1>} { func.func @forward(%%w: tensor<4xf32> {titan.param = "w", dist.param_plan = #dist.param_plan<block = -1>}) { return } }' | not titan-opt -dist-partition 2>&1 | FileCheck %s --check-prefix=BAD-BLOCK
// BAD-BLOCK: error: 'func.func' op argument 0 has a malformed 'dist.param_plan': #dist.param_plan<block = -1> is not a #dist.param_plan with a block >= 0
