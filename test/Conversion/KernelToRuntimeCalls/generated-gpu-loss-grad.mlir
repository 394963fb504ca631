// RUN: titan-opt %s --pass-pipeline="builtin.module(kernel-generate-pointwise,kernel-plan-memory,titan-lowering-pipeline{device-chip=sm_90a device-format=isa})" | FileCheck %s --check-prefix=PTX
// RUN: titan-opt %s --pass-pipeline="builtin.module(kernel-generate-pointwise,kernel-plan-memory,titan-lowering-pipeline{device-chip=sm_90a})" | FileCheck %s --check-prefix=CUBIN
// REQUIRES: cuda

// The loss's generated gradients on a GPU (generated-loss-grad.test runs
// them on the host): cross_entropy_grad of bf16 logits [16 x 1024] reads
// them and writes the gradient in 16-byte packs of 8, each lane's row
// label (i32) and f32 log-sum-exp through their maps (one row for the
// pack: LLVM loads them once a pack); loss parallel's sum_exp_grad +
// target_logit_grad + add + cast of an f32 shard [16 x 512] is one kernel
// in packs of 4. ptxas, with --warn-on-spills --warning-as-error,
// accepts both.
// PTX:     .visible .entry titan_generated_0(
// PTX:     ld.global.v4.b32
// PTX:     ld.global.s32
// PTX:     ld.global.b32
// PTX:     st.global.v4.b32
// PTX:     .visible .entry titan_generated_1(
// PTX:     ld.global.v4.b32
// PTX:     st.global.v4.b16
// PTX-NOT: .entry
// CUBIN:   llvm.mlir.global private constant @titan_kernels_image("\7FELF
module {
  func.func @step(%logits: memref<16x1024xbf16> {kernel.slot = "param:logits"},
                  %labels: memref<16xi32> {kernel.slot = "param:labels"},
                  %lse: memref<16xf32> {kernel.slot = "param:lse"},
                  %grad: memref<f32> {kernel.slot = "param:grad"},
                  %dlogits: memref<16x1024xbf16> {kernel.slot = "param:dlogits"},
                  %part: memref<16x512xf32> {kernel.slot = "param:part"},
                  %max: memref<16xf32> {kernel.slot = "param:max"},
                  %dsum: memref<16xf32> {kernel.slot = "param:dsum"},
                  %dtarget: memref<16xf32> {kernel.slot = "param:dtarget"},
                  %start: memref<i32> {kernel.slot = "param:start"},
                  %dpart: memref<16x512xbf16> {kernel.slot = "param:dpart"}) {
    %s = kernel.stream 0
    kernel.call "cross_entropy_grad"(%logits, %labels, %lse, %grad : memref<16x1024xbf16>, memref<16xi32>, memref<16xf32>, memref<f32>) outs(%dlogits : memref<16x1024xbf16>) on %s params []
    %a = kernel.alloc temporary : memref<16x512xf32>
    %b = kernel.alloc temporary : memref<16x512xf32>
    %c = kernel.alloc temporary : memref<16x512xf32>
    kernel.call "sum_exp_grad"(%part, %max, %dsum : memref<16x512xf32>, memref<16xf32>, memref<16xf32>) outs(%a : memref<16x512xf32>) on %s params []
    kernel.call "target_logit_grad"(%dtarget, %labels, %start : memref<16xf32>, memref<16xi32>, memref<i32>) outs(%b : memref<16x512xf32>) on %s params [1]
    kernel.call "add"(%a, %b : memref<16x512xf32>, memref<16x512xf32>) outs(%c : memref<16x512xf32>) on %s params []
    kernel.call "cast"(%c : memref<16x512xf32>) outs(%dpart : memref<16x512xbf16>) on %s params []
    return
  }
}
