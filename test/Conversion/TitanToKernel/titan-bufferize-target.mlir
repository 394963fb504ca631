// RUN: titan-opt %s -split-input-file -titan-bufferize -verify-diagnostics | FileCheck %s --check-prefix=CPU
// RUN: titan-opt %s -split-input-file -titan-bufferize=target=cuda -verify-diagnostics | FileCheck %s --check-prefix=CUDA
// RUN: not titan-opt %s -titan-bufferize=target=tpu 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: error: titan-bufferize: unknown target 'tpu' (registered: cpu, cuda)

// Workspaces are the target's (its backend's rules in lib/Target/<T>/,
// which one WorkspaceOpInterface model per op asks; the sizes are stated in
// include/titan/Contract/{CPU,CUDA}Workspaces.h).
// On the CPU, flash attention gets one slot per task: two 8 x 8 f32 tiles,
// three rows of 8 and one of 8 (160 floats), for 2 tasks (1 batch x 2 heads, forward; 1 x 2 KV heads,
// backward): 1280 bytes; oneDNN's GEMMs and the embedding gradient need
// none. RMSNorm's gradient and the cross-entropy are generated kernels on
// both targets (the partial sums and the rows' losses are buffers
// kernel-generate-pointwise allocates): no library workspace.
// On CUDA, every GEMM gets cuBLASLt's 32 MiB; cuDNN's bf16 attention gets its
// bound (the f32 statistics, 1 x 2 x 8 x 4 bytes rounded to 256, plus
// 4 MiB), its (default) backward the frontend's f32 dQ accumulator and
// softmax sum (256 + 64 bytes, rounded to 512) plus 4 MiB
// (titan-bufferize-deterministic.mlir has the deterministic one);
// the f32 attention kernels need none; the embedding gradient its sort
// (4 x 256 bytes of keys, 4 x 256 + 1 MiB for CUB).
// CPU-LABEL: func.func @forward_backward(
// CPU-NOT:   kernel.alloc workspace : memref<33554432xi8>
// CPU:       kernel.call "rms_norm_grad"({{.*}}) outs({{.*}}) on
// CPU:       %[[WS1:.*]] = kernel.alloc workspace : memref<1280xi8>
// CPU-NEXT:  kernel.call "attention"({{.*}}memref<1x8x2x4xbf16>
// CPU:       %[[WS2:.*]] = kernel.alloc workspace : memref<1280xi8>
// CPU-NEXT:  kernel.call "attention_grad"
// CPU:       %[[WS3:.*]] = kernel.alloc workspace : memref<1280xi8>
// CPU-NEXT:  kernel.call "attention"({{.*}}memref<1x8x2x4xf32>
// CPU-NOT:   kernel.alloc workspace
// CPU:       kernel.call "cross_entropy"
// CPU-NOT:   kernel.alloc workspace
// CPU:       return

// CUDA-LABEL: func.func @forward_backward(
// CUDA:       kernel.alloc workspace : memref<33554432xi8>
// CUDA-NEXT:  kernel.call "linear"
// CUDA-NOT:   kernel.alloc workspace
// CUDA:       kernel.call "rms_norm_grad"({{.*}}) outs({{.*}}) on
// CUDA:       kernel.alloc workspace : memref<4194560xi8>
// CUDA-NEXT:  kernel.call "attention"({{.*}}memref<1x8x2x4xbf16>
// CUDA:       kernel.alloc workspace : memref<4194816xi8>
// CUDA-NEXT:  kernel.call "attention_grad"
// CUDA-NOT:   kernel.alloc workspace
// CUDA:       kernel.call "attention"({{.*}}memref<1x8x2x4xf32>
// CUDA-NOT:   kernel.alloc workspace
// CUDA:       kernel.call "cross_entropy"
// CUDA:       kernel.alloc workspace : memref<1050624xi8>
// CUDA-NEXT:  kernel.call "embedding_grad"
// CUDA:       return
func.func @forward_backward(%w: tensor<8x8xbf16> {titan.param = "w"}, %n: tensor<8xbf16> {titan.param = "n"},
                            %x: tensor<1x8x8xbf16> {titan.input = "tokens"}, %l: tensor<1x8xi32> {titan.input = "labels"},
                            %qf: tensor<1x8x2x4xf32> {titan.param = "qf"})
    -> (tensor<f32> {titan.output = "loss"}, tensor<8x8xbf16> {titan.grad = "w"}, tensor<8xbf16> {titan.grad = "n"},
        tensor<1x8x2x4xbf16> {titan.grad = "q"}, tensor<1x8x2x4xf32> {titan.grad = "qf"}, tensor<8x8xbf16> {titan.grad = "e"}) {
  %y = titan.linear %x, %w : (tensor<1x8x8xbf16>, tensor<8x8xbf16>) -> tensor<1x8x8xbf16>
  %dx, %dn = titan.rms_norm_grad %x, %n, %y {eps = 1.0e-5 : f64} : (tensor<1x8x8xbf16>, tensor<8xbf16>, tensor<1x8x8xbf16>) -> (tensor<1x8x8xbf16>, tensor<8xbf16>)
  %v = titan.reshape %y : tensor<1x8x8xbf16> -> tensor<1x8x2x4xbf16>
  %o:2 = titan.attention %v, %v, %v {scale = 0.5 : f64} : (tensor<1x8x2x4xbf16>, tensor<1x8x2x4xbf16>, tensor<1x8x2x4xbf16>) -> (tensor<1x8x2x4xbf16>, tensor<1x2x8xf32>)
  %dq:3 = titan.attention_grad %v, %v, %v, %o#0, %o#1, %v {scale = 0.5 : f64} : (tensor<1x8x2x4xbf16>, tensor<1x8x2x4xbf16>, tensor<1x8x2x4xbf16>, tensor<1x8x2x4xbf16>, tensor<1x2x8xf32>, tensor<1x8x2x4xbf16>) -> (tensor<1x8x2x4xbf16>, tensor<1x8x2x4xbf16>, tensor<1x8x2x4xbf16>)
  %of:2 = titan.attention %qf, %qf, %qf {scale = 0.5 : f64} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x2x8xf32>)
  %yf = titan.cast %dx : tensor<1x8x8xbf16> to tensor<1x8x8xf32>
  %loss, %loss_lse = titan.cross_entropy %yf, %l : (tensor<1x8x8xf32>, tensor<1x8xi32>) -> (tensor<f32>, tensor<1x8xf32>)
  %ge = titan.embedding_grad %y, %l : (tensor<1x8x8xbf16>, tensor<1x8xi32>) -> tensor<8x8xbf16>
  return %loss, %w, %dn, %dq#0, %of#0, %ge : tensor<f32>, tensor<8x8xbf16>, tensor<8xbf16>, tensor<1x8x2x4xbf16>, tensor<1x8x2x4xf32>, tensor<8x8xbf16>
}
func.func @optimizer_step(%p: tensor<8xbf16> {titan.param = "n"}) -> (tensor<8xbf16> {titan.param = "n"}) {
  return %p : tensor<8xbf16>
}
