// RUN: titan-opt %s -titan-llama-plan -dist-parallelize="cp=2" -dist-propagate-sharding -dist-partition | FileCheck %s
// RUN: titan-opt %s -titan-llama-plan -dist-parallelize="cp=2 tp=2" -dist-propagate-sharding -dist-partition="cp-rotate-method=alltoall" -titan-autodiff | FileCheck %s --check-prefix=GRAD

// TorchTitan's block-causal mask under context parallel: the tokens are
// split into each rank's two load-balanced chunks, the document starts
// stay whole along the sequence (a query's document may start in any
// earlier chunk) and reach the ring attention and its gradient.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %{{[^:]*}}: tensor<2x4xi32> {dist.sharding = #dist.sharding<{{\[}}[], ["cp"]]>, titan.input = "tokens"}
// CHECK-SAME: %[[STARTS:[^:]*]]: tensor<2x8xi32> {titan.input = "document_starts"}
// CHECK:      dist.ring_attention %{{.*}}, %{{.*}}, %{{.*}} documents %[[STARTS]] axes ["cp"] rotate allgather {{.*}} : (tensor<2x4x4x2xf32>, tensor<2x4x2x2xf32>, tensor<2x4x2x2xf32>, tensor<2x8xi32>) -> (tensor<2x4x4x2xf32>, tensor<2x4x4xf32>)

// With tp 2 the heads are split as well; the starts stay whole.
// GRAD-LABEL: func.func @forward_backward(
// GRAD-SAME: %[[STARTS:[^:]*]]: tensor<2x8xi32> {titan.input = "document_starts"}
// GRAD:      dist.ring_attention {{.*}} documents %[[STARTS]] axes ["cp"] rotate alltoall {{.*}} : (tensor<2x4x2x2xf32>, tensor<2x4x1x2xf32>, tensor<2x4x1x2xf32>, tensor<2x8xi32>)
// GRAD:      dist.ring_attention_grad {{.*}} documents %[[STARTS]] axes ["cp"] rotate alltoall
func.func @forward(%emb: tensor<8x8xf32> {titan.param = "tok_embeddings.weight"},
                   %wq: tensor<8x8xf32> {titan.param = "layers.0.attention.wq.weight"},
                   %wk: tensor<4x8xf32> {titan.param = "layers.0.attention.wk.weight"},
                   %wv: tensor<4x8xf32> {titan.param = "layers.0.attention.wv.weight"},
                   %wo: tensor<8x8xf32> {titan.param = "layers.0.attention.wo.weight"},
                   %out: tensor<8x8xf32> {titan.param = "output.weight"},
                   %tokens: tensor<2x8xi32> {titan.input = "tokens"},
                   %labels: tensor<2x8xi32> {titan.input = "labels"},
                   %starts: tensor<2x8xi32> {titan.input = "document_starts"}) -> tensor<f32> {
  %h = titan.embedding %emb[%tokens] : tensor<8x8xf32>, tensor<2x8xi32> -> tensor<2x8x8xf32>
  %angles = titan.rope_angles {theta = 1.000000e+04 : f64} : tensor<8x1x2xf32>
  %q = titan.linear %h, %wq : (tensor<2x8x8xf32>, tensor<8x8xf32>) -> tensor<2x8x8xf32>
  %k = titan.linear %h, %wk : (tensor<2x8x8xf32>, tensor<4x8xf32>) -> tensor<2x8x4xf32>
  %v = titan.linear %h, %wv : (tensor<2x8x8xf32>, tensor<4x8xf32>) -> tensor<2x8x4xf32>
  %qh = titan.reshape %q : tensor<2x8x8xf32> -> tensor<2x8x4x2xf32>
  %kh = titan.reshape %k : tensor<2x8x4xf32> -> tensor<2x8x2x2xf32>
  %vh = titan.reshape %v : tensor<2x8x4xf32> -> tensor<2x8x2x2xf32>
  %qr = titan.rope %qh, %angles : (tensor<2x8x4x2xf32>, tensor<8x1x2xf32>) -> tensor<2x8x4x2xf32>
  %kr = titan.rope %kh, %angles : (tensor<2x8x2x2xf32>, tensor<8x1x2xf32>) -> tensor<2x8x2x2xf32>
  %a:2 = titan.attention %qr, %kr, %vh documents %starts {scale = 0.7071067811865476 : f64} : (tensor<2x8x4x2xf32>, tensor<2x8x2x2xf32>, tensor<2x8x2x2xf32>, tensor<2x8xi32>) -> (tensor<2x8x4x2xf32>, tensor<2x4x8xf32>)
  %am = titan.reshape %a#0 : tensor<2x8x4x2xf32> -> tensor<2x8x8xf32>
  %o = titan.linear %am, %wo : (tensor<2x8x8xf32>, tensor<8x8xf32>) -> tensor<2x8x8xf32>
  %r = titan.add %h, %o : tensor<2x8x8xf32>
  %logits = titan.linear %r, %out : (tensor<2x8x8xf32>, tensor<8x8xf32>) -> tensor<2x8x8xf32>
  %loss, %loss_lse = titan.cross_entropy %logits, %labels : (tensor<2x8x8xf32>, tensor<2x8xi32>) -> (tensor<f32>, tensor<2x8xf32>)
  return %loss : tensor<f32>
}
