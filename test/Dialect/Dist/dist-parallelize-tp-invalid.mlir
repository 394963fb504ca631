// RUN: titan-opt %s -split-input-file -titan-llama-plan -dist-parallelize="tp=2" -verify-diagnostics

// Sequence parallel needs the sequence to divide over the tp ranks.
func.func @forward(%emb: tensor<16x8xf32> {titan.param = "tok_embeddings.weight"},
                   %tokens: tensor<2x3xi32> {titan.input = "tokens"}) -> tensor<f32> {
  // expected-error @+1 {{'titan.embedding' op sequence parallel splits dimension 1 of 'tensor<2x3x8xf32>' over tp = 2 ranks, which does not divide it}}
  %h = titan.embedding %emb[%tokens] : tensor<16x8xf32>, tensor<2x3xi32> -> tensor<2x3x8xf32>
  %loss = titan.fill 0.0 : tensor<f32>
  return %loss : tensor<f32>
}

// -----

// A parameter outside TorchTitan's tensor-parallel plan.
// expected-error @+1 {{'func.func' op parameter 'layers.0.mystery.weight' has no tensor-parallel style in its plan}}
func.func @forward(%w: tensor<8x8xf32> {titan.param = "layers.0.mystery.weight"}) -> tensor<f32> {
  %loss = titan.fill 0.0 : tensor<f32>
  return %loss : tensor<f32>
}
