// RUN: titan-opt %s -split-input-file -titan-llama-pipeline-stages -dist-pipeline-split -verify-diagnostics

// The Llama forward's stage plan (titan-llama-pipeline-stages), then the
// cut. The ops carry their module names as locations (as the importer gives
// them), so the diagnostics point at those names (@unknown here).

// Tied embeddings: the output projection reads the embedding's weight in
// the last stage.
module attributes {dist.mesh = #dist.mesh<pp = 2, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 1>} {
  func.func @forward(%e: tensor<16x8xf32> {titan.param = "tok_embeddings.weight"},
                     %w0: tensor<8x8xf32> {titan.param = "layers.0.w"},
                     %t: tensor<2x4xi32> {titan.input = "tokens"},
                     %l: tensor<2x4xi32> {titan.input = "labels"}) -> tensor<f32> {
    %x = titan.embedding %e[%t] : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32> loc("tok_embeddings")
    %z0 = titan.linear %x, %w0 : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32> loc("layers.0.w")
    // expected-error @unknown {{reads parameter '"tok_embeddings.weight"' in pipeline stage 1, but stage 0 reads it too: a parameter must belong to one stage (tied embeddings cannot be pipelined)}}
    %logits = titan.linear %z0, %e : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32> loc("output")
    %loss, %loss_lse = titan.cross_entropy %logits, %l : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> (tensor<f32>, tensor<2x4xf32>) loc("loss")
    return %loss : tensor<f32> loc("loss")
  }
}

// -----

// An op whose location names no module of the model and whose result
// nothing reads.
module attributes {dist.mesh = #dist.mesh<pp = 2, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 1>} {
  func.func @forward(%e: tensor<16x8xf32> {titan.param = "tok_embeddings.weight"},
                     %w0: tensor<8x8xf32> {titan.param = "layers.0.w"},
                     %o: tensor<16x8xf32> {titan.param = "output.weight"},
                     %t: tensor<2x4xi32> {titan.input = "tokens"},
                     %l: tensor<2x4xi32> {titan.input = "labels"}) -> tensor<f32> {
    %x = titan.embedding %e[%t] : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32> loc("tok_embeddings")
    // expected-error @unknown {{belongs to no pipeline stage}}
    %stray = titan.add %x, %x : tensor<2x4x8xf32> loc("somewhere")
    %z0 = titan.linear %x, %w0 : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32> loc("layers.0.w")
    %logits = titan.linear %z0, %o : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32> loc("output")
    %loss, %loss_lse = titan.cross_entropy %logits, %l : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> (tensor<f32>, tensor<2x4xf32>) loc("loss")
    return %loss : tensor<f32> loc("loss")
  }
}

// -----

// A stage would read a value of a later one: the norm (last stage) feeds
// layer 0 (first stage).
module attributes {dist.mesh = #dist.mesh<pp = 2, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 1>} {
  func.func @forward(%e: tensor<16x8xf32> {titan.param = "tok_embeddings.weight"},
                     %w0: tensor<8x8xf32> {titan.param = "layers.0.w"},
                     %n: tensor<8xf32> {titan.param = "norm.weight"},
                     %o: tensor<16x8xf32> {titan.param = "output.weight"},
                     %t: tensor<2x4xi32> {titan.input = "tokens"},
                     %l: tensor<2x4xi32> {titan.input = "labels"}) -> tensor<f32> {
    %x = titan.embedding %e[%t] : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32> loc("tok_embeddings")
    %y = titan.rms_norm %x, %n {eps = 1.0e-5 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32> loc("norm")
    // expected-error @unknown {{in pipeline stage 0 reads a value of the later stage 1}}
    %z0 = titan.linear %y, %w0 : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32> loc("layers.0.w")
    %logits = titan.linear %z0, %o : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32> loc("output")
    %loss, %loss_lse = titan.cross_entropy %logits, %l : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> (tensor<f32>, tensor<2x4xf32>) loc("loss")
    return %loss : tensor<f32> loc("loss")
  }
}

// -----

// expected-error @+1 {{titan-llama-pipeline-stages: the module has no #dist.mesh (run dist-parallelize first)}}
module {
  func.func @forward(%l: tensor<2x4xi32> {titan.input = "labels"}) -> tensor<f32> {
    %zero = titan.fill 0.0 : tensor<f32> loc("loss")
    return %zero : tensor<f32>
  }
}
