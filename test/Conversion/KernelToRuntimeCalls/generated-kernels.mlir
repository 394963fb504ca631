// RUN: titan-opt %s -kernel-to-runtime-calls | FileCheck %s

// A generated kernel becomes a private function over a range of element
// indices (its buffers' addresses from the array the step passes), which the
// step runs through titan_rt_parallel_for with the element count. Every
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
// CHECK:       llvm.call @titan_rt_parallel_for(%[[FN]], %[[BUFS]], %[[N]]) : (!llvm.ptr, !llvm.ptr, i64) -> ()
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
