// RUN: titan-opt %s -titan-llama-plan -dist-parallelize="tp=2" -dist-propagate-sharding -dist-partition | FileCheck %s
// RUN: titan-opt %s -titan-llama-plan -dist-parallelize="tp=2 loss-parallel=false" -dist-propagate-sharding -dist-partition | FileCheck %s --check-prefix=NO-LP
// RUN: titan-opt %s -titan-llama-plan -dist-parallelize="tp=2" -dist-propagate-sharding -dist-partition -titan-autodiff | FileCheck %s --check-prefix=GRAD
// RUN: titan-opt %s -titan-llama-plan -dist-parallelize="tp=2 dp-shard=2" -dist-propagate-sharding -dist-partition | FileCheck %s --check-prefix=FSDP-TP

// Tensor + sequence parallel on an attention block with its embedding and
// output head (GQA: 4 query heads, 2 kv heads), TorchTitan's plan.
// Between blocks the activations are split along the sequence ([2, 4/2, 8]):
// the vocabulary-parallel embedding's partial sums are reduce-scattered,
// the norm runs on the sequence shard with a replicated weight (its
// gradient is all-reduced over tp), the shard is gathered once for wq, wk
// and wv, heads are split 2 + 1 per rank, and wo's partial sums are
// reduce-scattered again.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %[[EMB:[^:]*]]: tensor<8x8xf32> {dist.sharding = #dist.sharding<{{\[}}["tp"]]>, titan.param = "tok_embeddings.weight"}
// CHECK-SAME: tensor<4x8xf32> {dist.sharding = #dist.sharding<{{\[}}["tp"]]>, titan.param = "layers.0.attention.wq.weight"}
// CHECK-SAME: tensor<8x4xf32> {dist.sharding = #dist.sharding<{{\[}}[], ["tp"]]>, titan.param = "layers.0.attention.wo.weight"}
// CHECK-SAME: %[[NORM:[^:]*]]: tensor<8xf32> {titan.param = "layers.0.attention_norm.weight"}
// CHECK:      %[[START:.*]] = dist.shard_offset axes ["tp"] stride 8 : tensor<i32>
// CHECK:      %[[E:.*]] = titan.embedding %[[EMB]][%{{.*}}] vocab_start %[[START]] : tensor<i32> {{.*}} : tensor<8x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
// CHECK-NEXT: %[[ERS:.*]] = dist.reduce_scatter_start %[[E]] axes ["tp"] dim 1 : tensor<2x4x8xf32> -> !dist.future<tensor<2x2x8xf32>>
// CHECK-NEXT: %[[H:.*]] = dist.wait %[[ERS]]
// CHECK:      %[[NR:.*]] = dist.replicate %[[NORM]] axes ["tp"] {{.*}} : tensor<8xf32>
// CHECK-NEXT: %[[X:.*]] = titan.rms_norm %[[H]], %[[NR]] {dist.shardings = [#dist.sharding<{{\[}}[], ["tp"]]>]{{.*}} : (tensor<2x2x8xf32>, tensor<8xf32>) -> tensor<2x2x8xf32>
// CHECK-NEXT: %[[XG:.*]] = dist.all_gather_start %[[X]] axes ["tp"] dim 1 : tensor<2x2x8xf32> -> !dist.future<tensor<2x4x8xf32>>
// CHECK-NEXT: %[[XF:.*]] = dist.wait %[[XG]]
// CHECK-NEXT: %[[Q:.*]] = titan.linear %[[XF]], %{{.*}} : (tensor<2x4x8xf32>, tensor<4x8xf32>) -> tensor<2x4x4xf32>
// CHECK-NEXT: titan.linear %[[XF]], %{{.*}} : (tensor<2x4x8xf32>, tensor<2x8xf32>) -> tensor<2x4x2xf32>
// CHECK-NEXT: titan.linear %[[XF]], %{{.*}} : (tensor<2x4x8xf32>, tensor<2x8xf32>) -> tensor<2x4x2xf32>
// CHECK-NEXT: titan.reshape %[[Q]] {{.*}} : tensor<2x4x4xf32> -> tensor<2x4x2x2xf32>
// CHECK:      titan.attention {{.*}} : (tensor<2x4x2x2xf32>, tensor<2x4x1x2xf32>, tensor<2x4x1x2xf32>) -> (tensor<2x4x2x2xf32>, tensor<2x2x4xf32>)
// CHECK-NEXT: titan.reshape {{.*}} : tensor<2x4x2x2xf32> -> tensor<2x4x4xf32>
// CHECK-NEXT: %[[O:.*]] = titan.linear {{.*}} : (tensor<2x4x4xf32>, tensor<8x4xf32>) -> tensor<2x4x8xf32>
// CHECK-NEXT: %[[ORS:.*]] = dist.reduce_scatter_start %[[O]] axes ["tp"] dim 1 : tensor<2x4x8xf32> -> !dist.future<tensor<2x2x8xf32>>
// CHECK-NEXT: %[[OS:.*]] = dist.wait %[[ORS]]
// CHECK-NEXT: %[[R:.*]] = titan.add %[[H]], %[[OS]] {{.*}} : tensor<2x2x8xf32>
// Loss parallel: vocabulary-sharded logits, per-row statistics all-reduced.
// CHECK-NEXT: dist.all_gather_start %[[R]] axes ["tp"] dim 1
// CHECK-NEXT: dist.wait
// CHECK-NEXT: %[[LOGITS:.*]] = titan.linear {{.*}} -> tensor<2x4x8xf32>
// CHECK-NEXT: %[[M:.*]] = titan.row_max %[[LOGITS]] {dist.shardings = [#dist.sharding<[], partial = ["tp"], reduction = max>]} : tensor<2x4x8xf32> -> tensor<2x4xf32>
// CHECK-NEXT: %[[MF:.*]] = dist.all_reduce_start %[[M]] axes ["tp"] reduction max
// CHECK-NEXT: %[[MAX:.*]] = dist.wait %[[MF]]
// CHECK-NEXT: %[[S:.*]] = titan.sum_exp %[[LOGITS]], %[[MAX]] {dist.shardings = [#dist.sharding<[], partial = ["tp"]>]}
// CHECK-NEXT: %[[T:.*]] = titan.target_logit %[[LOGITS]], %{{.*}} vocab_start %[[START]]
// CHECK-NEXT: %[[SF:.*]] = dist.all_reduce_start %[[S]] axes ["tp"] : tensor<2x4xf32>
// CHECK-NEXT: %[[SUM:.*]] = dist.wait %[[SF]]
// CHECK-NEXT: %[[TF:.*]] = dist.all_reduce_start %[[T]] axes ["tp"] : tensor<2x4xf32>
// CHECK-NEXT: %[[TGT:.*]] = dist.wait %[[TF]]
// CHECK-NEXT: %[[LOSS:.*]] = titan.cross_entropy_from_stats %[[MAX]], %[[SUM]], %[[TGT]] {dist.shardings = [#dist.sharding<[]>]}
// CHECK-NEXT: return %[[LOSS]]

// Without loss parallel the logits are gathered along the vocabulary.
// NO-LP:      titan.add
// NO-LP:      %[[LOGITS:.*]] = titan.linear {{.*}} -> tensor<2x4x8xf32>
// NO-LP-NEXT: %[[G:.*]] = dist.all_gather_start %[[LOGITS]] axes ["tp"] dim 2 : tensor<2x4x8xf32> -> !dist.future<tensor<2x4x16xf32>>
// NO-LP-NEXT: %[[FULL:.*]] = dist.wait %[[G]]
// NO-LP-NEXT: titan.cross_entropy %[[FULL]], %{{.*}} : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> (tensor<f32>, tensor<2x4xf32>)

// The backward mirrors every collective (each adjoint is the transpose):
// the loss seed is 1/2 per tp rank; the statistics' gradients are equal on
// every tp rank (they derive from all-reduced values), so their all-reduce
// is a multiplication by 2; gathers become reduce-scatters and the other way
// round, the
// norm weight's partial gradient is all-reduced over tp, and the embedding
// gradient keeps only this rank's vocabulary rows.
// GRAD-LABEL: func.func @forward_backward(
// GRAD:      %[[SEED:.*]] = titan.fill 5.000000e-01 : tensor<f32>
// GRAD-NEXT: %[[DS:.*]], %[[DT:.*]] = titan.cross_entropy_from_stats_grad %{{.*}}, %[[SEED]]
// GRAD-NEXT: %[[TWO:.*]] = titan.fill 2.000000e+00 : tensor<2x4xf32>
// GRAD-NEXT: %[[DTS:.*]] = titan.mul %[[DT]], %[[TWO]]
// GRAD-NEXT: %[[TWO2:.*]] = titan.fill 2.000000e+00 : tensor<2x4xf32>
// GRAD-NEXT: %[[DSS:.*]] = titan.mul %[[DS]], %[[TWO2]]
// GRAD-NEXT: titan.target_logit_grad %[[DTS]], %{{.*}} vocab_start
// GRAD-NEXT: titan.sum_exp_grad %{{.*}}, %{{.*}}, %[[DSS]]
// GRAD:      %[[DX:.*]] = titan.linear_grad_input {{.*}} -> tensor<2x4x8xf32>
// GRAD:      dist.reduce_scatter_start %[[DX]] axes ["tp"] dim 1 : tensor<2x4x8xf32> -> !dist.future<tensor<2x2x8xf32>>
// GRAD:      titan.attention_grad
// GRAD:      %[[DN:.*]], %[[DW:.*]] = titan.rms_norm_grad
// GRAD:      %[[DWF:.*]] = dist.all_reduce_start %[[DW]] axes ["tp"] : tensor<8xf32>
// GRAD:      %[[DEG:.*]] = dist.all_gather_start %{{.*}} axes ["tp"] dim 1 : tensor<2x2x8xf32> -> !dist.future<tensor<2x4x8xf32>>
// GRAD-NEXT: %[[DE:.*]] = dist.wait %[[DEG]]
// GRAD-NEXT: titan.embedding_grad %[[DE]], %{{.*}} vocab_start %{{.*}} : tensor<i32> : (tensor<2x4x8xf32>, tensor<2x4xi32>) -> tensor<8x8xf32>

// FSDP x TP: FSDP gathers its shards over dp_shard only, giving each rank
// its tensor-parallel shard; the norm weight is replicated over tp and
// gathered over dp_shard; the loss is averaged over dp_shard.
// FSDP-TP-LABEL: func.func @forward(
// FSDP-TP-SAME: %[[EMB:[^:]*]]: tensor<4x8xf32> {dist.keep_gathered, dist.sharding = #dist.sharding<{{\[}}["tp", "dp_shard"]]>
// FSDP-TP-SAME: %[[WO:[^:]*]]: tensor<4x4xf32> {dist.keep_gathered, dist.sharding = #dist.sharding<{{\[}}["dp_shard"], ["tp"]]>
// FSDP-TP-SAME: %[[NORM:[^:]*]]: tensor<4xf32> {dist.keep_gathered, dist.sharding = #dist.sharding<{{\[}}["dp_shard"]]>
// FSDP-TP:      dist.all_gather_start %[[EMB]] axes ["dp_shard"] dim 0 : tensor<4x8xf32> -> !dist.future<tensor<8x8xf32>>
// FSDP-TP:      %[[NR:.*]] = dist.replicate %[[NORM]] axes ["tp"]{{.*}} : tensor<4xf32>
// FSDP-TP-NEXT: dist.all_gather_start %[[NR]] axes ["dp_shard"] dim 0 : tensor<4xf32> -> !dist.future<tensor<8xf32>>
// FSDP-TP:      dist.all_gather_start %[[WO]] axes ["dp_shard"] dim 0 : tensor<4x4xf32> -> !dist.future<tensor<8x4xf32>>
// FSDP-TP:      %[[L:.*]] = titan.cross_entropy_from_stats
// FSDP-TP-NEXT: %[[LF:.*]] = dist.all_reduce_start %[[L]] axes ["dp_shard"] reduction avg
func.func @forward(%emb: tensor<16x8xf32> {titan.param = "tok_embeddings.weight"},
                   %wq: tensor<8x8xf32> {titan.param = "layers.0.attention.wq.weight"},
                   %wk: tensor<4x8xf32> {titan.param = "layers.0.attention.wk.weight"},
                   %wv: tensor<4x8xf32> {titan.param = "layers.0.attention.wv.weight"},
                   %wo: tensor<8x8xf32> {titan.param = "layers.0.attention.wo.weight"},
                   %norm: tensor<8xf32> {titan.param = "layers.0.attention_norm.weight"},
                   %out: tensor<16x8xf32> {titan.param = "output.weight"},
                   %tokens: tensor<2x4xi32> {titan.input = "tokens"},
                   %labels: tensor<2x4xi32> {titan.input = "labels"}) -> tensor<f32> {
  %h = titan.embedding %emb[%tokens] : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
  %angles = titan.rope_angles {theta = 1.000000e+04 : f64} : tensor<4x1x2xf32>
  %x = titan.rms_norm %h, %norm {eps = 1.000000e-05 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %q = titan.linear %x, %wq : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %k = titan.linear %x, %wk : (tensor<2x4x8xf32>, tensor<4x8xf32>) -> tensor<2x4x4xf32>
  %v = titan.linear %x, %wv : (tensor<2x4x8xf32>, tensor<4x8xf32>) -> tensor<2x4x4xf32>
  %qh = titan.reshape %q : tensor<2x4x8xf32> -> tensor<2x4x4x2xf32>
  %kh = titan.reshape %k : tensor<2x4x4xf32> -> tensor<2x4x2x2xf32>
  %vh = titan.reshape %v : tensor<2x4x4xf32> -> tensor<2x4x2x2xf32>
  %qr = titan.rope %qh, %angles : (tensor<2x4x4x2xf32>, tensor<4x1x2xf32>) -> tensor<2x4x4x2xf32>
  %kr = titan.rope %kh, %angles : (tensor<2x4x2x2xf32>, tensor<4x1x2xf32>) -> tensor<2x4x2x2xf32>
  %a:2 = titan.attention %qr, %kr, %vh {scale = 0.7071067811865476 : f64} : (tensor<2x4x4x2xf32>, tensor<2x4x2x2xf32>, tensor<2x4x2x2xf32>) -> (tensor<2x4x4x2xf32>, tensor<2x4x4xf32>)
  %am = titan.reshape %a#0 : tensor<2x4x4x2xf32> -> tensor<2x4x8xf32>
  %o = titan.linear %am, %wo : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %r = titan.add %h, %o : tensor<2x4x8xf32>
  %logits = titan.linear %r, %out : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  %loss, %loss_lse = titan.cross_entropy %logits, %labels : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> (tensor<f32>, tensor<2x4xf32>)
  return %loss : tensor<f32>
}
