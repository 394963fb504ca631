// Every titan verifier message, on the smallest IR that triggers it.
// RUN: titan-opt %s -split-input-file -verify-diagnostics

func.func @embedding_weight_rank(%w: tensor<64xf32>, %t: tensor<2x8xi32>) {
  // expected-error @+1 {{weight must be a 2-D (vocab x dim) tensor, got rank 1 (64)}}
  %0 = titan.embedding %w[%t] : tensor<64xf32>, tensor<2x8xi32> -> tensor<2x8x16xf32>
  return
}

// -----

func.func @embedding_result_rank(%w: tensor<64x16xf32>, %t: tensor<2x8xi32>) {
  // expected-error @+1 {{result rank 2 must be tokens rank + 1 (3)}}
  %0 = titan.embedding %w[%t] : tensor<64x16xf32>, tensor<2x8xi32> -> tensor<2x16xf32>
  return
}

// -----

func.func @embedding_result_vs_tokens(%w: tensor<64x16xf32>, %t: tensor<2x8xi32>) {
  // expected-error @+1 {{result dimension 1 (7) must equal tokens dimension 1 (8)}}
  %0 = titan.embedding %w[%t] : tensor<64x16xf32>, tensor<2x8xi32> -> tensor<2x7x16xf32>
  return
}

// -----

func.func @embedding_result_vs_weight(%w: tensor<64x16xf32>, %t: tensor<2x8xi32>) {
  // expected-error @+1 {{result dimension 2 (32) must equal weight dimension 1 (16)}}
  %0 = titan.embedding %w[%t] : tensor<64x16xf32>, tensor<2x8xi32> -> tensor<2x8x32xf32>
  return
}

// -----

func.func @embedding_element_type(%w: tensor<64x16xf32>, %t: tensor<2x8xi32>) {
  // expected-error @+1 {{result element type 'bf16' must equal weight element type 'f32'}}
  %0 = titan.embedding %w[%t] : tensor<64x16xf32>, tensor<2x8xi32> -> tensor<2x8x16xbf16>
  return
}

// -----

func.func @embedding_float_tokens(%w: tensor<64x16xf32>, %t: tensor<2x8xf32>) {
  // expected-error @+1 {{operand #1 must be statically shaped tensor of signless integer values}}
  %0 = titan.embedding %w[%t] : tensor<64x16xf32>, tensor<2x8xf32> -> tensor<2x8x16xf32>
  return
}

// -----

func.func @embedding_dynamic_shape(%w: tensor<?x16xf32>, %t: tensor<2x8xi32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of floating-point values}}
  %0 = titan.embedding %w[%t] : tensor<?x16xf32>, tensor<2x8xi32> -> tensor<2x8x16xf32>
  return
}

// -----

func.func @rms_norm_scalar(%x: tensor<f32>, %w: tensor<16xf32>) {
  // expected-error @+1 {{input must have rank >= 1, got a scalar}}
  %0 = titan.rms_norm %x, %w {eps = 1.0e-5 : f64} : (tensor<f32>, tensor<16xf32>) -> tensor<f32>
  return
}

// -----

func.func @rms_norm_weight_rank(%x: tensor<2x16xf32>, %w: tensor<1x16xf32>) {
  // expected-error @+1 {{weight must be a 1-D (dim) tensor, got rank 2 (1x16)}}
  %0 = titan.rms_norm %x, %w {eps = 1.0e-5 : f64} : (tensor<2x16xf32>, tensor<1x16xf32>) -> tensor<2x16xf32>
  return
}

// -----

func.func @rms_norm_weight_dim(%x: tensor<2x8x16xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{weight dimension 0 (8) must equal input dimension 2 (16)}}
  %0 = titan.rms_norm %x, %w {eps = 1.0e-5 : f64} : (tensor<2x8x16xf32>, tensor<8xf32>) -> tensor<2x8x16xf32>
  return
}

// -----

func.func @rms_norm_weight_type(%x: tensor<2x16xf32>, %w: tensor<16xbf16>) {
  // expected-error @+1 {{weight element type 'bf16' must equal input element type 'f32'}}
  %0 = titan.rms_norm %x, %w {eps = 1.0e-5 : f64} : (tensor<2x16xf32>, tensor<16xbf16>) -> tensor<2x16xf32>
  return
}

// -----

func.func @rms_norm_result(%x: tensor<2x16xf32>, %w: tensor<16xf32>) {
  // expected-error @+1 {{result type 'tensor<16x2xf32>' must equal input type 'tensor<2x16xf32>'}}
  %0 = titan.rms_norm %x, %w {eps = 1.0e-5 : f64} : (tensor<2x16xf32>, tensor<16xf32>) -> tensor<16x2xf32>
  return
}

// -----

func.func @rms_norm_eps(%x: tensor<2x16xf32>, %w: tensor<16xf32>) {
  // expected-error @+1 {{attribute 'eps' must be positive, got 0}}
  %0 = titan.rms_norm %x, %w {eps = 0.0 : f64} : (tensor<2x16xf32>, tensor<16xf32>) -> tensor<2x16xf32>
  return
}

// -----

func.func @rope_angles_rank() {
  // expected-error @+1 {{result must be a 3-D (positions x head_dim/2 x 2) tensor, got rank 1 (8)}}
  %0 = titan.rope_angles {theta = 1.0e4 : f64} : tensor<8xf32>
  return
}

// -----

func.func @rope_angles_f32_only() {
  // expected-error @+1 {{result #0 must be statically shaped tensor of 32-bit float values}}
  %0 = titan.rope_angles {theta = 1.0e4 : f64} : tensor<8x4x2xbf16>
  return
}

// -----

func.func @rope_angles_cos_sin() {
  // expected-error @+1 {{result dimension 2 (1) must be 2 (cos, sin)}}
  %0 = titan.rope_angles {theta = 1.0e4 : f64} : tensor<8x4x1xf32>
  return
}

// -----

func.func @rope_angles_theta() {
  // expected-error @+1 {{attribute 'theta' must be positive, got -1}}
  %0 = titan.rope_angles {theta = -1.0 : f64} : tensor<8x4x2xf32>
  return
}

// -----

func.func @rope_angles_partial_scaling() {
  // expected-error @+1 {{RoPE scaling needs all of 'scaling_factor', 'low_freq_factor', 'high_freq_factor' and 'original_max_position_embeddings', or none; got 2 of 4}}
  %0 = titan.rope_angles {theta = 1.0e4 : f64, scaling_factor = 8.0 : f64, low_freq_factor = 1.0 : f64} : tensor<8x4x2xf32>
  return
}

// -----

func.func @rope_angles_scaling_factor() {
  // expected-error @+1 {{attribute 'scaling_factor' must be positive, got 0}}
  %0 = titan.rope_angles {theta = 1.0e4 : f64, scaling_factor = 0.0 : f64, low_freq_factor = 1.0 : f64,
                          high_freq_factor = 4.0 : f64, original_max_position_embeddings = 8192 : i64} : tensor<8x4x2xf32>
  return
}

// -----

func.func @rope_angles_low_freq() {
  // expected-error @+1 {{attribute 'low_freq_factor' must be positive, got 0}}
  %0 = titan.rope_angles {theta = 1.0e4 : f64, scaling_factor = 8.0 : f64, low_freq_factor = 0.0 : f64,
                          high_freq_factor = 4.0 : f64, original_max_position_embeddings = 8192 : i64} : tensor<8x4x2xf32>
  return
}

// -----

func.func @rope_angles_high_freq() {
  // expected-error @+1 {{attribute 'high_freq_factor' (1) must be greater than 'low_freq_factor' (1)}}
  %0 = titan.rope_angles {theta = 1.0e4 : f64, scaling_factor = 8.0 : f64, low_freq_factor = 1.0 : f64,
                          high_freq_factor = 1.0 : f64, original_max_position_embeddings = 8192 : i64} : tensor<8x4x2xf32>
  return
}

// -----

func.func @rope_angles_original_max() {
  // expected-error @+1 {{attribute 'original_max_position_embeddings' must be positive, got 0}}
  %0 = titan.rope_angles {theta = 1.0e4 : f64, scaling_factor = 8.0 : f64, low_freq_factor = 1.0 : f64,
                          high_freq_factor = 4.0 : f64, original_max_position_embeddings = 0 : i64} : tensor<8x4x2xf32>
  return
}

// -----

func.func @rope_input_rank(%x: tensor<2x8x32xf32>, %a: tensor<8x4x2xf32>) {
  // expected-error @+1 {{input must be a 4-D (batch x seq x heads x head_dim) tensor, got rank 3 (2x8x32)}}
  %0 = titan.rope %x, %a : (tensor<2x8x32xf32>, tensor<8x4x2xf32>) -> tensor<2x8x32xf32>
  return
}

// -----

func.func @rope_angles_operand_rank(%x: tensor<2x8x4x8xf32>, %a: tensor<32xf32>) {
  // expected-error @+1 {{freqs_cis must be a 3-D (seq x head_dim/2 x 2) tensor, got rank 1 (32)}}
  %0 = titan.rope %x, %a : (tensor<2x8x4x8xf32>, tensor<32xf32>) -> tensor<2x8x4x8xf32>
  return
}

// -----

func.func @rope_cos_sin(%x: tensor<2x8x4x8xf32>, %a: tensor<8x4x3xf32>) {
  // expected-error @+1 {{freqs_cis dimension 2 (3) must be 2 (cos, sin)}}
  %0 = titan.rope %x, %a : (tensor<2x8x4x8xf32>, tensor<8x4x3xf32>) -> tensor<2x8x4x8xf32>
  return
}

// -----

func.func @rope_odd_head_dim(%x: tensor<2x8x4x7xf32>, %a: tensor<8x3x2xf32>) {
  // expected-error @+1 {{input dimension 3 (head_dim = 7) must be even to form rotation pairs}}
  %0 = titan.rope %x, %a : (tensor<2x8x4x7xf32>, tensor<8x3x2xf32>) -> tensor<2x8x4x7xf32>
  return
}

// -----

func.func @rope_seq(%x: tensor<2x8x4x8xf32>, %a: tensor<16x4x2xf32>) {
  // expected-error @+1 {{freqs_cis dimension 0 (16) must equal input dimension 1 (8)}}
  %0 = titan.rope %x, %a : (tensor<2x8x4x8xf32>, tensor<16x4x2xf32>) -> tensor<2x8x4x8xf32>
  return
}

// -----

func.func @rope_pairs(%x: tensor<2x8x4x8xf32>, %a: tensor<8x8x2xf32>) {
  // expected-error @+1 {{freqs_cis dimension 1 (8) must equal input dimension 3 / 2 (4)}}
  %0 = titan.rope %x, %a : (tensor<2x8x4x8xf32>, tensor<8x8x2xf32>) -> tensor<2x8x4x8xf32>
  return
}

// -----

func.func @rope_result(%x: tensor<2x8x4x8xf32>, %a: tensor<8x4x2xf32>) {
  // expected-error @+1 {{result type 'tensor<2x8x4x8xbf16>' must equal input type 'tensor<2x8x4x8xf32>'}}
  %0 = titan.rope %x, %a : (tensor<2x8x4x8xf32>, tensor<8x4x2xf32>) -> tensor<2x8x4x8xbf16>
  return
}

// -----

func.func @attention_query_rank(%q: tensor<2x8x32xf32>, %k: tensor<2x8x4x8xf32>, %v: tensor<2x8x4x8xf32>) {
  // expected-error @+1 {{query must be a 4-D (batch x seq x heads x head_dim) tensor, got rank 3 (2x8x32)}}
  %0:2 = titan.attention %q, %k, %v {scale = 1.0 : f64} : (tensor<2x8x32xf32>, tensor<2x8x4x8xf32>, tensor<2x8x4x8xf32>) -> (tensor<2x8x32xf32>, tensor<2x4x8xf32>)
  return
}

// -----

func.func @attention_document_starts(%q: tensor<2x8x4x8xf32>, %d: tensor<2x4xi32>) {
  // expected-error @+1 {{document_starts must be 'tensor<2x8xi32>' (batch x the whole sequence, each position's document start), not 'tensor<2x4xi32>'}}
  %0:2 = titan.attention %q, %q, %q documents %d {scale = 1.0 : f64} : (tensor<2x8x4x8xf32>, tensor<2x8x4x8xf32>, tensor<2x8x4x8xf32>, tensor<2x4xi32>) -> (tensor<2x8x4x8xf32>, tensor<2x4x8xf32>)
  return
}

// -----

func.func @attention_key_rank(%q: tensor<2x8x4x8xf32>, %k: tensor<2x8x32xf32>, %v: tensor<2x8x4x8xf32>) {
  // expected-error @+1 {{key must be a 4-D (batch x seq x heads x head_dim) tensor, got rank 3 (2x8x32)}}
  %0:2 = titan.attention %q, %k, %v {scale = 1.0 : f64} : (tensor<2x8x4x8xf32>, tensor<2x8x32xf32>, tensor<2x8x4x8xf32>) -> (tensor<2x8x4x8xf32>, tensor<2x4x8xf32>)
  return
}

// -----

func.func @attention_value_rank(%q: tensor<2x8x4x8xf32>, %k: tensor<2x8x4x8xf32>, %v: tensor<2x8x32xf32>) {
  // expected-error @+1 {{value must be a 4-D (batch x seq x heads x head_dim) tensor, got rank 3 (2x8x32)}}
  %0:2 = titan.attention %q, %k, %v {scale = 1.0 : f64} : (tensor<2x8x4x8xf32>, tensor<2x8x4x8xf32>, tensor<2x8x32xf32>) -> (tensor<2x8x4x8xf32>, tensor<2x4x8xf32>)
  return
}

// -----

func.func @attention_value_vs_key(%q: tensor<2x8x4x8xf32>, %k: tensor<2x8x2x8xf32>, %v: tensor<2x8x4x8xf32>) {
  // expected-error @+1 {{value dimension 2 (4) must equal key dimension 2 (2)}}
  %0:2 = titan.attention %q, %k, %v {scale = 1.0 : f64} : (tensor<2x8x4x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x4x8xf32>) -> (tensor<2x8x4x8xf32>, tensor<2x4x8xf32>)
  return
}

// -----

func.func @attention_seq(%q: tensor<2x8x4x8xf32>, %k: tensor<2x16x4x8xf32>, %v: tensor<2x16x4x8xf32>) {
  // expected-error @+1 {{key dimension 1 (16) must equal query dimension 1 (8)}}
  %0:2 = titan.attention %q, %k, %v {scale = 1.0 : f64} : (tensor<2x8x4x8xf32>, tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>) -> (tensor<2x8x4x8xf32>, tensor<2x4x8xf32>)
  return
}

// -----

func.func @attention_head_dim(%q: tensor<2x8x4x8xf32>, %k: tensor<2x8x4x4xf32>, %v: tensor<2x8x4x4xf32>) {
  // expected-error @+1 {{key dimension 3 (4) must equal query dimension 3 (8)}}
  %0:2 = titan.attention %q, %k, %v {scale = 1.0 : f64} : (tensor<2x8x4x8xf32>, tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32>) -> (tensor<2x8x4x8xf32>, tensor<2x4x8xf32>)
  return
}

// -----

func.func @attention_gqa_groups(%q: tensor<2x8x6x8xf32>, %k: tensor<2x8x4x8xf32>, %v: tensor<2x8x4x8xf32>) {
  // expected-error @+1 {{query heads (dimension 2 = 6) must be a multiple of key/value heads (dimension 2 = 4)}}
  %0:2 = titan.attention %q, %k, %v {scale = 1.0 : f64} : (tensor<2x8x6x8xf32>, tensor<2x8x4x8xf32>, tensor<2x8x4x8xf32>) -> (tensor<2x8x6x8xf32>, tensor<2x6x8xf32>)
  return
}

// -----

func.func @attention_key_type(%q: tensor<2x8x4x8xf32>, %k: tensor<2x8x4x8xbf16>, %v: tensor<2x8x4x8xbf16>) {
  // expected-error @+1 {{key element type 'bf16' must equal query element type 'f32'}}
  %0:2 = titan.attention %q, %k, %v {scale = 1.0 : f64} : (tensor<2x8x4x8xf32>, tensor<2x8x4x8xbf16>, tensor<2x8x4x8xbf16>) -> (tensor<2x8x4x8xf32>, tensor<2x4x8xf32>)
  return
}

// -----

func.func @attention_value_type(%q: tensor<2x8x4x8xf32>, %k: tensor<2x8x4x8xf32>, %v: tensor<2x8x4x8xf16>) {
  // expected-error @+1 {{value element type 'f16' must equal query element type 'f32'}}
  %0:2 = titan.attention %q, %k, %v {scale = 1.0 : f64} : (tensor<2x8x4x8xf32>, tensor<2x8x4x8xf32>, tensor<2x8x4x8xf16>) -> (tensor<2x8x4x8xf32>, tensor<2x4x8xf32>)
  return
}

// -----

func.func @attention_result(%q: tensor<2x8x4x8xf32>, %k: tensor<2x8x4x8xf32>, %v: tensor<2x8x4x8xf32>) {
  // expected-error @+1 {{result type 'tensor<2x8x32xf32>' must equal query type 'tensor<2x8x4x8xf32>'}}
  %0:2 = titan.attention %q, %k, %v {scale = 1.0 : f64} : (tensor<2x8x4x8xf32>, tensor<2x8x4x8xf32>, tensor<2x8x4x8xf32>) -> (tensor<2x8x32xf32>, tensor<2x4x8xf32>)
  return
}

// -----

func.func @attention_lse_shape(%q: tensor<2x8x4x8xf32>, %k: tensor<2x8x4x8xf32>, %v: tensor<2x8x4x8xf32>) {
  // expected-error @+1 {{lse must be 'tensor<2x4x8xf32>' (batch x query heads x seq, in the accumulator type), not 'tensor<2x8x4xf32>'}}
  %0:2 = titan.attention %q, %k, %v {scale = 1.0 : f64} : (tensor<2x8x4x8xf32>, tensor<2x8x4x8xf32>, tensor<2x8x4x8xf32>) -> (tensor<2x8x4x8xf32>, tensor<2x8x4xf32>)
  return
}

// -----

func.func @attention_lse_type(%q: tensor<2x8x4x8xbf16>, %k: tensor<2x8x4x8xbf16>, %v: tensor<2x8x4x8xbf16>) {
  // expected-error @+1 {{lse must be 'tensor<2x4x8xf32>' (batch x query heads x seq, in the accumulator type), not 'tensor<2x4x8xbf16>'}}
  %0:2 = titan.attention %q, %k, %v {scale = 1.0 : f64} : (tensor<2x8x4x8xbf16>, tensor<2x8x4x8xbf16>, tensor<2x8x4x8xbf16>) -> (tensor<2x8x4x8xbf16>, tensor<2x4x8xbf16>)
  return
}

// -----

func.func @attention_scale(%q: tensor<2x8x4x8xf32>, %k: tensor<2x8x4x8xf32>, %v: tensor<2x8x4x8xf32>) {
  // expected-error @+1 {{attribute 'scale' must be positive, got 0}}
  %0:2 = titan.attention %q, %k, %v {scale = 0.0 : f64} : (tensor<2x8x4x8xf32>, tensor<2x8x4x8xf32>, tensor<2x8x4x8xf32>) -> (tensor<2x8x4x8xf32>, tensor<2x4x8xf32>)
  return
}

// -----

func.func @linear_scalar(%x: tensor<f32>, %w: tensor<4x16xf32>) {
  // expected-error @+1 {{input must have rank >= 1, got a scalar}}
  %0 = titan.linear %x, %w : (tensor<f32>, tensor<4x16xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @linear_weight_rank(%x: tensor<2x16xf32>, %w: tensor<16xf32>) {
  // expected-error @+1 {{weight must be a 2-D (out x in) tensor, got rank 1 (16)}}
  %0 = titan.linear %x, %w : (tensor<2x16xf32>, tensor<16xf32>) -> tensor<2x16xf32>
  return
}

// -----

func.func @linear_in_features(%x: tensor<2x8x16xf32>, %w: tensor<48x32xf32>) {
  // expected-error @+1 {{weight dimension 1 (32) must equal input dimension 2 (16)}}
  %0 = titan.linear %x, %w : (tensor<2x8x16xf32>, tensor<48x32xf32>) -> tensor<2x8x48xf32>
  return
}

// -----

func.func @linear_result_rank(%x: tensor<2x8x16xf32>, %w: tensor<48x16xf32>) {
  // expected-error @+1 {{result rank 2 must equal input rank 3}}
  %0 = titan.linear %x, %w : (tensor<2x8x16xf32>, tensor<48x16xf32>) -> tensor<16x48xf32>
  return
}

// -----

func.func @linear_result_batch(%x: tensor<2x8x16xf32>, %w: tensor<48x16xf32>) {
  // expected-error @+1 {{result dimension 1 (4) must equal input dimension 1 (8)}}
  %0 = titan.linear %x, %w : (tensor<2x8x16xf32>, tensor<48x16xf32>) -> tensor<2x4x48xf32>
  return
}

// -----

func.func @linear_out_features(%x: tensor<2x8x16xf32>, %w: tensor<48x16xf32>) {
  // expected-error @+1 {{result dimension 2 (16) must equal weight dimension 0 (48)}}
  %0 = titan.linear %x, %w : (tensor<2x8x16xf32>, tensor<48x16xf32>) -> tensor<2x8x16xf32>
  return
}

// -----

func.func @linear_weight_type(%x: tensor<2x16xf32>, %w: tensor<48x16xbf16>) {
  // expected-error @+1 {{weight element type 'bf16' must equal input element type 'f32'}}
  %0 = titan.linear %x, %w : (tensor<2x16xf32>, tensor<48x16xbf16>) -> tensor<2x48xf32>
  return
}

// -----

func.func @linear_result_type(%x: tensor<2x16xf32>, %w: tensor<48x16xf32>) {
  // expected-error @+1 {{result element type 'f16' must equal input element type 'f32'}}
  %0 = titan.linear %x, %w : (tensor<2x16xf32>, tensor<48x16xf32>) -> tensor<2x48xf16>
  return
}

// -----

func.func @add_shapes(%a: tensor<2x8xf32>, %b: tensor<2x4xf32>) {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %0 = "titan.add"(%a, %b) : (tensor<2x8xf32>, tensor<2x4xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @swiglu_types(%a: tensor<2x8xf32>, %b: tensor<2x8xbf16>) {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %0 = "titan.swiglu"(%a, %b) : (tensor<2x8xf32>, tensor<2x8xbf16>) -> tensor<2x8xf32>
  return
}

// -----

func.func @reshape_count(%x: tensor<2x8x16xf32>) {
  // expected-error @+1 {{result shape 2x8x4x8 has 512 elements but input shape 2x8x16 has 256}}
  %0 = titan.reshape %x : tensor<2x8x16xf32> -> tensor<2x8x4x8xf32>
  return
}

// -----

func.func @reshape_type(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{result element type 'bf16' must equal input element type 'f32'}}
  %0 = titan.reshape %x : tensor<2x8xf32> -> tensor<16xbf16>
  return
}

// -----

func.func @cross_entropy_scalar(%l: tensor<f32>, %y: tensor<i32>) {
  // expected-error @+1 {{logits must have rank >= 1 (... x vocab), got a scalar}}
  %0, %lse0 = titan.cross_entropy %l, %y : (tensor<f32>, tensor<i32>) -> (tensor<f32>, tensor<f32>)
  return
}

// -----

func.func @cross_entropy_labels_rank(%l: tensor<2x8x64xf32>, %y: tensor<16xi32>) {
  // expected-error @+1 {{labels rank 1 must be logits rank - 1 (2)}}
  %0, %lse0 = titan.cross_entropy %l, %y : (tensor<2x8x64xf32>, tensor<16xi32>) -> (tensor<f32>, tensor<16xf32>)
  return
}

// -----

func.func @cross_entropy_labels_dim(%l: tensor<2x8x64xf32>, %y: tensor<2x4xi32>) {
  // expected-error @+1 {{labels dimension 1 (4) must equal logits dimension 1 (8)}}
  %0, %lse0 = titan.cross_entropy %l, %y : (tensor<2x8x64xf32>, tensor<2x4xi32>) -> (tensor<f32>, tensor<2x4xf32>)
  return
}

// -----

func.func @cross_entropy_result(%l: tensor<2x8x64xf32>, %y: tensor<2x8xi32>) {
  // expected-error @+1 {{result #0 must be 0D tensor of 32-bit float values}}
  %0, %lse0 = titan.cross_entropy %l, %y : (tensor<2x8x64xf32>, tensor<2x8xi32>) -> (tensor<2x8xf32>, tensor<2x8xf32>)
  return
}

// -----

func.func @cross_entropy_lse_shape(%l: tensor<2x8x64xf32>, %y: tensor<2x8xi32>) {
  // expected-error @+1 {{lse dimension 1 (4) must equal logits dimension 1 (8)}}
  %0, %lse0 = titan.cross_entropy %l, %y : (tensor<2x8x64xf32>, tensor<2x8xi32>) -> (tensor<f32>, tensor<2x4xf32>)
  return
}

// -----

func.func @cross_entropy_lse_type(%l: tensor<2x8x64xbf16>, %y: tensor<2x8xi32>) {
  // expected-error @+1 {{lse element type must be 'f32' (the accumulator type of the logits), not 'bf16'}}
  %0, %lse0 = titan.cross_entropy %l, %y : (tensor<2x8x64xbf16>, tensor<2x8xi32>) -> (tensor<f32>, tensor<2x8xbf16>)
  return
}

// -----

// expected-error @+1 {{argument #0 attribute 'titan.param' must be a non-empty string naming the parameter}}
func.func @param_attr(%w: tensor<4xf32> {titan.param = 3 : i64}) {
  return
}

// -----

// expected-error @+1 {{argument #0 attribute 'titan.input' must be one of "tokens", "labels", "document_starts", "step", "total_steps"}}
func.func @input_attr(%t: tensor<4xi32> {titan.input = "targets"}) {
  return
}

// -----

// expected-error @+1 {{argument #0 attribute 'titan.weight' is not a known titan argument attribute}}
func.func @unknown_arg_attr(%t: tensor<4xi32> {titan.weight = "x"}) {
  return
}

// -----

func.func @row_max_rank(%l: tensor<2x8x32xf32>) {
  // expected-error @+1 {{result rank 1 must be logits rank - 1 (2)}}
  %0 = titan.row_max %l : tensor<2x8x32xf32> -> tensor<8xf32>
  return
}

// -----

func.func @row_max_scalar(%l: tensor<f32>) {
  // expected-error @+1 {{logits must have rank >= 1 (... x vocab), got a scalar}}
  %0 = titan.row_max %l : tensor<f32> -> tensor<f32>
  return
}

// -----

func.func @row_max_type(%l: tensor<2x8x32xf32>) {
  // expected-error @+1 {{result element type 'f64' must equal logits element type 'f32'}}
  %0 = titan.row_max %l : tensor<2x8x32xf32> -> tensor<2x8xf64>
  return
}

// -----

func.func @sum_exp_max_shape(%l: tensor<2x8x32xf32>, %m: tensor<2x4xf32>) {
  // expected-error @+1 {{max dimension 1 (4) must equal logits dimension 1 (8)}}
  %0 = titan.sum_exp %l, %m : (tensor<2x8x32xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @sum_exp_result(%l: tensor<2x8x32xf32>, %m: tensor<2x8xf32>) {
  // expected-error @+1 {{result type 'tensor<2x8xf64>' must equal max type 'tensor<2x8xf32>'}}
  %0 = titan.sum_exp %l, %m : (tensor<2x8x32xf32>, tensor<2x8xf32>) -> tensor<2x8xf64>
  return
}

// -----

func.func @target_logit_labels(%l: tensor<2x8x32xf32>, %y: tensor<2x4xi32>) {
  // expected-error @+1 {{labels dimension 1 (4) must equal logits dimension 1 (8)}}
  %0 = titan.target_logit %l, %y : (tensor<2x8x32xf32>, tensor<2x4xi32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @target_logit_result(%l: tensor<2x8x32xf32>, %y: tensor<2x8xi32>) {
  // expected-error @+1 {{result rank 3 must be logits rank - 1 (2)}}
  %0 = titan.target_logit %l, %y : (tensor<2x8x32xf32>, tensor<2x8xi32>) -> tensor<2x8x32xf32>
  return
}

// -----

func.func @from_stats_shapes(%m: tensor<2x8xf32>, %s: tensor<2x8xf32>, %t: tensor<16xf32>) {
  // expected-error @+1 {{target type 'tensor<16xf32>' must equal max type 'tensor<2x8xf32>'}}
  %0 = titan.cross_entropy_from_stats %m, %s, %t : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<16xf32>) -> tensor<f32>
  return
}

// -----

func.func @embedding_vocab_start_type(%w: tensor<64x16xf32>, %t: tensor<2x8xi32>, %s: tensor<i64>) {
  // expected-error @+1 {{operand #2 must be 0D tensor of 32-bit signless integer values}}
  %0 = titan.embedding %w[%t] vocab_start %s : tensor<i64> : tensor<64x16xf32>, tensor<2x8xi32> -> tensor<2x8x16xf32>
  return
}

// -----

func.func @overflowing_size(%a: tensor<2305843009213693952x4xf32>) {
  // expected-error @+1 {{'titan.add' op has a tensor of type 'tensor<2305843009213693952x4xf32>' whose size in bytes overflows a 64-bit integer}}
  %0 = titan.add %a, %a : tensor<2305843009213693952x4xf32>
  return
}

// -----

func.func @cast_shape(%a: tensor<4xf32>) {
  // expected-error @+1 {{'titan.cast' op result shape 8 must equal the input shape 4}}
  %0 = titan.cast %a : tensor<4xf32> to tensor<8xbf16>
  return
}

// -----

func.func @cast_type(%a: tensor<4xf32>) {
  // expected-error @+1 {{'titan.cast' op casts between f64, f32, bf16, f16, f8E4M3FN and f8E5M2, got 'f8E4M3FNUZ'}}
  %0 = titan.cast %a : tensor<4xf32> to tensor<4xf8E4M3FNUZ>
  return
}

// -----

func.func @linear_f8_result(%x: tensor<2x8xf8E4M3FN>, %w: tensor<4x8xf8E4M3FN>) {
  // expected-error @+1 {{'titan.linear' op with 'f8E4M3FN' operands must produce f32, bf16 or f16, got 'f8E4M3FN'}}
  %0 = titan.linear %x, %w : (tensor<2x8xf8E4M3FN>, tensor<4x8xf8E4M3FN>) -> tensor<2x4xf8E4M3FN>
  return
}

// -----

func.func @recompute_region_negative(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{attribute 'titan.recompute_region' must be a non-negative integer (the transformer block)}}
  %y = titan.add %x, %x {titan.recompute_region = -1 : i64} : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @save_outside_region(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{attribute 'titan.save' needs 'titan.recompute_region'}}
  %y = titan.add %x, %x {titan.save} : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @unknown_op_attribute(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{attribute 'titan.checkpoint' is not a known titan op attribute}}
  %y = titan.add %x, %x {titan.checkpoint} : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @float8_linear_recipe(%x: tensor<2x32xbf16>, %w: tensor<16x32xbf16>) {
  // expected-error @+2 {{expected ::titan::Float8Recipe to be one of: tensorwise, rowwise, rowwise_with_gw_hp}}
  // expected-error @+1 {{failed to parse Titan_Float8RecipeAttr parameter 'value'}}
  %0 = titan.float8_linear %x, %w recipe delayed : (tensor<2x32xbf16>, tensor<16x32xbf16>) -> tensor<2x16xbf16>
  return
}

// -----

func.func @float8_linear_types(%x: tensor<2x32xbf16>, %w: tensor<16x32xf32>) {
  // expected-error @+1 {{operands and result must have one element type (the compute type)}}
  %0 = titan.float8_linear %x, %w recipe rowwise : (tensor<2x32xbf16>, tensor<16x32xf32>) -> tensor<2x16xbf16>
  return
}

// -----

func.func @amax_dims(%x: tensor<2x8x32xf32>) {
  // expected-error @+1 {{dims must be the last dimension or every dimension but the last}}
  %0 = titan.amax %x {dims = array<i64: 1>} : tensor<2x8x32xf32> -> tensor<2x1x32xf32>
  return
}

// -----

func.func @float8_scale_type(%a: tensor<f32>) {
  // expected-error @+1 {{float8_type must be f8E4M3FN or f8E5M2, got 'bf16'}}
  %0 = titan.float8_scale %a for bf16 : tensor<f32>
  return
}

// -----

func.func @quantize_scale(%x: tensor<4x32xf32>, %s: tensor<4x2xf32>) {
  // expected-error @+1 {{scale must be rank 0 or broadcast against the input}}
  %0 = titan.quantize %x, %s : (tensor<4x32xf32>, tensor<4x2xf32>) -> tensor<4x32xf8E4M3FN>
  return
}

// -----

func.func @quantize_transposed_shape(%x: tensor<2x8x32xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{transposed result shape must be the input's with its last dimension moved first}}
  %0 = titan.quantize %x, %s {transposed} : (tensor<2x8x32xf32>, tensor<f32>) -> tensor<32x8x2xf8E4M3FN>
  return
}

// -----

func.func @transpose_shape(%x: tensor<2x8x32xf8E4M3FN>) {
  // expected-error @+1 {{result shape must be the input's (rank >= 2) with its last dimension moved first}}
  %0 = titan.transpose %x : tensor<2x8x32xf8E4M3FN> -> tensor<32x8x2xf8E4M3FN>
  return
}

// -----

func.func @transpose_rank(%x: tensor<8xf32>) {
  // expected-error @+1 {{result shape must be the input's (rank >= 2) with its last dimension moved first}}
  %0 = titan.transpose %x : tensor<8xf32> -> tensor<8xf32>
  return
}

// -----

func.func @transpose_type(%x: tensor<4x8xf8E4M3FN>) {
  // expected-error @+1 {{result element type must equal the input's}}
  %0 = titan.transpose %x : tensor<4x8xf8E4M3FN> -> tensor<8x4xf8E5M2>
  return
}

// -----

func.func @scaled_matmul_transposed_linear(%a: tensor<32x4xf8E4M3FN>, %s: tensor<f32>, %b: tensor<16x32xf8E4M3FN>) {
  // expected-error @+1 {{lhs may come transposed only where the form reduces it over its leading dimensions (grad_weight's lhs, grad_input's and grad_weight's rhs)}}
  %0 = titan.scaled_matmul linear %a, %s, %b, %s {lhs_transposed} : (tensor<32x4xf8E4M3FN>, tensor<f32>, tensor<16x32xf8E4M3FN>, tensor<f32>) -> tensor<4x16xbf16>
  return
}

// -----

func.func @scaled_matmul_transposed_grad_input_lhs(%a: tensor<16x4xf8E5M2>, %s: tensor<f32>, %b: tensor<32x16xf8E4M3FN>) {
  // expected-error @+1 {{lhs may come transposed only where the form reduces it over its leading dimensions}}
  %0 = titan.scaled_matmul grad_input %a, %s, %b, %s {lhs_transposed, rhs_transposed} : (tensor<16x4xf8E5M2>, tensor<f32>, tensor<32x16xf8E4M3FN>, tensor<f32>) -> tensor<4x32xbf16>
  return
}

// -----

// rhs_transposed reads the weight's 16 x 32 as the transpose of a 32 x 16
// one: 32 output features, which the gradient's 16 do not match.
func.func @scaled_matmul_transposed_shape(%a: tensor<4x16xf8E5M2>, %s: tensor<f32>, %b: tensor<16x32xf8E4M3FN>) {
  // expected-error @+1 {{lhs last dimension (16) must equal the weight's out features (32)}}
  %0 = titan.scaled_matmul grad_input %a, %s, %b, %s {rhs_transposed} : (tensor<4x16xf8E5M2>, tensor<f32>, tensor<16x32xf8E4M3FN>, tensor<f32>) -> tensor<4x32xbf16>
  return
}

// -----

func.func @scaled_matmul_scale(%a: tensor<4x32xf8E4M3FN>, %sa: tensor<1x32xf32>, %b: tensor<16x32xf8E4M3FN>, %sb: tensor<f32>) {
  // expected-error @+1 {{lhs_scale must be rank 0 or one scale per slice along the GEMM's reduction dimension}}
  %0 = titan.scaled_matmul linear %a, %sa, %b, %sb : (tensor<4x32xf8E4M3FN>, tensor<1x32xf32>, tensor<16x32xf8E4M3FN>, tensor<f32>) -> tensor<4x16xbf16>
  return
}

// -----

func.func @scaled_matmul_form(%a: tensor<4x32xf8E4M3FN>, %s: tensor<f32>, %b: tensor<16x32xf8E4M3FN>) {
  // expected-error @+2 {{expected ::titan::GemmForm to be one of: linear, grad_input, grad_weight}}
  // expected-error @+1 {{failed to parse Titan_GemmFormAttr parameter 'value'}}
  %0 = titan.scaled_matmul outer %a, %s, %b, %s : (tensor<4x32xf8E4M3FN>, tensor<f32>, tensor<16x32xf8E4M3FN>, tensor<f32>) -> tensor<4x16xbf16>
  return
}

// -----

func.func @slice_outside(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{box 2x4 at offsets [0, 6] is not inside 2x8 (dimension 1)}}
  %0 = titan.slice %x [0, 6] : tensor<2x8xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @slice_rank(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{needs one offset per dimension and a result of the rank of 'tensor<2x8xf32>', got 1 offsets and 'tensor<2x4xf32>'}}
  %0 = titan.slice %x [0] : tensor<2x8xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @slice_grad_outside(%g: tensor<2x4xf32>) {
  // expected-error @+1 {{box 2x4 at offsets [1, 0] is not inside 2x8 (dimension 0)}}
  %0 = titan.slice_grad %g [1, 0] : tensor<2x4xf32> -> tensor<2x8xf32>
  return
}

// -----

func.func @concat_sizes(%a: tensor<2x4xf32>, %b: tensor<2x4xf32>) {
  // expected-error @+1 {{inputs add up to 8 along dim 1, not the result's 6}}
  %0 = titan.concat %a, %b dim 1 : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x6xf32>
  return
}

// -----

func.func @concat_other_dim(%a: tensor<2x4xf32>, %b: tensor<3x4xf32>) {
  // expected-error @+1 {{input 'tensor<3x4xf32>' differs from result 'tensor<2x8xf32>' in dimension 0, which is not the concatenated one}}
  %0 = titan.concat %a, %b dim 1 : tensor<2x4xf32>, tensor<3x4xf32> -> tensor<2x8xf32>
  return
}

// -----

func.func @concat_dim(%a: tensor<2x4xf32>) {
  // expected-error @+1 {{dim 2 is not a dimension of 'tensor<2x4xf32>'}}
  %0 = titan.concat %a dim 2 : tensor<2x4xf32> -> tensor<2x4xf32>
  return
}
