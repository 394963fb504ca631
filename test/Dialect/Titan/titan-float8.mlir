// The Float8 linear converter (titan-float8) and its expansion after
// autodiff (titan-expand-float8) on one linear, per torchao recipe
// (torchao.float8.config's Float8LinearConfig.from_recipe_name, as
// TorchTitan v0.2.0 selects it with quantize.linear.float8.recipe_name).
// RUN: titan-opt %s -split-input-file -titan-float8="recipe=tensorwise" -titan-autodiff -titan-expand-float8 2>/dev/null | FileCheck %s --check-prefix=TENSORWISE
// RUN: titan-opt %s -split-input-file -titan-float8="recipe=rowwise" -titan-autodiff -titan-expand-float8 2>/dev/null | FileCheck %s --check-prefix=ROWWISE
// RUN: titan-opt %s -split-input-file -titan-float8="recipe=rowwise_with_gw_hp" -titan-autodiff -titan-expand-float8 2>/dev/null | FileCheck %s --check-prefix=GWHP
// RUN: titan-opt %s -split-input-file -titan-float8="recipe=tensorwise filter-fqns=output" 2>/dev/null | FileCheck %s --check-prefix=FILTERED
// RUN: titan-opt %s -split-input-file -titan-float8="recipe=tensorwise filter-fqns=output" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARKS
// RUN: titan-opt %s -split-input-file -titan-float8 -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARKS-DIMS
// RUN: not titan-opt %s -split-input-file -titan-float8="recipe=blockwise" 2>&1 | FileCheck %s --check-prefix=BAD-RECIPE

// Tensorwise: one scale per tensor, e4m3 input and weight, e5m2 gradient,
// scales not rounded.
// TENSORWISE-LABEL: func.func @forward_backward(
// TENSORWISE:       %[[AX:.*]] = titan.amax %[[X2:.*]] : tensor<2x8x32xf32> -> tensor<f32>
// TENSORWISE-NEXT:  %[[SX:.*]] = titan.float8_scale %[[AX]] for f8E4M3FN : tensor<f32>
// TENSORWISE-NEXT:  %[[QX:.*]] = titan.quantize %[[X2]], %[[SX]] : (tensor<2x8x32xf32>, tensor<f32>) -> tensor<2x8x32xf8E4M3FN>
// TENSORWISE-NEXT:  %[[AW:.*]] = titan.amax %arg1 : tensor<64x32xf32> -> tensor<f32>
// TENSORWISE-NEXT:  %[[SW:.*]] = titan.float8_scale %[[AW]] for f8E4M3FN : tensor<f32>
// TENSORWISE-NEXT:  %[[QW:.*]] = titan.quantize %arg1, %[[SW]] : (tensor<64x32xf32>, tensor<f32>) -> tensor<64x32xf8E4M3FN>
// TENSORWISE-NEXT:  %[[LOGITS:.*]] = titan.scaled_matmul linear %[[QX]], %[[SX]], %[[QW]], %[[SW]] : (tensor<2x8x32xf8E4M3FN>, tensor<f32>, tensor<64x32xf8E4M3FN>, tensor<f32>) -> tensor<2x8x64xf32>
// TENSORWISE:       %[[DY:.*]] = titan.cross_entropy_grad %[[LOGITS]]
// TENSORWISE-NEXT:  %[[AG:.*]] = titan.amax %[[DY]] : tensor<2x8x64xf32> -> tensor<f32>
// TENSORWISE-NEXT:  %[[SG:.*]] = titan.float8_scale %[[AG]] for f8E5M2 : tensor<f32>
// TENSORWISE-NEXT:  %[[QG:.*]] = titan.quantize %[[DY]], %[[SG]] : {{.*}} -> tensor<2x8x64xf8E5M2>
// The operands the backward's GEMMs reduce over their leading dimensions
// are cast transposed (K-major): grad_input's weight, grad_weight's both.
// TENSORWISE:       %[[QWT:.*]] = titan.quantize %{{.*}}, %{{.*}} {transposed} : (tensor<64x32xf32>, tensor<f32>) -> tensor<32x64xf8E4M3FN>
// TENSORWISE-NEXT:  titan.scaled_matmul grad_input %[[QG]], %[[SG]], %[[QWT]], %{{.*}} {rhs_transposed} : (tensor<2x8x64xf8E5M2>, tensor<f32>, tensor<32x64xf8E4M3FN>, tensor<f32>) -> tensor<2x8x32xf32>
// TENSORWISE:       titan.quantize %[[DY]], %{{.*}} {transposed} : {{.*}} -> tensor<64x2x8xf8E5M2>
// TENSORWISE:       titan.quantize %[[X2]], %{{.*}} {transposed} : {{.*}} -> tensor<32x2x8xf8E4M3FN>
// TENSORWISE-NEXT:  titan.scaled_matmul grad_weight {{.*}} {lhs_transposed, rhs_transposed} : (tensor<64x2x8xf8E5M2>, tensor<f32>, tensor<32x2x8xf8E4M3FN>, tensor<f32>) -> tensor<64x32xf32>

// Rowwise: e4m3 everywhere, one power-of-two scale per row/column along
// each GEMM's reduction dimension: forward rows of x and w along K;
// grad_input rows of dY and columns of w along N; grad_weight columns of
// dY and x along the tokens.
// ROWWISE-LABEL: func.func @forward_backward(
// ROWWISE:       titan.amax %{{.*}} {dims = array<i64: 2>} : tensor<2x8x32xf32> -> tensor<2x8x1xf32>
// ROWWISE-NEXT:  titan.float8_scale %{{.*}} for f8E4M3FN {round_to_power_of_2} : tensor<2x8x1xf32>
// ROWWISE:       titan.amax %arg1 {dims = array<i64: 1>} : tensor<64x32xf32> -> tensor<64x1xf32>
// ROWWISE:       titan.scaled_matmul linear {{.*}} : (tensor<2x8x32xf8E4M3FN>, tensor<2x8x1xf32>, tensor<64x32xf8E4M3FN>, tensor<64x1xf32>) -> tensor<2x8x64xf32>
// ROWWISE:       titan.amax %{{.*}} {dims = array<i64: 2>} : tensor<2x8x64xf32> -> tensor<2x8x1xf32>
// ROWWISE:       titan.amax %arg1 {dims = array<i64: 0>} : tensor<64x32xf32> -> tensor<1x32xf32>
// ROWWISE:       titan.scaled_matmul grad_input {{.*}} {rhs_transposed} : (tensor<2x8x64xf8E4M3FN>, tensor<2x8x1xf32>, tensor<32x64xf8E4M3FN>, tensor<1x32xf32>) -> tensor<2x8x32xf32>
// ROWWISE:       titan.amax %{{.*}} {dims = array<i64: 0, 1>} : tensor<2x8x64xf32> -> tensor<1x1x64xf32>
// ROWWISE:       titan.amax %{{.*}} {dims = array<i64: 0, 1>} : tensor<2x8x32xf32> -> tensor<1x1x32xf32>
// ROWWISE:       titan.scaled_matmul grad_weight {{.*}} {lhs_transposed, rhs_transposed} : (tensor<64x2x8xf8E4M3FN>, tensor<1x1x64xf32>, tensor<32x2x8xf8E4M3FN>, tensor<1x1x32xf32>) -> tensor<64x32xf32>
// ROWWISE-NOT:   f8E5M2

// Rowwise with a high-precision weight gradient: the forward as rowwise,
// grad_input from a rowwise e4m3 gradient and a tensorwise e4m3 weight,
// grad_weight as titan.linear_grad_weight.
// GWHP-LABEL: func.func @forward_backward(
// GWHP:       titan.scaled_matmul linear {{.*}} : (tensor<2x8x32xf8E4M3FN>, tensor<2x8x1xf32>, tensor<64x32xf8E4M3FN>, tensor<64x1xf32>)
// GWHP:       titan.amax %arg1 : tensor<64x32xf32> -> tensor<f32>
// GWHP-NEXT:  titan.float8_scale %{{.*}} for f8E4M3FN {round_to_power_of_2} : tensor<f32>
// GWHP:       titan.scaled_matmul grad_input {{.*}} {rhs_transposed} : (tensor<2x8x64xf8E4M3FN>, tensor<2x8x1xf32>, tensor<32x64xf8E4M3FN>, tensor<f32>)
// GWHP:       titan.linear_grad_weight %{{.*}}, %{{.*}} : (tensor<2x8x64xf32>, tensor<2x8x32xf32>) -> tensor<64x32xf32>
// GWHP-NOT:   "grad_weight"

// filter_fqns names the module: it stays a titan.linear.
// FILTERED-LABEL: func.func @forward(
// FILTERED:       titan.linear %{{.*}}, %arg1 :
// FILTERED-NOT:   titan.float8_linear

// Each linear kept in high precision is named, with the reason.
// REMARKS: remark: {{.*}}titan-float8: 'output' stays in high precision: filter_fqns names it ('output')
// REMARKS-DIMS-NOT: remark: {{.*}}filter_fqns
// REMARKS-DIMS: remark: {{.*}}titan-float8: 'output' stays in high precision: its weight (40 x 32) has a dimension not divisible by 16

// BAD-RECIPE: titan-float8: recipe 'blockwise' must be tensorwise, rowwise or rowwise_with_gw_hp

func.func @forward(%e: tensor<64x32xf32> {titan.param = "tok_embeddings.weight"},
                   %w: tensor<64x32xf32> {titan.param = "output.weight"},
                   %t: tensor<2x8xi32> {titan.input = "tokens"},
                   %l: tensor<2x8xi32> {titan.input = "labels"}) -> tensor<f32> {
  %x = titan.embedding %e[%t] : tensor<64x32xf32>, tensor<2x8xi32> -> tensor<2x8x32xf32> loc("tok_embeddings")
  %y = titan.linear %x, %w : (tensor<2x8x32xf32>, tensor<64x32xf32>) -> tensor<2x8x64xf32> loc("output")
  %loss, %loss_lse = titan.cross_entropy %y, %l : (tensor<2x8x64xf32>, tensor<2x8xi32>) -> (tensor<f32>, tensor<2x8xf32>) loc("loss")
  return %loss : tensor<f32>
}

// -----

// A weight with a dimension not divisible by 16 stays in high precision
// (TorchTitan's module_filter_fn), whatever the recipe.
// TENSORWISE-LABEL: func.func @forward(
// TENSORWISE:       titan.linear %{{.*}}, %arg1 :
func.func @forward(%e: tensor<64x32xf32> {titan.param = "tok_embeddings.weight"},
                   %w: tensor<40x32xf32> {titan.param = "output.weight"},
                   %t: tensor<2x8xi32> {titan.input = "tokens"},
                   %l: tensor<2x8xi32> {titan.input = "labels"}) -> tensor<f32> {
  %x = titan.embedding %e[%t] : tensor<64x32xf32>, tensor<2x8xi32> -> tensor<2x8x32xf32>
  %y = titan.linear %x, %w : (tensor<2x8x32xf32>, tensor<40x32xf32>) -> tensor<2x8x40xf32> loc("output")
  %loss, %loss_lse = titan.cross_entropy %y, %l : (tensor<2x8x40xf32>, tensor<2x8xi32>) -> (tensor<f32>, tensor<2x8xf32>)
  return %loss : tensor<f32>
}
