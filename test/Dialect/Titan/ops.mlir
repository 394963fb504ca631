// Every titan op parses, verifies and prints back the same, in both the
// custom and the generic form.
// RUN: titan-opt %s | titan-opt | FileCheck %s
// RUN: titan-opt %s --mlir-print-op-generic | titan-opt | FileCheck %s

// CHECK-LABEL: func.func @embedding
// CHECK-SAME: {titan.param = "tok_embeddings.weight"}
// CHECK-SAME: {titan.input = "tokens"}
// CHECK: titan.embedding %{{.*}}[%{{.*}}] : tensor<64x16xf32>, tensor<2x8xi32> -> tensor<2x8x16xf32>
func.func @embedding(%w: tensor<64x16xf32> {titan.param = "tok_embeddings.weight"},
                     %t: tensor<2x8xi32> {titan.input = "tokens"}) -> tensor<2x8x16xf32> {
  %0 = titan.embedding %w[%t] : tensor<64x16xf32>, tensor<2x8xi32> -> tensor<2x8x16xf32>
  return %0 : tensor<2x8x16xf32>
}

// CHECK-LABEL: func.func @embedding_bf16_i64
// CHECK: titan.embedding %{{.*}}[%{{.*}}] : tensor<64x16xbf16>, tensor<5xi64> -> tensor<5x16xbf16>
func.func @embedding_bf16_i64(%w: tensor<64x16xbf16>, %t: tensor<5xi64>) -> tensor<5x16xbf16> {
  %0 = titan.embedding %w[%t] : tensor<64x16xbf16>, tensor<5xi64> -> tensor<5x16xbf16>
  return %0 : tensor<5x16xbf16>
}

// CHECK-LABEL: func.func @rms_norm
// CHECK: titan.rms_norm %{{.*}}, %{{.*}} {eps = 1.000000e-05 : f64} : (tensor<2x8x16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
func.func @rms_norm(%x: tensor<2x8x16xf32>, %w: tensor<16xf32>) -> tensor<2x8x16xf32> {
  %0 = titan.rms_norm %x, %w {eps = 1.0e-5 : f64} : (tensor<2x8x16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
  return %0 : tensor<2x8x16xf32>
}

// CHECK-LABEL: func.func @rope
// CHECK: %[[A:.*]] = titan.rope_angles {theta = 1.000000e+04 : f64} : tensor<8x4x2xf32>
// CHECK: titan.rope %{{.*}}, %[[A]] : (tensor<2x8x4x8xf32>, tensor<8x4x2xf32>) -> tensor<2x8x4x8xf32>
func.func @rope(%x: tensor<2x8x4x8xf32>) -> tensor<2x8x4x8xf32> {
  %a = titan.rope_angles {theta = 1.0e4 : f64} : tensor<8x4x2xf32>
  %0 = titan.rope %x, %a : (tensor<2x8x4x8xf32>, tensor<8x4x2xf32>) -> tensor<2x8x4x8xf32>
  return %0#0 : tensor<2x8x4x8xf32>
}

// CHECK-LABEL: func.func @rope_angles_scaled
// CHECK: titan.rope_angles {high_freq_factor = 4.000000e+00 : f64, low_freq_factor = 1.000000e+00 : f64, original_max_position_embeddings = 8192 : i64, scaling_factor = 8.000000e+00 : f64, theta = 5.000000e+05 : f64} : tensor<16x64x2xf32>
func.func @rope_angles_scaled() -> tensor<16x64x2xf32> {
  %a = titan.rope_angles {theta = 5.0e5 : f64, scaling_factor = 8.0 : f64, low_freq_factor = 1.0 : f64,
                          high_freq_factor = 4.0 : f64, original_max_position_embeddings = 8192 : i64} : tensor<16x64x2xf32>
  return %a : tensor<16x64x2xf32>
}

// CHECK-LABEL: func.func @attention_gqa
// CHECK: titan.attention %{{.*}}, %{{.*}}, %{{.*}} {scale = 3.535530e-01 : f64} : (tensor<2x8x4x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>) -> (tensor<2x8x4x8xf32>, tensor<2x4x8xf32>)
func.func @attention_gqa(%q: tensor<2x8x4x8xf32>, %k: tensor<2x8x2x8xf32>, %v: tensor<2x8x2x8xf32>) -> tensor<2x8x4x8xf32> {
  %0:2 = titan.attention %q, %k, %v {scale = 0.353553 : f64} : (tensor<2x8x4x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>) -> (tensor<2x8x4x8xf32>, tensor<2x4x8xf32>)
  return %0#0 : tensor<2x8x4x8xf32>
}

// TorchTitan's block-causal mask: each position's document start.
// CHECK-LABEL: func.func @attention_documents
// CHECK: titan.attention %{{.*}}, %{{.*}}, %{{.*}} documents %{{.*}} {scale = 3.535530e-01 : f64} : (tensor<2x8x4x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8xi32>) -> (tensor<2x8x4x8xf32>, tensor<2x4x8xf32>)
// CHECK: titan.attention_grad {{.*}} documents %{{.*}} {scale = 3.535530e-01 : f64}
func.func @attention_documents(%q: tensor<2x8x4x8xf32>, %k: tensor<2x8x2x8xf32>, %v: tensor<2x8x2x8xf32>, %d: tensor<2x8xi32>) -> tensor<2x8x4x8xf32> {
  %0:2 = titan.attention %q, %k, %v documents %d {scale = 0.353553 : f64} : (tensor<2x8x4x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8xi32>) -> (tensor<2x8x4x8xf32>, tensor<2x4x8xf32>)
  %1:3 = titan.attention_grad %q, %k, %v, %0#0, %0#1, %0#0 documents %d {scale = 0.353553 : f64} : (tensor<2x8x4x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x4x8xf32>, tensor<2x4x8xf32>, tensor<2x8x4x8xf32>, tensor<2x8xi32>) -> (tensor<2x8x4x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>)
  return %1#0 : tensor<2x8x4x8xf32>
}

// CHECK-LABEL: func.func @linear
// CHECK: titan.linear %{{.*}}, %{{.*}} : (tensor<2x8x16xf32>, tensor<48x16xf32>) -> tensor<2x8x48xf32>
// CHECK: titan.linear %{{.*}}, %{{.*}} : (tensor<16xf32>, tensor<48x16xf32>) -> tensor<48xf32>
func.func @linear(%x: tensor<2x8x16xf32>, %v: tensor<16xf32>, %w: tensor<48x16xf32>) -> (tensor<2x8x48xf32>, tensor<48xf32>) {
  %0 = titan.linear %x, %w : (tensor<2x8x16xf32>, tensor<48x16xf32>) -> tensor<2x8x48xf32>
  %1 = titan.linear %v, %w : (tensor<16xf32>, tensor<48x16xf32>) -> tensor<48xf32>
  return %0, %1 : tensor<2x8x48xf32>, tensor<48xf32>
}

// CHECK-LABEL: func.func @ffn_pieces
// CHECK: titan.swiglu %{{.*}}, %{{.*}} : tensor<2x8x48xf32>
// CHECK: titan.silu %{{.*}} : tensor<2x8x48xf32>
// CHECK: titan.mul %{{.*}}, %{{.*}} : tensor<2x8x48xf32>
// CHECK: titan.add %{{.*}}, %{{.*}} : tensor<2x8x48xf32>
func.func @ffn_pieces(%g: tensor<2x8x48xf32>, %u: tensor<2x8x48xf32>) -> tensor<2x8x48xf32> {
  %0 = titan.swiglu %g, %u : tensor<2x8x48xf32>
  %1 = titan.silu %g : tensor<2x8x48xf32>
  %2 = titan.mul %1, %u : tensor<2x8x48xf32>
  %3 = titan.add %0, %2 : tensor<2x8x48xf32>
  return %3 : tensor<2x8x48xf32>
}

// CHECK-LABEL: func.func @reshape
// CHECK: titan.reshape %{{.*}} : tensor<2x8x16xf32> -> tensor<2x8x4x4xf32>
func.func @reshape(%x: tensor<2x8x16xf32>) -> tensor<2x8x4x4xf32> {
  %0 = titan.reshape %x : tensor<2x8x16xf32> -> tensor<2x8x4x4xf32>
  return %0 : tensor<2x8x4x4xf32>
}

// CHECK-LABEL: func.func @cross_entropy
// CHECK-SAME: {titan.input = "labels"}
// CHECK: %{{.*}}, %[[LSE:.*]] = titan.cross_entropy %{{.*}}, %{{.*}} : (tensor<2x8x64xf32>, tensor<2x8xi32>) -> (tensor<f32>, tensor<2x8xf32>)
// CHECK: titan.cross_entropy_grad %{{.*}}, %{{.*}}, %[[LSE]], %{{.*}} : (tensor<2x8x64xf32>, tensor<2x8xi32>, tensor<2x8xf32>, tensor<f32>) -> tensor<2x8x64xf32>
func.func @cross_entropy(%l: tensor<2x8x64xf32>, %y: tensor<2x8xi32> {titan.input = "labels"}, %g: tensor<f32>) -> tensor<f32> {
  %0, %lse0 = titan.cross_entropy %l, %y : (tensor<2x8x64xf32>, tensor<2x8xi32>) -> (tensor<f32>, tensor<2x8xf32>)
  %1 = titan.cross_entropy_grad %l, %y, %lse0, %g : (tensor<2x8x64xf32>, tensor<2x8xi32>, tensor<2x8xf32>, tensor<f32>) -> tensor<2x8x64xf32>
  return %0 : tensor<f32>
}

// The lse is in the accumulator type: f32 for bf16 logits, f64 for f64.
// CHECK-LABEL: func.func @cross_entropy_lse_types
// CHECK: titan.cross_entropy %{{.*}}, %{{.*}} : (tensor<8x64xbf16>, tensor<8xi32>) -> (tensor<f32>, tensor<8xf32>)
// CHECK: titan.cross_entropy %{{.*}}, %{{.*}} : (tensor<8x64xf64>, tensor<8xi32>) -> (tensor<f32>, tensor<8xf64>)
func.func @cross_entropy_lse_types(%l: tensor<8x64xbf16>, %d: tensor<8x64xf64>, %y: tensor<8xi32>) {
  %0, %lse0 = titan.cross_entropy %l, %y : (tensor<8x64xbf16>, tensor<8xi32>) -> (tensor<f32>, tensor<8xf32>)
  %1, %lse1 = titan.cross_entropy %d, %y : (tensor<8x64xf64>, tensor<8xi32>) -> (tensor<f32>, tensor<8xf64>)
  return
}

// Loss parallel's pieces and the vocabulary-sharded embedding.
// CHECK-LABEL: func.func @cross_entropy_pieces
// CHECK: titan.embedding %{{.*}}[%{{.*}}] vocab_start %{{.*}} : tensor<i32> : tensor<32x16xf32>, tensor<2x8xi32> -> tensor<2x8x16xf32>
// CHECK: titan.row_max %{{.*}} : tensor<2x8x32xf32> -> tensor<2x8xf32>
// CHECK: titan.sum_exp %{{.*}}, %{{.*}} : (tensor<2x8x32xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK: titan.target_logit %{{.*}}, %{{.*}} vocab_start %{{.*}} : tensor<i32> : (tensor<2x8x32xf32>, tensor<2x8xi32>) -> tensor<2x8xf32>
// CHECK: titan.target_logit %{{.*}}, %{{.*}} : (tensor<2x8x32xf32>, tensor<2x8xi32>) -> tensor<2x8xf32>
// CHECK: titan.cross_entropy_from_stats %{{.*}}, %{{.*}}, %{{.*}} : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<f32>
// CHECK: titan.sum_exp_grad %{{.*}}, %{{.*}}, %{{.*}} : (tensor<2x8x32xf32>, tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8x32xf32>
// CHECK: titan.target_logit_grad %{{.*}}, %{{.*}} vocab_start %{{.*}} : tensor<i32> : (tensor<2x8xf32>, tensor<2x8xi32>) -> tensor<2x8x32xf32>
// CHECK: titan.cross_entropy_from_stats_grad %{{.*}}, %{{.*}} : (tensor<2x8xf32>, tensor<f32>) -> (tensor<2x8xf32>, tensor<2x8xf32>)
// CHECK: titan.embedding_grad %{{.*}}, %{{.*}} vocab_start %{{.*}} : tensor<i32> : (tensor<2x8x16xf32>, tensor<2x8xi32>) -> tensor<32x16xf32>
func.func @cross_entropy_pieces(%w: tensor<32x16xf32>, %l: tensor<2x8x32xf32>, %y: tensor<2x8xi32>, %start: tensor<i32>, %g: tensor<f32>) {
  %h = titan.embedding %w[%y] vocab_start %start : tensor<i32> : tensor<32x16xf32>, tensor<2x8xi32> -> tensor<2x8x16xf32>
  %m = titan.row_max %l : tensor<2x8x32xf32> -> tensor<2x8xf32>
  %s = titan.sum_exp %l, %m : (tensor<2x8x32xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %t = titan.target_logit %l, %y vocab_start %start : tensor<i32> : (tensor<2x8x32xf32>, tensor<2x8xi32>) -> tensor<2x8xf32>
  %t2 = titan.target_logit %l, %y : (tensor<2x8x32xf32>, tensor<2x8xi32>) -> tensor<2x8xf32>
  %loss = titan.cross_entropy_from_stats %m, %s, %t : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<f32>
  %ds = titan.sum_exp_grad %l, %m, %s : (tensor<2x8x32xf32>, tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8x32xf32>
  %dt = titan.target_logit_grad %t, %y vocab_start %start : tensor<i32> : (tensor<2x8xf32>, tensor<2x8xi32>) -> tensor<2x8x32xf32>
  %a, %b = titan.cross_entropy_from_stats_grad %s, %g : (tensor<2x8xf32>, tensor<f32>) -> (tensor<2x8xf32>, tensor<2x8xf32>)
  %dw = titan.embedding_grad %h, %y vocab_start %start : tensor<i32> : (tensor<2x8x16xf32>, tensor<2x8xi32>) -> tensor<32x16xf32>
  return
}

// CHECK-LABEL: func.func @casts
// CHECK: titan.cast %{{.*}} : tensor<4x8xf32> to tensor<4x8xbf16>
// CHECK: titan.cast %{{.*}} : tensor<4x8xbf16> to tensor<4x8xf8E4M3FN>
// CHECK: titan.linear %{{.*}}, %{{.*}} : (tensor<2x8xf8E4M3FN>, tensor<4x8xf8E4M3FN>) -> tensor<2x4xbf16>
func.func @casts(%w: tensor<4x8xf32>, %x: tensor<2x8xf8E4M3FN>) -> (tensor<4x8xf8E4M3FN>, tensor<2x4xbf16>) {
  %0 = titan.cast %w : tensor<4x8xf32> to tensor<4x8xbf16>
  %1 = titan.cast %0 : tensor<4x8xbf16> to tensor<4x8xf8E4M3FN>
  %2 = titan.linear %x, %1 : (tensor<2x8xf8E4M3FN>, tensor<4x8xf8E4M3FN>) -> tensor<2x4xbf16>
  return %1, %2 : tensor<4x8xf8E4M3FN>, tensor<2x4xbf16>
}

// CHECK-LABEL: func.func @slice_concat
// CHECK: titan.slice %{{.*}} [0, 2, 0] : tensor<2x8x4xf32> -> tensor<2x4x4xf32>
// CHECK: titan.slice_grad %{{.*}} [0, 2, 0] : tensor<2x4x4xf32> -> tensor<2x8x4xf32>
// CHECK: titan.concat %{{.*}}, %{{.*}} dim 1 : tensor<2x4x4xf32>, tensor<2x4x4xf32> -> tensor<2x8x4xf32>
func.func @slice_concat(%x: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  %b = titan.slice %x [0, 2, 0] : tensor<2x8x4xf32> -> tensor<2x4x4xf32>
  %g = titan.slice_grad %b [0, 2, 0] : tensor<2x4x4xf32> -> tensor<2x8x4xf32>
  %c = titan.concat %b, %b dim 1 : tensor<2x4x4xf32>, tensor<2x4x4xf32> -> tensor<2x8x4xf32>
  return %c : tensor<2x8x4xf32>
}

// CHECK-LABEL: func.func @float8_transposed
// CHECK: titan.quantize %{{.*}}, %{{.*}} {transposed} : (tensor<2x8x32xbf16>, tensor<1x1x32xf32>) -> tensor<32x2x8xf8E4M3FN>
// CHECK: titan.quantize %{{.*}}, %{{.*}} {transposed} : (tensor<2x8x16xbf16>, tensor<f32>) -> tensor<16x2x8xf8E5M2>
// CHECK: titan.scaled_matmul grad_weight %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {lhs_transposed, rhs_transposed} : (tensor<16x2x8xf8E5M2>, tensor<f32>, tensor<32x2x8xf8E4M3FN>, tensor<1x1x32xf32>) -> tensor<16x32xbf16>
// CHECK: titan.scaled_matmul grad_input %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {rhs_transposed} : (tensor<2x8x16xf8E5M2>, tensor<f32>, tensor<32x16xf8E4M3FN>, tensor<f32>) -> tensor<2x8x32xbf16>
func.func @float8_transposed(%x: tensor<2x8x32xbf16>, %sx: tensor<1x1x32xf32>, %dy: tensor<2x8x16xbf16>, %s: tensor<f32>, %qdy: tensor<2x8x16xf8E5M2>, %qw: tensor<32x16xf8E4M3FN>) -> (tensor<16x32xbf16>, tensor<2x8x32xbf16>) {
  %qx = titan.quantize %x, %sx {transposed} : (tensor<2x8x32xbf16>, tensor<1x1x32xf32>) -> tensor<32x2x8xf8E4M3FN>
  %qdyt = titan.quantize %dy, %s {transposed} : (tensor<2x8x16xbf16>, tensor<f32>) -> tensor<16x2x8xf8E5M2>
  %dw = titan.scaled_matmul grad_weight %qdyt, %s, %qx, %sx {lhs_transposed, rhs_transposed} : (tensor<16x2x8xf8E5M2>, tensor<f32>, tensor<32x2x8xf8E4M3FN>, tensor<1x1x32xf32>) -> tensor<16x32xbf16>
  %dx = titan.scaled_matmul grad_input %qdy, %s, %qw, %s {rhs_transposed} : (tensor<2x8x16xf8E5M2>, tensor<f32>, tensor<32x16xf8E4M3FN>, tensor<f32>) -> tensor<2x8x32xbf16>
  return %dw, %dx : tensor<16x32xbf16>, tensor<2x8x32xbf16>
}

// CHECK-LABEL: func.func @transpose
// CHECK: titan.transpose %{{.*}} : tensor<16x32xf8E4M3FN> -> tensor<32x16xf8E4M3FN>
// CHECK: titan.transpose %{{.*}} : tensor<2x8x4xbf16> -> tensor<4x2x8xbf16>
func.func @transpose(%w: tensor<16x32xf8E4M3FN>, %x: tensor<2x8x4xbf16>) -> (tensor<32x16xf8E4M3FN>, tensor<4x2x8xbf16>) {
  %wt = titan.transpose %w : tensor<16x32xf8E4M3FN> -> tensor<32x16xf8E4M3FN>
  %xt = titan.transpose %x : tensor<2x8x4xbf16> -> tensor<4x2x8xbf16>
  return %wt, %xt : tensor<32x16xf8E4M3FN>, tensor<4x2x8xbf16>
}
