// RUN: titan-opt %s -split-input-file -dist-parallelize="tp=2 cp=2" -verify-diagnostics | FileCheck %s

// The pass reads the plan's attributes, not names: any model's parameters
// and ops, planned by hand. Styles split dimension 0 (embedding, colwise)
// or 1 (rowwise) over tp, FSDP's cp storage split follows on dimension 0;
// the marked results are split along the sequence over cp then tp, the
// marked inputs over cp, the marked cross-entropy runs on
// vocabulary-sharded logits. The markers are consumed; dist.param_plan
// stays for dist-partition.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: {dist.param_plan = #dist.param_plan<tp = embedding>, dist.sharding = #dist.sharding<{{\[}}["tp", "cp"]]>, titan.param = "vocab"}
// CHECK-SAME: {dist.param_plan = #dist.param_plan<tp = colwise, block = 0>, dist.sharding = #dist.sharding<{{\[}}["tp", "cp"]]>, titan.param = "proj"}
// CHECK-SAME: {dist.param_plan = #dist.param_plan<tp = rowwise, block = 0>, dist.sharding = #dist.sharding<{{\[}}["cp"], ["tp"]]>, titan.param = "back"}
// CHECK-SAME: {dist.param_plan = #dist.param_plan<tp = replicate>, dist.sharding = #dist.sharding<{{\[}}["cp"]]>, titan.param = "scale"}
// CHECK-SAME: {dist.sharding = #dist.sharding<{{\[}}[], ["cp"]]>, titan.input = "tokens"}
// CHECK-SAME: {dist.sharding = #dist.sharding<{{\[}}[], ["cp"]]>, titan.input = "labels"}
// CHECK:      %[[H:.*]] = titan.embedding %{{.*}}[%{{.*}}] : tensor<16x8xf32>
// CHECK-NEXT: dist.sharding_constraint %[[H]] to <{{\[}}[], ["cp", "tp"]]>
// CHECK-NEXT: titan.linear %{{.*}}, %{{.*}} : (
// CHECK-NEXT: %[[Z:.*]] = titan.linear %{{.*}}, %{{.*}} : (
// CHECK-NEXT: dist.sharding_constraint %[[Z]] to <{{\[}}[], ["cp", "tp"]]>
// CHECK:      titan.row_max
// CHECK:      titan.cross_entropy_from_stats
// CHECK-NOT:  dist.loss_parallel
func.func @forward(%vocab: tensor<16x8xf32> {titan.param = "vocab", dist.param_plan = #dist.param_plan<tp = embedding>},
                   %proj: tensor<8x8xf32> {titan.param = "proj", dist.param_plan = #dist.param_plan<tp = colwise, block = 0>},
                   %back: tensor<8x8xf32> {titan.param = "back", dist.param_plan = #dist.param_plan<tp = rowwise, block = 0>},
                   %scale: tensor<8xf32> {titan.param = "scale", dist.param_plan = #dist.param_plan<tp = replicate>},
                   %ids: tensor<2x8xi32> {titan.input = "tokens", dist.context_parallel = 1 : i64},
                   %targets: tensor<2x8xi32> {titan.input = "labels", dist.context_parallel = 1 : i64}) -> tensor<f32> {
  %h = titan.embedding %vocab[%ids] {dist.sequence_parallel = 1 : i64} : tensor<16x8xf32>, tensor<2x8xi32> -> tensor<2x8x8xf32>
  %y = titan.linear %h, %proj : (tensor<2x8x8xf32>, tensor<8x8xf32>) -> tensor<2x8x8xf32>
  %z = titan.linear %y, %back {dist.sequence_parallel = 1 : i64} : (tensor<2x8x8xf32>, tensor<8x8xf32>) -> tensor<2x8x8xf32>
  %logits = titan.linear %z, %vocab : (tensor<2x8x8xf32>, tensor<16x8xf32>) -> tensor<2x8x16xf32>
  %loss, %lse = titan.cross_entropy %logits, %targets {dist.loss_parallel} : (tensor<2x8x16xf32>, tensor<2x8xi32>) -> (tensor<f32>, tensor<2x8xf32>)
  return %loss : tensor<f32>
}

// -----

// Under tensor parallelism a forward without a plan is refused, naming
// what attaches one (without tensor parallelism it needs none:
// dist-parallelize-no-plan.mlir).
// expected-error @+1 {{'func.func' op has no parallel plan: no parameter carries 'dist.param_plan' (tensor parallel, tp = 2, needs the model's plan: the Llama importer attaches TorchTitan's, titan-llama-plan attaches it to hand-written IR)}}
func.func @forward(%w: tensor<8x8xf32> {titan.param = "layers.0.attention.wq.weight"}) -> tensor<f32> {
  %f = titan.fill 0.0 : tensor<f32>
  return %f : tensor<f32>
}

// -----

// So is a parameter the plan leaves out.
// expected-error @+1 {{'func.func' op parameter 'b' has no 'dist.param_plan' (tensor parallel, tp = 2, needs}}
func.func @forward(%a: tensor<8x8xf32> {titan.param = "a", dist.param_plan = #dist.param_plan<tp = colwise>},
                   %b: tensor<8x8xf32> {titan.param = "b"}) -> tensor<f32> {
  %f = titan.fill 0.0 : tensor<f32>
  return %f : tensor<f32>
}

// -----

// expected-error @+1 {{'func.func' op parameter 'w' has a malformed 'dist.param_plan': "colwise" is not a #dist.param_plan}}
func.func @forward(%w: tensor<8x8xf32> {titan.param = "w", dist.param_plan = "colwise"}) -> tensor<f32> {
  %f = titan.fill 0.0 : tensor<f32>
  return %f : tensor<f32>
}

// -----

// Under tensor parallelism every parameter needs a style.
// expected-error @+1 {{'func.func' op parameter 'w' has no tensor-parallel style in its plan (#dist.param_plan<block = 0>)}}
func.func @forward(%w: tensor<8x8xf32> {titan.param = "w", dist.param_plan = #dist.param_plan<block = 0>}) -> tensor<f32> {
  %f = titan.fill 0.0 : tensor<f32>
  return %f : tensor<f32>
}

// -----

// A row-wise style splits the input features of a 2-D weight.
// expected-error @+1 {{'func.func' op row-wise parameter 'v' must be 2-D}}
func.func @forward(%v: tensor<8xf32> {titan.param = "v", dist.param_plan = #dist.param_plan<tp = rowwise>}) -> tensor<f32> {
  %f = titan.fill 0.0 : tensor<f32>
  return %f : tensor<f32>
}

// -----

func.func @forward(%vocab: tensor<16x8xf32> {titan.param = "vocab", dist.param_plan = #dist.param_plan<tp = embedding>},
                   %ids: tensor<2x8xi32> {titan.input = "tokens"}) -> tensor<f32> {
  // expected-error @+1 {{'titan.embedding' op has a malformed 'dist.sequence_parallel': 3 : i64 is not a dimension of 'tensor<2x8x8xf32>'}}
  %h = titan.embedding %vocab[%ids] {dist.sequence_parallel = 3 : i64} : tensor<16x8xf32>, tensor<2x8xi32> -> tensor<2x8x8xf32>
  %f = titan.fill 0.0 : tensor<f32>
  return %f : tensor<f32>
}

// -----

// expected-error @+1 {{'func.func' op has a malformed 'dist.context_parallel': "seq" is not a dimension of 'tensor<2x8xi32>'}}
func.func @forward(%ids: tensor<2x8xi32> {titan.input = "tokens", dist.context_parallel = "seq"}) -> tensor<f32> {
  %f = titan.fill 0.0 : tensor<f32>
  return %f : tensor<f32>
}

// -----

func.func @forward(%x: tensor<2x8xf32>) -> tensor<f32> {
  // expected-error @+1 {{'titan.fill' op has a malformed 'dist.loss_parallel': a unit attribute of a titan.cross_entropy}}
  %f = titan.fill 0.0 {dist.loss_parallel} : tensor<f32>
  return %f : tensor<f32>
}

// -----

// A style outside TorchTitan's is refused when the plan is read.
// expected-error @+2 {{expected one of [colwise, rowwise, embedding, replicate] for how tensor parallelism splits a parameter, got: diagonal}}
// expected-error @+1 {{failed to parse Dist_ParamPlanAttr parameter 'tp'}}
func.func @forward(%w: tensor<8x8xf32> {titan.param = "w", dist.param_plan = #dist.param_plan<tp = diagonal>}) -> tensor<f32> {
  %f = titan.fill 0.0 : tensor<f32>
  return %f : tensor<f32>
}
