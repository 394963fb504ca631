// RUN: titan-opt %s -split-input-file -kernel-to-runtime-calls | FileCheck %s

// A generated kernel becomes a private function over a range of element
// indices (its buffers' addresses from the array the step passes), which the
// step runs through titan_rt_parallel_for with the element count, its name
// and the bytes a call moves (for the kernel profile). Every
// input is loaded before any output is stored (an output may be an input).
// The accesses form one parallel access group of the loop (iterations are
// independent, even in place: no run-time overlap check keeps the
// vectorizer from an in-place kernel). The body is lowered to LLVM: f32 exp as MLIR's polynomial approximation
// (no libm call), bf16 conversions as integer arithmetic (no runtime
// library call). The step itself stays unoptimized (optnone).
// CHECK-LABEL: llvm.func @titan_step(
// CHECK-SAME:  attributes {no_inline, optimize_none}
// CHECK:       %[[BUFS:.*]] = llvm.alloca
// CHECK:       llvm.store %{{.*}}, %{{.*}} : !llvm.ptr, !llvm.ptr
// CHECK:       llvm.store %{{.*}}, %{{.*}} : !llvm.ptr, !llvm.ptr
// CHECK:       %[[N:.*]] = llvm.mlir.constant(32 : i64) : i64
// CHECK:       %[[FN:.*]] = llvm.mlir.addressof @titan_generated_0 : !llvm.ptr
// CHECK:       %[[NAME:.*]] = llvm.mlir.addressof @__titan_str_titan_generated_0 : !llvm.ptr
// CHECK:       %[[BYTES:.*]] = llvm.mlir.constant(128 : i64) : i64
// CHECK:       llvm.call @titan_rt_parallel_for(%[[FN]], %[[BUFS]], %[[N]], %[[NAME]], %[[BYTES]]) : (!llvm.ptr, !llvm.ptr, i64, !llvm.ptr, i64) -> ()
// CHECK:       llvm.return

// CHECK-LABEL: llvm.func internal @titan_generated_0(
// CHECK-SAME:  %[[B:.*]]: !llvm.ptr, %[[BEGIN:.*]]: i64, %[[END:.*]]: i64) {
// CHECK:       %[[IN:.*]] = llvm.load %{{.*}} : !llvm.ptr -> !llvm.ptr
// CHECK:       %[[OUT:.*]] = llvm.load %{{.*}} : !llvm.ptr -> !llvm.ptr
// CHECK:       llvm.br ^[[HEADER:.*]](%[[BEGIN]] : i64)
// CHECK:       ^[[HEADER]](%[[I:.*]]: i64):
// CHECK:       llvm.icmp "slt" %[[I]], %[[END]] : i64
// CHECK:       llvm.getelementptr %[[IN]][%[[I]]] : (!llvm.ptr, i64) -> !llvm.ptr, bf16
// CHECK:       llvm.load %{{.*}} {access_groups = [#[[GROUP:.*]]]} : !llvm.ptr -> bf16
// CHECK-NOT:   math.exp
// CHECK-NOT:   llvm.call
// CHECK-NOT:   arith.
// CHECK:       llvm.getelementptr %[[OUT]][%[[I]]] : (!llvm.ptr, i64) -> !llvm.ptr, bf16
// CHECK:       llvm.store %{{.*}}, %{{.*}} {access_groups = [#[[GROUP]]]} : bf16, !llvm.ptr
// CHECK:       %[[NEXT:.*]] = llvm.add %[[I]], %{{.*}} : i64
// CHECK:       llvm.br ^[[HEADER]](%[[NEXT]] : i64) {loop_annotation = #{{.*}}}

// Broadcast buffers and a reduction: the step zeroes the reduction (+0.0,
// absmax over nothing) before the spans run. Each span loads the broadcast
// scale once, before its loop; the span that starts at index 0 writes the
// broadcast output (computed from the scale alone) once; the loop carries
// the largest |value| as f32 bits, and the span's result goes to the
// buffer by one atomic unsigned max (any order, the same bits). A float8
// result is stored as its byte.
// CHECK-LABEL: llvm.func @titan_reduce(
// CHECK:       %[[OFF:.*]] = llvm.mlir.constant(1024 : i64) : i64
// CHECK-NEXT:  %[[M:.*]] = llvm.getelementptr %arg0[%[[OFF]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK:       %[[ZERO:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT:  llvm.store %[[ZERO]], %[[M]] : i32, !llvm.ptr
// CHECK-NEXT:  %[[FN2:.*]] = llvm.mlir.addressof @titan_generated_0
// CHECK:       llvm.call @titan_rt_parallel_for(%[[FN2]],

// CHECK-LABEL: llvm.func internal @titan_generated_0(
// CHECK-SAME:  %{{.*}}: !llvm.ptr, %[[RBEGIN:.*]]: i64, %[[REND:.*]]: i64) {
// CHECK:       %[[SCALE:.*]] = llvm.load %{{.*}} : !llvm.ptr -> f32
// CHECK:       %[[FIRST:.*]] = llvm.icmp "eq" %[[RBEGIN]], %{{.*}} : i64
// CHECK:       llvm.cond_br %[[FIRST]], ^[[ONCE:.*]], ^[[RHEADER:.*]](%[[RBEGIN]], %{{.*}} : i64, i32)
// CHECK:       ^[[ONCE]]:
// CHECK:       llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr
// CHECK:       llvm.br ^[[RHEADER]]
// CHECK:       ^[[RHEADER]](%[[RI:.*]]: i64, %[[ACC:.*]]: i32):
// CHECK:       llvm.icmp "slt" %[[RI]], %[[REND]] : i64
// CHECK:       llvm.fmul %{{.*}}, %[[SCALE]] : f32
// CHECK:       llvm.store %{{.*}}, %{{.*}} {access_groups = [#{{.*}}]} : i8, !llvm.ptr
// CHECK:       %[[MAX:.*]] = llvm.intr.umax(%[[ACC]], %{{.*}}) : (i32, i32) -> i32
// CHECK:       llvm.br ^[[RHEADER]](%{{.*}}, %[[MAX]] : i64, i32)
// CHECK:       llvm.atomicrmw umax %{{.*}}, %[[ACC]] monotonic : !llvm.ptr, i32
module attributes {kernel.arena_bytes = 1024 : i64, kernel.slots = {"param:w" = array<i64: 0, 64>}} {
  func.func @step(%w: memref<4x8xbf16> {kernel.slot = "param:w"}) {
    %s = kernel.stream 0
    %y = kernel.alloc temporary {offset = 256 : i64} : memref<32xbf16>
    kernel.generic ins(%w : memref<4x8xbf16>) outs(%y : memref<32xbf16>) on %s {
    ^bb0(%x: bf16):
      %a = arith.extf %x : bf16 to f32
      %n = arith.negf %a : f32
      %e = math.exp %n : f32
      %r = arith.truncf %e : f32 to bf16
      kernel.yield %r : bf16
    }
    return
  }
}

// -----

module attributes {kernel.arena_bytes = 2048 : i64, kernel.slots = {"param:w" = array<i64: 0, 64>}} {
  func.func @reduce(%w: memref<4x8xbf16> {kernel.slot = "param:w"}) {
    %s = kernel.stream 0
    %scale = kernel.alloc temporary {offset = 256 : i64} : memref<f32>
    %q = kernel.alloc temporary {offset = 512 : i64} : memref<32xf8E4M3FN>
    %copy = kernel.alloc temporary {offset = 768 : i64} : memref<f32>
    %m = kernel.alloc temporary {offset = 1024 : i64} : memref<f32>
    kernel.generic ins(%w, %scale : memref<4x8xbf16>, memref<f32>) outs(%q, %copy : memref<32xf8E4M3FN>, memref<f32>) reduce [#kernel.reduction<absmax>](%m : memref<f32>) on %s {
    ^bb0(%x: bf16, %c: f32):
      %a = arith.extf %x : bf16 to f32
      %p = arith.mulf %a, %c : f32
      %b = arith.bitcast %p : f32 to i32
      %t = arith.trunci %b : i32 to i8
      %f = arith.bitcast %t : i8 to f8E4M3FN
      %d = arith.addf %c, %c : f32
      kernel.yield %f, %d, %p : f8E4M3FN, f32, f32
    }
    return
  }
}

// -----

// Kernels share a function only when alike in every buffer's role: a
// widening copy and an amax have the same body, but one writes every
// element and the other reduces into one.
// CHECK-LABEL: llvm.func @titan_roles(
// CHECK:       llvm.mlir.addressof @titan_generated_0
// CHECK:       llvm.mlir.addressof @titan_generated_1
// CHECK:       llvm.mlir.addressof @titan_generated_0
module attributes {kernel.arena_bytes = 2048 : i64, kernel.slots = {"param:w" = array<i64: 0, 64>}} {
  func.func @roles(%w: memref<32xbf16> {kernel.slot = "param:w"}) {
    %s = kernel.stream 0
    %y = kernel.alloc temporary {offset = 256 : i64} : memref<32xf32>
    %m = kernel.alloc temporary {offset = 512 : i64} : memref<f32>
    kernel.generic ins(%w : memref<32xbf16>) outs(%y : memref<32xf32>) on %s {
    ^bb0(%x: bf16):
      %a = arith.extf %x : bf16 to f32
      kernel.yield %a : f32
    }
    kernel.generic ins(%w : memref<32xbf16>) reduce [#kernel.reduction<absmax>](%m : memref<f32>) on %s {
    ^bb0(%x: bf16):
      %a = arith.extf %x : bf16 to f32
      kernel.yield %a : f32
    }
    kernel.generic ins(%w : memref<32xbf16>) outs(%y : memref<32xf32>) on %s {
    ^bb0(%x: bf16):
      %a = arith.extf %x : bf16 to f32
      kernel.yield %a : f32
    }
    return
  }
}
