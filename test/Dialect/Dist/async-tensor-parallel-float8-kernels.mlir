// RUN: titan-opt %s -titan-bufferize=functions=forward_backward | FileCheck %s --check-prefix=CPU
// RUN: titan-opt %s '-titan-bufferize=functions=forward_backward widen-low-precision' | FileCheck %s --check-prefix=WIDE
// RUN: titan-opt %s '-titan-bufferize=functions=forward_backward target=cuda' | FileCheck %s --check-prefix=CUDA

// Float8's collective matmuls' kernel contracts: params {count, dim,
// grad_input, axis_mask (tp = bit 4)}, the reduce-scatter's storage type
// (1: bf16), then lhs_format, rhs_format (0: e4m3) and rhs_transposed.
// CPU workspaces (titan::cpu::scaledRingWorkspace, 64-byte parts): the
// gather's two float8 shards of 64 bytes (128), the f32 weight (48 x 4 =
// 192), one 4 x 8 lhs row block (128) and its 4 x 6 product (96 -> 128):
// 576; the reduce-scatter's three f32 shards (3 x 256), the weight (192),
// a 4 x 6 block (96 -> 128) and a 4 x 8 product (128): 1216. Widened, the
// f32 copy of the bf16 result comes first (+384, +256). On CUDA, the scaled
// GEMM's scratch (two inverse-scale slots of 256 bytes, cuBLASLt's 32 MiB:
// 33554944), then the shards, each 256-aligned (2 x 256 float8, 3 x 256
// bf16).
// CPU: kernel.call "all_gather_scaled_matmul"(%arg0, %arg1, %arg2, %arg3 : memref<2x4x8xf8E4M3FN>, memref<f32>, memref<6x8xf8E4M3FN>, memref<6x1xf32>) outs(%{{.*}}, %{{.*}} : memref<2x8x8xf8E4M3FN>, memref<2x8x6xbf16>) workspace(%{{.*}} : memref<576xi8>) on %{{.*}} params [1, 1, 0, 16, 0, 0, 0]
// CPU: kernel.call "scaled_matmul_reduce_scatter"(%{{.*}}, %arg1, %arg4, %arg5 : memref<2x8x6xf8E4M3FN>, memref<f32>, memref<8x6xf8E4M3FN>, memref<f32>) outs(%arg6 : memref<2x4x8xbf16>) workspace(%{{.*}} : memref<1216xi8>) on %{{.*}} params [1, 1, 0, 16, 1, 0, 0, 0]
// WIDE: kernel.call "all_gather_scaled_matmul"{{.*}}workspace(%{{.*}} : memref<960xi8>)
// WIDE: kernel.call "scaled_matmul_reduce_scatter"{{.*}}workspace(%{{.*}} : memref<1472xi8>)
// CUDA: kernel.call "all_gather_scaled_matmul"{{.*}}workspace(%{{.*}} : memref<33555456xi8>)
// CUDA: kernel.call "scaled_matmul_reduce_scatter"{{.*}}workspace(%{{.*}} : memref<33555712xi8>)
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 2>} {
  func.func @forward_backward(%x: tensor<2x4x8xf8E4M3FN> {titan.input = "tokens"}, %s: tensor<f32> {titan.param = "s"}, %wq: tensor<6x8xf8E4M3FN> {titan.param = "wq"}, %sq: tensor<6x1xf32> {titan.param = "sq"}, %wo: tensor<8x6xf8E4M3FN> {titan.param = "wo"}, %so: tensor<f32> {titan.param = "so"}) -> (tensor<2x4x8xbf16> {titan.output = "loss"}) {
    %g:2 = dist.all_gather_scaled_matmul %x, %s, [%wq, %sq] axes ["tp"] dim 1 : (tensor<2x4x8xf8E4M3FN>, tensor<f32>, tensor<6x8xf8E4M3FN>, tensor<6x1xf32>) -> (tensor<2x8x8xf8E4M3FN>, tensor<2x8x6xbf16>)
    %h = titan.quantize %g#1, %s : (tensor<2x8x6xbf16>, tensor<f32>) -> tensor<2x8x6xf8E4M3FN>
    %r = dist.scaled_matmul_reduce_scatter %h, %s, %wo, %so axes ["tp"] dim 1 : (tensor<2x8x6xf8E4M3FN>, tensor<f32>, tensor<8x6xf8E4M3FN>, tensor<f32>) -> tensor<2x4x8xbf16>
    return %r : tensor<2x4x8xbf16>
  }
}
