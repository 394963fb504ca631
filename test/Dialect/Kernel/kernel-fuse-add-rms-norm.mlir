// RUN: titan-opt %s -split-input-file -kernel-fuse-add-rms-norm | FileCheck %s

// A block's residual add and the norm that reads its sum become one call:
// inputs (a, b, w), outputs (h, y), the norm's params; allocations between
// the two do not stop it, and the sum is still written (the backward reads
// it).
// CHECK-LABEL: func.func @residual(
// CHECK:       %[[Y:.*]] = kernel.alloc activation : memref<2x3x4xf32>
// CHECK-NEXT:  kernel.call "add_rms_norm"(%arg0, %arg1, %arg2 : memref<2x3x4xf32>, memref<2x3x4xf32>, memref<4xf32>) outs(%arg3, %[[Y]] : memref<2x3x4xf32>, memref<2x3x4xf32>) on %{{.*}} params [1.000000e-05]
// CHECK-NOT:   kernel.call "add"
// CHECK-NOT:   kernel.call "rms_norm"
// CHECK:       kernel.call "linear"(%[[Y]]
func.func @residual(%a: memref<2x3x4xf32>, %b: memref<2x3x4xf32>, %w: memref<4xf32>, %h: memref<2x3x4xf32>, %wq: memref<4x4xf32>, %q: memref<2x3x4xf32>) {
  %s = kernel.stream 0
  kernel.call "add"(%a, %b : memref<2x3x4xf32>, memref<2x3x4xf32>) outs(%h : memref<2x3x4xf32>) on %s params []
  %y = kernel.alloc activation : memref<2x3x4xf32>
  kernel.call "rms_norm"(%h, %w : memref<2x3x4xf32>, memref<4xf32>) outs(%y : memref<2x3x4xf32>) on %s params [1.0e-5]
  kernel.call "linear"(%y, %wq : memref<2x3x4xf32>, memref<4x4xf32>) outs(%q : memref<2x3x4xf32>) on %s params []
  return
}

// -----

// Not fused: a call between the two (it could read the sum before it is
// written), a norm of something else than the add's result, 16-bit buffers
// (the CPU's widened entries would norm the unrounded sum), another stream.
// CHECK-LABEL: func.func @kept(
// CHECK:       kernel.call "add"
// CHECK-NEXT:  kernel.call "mul"
// CHECK-NEXT:  kernel.call "rms_norm"
// CHECK-NEXT:  kernel.call "add"
// CHECK-NEXT:  kernel.call "rms_norm"(%arg0,
// CHECK-NEXT:  kernel.call "add"({{.*}}bf16
// CHECK-NEXT:  kernel.call "rms_norm"({{.*}}bf16
// CHECK-NEXT:  kernel.call "add"
// CHECK-NEXT:  kernel.call "rms_norm"
// CHECK-NOT:   add_rms_norm
func.func @kept(%a: memref<8x4xf32>, %b: memref<8x4xf32>, %w: memref<4xf32>, %h: memref<8x4xf32>, %y: memref<8x4xf32>,
                %a16: memref<8x4xbf16>, %w16: memref<4xbf16>, %h16: memref<8x4xbf16>, %y16: memref<8x4xbf16>) {
  %s = kernel.stream 0
  %t = kernel.stream 1
  kernel.call "add"(%a, %b : memref<8x4xf32>, memref<8x4xf32>) outs(%h : memref<8x4xf32>) on %s params []
  kernel.call "mul"(%h, %b : memref<8x4xf32>, memref<8x4xf32>) outs(%a : memref<8x4xf32>) on %s params []
  kernel.call "rms_norm"(%h, %w : memref<8x4xf32>, memref<4xf32>) outs(%y : memref<8x4xf32>) on %s params [1.0e-5]
  kernel.call "add"(%a, %b : memref<8x4xf32>, memref<8x4xf32>) outs(%h : memref<8x4xf32>) on %s params []
  kernel.call "rms_norm"(%a, %w : memref<8x4xf32>, memref<4xf32>) outs(%y : memref<8x4xf32>) on %s params [1.0e-5]
  kernel.call "add"(%a16, %a16 : memref<8x4xbf16>, memref<8x4xbf16>) outs(%h16 : memref<8x4xbf16>) on %s params []
  kernel.call "rms_norm"(%h16, %w16 : memref<8x4xbf16>, memref<4xbf16>) outs(%y16 : memref<8x4xbf16>) on %s params [1.0e-5]
  kernel.call "add"(%a, %b : memref<8x4xf32>, memref<8x4xf32>) outs(%h : memref<8x4xf32>) on %s params []
  kernel.call "rms_norm"(%h, %w : memref<8x4xf32>, memref<4xf32>) outs(%y : memref<8x4xf32>) on %t params [1.0e-5]
  return
}
