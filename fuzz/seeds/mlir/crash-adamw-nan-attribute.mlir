// Verifier messages of the gradient and optimizer ops.
// RUN: titan-opt %s -split-input-file -verify-diagnostics

func.func @embedding_grad_result_rank(%g: tensor<2x8x16xf32>, %t: tensor<2x8xi32>) {
  // expected-error @+1 {{result must be a 2-D (vocab x dim) tensor, got rank 1 (16)}}
  %0 = titan.embedding_grad %g, %t : (tensor<2x8x16xf32>, tensor<2x8xi32>) -> tensor<16xf32>
  return
}

// -----

func.func @embedding_grad_rank(%g: tensor<2x16xf32>, %t: tensor<2x8xi32>) {
  // expected-error @+1 {{grad rank 2 must be tokens rank + 1 (3)}}
  %0 = titan.embedding_grad %g, %t : (tensor<2x16xf32>, tensor<2x8xi32>) -> tensor<64x16xf32>
  return
}

// -----

func.func @embedding_grad_tokens(%g: tensor<2x4x16xf32>, %t: tensor<2x8xi32>) {
  // expected-error @+1 {{grad dimension 1 (4) must equal tokens dimension 1 (8)}}
  %0 = titan.embedding_grad %g, %t : (tensor<2x4x16xf32>, tensor<2x8xi32>) -> tensor<64x16xf32>
  return
}

// -----

func.func @embedding_grad_dim(%g: tensor<2x8x16xf32>, %t: tensor<2x8xi32>) {
  // expected-error @+1 {{result dimension 1 (32) must equal grad dimension 2 (16)}}
  %0 = titan.embedding_grad %g, %t : (tensor<2x8x16xf32>, tensor<2x8xi32>) -> tensor<64x32xf32>
  return
}

// -----

func.func @embedding_grad_type(%g: tensor<2x8x16xf32>, %t: tensor<2x8xi32>) {
  // expected-error @+1 {{result element type 'f64' must equal grad element type 'f32'}}
  %0 = titan.embedding_grad %g, %t : (tensor<2x8x16xf32>, tensor<2x8xi32>) -> tensor<64x16xf64>
  return
}

// -----

func.func @rms_norm_grad_scalar(%x: tensor<f32>, %w: tensor<16xf32>) {
  // expected-error @+1 {{input must have rank >= 1, got a scalar}}
  %0:2 = titan.rms_norm_grad %x, %w, %x {eps = 1.0e-5 : f64} : (tensor<f32>, tensor<16xf32>, tensor<f32>) -> (tensor<f32>, tensor<16xf32>)
  return
}

// -----

func.func @rms_norm_grad_weight_rank(%x: tensor<2x16xf32>, %w: tensor<1x16xf32>) {
  // expected-error @+1 {{weight must be a 1-D (dim) tensor, got rank 2 (1x16)}}
  %0:2 = titan.rms_norm_grad %x, %w, %x {eps = 1.0e-5 : f64} : (tensor<2x16xf32>, tensor<1x16xf32>, tensor<2x16xf32>) -> (tensor<2x16xf32>, tensor<1x16xf32>)
  return
}

// -----

func.func @rms_norm_grad_weight_dim(%x: tensor<2x16xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{weight dimension 0 (8) must equal input dimension 1 (16)}}
  %0:2 = titan.rms_norm_grad %x, %w, %x {eps = 1.0e-5 : f64} : (tensor<2x16xf32>, tensor<8xf32>, tensor<2x16xf32>) -> (tensor<2x16xf32>, tensor<8xf32>)
  return
}

// -----

func.func @rms_norm_grad_grad_type(%x: tensor<2x16xf32>, %w: tensor<16xf32>, %g: tensor<4x8xf32>) {
  // expected-error @+1 {{grad type 'tensor<4x8xf32>' must equal input type 'tensor<2x16xf32>'}}
  %0:2 = titan.rms_norm_grad %x, %w, %g {eps = 1.0e-5 : f64} : (tensor<2x16xf32>, tensor<16xf32>, tensor<4x8xf32>) -> (tensor<2x16xf32>, tensor<16xf32>)
  return
}

// -----

func.func @rms_norm_grad_results(%x: tensor<2x16xf32>, %w: tensor<16xf32>) {
  // expected-error @+1 {{result types must equal the input and weight types}}
  %0:2 = titan.rms_norm_grad %x, %w, %x {eps = 1.0e-5 : f64} : (tensor<2x16xf32>, tensor<16xf32>, tensor<2x16xf32>) -> (tensor<2x16xf32>, tensor<2x16xf32>)
  return
}

// -----

func.func @rms_norm_grad_eps(%x: tensor<2x16xf32>, %w: tensor<16xf32>) {
  // expected-error @+1 {{attribute 'eps' must be positive, got -1}}
  %0:2 = titan.rms_norm_grad %x, %w, %x {eps = -1.0 : f64} : (tensor<2x16xf32>, tensor<16xf32>, tensor<2x16xf32>) -> (tensor<2x16xf32>, tensor<16xf32>)
  return
}

// -----

func.func @attention_grad_grad_type(%q: tensor<2x8x4x8xf32>, %k: tensor<2x8x2x8xf32>, %g: tensor<2x8x2x8xf32>, %lse: tensor<2x4x8xf32>) {
  // expected-error @+1 {{grad type 'tensor<2x8x2x8xf32>' must equal query type 'tensor<2x8x4x8xf32>'}}
  %0:3 = titan.attention_grad %q, %k, %k, %q, %lse, %g {scale = 1.0 : f64} : (tensor<2x8x4x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x4x8xf32>, tensor<2x4x8xf32>, tensor<2x8x2x8xf32>) -> (tensor<2x8x4x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>)
  return
}

// -----

func.func @attention_grad_results(%q: tensor<2x8x4x8xf32>, %k: tensor<2x8x2x8xf32>, %lse: tensor<2x4x8xf32>) {
  // expected-error @+1 {{result types must equal the query, key and value types}}
  %0:3 = titan.attention_grad %q, %k, %k, %q, %lse, %q {scale = 1.0 : f64} : (tensor<2x8x4x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x4x8xf32>, tensor<2x4x8xf32>, tensor<2x8x4x8xf32>) -> (tensor<2x8x4x8xf32>, tensor<2x8x4x8xf32>, tensor<2x8x2x8xf32>)
  return
}

// -----

func.func @attention_grad_heads(%q: tensor<2x8x3x8xf32>, %k: tensor<2x8x2x8xf32>, %lse: tensor<2x3x8xf32>) {
  // expected-error @+1 {{query heads (dimension 2 = 3) must be a multiple of key/value heads (dimension 2 = 2)}}
  %0:3 = titan.attention_grad %q, %k, %k, %q, %lse, %q {scale = 1.0 : f64} : (tensor<2x8x3x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x3x8xf32>, tensor<2x3x8xf32>, tensor<2x8x3x8xf32>) -> (tensor<2x8x3x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>)
  return
}

// -----

func.func @attention_grad_out(%q: tensor<2x8x4x8xf32>, %k: tensor<2x8x2x8xf32>, %lse: tensor<2x4x8xf32>) {
  // expected-error @+1 {{out type 'tensor<2x8x2x8xf32>' must equal query type 'tensor<2x8x4x8xf32>'}}
  %0:3 = titan.attention_grad %q, %k, %k, %k, %lse, %q {scale = 1.0 : f64} : (tensor<2x8x4x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x4x8xf32>, tensor<2x8x4x8xf32>) -> (tensor<2x8x4x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>)
  return
}

// -----

func.func @attention_grad_lse(%q: tensor<2x8x4x8xf32>, %k: tensor<2x8x2x8xf32>, %lse: tensor<2x8x4xf32>) {
  // expected-error @+1 {{lse must be 'tensor<2x4x8xf32>' (batch x query heads x seq, in the accumulator type), not 'tensor<2x8x4xf32>'}}
  %0:3 = titan.attention_grad %q, %k, %k, %q, %lse, %q {scale = 1.0 : f64} : (tensor<2x8x4x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x4x8xf32>, tensor<2x8x4xf32>, tensor<2x8x4x8xf32>) -> (tensor<2x8x4x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>)
  return
}

// -----

func.func @attention_grad_scale(%q: tensor<2x8x4x8xf32>, %k: tensor<2x8x2x8xf32>, %lse: tensor<2x4x8xf32>) {
  // expected-error @+1 {{attribute 'scale' must be positive, got 0}}
  %0:3 = titan.attention_grad %q, %k, %k, %q, %lse, %q {scale = 0.0 : f64} : (tensor<2x8x4x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x4x8xf32>, tensor<2x4x8xf32>, tensor<2x8x4x8xf32>) -> (tensor<2x8x4x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>)
  return
}

// -----

func.func @linear_grad_input_scalar(%g: tensor<f32>, %w: tensor<4x16xf32>) {
  // expected-error @+1 {{grad must have rank >= 1, got a scalar}}
  %0 = titan.linear_grad_input %g, %w : (tensor<f32>, tensor<4x16xf32>) -> tensor<16xf32>
  return
}

// -----

func.func @linear_grad_input_weight_rank(%g: tensor<2x4xf32>, %w: tensor<4xf32>) {
  // expected-error @+1 {{weight must be a 2-D (out x in) tensor, got rank 1 (4)}}
  %0 = titan.linear_grad_input %g, %w : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @linear_grad_input_out_features(%g: tensor<2x4xf32>, %w: tensor<8x16xf32>) {
  // expected-error @+1 {{weight dimension 0 (8) must equal grad dimension 1 (4)}}
  %0 = titan.linear_grad_input %g, %w : (tensor<2x4xf32>, tensor<8x16xf32>) -> tensor<2x16xf32>
  return
}

// -----

func.func @linear_grad_input_result(%g: tensor<2x4xf32>, %w: tensor<4x16xf32>) {
  // expected-error @+1 {{result type 'tensor<2x8xf32>' must be 'tensor<2x16xf32>'}}
  %0 = titan.linear_grad_input %g, %w : (tensor<2x4xf32>, tensor<4x16xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @linear_grad_input_types(%g: tensor<2x4xf64>, %w: tensor<4x16xf32>) {
  // expected-error @+1 {{grad element type 'f64' must equal weight element type 'f32'}}
  %0 = titan.linear_grad_input %g, %w : (tensor<2x4xf64>, tensor<4x16xf32>) -> tensor<2x16xf32>
  return
}

// -----

func.func @linear_grad_weight_ranks(%g: tensor<2x4xf32>, %x: tensor<2x3x16xf32>) {
  // expected-error @+1 {{grad and input must have the same rank >= 1}}
  %0 = titan.linear_grad_weight %g, %x : (tensor<2x4xf32>, tensor<2x3x16xf32>) -> tensor<4x16xf32>
  return
}

// -----

func.func @linear_grad_weight_rows(%g: tensor<2x4xf32>, %x: tensor<3x16xf32>) {
  // expected-error @+1 {{grad dimension 0 (2) must equal input dimension 0 (3)}}
  %0 = titan.linear_grad_weight %g, %x : (tensor<2x4xf32>, tensor<3x16xf32>) -> tensor<4x16xf32>
  return
}

// -----

func.func @linear_grad_weight_result(%g: tensor<2x4xf32>, %x: tensor<2x16xf32>) {
  // expected-error @+1 {{result shape 16x4 must be 4x16}}
  %0 = titan.linear_grad_weight %g, %x : (tensor<2x4xf32>, tensor<2x16xf32>) -> tensor<16x4xf32>
  return
}

// -----

// 16-bit operands may give their f32 sum unrounded (titan-widen-gemm-results),
// nothing else.
func.func @linear_grad_weight_narrower(%g: tensor<2x4xbf16>, %x: tensor<2x16xbf16>) {
  // expected-error @+1 {{result element type 'f16' must be 'bf16' or 'f32'}}
  %0 = titan.linear_grad_weight %g, %x : (tensor<2x4xbf16>, tensor<2x16xbf16>) -> tensor<4x16xf16>
  return
}

// -----

func.func @linear_grad_weight_f32_narrowed(%g: tensor<2x4xf32>, %x: tensor<2x16xf32>) {
  // expected-error @+1 {{result element type 'bf16' must be 'f32'}}
  %0 = titan.linear_grad_weight %g, %x : (tensor<2x4xf32>, tensor<2x16xf32>) -> tensor<4x16xbf16>
  return
}

// -----

func.func @linear_grad_weight_types(%g: tensor<2x4xf64>, %x: tensor<2x16xf32>) {
  // expected-error @+1 {{grad element type 'f64' must equal input element type 'f32'}}
  %0 = titan.linear_grad_weight %g, %x : (tensor<2x4xf64>, tensor<2x16xf32>) -> tensor<4x16xf32>
  return
}

// -----

func.func @cross_entropy_grad_rank(%l: tensor<2x8x64xf32>, %y: tensor<16xi32>, %s: tensor<16xf32>, %d: tensor<f32>) {
  // expected-error @+1 {{labels rank 1 must be logits rank - 1 (2)}}
  %0 = titan.cross_entropy_grad %l, %y, %s, %d : (tensor<2x8x64xf32>, tensor<16xi32>, tensor<16xf32>, tensor<f32>) -> tensor<2x8x64xf32>
  return
}

// -----

func.func @cross_entropy_grad_dims(%l: tensor<2x8x64xf32>, %y: tensor<2x4xi32>, %s: tensor<2x8xf32>, %d: tensor<f32>) {
  // expected-error @+1 {{labels dimension 1 (4) must equal logits dimension 1 (8)}}
  %0 = titan.cross_entropy_grad %l, %y, %s, %d : (tensor<2x8x64xf32>, tensor<2x4xi32>, tensor<2x8xf32>, tensor<f32>) -> tensor<2x8x64xf32>
  return
}

// -----

func.func @cross_entropy_grad_lse(%l: tensor<2x8x64xf64>, %y: tensor<2x8xi32>, %s: tensor<2x8xf32>, %d: tensor<f32>) {
  // expected-error @+1 {{lse element type must be 'f64' (the accumulator type of the logits), not 'f32'}}
  %0 = titan.cross_entropy_grad %l, %y, %s, %d : (tensor<2x8x64xf64>, tensor<2x8xi32>, tensor<2x8xf32>, tensor<f32>) -> tensor<2x8x64xf64>
  return
}

// -----

func.func @cross_entropy_grad_result(%l: tensor<2x8x64xf32>, %y: tensor<2x8xi32>, %s: tensor<2x8xf32>, %d: tensor<f32>) {
  // expected-error @+1 {{result type 'tensor<16x64xf32>' must equal logits type 'tensor<2x8x64xf32>'}}
  %0 = titan.cross_entropy_grad %l, %y, %s, %d : (tensor<2x8x64xf32>, tensor<2x8xi32>, tensor<2x8xf32>, tensor<f32>) -> tensor<16x64xf32>
  return
}

// -----

func.func @global_norm_empty() {
  // expected-error @+1 {{needs at least one input}}
  %0 = titan.global_norm : () -> tensor<f32>
  return
}

// -----

func.func @lr_schedule_lr(%s: tensor<i64>) {
  // expected-error @+1 {{attribute 'lr' must be positive, got 0}}
  %0 = titan.lr_schedule %s, %s decay linear {lr = 0.0 : f64, warmup_steps = 2 : i64, min_lr_factor = 0.0 : f64} : (tensor<i64>, tensor<i64>) -> tensor<f32>
  return
}

// -----

func.func @lr_schedule_warmup(%s: tensor<i64>) {
  // expected-error @+1 {{attribute 'warmup_steps' must be non-negative, got -2}}
  %0 = titan.lr_schedule %s, %s decay linear {lr = 1.0 : f64, warmup_steps = -2 : i64, min_lr_factor = 0.0 : f64} : (tensor<i64>, tensor<i64>) -> tensor<f32>
  return
}

// -----

func.func @lr_schedule_ratio(%s: tensor<i64>) {
  // expected-error @+1 {{attribute 'decay_ratio' must be in [0, 1], got 1.5}}
  %0 = titan.lr_schedule %s, %s decay linear {lr = 1.0 : f64, warmup_steps = 2 : i64, decay_ratio = 1.5 : f64, min_lr_factor = 0.0 : f64} : (tensor<i64>, tensor<i64>) -> tensor<f32>
  return
}

// -----

func.func @lr_schedule_type(%s: tensor<i64>) {
  // expected-error @+2 {{expected ::titan::LRDecay to be one of: linear, sqrt, cosine}}
  // expected-error @+1 {{failed to parse Titan_LRDecayAttr parameter 'value'}}
  %0 = titan.lr_schedule %s, %s decay step {lr = 1.0 : f64, warmup_steps = 2 : i64, min_lr_factor = 0.0 : f64} : (tensor<i64>, tensor<i64>) -> tensor<f32>
  return
}

// -----

func.func @lr_schedule_min(%s: tensor<i64>) {
  // expected-error @+1 {{attribute 'min_lr_factor' must be in [0, 1], got 2}}
  %0 = titan.lr_schedule %s, %s decay sqrt {lr = 1.0 : f64, warmup_steps = 2 : i64, min_lr_factor = 2.0 : f64} : (tensor<i64>, tensor<i64>) -> tensor<f32>
  return
}

// -----

func.func @adamw_betas(%p: tensor<4xf32>, %c: tensor<f32>) {
  // expected-error @+1 {{betas must be in [0, 1), got (1, 0.95)}}
  %0:3 = titan.adamw %p, %p, %p, %p scalars(%c, %c, %c, %c) {beta1 = 1.0 : f64, beta2 = 0.95 : f64, eps = 1.0e-8 : f64} : tensor<4xf32>, tensor<f32>
  return
}

// -----

func.func @adamw_eps(%p: tensor<4xf32>, %c: tensor<f32>) {
  // expected-error @+1 {{eps must be non-negative, got -1e-08}}
  %0:3 = titan.adamw %p, %p, %p, %p scalars(%c, %c, %c, %c) {beta1 = 0.9 : f64, beta2 = 0.95 : f64, eps = -1.0e-8 : f64} : tensor<4xf32>, tensor<f32>
  return
}

// -----

func.func @adamw_eps_nan(%p: tensor<4xf32>, %c: tensor<f32>) {
  // expected-error @+1 {{eps must be non-negative, got nan}}
  %0:3 = titan.adamw %p, %p, %p, %p scalars(%c, %c, %c, %c) {beta1 = 0.9 : f64, beta2 = 0.95 : f64, eps = 0x7FF8000000000000 : f64} : tensor<4xf32>, tensor<f32>
  return
}

// -----

func.func @adamw_master(%p: tensor<4xbf16>, %c: tensor<f32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of 32-bit float or 64-bit float values}}
  %0:3 = titan.adamw %p, %p, %p, %p scalars(%c, %c, %c, %c) {beta1 = 0.9 : f64, beta2 = 0.95 : f64, eps = 1.0e-8 : f64} : tensor<4xbf16>, tensor<f32>
  return
}

// -----

func.func @adamw_scalar_type(%p: tensor<4xf32>, %c: tensor<f64>) {
  // expected-error @+1 {{the step's scalars must have the parameter's element type 'f32', got 'f64'}}
  %0:3 = titan.adamw %p, %p, %p, %p scalars(%c, %c, %c, %c) {beta1 = 0.9 : f64, beta2 = 0.95 : f64, eps = 1.0e-8 : f64} : tensor<4xf32>, tensor<f64>
  return
}

// -----

func.func @adamw_scalars_max_norm(%lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @+1 {{attribute 'max_norm' must be positive, got 0}}
  %0:4 = titan.adamw_scalars %lr, %lr, %s {beta1 = 0.9 : f64, beta2 = 0.95 : f64, weight_decay = 0.1 : f64, max_norm = 0.0 : f64} : tensor<f32>, tensor<i64> -> tensor<f32>
  return
}

// -----

func.func @adamw_scalars_betas(%lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @+1 {{betas must be in [0, 1), got (0.9, nan)}}
  %0:4 = titan.adamw_scalars %lr, %lr, %s {beta1 = 0.9 : f64, beta2 = 0x7FF8000000000000 : f64, weight_decay = 0.1 : f64, max_norm = 1.0 : f64} : tensor<f32>, tensor<i64> -> tensor<f32>
  return
}

// -----

func.func @adamw_scalars_weight_decay(%lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @+1 {{weight_decay must be non-negative, got -0.1}}
  %0:4 = titan.adamw_scalars %lr, %lr, %s {beta1 = 0.9 : f64, beta2 = 0.95 : f64, weight_decay = -0.1 : f64, max_norm = 1.0 : f64} : tensor<f32>, tensor<i64> -> tensor<f32>
  return
}

// -----

func.func @sum_exp_grad_result(%l: tensor<2x8x32xf32>, %m: tensor<2x8xf32>) {
  // expected-error @+1 {{result type 'tensor<2x8x16xf32>' must equal logits type 'tensor<2x8x32xf32>'}}
  %0 = titan.sum_exp_grad %l, %m, %m : (tensor<2x8x32xf32>, tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8x16xf32>
  return
}

// -----

func.func @sum_exp_grad_grad(%l: tensor<2x8x32xf32>, %m: tensor<2x8xf32>, %g: tensor<16xf32>) {
  // expected-error @+1 {{grad type 'tensor<16xf32>' must equal max type 'tensor<2x8xf32>'}}
  %0 = titan.sum_exp_grad %l, %m, %g : (tensor<2x8x32xf32>, tensor<2x8xf32>, tensor<16xf32>) -> tensor<2x8x32xf32>
  return
}

// -----

func.func @target_logit_grad_labels(%g: tensor<2x8xf32>, %y: tensor<2x4xi32>) {
  // expected-error @+1 {{labels dimension 1 (4) must equal result dimension 1 (8)}}
  %0 = titan.target_logit_grad %g, %y : (tensor<2x8xf32>, tensor<2x4xi32>) -> tensor<2x8x32xf32>
  return
}

// -----

func.func @target_logit_grad_type(%g: tensor<2x8xf64>, %y: tensor<2x8xi32>) {
  // expected-error @+1 {{result element type 'f32' must equal grad element type 'f64'}}
  %0 = titan.target_logit_grad %g, %y : (tensor<2x8xf64>, tensor<2x8xi32>) -> tensor<2x8x32xf32>
  return
}

// -----

func.func @from_stats_grad(%s: tensor<2x8xf32>, %g: tensor<f32>) {
  // expected-error @+1 {{result type 'tensor<8xf32>' must equal sum_exp type 'tensor<2x8xf32>'}}
  %0, %1 = titan.cross_entropy_from_stats_grad %s, %g : (tensor<2x8xf32>, tensor<f32>) -> (tensor<2x8xf32>, tensor<8xf32>)
  return
}
