// RUN: titan-opt %s -kernel-to-runtime-calls="device-chip=sm_90a" | FileCheck %s --check-prefix=NVVM
// RUN: titan-opt %s --pass-pipeline="builtin.module(titan-lowering-pipeline{device-chip=sm_90a device-format=isa})" | FileCheck %s --check-prefix=PTX
// REQUIRES: cuda

// A row kernel with a column sum on a GPU (RMSNorm's backward, 6 rows of
// 64 bf16 in 4 row blocks, its dx added into a residual gradient): a block
// of 256 threads per row block (4 x 256 work items), each thread zeroing
// then adding to the partials of its own columns (those of its packs, 8
// f32 a vector access, so no other thread touches them and no barrier
// orders them), the rows and blocks built in. A second launch over the 64 columns adds each column's
// 4 partials in block order into the f32 total. ptxas compiles both for
// sm_90a without spills.
// NVVM-LABEL: llvm.func @titan_column_sums(
// NVVM:       llvm.mlir.addressof @__titan_str_titan_generated_0 :
// NVVM-NEXT:  llvm.mlir.constant(7 : i64) : i64
// NVVM-NEXT:  %[[ITEMS:.*]] = llvm.mlir.constant(1024 : i64) : i64
// NVVM-NEXT:  %[[ONE:.*]] = llvm.mlir.constant(1 : i64) : i64
// NVVM-NEXT:  llvm.call @titan_rt_launch_generated(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[ITEMS]], %[[ONE]])
// NVVM:       llvm.mlir.addressof @__titan_str_titan_generated_0_totals :
// NVVM-NEXT:  llvm.mlir.constant(7 : i64) : i64
// NVVM-NEXT:  %[[COLS:.*]] = llvm.mlir.constant(64 : i64) : i64
// NVVM-NEXT:  %[[NONE:.*]] = llvm.mlir.constant(0 : i64) : i64
// NVVM-NEXT:  llvm.call @titan_rt_launch_generated(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[COLS]], %[[NONE]])
// NVVM:       llvm.func @titan_generated_0({{.*}}) attributes {nvvm.kernel}
// NVVM:       nvvm.read.ptx.sreg.ctaid.x
// NVVM:       llvm.store %{{.*}}, %{{.*}} {alignment = 32 : i64} : vector<8xf32>, !llvm.ptr<1>
// NVVM:       llvm.sdiv
// NVVM:       nvvm.shfl.sync  bfly %{{.*}} : f32 -> f32
// NVVM:       llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<8xbf16>
// NVVM:       llvm.load %{{.*}} {alignment = 32 : i64} : !llvm.ptr<1> -> vector<8xf32>
// NVVM:       llvm.fadd
// NVVM:       llvm.store %{{.*}}, %{{.*}} {alignment = 32 : i64} : vector<8xf32>, !llvm.ptr<1>
// NVVM:       llvm.func @titan_generated_0_totals({{.*}}) attributes {nvvm.kernel}
// NVVM:       llvm.load %{{.*}} : !llvm.ptr<1> -> f32
// NVVM:       llvm.fadd %{{.*}}, %{{.*}} : f32
// NVVM:       llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr<1>
// PTX:        llvm.mlir.global private constant @titan_kernels_image("//
// PTX-SAME:   .entry titan_generated_0(
// PTX-SAME:   sqrt.rn.f32
// PTX-SAME:   ld.global.v4.b32
// PTX-SAME:   st.global.v4.b32
// PTX-SAME:   .entry titan_generated_0_totals(
module attributes {kernel.arena_bytes = 4096 : i64, kernel.slots = {"param:dwf" = array<i64: 1792, 256>, "param:dy" = array<i64: 1024, 768>, "param:r" = array<i64: 2048, 768>, "param:w" = array<i64: 0, 128>, "param:x" = array<i64: 256, 768>}} {
  func.func @column_sums(%arg0: memref<64xbf16> {kernel.slot = "param:w"}, %arg1: memref<6x64xbf16> {kernel.slot = "param:x"}, %arg2: memref<6x64xbf16> {kernel.slot = "param:dy"}, %arg3: memref<64xf32> {kernel.slot = "param:dwf"}, %arg4: memref<6x64xbf16> {kernel.slot = "param:r"}) {
    %0 = kernel.stream 0
    %1 = kernel.alloc temporary {offset = 3840 : i64} : memref<64xf32>
    %2 = kernel.alloc workspace {offset = 2816 : i64} : memref<4x1x64xf32>
    kernel.generic ins(%arg4, %arg1, %arg0, %arg2 : memref<6x64xbf16>, memref<6x64xbf16>, memref<64xbf16>, memref<6x64xbf16>) outs(%arg4 : memref<6x64xbf16>) workspace(%2 : memref<4x1x64xf32>) reduce [#kernel.reduction<column_sum>](%1 : memref<64xf32>) on %0 {
    ^bb0(%arg5: bf16, %arg6: bf16, %arg7: bf16, %arg8: bf16):
      %3 = arith.extf %arg6 : bf16 to f32
      %4 = arith.extf %arg7 : bf16 to f32
      %5 = arith.extf %arg8 : bf16 to f32
      %cst = arith.constant 6.400000e+01 : f32
      %6 = arith.mulf %3, %3 : f32
      %7 = kernel.row_sum %6 : f32
      %8 = arith.divf %7, %cst : f32
      %cst_0 = arith.constant 9.99999974E-6 : f32
      %9 = arith.addf %8, %cst_0 : f32
      %10 = math.sqrt %9 : f32
      %cst_1 = arith.constant 1.000000e+00 : f32
      %11 = arith.divf %cst_1, %10 : f32
      %12 = arith.mulf %5, %4 : f32
      %13 = arith.mulf %12, %3 : f32
      %14 = kernel.row_sum %13 : f32
      %15 = arith.mulf %3, %11 : f32
      %16 = arith.mulf %14, %11 : f32
      %17 = arith.divf %16, %cst : f32
      %18 = arith.mulf %15, %17 : f32
      %19 = arith.subf %12, %18 : f32
      %20 = arith.mulf %11, %19 : f32
      %21 = arith.mulf %5, %15 : f32
      %22 = arith.truncf %20 : f32 to bf16
      %23 = arith.extf %arg5 : bf16 to f32
      %24 = arith.extf %22 : bf16 to f32
      %25 = arith.addf %23, %24 : f32
      %26 = arith.truncf %25 : f32 to bf16
      kernel.yield %26, %21 : bf16, f32
    } {row_length = 64 : i64}
    kernel.generic ins(%1 : memref<64xf32>) outs(%arg3 : memref<64xf32>) on %0 {
    ^bb0(%arg5: f32):
      %3 = arith.truncf %arg5 : f32 to bf16
      %4 = arith.extf %3 : bf16 to f32
      kernel.yield %4 : f32
    }
    return
  }
}
