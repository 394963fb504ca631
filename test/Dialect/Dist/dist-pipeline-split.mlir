// RUN: titan-opt %s -split-input-file -titan-llama-pipeline-stages -dist-pipeline-split -verify-diagnostics | FileCheck %s
// RUN: titan-opt %s -split-input-file -titan-llama-pipeline-stages -dist-pipeline-split="rank=1" -verify-diagnostics | FileCheck %s --check-prefix=RANK1
// RUN: not titan-opt %s -split-input-file -titan-llama-pipeline-stages="schedule=Interleaved1F1B layers-per-stage=1 first-stage-less-layers=0 last-stage-less-layers=0" -dist-pipeline-split 2>&1 | FileCheck %s --check-prefix=LOOPED

// The Llama forward cut as TorchTitan cuts it: titan-llama-pipeline-stages
// decides the stages' modules (dist.pipeline's stage_modules), the pass
// cuts by the modules the ops' locations name and consumes the lists.
// Three layers on pp 2 with 1F1B: TorchTitan's split of 3 + 1 + 1 effective
// layers gives stage 0 the embedding and layers 0-1, stage 1 layer 2, the
// norm and the output. The block output crosses the boundary; the RoPE
// angles (freqs_cis) are computed again in each stage; each stage takes only
// the parameters and inputs it reads.
// CHECK-LABEL: module attributes
// CHECK-SAME: dist.pipeline = {num_stages = 2 : i64, schedule = "1F1B", stage_ranks = array<i64: 0, 1>}
// CHECK:      func.func @stage0(%[[E:.*]]: tensor<16x8xf32> {titan.param = "tok_embeddings.weight"}, %[[W0:.*]]: tensor<8x8xf32> {titan.param = "layers.0.w"}, %[[W1:.*]]: tensor<8x8xf32> {titan.param = "layers.1.w"}, %[[T:.*]]: tensor<2x4xi32> {titan.input = "tokens"})
// CHECK-SAME: -> (tensor<2x4x8xf32> {dist.stage_output = 0 : i64})
// CHECK-SAME: attributes {dist.partitioned, dist.pipeline_phase = "forward", dist.stage = 0 : i64}
// CHECK:        %[[X:.*]] = titan.embedding %[[E]][%[[T]]]
// CHECK:        %[[A:.*]] = titan.rope_angles
// CHECK:        titan.rope %{{.*}}, %[[A]]
// CHECK:        %[[H1:.*]] = titan.add
// CHECK:        titan.rope %{{.*}}, %[[A]]
// CHECK:        %[[H2:.*]] = titan.add %[[H1]]
// CHECK-NEXT:   return %[[H2]] : tensor<2x4x8xf32>
// CHECK:      func.func @stage1(%[[W2:.*]]: tensor<8x8xf32> {titan.param = "layers.2.w"}, %[[N:.*]]: tensor<8xf32> {titan.param = "norm.weight"}, %[[O:.*]]: tensor<16x8xf32> {titan.param = "output.weight"}, %[[L:.*]]: tensor<2x4xi32> {titan.input = "labels"}, %[[IN:.*]]: tensor<2x4x8xf32> {dist.stage_input = 0 : i64})
// CHECK-SAME: -> tensor<f32> attributes {dist.partitioned, dist.pipeline_phase = "forward", dist.stage = 1 : i64}
// CHECK:        %[[A1:.*]] = titan.rope_angles
// CHECK:        titan.rope %{{.*}}, %[[A1]]
// CHECK:        %[[H3:.*]] = titan.add %[[IN]]
// CHECK:        titan.rms_norm %[[H3]], %[[N]]
// CHECK:        %[[LOSS:.*]], %{{.*}} = titan.cross_entropy %{{.*}}, %[[L]]
// CHECK-NEXT:   return %[[LOSS]] : tensor<f32>
// CHECK-NOT:  func.func @forward

// rank=1 builds the last pipeline rank's stage only.
// RANK1-LABEL: module attributes
// RANK1-SAME: dist.pipeline = {num_stages = 2 : i64, rank = 1 : i64, schedule = "1F1B", stage_ranks = array<i64: 0, 1>}
// RANK1-NOT:  func.func @stage0
// RANK1:      func.func @stage1(
// RANK1-NOT:  func.func

// Interleaved1F1B with one layer per stage and no weight for the embedding
// and output: 3 stages do not divide over 2 ranks (the Llama plan's error).
// LOOPED: error: 'func.func' op cannot be split into pipeline stages: the 3 pipeline stages are not divisible by parallelism.pipeline_parallel_degree (2)
module attributes {dist.mesh = #dist.mesh<pp = 2, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 1>} {
  func.func @forward(%e: tensor<16x8xf32> {titan.param = "tok_embeddings.weight"},
                     %w0: tensor<8x8xf32> {titan.param = "layers.0.w"},
                     %w1: tensor<8x8xf32> {titan.param = "layers.1.w"},
                     %w2: tensor<8x8xf32> {titan.param = "layers.2.w"},
                     %n: tensor<8xf32> {titan.param = "norm.weight"},
                     %o: tensor<16x8xf32> {titan.param = "output.weight"},
                     %t: tensor<2x4xi32> {titan.input = "tokens"},
                     %l: tensor<2x4xi32> {titan.input = "labels"}) -> tensor<f32> attributes {dist.partitioned} {
    %x = titan.embedding %e[%t] : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32> loc("tok_embeddings")
    %a = titan.rope_angles {theta = 1.0e4 : f64} : tensor<4x2x2xf32> loc("freqs_cis")
    %z0 = titan.linear %x, %w0 : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32> loc("layers.0.attention.wq")
    %q0 = titan.reshape %z0 : tensor<2x4x8xf32> -> tensor<2x4x2x4xf32> loc("layers.0.attention")
    %r0 = titan.rope %q0, %a : (tensor<2x4x2x4xf32>, tensor<4x2x2xf32>) -> tensor<2x4x2x4xf32> loc("layers.0.attention")
    %f0 = titan.reshape %r0 : tensor<2x4x2x4xf32> -> tensor<2x4x8xf32> loc("layers.0.attention")
    %h1 = titan.add %x, %f0 : tensor<2x4x8xf32> loc("layers.0")
    %z1 = titan.linear %h1, %w1 : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32> loc("layers.1.attention.wq")
    %q1 = titan.reshape %z1 : tensor<2x4x8xf32> -> tensor<2x4x2x4xf32> loc("layers.1.attention")
    %r1 = titan.rope %q1, %a : (tensor<2x4x2x4xf32>, tensor<4x2x2xf32>) -> tensor<2x4x2x4xf32> loc("layers.1.attention")
    %f1 = titan.reshape %r1 : tensor<2x4x2x4xf32> -> tensor<2x4x8xf32> loc("layers.1.attention")
    %h2 = titan.add %h1, %f1 : tensor<2x4x8xf32> loc("layers.1")
    %z2 = titan.linear %h2, %w2 : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32> loc("layers.2.attention.wq")
    %q2 = titan.reshape %z2 : tensor<2x4x8xf32> -> tensor<2x4x2x4xf32> loc("layers.2.attention")
    %r2 = titan.rope %q2, %a : (tensor<2x4x2x4xf32>, tensor<4x2x2xf32>) -> tensor<2x4x2x4xf32> loc("layers.2.attention")
    %f2 = titan.reshape %r2 : tensor<2x4x2x4xf32> -> tensor<2x4x8xf32> loc("layers.2.attention")
    %h3 = titan.add %h2, %f2 : tensor<2x4x8xf32> loc("layers.2")
    %y = titan.rms_norm %h3, %n {eps = 1.0e-5 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32> loc("norm")
    %logits = titan.linear %y, %o : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32> loc("output")
    %loss, %loss_lse = titan.cross_entropy %logits, %l : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> (tensor<f32>, tensor<2x4xf32>) loc("loss")
    return %loss : tensor<f32> loc("loss")
  }
}

// -----

// A value read two stages later passes through the stage between: on pp 3
// the split of 3 + 1 + 1 effective layers is [embedding, layer 0],
// [layers 1-2], [norm, output]; the embedding's output %x, read again by
// the norm, is an output of stage 0, an input and an output of stage 1 and
// an input of stage 2 (stage signatures in program order).
// CHECK-LABEL: module attributes
// CHECK:      func.func @stage0({{.*}}) -> (tensor<2x4x8xf32> {dist.stage_output = 0 : i64}, tensor<2x4x8xf32> {dist.stage_output = 1 : i64})
// CHECK:        %[[X:.*]] = titan.embedding
// CHECK:        %[[H1:.*]] = titan.add %[[X]]
// CHECK:        return %[[X]], %[[H1]]
// CHECK:      func.func @stage1({{.*}}, %[[X1:.*]]: tensor<2x4x8xf32> {dist.stage_input = 0 : i64}, %[[H1I:.*]]: tensor<2x4x8xf32> {dist.stage_input = 1 : i64}) -> (tensor<2x4x8xf32> {dist.stage_output = 0 : i64}, tensor<2x4x8xf32> {dist.stage_output = 1 : i64})
// CHECK:        titan.linear %[[H1I]]
// CHECK:        titan.add %[[H1I]]
// CHECK:        %[[H3:.*]] = titan.add
// CHECK:        return %[[X1]], %[[H3]]
// CHECK:      func.func @stage2(%{{.*}}: tensor<16x8xf32> {titan.param = "output.weight"}, %{{.*}}: tensor<2x4xi32> {titan.input = "labels"}, %[[X2:.*]]: tensor<2x4x8xf32> {dist.stage_input = 0 : i64}, %[[H3I:.*]]: tensor<2x4x8xf32> {dist.stage_input = 1 : i64}) -> tensor<f32>
// CHECK:        titan.add %[[H3I]], %[[X2]]

// RANK1-LABEL: module attributes
// RANK1-NOT:  func.func @stage0
// RANK1:      func.func @stage1(
// RANK1-NOT:  func.func @stage2

// LOOPED: error: 'func.func' op cannot be split into pipeline stages: {{.*}}Interleaved1F1B{{.*}}
module attributes {dist.mesh = #dist.mesh<pp = 3, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 1>} {
  func.func @forward(%e: tensor<16x8xf32> {titan.param = "tok_embeddings.weight"},
                     %w0: tensor<8x8xf32> {titan.param = "layers.0.w"},
                     %w1: tensor<8x8xf32> {titan.param = "layers.1.w"},
                     %w2: tensor<8x8xf32> {titan.param = "layers.2.w"},
                     %o: tensor<16x8xf32> {titan.param = "output.weight"},
                     %t: tensor<2x4xi32> {titan.input = "tokens"},
                     %l: tensor<2x4xi32> {titan.input = "labels"}) -> tensor<f32> {
    %x = titan.embedding %e[%t] : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32> loc("tok_embeddings")
    %z0 = titan.linear %x, %w0 : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32> loc("layers.0.w")
    %h1 = titan.add %x, %z0 : tensor<2x4x8xf32> loc("layers.0")
    %z1 = titan.linear %h1, %w1 : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32> loc("layers.1.w")
    %h2 = titan.add %h1, %z1 : tensor<2x4x8xf32> loc("layers.1")
    %z2 = titan.linear %h2, %w2 : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32> loc("layers.2.w")
    %h3 = titan.add %h2, %z2 : tensor<2x4x8xf32> loc("layers.2")
    %y = titan.add %h3, %x : tensor<2x4x8xf32> loc("norm")
    %logits = titan.linear %y, %o : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32> loc("output")
    %loss, %loss_lse = titan.cross_entropy %logits, %l : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> (tensor<f32>, tensor<2x4xf32>) loc("loss")
    return %loss : tensor<f32> loc("loss")
  }
}
