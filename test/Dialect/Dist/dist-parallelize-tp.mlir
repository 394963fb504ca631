// RUN: titan-opt %s -split-input-file -titan-llama-plan -dist-parallelize="tp=2" -verify-diagnostics | FileCheck %s --check-prefix=TP
// RUN: titan-opt %s -split-input-file -titan-llama-plan -dist-parallelize="tp=2 dp-shard=2" -verify-diagnostics | FileCheck %s --check-prefix=FSDP-TP

// TorchTitan's Llama plan (titan-llama-plan matches parameter names; the
// pass reads the plan): column-wise and vocabulary splits on dimension 0,
// row-wise on dimension 1, norms replicated. With FSDP, dimension 0 of the
// tensor-parallel shard is split again over dp_shard (tp outermost).
// TP: module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 2>}
// TP-LABEL: func.func @forward(
// TP-SAME: tensor<16x8xf32> {dist.param_plan = #dist.param_plan<tp = embedding>, dist.sharding = #dist.sharding<{{\[}}["tp"]]>, titan.param = "tok_embeddings.weight"}
// TP-SAME: tensor<8x8xf32> {dist.param_plan = #dist.param_plan<tp = colwise, block = 0>, dist.sharding = #dist.sharding<{{\[}}["tp"]]>, titan.param = "layers.0.attention.wq.weight"}
// TP-SAME: tensor<8x8xf32> {dist.param_plan = #dist.param_plan<tp = rowwise, block = 0>, dist.sharding = #dist.sharding<{{\[}}[], ["tp"]]>, titan.param = "layers.0.attention.wo.weight"}
// TP-SAME: tensor<8xf32> {dist.param_plan = #dist.param_plan<tp = replicate, block = 0>, titan.param = "layers.0.attention_norm.weight"}
// TP-SAME: tensor<16x8xf32> {dist.param_plan = #dist.param_plan<tp = colwise>, dist.sharding = #dist.sharding<{{\[}}["tp"]]>, titan.param = "output.weight"}
// FSDP-TP: module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 2, cp = 1, tp = 2>}
// FSDP-TP-LABEL: func.func @forward(
// FSDP-TP-SAME: {dist.param_plan = #dist.param_plan<tp = embedding>, dist.sharding = #dist.sharding<{{\[}}["tp", "dp_shard"]]>, titan.param = "tok_embeddings.weight"}
// FSDP-TP-SAME: {dist.param_plan = #dist.param_plan<tp = colwise, block = 0>, dist.sharding = #dist.sharding<{{\[}}["tp", "dp_shard"]]>, titan.param = "layers.0.attention.wq.weight"}
// FSDP-TP-SAME: {dist.param_plan = #dist.param_plan<tp = rowwise, block = 0>, dist.sharding = #dist.sharding<{{\[}}["dp_shard"], ["tp"]]>, titan.param = "layers.0.attention.wo.weight"}
// FSDP-TP-SAME: {dist.param_plan = #dist.param_plan<tp = replicate, block = 0>, dist.sharding = #dist.sharding<{{\[}}["dp_shard"]]>, titan.param = "layers.0.attention_norm.weight"}
func.func @forward(%emb: tensor<16x8xf32> {titan.param = "tok_embeddings.weight"},
                   %wq: tensor<8x8xf32> {titan.param = "layers.0.attention.wq.weight"},
                   %wo: tensor<8x8xf32> {titan.param = "layers.0.attention.wo.weight"},
                   %norm: tensor<8xf32> {titan.param = "layers.0.attention_norm.weight"},
                   %out: tensor<16x8xf32> {titan.param = "output.weight"}) -> tensor<f32> {
  %f = titan.fill 0.0 : tensor<f32>
  return %f : tensor<f32>
}

// -----

// A parameter the plan does not know is an error, not silently replicated.
// expected-error @+1 {{'func.func' op parameter 'layers.0.moe.router.weight' has no tensor-parallel style in its plan (#dist.param_plan<block = 0>)}}
func.func @forward(%w: tensor<8x8xf32> {titan.param = "layers.0.moe.router.weight"}) -> tensor<f32> {
  %f = titan.fill 0.0 : tensor<f32>
  return %f : tensor<f32>
}

// -----

// The degree and the dimension are named (tp alone, or tp x dp_shard).
// expected-error-re @+1 {{parameter 'layers.0.attention.wk.weight' cannot be sharded as #dist.sharding<{{\[\["tp"(, "dp_shard")?\]\]}}>: dimension 0 (3) is not divisible by the 2 shards of 'tp'}}
func.func @forward(%w: tensor<3x8xf32> {titan.param = "layers.0.attention.wk.weight"}) -> tensor<f32> {
  %f = titan.fill 0.0 : tensor<f32>
  return %f : tensor<f32>
}
