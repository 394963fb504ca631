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
// NVVM:       gpu.module @titan_kernels [#nvvm.target<chip = "sm_90a">] {
// NVVM:       llvm.mlir.global internal @__titan_reduction_scratch() {addr_space = 3 : i32, alignment = 4 : i64} : !llvm.array<32 x i32>
// NVVM:       llvm.func @titan_generated_0(%[[A:.*]]: !llvm.ptr<1>, %[[B:.*]]: !llvm.ptr<1>, %[[E:.*]]: i64) attributes {nvvm.kernel}
// NVVM:       nvvm.read.ptx.sreg.ctaid.x
// NVVM:       nvvm.read.ptx.sreg.ntid.x
// NVVM:       nvvm.read.ptx.sreg.tid.x
// NVVM:       nvvm.read.ptx.sreg.nctaid.x
// NVVM:       llvm.icmp "slt" %{{.*}}, %[[E]] : i64
// NVVM:       llvm.load %{{.*}} {access_groups = [#access_group], alignment = 16 : i64} : !llvm.ptr<1> -> vector<8xbf16>
// NVVM:       llvm.store %{{.*}}, %{{.*}} {access_groups = [#access_group], alignment = 16 : i64} : vector<8xbf16>, !llvm.ptr<1>
// NVVM:       llvm.func @titan_generated_1(
// NVVM:       llvm.load %{{.*}} : !llvm.ptr<1> -> vector<2xf64>
// NVVM:       llvm.call @__nv_exp(%{{.*}}) : (f64) -> f64
// NVVM:       llvm.call @__nv_exp(%{{.*}}) : (f64) -> f64
// NVVM:       llvm.func @titan_generated_2(
// NVVM:       llvm.load %{{.*}} : !llvm.ptr<1> -> f32
// NVVM:       ^bb1(%{{.*}}: i64, %[[ACC:.*]]: i32):
// NVVM:       llvm.load %{{.*}} : !llvm.ptr<1> -> vector<8xbf16>
// NVVM:       llvm.store %{{.*}}, %{{.*}} {access_groups = [#access_group{{.*}}], alignment = 8 : i64} : vector<8xi8>, !llvm.ptr<1>
// NVVM:       llvm.intr.umax(%[[ACC]], %{{.*}}) : (i32, i32) -> i32
// NVVM:       nvvm.shfl.sync  bfly
// NVVM:       llvm.store %{{.*}}, %{{.*}} : i32, !llvm.ptr<3>
// NVVM:       nvvm.barrier0
// NVVM:       llvm.load %{{.*}} : !llvm.ptr<3> -> i32
// NVVM:       llvm.atomicrmw umax %{{.*}}, %{{.*}} monotonic : !llvm.ptr<1>, i32
// NVVM:       nvvm.barrier0
// NVVM:       llvm.func @titan_generated_3(
// NVVM:       llvm.load %{{.*}} {access_groups = [#access_group{{.*}}]} : !llvm.ptr<1> -> bf16
// NVVM:       llvm.store %{{.*}}, %{{.*}} {access_groups = [#access_group{{.*}}]} : bf16, !llvm.ptr<1>

// NVPTX's PTX for the chip, f64 exp from libdevice linked in (no call left),
// f32 sqrt correctly rounded (sqrt.rn, as the host's), not libdevice's
// approximation.
// PTX:     llvm.mlir.global private constant @titan_kernels_image("//
// PTX-SAME: .target sm_90a
// PTX-SAME: .visible .entry titan_generated_0(
// PTX-SAME: ld.global.v4.b32
// PTX-SAME: sqrt.rn.f32
// PTX-SAME: st.global.v4.b32
// PTX-SAME: .visible .entry titan_generated_1(
// PTX-SAME: .visible .entry titan_generated_2(
// PTX-SAME: .shared .align 4 .b8 __titan_reduction_scratch[128]
// PTX-SAME: st.global.v2.b32
// PTX-SAME: max.u32
// PTX-SAME: shfl.sync.bfly.b32
// PTX-SAME: st.shared.b32
// PTX-SAME: bar.sync
// PTX-SAME: .global.max.u32
// PTX-SAME: .visible .entry titan_generated_3(
// PTX-SAME: ld.global.b16
// PTX-SAME: st.global.b16
// PTX-NOT:  __nv_exp
// PTX-NOT:  sqrt.approx
// PTX-NOT:  gpu.module

// The default: a cubin from ptxas, embedded as the image.
// CUBIN: llvm.mlir.global private constant @titan_kernels_image("\7FELF
// CUBIN-NOT: gpu.binary
module attributes {kernel.arena_bytes = 2048 : i64, kernel.slots = {"param:w" = array<i64: 0, 64>, "param:d" = array<i64: 256, 256>}} {
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
    return
  }
}
