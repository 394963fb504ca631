// RUN: titan-opt %s -split-input-file -dist-propagate-sharding -verify-diagnostics | FileCheck %s

// The rules carry the plan's shardings through the graph. Context parallel
// (cp 2) with tensor parallel (tp 2): tokens split along the sequence over
// cp; wq column-wise (features over tp). The embedding keeps the tokens'
// split (its vocabulary factor is unsplit); the linear's weight claims its
// output features for tp first, the input keeps its sequence over cp; the
// reshape moves the feature split onto the heads (its outermost factor);
// RoPE's angles are replicated (dist-partition slices them); the query and
// the key split their sequences over cp (different factors: the ring);
// the mean loss is partial over the axes splitting its rows.
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 2, tp = 2>} {
  func.func @forward(%emb: tensor<16x8xf32> {titan.param = "tok_embeddings.weight"},
                     %wq: tensor<8x8xf32> {titan.param = "wq", dist.sharding = #dist.sharding<[["tp"]]>},
                     %tokens: tensor<2x4xi32> {titan.input = "tokens", dist.sharding = #dist.sharding<[[], ["cp"]]>},
                     %labels: tensor<2x4xi32> {titan.input = "labels", dist.sharding = #dist.sharding<[[], ["cp"]]>}) -> tensor<f32> {
    // CHECK: titan.embedding {{.*}} {dist.shardings = [#dist.sharding<{{\[}}[], ["cp"]]>]}
    %h = titan.embedding %emb[%tokens] : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    // CHECK: titan.linear {{.*}} {dist.shardings = [#dist.sharding<{{\[}}[], ["cp"], ["tp"]]>]}
    %q = titan.linear %h, %wq : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
    // CHECK: titan.reshape {{.*}} {dist.shardings = [#dist.sharding<{{\[}}[], ["cp"], ["tp"]]>]}
    %qh = titan.reshape %q : tensor<2x4x8xf32> -> tensor<2x4x4x2xf32>
    // CHECK: titan.rope_angles {dist.shardings = [#dist.sharding<[]>]
    %angles = titan.rope_angles {theta = 1.000000e+04 : f64} : tensor<4x1x2xf32>
    // CHECK: titan.rope {{.*}} {dist.shardings = [#dist.sharding<{{\[}}[], ["cp"], ["tp"]]>]}
    %qr = titan.rope %qh, %angles : (tensor<2x4x4x2xf32>, tensor<4x1x2xf32>) -> tensor<2x4x4x2xf32>
    // CHECK: titan.attention {{.*}} {dist.shardings = [#dist.sharding<{{\[}}[], ["cp"], ["tp"]]>, #dist.sharding<{{\[}}[], ["tp"], ["cp"]]>]
    %a:2 = titan.attention %qr, %qr, %qr {scale = 0.7071067811865476 : f64} : (tensor<2x4x4x2xf32>, tensor<2x4x4x2xf32>, tensor<2x4x4x2xf32>) -> (tensor<2x4x4x2xf32>, tensor<2x4x4xf32>)
    %am = titan.reshape %a#0 : tensor<2x4x4x2xf32> -> tensor<2x4x8xf32>
    // A sharding constraint gives its result its sharding.
    // CHECK: dist.sharding_constraint {{.*}} {dist.shardings = [#dist.sharding<{{\[}}[], ["cp", "tp"]]>]}
    %c = dist.sharding_constraint %am to <[[], ["cp", "tp"]]> : tensor<2x4x8xf32>
    // CHECK: titan.cross_entropy {{.*}} {dist.shardings = [#dist.sharding<[], partial = ["cp", "tp"], reduction = avg>, #dist.sharding<{{\[}}[], ["cp", "tp"]]>]}
    %loss, %loss_lse = titan.cross_entropy %c, %labels : (tensor<2x4x8xf32>, tensor<2x4xi32>) -> (tensor<f32>, tensor<2x4xf32>)
    return %loss : tensor<f32>
  }
}

// -----

// FSDP's storage axes are not the computation's: a parameter stored split
// over dp_shard is used whole.
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 2, cp = 1, tp = 1>} {
  func.func @forward(%w: tensor<8x8xf32> {titan.param = "w", dist.sharding = #dist.sharding<[["dp_shard"]]>},
                     %x: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
    // CHECK: titan.linear {{.*}} {dist.shardings = [#dist.sharding<[]>]}
    %y = titan.linear %x, %w : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
}

// -----

// An op without a sharding rule must have replicated operands.
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 2>} {
  func.func @forward(%x: tensor<2x4xf32> {dist.sharding = #dist.sharding<[["tp"]]>}, %g: tensor<2x4xf32>) -> tensor<2x4xf32> {
    // expected-error @+1 {{'titan.silu_grad' op has sharded operands but no sharding rule (ShardingRuleOpInterface)}}
    %y = titan.silu_grad %x, %g : tensor<2x4xf32>
    return %y : tensor<2x4xf32>
  }
}

// -----

// expected-error @+1 {{dist-propagate-sharding: needs a #dist.mesh (run dist-parallelize first)}}
module {
  func.func @forward() {
    return
  }
}

// -----

// Slices and concats pass the dimensions they take whole through; a cut or
// joined dimension stays whole (a box of a split dimension would span
// ranks).
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 2>} {
  func.func @forward(%x: tensor<2x8x4xf32> {dist.sharding = #dist.sharding<[["tp"], [], []]>}) -> tensor<2x8x4xf32> {
    // CHECK: titan.slice {{.*}} {dist.shardings = [#dist.sharding<{{\[}}["tp"]]>]}
    %b = titan.slice %x [0, 2, 0] : tensor<2x8x4xf32> -> tensor<2x4x4xf32>
    // CHECK: titan.concat {{.*}} {dist.shardings = [#dist.sharding<{{\[}}["tp"]]>]}
    %c = titan.concat %b, %b dim 1 : tensor<2x4x4xf32>, tensor<2x4x4xf32> -> tensor<2x8x4xf32>
    return %c : tensor<2x8x4xf32>
  }
}
