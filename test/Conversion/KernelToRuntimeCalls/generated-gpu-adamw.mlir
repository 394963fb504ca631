// RUN: titan-opt %s --pass-pipeline="builtin.module(kernel-generate-pointwise,kernel-fuse-horizontal,kernel-plan-memory,titan-lowering-pipeline{device-chip=sm_90a device-format=isa})" | FileCheck %s --check-prefix=PTX
// RUN: titan-opt %s --pass-pipeline="builtin.module(kernel-generate-pointwise,kernel-fuse-horizontal,kernel-plan-memory,titan-lowering-pipeline{device-chip=sm_90a})" | FileCheck %s --check-prefix=CUBIN
// REQUIRES: cuda

// AdamW's generated kernels on a GPU (generated-adamw.test runs them on
// the host): the step's scalars, one thread's work, with the bias
// corrections' f64 powers from libdevice (CUDA's pow, as the hand-written
// kernel called), the clipping coefficient's reciprocal correctly rounded
// and no fma; then the updates of a [4096 x 64] and a [512] parameter
// as one launch of two segments, in 16-byte packs of 4, the four scalars
// loaded once a thread, every product and sum rounded (sqrt.rn, div.rn,
// no fma: the CPU's bits). ptxas, with --warn-on-spills
// --warning-as-error, accepts both.
// PTX:     .func  (.param .b64 func_retval0) __internal_accurate_pow
// PTX:     .visible .entry titan_generated_0(
// PTX-NOT: fma
// PTX:     sqrt.rn.f64
// PTX-NOT: fma
// PTX:     rcp.rn.f32
// PTX-NOT: fma
// PTX:     mul.rn.f64
// PTX-NOT: fma
// PTX:     call.uni (retval0), __internal_accurate_pow
// PTX-NOT: fma
// PTX:     div.rn.f64
// PTX-NOT: fma
// PTX:     .visible .entry titan_generated_1(
// PTX-COUNT-4: ld.global.b32
// PTX-COUNT-4: ld.global.v4.b32
// PTX-NOT: fma
// PTX:     sqrt.rn.f32
// PTX-NOT: fma
// PTX:     div.rn.f32
// PTX-NOT: fma
// PTX:     st.global.v4.b32
// PTX-NOT: fma
// PTX:     ret;
// PTX-NOT: .entry
// CUBIN:   llvm.mlir.global private constant @titan_kernels_image("\7FELF
module {
  func.func @step(%lr: memref<f32> {kernel.slot = "param:lr"},
                  %norm: memref<f32> {kernel.slot = "param:norm"},
                  %step: memref<i64> {kernel.slot = "param:step"},
                  %p1: memref<4096x64xf32> {kernel.slot = "param:p1"},
                  %g1: memref<4096x64xf32> {kernel.slot = "grad:p1"},
                  %m1: memref<4096x64xf32> {kernel.slot = "exp_avg:p1"},
                  %v1: memref<4096x64xf32> {kernel.slot = "exp_avg_sq:p1"},
                  %p2: memref<512xf32> {kernel.slot = "param:p2"},
                  %g2: memref<512xf32> {kernel.slot = "grad:p2"},
                  %m2: memref<512xf32> {kernel.slot = "exp_avg:p2"},
                  %v2: memref<512xf32> {kernel.slot = "exp_avg_sq:p2"}) {
    %s = kernel.stream 0
    %c = kernel.alloc temporary : memref<f32>
    %d = kernel.alloc temporary : memref<f32>
    %ss = kernel.alloc temporary : memref<f32>
    %bc = kernel.alloc temporary : memref<f32>
    kernel.call "adamw_scalars"(%lr, %norm, %step : memref<f32>, memref<f32>, memref<i64>) outs(%c, %d, %ss, %bc : memref<f32>, memref<f32>, memref<f32>, memref<f32>) on %s params [9.000000e-01, 9.500000e-01, 1.000000e-01, 1.000000e+00] loc("optimizer")
    kernel.call "adamw"(%p1, %g1, %m1, %v1, %c, %d, %ss, %bc : memref<4096x64xf32>, memref<4096x64xf32>, memref<4096x64xf32>, memref<4096x64xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%p1, %m1, %v1 : memref<4096x64xf32>, memref<4096x64xf32>, memref<4096x64xf32>) on %s params [9.000000e-01, 9.500000e-01, 1.000000e-08] loc("layers.0.attention.wq.weight")
    kernel.call "adamw"(%p2, %g2, %m2, %v2, %c, %d, %ss, %bc : memref<512xf32>, memref<512xf32>, memref<512xf32>, memref<512xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%p2, %m2, %v2 : memref<512xf32>, memref<512xf32>, memref<512xf32>) on %s params [9.000000e-01, 9.500000e-01, 1.000000e-08] loc("layers.0.attention_norm.weight")
    return
  }
}
