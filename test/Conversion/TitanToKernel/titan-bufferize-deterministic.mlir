// RUN: titan-opt %s -split-input-file -titan-bufferize=target=cuda | FileCheck %s --check-prefix=DEFAULT
// RUN: titan-opt %s -split-input-file -titan-bufferize="target=cuda deterministic=true" | FileCheck %s --check-prefix=DET

// debug.deterministic reaches the attention gradients' kernels as their
// `deterministic` parameter (after the scale), and the CUDA plan holds the
// workspace of the algorithm it selects (include/titan/Contract/
// CUDAWorkspaces.h, as cudnn-frontend sizes cuDNN's SDPA backward on
// sm_90): at the 8B model's B 1, Hq 32, S 8192, D 128 in bf16, by default
// the f32 dQ accumulator (128 MiB) and softmax sum (1 MiB) plus 4 MiB of
// headroom, 139460608 bytes; deterministic, the softmax sum and the dP
// workspace (32 x 8192 x 8192 x 2 bytes: 4 GiB) plus the headroom,
// 4300210176 bytes.
// DEFAULT-LABEL: func.func @forward_backward(
// DEFAULT:       kernel.alloc workspace : memref<139460608xi8>
// DEFAULT-NEXT:  kernel.call "attention_grad"
// DEFAULT-SAME:  params [0.0883883{{[0-9]*}}, 0]
// DET-LABEL:     func.func @forward_backward(
// DET:           kernel.alloc workspace : memref<4300210176xi8>
// DET-NEXT:      kernel.call "attention_grad"
// DET-SAME:      params [0.0883883{{[0-9]*}}, 1]
func.func @forward_backward(%q: tensor<1x8192x32x128xbf16> {titan.param = "q"}, %k: tensor<1x8192x8x128xbf16> {titan.param = "k"},
                            %o: tensor<1x8192x32x128xbf16> {titan.param = "o"}, %lse: tensor<1x32x8192xf32> {titan.param = "lse"})
    -> (tensor<1x8192x32x128xbf16> {titan.grad = "q"}) {
  %dq:3 = titan.attention_grad %q, %k, %k, %o, %lse, %o {scale = 0.08838834764831845 : f64} : (tensor<1x8192x32x128xbf16>, tensor<1x8192x8x128xbf16>, tensor<1x8192x8x128xbf16>, tensor<1x8192x32x128xbf16>, tensor<1x32x8192xf32>, tensor<1x8192x32x128xbf16>) -> (tensor<1x8192x32x128xbf16>, tensor<1x8192x8x128xbf16>, tensor<1x8192x8x128xbf16>)
  return %dq#0 : tensor<1x8192x32x128xbf16>
}
func.func @optimizer_step(%p: tensor<8xbf16> {titan.param = "n"}) -> (tensor<8xbf16> {titan.param = "n"}) {
  return %p : tensor<8xbf16>
}

// -----

// Context parallel's attention gradient: `deterministic` follows the
// scale, before the layout's parameters (degree, kv_shift, load_balanced,
// axes); an op
// marked in the IR keeps its mark without the option. Its plan: a chunk's
// partial dQ (1 x 4 x 2 x 8 f32: 256 bytes), dK and dV (1 x 4 x 1 x 8: 256
// each), then one chunk pair's backward: by default the dQ accumulator
// and softmax sum (256 + 32 bytes: 512) and the headroom, 4195584 bytes;
// deterministic, the softmax sum (256) and dP (1 x 2 x 64 x 128 x 2:
// 32768), 4228096 bytes.
// DEFAULT-LABEL: func.func @forward_backward(
// DEFAULT:       kernel.alloc workspace : memref<4195584xi8>
// DEFAULT-NEXT:  kernel.call "context_attention_grad"
// DEFAULT-SAME:  params [5.000000e-01, 0, 2, 0, 1, 1, 3]
// DEFAULT:       kernel.alloc workspace : memref<4228096xi8>
// DEFAULT-NEXT:  kernel.call "context_attention_grad"
// DEFAULT-SAME:  params [5.000000e-01, 1, 2, 1, 1, 1, 3]
// DET-LABEL:     func.func @forward_backward(
// DET:           kernel.alloc workspace : memref<4228096xi8>
// DET-NEXT:      kernel.call "context_attention_grad"
// DET-SAME:      params [5.000000e-01, 1, 2, 0, 1, 1, 3]
// DET:           kernel.alloc workspace : memref<4228096xi8>
// DET-NEXT:      kernel.call "context_attention_grad"
// DET-SAME:      params [5.000000e-01, 1, 2, 1, 1, 1, 3]
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 2, tp = 1, load_balanced = ["cp"]>} {
  func.func @forward_backward(%q: tensor<1x8x2x8xbf16> {titan.param = "q"}, %k: tensor<1x8x1x8xbf16> {titan.param = "k"},
                              %o: tensor<1x8x2x8xbf16> {titan.param = "o"}, %lse: tensor<1x2x8xf32> {titan.param = "lse"})
      -> (tensor<1x8x2x8xbf16> {titan.grad = "q"}, tensor<1x8x2x8xbf16> {titan.grad = "q2"}) {
    %g:3 = dist.context_attention_grad %q, %k, %k, %o, %lse, %o axes ["cp"] kv_shift 0 {scale = 0.5 : f64} : (tensor<1x8x2x8xbf16>, tensor<1x8x1x8xbf16>, tensor<1x8x1x8xbf16>, tensor<1x8x2x8xbf16>, tensor<1x2x8xf32>, tensor<1x8x2x8xbf16>) -> (tensor<1x8x2x8xbf16>, tensor<1x8x1x8xbf16>, tensor<1x8x1x8xbf16>)
    %h:3 = dist.context_attention_grad %q, %k, %k, %o, %lse, %o axes ["cp"] kv_shift 1 {scale = 0.5 : f64, deterministic} : (tensor<1x8x2x8xbf16>, tensor<1x8x1x8xbf16>, tensor<1x8x1x8xbf16>, tensor<1x8x2x8xbf16>, tensor<1x2x8xf32>, tensor<1x8x2x8xbf16>) -> (tensor<1x8x2x8xbf16>, tensor<1x8x1x8xbf16>, tensor<1x8x1x8xbf16>)
    return %g#0, %h#0 : tensor<1x8x2x8xbf16>, tensor<1x8x2x8xbf16>
  }
  func.func @optimizer_step(%p: tensor<8xbf16> {titan.param = "n"}) -> (tensor<8xbf16> {titan.param = "n"}) {
    return %p : tensor<8xbf16>
  }
}
