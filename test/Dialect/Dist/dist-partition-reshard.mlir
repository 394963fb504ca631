// FSDP's reshard after forward, as TorchTitan wraps Llama in FSDP2: with
// "default" every block but the last is gathered again for the backward;
// with "always" every block; the root's parameters (here the final norm)
// never are. dist.keep_gathered marks the ones kept. The blocks, FSDP's
// units, are the plan's (dist.param_plan, which the pass consumes); a
// parameter whose plan names no block is the root's.
// RUN: titan-opt %s -dist-partition | FileCheck %s --check-prefix=DEFAULT
// RUN: titan-opt %s -dist-partition=reshard-after-forward=always | FileCheck %s --check-prefix=ALWAYS
// RUN: titan-opt %s -dist-partition=reshard-after-forward=never | FileCheck %s --check-prefix=NEVER
// DEFAULT-LABEL: func.func @forward(
// DEFAULT-SAME: {dist.sharding = {{.*}}, titan.param = "layers.0.w"}
// DEFAULT-SAME: {dist.keep_gathered, dist.sharding = {{.*}}, titan.param = "layers.1.w"}
// DEFAULT-SAME: {dist.keep_gathered, dist.sharding = {{.*}}, titan.param = "norm.weight"}
// DEFAULT-NOT: dist.param_plan
// ALWAYS-LABEL: func.func @forward(
// ALWAYS-SAME: {dist.sharding = {{.*}}, titan.param = "layers.0.w"}
// ALWAYS-SAME: {dist.sharding = {{.*}}, titan.param = "layers.1.w"}
// ALWAYS-SAME: {dist.keep_gathered, dist.sharding = {{.*}}, titan.param = "norm.weight"}
// NEVER-LABEL: func.func @forward(
// NEVER-SAME: {dist.keep_gathered, dist.sharding = {{.*}}, titan.param = "layers.0.w"}
// NEVER-SAME: {dist.keep_gathered, dist.sharding = {{.*}}, titan.param = "layers.1.w"}
// NEVER-SAME: {dist.keep_gathered, dist.sharding = {{.*}}, titan.param = "norm.weight"}
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 2, cp = 1, tp = 1>} {
  func.func @forward(%a: tensor<4x4xf32> {titan.param = "layers.0.w", dist.param_plan = #dist.param_plan<block = 0>, dist.sharding = #dist.sharding<[["dp_shard"]]>},
                    %b: tensor<4x4xf32> {titan.param = "layers.1.w", dist.param_plan = #dist.param_plan<block = 1>, dist.sharding = #dist.sharding<[["dp_shard"]]>},
                    %n: tensor<4xf32> {titan.param = "norm.weight", dist.param_plan = #dist.param_plan<tp = replicate>, dist.sharding = #dist.sharding<[["dp_shard"]]>},
                    %x: tensor<3x4xf32>, %l: tensor<3xi32>) -> tensor<f32> {
    %h = titan.rms_norm %x, %n {eps = 1.0e-5 : f64} : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
    %y = titan.linear %h, %a : (tensor<3x4xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
    %z = titan.linear %y, %b : (tensor<3x4xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
    %loss, %loss_lse = titan.cross_entropy %z, %l : (tensor<3x4xf32>, tensor<3xi32>) -> (tensor<f32>, tensor<3xf32>)
    return %loss : tensor<f32>
  }
}


// The backward gathers again only what the policy reshards.
// RUN: titan-opt %s -dist-partition -titan-autodiff=regather-params | FileCheck %s --check-prefix=DEFAULT-GRAD
// DEFAULT-GRAD-LABEL: func.func @forward_backward(
// DEFAULT-GRAD-COUNT-3: dist.all_gather_start %arg
// DEFAULT-GRAD:         titan.linear_grad_weight
// DEFAULT-GRAD:         dist.all_gather_start %arg0 axes ["dp_shard"]
// DEFAULT-GRAD-NOT:     dist.all_gather_start
