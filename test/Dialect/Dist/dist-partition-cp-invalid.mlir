// RUN: titan-opt %s -split-input-file -dist-propagate-sharding -dist-partition -verify-diagnostics

// Context parallel's ring attention knows the causal blocks by the
// load-balanced chunks' places: over a cp the mesh splits contiguously
// (`load_balanced = []`) the attention is refused where it is localized,
// naming the axes, rather than building a ring its verifier rejects.
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 2, tp = 1, load_balanced = []>} {
  func.func @forward(%q: tensor<2x8x4x2xf32> {dist.sharding = #dist.sharding<[[], ["cp"]]>},
                     %k: tensor<2x8x2x2xf32> {dist.sharding = #dist.sharding<[[], ["cp"]]>}) -> tensor<2x8x4x2xf32> {
    // expected-error @+1 {{'titan.attention' op splits its key sequence over 'cp', which the mesh splits contiguously: context parallel's ring attention needs the sequence split load-balanced (#dist.mesh's load_balanced)}}
    %a:2 = titan.attention %q, %k, %k {scale = 0.7071067811865476 : f64} : (tensor<2x8x4x2xf32>, tensor<2x8x2x2xf32>, tensor<2x8x2x2xf32>) -> (tensor<2x8x4x2xf32>, tensor<2x4x8xf32>)
    return %a#0 : tensor<2x8x4x2xf32>
  }
}
