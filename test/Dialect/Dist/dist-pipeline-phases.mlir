// RUN: titan-opt %s -split-input-file -titan-autodiff="forward=stage1 backward=stage1_forward_backward accumulation-steps=2" -dist-pipeline-phases -verify-diagnostics | FileCheck %s
// RUN: titan-opt %s -split-input-file -titan-autodiff="forward=stage1 backward=stage1_forward_backward accumulation-steps=2" -dist-pipeline-phases="split-weight-grad=true" -verify-diagnostics | FileCheck %s --check-prefix=ZB
// RUN: echo 'module {}' | not titan-opt -dist-pipeline-phases 2>&1 | FileCheck %s --check-prefix=EMPTY
// RUN: titan-opt %s -split-input-file -titan-autodiff="forward=stage1 backward=stage1_forward_backward accumulation-steps=2" -dist-pipeline-phases="hoist-parameter-values=true" -verify-diagnostics | FileCheck %s --check-prefix=HOIST
// RUN: titan-opt %s -split-input-file -titan-autodiff="forward=stage1 backward=stage1_forward_backward accumulation-steps=2 regather-params=true" -dist-pipeline-phases="hoist-parameter-values=true defer-gradient-reduction=true" -verify-diagnostics | FileCheck %s --check-prefix=DEFER
// RUN: titan-opt %s -split-input-file -titan-autodiff="forward=stage1 backward=stage1_forward_backward accumulation-steps=2 regather-params=true" -dist-pipeline-phases="hoist-parameter-values=true defer-gradient-reduction=true" -dist-narrow-gathers -verify-diagnostics | FileCheck %s --check-prefix=MERGE
// RUN: titan-opt %s -split-input-file -titan-autodiff="forward=stage1 backward=stage1_forward_backward accumulation-steps=2 regather-params=true" -dist-pipeline-phases="defer-gradient-reduction=true" -verify-diagnostics | FileCheck %s --check-prefix=RESHARD

// EMPTY: error: dist-pipeline-phases: no stage step (a function with dist.pipeline_phase = "forward_backward"; run titan-autodiff on the stages of dist-pipeline-split)

// A middle stage (norm, linear, residual) with gradient accumulation. F
// holds the forward ops and stashes the norm's output, which the weight
// gradient reads; B holds every backward op; the forward-only @stage1 is
// gone.
// CHECK-LABEL: func.func @stage1_forward(
// CHECK-SAME: %[[W:[^:]*]]: tensor<8x8xf32> {titan.param = "w"}, %[[N:[^:]*]]: tensor<8xf32> {titan.param = "n"}, %[[H:[^:]*]]: tensor<2x4x8xf32> {dist.stage_input = 0 : i64})
// CHECK-SAME: -> (tensor<2x4x8xf32> {dist.stage_output = 0 : i64}, tensor<2x4x8xf32> {dist.stash = 0 : i64})
// CHECK-SAME: attributes {dist.pipeline_phase = "forward", dist.stage = 1 : i64}
// CHECK:        %[[Y:.*]] = titan.rms_norm %[[H]], %[[N]]
// CHECK:        %[[Z:.*]] = titan.linear %[[Y]], %[[W]]
// CHECK:        %[[O:.*]] = titan.add %[[H]], %[[Z]]
// CHECK-NEXT:   return %[[O]], %[[Y]]
// CHECK-LABEL: func.func @stage1_backward(
// CHECK-SAME: %[[BW:[^:]*]]: tensor<8x8xf32> {titan.param = "w"}, %[[BN:[^:]*]]: tensor<8xf32> {titan.param = "n"}, %[[BH:[^:]*]]: tensor<2x4x8xf32> {dist.stage_input = 0 : i64}, %[[DO:[^:]*]]: tensor<2x4x8xf32> {dist.stage_output_grad = 0 : i64}, %[[GW:[^:]*]]: tensor<8x8xf32> {titan.grad = "w"}, %[[GN:[^:]*]]: tensor<8xf32> {titan.grad = "n"}, %[[BY:[^:]*]]: tensor<2x4x8xf32> {dist.stash = 0 : i64})
// CHECK-SAME: -> (tensor<2x4x8xf32> {dist.stage_input_grad = 0 : i64}, tensor<8x8xf32> {titan.grad = "w"}, tensor<8xf32> {titan.grad = "n"})
// CHECK-SAME: attributes {dist.pipeline_phase = "backward", dist.stage = 1 : i64}
// CHECK-NOT:    titan.linear %
// CHECK:        %[[DY:.*]] = titan.linear_grad_input %[[DO]], %[[BW]]
// CHECK:        %[[DW:.*]] = titan.linear_grad_weight %[[DO]], %[[BY]]
// CHECK:        %[[DX:.*]], %[[DN:.*]] = titan.rms_norm_grad %[[BH]], %[[BN]], %[[DY]]
// CHECK:        %[[DH:.*]] = titan.add %[[DO]], %[[DX]]
// CHECK:        %[[AW:.*]] = titan.add %[[GW]], %[[DW]]
// CHECK:        %[[AN:.*]] = titan.add %[[GN]], %[[DN]]
// CHECK-NEXT:   return %[[DH]], %[[AW]], %[[AN]]
// CHECK-NOT:  func.func @stage1(

// Zero-bubble split: I computes the input gradient (and, fused in the
// norm's backward, its weight's gradient, stashed for W); W the weight
// gradients and their accumulation, from the stashes of F and I.
// ZB-LABEL: func.func @stage1_forward(
// ZB-SAME: -> (tensor<2x4x8xf32> {dist.stage_output = 0 : i64}, tensor<2x4x8xf32> {dist.stash = 0 : i64})
// ZB-LABEL: func.func @stage1_backward_input(
// ZB-SAME: %[[IW:[^:]*]]: tensor<8x8xf32> {titan.param = "w"}, %[[IN:[^:]*]]: tensor<8xf32> {titan.param = "n"}, %[[IH:[^:]*]]: tensor<2x4x8xf32> {dist.stage_input = 0 : i64}, %[[IDO:[^:]*]]: tensor<2x4x8xf32> {dist.stage_output_grad = 0 : i64})
// ZB-SAME: -> (tensor<2x4x8xf32> {dist.stage_input_grad = 0 : i64}, tensor<8xf32> {dist.stash = 1 : i64})
// ZB-SAME: attributes {dist.pipeline_phase = "backward_input", dist.stage = 1 : i64}
// ZB:        %[[DY:.*]] = titan.linear_grad_input %[[IDO]], %[[IW]]
// ZB:        %[[DX:.*]], %[[DN:.*]] = titan.rms_norm_grad %[[IH]], %[[IN]], %[[DY]]
// ZB:        %[[DH:.*]] = titan.add %[[IDO]], %[[DX]]
// ZB-NEXT:   return %[[DH]], %[[DN]]
// ZB-LABEL: func.func @stage1_backward_weight(
// ZB-SAME: %[[WDO:[^:]*]]: tensor<2x4x8xf32> {dist.stage_output_grad = 0 : i64}, %[[GW:[^:]*]]: tensor<8x8xf32> {titan.grad = "w"}, %[[GN:[^:]*]]: tensor<8xf32> {titan.grad = "n"}, %[[Y:[^:]*]]: tensor<2x4x8xf32> {dist.stash = 0 : i64}, %[[SDN:[^:]*]]: tensor<8xf32> {dist.stash = 1 : i64})
// ZB-SAME: -> (tensor<8x8xf32> {titan.grad = "w"}, tensor<8xf32> {titan.grad = "n"})
// ZB-SAME: attributes {dist.pipeline_phase = "backward_weight", dist.stage = 1 : i64}
// ZB:        %[[DW:.*]] = titan.linear_grad_weight %[[WDO]], %[[Y]]
// ZB:        %[[AW:.*]] = titan.add %[[GW]], %[[DW]]
// ZB:        %[[AN:.*]] = titan.add %[[GN]], %[[SDN]]
// ZB-NEXT:   return %[[AW]], %[[AN]]
module attributes {dist.mesh = #dist.mesh<pp = 2, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 1>} {
  func.func @stage1(%w: tensor<8x8xf32> {titan.param = "w"}, %n: tensor<8xf32> {titan.param = "n"},
                    %h: tensor<2x4x8xf32> {dist.stage_input = 0 : i64})
      -> (tensor<2x4x8xf32> {dist.stage_output = 0 : i64}) attributes {dist.stage = 1 : i64, dist.pipeline_phase = "forward"} {
    %y = titan.rms_norm %h, %n {eps = 1.0e-5 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
    %z = titan.linear %y, %w : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
    %o = titan.add %h, %z : tensor<2x4x8xf32>
    return %o : tensor<2x4x8xf32>
  }
}

// -----

// The last stage: F returns the loss and stashes the logits and their
// per-row lse (the loss's gradient reads them); the parameter's cast (mixed precision) is
// computed again in B instead of stashed; the loss's seed is 1/2 (two
// microbatches).
// CHECK-LABEL: func.func @stage1_forward(
// CHECK-SAME: -> (tensor<f32> {titan.output = "loss"}, tensor<2x4x16xbf16> {dist.stash = 0 : i64}, tensor<2x4xf32> {dist.stash = 1 : i64})
// CHECK:        titan.cast
// CHECK:        %[[LOGITS:.*]] = titan.linear
// CHECK:        %[[LOSS:.*]], %[[LSE:.*]] = titan.cross_entropy %[[LOGITS]]
// CHECK-NEXT:   return %[[LOSS]], %[[LOGITS]], %[[LSE]]
// CHECK-LABEL: func.func @stage1_backward(
// CHECK-SAME: %[[O:[^:]*]]: tensor<16x8xf32> {titan.param = "output.weight"}, %[[L:[^:]*]]: tensor<2x4xi32> {titan.input = "labels"}, %[[H:[^:]*]]: tensor<2x4x8xbf16> {dist.stage_input = 0 : i64}, %{{.*}}: tensor<16x8xf32> {titan.grad = "output.weight"}, %[[SL:[^:]*]]: tensor<2x4x16xbf16> {dist.stash = 0 : i64}, %[[SLSE:[^:]*]]: tensor<2x4xf32> {dist.stash = 1 : i64})
// CHECK:        %[[OB:.*]] = titan.cast %[[O]]
// CHECK:        titan.fill 5.000000e-01
// CHECK:        titan.cross_entropy_grad %[[SL]], %[[L]], %[[SLSE]]
// CHECK:        titan.linear_grad_input %{{.*}}, %[[OB]]
// ZB-LABEL: func.func @stage1_backward_input(
// ZB-LABEL: func.func @stage1_backward_weight(
module attributes {dist.mesh = #dist.mesh<pp = 2, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 1>} {
  func.func @stage1(%o: tensor<16x8xf32> {titan.param = "output.weight"}, %l: tensor<2x4xi32> {titan.input = "labels"},
                    %h: tensor<2x4x8xbf16> {dist.stage_input = 0 : i64}) -> tensor<f32> attributes {dist.stage = 1 : i64, dist.pipeline_phase = "forward"} {
    %ob = titan.cast %o : tensor<16x8xf32> to tensor<16x8xbf16>
    %logits = titan.linear %h, %ob : (tensor<2x4x8xbf16>, tensor<16x8xbf16>) -> tensor<2x4x16xbf16>
    %loss, %loss_lse = titan.cross_entropy %logits, %l : (tensor<2x4x16xbf16>, tensor<2x4xi32>) -> (tensor<f32>, tensor<2x4xf32>)
    return %loss : tensor<f32>
  }
}

// With hoist-parameter-values what depends on the parameters alone moves
// to @stage1_unshard, run once per step. The middle stage reads its f32
// weights as they are: its unshard is empty. The last stage's cast of its
// weight is computed there once and both phases read it (dist.per_step =
// 0); neither casts it again (the backward casts the weight's gradient
// back to f32, the cast's adjoint).
// HOIST-LABEL: func.func @stage1_unshard() attributes {dist.pipeline_phase = "unshard", dist.stage = 1 : i64}
// HOIST-LABEL: func.func @stage1_unshard(%
// HOIST-SAME: : tensor<16x8xf32> {titan.param = "output.weight"}) -> (tensor<16x8xbf16> {dist.per_step = 0 : i64})
// HOIST-NEXT:   %[[C:.*]] = titan.cast
// HOIST-NEXT:   return %[[C]]
// HOIST:      func.func @stage1_forward(
// HOIST-SAME: %{{.*}}: tensor<16x8xbf16> {dist.per_step = 0 : i64}
// HOIST-NOT:    titan.cast
// HOIST:        titan.cross_entropy
// HOIST:      func.func @stage1_backward(
// HOIST-SAME: %{{.*}}: tensor<16x8xbf16> {dist.per_step = 0 : i64}
// HOIST-NOT:    titan.cast %{{.*}} : tensor<16x8xf32> to tensor<16x8xbf16>
// HOIST:        titan.cast %{{.*}} : tensor<16x8xbf16> to tensor<16x8xf32>
// HOIST:        return

// -----

// FSDP under pipeline parallelism: the forward's gather and the backward's
// re-gather of the weight become one, in @stage1_unshard, which also
// zeroes the step's gradient sum; the backward adds the whole gradient to
// the sum (no reduce-scatter per microbatch) and @stage1_reduce_grad
// reduce-scatters the sum into the gradient once per step.
// DEFER-LABEL: func.func @stage1_unshard(%{{.*}}: tensor<4x8xf32>
// DEFER-SAME:  -> (tensor<8x8xf32> {dist.per_step = 0 : i64}, tensor<8x8xf32> {dist.unsharded_grad = "w"})
// DEFER:         dist.all_gather_start
// DEFER-NOT:     dist.all_gather_start
// DEFER:         %[[ZERO:.*]] = titan.fill 0.000000e+00 : tensor<8x8xf32>
// DEFER:         return %{{.*}}, %[[ZERO]]
// DEFER:       func.func @stage1_reduce_grad(
// DEFER-SAME: %[[SUM:[^:]*]]: tensor<8x8xf32> {dist.unsharded_grad = "w"}, %[[ACC:[^:]*]]: tensor<4x8xf32> {titan.grad = "w"}) -> (tensor<4x8xf32> {titan.grad = "w"})
// DEFER-NEXT:    %[[RS:.*]] = dist.reduce_scatter_start %[[SUM]] axes ["dp_shard"] dim 0
// DEFER-NEXT:    %[[G:.*]] = dist.wait %[[RS]]
// DEFER-NEXT:    %[[NEW:.*]] = titan.add %[[ACC]], %[[G]]
// DEFER-NEXT:    return %[[NEW]]
// DEFER:       func.func @stage1_forward(
// DEFER-NOT:     dist.all_gather_start
// DEFER:       func.func @stage1_backward(
// DEFER-SAME:  %[[BSUM:[^:]*]]: tensor<8x8xf32> {dist.unsharded_grad = "w"}
// DEFER-SAME:  -> ({{.*}}tensor<8x8xf32> {dist.unsharded_grad = "w"})
// DEFER-NOT:     dist.reduce_scatter_start
// DEFER-NOT:     dist.all_gather_start
// DEFER:         titan.linear_grad_weight
// DEFER:         titan.add %[[BSUM]]

// Without hoist-parameter-values (fsdp_reshard_after_forward = "always"),
// the deferred sums still get their per-step reset in @stage1_unshard,
// which computes nothing else; each microbatch's forward and backward
// gather the weight.
// RESHARD:      func.func @stage1_unshard() -> (tensor<8x8xf32> {dist.unsharded_grad = "w"})
// RESHARD-NEXT:   titan.fill 0.000000e+00 : tensor<8x8xf32>
// RESHARD-NEXT:   return
// RESHARD:      func.func @stage1_forward(
// RESHARD:        dist.all_gather_start
// RESHARD:      func.func @stage1_backward(
// RESHARD:        dist.all_gather_start
// RESHARD-NOT:    dist.reduce_scatter_start
// RESHARD:        return
module attributes {dist.mesh = #dist.mesh<pp = 2, dp_replicate = 1, dp_shard = 2, cp = 1, tp = 1>} {
  func.func @stage1(%w: tensor<4x8xf32> {titan.param = "w", dist.sharding = #dist.sharding<[["dp_shard"]]>},
                    %h: tensor<2x4x8xf32> {dist.stage_input = 0 : i64})
      -> (tensor<2x4x8xf32> {dist.stage_output = 0 : i64}) attributes {dist.partitioned, dist.stage = 1 : i64, dist.pipeline_phase = "forward"} {
    %f = dist.all_gather_start %w axes ["dp_shard"] dim 0 : tensor<4x8xf32> -> !dist.future<tensor<8x8xf32>>
    %wg = dist.wait %f : !dist.future<tensor<8x8xf32>>
    %z = titan.linear %h, %wg : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
    %o = titan.add %h, %z : tensor<2x4x8xf32>
    return %o : tensor<2x4x8xf32>
  }
}

// -----

// A recomputed block (full activation checkpointing) in bf16: the
// forward's low-precision copy of the gathered weight (in the recompute
// region) and the backward's copy of it compute the same thing, so they
// merge like the gathers (activation checkpointing's markers aside). The
// gather then has one user and dist-narrow-gathers gathers the bf16 copy:
// the step keeps one bf16 weight, not an f32 one and two bf16 copies.
// MERGE:       func.func @stage1_unshard({{.*}} -> (tensor<8x8xbf16> {dist.per_step = 0 : i64}, tensor<8x8xf32> {dist.unsharded_grad = "w"})
// MERGE-NEXT:    %[[C:.*]] = titan.cast %{{.*}} : tensor<4x8xf32> to tensor<4x8xbf16>
// MERGE-NEXT:    %[[G:.*]] = dist.all_gather_start %[[C]] axes ["dp_shard"] dim 0 {titan.recompute_region = 1 : i64} : tensor<4x8xbf16> -> !dist.future<tensor<8x8xbf16>>
// MERGE-NEXT:    %[[W:.*]] = dist.wait %[[G]]
// MERGE-NOT:     titan.cast
// MERGE:         return %[[W]]
module attributes {dist.mesh = #dist.mesh<pp = 2, dp_replicate = 1, dp_shard = 2, cp = 1, tp = 1>} {
  func.func @stage1(%w: tensor<4x8xf32> {titan.param = "w", dist.sharding = #dist.sharding<[["dp_shard"]]>},
                    %h: tensor<2x4x8xbf16> {dist.stage_input = 0 : i64})
      -> (tensor<2x4x8xbf16> {dist.stage_output = 0 : i64}) attributes {dist.partitioned, dist.stage = 1 : i64, dist.pipeline_phase = "forward"} {
    %f = dist.all_gather_start %w axes ["dp_shard"] dim 0 {titan.recompute_region = 1 : i64} : tensor<4x8xf32> -> !dist.future<tensor<8x8xf32>>
    %wg = dist.wait %f {titan.recompute_region = 1 : i64} : !dist.future<tensor<8x8xf32>>
    %wb = titan.cast %wg {titan.recompute_region = 1 : i64} : tensor<8x8xf32> to tensor<8x8xbf16>
    %z = titan.linear %h, %wb {titan.recompute_region = 1 : i64} : (tensor<2x4x8xbf16>, tensor<8x8xbf16>) -> tensor<2x4x8xbf16>
    %o = titan.add %h, %z {titan.recompute_region = 1 : i64} : tensor<2x4x8xbf16>
    return %o : tensor<2x4x8xbf16>
  }
}
