// RUN: titan-opt %s -split-input-file -titan-autodiff -verify-diagnostics | FileCheck %s

// A linear layer, a norm and the loss: the backward walks them in reverse,
// a value used twice (%x feeds the norm and the residual) sums its gradients,
// and every titan.param argument gets a gradient result.
// CHECK-LABEL: func.func @forward_backward(
// CHECK-SAME: %[[W:.*]]: tensor<8x8xf32> {titan.param = "w"}, %[[N:.*]]: tensor<8xf32> {titan.param = "n"}, %[[E:.*]]: tensor<16x8xf32> {titan.param = "e"}, %[[T:.*]]: tensor<2x4xi32> {titan.input = "tokens"}, %[[L:.*]]: tensor<2x4xi32> {titan.input = "labels"})
// CHECK-SAME: -> (tensor<f32> {titan.output = "loss"}, tensor<8x8xf32> {titan.grad = "w"}, tensor<8xf32> {titan.grad = "n"}, tensor<16x8xf32> {titan.grad = "e"})
// CHECK:      %[[X:.*]] = titan.embedding %[[E]][%[[T]]]
// CHECK:      %[[Y:.*]] = titan.rms_norm %[[X]], %[[N]]
// CHECK:      %[[Z:.*]] = titan.linear %[[Y]], %[[W]]
// CHECK:      %[[H:.*]] = titan.add %[[X]], %[[Z]]
// CHECK:      %[[LOGITS:.*]] = titan.linear %[[H]], %[[E]]
// CHECK:      %[[LOSS:.*]], %[[LSE:.*]] = titan.cross_entropy %[[LOGITS]], %[[L]]
// CHECK:      %[[ONE:.*]] = titan.fill 1.000000e+00 : tensor<f32>
// CHECK:      %[[DLOGITS:.*]] = titan.cross_entropy_grad %[[LOGITS]], %[[L]], %[[LSE]], %[[ONE]]
// CHECK:      %[[DH:.*]] = titan.linear_grad_input %[[DLOGITS]], %[[E]]
// CHECK:      %[[DE1:.*]] = titan.linear_grad_weight %[[DLOGITS]], %[[H]]
// CHECK:      %[[DY:.*]] = titan.linear_grad_input %[[DH]], %[[W]]
// CHECK:      %[[DW:.*]] = titan.linear_grad_weight %[[DH]], %[[Y]]
// CHECK:      %[[DX1:.*]], %[[DN:.*]] = titan.rms_norm_grad %[[X]], %[[N]], %[[DY]]
// CHECK:      %[[DX:.*]] = titan.add %[[DH]], %[[DX1]]
// CHECK:      %[[DE2:.*]] = titan.embedding_grad %[[DX]], %[[T]]
// CHECK:      %[[DE:.*]] = titan.add %[[DE1]], %[[DE2]]
// CHECK:      return %[[LOSS]], %[[DW]], %[[DN]], %[[DE]]
func.func @forward(%w: tensor<8x8xf32> {titan.param = "w"}, %n: tensor<8xf32> {titan.param = "n"},
                   %e: tensor<16x8xf32> {titan.param = "e"},
                   %t: tensor<2x4xi32> {titan.input = "tokens"}, %l: tensor<2x4xi32> {titan.input = "labels"}) -> tensor<f32> {
  %x = titan.embedding %e[%t] : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
  %y = titan.rms_norm %x, %n {eps = 1.0e-5 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %z = titan.linear %y, %w : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %h = titan.add %x, %z : tensor<2x4x8xf32>
  %logits = titan.linear %h, %e : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  %loss, %loss_lse = titan.cross_entropy %logits, %l : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> (tensor<f32>, tensor<2x4xf32>)
  return %loss : tensor<f32>
}

// -----

// Attention, RoPE (adjoint: the transposed rotation), reshape, SwiGLU, and
// the pieces silu/mul.
// CHECK-LABEL: func.func @forward_backward(
// CHECK:      %[[DQ:.*]], %[[DK:.*]], %[[DV:.*]] = titan.attention_grad
// CHECK-DAG:  titan.rope %[[DQ]], %{{.*}} transpose
// CHECK-DAG:  titan.rope %[[DK]], %{{.*}} transpose
// CHECK:      %[[DX4:.*]] = titan.add
// CHECK:      titan.reshape %{{.*}} : tensor<1x4x2x4xf32> -> tensor<1x4x8xf32>
func.func @forward(%q: tensor<8x8xf32> {titan.param = "q"}, %g: tensor<1x4x8xf32> {titan.param = "g"},
                   %t: tensor<1x4xi32> {titan.input = "tokens"}, %l: tensor<1x4xi32> {titan.input = "labels"}) -> tensor<f32> {
  %a = titan.rope_angles {theta = 1.0e4 : f64} : tensor<4x2x2xf32>
  %x = titan.linear %g, %q : (tensor<1x4x8xf32>, tensor<8x8xf32>) -> tensor<1x4x8xf32>
  %x4 = titan.reshape %x : tensor<1x4x8xf32> -> tensor<1x4x2x4xf32>
  %rq = titan.rope %x4, %a : (tensor<1x4x2x4xf32>, tensor<4x2x2xf32>) -> tensor<1x4x2x4xf32>
  %rk = titan.rope %x4, %a : (tensor<1x4x2x4xf32>, tensor<4x2x2xf32>) -> tensor<1x4x2x4xf32>
  %o:2 = titan.attention %rq, %rk, %x4 {scale = 0.5 : f64} : (tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32>) -> (tensor<1x4x2x4xf32>, tensor<1x2x4xf32>)
  %o3 = titan.reshape %o#0 : tensor<1x4x2x4xf32> -> tensor<1x4x8xf32>
  %s = titan.swiglu %o3, %g : tensor<1x4x8xf32>
  %si = titan.silu %s : tensor<1x4x8xf32>
  %m = titan.mul %si, %s : tensor<1x4x8xf32>
  %loss, %loss_lse = titan.cross_entropy %m, %l : (tensor<1x4x8xf32>, tensor<1x4xi32>) -> (tensor<f32>, tensor<1x4xf32>)
  return %loss : tensor<f32>
}

// -----

// A parameter the loss does not depend on gets a zero gradient.
// CHECK-LABEL: func.func @forward_backward(
// CHECK: %[[ZERO:.*]] = titan.fill 0.000000e+00 : tensor<4xf32>
// CHECK: return %{{.*}}, %{{.*}}, %[[ZERO]]
func.func @forward(%w: tensor<3x4xf32> {titan.param = "used"}, %u: tensor<4xf32> {titan.param = "unused"},
                   %x: tensor<2x4xf32>, %l: tensor<2xi32>) -> tensor<f32> {
  %y = titan.linear %x, %w : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  %loss, %loss_lse = titan.cross_entropy %y, %l : (tensor<2x3xf32>, tensor<2xi32>) -> (tensor<f32>, tensor<2xf32>)
  return %loss : tensor<f32>
}

// -----

// expected-error @+1 {{'func.func' op must return a single tensor<f32> loss (or pipeline stage outputs) to be differentiated}}
func.func @forward(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

func.func @forward(%x: tensor<4xf32> {titan.param = "x"}, %l: tensor<i32>) -> tensor<f32> {
  // expected-error @+1 {{'titan.global_norm' op has no adjoint rule in titan-autodiff}}
  %n = titan.global_norm %x : (tensor<4xf32>) -> tensor<f32>
  %y = titan.reshape %n : tensor<f32> -> tensor<1xf32>
  %loss, %loss_lse = titan.cross_entropy %y, %l : (tensor<1xf32>, tensor<i32>) -> (tensor<f32>, tensor<f32>)
  return %loss : tensor<f32>
}

// -----

// expected-error @+1 {{titan-autodiff: no function named 'forward'}}
module {
  func.func @main(%x: tensor<f32>) -> tensor<f32> {
    return %x : tensor<f32>
  }
}

// -----

func.func @forward(%x: tensor<f32>) -> tensor<f32> {
  return %x : tensor<f32>
}
// expected-error @-3 {{titan-autodiff: a symbol named 'forward_backward' already exists}}
func.func @forward_backward(%x: tensor<f32>) -> tensor<f32> {
  return %x : tensor<f32>
}

// -----

// Collective adjoints: send_recv shifts back, all_to_all swaps its split and
// concat dimensions.
// CHECK-LABEL: func.func @forward_backward(
// CHECK: %[[BACK:.*]] = dist.send_recv_start %{{.*}} axes ["tp"] shift -1 : tensor<4x8xf32>
// CHECK: %[[DY:.*]] = dist.wait %[[BACK]]
// CHECK: dist.all_to_all_start %[[DY]] axes ["tp"] split 1 concat 0 : tensor<4x8xf32> -> !dist.future<tensor<8x4xf32>>
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 2>} {
  func.func @forward(%w: tensor<8x4xf32> {titan.param = "w"}, %l: tensor<4xi32>) -> tensor<f32> {
    %f = dist.all_to_all_start %w axes ["tp"] split 0 concat 1 : tensor<8x4xf32> -> !dist.future<tensor<4x8xf32>>
    %y = dist.wait %f : !dist.future<tensor<4x8xf32>>
    %s = dist.send_recv_start %y axes ["tp"] shift 1 : tensor<4x8xf32> -> !dist.future<tensor<4x8xf32>>
    %z = dist.wait %s : !dist.future<tensor<4x8xf32>>
    %loss, %loss_lse = titan.cross_entropy %z, %l : (tensor<4x8xf32>, tensor<4xi32>) -> (tensor<f32>, tensor<4xf32>)
    return %loss : tensor<f32>
  }
}

// -----

// local_shard's adjoint gathers the gradient: over a contiguous split
// (the mesh lists no load_balanced axis, `load_balanced = []`) an
// all_gather puts the parts back in place.
// CHECK-LABEL: func.func @forward_backward(
// CHECK: dist.all_gather_start %{{.*}} axes ["cp"] dim 0 : tensor<2x8xf32> -> !dist.future<tensor<4x8xf32>>
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 2, tp = 1, load_balanced = []>} {
  func.func @forward(%w: tensor<4x8xf32> {titan.param = "w"}, %l: tensor<2xi32>) -> tensor<f32> {
    %y = dist.local_shard %w axes ["cp"] dim 0 : tensor<4x8xf32> -> tensor<2x8xf32>
    %loss, %loss_lse = titan.cross_entropy %y, %l : (tensor<2x8xf32>, tensor<2xi32>) -> (tensor<f32>, tensor<2xf32>)
    return %loss : tensor<f32>
  }
}

// -----

// Over a load-balanced split (cp's by default) the gather would need its
// chunks reordered.
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 2, tp = 1>} {
  func.func @forward(%w: tensor<4x8xf32> {titan.param = "w"}, %l: tensor<2xi32>) -> tensor<f32> {
    // expected-error @+1 {{'dist.local_shard' op has no adjoint over load-balanced axes ["cp"] (its gather would need the chunks reordered)}}
    %y = dist.local_shard %w axes ["cp"] dim 0 : tensor<4x8xf32> -> tensor<2x8xf32>
    %loss, %loss_lse = titan.cross_entropy %y, %l : (tensor<2x8xf32>, tensor<2xi32>) -> (tensor<f32>, tensor<2xf32>)
    return %loss : tensor<f32>
  }
}

// -----

// Every rank's copy of the loss is seeded with 1/ranks (here 1/4) and each
// collective's adjoint is its transpose: the all-reduce (sum) of a gradient
// that may differ between ranks is an all-reduce (sum); one of a gradient
// equal on every rank of the group (the constant seed; values computed from
// all-reduced ones) needs no communication.
// CHECK-LABEL: func.func @forward_backward(
// CHECK:      titan.fill 2.500000e-01 : tensor<f32>
// CHECK:      %[[DY:.*]] = titan.linear_grad_input
// CHECK:      %[[F:.*]] = dist.all_reduce_start %[[DY]] axes ["tp"] : tensor<4x8xf32>
// CHECK-NOT:  dist.all_reduce_start {{.*}} tensor<f32>
// CHECK:      return
// CHECK-LABEL: func.func @forward_backward(
// CHECK:      %[[SEED2:.*]] = titan.fill 2.500000e-01 : tensor<f32>
// CHECK:      %[[DS2:.*]], %{{.*}} = titan.cross_entropy_from_stats_grad %{{.*}}, %[[SEED2]]
// CHECK:      %[[TWO:.*]] = titan.fill 2.000000e+00 : tensor<4xf32>
// CHECK-NEXT: titan.mul %[[DS2]], %[[TWO]]
// CHECK-NOT:  dist.all_reduce_start
// CHECK:      return
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 2, cp = 1, tp = 2>} {
  func.func @forward(%w: tensor<4x8xf32> {titan.param = "w"}, %v: tensor<8x8xf32> {titan.param = "v"}, %l: tensor<4xi32>) -> tensor<f32> {
    %f = dist.all_reduce_start %w axes ["tp"] : tensor<4x8xf32> -> !dist.future<tensor<4x8xf32>>
    %y = dist.wait %f : !dist.future<tensor<4x8xf32>>
    %z = titan.linear %y, %v : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %loss, %loss_lse = titan.cross_entropy %z, %l : (tensor<4x8xf32>, tensor<4xi32>) -> (tensor<f32>, tensor<4xf32>)
    %lf = dist.all_reduce_start %loss axes ["dp_shard"] reduction avg : tensor<f32> -> !dist.future<tensor<f32>>
    %mean = dist.wait %lf : !dist.future<tensor<f32>>
    return %mean : tensor<f32>
  }
}

// -----

// The same loss with the all-reduced sum feeding the gradient (as loss
// parallel builds it): the sum's gradient is equal on every tp rank.
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 2, cp = 1, tp = 2>} {
  func.func @forward(%w: tensor<4x8xf32> {titan.param = "w"}, %l: tensor<4xi32>) -> tensor<f32> {
    %m = titan.row_max %w : tensor<4x8xf32> -> tensor<4xf32>
    %s = titan.sum_exp %w, %m : (tensor<4x8xf32>, tensor<4xf32>) -> tensor<4xf32>
    %sf = dist.all_reduce_start %s axes ["tp"] : tensor<4xf32> -> !dist.future<tensor<4xf32>>
    %sum = dist.wait %sf : !dist.future<tensor<4xf32>>
    %t = titan.target_logit %w, %l : (tensor<4x8xf32>, tensor<4xi32>) -> tensor<4xf32>
    %loss = titan.cross_entropy_from_stats %m, %sum, %t : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<f32>
    %lf = dist.all_reduce_start %loss axes ["dp_shard"] reduction avg : tensor<f32> -> !dist.future<tensor<f32>>
    %mean = dist.wait %lf : !dist.future<tensor<f32>>
    return %mean : tensor<f32>
  }
}

// -----

// The row max is a shift the loss must not depend on.
module {
  func.func @forward(%w: tensor<4x8xf32> {titan.param = "w"}) -> tensor<f32> {
    // expected-error @+1 {{'titan.row_max' op has no gradient: its result is a shift that the loss must not depend on}}
    %m = titan.row_max %w : tensor<4x8xf32> -> tensor<4xf32>
    %s = titan.sum_exp %w, %m : (tensor<4x8xf32>, tensor<4xf32>) -> tensor<4xf32>
    %loss = titan.cross_entropy_from_stats %m, %s, %m : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 2>} {
  func.func @forward(%w: tensor<4x8xf32> {titan.param = "w"}, %l: tensor<4xi32>) -> tensor<f32> {
    // expected-error @+1 {{'dist.all_reduce_start' op (max) has no gradient}}
    %f = dist.all_reduce_start %w axes ["tp"] reduction max : tensor<4x8xf32> -> !dist.future<tensor<4x8xf32>>
    %y = dist.wait %f : !dist.future<tensor<4x8xf32>>
    %loss, %loss_lse = titan.cross_entropy %y, %l : (tensor<4x8xf32>, tensor<4xi32>) -> (tensor<f32>, tensor<4xf32>)
    return %loss : tensor<f32>
  }
}

// -----

// A pipeline stage before the last returns an activation for the next
// stage: its gradient arrives as an argument (dist.stage_output_grad, the
// seed, not scaled again), the step returns the activation, the gradient
// of the activation the previous stage sent (dist.stage_input_grad) and
// the parameters' gradients.
// CHECK-LABEL: func.func @forward_backward(
// CHECK-SAME: %[[W:[^:]*]]: tensor<8x8xf32> {titan.param = "w"}, %[[H:[^:]*]]: tensor<2x8xf32> {dist.stage_input = 0 : i64}, %[[SEED:[^:]*]]: tensor<2x8xf32> {dist.stage_output_grad = 0 : i64})
// CHECK-SAME: -> (tensor<2x8xf32> {dist.stage_output = 0 : i64}, tensor<2x8xf32> {dist.stage_input_grad = 0 : i64}, tensor<8x8xf32> {titan.grad = "w"})
// CHECK-SAME: attributes {dist.pipeline_phase = "forward_backward", dist.stage = 1 : i64}
// CHECK:      %[[Z:.*]] = titan.linear %[[H]], %[[W]]
// CHECK:      %[[O:.*]] = titan.add %[[H]], %[[Z]]
// CHECK-NOT:  titan.fill
// CHECK:      %[[DH1:.*]] = titan.linear_grad_input %[[SEED]], %[[W]]
// CHECK:      %[[DH:.*]] = titan.add %[[SEED]], %[[DH1]]
// CHECK:      %[[DW:.*]] = titan.linear_grad_weight %[[SEED]], %[[H]]
// CHECK:      return %[[O]], %[[DH]], %[[DW]]
module attributes {dist.mesh = #dist.mesh<pp = 2, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 1>} {
  func.func @forward(%w: tensor<8x8xf32> {titan.param = "w"}, %h: tensor<2x8xf32> {dist.stage_input = 0 : i64})
      -> (tensor<2x8xf32> {dist.stage_output = 0 : i64}) attributes {dist.stage = 1 : i64, dist.pipeline_phase = "forward"} {
    %z = titan.linear %h, %w : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
    %o = titan.add %h, %z : tensor<2x8xf32>
    return %o : tensor<2x8xf32>
  }
}

// -----

// Slice and concat: a slice's gradient is the box placed in zeros
// (slice_grad); a concat's is each input's box of the gradient.
// CHECK-LABEL: func.func @forward_backward(
// CHECK:      %[[G:.*]] = titan.cross_entropy_grad
// CHECK-NEXT: %[[A:.*]] = titan.slice %[[G]] [0, 0, 0] : tensor<2x8x4xf32> -> tensor<2x4x4xf32>
// CHECK-NEXT: %[[B:.*]] = titan.slice %[[G]] [0, 4, 0] : tensor<2x8x4xf32> -> tensor<2x4x4xf32>
// CHECK-NEXT: %[[S:.*]] = titan.add %[[A]], %[[B]]
// CHECK-NEXT: titan.slice_grad %[[S]] [0, 2, 0] : tensor<2x4x4xf32> -> tensor<2x8x4xf32>
func.func @forward(%w: tensor<2x8x4xf32> {titan.param = "w"}, %labels: tensor<2x8xi32> {titan.input = "labels"}) -> tensor<f32> {
  %b = titan.slice %w [0, 2, 0] : tensor<2x8x4xf32> -> tensor<2x4x4xf32>
  %c = titan.concat %b, %b dim 1 : tensor<2x4x4xf32>, tensor<2x4x4xf32> -> tensor<2x8x4xf32>
  %loss, %loss_lse = titan.cross_entropy %c, %labels : (tensor<2x8x4xf32>, tensor<2x8xi32>) -> (tensor<f32>, tensor<2x8xf32>)
  return %loss : tensor<f32>
}
