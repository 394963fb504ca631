// RUN: titan-opt %s -split-input-file -titan-llama-pipeline-stages -verify-diagnostics | FileCheck %s
// RUN: titan-opt %s -split-input-file -titan-llama-pipeline-stages="schedule=ZBVZeroBubble" -verify-diagnostics | FileCheck %s --check-prefix=ZBV
// RUN: not titan-opt %s -split-input-file -titan-llama-pipeline-stages="schedule=Bogus" 2>&1 | FileCheck %s --check-prefix=BOGUS

// TorchTitan's stage split for the layers the parameters name, written as
// the stage plan dist-pipeline-split reads. Three layers on pp 2 with 1F1B:
// 3 + 1 + 1 effective layers give stage 0 the embedding and layers 0-1,
// stage 1 layer 2, the norm, the output and the loss; the RoPE angles
// (freqs_cis) are computed in every stage.
// CHECK: module attributes {dist.mesh = {{.*}}, dist.pipeline = {every_stage_modules = ["freqs_cis"], num_stages = 2 : i64, schedule = "1F1B", stage_modules = {{\[}}["tok_embeddings", "layers.0", "layers.1"], ["layers.2", "norm", "output", "loss"]], stage_ranks = array<i64: 0, 1>}}
// ZBVZeroBubble holds two stages a rank in a V: rank 0 runs stages 0 and 3.
// ZBV: dist.pipeline = {every_stage_modules = ["freqs_cis"], num_stages = 4 : i64, schedule = "ZBVZeroBubble", stage_modules = {{\[}}["tok_embeddings", "layers.0"], ["layers.1"], ["layers.2"], ["norm", "output", "loss"]], stage_ranks = array<i64: 0, 1, 1, 0>}
// BOGUS: error: 'func.func' op cannot be split into pipeline stages: parallelism.pipeline_parallel_schedule 'Bogus' is not one of
module attributes {dist.mesh = #dist.mesh<pp = 2, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 1>} {
  func.func @forward(%e: tensor<16x8xf32> {titan.param = "tok_embeddings.weight"},
                     %w0: tensor<8x8xf32> {titan.param = "layers.0.attention.wq.weight"},
                     %w1: tensor<8x8xf32> {titan.param = "layers.1.attention.wq.weight"},
                     %w2: tensor<8x8xf32> {titan.param = "layers.2.attention.wq.weight"},
                     %n: tensor<8xf32> {titan.param = "norm.weight"},
                     %o: tensor<16x8xf32> {titan.param = "output.weight"}) -> tensor<f32> {
    %f = titan.fill 0.0 : tensor<f32>
    return %f : tensor<f32>
  }
}

// -----

// expected-error @+1 {{titan-llama-pipeline-stages: the module has no #dist.mesh (run dist-parallelize first)}}
module {
  func.func @forward() -> tensor<f32> {
    %f = titan.fill 0.0 : tensor<f32>
    return %f : tensor<f32>
  }
}
