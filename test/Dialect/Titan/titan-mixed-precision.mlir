// RUN: titan-opt %s -split-input-file -titan-mixed-precision -verify-diagnostics | FileCheck %s
// RUN: titan-opt %s -split-input-file -titan-mixed-precision -titan-autodiff=regather-params -dist-narrow-gathers -verify-diagnostics | FileCheck %s --check-prefix=GRAD

// Single rank: each f32 parameter gets one bf16 copy, read by every use;
// activations take bf16; the fused cross-entropy reads the bf16 logits
// (computing in f32: no f32 copy of the logits; its lse stays f32).
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %[[W:.*]]: tensor<8x8xf32> {titan.param = "w"}, %[[E:.*]]: tensor<16x8xf32> {titan.param = "e"}
// CHECK-DAG:  %[[E16:.*]] = titan.cast %[[E]] : tensor<16x8xf32> to tensor<16x8xbf16>
// CHECK-DAG:  %[[W16:.*]] = titan.cast %[[W]] : tensor<8x8xf32> to tensor<8x8xbf16>
// CHECK:      %[[X:.*]] = titan.embedding %[[E16]][%{{.*}}] : tensor<16x8xbf16>, tensor<2x4xi32> -> tensor<2x4x8xbf16>
// CHECK:      %[[Y:.*]] = titan.linear %[[X]], %[[W16]] : (tensor<2x4x8xbf16>, tensor<8x8xbf16>) -> tensor<2x4x8xbf16>
// CHECK:      %[[H:.*]] = titan.add %[[X]], %[[Y]] : tensor<2x4x8xbf16>
// CHECK:      %[[Z:.*]] = titan.linear %[[H]], %[[E16]] : (tensor<2x4x8xbf16>, tensor<16x8xbf16>) -> tensor<2x4x16xbf16>
// CHECK-NOT:  titan.cast %[[Z]]
// CHECK:      titan.cross_entropy %[[Z]], %{{.*}} : (tensor<2x4x16xbf16>, tensor<2x4xi32>) -> (tensor<f32>, tensor<2x4xf32>)
// The gradients of the parameters come back as f32: the casts' adjoints;
// the logits' gradient is bf16, rounded once from the kernel's f32.
// GRAD-LABEL: func.func @forward_backward(
// GRAD:       titan.cross_entropy_grad %{{.*}} : (tensor<2x4x16xbf16>, tensor<2x4xi32>, tensor<2x4xf32>, tensor<f32>) -> tensor<2x4x16xbf16>
// GRAD:       titan.embedding_grad %{{.*}}, %{{.*}} : (tensor<2x4x8xbf16>, tensor<2x4xi32>) -> tensor<16x8xbf16>
// GRAD:       titan.cast %{{.*}} : tensor<16x8xbf16> to tensor<16x8xf32>
// GRAD:       return %{{.*}} : tensor<f32>, tensor<8x8xf32>, tensor<16x8xf32>
func.func @forward(%w: tensor<8x8xf32> {titan.param = "w"}, %e: tensor<16x8xf32> {titan.param = "e"},
                   %t: tensor<2x4xi32> {titan.input = "tokens"}, %l: tensor<2x4xi32> {titan.input = "labels"}) -> tensor<f32> {
  %x = titan.embedding %e[%t] : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
  %y = titan.linear %x, %w : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %h = titan.add %x, %y : tensor<2x4x8xf32>
  %z = titan.linear %h, %e : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  %loss, %loss_lse = titan.cross_entropy %z, %l : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> (tensor<f32>, tensor<2x4xf32>)
  return %loss : tensor<f32>
}

// -----

// FSDP: the copy is made of the gathered parameter, so the gradient is cast
// to f32 before its reduce-scatter (fp32 reduce); dist-narrow-gathers then
// moves the cast before the gather, which moves bf16 (FSDP2's mixed
// precision), in the forward and in the backward's re-gather.
// CHECK-LABEL: func.func @forward(
// CHECK:      %[[G:.*]] = dist.wait %{{.*}} : !dist.future<tensor<8x8xf32>>
// CHECK-NEXT: %[[G16:.*]] = titan.cast %[[G]] : tensor<8x8xf32> to tensor<8x8xbf16>
// GRAD-LABEL: func.func @forward_backward(
// GRAD:       %[[C:.*]] = titan.cast %{{.*}} : tensor<4x8xf32> to tensor<4x8xbf16>
// GRAD-NEXT:  %[[F:.*]] = dist.all_gather_start %[[C]] axes ["dp_shard"] dim 0 : tensor<4x8xbf16> -> !dist.future<tensor<8x8xbf16>>
// GRAD:       dist.all_gather_start %{{.*}} axes ["dp_shard"] dim 0 : tensor<4x8xbf16> -> !dist.future<tensor<8x8xbf16>>
// GRAD:       %[[D:.*]] = titan.cast %{{.*}} : tensor<8x8xbf16> to tensor<8x8xf32>
// GRAD-NEXT:  dist.reduce_scatter_start %[[D]] axes ["dp_shard"] dim 0 : tensor<8x8xf32> -> !dist.future<tensor<4x8xf32>>
// GRAD-NOT:   dist.all_gather_start %{{.*}} : tensor<4x8xf32>
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 2, cp = 1, tp = 1>} {
  func.func @forward(%w: tensor<4x8xf32> {titan.param = "w", dist.sharding = #dist.sharding<[["dp_shard"], []]>},
                     %t: tensor<2xi32> {titan.input = "tokens"}, %l: tensor<2xi32> {titan.input = "labels"},
                     %e: tensor<16x8xf32> {titan.param = "e"}) -> tensor<f32> {
    %x = titan.embedding %e[%t] : tensor<16x8xf32>, tensor<2xi32> -> tensor<2x8xf32>
    %f = dist.all_gather_start %w axes ["dp_shard"] dim 0 : tensor<4x8xf32> -> !dist.future<tensor<8x8xf32>>
    %g = dist.wait %f : !dist.future<tensor<8x8xf32>>
    %y = titan.linear %x, %g : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
    %s = titan.silu %y : tensor<2x8xf32>
    %z = titan.linear %s, %g : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
    %loss, %loss_lse = titan.cross_entropy %z, %l : (tensor<2x8xf32>, tensor<2xi32>) -> (tensor<f32>, tensor<2xf32>)
    return %loss : tensor<f32>
  }
}

// -----

// expected-error @+1 {{'func.func' op parameter 'w' must be f32 for mixed precision (master weights), got 'tensor<4xbf16>'}}
func.func @forward(%w: tensor<4xbf16> {titan.param = "w"}) -> tensor<f32> {
  %l = titan.fill 0.0 : tensor<f32>
  return %l : tensor<f32>
}
