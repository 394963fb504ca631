// RUN: titan-opt %s -split-input-file -titan-bufferize -verify-diagnostics | FileCheck %s

// Arguments and results become one memref per state slot; a result is
// computed in its slot when nothing reads that slot afterwards; a view is
// free; a forward value read after the loss is an activation; the workspace
// of attention is its own buffer (4 tasks x one slot of two 3 x 3 tiles and
// 4 rows of 3, rounded to 32 floats: 512 bytes); the forward function is
// dropped.
// CHECK-NOT:  func.func @forward(
// CHECK-LABEL: func.func @forward_backward(
// CHECK-SAME: %[[W:.*]]: memref<8x4xf32> {kernel.slot = "param:w"},
// CHECK-SAME: %[[N:.*]]: memref<4xf32> {kernel.slot = "param:n"},
// CHECK-SAME: %[[X:.*]]: memref<2x3x4xf32> {kernel.slot = "input:tokens"},
// CHECK-SAME: %[[L:.*]]: memref<2x3xi32> {kernel.slot = "input:labels"},
// CHECK-SAME: %[[LOSS:.*]]: memref<f32> {kernel.slot = "output:loss"},
// CHECK-SAME: %[[GW:.*]]: memref<8x4xf32> {kernel.slot = "grad:w"},
// CHECK-SAME: %[[GN:.*]]: memref<4xf32> {kernel.slot = "grad:n"})
// CHECK-NOT:  -> (
// CHECK:      %[[S:.*]] = kernel.stream 0
// CHECK:      %[[H:.*]] = kernel.alloc activation : memref<2x3x4xf32>
// CHECK:      kernel.call "rms_norm"(%[[X]], %[[N]] : memref<2x3x4xf32>, memref<4xf32>) outs(%[[H]] : memref<2x3x4xf32>) on %[[S]] params [1.000000e-05]
// CHECK:      %[[Y:.*]] = kernel.alloc activation : memref<2x3x8xf32>
// CHECK:      kernel.call "linear"(%[[H]], %[[W]] : {{.*}}) outs(%[[Y]] : memref<2x3x8xf32>) on %[[S]] params []
// CHECK:      %[[YV:.*]] = kernel.view %[[Y]] : memref<2x3x8xf32> to memref<2x3x2x4xf32>
// CHECK:      %[[O:.*]] = kernel.alloc temporary : memref<2x3x2x4xf32>
// CHECK:      %[[LSE:.*]] = kernel.alloc temporary : memref<2x2x3xf32>
// CHECK:      %[[WS:.*]] = kernel.alloc workspace : memref<512xi8>
// CHECK:      kernel.call "attention"(%[[YV]], %[[YV]], %[[YV]] : {{.*}}) outs(%[[O]], %[[LSE]] : memref<2x3x2x4xf32>, memref<2x2x3xf32>) workspace(%[[WS]] : memref<512xi8>) on %[[S]] params [5.000000e-01]
// CHECK:      %[[CELSE:.*]] = kernel.alloc temporary : memref<2x3xf32>
// CHECK:      kernel.call "cross_entropy"(%[[Y]], %[[L]] : memref<2x3x8xf32>, memref<2x3xi32>) outs(%[[LOSS]], %[[CELSE]] : memref<f32>, memref<2x3xf32>)
// CHECK:      kernel.call "linear_grad_weight"(%[[Y]], %[[H]] : {{.*}}) outs(%[[GW]] : memref<8x4xf32>)
// CHECK:      kernel.call "fill"() outs(%[[GN]] : memref<4xf32>) on %[[S]] params [0.000000e+00]
// CHECK-NOT:  kernel.copy
// CHECK:      return
func.func @forward(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
func.func @forward_backward(%w: tensor<8x4xf32> {titan.param = "w"}, %n: tensor<4xf32> {titan.param = "n"},
                            %x: tensor<2x3x4xf32> {titan.input = "tokens"}, %l: tensor<2x3xi32> {titan.input = "labels"})
    -> (tensor<f32> {titan.output = "loss"}, tensor<8x4xf32> {titan.grad = "w"}, tensor<4xf32> {titan.grad = "n"}) {
  %h = titan.rms_norm %x, %n {eps = 1.0e-5 : f64} : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
  %y = titan.linear %h, %w : (tensor<2x3x4xf32>, tensor<8x4xf32>) -> tensor<2x3x8xf32>
  %v = titan.reshape %y : tensor<2x3x8xf32> -> tensor<2x3x2x4xf32>
  %o:2 = titan.attention %v, %v, %v {scale = 0.5 : f64} : (tensor<2x3x2x4xf32>, tensor<2x3x2x4xf32>, tensor<2x3x2x4xf32>) -> (tensor<2x3x2x4xf32>, tensor<2x2x3xf32>)
  %loss, %loss_lse = titan.cross_entropy %y, %l : (tensor<2x3x8xf32>, tensor<2x3xi32>) -> (tensor<f32>, tensor<2x3xf32>)
  %gw = titan.linear_grad_weight %y, %h : (tensor<2x3x8xf32>, tensor<2x3x4xf32>) -> tensor<8x4xf32>
  %gn = titan.fill 0.0 : tensor<4xf32>
  return %loss, %gw, %gn : tensor<f32>, tensor<8x4xf32>, tensor<4xf32>
}
func.func @optimizer_step(%p: tensor<4xf32> {titan.param = "n"}) -> (tensor<4xf32> {titan.param = "n"}) {
  return %p : tensor<4xf32>
}

// -----

// The global norm's partial sums (one span: 8 bytes) are a workspace.
// AdamW updates the parameter and its moments in place: its results are
// the operands' slots, so nothing is copied. A result that is also the
// input of a later op keeps its own buffer and is copied into its slot.
// CHECK-LABEL: func.func @optimizer_step(%arg0: memref<4xf32> {kernel.slot = "param:p"}, %arg1: memref<4xf32> {kernel.slot = "grad:p"},
// CHECK-SAME: %arg2: memref<4xf32> {kernel.slot = "exp_avg:p"}, %arg3: memref<4xf32> {kernel.slot = "exp_avg_sq:p"},
// CHECK-SAME: %arg4: memref<i64> {kernel.slot = "input:step"}, %arg5: memref<i64> {kernel.slot = "input:total_steps"},
// CHECK-SAME: %arg6: memref<f32> {kernel.slot = "output:grad_norm"}, %arg7: memref<f32> {kernel.slot = "output:lr"})
// CHECK:      %[[NWS:.*]] = kernel.alloc workspace : memref<8xi8>
// CHECK:      kernel.call "global_norm"(%arg1 : memref<4xf32>) outs(%arg6 : memref<f32>) workspace(%[[NWS]] : memref<8xi8>) on %{{.*}} params [1]
// CHECK:      kernel.call "lr_schedule"(%arg4, %arg5 : memref<i64>, memref<i64>) outs(%arg7 : memref<f32>) on %{{.*}} params [2, 2, 1.000000e-03, -1.000000e+00, 0.000000e+00]
// CHECK:      %[[C:.*]] = kernel.alloc temporary : memref<f32>
// CHECK:      %[[D:.*]] = kernel.alloc temporary : memref<f32>
// CHECK:      %[[SS:.*]] = kernel.alloc temporary : memref<f32>
// CHECK:      %[[BC:.*]] = kernel.alloc temporary : memref<f32>
// CHECK:      kernel.call "adamw_scalars"(%arg7, %arg6, %arg4 : memref<f32>, memref<f32>, memref<i64>) outs(%[[C]], %[[D]], %[[SS]], %[[BC]] : memref<f32>, memref<f32>, memref<f32>, memref<f32>) on %{{.*}} params [9.000000e-01, 0.94999999999999996, 1.000000e-01, 1.000000e+00]
// CHECK:      kernel.call "adamw"(%arg0, %arg1, %arg2, %arg3, %[[C]], %[[D]], %[[SS]], %[[BC]] : {{.*}}) outs(%arg0, %arg2, %arg3 : memref<4xf32>, memref<4xf32>, memref<4xf32>) on %{{.*}} params [9.000000e-01, 0.94999999999999996, 1.000000e-08]
// CHECK-NOT:  kernel.copy
// CHECK:      return
func.func @forward_backward(%p: tensor<4xf32> {titan.param = "p"}) -> (tensor<4xf32> {titan.grad = "p"}) {
  return %p : tensor<4xf32>
}
func.func @optimizer_step(%p: tensor<4xf32> {titan.param = "p"}, %g: tensor<4xf32> {titan.grad = "p"},
                          %m: tensor<4xf32> {titan.exp_avg = "p"}, %v: tensor<4xf32> {titan.exp_avg_sq = "p"},
                          %step: tensor<i64> {titan.input = "step"}, %total: tensor<i64> {titan.input = "total_steps"})
    -> (tensor<4xf32> {titan.param = "p"}, tensor<4xf32> {titan.exp_avg = "p"}, tensor<4xf32> {titan.exp_avg_sq = "p"},
        tensor<f32> {titan.output = "grad_norm"}, tensor<f32> {titan.output = "lr"}) {
  %norm = titan.global_norm %g : (tensor<4xf32>) -> tensor<f32>
  %lr = titan.lr_schedule %step, %total decay cosine {lr = 1.0e-3 : f64, warmup_steps = 2 : i64, min_lr_factor = 0.0 : f64} : (tensor<i64>, tensor<i64>) -> tensor<f32>
  %c:4 = titan.adamw_scalars %lr, %norm, %step {beta1 = 0.9 : f64, beta2 = 0.95 : f64, weight_decay = 0.1 : f64, max_norm = 1.0 : f64} : tensor<f32>, tensor<i64> -> tensor<f32>
  %n:3 = titan.adamw %p, %g, %m, %v scalars(%c#0, %c#1, %c#2, %c#3) {beta1 = 0.9 : f64, beta2 = 0.95 : f64, eps = 1.0e-8 : f64} : tensor<4xf32>, tensor<f32>
  return %n#0, %n#1, %n#2, %norm, %lr : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>
}

// -----

// Gradient accumulation: the accumulator slot is read once, by the add,
// which then writes the sum in place. A slot still read later cannot take
// a result early: the result gets a buffer and is copied in at the end,
// after the copies that read the slot's old value.
// CHECK-LABEL: func.func @forward_backward(%arg0: memref<4xf32> {kernel.slot = "param:p"}, %arg1: memref<4xf32> {kernel.slot = "grad:p"}, %arg2: memref<4xf32> {kernel.slot = "param:q"}, %arg3: memref<4xf32> {kernel.slot = "grad:q"})
// CHECK:      %[[G:.*]] = kernel.alloc temporary : memref<4xf32>
// CHECK:      kernel.call "silu"(%arg0 : memref<4xf32>) outs(%[[G]] : memref<4xf32>)
// CHECK:      kernel.call "add"(%arg1, %[[G]] : memref<4xf32>, memref<4xf32>) outs(%arg1 : memref<4xf32>)
// CHECK:      %[[E:.*]] = kernel.alloc temporary : memref<4xf32>
// CHECK:      kernel.call "mul"(%arg2, %arg2 : memref<4xf32>, memref<4xf32>) outs(%[[E]] : memref<4xf32>)
// CHECK:      kernel.copy %arg2, %arg3 on %{{.*}} : memref<4xf32>, memref<4xf32>
// CHECK-NEXT: kernel.copy %[[E]], %arg2 on %{{.*}} : memref<4xf32>, memref<4xf32>
// CHECK-NEXT: return
func.func @forward_backward(%p: tensor<4xf32> {titan.param = "p"}, %acc: tensor<4xf32> {titan.grad = "p"},
                            %q: tensor<4xf32> {titan.param = "q"})
    -> (tensor<4xf32> {titan.grad = "p"}, tensor<4xf32> {titan.param = "q"}, tensor<4xf32> {titan.grad = "q"}) {
  %g = titan.silu %p : tensor<4xf32>
  %sum = titan.add %acc, %g : tensor<4xf32>
  %e = titan.mul %q, %q : tensor<4xf32>
  return %sum, %e, %q : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
func.func @optimizer_step() {
  return
}

// -----

// A collective writes its own buffer, alive from start to wait; a gathered
// value returned into a slot is gathered into the slot.
// CHECK-LABEL: func.func @forward_backward(%arg0: memref<2x4xf32> {kernel.slot = "param:p"}, %arg1: memref<4x4xf32> {kernel.slot = "output:loss"}, %arg2: memref<4x4xf32> {kernel.slot = "grad:p"})
// CHECK:      %[[B:.*]] = kernel.alloc collective : memref<4x4xf32>
// CHECK:      %[[R:.*]] = kernel.collective_start "all_gather_start"(%arg0 : memref<2x4xf32>) outs(%[[B]] : memref<4x4xf32>) on %{{.*}} params [0, 0, 4] -> !kernel.request
// CHECK:      kernel.wait %[[R]] on
// CHECK:      kernel.call "silu"(%[[B]] : memref<4x4xf32>) outs(%arg1 : memref<4x4xf32>)
// CHECK:      %[[R2:.*]] = kernel.collective_start "all_gather_start"(%arg0 : memref<2x4xf32>) outs(%arg2 : memref<4x4xf32>) on %{{.*}} params [0, 0, 4] -> !kernel.request
// CHECK:      kernel.wait %[[R2]] on
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 2, cp = 1, tp = 1>} {
  func.func @forward_backward(%p: tensor<2x4xf32> {titan.param = "p"})
      -> (tensor<4x4xf32> {titan.output = "loss"}, tensor<4x4xf32> {titan.grad = "p"}) {
    %f = dist.all_gather_start %p axes ["dp_shard"] dim 0 : tensor<2x4xf32> -> !dist.future<tensor<4x4xf32>>
    %w = dist.wait %f : !dist.future<tensor<4x4xf32>>
    %y = titan.silu %w : tensor<4x4xf32>
    %f2 = dist.all_gather_start %p axes ["dp_shard"] dim 0 : tensor<2x4xf32> -> !dist.future<tensor<4x4xf32>>
    %w2 = dist.wait %f2 : !dist.future<tensor<4x4xf32>>
    return %y, %w2 : tensor<4x4xf32>, tensor<4x4xf32>
  }
  func.func @optimizer_step() {
    return
  }
}

// -----

// A gather along an inner dimension stages the group's rank-major copy: the
// communicator's scratch is a planned workspace (2 ranks x 2x2x4 f32 = 128
// bytes), alive until the wait.
// CHECK-LABEL: func.func @forward_backward(%arg0: memref<2x2x4xf32> {kernel.slot = "param:p"}
// CHECK:      %[[OUT:.*]] = kernel.alloc collective : memref<2x4x4xf32>
// CHECK:      %[[WS:.*]] = kernel.alloc workspace : memref<128xi8>
// CHECK:      kernel.collective_start "all_gather_start"(%arg0 : memref<2x2x4xf32>) outs(%[[OUT]] : memref<2x4x4xf32>) workspace(%[[WS]] : memref<128xi8>)
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 2>} {
  func.func @forward_backward(%p: tensor<2x2x4xf32> {titan.param = "p"}) -> (tensor<2x4x4xf32> {titan.output = "loss"}) {
    %f = dist.all_gather_start %p axes ["tp"] dim 1 : tensor<2x2x4xf32> -> !dist.future<tensor<2x4x4xf32>>
    %w = dist.wait %f : !dist.future<tensor<2x4x4xf32>>
    %y = titan.silu %w : tensor<2x4x4xf32>
    return %y : tensor<2x4x4xf32>
  }
  func.func @optimizer_step() {
    return
  }
}

// -----

// expected-error @+1 {{'func.func' op argument #0 has no state slot (a titan.param, titan.grad, titan.exp_avg, titan.exp_avg_sq or titan.input attribute)}}
func.func @forward_backward(%x: tensor<4xf32>) -> (tensor<4xf32> {titan.output = "loss"}) {
  return %x : tensor<4xf32>
}
func.func @optimizer_step() {
  return
}

// -----

// expected-error @+1 {{'func.func' op result #0 has no state slot (a titan.param, titan.grad, titan.exp_avg, titan.exp_avg_sq or titan.output attribute)}}
func.func @forward_backward(%x: tensor<4xf32> {titan.param = "x"}) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
func.func @optimizer_step() {
  return
}

// -----

// expected-error @+1 {{'func.func' op results share the state slot 'grad:x'}}
func.func @forward_backward(%x: tensor<4xf32> {titan.param = "x"}) -> (tensor<4xf32> {titan.grad = "x"}, tensor<4xf32> {titan.grad = "x"}) {
  return %x, %x : tensor<4xf32>, tensor<4xf32>
}
func.func @optimizer_step() {
  return
}

// -----

// expected-error @+1 {{'func.func' op result #0 of type 'tensor<8xf32>' does not fit its state slot 'param:x' of type 'memref<4xf32>'}}
func.func @forward_backward(%x: tensor<4xf32> {titan.param = "x"}) -> (tensor<8xf32> {titan.param = "x"}) {
  %y = titan.fill 0.0 : tensor<8xf32>
  return %y : tensor<8xf32>
}
func.func @optimizer_step() {
  return
}

// -----

func.func @forward_backward(%x: tensor<4xf32> {titan.param = "x"}) -> (tensor<4xf32> {titan.grad = "x"}) {
  // expected-error @+1 {{'func.call' op has no kernel contract (KernelOpInterface) and cannot be bufferized}}
  %y = func.call @forward_backward(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}
func.func @optimizer_step() {
  return
}

// -----

// expected-error @+1 {{titan-bufferize: no function named 'optimizer_step'}}
module {
  func.func @forward_backward() {
    return
  }
}

// -----

// A slice that is one contiguous run of its input (the second of two
// sequences) is a view at its byte offset, with no copy; any other box is
// the slice kernel's copy. Concat copies its inputs; the slice's gradient
// places the box in zeros.
// CHECK-LABEL: func.func @forward_backward(
// CHECK:      %[[V:.*]] = kernel.view %arg0 offset 128 : memref<2x8x4xf32> to memref<1x8x4xf32>
// CHECK:      kernel.call "slice"(%arg0 : memref<2x8x4xf32>) outs(%[[B:.*]] : memref<2x4x4xf32>) on %{{.*}} params [3, 0, 2, 0]
// CHECK:      kernel.call "concat"(%[[B]], %[[B]] : memref<2x4x4xf32>, memref<2x4x4xf32>) outs(%{{.*}} : memref<2x8x4xf32>) on %{{.*}} params [2, 1]
// CHECK:      kernel.view %[[V]] : memref<1x8x4xf32> to memref<8x4xf32>
// CHECK:      kernel.call "slice_grad"(%{{.*}} : memref<2x4x4xf32>) outs(%arg3 : memref<2x8x4xf32>) on %{{.*}} params [3, 0, 2, 0]
func.func @forward_backward(%w: tensor<2x8x4xf32> {titan.param = "w"}, %labels: tensor<2x8xi32> {titan.input = "labels"})
    -> (tensor<f32> {titan.output = "loss"}, tensor<2x8x4xf32> {titan.grad = "w"}) {
  %h = titan.slice %w [1, 0, 0] : tensor<2x8x4xf32> -> tensor<1x8x4xf32>
  %b = titan.slice %w [0, 2, 0] : tensor<2x8x4xf32> -> tensor<2x4x4xf32>
  %c = titan.concat %b, %b dim 1 : tensor<2x4x4xf32>, tensor<2x4x4xf32> -> tensor<2x8x4xf32>
  %loss, %loss_lse = titan.cross_entropy %c, %labels : (tensor<2x8x4xf32>, tensor<2x8xi32>) -> (tensor<f32>, tensor<2x8xf32>)
  %hl = titan.reshape %h : tensor<1x8x4xf32> -> tensor<8x4xf32>
  %r = titan.sqrt %hl : tensor<8x4xf32>
  %g = titan.slice_grad %b [0, 2, 0] : tensor<2x4x4xf32> -> tensor<2x8x4xf32>
  return %loss, %g : tensor<f32>, tensor<2x8x4xf32>
}
func.func @optimizer_step(%p: tensor<2x8x4xf32> {titan.param = "w"}) -> (tensor<2x8x4xf32> {titan.param = "w"}) {
  return %p : tensor<2x8x4xf32>
}
