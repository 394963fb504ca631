// RUN: titan-opt %s -split-input-file -kernel-to-runtime-calls | FileCheck %s

// A generated kernel becomes a private function over a range of element
// indices (its buffers' addresses from the array the step passes), which the
// step runs through titan_rt_parallel_for with the element count (in the
// runtime's spans: 0), its name and the bytes a call moves (for the kernel
// profile). Every
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
// CHECK:       %[[FN:.*]] = llvm.mlir.addressof @titan_generated_0 : !llvm.ptr
// CHECK:       %[[N:.*]] = llvm.mlir.constant(32 : i64) : i64
// CHECK:       %[[SPAN:.*]] = llvm.mlir.constant(0 : i64) : i64
// CHECK:       %[[NAME:.*]] = llvm.mlir.addressof @__titan_str_titan_generated_0 : !llvm.ptr
// CHECK:       %[[BYTES:.*]] = llvm.mlir.constant(128 : i64) : i64
// CHECK:       llvm.call @titan_rt_parallel_for(%[[FN]], %[[BUFS]], %[[N]], %[[SPAN]], %[[NAME]], %[[BYTES]]) : (!llvm.ptr, !llvm.ptr, i64, i64, !llvm.ptr, i64) -> ()
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
// CHECK:       %[[FIRST:.*]] = llvm.icmp "eq" %[[RBEGIN]], %{{.*}} : i64
// CHECK:       %[[SCALE:.*]] = llvm.load %{{.*}} : !llvm.ptr -> f32
// CHECK:       llvm.cond_br %[[FIRST]], ^[[ONCE:.*]], ^[[AFTER:.*]]
// CHECK:       ^[[ONCE]]:
// CHECK:       llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr
// CHECK:       llvm.br ^[[AFTER]]
// CHECK:       ^[[AFTER]]:
// CHECK:       llvm.br ^[[RHEADER:.*]](%[[RBEGIN]], %{{.*}} : i64, i32)
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

// -----

// A kernel with a transposed output (a float8 cast's K-major copy) runs by
// rows: the step passes its 70 rows in spans of 64, and the function walks
// 64 x 64 tiles. Each row's elements of a tile are one loop of parallel
// accesses (vectorizable): loads and the untransposed stores along the
// row, the transposed codes into the tile on the stack, also along the
// row; then each tile column j is copied out to row j of the transposed
// output (j * 70 + r).
// CHECK-LABEL: llvm.func @titan_tiles(
// CHECK:       %[[TFN:.*]] = llvm.mlir.addressof @titan_generated_0 : !llvm.ptr
// CHECK:       %[[ROWS:.*]] = llvm.mlir.constant(70 : i64) : i64
// CHECK:       %[[SPAN:.*]] = llvm.mlir.constant(64 : i64) : i64
// CHECK:       llvm.call @titan_rt_parallel_for(%[[TFN]], %{{.*}}, %[[ROWS]], %[[SPAN]],

// CHECK-LABEL: llvm.func internal @titan_generated_0(
// CHECK-SAME:  %{{.*}}: !llvm.ptr, %[[TBEGIN:.*]]: i64, %[[TEND:.*]]: i64) {
// CHECK-DAG:   %[[TR:.*]] = llvm.mlir.constant(70 : i64) : i64
// CHECK-DAG:   %[[TCOLS:.*]] = llvm.mlir.constant(130 : i64) : i64
// CHECK-DAG:   %[[TW:.*]] = llvm.mlir.constant(64 : i64) : i64
// CHECK-DAG:   %[[TSIZE:.*]] = llvm.mlir.constant(4096 : i64) : i64
// CHECK:       %[[TILE:.*]] = llvm.alloca %[[TSIZE]] x i8 {alignment = 64 : i64}
// CHECK:       %[[IN:.*]] = llvm.load %{{.*}} : !llvm.ptr -> !llvm.ptr
// CHECK:       %[[OUTT:.*]] = llvm.load %{{.*}} : !llvm.ptr -> !llvm.ptr
// CHECK:       %[[OUTQ:.*]] = llvm.load %{{.*}} : !llvm.ptr -> !llvm.ptr
// CHECK:       ^{{.*}}(%[[C0:.*]]: i64):
// CHECK:       llvm.icmp "slt" %[[C0]], %[[TCOLS]] : i64
// CHECK:       llvm.intr.smin(%{{.*}}, %[[TCOLS]])
// CHECK:       llvm.br ^{{.*}}(%[[TBEGIN]] : i64)
// CHECK:       ^{{.*}}(%[[R0:.*]]: i64):
// CHECK:       llvm.icmp "slt" %[[R0]], %[[TEND]] : i64
// CHECK:       ^{{.*}}(%[[R:.*]]: i64):
// CHECK:       %[[START:.*]] = llvm.mul %[[R]], %[[TCOLS]] : i64
// CHECK:       ^{{.*}}(%[[J:.*]]: i64):
// CHECK:       %[[I:.*]] = llvm.add %[[START]], %[[J]] : i64
// CHECK:       llvm.getelementptr %[[IN]][%[[I]]] : (!llvm.ptr, i64) -> !llvm.ptr, bf16
// CHECK:       llvm.getelementptr %[[TILE]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK:       llvm.store %{{.*}}, %{{.*}} {access_groups = [#[[TG:.*]]]} : i8, !llvm.ptr
// CHECK:       llvm.getelementptr %[[OUTQ]][%[[I]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK:       llvm.store %{{.*}}, %{{.*}} {access_groups = [#[[TG]]]} : i8, !llvm.ptr
// CHECK:       llvm.br ^{{.*}} {loop_annotation = #{{.*}}}
// CHECK:       ^{{.*}}(%[[CJ:.*]]: i64):
// CHECK:       %[[OUTROW:.*]] = llvm.mul %[[CJ]], %[[TR]] : i64
// CHECK:       ^{{.*}}(%[[CR:.*]]: i64):
// CHECK:       %[[AT:.*]] = llvm.add %[[OUTROW]], %[[CR]] : i64
// CHECK:       llvm.load %{{.*}} {access_groups = [#[[CG:.*]]]} : !llvm.ptr -> i8
// CHECK:       llvm.getelementptr %[[OUTT]][%[[AT]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK:       llvm.store %{{.*}}, %{{.*}} {access_groups = [#[[CG]]]} : i8, !llvm.ptr
module attributes {kernel.arena_bytes = 65536 : i64, kernel.slots = {"param:w" = array<i64: 0, 18200>}} {
  func.func @tiles(%w: memref<70x130xbf16> {kernel.slot = "param:w"}) {
    %s = kernel.stream 0
    %t = kernel.alloc temporary {offset = 20480 : i64} : memref<130x70xf8E4M3FN>
    %q = kernel.alloc temporary {offset = 32768 : i64} : memref<70x130xf8E4M3FN>
    kernel.generic ins(%w : memref<70x130xbf16>) outs(%t, %q : memref<130x70xf8E4M3FN>, memref<70x130xf8E4M3FN>) on %s {
    ^bb0(%x: bf16):
      %a = arith.extf %x : bf16 to f32
      %b = arith.bitcast %a : f32 to i32
      %c = arith.trunci %b : i32 to i8
      %f = arith.bitcast %c : i8 to f8E4M3FN
      kernel.yield %f, %f : f8E4M3FN, f8E4M3FN
    } {transposed_outputs = array<i64: 0>}
    return
  }
}

// -----

// A horizontally fused kernel (two segments, 32 and 48 elements) is one
// call over 80 work items; its function runs each segment over the part
// of the span in it ([begin - offset, end - offset) clamped to the
// segment), in a loop of its own, loading and storing that segment's
// buffers only.
// CHECK-LABEL: llvm.func @titan_segments(
// CHECK:       %[[SFN:.*]] = llvm.mlir.addressof @titan_generated_0 : !llvm.ptr
// CHECK:       %[[ITEMS:.*]] = llvm.mlir.constant(80 : i64) : i64
// CHECK:       llvm.call @titan_rt_parallel_for(%[[SFN]], %{{.*}}, %[[ITEMS]],

// CHECK-LABEL: llvm.func internal @titan_generated_0(
// CHECK-SAME:  %{{.*}}: !llvm.ptr, %[[SB:.*]]: i64, %[[SE:.*]]: i64) {
// CHECK-DAG:   %[[N1:.*]] = llvm.mlir.constant(48 : i64) : i64
// CHECK-DAG:   %[[N0:.*]] = llvm.mlir.constant(32 : i64) : i64
// CHECK-DAG:   %[[ZERO:.*]] = llvm.mlir.constant(0 : i64) : i64
// CHECK:       %[[A:.*]] = llvm.load %{{.*}} : !llvm.ptr -> !llvm.ptr
// CHECK:       %[[B:.*]] = llvm.load %{{.*}} : !llvm.ptr -> !llvm.ptr
// CHECK:       %[[C:.*]] = llvm.load %{{.*}} : !llvm.ptr -> !llvm.ptr
// CHECK:       %[[D:.*]] = llvm.load %{{.*}} : !llvm.ptr -> !llvm.ptr
// CHECK:       %[[LO0:.*]] = llvm.sub %[[SB]], %[[ZERO]] : i64
// CHECK:       llvm.intr.smax(%[[LO0]], %[[ZERO]])
// CHECK:       %[[HI0:.*]] = llvm.sub %[[SE]], %[[ZERO]] : i64
// CHECK:       llvm.intr.smin(%[[HI0]], %[[N0]])
// CHECK:       llvm.getelementptr %[[A]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK:       llvm.getelementptr %[[C]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, bf16
// CHECK:       %[[LO1:.*]] = llvm.sub %[[SB]], %[[N0]] : i64
// CHECK:       llvm.intr.smax(%[[LO1]], %[[ZERO]])
// CHECK:       %[[HI1:.*]] = llvm.sub %[[SE]], %[[N0]] : i64
// CHECK:       llvm.intr.smin(%[[HI1]], %[[N1]])
// CHECK:       llvm.getelementptr %[[B]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK:       llvm.getelementptr %[[D]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, bf16
// CHECK:       llvm.return
module attributes {kernel.arena_bytes = 4096 : i64, kernel.slots = {"param:a" = array<i64: 0, 128>, "param:b" = array<i64: 256, 192>}} {
  func.func @segments(%a: memref<4x8xf32> {kernel.slot = "param:a"}, %b: memref<48xf32> {kernel.slot = "param:b"}) {
    %s = kernel.stream 0
    %c = kernel.alloc temporary {offset = 1024 : i64} : memref<4x8xbf16>
    %d = kernel.alloc temporary {offset = 2048 : i64} : memref<48xbf16>
    kernel.generic ins(%a, %b : memref<4x8xf32>, memref<48xf32>) outs(%c, %d : memref<4x8xbf16>, memref<48xbf16>) on %s {
    ^bb0(%x: f32, %y: f32):
      %t = arith.truncf %x : f32 to bf16
      %u = arith.truncf %y : f32 to bf16
      kernel.yield %t, %u : bf16, bf16
    } {segments = array<i64: 1, 1, 0, 1, 1, 0>}
    return
  }
}

// -----

// Segments with a broadcast output and a reduction: the first segment's
// broadcast output is stored by the span that holds its index 0 (begin <=
// 0 < end), its reduction published after its own loop; the second
// segment's loop follows.
// CHECK-LABEL: llvm.func internal @titan_generated_0(
// CHECK-SAME:  %{{.*}}: !llvm.ptr, %[[BB:.*]]: i64, %[[BE:.*]]: i64) {
// CHECK-DAG:   %[[Z:.*]] = llvm.mlir.constant(0 : i64) : i64
// CHECK-DAG:   %[[GE:.*]] = llvm.icmp "sle" %[[BB]], %[[Z]] : i64
// CHECK-DAG:   %[[LT:.*]] = llvm.icmp "slt" %[[Z]], %[[BE]] : i64
// CHECK:       %[[FIRST:.*]] = llvm.and %[[GE]], %[[LT]] : i1
// CHECK:       llvm.cond_br %[[FIRST]], ^[[STORE:.*]], ^[[AFTER:.*]]
// CHECK:       ^[[STORE]]:
// CHECK:       llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr
// CHECK:       llvm.intr.umax
// CHECK:       llvm.atomicrmw umax %{{.*}}, %{{.*}} monotonic : !llvm.ptr, i32
// CHECK:       llvm.getelementptr %{{.*}}[%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, bf16
// CHECK:       llvm.return
module attributes {kernel.arena_bytes = 8192 : i64, kernel.slots = {"param:a" = array<i64: 0, 128>, "param:b" = array<i64: 256, 192>}} {
  func.func @segments_once(%a: memref<4x8xf32> {kernel.slot = "param:a"}, %b: memref<48xf32> {kernel.slot = "param:b"}) {
    %s = kernel.stream 0
    %sc = kernel.alloc temporary {offset = 512 : i64} : memref<f32>
    %o = kernel.alloc temporary {offset = 1024 : i64} : memref<4x8xf32>
    %bo = kernel.alloc temporary {offset = 1536 : i64} : memref<f32>
    %m = kernel.alloc temporary {offset = 1792 : i64} : memref<f32>
    %d = kernel.alloc temporary {offset = 2048 : i64} : memref<48xbf16>
    kernel.generic ins(%a, %sc, %b : memref<4x8xf32>, memref<f32>, memref<48xf32>) outs(%o, %bo, %d : memref<4x8xf32>, memref<f32>, memref<48xbf16>) reduce [#kernel.reduction<absmax>](%m : memref<f32>) on %s {
    ^bb0(%x: f32, %c: f32, %y: f32):
      %p = arith.mulf %x, %c : f32
      %q = arith.addf %c, %c : f32
      %u = arith.truncf %y : f32 to bf16
      kernel.yield %p, %q, %u, %p : f32, f32, bf16, f32
    } {segments = array<i64: 2, 2, 1, 1, 1, 0>}
    return
  }
}

// -----

// A float8 input (titan.transpose of a gathered float8 weight): its
// elements are loaded and stored as bytes through the stack tile, no
// conversion between.
// CHECK-LABEL: llvm.func internal @titan_generated_0(
// CHECK:       llvm.load %{{.*}} {access_groups = [#{{.*}}]} : !llvm.ptr -> i8
// CHECK-NOT:   llvm.fpext
// CHECK-NOT:   llvm.call
// CHECK:       llvm.store %{{.*}}, %{{.*}} {access_groups = [#{{.*}}]} : i8, !llvm.ptr
// CHECK:       llvm.load %{{.*}} {access_groups = [#{{.*}}]} : !llvm.ptr -> i8
// CHECK:       llvm.store %{{.*}}, %{{.*}} {access_groups = [#{{.*}}]} : i8, !llvm.ptr
module attributes {kernel.arena_bytes = 65536 : i64, kernel.slots = {}} {
  func.func @float8_transpose() {
    %s = kernel.stream 0
    %g = kernel.alloc temporary {offset = 0 : i64} : memref<70x130xf8E4M3FN>
    %t = kernel.alloc temporary {offset = 16384 : i64} : memref<130x70xf8E4M3FN>
    kernel.generic ins(%g : memref<70x130xf8E4M3FN>) outs(%t : memref<130x70xf8E4M3FN>) on %s {
    ^bb0(%x: f8E4M3FN):
      kernel.yield %x : f8E4M3FN
    } {transposed_outputs = array<i64: 0>}
    return
  }
}

// -----

// Two kernels in tiles in one launch (horizontal fusion): the work items
// are each segment's rows, one after another, each segment's up to whole
// tiles (70 -> 128, 16 -> 64), in spans of a tile; each segment's rows in
// the span run in its own stack tiles.
// CHECK-LABEL: llvm.func @titan_tiled_segments(
// CHECK-DAG:   %[[ROWS:.*]] = llvm.mlir.constant(192 : i64) : i64
// CHECK-DAG:   %[[SPAN:.*]] = llvm.mlir.constant(64 : i64) : i64
// CHECK:       llvm.call @titan_rt_parallel_for(%{{.*}}, %{{.*}}, %[[ROWS]], %[[SPAN]],
// CHECK-LABEL: llvm.func internal @titan_generated_0(
// CHECK-DAG:   llvm.mlir.constant(70 : i64) : i64
// CHECK-DAG:   llvm.mlir.constant(16 : i64) : i64
// CHECK-COUNT-2: llvm.alloca %{{.*}} x i8 {alignment = 64 : i64}
module attributes {kernel.arena_bytes = 65536 : i64, kernel.slots = {}} {
  func.func @tiled_segments() {
    %s = kernel.stream 0
    %g = kernel.alloc temporary {offset = 0 : i64} : memref<70x130xf8E4M3FN>
    %t = kernel.alloc temporary {offset = 16384 : i64} : memref<130x70xf8E4M3FN>
    %h = kernel.alloc temporary {offset = 32768 : i64} : memref<16x32xf8E4M3FN>
    %u = kernel.alloc temporary {offset = 40960 : i64} : memref<32x16xf8E4M3FN>
    kernel.generic ins(%g, %h : memref<70x130xf8E4M3FN>, memref<16x32xf8E4M3FN>) outs(%t, %u : memref<130x70xf8E4M3FN>, memref<32x16xf8E4M3FN>) on %s {
    ^bb0(%x: f8E4M3FN, %y: f8E4M3FN):
      kernel.yield %x, %y : f8E4M3FN, f8E4M3FN
    } {segments = array<i64: 1, 1, 0, 1, 1, 0>, transposed_outputs = array<i64: 0, 1>}
    return
  }
}
