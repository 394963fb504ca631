// RUN: titan-opt %s -kernel-to-runtime-calls="device-chip=sm_90a" | FileCheck %s --check-prefix=NVVM
// RUN: titan-opt %s --pass-pipeline="builtin.module(titan-lowering-pipeline{device-chip=sm_90a device-format=isa})" | FileCheck %s --check-prefix=PTX
// RUN: titan-opt %s --pass-pipeline="builtin.module(titan-lowering-pipeline{device-chip=sm_90a})" | FileCheck %s --check-prefix=CUBIN
// REQUIRES: cuda

// On a GPU target each generated kernel is an NVVM kernel of the module's
// gpu.module (its NVVM target is the chip): a grid-stride loop over packs
// of elements, its buffers as global pointers. A pack is 16 bytes of the
// widest element type (8 bf16, 2 f64) when the element count is a multiple
// and every buffer's arena offset is aligned to its pack: one vector load
// or store per buffer and pack. The fourth kernel (33 elements) takes one
// element at a time. The step launches it through
// titan_rt_launch_generated with the compiled image, its name, the buffers,
// their count, the packs (32 bf16 elements: 4 packs of 8) and how many are
// reductions (the last buffers), which the launch zeroes first.
//
// The sixth is two kernels in one launch (horizontal fusion): segments of
// 32 and 64 bf16 elements, 4 and 8 packs of 8, each in its own grid-stride
// loop; the launch passes their 12 packs.
//
// The seventh is two kernels in tiles in one launch (a cast-transpose and
// a float8 transpose, horizontally fused): each segment loops over its own
// tiles (6 of 40 x 72, 2 of 64 x 32), both through one shared tile (each
// loop ends with a barrier); the launch passes the larger segment's 6
// tiles x 256 work items.
//
// The fifth kernel writes a float8 cast in both layouts and reduces the
// absmax (Transformer Engine's cast-transpose): its 40 x 72 elements run in
// 32 x 32 tiles (6 of them, the edge tiles partial), a block of 256 threads
// per tile: each reads rows along the input (coalesced), stores the
// untransposed code directly and the transposed one in the shared tile,
// and after a barrier writes the tile's columns as rows of the 72 x 40
// output (coalesced). The launch passes 6 tiles x 256 work items.
//
// In the third kernel each thread keeps a running maximum of |value| as
// f32 bits (unsigned order is the floats' order, NaN above infinity);
// after the loop the warp combines it with butterfly shuffles, the block
// through shared memory, and one atomic per block writes it. Its float8
// result is stored as a byte; its broadcast scale is loaded once.
// NVVM-LABEL: llvm.mlir.global private constant @titan_kernels_image
// NVVM-LABEL: llvm.func @titan_step(
// NVVM-DAG:   %[[N:.*]] = llvm.mlir.constant(4 : i64) : i64
// NVVM-DAG:   %[[IMAGE:.*]] = llvm.mlir.addressof @titan_kernels_image : !llvm.ptr
// NVVM-DAG:   %[[NAME:.*]] = llvm.mlir.addressof @__titan_str_titan_generated_0 : !llvm.ptr
// NVVM-DAG:   %[[COUNT:.*]] = llvm.mlir.constant(2 : i64) : i64
// NVVM:       %[[NORED:.*]] = llvm.mlir.constant(0 : i64) : i64
// NVVM-NEXT:  llvm.call @titan_rt_launch_generated(%[[IMAGE]], %[[NAME]], %{{.*}}, %[[COUNT]], %[[N]], %[[NORED]])
// NVVM:       llvm.call @titan_rt_launch_generated(
// NVVM:       %[[ONE:.*]] = llvm.mlir.constant(1 : i64) : i64
// NVVM-NEXT:  llvm.call @titan_rt_launch_generated(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[ONE]])
// NVVM:       %[[CTNAME:.*]] = llvm.mlir.addressof @__titan_str_titan_generated_4 : !llvm.ptr
// NVVM:       %[[CTITEMS:.*]] = llvm.mlir.constant(1536 : i64) : i64
// NVVM:       llvm.call @titan_rt_launch_generated(%{{.*}}, %[[CTNAME]], %{{.*}}, %{{.*}}, %[[CTITEMS]], %{{.*}})
// NVVM:       %[[SGITEMS:.*]] = llvm.mlir.constant(12 : i64) : i64
// NVVM:       llvm.call @titan_rt_launch_generated(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[SGITEMS]], %{{.*}})
// NVVM:       %[[TSNAME:.*]] = llvm.mlir.addressof @__titan_str_titan_generated_6 : !llvm.ptr
// NVVM:       %[[TSITEMS:.*]] = llvm.mlir.constant(1536 : i64) : i64
// NVVM:       llvm.call @titan_rt_launch_generated(%{{.*}}, %[[TSNAME]], %{{.*}}, %{{.*}}, %[[TSITEMS]], %{{.*}})
// NVVM:       gpu.module @titan_kernels [#nvvm.target<chip = "sm_90a">] {
// NVVM:       llvm.mlir.global internal @__titan_reduction_scratch() {addr_space = 3 : i32, alignment = 4 : i64} : !llvm.array<32 x i32>
// NVVM:       llvm.func @titan_generated_0(%[[A:.*]]: !llvm.ptr<1>, %[[B:.*]]: !llvm.ptr<1>, %[[E:.*]]: i64) attributes {nvvm.kernel}
// NVVM:       nvvm.read.ptx.sreg.ctaid.x
// NVVM:       nvvm.read.ptx.sreg.ntid.x
// NVVM:       nvvm.read.ptx.sreg.tid.x
// NVVM:       nvvm.read.ptx.sreg.nctaid.x
// NVVM:       llvm.icmp "slt" %{{.*}}, %[[E]] : i64
// NVVM:       llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<8xbf16>
// NVVM:       llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<8xbf16>, !llvm.ptr<1>
// NVVM:       llvm.func @titan_generated_1(
// NVVM:       llvm.load %{{.*}} : !llvm.ptr<1> -> vector<2xf64>
// NVVM:       llvm.call @__nv_exp(%{{.*}}) : (f64) -> f64
// NVVM:       llvm.call @__nv_exp(%{{.*}}) : (f64) -> f64
// NVVM:       llvm.func @titan_generated_2(
// NVVM:       llvm.load %{{.*}} : !llvm.ptr<1> -> f32
// NVVM:       ^bb1(%{{.*}}: i64, %[[ACC:.*]]: i32):
// NVVM:       llvm.load %{{.*}} : !llvm.ptr<1> -> vector<8xbf16>
// NVVM:       llvm.store %{{.*}}, %{{.*}} {alignment = 8 : i64} : vector<8xi8>, !llvm.ptr<1>
// NVVM:       llvm.intr.umax(%[[ACC]], %{{.*}}) : (i32, i32) -> i32
// NVVM:       nvvm.shfl.sync  bfly
// NVVM:       llvm.store %{{.*}}, %{{.*}} : i32, !llvm.ptr<3>
// NVVM:       nvvm.barrier0
// NVVM:       llvm.load %{{.*}} : !llvm.ptr<3> -> i32
// NVVM:       llvm.atomicrmw umax %{{.*}}, %{{.*}} monotonic : !llvm.ptr<1>, i32
// NVVM:       nvvm.barrier0
// NVVM:       llvm.func @titan_generated_3(
// NVVM:       llvm.load %{{.*}} : !llvm.ptr<1> -> bf16
// NVVM:       llvm.store %{{.*}}, %{{.*}} : bf16, !llvm.ptr<1>
// NVVM:       llvm.func @titan_generated_4(
// NVVM-SAME:  %[[CT_IN:[^:]*]]: !llvm.ptr<1>, %{{[^:]*}}: !llvm.ptr<1>, %[[CT_T:[^:]*]]: !llvm.ptr<1>, %[[CT_U:[^:]*]]: !llvm.ptr<1>, %{{[^:]*}}: !llvm.ptr<1>, %[[ITEMS:[^:]*]]: i64)
// NVVM:       %[[TILE:.*]] = llvm.mlir.addressof @titan_generated_4_tile0 : !llvm.ptr<3>
// NVVM:       %[[TILES:.*]] = llvm.udiv %[[ITEMS]], %{{.*}} : i64
// NVVM:       llvm.getelementptr %[[CT_IN]][%{{.*}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
// NVVM:       llvm.getelementptr %[[TILE]][%{{.*}}] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, i8
// NVVM:       llvm.getelementptr %[[CT_U]][%{{.*}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i8
// NVVM:       llvm.intr.umax
// NVVM:       nvvm.barrier0
// NVVM:       llvm.load %{{.*}} : !llvm.ptr<3> -> i8
// NVVM:       llvm.getelementptr %[[CT_T]][%{{.*}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i8
// NVVM:       llvm.func @titan_generated_5(
// NVVM-SAME:  %[[SG_A:[^:]*]]: !llvm.ptr<1>, %[[SG_B:[^:]*]]: !llvm.ptr<1>, %[[SG_C:[^:]*]]: !llvm.ptr<1>, %[[SG_D:[^:]*]]: !llvm.ptr<1>, %{{[^:]*}}: i64)
// NVVM-DAG:   %[[P0:.*]] = llvm.mlir.constant(4 : i64) : i64
// NVVM-DAG:   %[[P1:.*]] = llvm.mlir.constant(8 : i64) : i64
// NVVM:       llvm.icmp "slt" %{{.*}}, %[[P0]] : i64
// NVVM:       llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<8xbf16>
// NVVM:       llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<8xbf16>, !llvm.ptr<1>
// NVVM:       llvm.icmp "slt" %{{.*}}, %[[P1]] : i64
// NVVM:       llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<8xbf16>
// NVVM:       llvm.func @titan_generated_6(
// NVVM-NOT:   titan_generated_6_segment
// NVVM-DAG:   llvm.mlir.addressof @titan_generated_6_tile0 : !llvm.ptr<3>
// NVVM-DAG:   llvm.mlir.constant(6 : i64) : i64
// NVVM-DAG:   llvm.mlir.constant(2 : i64) : i64
// NVVM-COUNT-4: nvvm.barrier0

// NVPTX's PTX for the chip, f64 exp from libdevice linked in (no call left),
// f32 sqrt correctly rounded (sqrt.rn, as the host's), not libdevice's
// approximation.
// PTX:     llvm.mlir.global private constant @titan_kernels_image("//
// PTX-SAME: .target sm_90a
// PTX-SAME: .shared .align 4 .b8 __titan_reduction_scratch[128]
// PTX-SAME: .visible .entry titan_generated_0(
// PTX-SAME: ld.global.v4.b32
// PTX-SAME: sqrt.rn.f32
// PTX-SAME: st.global.v4.b32
// PTX-SAME: .visible .entry titan_generated_1(
// PTX-SAME: .visible .entry titan_generated_2(
// PTX-SAME: st.global.v2.b32
// PTX-SAME: max.u32
// PTX-SAME: shfl.sync.bfly.b32
// PTX-SAME: st.shared.b32
// PTX-SAME: bar.sync
// PTX-SAME: .global.max.u32
// PTX-SAME: .visible .entry titan_generated_3(
// PTX-SAME: ld.global.b16
// PTX-SAME: st.global.b16
// PTX-SAME: .visible .entry titan_generated_4(
// PTX-SAME: .shared .align 16 .b8 titan_generated_4_tile0[1056]
// PTX-SAME: ld.global.b16
// PTX-SAME: st.shared.b8
// PTX-SAME: st.global.b8
// PTX-SAME: bar.sync
// PTX-SAME: ld.shared.b8
// PTX-SAME: st.global.b8
// PTX-SAME: bar.sync
// PTX-SAME: atom.global.max.u32
// PTX-SAME: .visible .entry titan_generated_5(
// PTX-SAME: ld.global.v4.b32
// PTX-SAME: st.global.v4.b32
// PTX-SAME: ld.global.v4.b32
// PTX-SAME: st.global.v4.b32
// PTX-SAME: .visible .entry titan_generated_6(
// PTX-SAME: .shared .align 16 .b8 titan_generated_6_tile0[1056]
// PTX-NOT:  titan_generated_6_segment
// PTX-SAME: ld.global.b16
// PTX-SAME: bar.sync
// PTX-SAME: ld.global.b8
// PTX-SAME: bar.sync
// PTX-NOT:  __nv_exp
// PTX-NOT:  sqrt.approx
// PTX-NOT:  gpu.module

// The default: a cubin from ptxas, embedded as the image.
// CUBIN: llvm.mlir.global private constant @titan_kernels_image("\7FELF
// CUBIN-NOT: gpu.binary
module attributes {kernel.arena_bytes = 16384 : i64, kernel.slots = {"param:w" = array<i64: 0, 64>, "param:d" = array<i64: 256, 256>}} {
  func.func @step(%w: memref<4x8xbf16> {kernel.slot = "param:w"}, %d: memref<32xf64> {kernel.slot = "param:d"}) {
    %s = kernel.stream 0
    %y = kernel.alloc temporary {offset = 512 : i64} : memref<32xbf16>
    kernel.generic ins(%w : memref<4x8xbf16>) outs(%y : memref<32xbf16>) on %s {
    ^bb0(%x: bf16):
      %a = arith.extf %x : bf16 to f32
      %n = arith.negf %a : f32
      %e = math.exp %n : f32
      %q = math.sqrt %e : f32
      %r = arith.truncf %q : f32 to bf16
      kernel.yield %r : bf16
    }
    %z = kernel.alloc temporary {offset = 768 : i64} : memref<32xf64>
    kernel.generic ins(%d : memref<32xf64>) outs(%z : memref<32xf64>) on %s {
    ^bb0(%x: f64):
      %e = math.exp %x : f64
      kernel.yield %e : f64
    }
    %scale = kernel.alloc temporary {offset = 1024 : i64} : memref<f32>
    %q = kernel.alloc temporary {offset = 1280 : i64} : memref<32xf8E4M3FN>
    %m = kernel.alloc temporary {offset = 1536 : i64} : memref<f32>
    kernel.generic ins(%w, %scale : memref<4x8xbf16>, memref<f32>) outs(%q : memref<32xf8E4M3FN>) reduce [#kernel.reduction<absmax>](%m : memref<f32>) on %s {
    ^bb0(%x: bf16, %c: f32):
      %a = arith.extf %x : bf16 to f32
      %p = arith.mulf %a, %c : f32
      %b = arith.bitcast %p : f32 to i32
      %t = arith.trunci %b : i32 to i8
      %f = arith.bitcast %t : i8 to f8E4M3FN
      kernel.yield %f, %p : f8E4M3FN, f32
    }
    %odd = kernel.alloc temporary {offset = 1792 : i64} : memref<33xbf16>
    kernel.generic ins(%odd : memref<33xbf16>) outs(%odd : memref<33xbf16>) on %s {
    ^bb0(%x: bf16):
      %a = arith.extf %x : bf16 to f32
      %n = arith.negf %a : f32
      %r = arith.truncf %n : f32 to bf16
      kernel.yield %r : bf16
    }
    %in = kernel.alloc temporary {offset = 2048 : i64} : memref<40x72xbf16>
    %qu = kernel.alloc temporary {offset = 8192 : i64} : memref<40x72xf8E4M3FN>
    %qt = kernel.alloc temporary {offset = 11264 : i64} : memref<72x40xf8E4M3FN>
    %mt = kernel.alloc temporary {offset = 14336 : i64} : memref<f32>
    kernel.generic ins(%in, %scale : memref<40x72xbf16>, memref<f32>) outs(%qt, %qu : memref<72x40xf8E4M3FN>, memref<40x72xf8E4M3FN>) reduce [#kernel.reduction<absmax>](%mt : memref<f32>) on %s {
    ^bb0(%x: bf16, %c: f32):
      %a = arith.extf %x : bf16 to f32
      %p = arith.mulf %a, %c : f32
      %b = arith.bitcast %p : f32 to i32
      %t = arith.trunci %b : i32 to i8
      %f = arith.bitcast %t : i8 to f8E4M3FN
      kernel.yield %f, %f, %a : f8E4M3FN, f8E4M3FN, f32
    } {transposed_outputs = array<i64: 0>}
    %s1 = kernel.alloc temporary {offset = 14592 : i64} : memref<64xbf16>
    %s2 = kernel.alloc temporary {offset = 14848 : i64} : memref<64xbf16>
    %s3 = kernel.alloc temporary {offset = 15104 : i64} : memref<32xbf16>
    kernel.generic ins(%w, %s1 : memref<4x8xbf16>, memref<64xbf16>) outs(%s3, %s2 : memref<32xbf16>, memref<64xbf16>) on %s {
    ^bb0(%x: bf16, %v: bf16):
      %a = arith.negf %x : bf16
      %b = arith.negf %v : bf16
      kernel.yield %a, %b : bf16, bf16
    } {segments = array<i64: 1, 1, 0, 1, 1, 0>}
    %f1 = kernel.alloc temporary {offset = 15360 : i64} : memref<64x32xf8E4M3FN>
    %f2 = kernel.alloc temporary {offset = 17408 : i64} : memref<32x64xf8E4M3FN>
    %q2 = kernel.alloc temporary {offset = 19456 : i64} : memref<72x40xf8E4M3FN>
    %q3 = kernel.alloc temporary {offset = 22528 : i64} : memref<40x72xf8E4M3FN>
    kernel.generic ins(%in, %scale, %f1 : memref<40x72xbf16>, memref<f32>, memref<64x32xf8E4M3FN>) outs(%q2, %q3, %f2 : memref<72x40xf8E4M3FN>, memref<40x72xf8E4M3FN>, memref<32x64xf8E4M3FN>) on %s {
    ^bb0(%x: bf16, %c: f32, %v8: f8E4M3FN):
      %a = arith.extf %x : bf16 to f32
      %p = arith.mulf %a, %c : f32
      %b = arith.bitcast %p : f32 to i32
      %t = arith.trunci %b : i32 to i8
      %f = arith.bitcast %t : i8 to f8E4M3FN
      kernel.yield %f, %f, %v8 : f8E4M3FN, f8E4M3FN, f8E4M3FN
    } {segments = array<i64: 2, 2, 0, 1, 1, 0>, transposed_outputs = array<i64: 0, 2>}
    return
  }
}
