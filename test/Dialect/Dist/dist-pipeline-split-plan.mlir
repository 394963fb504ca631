// RUN: titan-opt %s -split-input-file -dist-pipeline-split -verify-diagnostics | FileCheck %s

// The cut follows the stage plan of dist.pipeline, whatever the modules are
// called: stage 0 holds "embed" and "blocks.a", stage 1 "blocks.b" and
// "head" (its submodules too), "rope" is computed again where it is read.
// The module lists are consumed.
// CHECK-LABEL: module attributes
// CHECK-SAME: dist.pipeline = {num_stages = 2 : i64, schedule = "GPipe", stage_ranks = array<i64: 0, 1>}
// CHECK:      func.func @stage0(%{{.*}}: tensor<16x8xf32> {titan.param = "embed.table"}, %{{.*}}: tensor<8x8xf32> {titan.param = "blocks.a.w"}, %{{.*}}: tensor<2x4xi32> {titan.input = "tokens"})
// CHECK-SAME: -> (tensor<2x4x8xf32> {dist.stage_output = 0 : i64})
// CHECK:        titan.embedding
// CHECK:        titan.rope_angles
// CHECK:        titan.linear
// CHECK:      func.func @stage1(%{{.*}}: tensor<8x8xf32> {titan.param = "blocks.b.w"}, %{{.*}}: tensor<16x8xf32> {titan.param = "head.proj.w"}, %{{.*}}: tensor<2x4xi32> {titan.input = "labels"}, %{{.*}}: tensor<2x4x8xf32> {dist.stage_input = 0 : i64})
// CHECK:        titan.rope_angles
// CHECK:        titan.cross_entropy
module attributes {dist.mesh = #dist.mesh<pp = 2, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 1>,
                   dist.pipeline = {num_stages = 2 : i64, stage_ranks = array<i64: 0, 1>, schedule = "GPipe",
                                    stage_modules = [["embed", "blocks.a"], ["blocks.b", "head"]],
                                    every_stage_modules = ["rope"]}} {
  func.func @forward(%e: tensor<16x8xf32> {titan.param = "embed.table"},
                     %wa: tensor<8x8xf32> {titan.param = "blocks.a.w"},
                     %wb: tensor<8x8xf32> {titan.param = "blocks.b.w"},
                     %o: tensor<16x8xf32> {titan.param = "head.proj.w"},
                     %t: tensor<2x4xi32> {titan.input = "tokens"},
                     %l: tensor<2x4xi32> {titan.input = "labels"}) -> tensor<f32> {
    %x = titan.embedding %e[%t] : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32> loc("embed")
    %a = titan.rope_angles {theta = 1.0e4 : f64} : tensor<4x2x2xf32> loc("rope")
    %q = titan.reshape %x : tensor<2x4x8xf32> -> tensor<2x4x2x4xf32> loc("blocks.a")
    %r = titan.rope %q, %a : (tensor<2x4x2x4xf32>, tensor<4x2x2xf32>) -> tensor<2x4x2x4xf32> loc("blocks.a")
    %f = titan.reshape %r : tensor<2x4x2x4xf32> -> tensor<2x4x8xf32> loc("blocks.a")
    %ya = titan.linear %f, %wa : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32> loc("blocks.a.w")
    %qb = titan.reshape %ya : tensor<2x4x8xf32> -> tensor<2x4x2x4xf32> loc("blocks.b")
    %rb = titan.rope %qb, %a : (tensor<2x4x2x4xf32>, tensor<4x2x2xf32>) -> tensor<2x4x2x4xf32> loc("blocks.b")
    %fb = titan.reshape %rb : tensor<2x4x2x4xf32> -> tensor<2x4x8xf32> loc("blocks.b")
    %yb = titan.linear %fb, %wb : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32> loc("blocks.b.w")
    %logits = titan.linear %yb, %o : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32> loc("head.proj")
    %loss, %loss_lse = titan.cross_entropy %logits, %l : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> (tensor<f32>, tensor<2x4xf32>) loc("head")
    return %loss : tensor<f32> loc("head")
  }
}

// -----

// Without a stage plan the pass says what it needs.
// expected-error @+1 {{dist-pipeline-split: the module's dist.pipeline must hold the stage plan, num_stages, stage_ranks and stage_modules (one array of module names per stage; every_stage_modules optional), as a model's pipeline plan writes it (for Llama, titan-llama-pipeline-stages)}}
module attributes {dist.mesh = #dist.mesh<pp = 2, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 1>} {
  func.func @forward(%l: tensor<2x4xi32> {titan.input = "labels"}) -> tensor<f32> {
    %zero = titan.fill 0.0 : tensor<f32> loc("loss")
    return %zero : tensor<f32>
  }
}

// -----

// One list of module names per stage.
// expected-error @+1 {{dist-pipeline-split: the module's dist.pipeline must hold the stage plan}}
module attributes {dist.mesh = #dist.mesh<pp = 2, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 1>,
                   dist.pipeline = {num_stages = 2 : i64, stage_ranks = array<i64: 0, 1>, stage_modules = [["loss"]]}} {
  func.func @forward(%l: tensor<2x4xi32> {titan.input = "labels"}) -> tensor<f32> {
    %zero = titan.fill 0.0 : tensor<f32> loc("loss")
    return %zero : tensor<f32>
  }
}

// -----

// Module names are strings.
// expected-error @+1 {{dist-pipeline-split: the module's dist.pipeline must hold the stage plan}}
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 1>,
                   dist.pipeline = {num_stages = 1 : i64, stage_ranks = array<i64: 0>, stage_modules = [[3]]}} {
  func.func @forward(%l: tensor<2x4xi32> {titan.input = "labels"}) -> tensor<f32> {
    %zero = titan.fill 0.0 : tensor<f32> loc("loss")
    return %zero : tensor<f32>
  }
}

// -----

// expected-error @+1 {{dist-pipeline-split: the module has no #dist.mesh (run dist-parallelize first)}}
module {
  func.func @forward(%l: tensor<2x4xi32> {titan.input = "labels"}) -> tensor<f32> {
    %zero = titan.fill 0.0 : tensor<f32> loc("loss")
    return %zero : tensor<f32>
  }
}

// -----

// Each stage runs on a pipeline rank: stage_ranks names ranks 0 to pp - 1.
// expected-error @+1 {{dist-pipeline-split: dist.pipeline's stage_ranks puts stage 1 on rank 2, which is not a pipeline rank (0 to 1 for pp = 2)}}
module attributes {dist.mesh = #dist.mesh<pp = 2, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 1>,
                   dist.pipeline = {num_stages = 2 : i64, stage_ranks = array<i64: 0, 2>, stage_modules = [["a"], ["loss"]]}} {
  func.func @forward(%l: tensor<2x4xi32> {titan.input = "labels"}) -> tensor<f32> {
    %zero = titan.fill 0.0 : tensor<f32> loc("loss")
    return %zero : tensor<f32>
  }
}

// -----

// expected-error @+1 {{dist-pipeline-split: dist.pipeline's stage_ranks puts stage 0 on rank -1, which is not a pipeline rank (0 to 1 for pp = 2)}}
module attributes {dist.mesh = #dist.mesh<pp = 2, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 1>,
                   dist.pipeline = {num_stages = 2 : i64, stage_ranks = array<i64: -1, 1>, stage_modules = [["a"], ["loss"]]}} {
  func.func @forward(%l: tensor<2x4xi32> {titan.input = "labels"}) -> tensor<f32> {
    %zero = titan.fill 0.0 : tensor<f32> loc("loss")
    return %zero : tensor<f32>
  }
}

// -----

// Each pipeline rank runs at least one stage (its program).
// expected-error @+1 {{dist-pipeline-split: dist.pipeline's stage_ranks array<i64: 0, 0> gives pipeline rank 1 no stage (pp = 2): each pipeline rank needs at least one}}
module attributes {dist.mesh = #dist.mesh<pp = 2, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 1>,
                   dist.pipeline = {num_stages = 2 : i64, stage_ranks = array<i64: 0, 0>, stage_modules = [["a"], ["loss"]]}} {
  func.func @forward(%l: tensor<2x4xi32> {titan.input = "labels"}) -> tensor<f32> {
    %zero = titan.fill 0.0 : tensor<f32> loc("loss")
    return %zero : tensor<f32>
  }
}
