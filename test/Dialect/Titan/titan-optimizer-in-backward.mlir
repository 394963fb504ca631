// RUN: titan-opt %s -split-input-file -titan-autodiff -titan-optimizer="max-norm=0.5" -titan-optimizer-in-backward -verify-diagnostics | FileCheck %s

// Gradient accumulation leaves no gradient final after one backward.
// RUN: not titan-opt %s -split-input-file -titan-autodiff=accumulation-steps=2 -titan-optimizer -titan-optimizer-in-backward 2>&1 | FileCheck %s --check-prefix=ACCUM
// ACCUM: error: 'func.func' op titan-optimizer-in-backward: gradient argument #7 accumulates over microbatches; an update in the backward needs each gradient final after one backward

// The pass moves titan-optimizer's updates: it runs after it.
// RUN: not titan-opt %s -split-input-file -titan-autodiff -titan-optimizer-in-backward 2>&1 | FileCheck %s --check-prefix=NO-STEP
// NO-STEP: error: titan-optimizer-in-backward: no function named 'optimizer_step'

// Two transformer blocks between the embedding and the output. The
// backward finalizes the gradients of output, layers.1, layers.0 (wq, then
// the norm), tok_embeddings: each unit's updates run before the next
// unit's first final gradient (the last unit's before the return), after
// the squared norm of their gradients, and once nothing reads the old
// parameter (output's after the input gradient that reads it). The scalars see a zero norm
// and max_norm 1 (clip_coef = 1); the reported norm is the square root of
// the units' sums.
// CHECK-LABEL: func.func @forward_backward(
// CHECK-SAME: %[[E:[^:]*]]: tensor<16x8xf32> {titan.param = "tok_embeddings.weight"}, %[[N0:[^:]*]]: tensor<8xf32> {titan.param = "layers.0.attention_norm.weight"}, %[[W0:[^:]*]]: tensor<8x8xf32> {titan.param = "layers.0.attention.wq.weight"}, %[[W1:[^:]*]]: tensor<8x8xf32> {titan.param = "layers.1.attention.wq.weight"}, %[[O:[^:]*]]: tensor<16x8xf32> {titan.param = "output.weight"},
// CHECK-SAME: {titan.input = "tokens"}, %{{[^:]*}}: tensor<2x4xi32> {titan.input = "labels"},
// CHECK-SAME: %[[ME:[^:]*]]: tensor<16x8xf32> {titan.exp_avg = "tok_embeddings.weight"}, %[[MN0:[^:]*]]: tensor<8xf32> {titan.exp_avg = "layers.0.attention_norm.weight"}, %[[MW0:[^:]*]]: tensor<8x8xf32> {titan.exp_avg = "layers.0.attention.wq.weight"}, %[[MW1:[^:]*]]: tensor<8x8xf32> {titan.exp_avg = "layers.1.attention.wq.weight"}, %[[MO:[^:]*]]: tensor<16x8xf32> {titan.exp_avg = "output.weight"},
// CHECK-SAME: {titan.exp_avg_sq = "output.weight"}, %[[STEP:[^:]*]]: tensor<i64> {titan.input = "step"}, %[[TOTAL:[^:]*]]: tensor<i64> {titan.input = "total_steps"})
// CHECK-SAME: -> (tensor<f32> {titan.output = "loss"}, tensor<16x8xf32> {titan.param = "tok_embeddings.weight"},
// CHECK-SAME: tensor<f32> {titan.output = "grad_norm"}, tensor<f32> {titan.output = "lr"})
// CHECK-NOT:  titan.grad
// CHECK:      %[[LR:.*]] = titan.lr_schedule %[[STEP]], %[[TOTAL]]
// CHECK:      %[[ZERO:.*]] = titan.fill 0.000000e+00 : tensor<f32>
// CHECK:      %[[C:[^,]*]], %[[D:[^,]*]], %[[SS:[^,]*]], %[[BC:[^ ]*]] = titan.adamw_scalars %[[LR]], %[[ZERO]], %[[STEP]] {{{.*}}max_norm = 1.000000e+00 : f64
// CHECK:      titan.cross_entropy_grad
// CHECK:      %[[DO:.*]] = titan.linear_grad_weight
// CHECK:      %[[NO:.*]] = titan.global_norm %[[DO]] :
// CHECK-NEXT: %[[SQO:.*]] = titan.mul %[[NO]], %[[NO]]
// CHECK-NEXT: titan.adamw %[[O]], %[[DO]], %[[MO]], %{{[^ ]*}} scalars(%[[C]], %[[D]], %[[SS]], %[[BC]])
// CHECK-NEXT: %[[DW1:.*]] = titan.linear_grad_weight
// CHECK-NEXT: titan.linear_grad_input
// CHECK-NEXT: %[[N1:.*]] = titan.global_norm %[[DW1]] :
// CHECK-NEXT: %[[SQ1:.*]] = titan.mul %[[N1]], %[[N1]]
// CHECK-NEXT: %[[SUM1:.*]] = titan.add %[[SQO]], %[[SQ1]]
// CHECK-NEXT: titan.adamw %[[W1]], %[[DW1]], %[[MW1]]
// CHECK-NEXT: %[[DW0:.*]] = titan.linear_grad_weight
// CHECK-NEXT: %{{.*}}, %[[DN0:.*]] = titan.rms_norm_grad
// CHECK-NEXT: titan.add
// CHECK-NEXT: titan.global_norm %[[DN0]], %[[DW0]] :
// CHECK-NEXT: titan.mul
// CHECK-NEXT: titan.add %[[SUM1]],
// CHECK-NEXT: titan.adamw %[[N0]], %[[DN0]], %[[MN0]]
// CHECK-NEXT: titan.adamw %[[W0]], %[[DW0]], %[[MW0]]
// CHECK-NEXT: %[[DE:.*]] = titan.embedding_grad
// CHECK-NEXT: titan.global_norm %[[DE]] :
// CHECK-NEXT: titan.mul
// CHECK-NEXT: %[[SUM:.*]] = titan.add
// CHECK-NEXT: titan.adamw %[[E]], %[[DE]], %[[ME]]
// CHECK-NEXT: %[[NORM:.*]] = titan.sqrt %[[SUM]]
// CHECK:      return {{.*}}, %[[NORM]], %[[LR]]
// optimizer_step is left empty, as TorchTitan's container's step().
// CHECK-LABEL: func.func @optimizer_step() {
// CHECK-NEXT:   return
func.func @forward(%e: tensor<16x8xf32> {titan.param = "tok_embeddings.weight"},
                   %n0: tensor<8xf32> {titan.param = "layers.0.attention_norm.weight"},
                   %w0: tensor<8x8xf32> {titan.param = "layers.0.attention.wq.weight"},
                   %w1: tensor<8x8xf32> {titan.param = "layers.1.attention.wq.weight"},
                   %o: tensor<16x8xf32> {titan.param = "output.weight"},
                   %t: tensor<2x4xi32> {titan.input = "tokens"}, %l: tensor<2x4xi32> {titan.input = "labels"}) -> tensor<f32> {
  %x = titan.embedding %e[%t] : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
  %y0 = titan.rms_norm %x, %n0 {eps = 1.0e-5 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %z0 = titan.linear %y0, %w0 : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %h0 = titan.add %x, %z0 : tensor<2x4x8xf32>
  %z1 = titan.linear %h0, %w1 : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %h1 = titan.add %h0, %z1 : tensor<2x4x8xf32>
  %logits = titan.linear %h1, %o : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  %loss, %lse = titan.cross_entropy %logits, %l : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> (tensor<f32>, tensor<2x4xf32>)
  return %loss : tensor<f32>
}
