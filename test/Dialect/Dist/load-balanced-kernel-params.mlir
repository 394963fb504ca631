// RUN: titan-opt %s -split-input-file -titan-bufferize | FileCheck %s

// How a group of mesh axes splits a dimension is the mesh's data
// (#dist.mesh's load_balanced), and it reaches the kernels as their
// load_balanced parameter: local_shard's after `dim` ({dim, load_balanced,
// number of axes, axes}), 1 over the load-balanced cp (its rank keeps two
// chunks of 4 rows of 16) and 0 over tp (one part of 8).
// CHECK-LABEL: func.func @forward_backward(
// CHECK:      kernel.call "local_shard"({{.*}} : memref<16x2xf32>) outs({{.*}} : memref<8x2xf32>) on %{{.*}} params [0, 1, 1, 3]
// CHECK:      kernel.call "local_shard"({{.*}} : memref<16x2xf32>) outs({{.*}} : memref<8x2xf32>) on %{{.*}} params [0, 0, 1, 4]
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 2, tp = 2, load_balanced = ["cp"]>} {
  func.func @forward_backward(%a: tensor<16x2xf32> {titan.param = "a"})
      -> (tensor<8x2xf32> {titan.grad = "a"}, tensor<8x2xf32> {titan.grad = "b"}) {
    %cp = dist.local_shard %a axes ["cp"] dim 0 : tensor<16x2xf32> -> tensor<8x2xf32>
    %tp = dist.local_shard %a axes ["tp"] dim 0 : tensor<16x2xf32> -> tensor<8x2xf32>
    return %cp, %tp : tensor<8x2xf32>, tensor<8x2xf32>
  }
  func.func @optimizer_step(%p: tensor<8xf32> {titan.param = "n"}) -> (tensor<8xf32> {titan.param = "n"}) {
    return %p : tensor<8xf32>
  }
}

// -----

// A mesh whose load_balanced list leaves cp out splits it contiguously
// (load_balanced 0).
// CHECK-LABEL: func.func @forward_backward(
// CHECK:      kernel.call "local_shard"({{.*}} : memref<16x2xf32>) outs({{.*}} : memref<8x2xf32>) on %{{.*}} params [0, 0, 1, 3]
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 2, tp = 1, load_balanced = []>} {
  func.func @forward_backward(%a: tensor<16x2xf32> {titan.param = "a"})
      -> (tensor<8x2xf32> {titan.grad = "a"}) {
    %cp = dist.local_shard %a axes ["cp"] dim 0 : tensor<16x2xf32> -> tensor<8x2xf32>
    return %cp : tensor<8x2xf32>
  }
  func.func @optimizer_step(%p: tensor<8xf32> {titan.param = "n"}) -> (tensor<8xf32> {titan.param = "n"}) {
    return %p : tensor<8xf32>
  }
}
