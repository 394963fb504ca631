// RUN: titan-opt %s -split-input-file -kernel-fuse-gemm-accumulate | FileCheck %s

// A GEMM whose temporary result only an in-place add reads adds into the
// accumulator itself (params [1]); the add and the temporary are gone.
// Either operand order; gradient-input sums and a gradient slot alike.
// CHECK-LABEL: func.func @sums(
// CHECK-SAME:  %[[DY:[^:]*]]: memref<4x8xf32>, %[[W:[^:]*]]: memref<8x6xf32>, %[[X:[^:]*]]: memref<4x6xf32>, %[[SLOT:[^:]*]]: memref<8x6xf32>
// CHECK:       %[[ACC:.*]] = kernel.alloc temporary : memref<4x6xf32>
// CHECK-NEXT:  kernel.call "linear_grad_input"(%[[DY]], %[[W]] : {{.*}}) outs(%[[ACC]] : memref<4x6xf32>) on %{{.*}} params []
// CHECK-NEXT:  kernel.call "linear_grad_input"(%[[DY]], %[[W]] : {{.*}}) outs(%[[ACC]] : memref<4x6xf32>) on %{{.*}} params [1]
// CHECK-NEXT:  kernel.call "linear_grad_weight"(%[[DY]], %[[X]] : {{.*}}) outs(%[[SLOT]] : memref<8x6xf32>) on %{{.*}} params [1]
// CHECK-NEXT:  return
func.func @sums(%dy: memref<4x8xf32>, %w: memref<8x6xf32>, %x: memref<4x6xf32>, %slot: memref<8x6xf32>) {
  %s = kernel.stream 0
  %acc = kernel.alloc temporary : memref<4x6xf32>
  kernel.call "linear_grad_input"(%dy, %w : memref<4x8xf32>, memref<8x6xf32>) outs(%acc : memref<4x6xf32>) on %s params []
  %t = kernel.alloc temporary : memref<4x6xf32>
  kernel.call "linear_grad_input"(%dy, %w : memref<4x8xf32>, memref<8x6xf32>) outs(%t : memref<4x6xf32>) on %s params []
  kernel.call "add"(%acc, %t : memref<4x6xf32>, memref<4x6xf32>) outs(%acc : memref<4x6xf32>) on %s params []
  %g = kernel.alloc temporary : memref<8x6xf32>
  kernel.call "linear_grad_weight"(%dy, %x : memref<4x8xf32>, memref<4x6xf32>) outs(%g : memref<8x6xf32>) on %s params []
  kernel.call "add"(%g, %slot : memref<8x6xf32>, memref<8x6xf32>) outs(%slot : memref<8x6xf32>) on %s params []
  return
}

// -----

// Not folded: an add that writes a third buffer; a temporary something else
// reads; an accumulator read between the GEMM and the add; a collective
// writing the accumulator completing in between; a non-GEMM producer.
// CHECK-LABEL: func.func @kept(
// CHECK-COUNT-5: kernel.call "add"
// CHECK-NOT:   params [1]
func.func @kept(%dy: memref<4x8xf32>, %w: memref<8x6xf32>, %acc: memref<4x6xf32>, %out: memref<4x6xf32>, %other: memref<4x6xf32>) {
  %s = kernel.stream 0
  %t0 = kernel.alloc temporary : memref<4x6xf32>
  kernel.call "linear_grad_input"(%dy, %w : memref<4x8xf32>, memref<8x6xf32>) outs(%t0 : memref<4x6xf32>) on %s params []
  kernel.call "add"(%acc, %t0 : memref<4x6xf32>, memref<4x6xf32>) outs(%out : memref<4x6xf32>) on %s params []
  %t1 = kernel.alloc temporary : memref<4x6xf32>
  kernel.call "linear_grad_input"(%dy, %w : memref<4x8xf32>, memref<8x6xf32>) outs(%t1 : memref<4x6xf32>) on %s params []
  kernel.call "silu"(%t1 : memref<4x6xf32>) outs(%other : memref<4x6xf32>) on %s params []
  kernel.call "add"(%acc, %t1 : memref<4x6xf32>, memref<4x6xf32>) outs(%acc : memref<4x6xf32>) on %s params []
  %t2 = kernel.alloc temporary : memref<4x6xf32>
  kernel.call "linear_grad_input"(%dy, %w : memref<4x8xf32>, memref<8x6xf32>) outs(%t2 : memref<4x6xf32>) on %s params []
  kernel.call "silu"(%acc : memref<4x6xf32>) outs(%other : memref<4x6xf32>) on %s params []
  kernel.call "add"(%acc, %t2 : memref<4x6xf32>, memref<4x6xf32>) outs(%acc : memref<4x6xf32>) on %s params []
  %t3 = kernel.alloc temporary : memref<4x6xf32>
  %r = kernel.collective_start "all_reduce_start"(%other : memref<4x6xf32>) outs(%acc : memref<4x6xf32>) on %s params [0, 0, 4] -> !kernel.request
  kernel.call "linear_grad_input"(%dy, %w : memref<4x8xf32>, memref<8x6xf32>) outs(%t3 : memref<4x6xf32>) on %s params []
  kernel.wait %r on %s
  kernel.call "add"(%acc, %t3 : memref<4x6xf32>, memref<4x6xf32>) outs(%acc : memref<4x6xf32>) on %s params []
  %t4 = kernel.alloc temporary : memref<4x6xf32>
  kernel.call "silu"(%other : memref<4x6xf32>) outs(%t4 : memref<4x6xf32>) on %s params []
  kernel.call "add"(%acc, %t4 : memref<4x6xf32>, memref<4x6xf32>) outs(%acc : memref<4x6xf32>) on %s params []
  return
}

// -----

// Folded past the completion of a collective on other buffers (a pipeline
// stage's backward: its tp and cp collectives between a microbatch's
// weight-gradient GEMM and the add into the gradient's slot).
// CHECK-LABEL: func.func @past_unrelated_wait(
// CHECK:       kernel.collective_start
// CHECK-NEXT:  kernel.call "linear_grad_weight"(%{{.*}}) outs(%arg2 : memref<8x6xf32>) on %{{.*}} params [1]
// CHECK-NEXT:  kernel.wait
// CHECK-NOT:   kernel.call "add"
func.func @past_unrelated_wait(%dy: memref<4x8xf32>, %x: memref<4x6xf32>, %acc: memref<8x6xf32>, %other: memref<4x6xf32>) {
  %s = kernel.stream 0
  %t = kernel.alloc temporary : memref<8x6xf32>
  %c = kernel.alloc collective : memref<4x6xf32>
  %r = kernel.collective_start "all_reduce_start"(%other : memref<4x6xf32>) outs(%c : memref<4x6xf32>) on %s params [0, 0, 4] -> !kernel.request
  kernel.call "linear_grad_weight"(%dy, %x : memref<4x8xf32>, memref<4x6xf32>) outs(%t : memref<8x6xf32>) on %s params []
  kernel.wait %r on %s
  kernel.call "add"(%acc, %t : memref<8x6xf32>, memref<8x6xf32>) outs(%acc : memref<8x6xf32>) on %s params []
  return
}

// -----

// Kept: a collective completing in between that reads the accumulator (its
// start before the GEMM), and one that writes a view of it.
// CHECK-LABEL: func.func @kept_collectives(
// CHECK-COUNT-2: kernel.call "add"
// CHECK-NOT:   params [1]
func.func @kept_collectives(%dy: memref<4x8xf32>, %x: memref<4x6xf32>, %acc: memref<8x6xf32>) {
  %s = kernel.stream 0
  %t0 = kernel.alloc temporary : memref<8x6xf32>
  %c = kernel.alloc collective : memref<8x6xf32>
  %r0 = kernel.collective_start "all_reduce_start"(%acc : memref<8x6xf32>) outs(%c : memref<8x6xf32>) on %s params [0, 0, 4] -> !kernel.request
  kernel.call "linear_grad_weight"(%dy, %x : memref<4x8xf32>, memref<4x6xf32>) outs(%t0 : memref<8x6xf32>) on %s params []
  kernel.wait %r0 on %s
  kernel.call "add"(%acc, %t0 : memref<8x6xf32>, memref<8x6xf32>) outs(%acc : memref<8x6xf32>) on %s params []
  %t1 = kernel.alloc temporary : memref<8x6xf32>
  %flat = kernel.view %acc : memref<8x6xf32> to memref<48xf32>
  %src = kernel.alloc temporary : memref<48xf32>
  %r1 = kernel.collective_start "all_reduce_start"(%src : memref<48xf32>) outs(%flat : memref<48xf32>) on %s params [0, 0, 4] -> !kernel.request
  kernel.call "linear_grad_weight"(%dy, %x : memref<4x8xf32>, memref<4x6xf32>) outs(%t1 : memref<8x6xf32>) on %s params []
  kernel.wait %r1 on %s
  kernel.call "add"(%acc, %t1 : memref<8x6xf32>, memref<8x6xf32>) outs(%acc : memref<8x6xf32>) on %s params []
  return
}

// -----

// Float8's tensorwise scaled GEMMs fold too (the sum of a tensor's
// gradients through SwiGLU's two linears): their last parameter,
// accumulate, becomes 1. One that already accumulates folds no second add,
// nor does a rowwise one (a scale a row).
// CHECK-LABEL: func.func @scaled(
// CHECK-SAME:  %[[ACC:[^:]*]]: memref<4x8xbf16>
// CHECK:       kernel.call "scaled_matmul"({{.*}}) outs(%[[ACC]] : memref<4x8xbf16>) workspace({{.*}}) on %{{.*}} params [1, 1, 0, 0, 1, 0]
// CHECK-NEXT:  kernel.call "scaled_matmul"({{.*}}) outs(%[[ACC]] : memref<4x8xbf16>) workspace({{.*}}) on %{{.*}} params [1, 1, 0, 0, 1, 1]
// CHECK-NEXT:  %[[T:.*]] = kernel.alloc temporary : memref<4x8xbf16>
// CHECK-NEXT:  kernel.call "scaled_matmul"({{.*}}) outs(%[[T]] : memref<4x8xbf16>) workspace({{.*}}) on %{{.*}} params [1, 1, 0, 0, 1, 1]
// CHECK-NEXT:  kernel.call "add"(%[[ACC]], %[[T]]
// CHECK:       kernel.call "scaled_matmul"({{.*}}) outs(%[[R:.*]] : memref<4x8xbf16>) workspace({{.*}}) on %{{.*}} params [1, 1, 0, 0, 1, 0]
// CHECK-NEXT:  kernel.call "add"(%[[ACC]], %[[R]]
func.func @scaled(%acc: memref<4x8xbf16>, %dy: memref<4x16xf8E5M2>, %w: memref<8x16xf8E4M3FN>, %sc: memref<f32>, %ws: memref<1024xi8>, %rows: memref<4x1xf32>) {
  %s = kernel.stream 0
  kernel.call "scaled_matmul"(%dy, %sc, %w, %sc : memref<4x16xf8E5M2>, memref<f32>, memref<8x16xf8E4M3FN>, memref<f32>) outs(%acc : memref<4x8xbf16>) workspace(%ws : memref<1024xi8>) on %s params [1, 1, 0, 0, 1, 0]
  %t = kernel.alloc temporary : memref<4x8xbf16>
  kernel.call "scaled_matmul"(%dy, %sc, %w, %sc : memref<4x16xf8E5M2>, memref<f32>, memref<8x16xf8E4M3FN>, memref<f32>) outs(%t : memref<4x8xbf16>) workspace(%ws : memref<1024xi8>) on %s params [1, 1, 0, 0, 1, 0]
  kernel.call "add"(%acc, %t : memref<4x8xbf16>, memref<4x8xbf16>) outs(%acc : memref<4x8xbf16>) on %s params []
  %u = kernel.alloc temporary : memref<4x8xbf16>
  kernel.call "scaled_matmul"(%dy, %sc, %w, %sc : memref<4x16xf8E5M2>, memref<f32>, memref<8x16xf8E4M3FN>, memref<f32>) outs(%u : memref<4x8xbf16>) workspace(%ws : memref<1024xi8>) on %s params [1, 1, 0, 0, 1, 1]
  kernel.call "add"(%acc, %u : memref<4x8xbf16>, memref<4x8xbf16>) outs(%acc : memref<4x8xbf16>) on %s params []
  %r = kernel.alloc temporary : memref<4x8xbf16>
  kernel.call "scaled_matmul"(%dy, %rows, %w, %sc : memref<4x16xf8E5M2>, memref<4x1xf32>, memref<8x16xf8E4M3FN>, memref<f32>) outs(%r : memref<4x8xbf16>) workspace(%ws : memref<1024xi8>) on %s params [1, 1, 0, 0, 1, 0]
  kernel.call "add"(%acc, %r : memref<4x8xbf16>, memref<4x8xbf16>) outs(%acc : memref<4x8xbf16>) on %s params []
  return
}
