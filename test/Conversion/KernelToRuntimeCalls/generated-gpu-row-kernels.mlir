// RUN: titan-opt %s -kernel-to-runtime-calls="device-chip=sm_90a" | FileCheck %s --check-prefix=NVVM
// RUN: titan-opt %s --pass-pipeline="builtin.module(titan-lowering-pipeline{device-chip=sm_90a device-format=isa})" | FileCheck %s --check-prefix=PTX
// REQUIRES: cuda

// A row kernel on a GPU (RMSNorm with its residual add and its output's
// amax, 6 rows of 64 bf16): a block of 256 threads per row, so the launch
// passes 6 x 256 work items, from which the kernel takes its rows (a
// kernel alike but in its row count is the same function). Each thread sums the squares of its 16-byte
// packs of the row (8 bf16), the warp's sums combine by butterfly shuffles
// of f32, and every thread adds the warps' sums from shared memory in warp
// order (between barriers); then the threads compute the row's packs. The
// amax goes through the warp, the block and one atomic per block (its
// code comes first in the function's text, after the loop over rows). ptxas
// compiles it for sm_90a without spills.
// NVVM-LABEL: llvm.func @titan_rows(
// NVVM:       %[[ITEMS:.*]] = llvm.mlir.constant(1536 : i64) : i64
// NVVM:       llvm.call @titan_rt_launch_generated(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[ITEMS]], %{{.*}})
// NVVM:       llvm.mlir.global internal @__titan_row_sum_scratch() {addr_space = 3 : i32, alignment = 8 : i64} : !llvm.array<32 x f64>
// NVVM:       llvm.func @titan_generated_0({{.*}}, %[[ITEMS_ARG:.*]]: i64) attributes {nvvm.kernel}
// NVVM:       llvm.udiv %[[ITEMS_ARG]], %{{.*}} : i64
// NVVM:       llvm.atomicrmw umax
// NVVM:       llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<8xbf16>
// NVVM:       nvvm.shfl.sync  bfly %{{.*}} : f32 -> f32
// NVVM:       nvvm.barrier0
// NVVM:       llvm.load %{{.*}} : !llvm.ptr<3> -> f32
// NVVM:       nvvm.barrier0
// NVVM:       llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<8xbf16>
// NVVM:       llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<8xbf16>, !llvm.ptr<1>
// PTX:        llvm.mlir.global private constant @titan_kernels_image("//
// PTX-SAME:   .shared .align 8 .b8 __titan_row_sum_scratch[256]
// PTX-SAME:   ld.global.v4.b32
// PTX-SAME:   shfl.sync.bfly.b32
// PTX-SAME:   bar.sync
// PTX-SAME:   sqrt.rn.f32
// PTX-SAME:   st.global.v4.b32
// PTX-SAME:   atom.global.max.u32
module attributes {kernel.arena_bytes = 65536 : i64, kernel.slots = {"param:w" = array<i64: 8192, 128>}} {
  func.func @rows(%w: memref<64xbf16> {kernel.slot = "param:w"}) {
    %s = kernel.stream 0
    %a = kernel.alloc temporary {offset = 0 : i64} : memref<6x64xbf16>
    %b = kernel.alloc temporary {offset = 1024 : i64} : memref<6x64xbf16>
    %h = kernel.alloc temporary {offset = 2048 : i64} : memref<6x64xbf16>
    %y = kernel.alloc temporary {offset = 3072 : i64} : memref<6x64xbf16>
    %m = kernel.alloc temporary {offset = 4096 : i64} : memref<f32>
    kernel.generic ins(%a, %b, %w : memref<6x64xbf16>, memref<6x64xbf16>, memref<64xbf16>) outs(%h, %y : memref<6x64xbf16>, memref<6x64xbf16>) reduce [#kernel.reduction<absmax>](%m : memref<f32>) on %s {
    ^bb0(%x0: bf16, %x1: bf16, %g: bf16):
      %e0 = arith.extf %x0 : bf16 to f32
      %e1 = arith.extf %x1 : bf16 to f32
      %sum = arith.addf %e0, %e1 : f32
      %hb = arith.truncf %sum : f32 to bf16
      %x = arith.extf %hb : bf16 to f32
      %sq = arith.mulf %x, %x : f32
      %ss = kernel.row_sum %sq : f32
      %c = arith.constant 64.0 : f32
      %mean = arith.divf %ss, %c : f32
      %eps = arith.constant 1.0e-5 : f32
      %v = arith.addf %mean, %eps : f32
      %r = math.sqrt %v : f32
      %one = arith.constant 1.0 : f32
      %inv = arith.divf %one, %r : f32
      %n = arith.mulf %x, %inv : f32
      %gf = arith.extf %g : bf16 to f32
      %o = arith.mulf %n, %gf : f32
      %ob = arith.truncf %o : f32 to bf16
      %oe = arith.extf %ob : bf16 to f32
      kernel.yield %hb, %ob, %oe : bf16, bf16, f32
    } {row_length = 64 : i64}
    return
  }
}
