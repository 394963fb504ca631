// RUN: titan-opt %s --pass-pipeline="builtin.module(kernel-generate-pointwise,kernel-plan-memory,titan-lowering-pipeline{device-chip=sm_90a device-format=isa})" | FileCheck %s --check-prefix=PTX
// RUN: titan-opt %s --pass-pipeline="builtin.module(kernel-generate-pointwise,kernel-plan-memory,titan-lowering-pipeline{device-chip=sm_90a})" | FileCheck %s --check-prefix=CUBIN
// REQUIRES: cuda

// The cross-entropy's generated forward on a GPU (generated-cross-entropy
// .test runs it on the host): bf16 logits [16 x 4096], a block of 256
// threads a row, one read of the row. Each row's label is loaded once
// (ld.global.s32); each thread takes its 16-byte packs of 8 (one
// ld.global.v4 loop), keeping a running log-sum-exp (the pack's max
// (max.NaN: NaN wins), one rescale of its sum, then each element's
// exp(x - max), MLIR's polynomial, fma.rn) and the label's logit; the
// warp merges the (max, sum) pairs and the target sums by butterfly
// shuffles, the block through shared memory in warp order (the pair's
// halves in two slots, the target in one: three st.shared, four
// barriers); thread
// 0 writes the lse (max + CUDA's logf from libdevice, inlined) and the
// row's loss. The second kernel averages the 16 losses in f64 (64-bit
// values shuffled as two halves). ptxas, with --warn-on-spills
// --warning-as-error, accepts both.
// PTX:     .visible .entry titan_generated_0(
// PTX:     ld.global.s32
// PTX:     ld.global.v4.b32
// PTX:     max.NaN.f32
// PTX:     fma.rn.f32
// PTX-NOT: ld.global.v4
// PTX:     shfl.sync.bfly.b32
// PTX:     st.shared.b32
// PTX:     st.shared.b32
// PTX:     bar.sync
// PTX:     st.shared.b32
// PTX:     bar.sync
// PTX:     st.global.b32
// PTX:     st.global.b32
// PTX:     .visible .entry titan_generated_1(
// PTX:     ld.global.v4.b32
// PTX:     cvt.f64.f32
// PTX:     add.rn.f64
// PTX:     shfl.sync.bfly.b32
// PTX:     st.shared.b64
// PTX:     cvt.rn.f32.f64
// PTX:     st.global.b32
// PTX-NOT: .entry
// CUBIN:   llvm.mlir.global private constant @titan_kernels_image("\7FELF
module {
  func.func @step(%logits: memref<16x4096xbf16> {kernel.slot = "param:logits"},
                  %labels: memref<16xi32> {kernel.slot = "param:labels"},
                  %loss: memref<f32> {kernel.slot = "param:loss"},
                  %lse: memref<16xf32> {kernel.slot = "param:lse"}) {
    %s = kernel.stream 0
    kernel.call "cross_entropy"(%logits, %labels : memref<16x4096xbf16>, memref<16xi32>) outs(%loss, %lse : memref<f32>, memref<16xf32>) on %s params []
    return
  }
}
