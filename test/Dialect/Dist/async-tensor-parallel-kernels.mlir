// RUN: titan-opt %s -titan-bufferize=functions=forward_backward | FileCheck %s --check-prefix=CPU
// RUN: titan-opt %s '-titan-bufferize=functions=forward_backward widen-low-precision' | FileCheck %s --check-prefix=WIDE
// RUN: titan-opt %s '-titan-bufferize=functions=forward_backward target=cuda' | FileCheck %s --check-prefix=CUDA

// The collective matmuls' kernel contracts: params {count, dim,
// grad_input, axis_mask (tp = bit 4)}, the reduce-scatter's storage type
// (1: bf16), and the ring's shards as the
// workspace. The CPU target takes 2 (gather) or 3 (reduce-scatter) f32 shards of 64
// elements (256 bytes); widened, the f32 copies of the bf16 buffers come
// first (256 + 192 + 512 + 384, and 384 + 192 + 256). On CUDA, cuBLASLt's
// 32 MiB, then the shards in bf16, each 256-aligned.
// CPU: workspace : memref<512xi8>
// CPU: kernel.call "all_gather_linear"(%arg0, %arg1 : memref<2x4x8xbf16>, memref<6x8xbf16>) outs(%{{.*}}, %{{.*}} : memref<2x8x8xbf16>, memref<2x8x6xbf16>) workspace(%{{.*}} : memref<512xi8>) on %{{.*}} params [1, 1, 0, 16]
// CPU: workspace : memref<768xi8>
// CPU: kernel.call "linear_reduce_scatter"(%{{.*}}, %arg2 : memref<2x8x6xbf16>, memref<8x6xbf16>) outs(%arg3 : memref<2x4x8xbf16>) workspace(%{{.*}} : memref<768xi8>) on %{{.*}} params [1, 1, 0, 16, 1]
// WIDE: kernel.call "all_gather_linear"{{.*}}workspace(%{{.*}} : memref<1856xi8>)
// WIDE: kernel.call "linear_reduce_scatter"{{.*}}workspace(%{{.*}} : memref<1600xi8>)
// CUDA: kernel.call "all_gather_linear"{{.*}}workspace(%{{.*}} : memref<33554944xi8>)
// CUDA: kernel.call "linear_reduce_scatter"{{.*}}workspace(%{{.*}} : memref<33555200xi8>)
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 2>} {
  func.func @forward_backward(%x: tensor<2x4x8xbf16> {titan.input = "tokens"}, %wq: tensor<6x8xbf16> {titan.param = "wq"}, %wo: tensor<8x6xbf16> {titan.param = "wo"}) -> (tensor<2x4x8xbf16> {titan.output = "loss"}) {
    %g:2 = dist.all_gather_linear %x, [%wq] axes ["tp"] dim 1 : (tensor<2x4x8xbf16>, tensor<6x8xbf16>) -> (tensor<2x8x8xbf16>, tensor<2x8x6xbf16>)
    %r = dist.linear_reduce_scatter %g#1, %wo axes ["tp"] dim 1 : (tensor<2x8x6xbf16>, tensor<8x6xbf16>) -> tensor<2x4x8xbf16>
    return %r : tensor<2x4x8xbf16>
  }
}
