// RUN: titan-opt %s -titan-llama-plan -dist-parallelize="cp=2" -dist-propagate-sharding -dist-partition | FileCheck %s
// RUN: titan-opt %s -titan-llama-plan -dist-parallelize="cp=2" -dist-propagate-sharding -dist-partition="cp-rotate-method=alltoall" -titan-autodiff | FileCheck %s --check-prefix=GRAD
// RUN: titan-opt %s -titan-llama-plan -dist-parallelize="cp=2 tp=2" -dist-propagate-sharding -dist-partition | FileCheck %s --check-prefix=CP-TP
// RUN: titan-opt %s -titan-llama-plan -dist-parallelize="cp=4" -dist-propagate-sharding -dist-partition | FileCheck %s --check-prefix=CP4
// RUN: not titan-opt %s -titan-llama-plan -dist-parallelize="cp=2" -dist-partition="cp-rotate-method=ring" 2>&1 | FileCheck %s --check-prefix=BAD-METHOD

// Context parallel (cp 2) on an attention block: each rank holds its two
// load-balanced chunks of the sequence (4 of 8 tokens), the replicated RoPE
// cos/sin table is sliced to the same chunks (dist.local_shard), attention
// over the split sequence becomes dist.ring_attention, and the loss, a
// partial mean over cp, is averaged over cp (its per-row lse stays split). Parameters are stored split over cp
// (FSDP over dp_shard x cp) and gathered before use.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: tensor<4x8xf32> {dist.keep_gathered, dist.sharding = #dist.sharding<{{\[}}["cp"]]>, titan.param = "tok_embeddings.weight"}
// CHECK-SAME: %[[TOKENS:[^:]*]]: tensor<2x4xi32> {dist.sharding = #dist.sharding<{{\[}}[], ["cp"]]>, titan.input = "tokens"}
// CHECK:      %[[ANGLES:.*]] = titan.rope_angles
// CHECK:      %[[LOCAL:.*]] = dist.local_shard %[[ANGLES]] axes ["cp"] dim 0 {dist.shardings = [#dist.sharding<{{\[}}["cp"]]>]} : tensor<8x1x2xf32> -> tensor<4x1x2xf32>
// CHECK:      titan.rope %{{.*}}, %[[LOCAL]]
// CHECK:      %[[O:.*]], %{{.*}} = dist.ring_attention %{{.*}}, %{{.*}}, %{{.*}} axes ["cp"] rotate allgather {dist.shardings = [#dist.sharding<{{\[}}[], ["cp"]]>, #dist.sharding<{{\[}}[], [], ["cp"]]>]{{.*}} : (tensor<2x4x4x2xf32>, tensor<2x4x2x2xf32>, tensor<2x4x2x2xf32>) -> (tensor<2x4x4x2xf32>, tensor<2x4x4xf32>)
// CHECK:      %[[LOSS:.*]], %{{.*}} = titan.cross_entropy {{.*}} {dist.shardings = [#dist.sharding<[], partial = ["cp"], reduction = avg>, #dist.sharding<{{\[}}[], ["cp"]]>]}
// CHECK-NEXT: %[[F:.*]] = dist.all_reduce_start %[[LOSS]] axes ["cp"] reduction avg
// CHECK-NEXT: %[[L:.*]] = dist.wait %[[F]]
// CHECK-NEXT: return %[[L]]

// The adjoint of ring attention is its gradient op; the parameters'
// gradients are reduce-scattered over cp.
// GRAD-LABEL: func.func @forward_backward(
// GRAD:      dist.ring_attention {{.*}} rotate alltoall
// GRAD:      dist.ring_attention_grad {{.*}} rotate alltoall
// GRAD:      dist.reduce_scatter_start %{{.*}} axes ["cp"] dim 0 : tensor<8x8xf32> -> !dist.future<tensor<4x8xf32>>

// With tensor parallel, sequence parallel splits the residual stream over
// cp then tp: the embedding's partial sums are reduce-scattered over tp
// within the rank's cp chunks; the heads are split over tp.
// CP-TP:      titan.embedding {{.*}} -> tensor<2x4x8xf32>
// CP-TP-NEXT: dist.reduce_scatter_start %{{.*}} axes ["tp"] dim 1 : tensor<2x4x8xf32> -> !dist.future<tensor<2x2x8xf32>>
// CP-TP-NEXT: dist.wait {{.*}} {dist.shardings = [#dist.sharding<{{\[}}[], ["cp", "tp"]]>]}
// CP-TP:      dist.ring_attention {{.*}} : (tensor<2x4x2x2xf32>, tensor<2x4x1x2xf32>, tensor<2x4x1x2xf32>)

// cp 4 over 8 tokens: chunks of one token, two a rank. TorchTitan needs
// only 2 cp to divide the sequence; the rules read the global shapes (8
// tokens split 4 ways), not the per-rank arguments' (2 tokens).
// CP4:      titan.embedding {{.*}} : tensor<8x8xf32>, tensor<2x2xi32> -> tensor<2x2x8xf32>
// CP4:      dist.local_shard {{.*}} : tensor<8x1x2xf32> -> tensor<2x1x2xf32>
// CP4:      dist.ring_attention {{.*}} : (tensor<2x2x4x2xf32>, tensor<2x2x2x2xf32>, tensor<2x2x2x2xf32>) -> (tensor<2x2x4x2xf32>, tensor<2x4x2xf32>)
// CP4:      titan.cross_entropy {{.*}} : (tensor<2x2x8xf32>, tensor<2x2xi32>) -> (tensor<f32>, tensor<2x2xf32>)

// BAD-METHOD: error: dist-partition: cp-rotate-method must be allgather or alltoall, got 'ring'
func.func @forward(%emb: tensor<8x8xf32> {titan.param = "tok_embeddings.weight"},
                   %wq: tensor<8x8xf32> {titan.param = "layers.0.attention.wq.weight"},
                   %wk: tensor<4x8xf32> {titan.param = "layers.0.attention.wk.weight"},
                   %wv: tensor<4x8xf32> {titan.param = "layers.0.attention.wv.weight"},
                   %wo: tensor<8x8xf32> {titan.param = "layers.0.attention.wo.weight"},
                   %out: tensor<8x8xf32> {titan.param = "output.weight"},
                   %tokens: tensor<2x8xi32> {titan.input = "tokens"},
                   %labels: tensor<2x8xi32> {titan.input = "labels"}) -> tensor<f32> {
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
  %a:2 = titan.attention %qr, %kr, %vh {scale = 0.7071067811865476 : f64} : (tensor<2x8x4x2xf32>, tensor<2x8x2x2xf32>, tensor<2x8x2x2xf32>) -> (tensor<2x8x4x2xf32>, tensor<2x4x8xf32>)
  %am = titan.reshape %a#0 : tensor<2x8x4x2xf32> -> tensor<2x8x8xf32>
  %o = titan.linear %am, %wo : (tensor<2x8x8xf32>, tensor<8x8xf32>) -> tensor<2x8x8xf32>
  %r = titan.add %h, %o : tensor<2x8x8xf32>
  %logits = titan.linear %r, %out : (tensor<2x8x8xf32>, tensor<8x8xf32>) -> tensor<2x8x8xf32>
  %loss, %loss_lse = titan.cross_entropy %logits, %labels : (tensor<2x8x8xf32>, tensor<2x8xi32>) -> (tensor<f32>, tensor<2x8xf32>)
  return %loss : tensor<f32>
}
