// RUN: titan-opt %s -kernel-to-runtime-calls="device-chip=sm_90a" | FileCheck %s --check-prefix=NVVM
// RUN: titan-opt %s --pass-pipeline="builtin.module(titan-lowering-pipeline{device-chip=sm_90a device-format=isa})" | FileCheck %s --check-prefix=PTX
// REQUIRES: cuda

// Reads across indices on a GPU: RoPE's kernel (bf16 x [1 x 4 x 2 x 8],
// its cos/sin table [4 x 4 x 2]) reads x at the index in 16-byte packs of
// 8 and, per element of the pack, x's pair partner and the table through
// their maps, element by element, computed unsigned (the verifier proved
// the dividends never negative; LLVM makes the divisions by constants
// multiplications); kernel.index is the pack's first index plus the lane.
//
// A kernel in tiles with a segment element by element (a cast beside a
// cast-transpose): the cast's 64 bf16 elements
// take packs of 4 (16 bytes of its f32 result) in a grid-stride loop of
// their own, the transpose its 32 x 32 tiles; the launch passes the
// larger of the tiles' 1 x 256 work items and the 16 packs.
// NVVM-LABEL: llvm.func @titan_step(
// NVVM:       %[[NAME:.*]] = llvm.mlir.addressof @__titan_str_titan_generated_1 : !llvm.ptr
// NVVM:       %[[ITEMS:.*]] = llvm.mlir.constant(256 : i64) : i64
// NVVM:       llvm.call @titan_rt_launch_generated(%{{.*}}, %[[NAME]], %{{.*}}, %{{.*}}, %[[ITEMS]], %{{.*}})
// NVVM-LABEL: llvm.func @titan_generated_0(
// NVVM:       llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<8xbf16>
// NVVM:       llvm.udiv
// NVVM:       llvm.urem
// NVVM:       llvm.store %{{.*}} {alignment = 16 : i64} : vector<8xbf16>, !llvm.ptr<1>
// NVVM-LABEL: llvm.func @titan_generated_1(
// NVVM:       nvvm.barrier0
// NVVM:       llvm.load %{{.*}} {alignment = 8 : i64} : !llvm.ptr<1> -> vector<4xbf16>
// NVVM:       llvm.store %{{.*}} {alignment = 16 : i64} : vector<4xf32>, !llvm.ptr<1>
// PTX:        .visible .entry titan_generated_0(
// PTX:        ld.global.v4.b32
// PTX:        st.global.v4.b32
// PTX:        .visible .entry titan_generated_1(
// PTX:        bar.sync
// PTX:        ld.global.v4.b16
// PTX:        st.global.v4.b32
module attributes {kernel.arena_bytes = 8192 : i64, kernel.slots = {"param:x" = array<i64: 0, 128>, "param:f" = array<i64: 256, 128>}} {
  func.func @step(%x: memref<1x4x2x8xbf16> {kernel.slot = "param:x"}, %f: memref<4x4x2xf32> {kernel.slot = "param:f"}) {
    %s = kernel.stream 0
    %y = kernel.alloc temporary {offset = 512 : i64} : memref<1x4x2x8xbf16>
    kernel.generic ins(%x, %x, %f, %f : memref<1x4x2x8xbf16>, memref<1x4x2x8xbf16>, memref<4x4x2xf32>, memref<4x4x2xf32>) outs(%y : memref<1x4x2x8xbf16>) on %s {
    ^bb0(%a: bf16, %p: bf16, %c: f32, %sn: f32):
      %x1 = arith.extf %a : bf16 to f32
      %p1 = arith.extf %p : bf16 to f32
      %i = kernel.index : i64
      %one = arith.constant 1 : i64
      %zero = arith.constant 0 : i64
      %par = arith.andi %i, %one : i64
      %odd = arith.cmpi ne, %par, %zero : i64
      %ps = arith.mulf %p1, %sn : f32
      %nps = arith.negf %ps : f32
      %t = arith.select %odd, %ps, %nps : f32
      %xc = arith.mulf %x1, %c : f32
      %r = arith.addf %xc, %t : f32
      %rb = arith.truncf %r : f32 to bf16
      kernel.yield %rb : bf16
    } {input_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ((d0 floordiv 2) * 2 - d0 mod 2 + 1)>, affine_map<(d0) -> (((d0 floordiv 16) mod 4) * 8 + ((d0 mod 8) floordiv 2) * 2)>, affine_map<(d0) -> (((d0 floordiv 16) mod 4) * 8 + ((d0 mod 8) floordiv 2) * 2 + 1)>]}
    %t = kernel.alloc temporary {offset = 1024 : i64} : memref<8x8xbf16>
    %tt = kernel.alloc temporary {offset = 1280 : i64} : memref<8x8xbf16>
    %g = kernel.alloc temporary {offset = 1536 : i64} : memref<64xbf16>
    %gf = kernel.alloc temporary {offset = 2048 : i64} : memref<64xf32>
    kernel.generic ins(%t, %g : memref<8x8xbf16>, memref<64xbf16>) outs(%tt, %gf : memref<8x8xbf16>, memref<64xf32>) on %s {
    ^bb0(%a: bf16, %b: bf16):
      %w = arith.extf %b : bf16 to f32
      kernel.yield %a, %w : bf16, f32
    } {segments = array<i64: 1, 1, 0, 1, 1, 0>, transposed_outputs = array<i64: 0>}
    return
  }
}
