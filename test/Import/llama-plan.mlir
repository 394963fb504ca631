// RUN: titan-opt %s -split-input-file -titan-llama-plan -verify-diagnostics | FileCheck %s

// TorchTitan's parallelize_llama plan, attached by parameter name (the
// importer attaches the same): the tensor-parallel style of each parameter
// and its transformer block (none for the root's), sequence parallel on the
// embedding and the row-wise linears, loss parallel on the cross-entropy,
// context parallel on the inputs' sequence. A parameter outside the plan
// gets no style.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: {dist.param_plan = #dist.param_plan<tp = embedding>, titan.param = "tok_embeddings.weight"}
// CHECK-SAME: {dist.param_plan = #dist.param_plan<tp = colwise, block = 0>, titan.param = "layers.0.attention.wq.weight"}
// CHECK-SAME: {dist.param_plan = #dist.param_plan<tp = rowwise, block = 0>, titan.param = "layers.0.attention.wo.weight"}
// CHECK-SAME: {dist.param_plan = #dist.param_plan<tp = colwise, block = 1>, titan.param = "layers.1.feed_forward.w1.weight"}
// CHECK-SAME: {dist.param_plan = #dist.param_plan<tp = rowwise, block = 1>, titan.param = "layers.1.feed_forward.w2.weight"}
// CHECK-SAME: {dist.param_plan = #dist.param_plan<tp = replicate, block = 1>, titan.param = "layers.1.ffn_norm.weight"}
// CHECK-SAME: {dist.param_plan = #dist.param_plan<block = 1>, titan.param = "layers.1.moe.router.weight"}
// CHECK-SAME: {dist.param_plan = #dist.param_plan<tp = replicate>, titan.param = "norm.weight"}
// CHECK-SAME: {dist.param_plan = #dist.param_plan<tp = colwise>, titan.param = "output.weight"}
// CHECK-SAME: {dist.context_parallel = 1 : i64, titan.input = "tokens"}
// CHECK-SAME: {dist.context_parallel = 1 : i64, titan.input = "labels"}
// CHECK:      titan.embedding %{{.*}}[%{{.*}}] {dist.sequence_parallel = 1 : i64}
// CHECK-NEXT: titan.linear %{{.*}}, %{{.*}} : (
// CHECK-NEXT: titan.linear %{{.*}}, %{{.*}} {dist.sequence_parallel = 1 : i64}
// CHECK-NEXT: titan.rms_norm %{{.*}}, %{{.*}} {eps
// CHECK-NEXT: titan.linear %{{.*}}, %{{.*}} : (
// CHECK-NEXT: titan.linear %{{.*}}, %{{.*}} {dist.sequence_parallel = 1 : i64}
// CHECK-NEXT: titan.linear %{{.*}}, %{{.*}} : (
// CHECK-NEXT: titan.rms_norm %{{.*}}, %{{.*}} {eps
// CHECK-NEXT: titan.linear %{{.*}}, %{{.*}} : (
// CHECK-NEXT: titan.cross_entropy %{{.*}}, %{{.*}} {dist.loss_parallel}
func.func @forward(%emb: tensor<16x8xf32> {titan.param = "tok_embeddings.weight"},
                   %wq: tensor<8x8xf32> {titan.param = "layers.0.attention.wq.weight"},
                   %wo: tensor<8x8xf32> {titan.param = "layers.0.attention.wo.weight"},
                   %w1: tensor<8x8xf32> {titan.param = "layers.1.feed_forward.w1.weight"},
                   %w2: tensor<8x8xf32> {titan.param = "layers.1.feed_forward.w2.weight"},
                   %fn: tensor<8xf32> {titan.param = "layers.1.ffn_norm.weight"},
                   %router: tensor<8x8xf32> {titan.param = "layers.1.moe.router.weight"},
                   %n: tensor<8xf32> {titan.param = "norm.weight"},
                   %out: tensor<16x8xf32> {titan.param = "output.weight"},
                   %t: tensor<2x4xi32> {titan.input = "tokens"},
                   %l: tensor<2x4xi32> {titan.input = "labels"}) -> tensor<f32> {
  %h = titan.embedding %emb[%t] : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
  %q = titan.linear %h, %wq : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %o = titan.linear %q, %wo : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %x = titan.rms_norm %o, %fn {eps = 1.0e-5 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %g = titan.linear %x, %w1 : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %f = titan.linear %g, %w2 : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %r = titan.linear %f, %router : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %y = titan.rms_norm %r, %n {eps = 1.0e-5 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %logits = titan.linear %y, %out : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  %loss, %lse = titan.cross_entropy %logits, %l : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> (tensor<f32>, tensor<2x4xf32>)
  return %loss : tensor<f32>
}

// -----

// Tied embeddings: the output projection reads the embedding's table, but
// only the embedding ends a sequence-parallel module.
// CHECK-LABEL: func.func @forward(
// CHECK:      titan.embedding %{{.*}}[%{{.*}}] {dist.sequence_parallel = 1 : i64}
// CHECK-NEXT: titan.linear %{{.*}}, %{{.*}} : (
func.func @forward(%emb: tensor<16x8xf32> {titan.param = "tok_embeddings.weight"},
                   %t: tensor<2x4xi32> {titan.input = "tokens"}) -> tensor<2x4x16xf32> {
  %h = titan.embedding %emb[%t] : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
  %logits = titan.linear %h, %emb : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  return %logits : tensor<2x4x16xf32>
}

// -----

// expected-error @+1 {{titan-llama-plan: no function named 'forward'}}
module {
}
