// RUN: titan-opt %s --pass-pipeline="builtin.module(kernel-generate-pointwise,kernel-plan-memory,titan-lowering-pipeline{device-chip=sm_90a device-format=isa})" | FileCheck %s --check-prefix=PTX
// RUN: titan-opt %s --pass-pipeline="builtin.module(kernel-generate-pointwise,kernel-plan-memory,titan-lowering-pipeline{device-chip=sm_90a})" | FileCheck %s --check-prefix=CUBIN
// REQUIRES: cuda

// Loss parallel's generated pieces on a GPU (generated-loss-parallel.test
// runs them on the host), an f32 vocabulary shard [16 x 512]: row_max (a
// block a row, packs of 4, max.NaN over the warp and the block), sum_exp
// (the row's max read once a row, exp's polynomial), target_logit (the
// row's label, i32, and the slice's start, broadcast), the loss from the
// statistics (its rows' values and their f64 mean in one kernel of one
// row) and its gradients (correctly rounded divisions, packs of 4). ptxas,
// with --warn-on-spills --warning-as-error, accepts them.
// PTX:     .visible .entry titan_generated_0(
// PTX:     ld.global.v4.b32
// PTX:     max.NaN.f32
// PTX:     shfl.sync.bfly.b32
// PTX:     .visible .entry titan_generated_1(
// PTX:     ld.global.b32
// PTX:     ld.global.v4.b32
// PTX:     fma.rn.f32
// PTX:     shfl.sync.bfly.b32
// PTX:     .visible .entry titan_generated_2(
// PTX:     ld.global.s32
// PTX:     ld.global.v4.b32
// PTX:     shfl.sync.bfly.b32
// PTX:     .visible .entry titan_generated_3(
// PTX:     ld.global.v4.b32
// PTX:     add.rn.f64
// PTX:     cvt.rn.f32.f64
// PTX:     .visible .entry titan_generated_4(
// PTX:     div.rn.f32
// PTX:     st.global.v4.b32
// PTX-NOT: .entry
// CUBIN:   llvm.mlir.global private constant @titan_kernels_image("\7FELF
module {
  func.func @step(%part: memref<16x512xf32> {kernel.slot = "param:part"},
                  %labels: memref<16xi32> {kernel.slot = "param:labels"},
                  %start: memref<i32> {kernel.slot = "param:start"},
                  %max: memref<16xf32> {kernel.slot = "param:max"},
                  %grad: memref<f32> {kernel.slot = "param:grad"},
                  %localmax: memref<16xf32> {kernel.slot = "param:localmax"},
                  %sum: memref<16xf32> {kernel.slot = "param:sum"},
                  %target: memref<16xf32> {kernel.slot = "param:target"},
                  %loss: memref<f32> {kernel.slot = "param:loss"},
                  %dsum: memref<16xf32> {kernel.slot = "param:dsum"},
                  %dtarget: memref<16xf32> {kernel.slot = "param:dtarget"}) {
    %s = kernel.stream 0
    kernel.call "row_max"(%part : memref<16x512xf32>) outs(%localmax : memref<16xf32>) on %s params []
    kernel.call "sum_exp"(%part, %max : memref<16x512xf32>, memref<16xf32>) outs(%sum : memref<16xf32>) on %s params []
    kernel.call "target_logit"(%part, %labels, %start : memref<16x512xf32>, memref<16xi32>, memref<i32>) outs(%target : memref<16xf32>) on %s params [1]
    kernel.call "cross_entropy_from_stats"(%max, %sum, %target : memref<16xf32>, memref<16xf32>, memref<16xf32>) outs(%loss : memref<f32>) on %s params []
    kernel.call "cross_entropy_from_stats_grad"(%sum, %grad : memref<16xf32>, memref<f32>) outs(%dsum, %dtarget : memref<16xf32>, memref<16xf32>) on %s params []
    return
  }
}
