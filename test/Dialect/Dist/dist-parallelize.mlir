// RUN: titan-opt %s -split-input-file -dist-parallelize="dp-shard=2 dp-replicate=2" -verify-diagnostics | FileCheck %s
// RUN: not titan-opt %s -split-input-file -dist-parallelize="dp-replicate=4" 2>&1 | FileCheck %s --check-prefix=DDP

// FSDP/HSDP: every parameter of the plan (dist.param_plan, kept for
// dist-partition) sharded on dimension 0 over dp_shard; data arguments
// untouched.
// CHECK: module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 2, dp_shard = 2, cp = 1, tp = 1>}
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: tensor<8x4xf32> {dist.param_plan = #dist.param_plan<tp = colwise, block = 0>, dist.sharding = #dist.sharding<{{\[}}["dp_shard"]]>, titan.param = "w"}
// CHECK-SAME: tensor<4xf32> {dist.param_plan = #dist.param_plan<>, dist.sharding = #dist.sharding<{{\[}}["dp_shard"]]>, titan.param = "n"}
// CHECK-SAME: tensor<2x3xi32> {titan.input = "tokens"}
// DDP: module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 4, dp_shard = 1, cp = 1, tp = 1>}
// DDP-NOT: dist.sharding
func.func @forward(%w: tensor<8x4xf32> {titan.param = "w", dist.param_plan = #dist.param_plan<tp = colwise, block = 0>},
                   %n: tensor<4xf32> {titan.param = "n", dist.param_plan = #dist.param_plan<>},
                   %t: tensor<2x3xi32> {titan.input = "tokens"}) -> tensor<f32> {
  %f = titan.fill 0.0 : tensor<f32>
  return %f : tensor<f32>
}

// -----

// FSDP shards a first dimension that dp_shard does not divide unevenly, as
// FSDP2 does: 5 rows are 3 + 2 (the second shard padded with a zero row).
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: tensor<5x4xf32> {dist.param_plan = #dist.param_plan<>, dist.sharding = #dist.sharding<{{\[}}["dp_shard"]]>, titan.param = "odd"}
func.func @forward(%w: tensor<5x4xf32> {titan.param = "odd", dist.param_plan = #dist.param_plan<>}) -> tensor<f32> {
  %f = titan.fill 0.0 : tensor<f32>
  return %f : tensor<f32>
}

// -----

// expected-error @+1 {{dist-parallelize: no function named 'forward'}}
module {
}
