// RUN: titan-opt %s -split-input-file -dist-parallelize="dp-shard=2 cp=2" -verify-diagnostics | FileCheck %s
// RUN: titan-opt %s -split-input-file -dist-parallelize="dp-shard=2" -dist-propagate-sharding -dist-partition -verify-diagnostics | FileCheck %s --check-prefix=PART
// RUN: not titan-opt %s -split-input-file -dist-parallelize="tp=2" 2>&1 | FileCheck %s --check-prefix=TP

// Without tensor parallelism the plan says nothing the parameters need: a
// forward with no #dist.param_plan at all, or a parameter left out of it,
// has no tensor-parallel style and belongs to the root block (no FSDP
// block of its own). FSDP (and cp's storage split) still shards them.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: {dist.sharding = #dist.sharding<{{\[}}["dp_shard", "cp"]]>, titan.param = "w"}
// PART-LABEL: func.func @forward(
// PART-SAME: tensor<4x8xf32> {dist.keep_gathered, dist.sharding = #dist.sharding<{{\[}}["dp_shard"]]>, titan.param = "w"}
// PART:      dist.all_gather_start %{{.*}} axes ["dp_shard"] dim 0
// Under tensor parallelism the plan is required.
// TP: error: 'func.func' op has no parallel plan: no parameter carries 'dist.param_plan' (tensor parallel, tp = 2, needs the model's plan
func.func @forward(%w: tensor<8x8xf32> {titan.param = "w"},
                   %x: tensor<4x8xf32>,
                   %l: tensor<4xi32>) -> tensor<f32> {
  %y = titan.linear %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %loss, %lse = titan.cross_entropy %y, %l : (tensor<4x8xf32>, tensor<4xi32>) -> (tensor<f32>, tensor<4xf32>)
  return %loss : tensor<f32>
}

// -----

// CHECK-LABEL: func.func @forward(
// CHECK-SAME: {dist.param_plan = #dist.param_plan<block = 0>, dist.sharding = #dist.sharding<{{\[}}["dp_shard", "cp"]]>, titan.param = "a"}
// CHECK-SAME: {dist.sharding = #dist.sharding<{{\[}}["dp_shard", "cp"]]>, titan.param = "b"}
// PART-LABEL: func.func @forward(
// PART-SAME: titan.param = "a"
// PART-SAME: titan.param = "b"
// PART:      dist.all_gather_start %{{.*}} axes ["dp_shard"] dim 0
// PART:      dist.all_gather_start %{{.*}} axes ["dp_shard"] dim 0
// TP: error: 'func.func' op parameter 'a' has no tensor-parallel style in its plan (#dist.param_plan<block = 0>)
func.func @forward(%a: tensor<8x8xf32> {titan.param = "a", dist.param_plan = #dist.param_plan<block = 0>},
                   %b: tensor<8x8xf32> {titan.param = "b"},
                   %x: tensor<4x8xf32>,
                   %l: tensor<4xi32>) -> tensor<f32> {
  %y = titan.linear %x, %a : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %z = titan.linear %y, %b : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %loss, %lse = titan.cross_entropy %z, %l : (tensor<4x8xf32>, tensor<4xi32>) -> (tensor<f32>, tensor<4xf32>)
  return %loss : tensor<f32>
}
