// RUN: titan-opt %s -split-input-file -titan-llama-plan -dist-parallelize="cp=2 dp-shard=2" -verify-diagnostics | FileCheck %s
// RUN: titan-opt %s -split-input-file -titan-llama-plan -dist-parallelize="cp=2 tp=2" -verify-diagnostics | FileCheck %s --check-prefix=CP-TP

// Context parallel (TorchTitan's plan): the token and label inputs are
// split load-balanced along the sequence over cp, and FSDP stores the
// parameters split over dp_shard then cp (TorchTitan's dp_shard_cp mesh).
// CHECK: module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 2, cp = 2, tp = 1>}
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: tensor<8x4xf32> {dist.param_plan = #dist.param_plan<tp = embedding>, dist.sharding = #dist.sharding<{{\[}}["dp_shard", "cp"]]>, titan.param = "tok_embeddings.weight"}
// CHECK-SAME: tensor<2x8xi32> {dist.sharding = #dist.sharding<{{\[}}[], ["cp"]]>, titan.input = "tokens"}
// CHECK-SAME: tensor<2x8xi32> {dist.sharding = #dist.sharding<{{\[}}[], ["cp"]]>, titan.input = "labels"}
// With tensor parallel, sequence parallel splits the residual stream over
// cp, then tp.
// CP-TP-LABEL: func.func @forward(
// CP-TP-SAME: tensor<8x4xf32> {dist.param_plan = #dist.param_plan<tp = embedding>, dist.sharding = #dist.sharding<{{\[}}["tp", "cp"]]>, titan.param = "tok_embeddings.weight"}
// CP-TP: %[[E:.*]] = titan.embedding
// CP-TP-NEXT: dist.sharding_constraint %[[E]] to <{{\[}}[], ["cp", "tp"]]> : tensor<2x8x4xf32>
func.func @forward(%emb: tensor<8x4xf32> {titan.param = "tok_embeddings.weight"},
                   %t: tensor<2x8xi32> {titan.input = "tokens"},
                   %l: tensor<2x8xi32> {titan.input = "labels"}) -> tensor<f32> {
  %h = titan.embedding %emb[%t] : tensor<8x4xf32>, tensor<2x8xi32> -> tensor<2x8x4xf32>
  %f = titan.fill 0.0 : tensor<f32>
  return %f : tensor<f32>
}

// -----

// The sequence must divide into 2 x cp chunks.
// expected-error @+1 {{'func.func' op context parallel cuts the sequence (6 tokens) into 2 x cp = 4 load-balanced chunks, which does not divide it (training.seq_len, parallelism.context_parallel_degree)}}
func.func @forward(%t: tensor<2x6xi32> {titan.input = "tokens"}) -> tensor<f32> {
  %f = titan.fill 0.0 : tensor<f32>
  return %f : tensor<f32>
}
