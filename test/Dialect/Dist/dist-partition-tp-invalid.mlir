// RUN: titan-opt %s -split-input-file -dist-partition -verify-diagnostics

// Sequence parallel needs the sequence to divide over the tp ranks.
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 2>} {
  func.func @forward(%emb: tensor<16x8xf32> {titan.param = "tok_embeddings.weight", dist.sharding = #dist.sharding<[["tp"]]>},
                     %tokens: tensor<2x3xi32> {titan.input = "tokens"}) -> tensor<f32> {
    // expected-error @+1 {{'titan.embedding' op sequence parallel splits dimension 1 of 'tensor<2x3x8xf32>' over 2 tensor-parallel ranks, which does not divide it}}
    %h = titan.embedding %emb[%tokens] : tensor<16x8xf32>, tensor<2x3xi32> -> tensor<2x3x8xf32>
    %loss = titan.fill 0.0 : tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// A row-wise weight needs its input split along the features.
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 2>} {
  func.func @forward(%wo: tensor<8x8xf32> {titan.param = "layers.0.attention.wo.weight", dist.sharding = #dist.sharding<[[], ["tp"]]>},
                     %x: tensor<2x4x8xf32>) -> tensor<f32> {
    // expected-error @+1 {{'titan.linear' op row-wise tensor-parallel weight needs an input split along its last dimension}}
    %y = titan.linear %x, %wo : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
    %loss = titan.fill 0.0 : tensor<f32>
    return %loss : tensor<f32>
  }
}
