// RUN: titan-opt %s -split-input-file -kernel-plan-memory -verify-diagnostics | FileCheck %s

// Slots first, in order of first appearance over the steps (one slot shared
// by both steps), each rounded up to 256 bytes; then each step's buffers
// above them. Buffers whose lifetimes overlap never overlap in memory;
// placement is first fit by decreasing size. A view extends its source's
// life; a collective's input and output live until its wait. The steps
// share the region above the slots.
//
// Slots: param:w [0, 1024), input:x [1024, 1280), output:y [1280, 1536).
// @f, largest first: %big (2048 B, used through its view by the fill and
// the second silu) at 1536; %a (1024 B, read by the collective until its
// wait, so alive with %big) above it at 3584; the collective's output %c
// (512 B) above both at 4608; %late (1024 B) after %big's last use, in
// %big's place. @g's workspace reuses the same region.
// CHECK: module attributes {kernel.arena_bytes = 5120 : i64, kernel.slots = {"input:x" = array<i64: 1024, 64>, "output:y" = array<i64: 1280, 64>, "param:w" = array<i64: 0, 1024>}}
// CHECK-LABEL: func.func @f(
// CHECK: kernel.alloc temporary {offset = 3584 : i64} : memref<256xf32>
// CHECK: kernel.alloc temporary {offset = 1536 : i64} : memref<512xf32>
// CHECK: kernel.alloc collective {offset = 4608 : i64} : memref<128xf32>
// CHECK: kernel.alloc temporary {offset = 1536 : i64} : memref<256xf32>
// CHECK-LABEL: func.func @g(
// CHECK: kernel.alloc workspace {offset = 1536 : i64} : memref<1000xi8>
module {
  func.func @f(%w: memref<256xf32> {kernel.slot = "param:w"}, %x: memref<16xf32> {kernel.slot = "input:x"},
               %y: memref<16xf32> {kernel.slot = "output:y"}) {
    %s = kernel.stream 0
    %a = kernel.alloc temporary : memref<256xf32>
    kernel.call "silu"(%w : memref<256xf32>) outs(%a : memref<256xf32>) on %s params []
    %big = kernel.alloc temporary : memref<512xf32>
    %v = kernel.view %big : memref<512xf32> to memref<2x256xf32>
    %c = kernel.alloc collective : memref<128xf32>
    %r = kernel.collective_start "all_gather_start"(%a : memref<256xf32>) outs(%c : memref<128xf32>) on %s params [0, 0, 4] -> !kernel.request
    kernel.call "fill"() outs(%v : memref<2x256xf32>) on %s params [0.0 : f64]
    kernel.wait %r on %s
    kernel.call "silu"(%v : memref<2x256xf32>) outs(%v : memref<2x256xf32>) on %s params []
    %late = kernel.alloc temporary : memref<256xf32>
    kernel.call "silu"(%w : memref<256xf32>) outs(%late : memref<256xf32>) on %s params []
    return
  }
  func.func @g(%w: memref<256xf32> {kernel.slot = "param:w"}) {
    %s = kernel.stream 0
    %ws = kernel.alloc workspace : memref<1000xi8>
    kernel.call "silu"(%w : memref<256xf32>) outs(%w : memref<256xf32>) workspace(%ws : memref<1000xi8>) on %s params []
    return
  }
}

// -----

module {
  func.func @f(%w: memref<4xf32> {kernel.slot = "param:w"}) {
    return
  }
  // expected-error @+1 {{'func.func' op uses slot 'param:w' as 'memref<8xf32>', another step as 'memref<4xf32>'}}
  func.func @g(%w: memref<8xf32> {kernel.slot = "param:w"}) {
    return
  }
}

// -----

// expected-error @+1 {{'func.func' op argument #0 must be a static memref with a kernel.slot to be planned}}
func.func @f(%w: memref<4xf32>) {
  return
}

// -----

// A view at an offset (a contiguous titan.slice) keeps its source's buffer
// alive while it is used: %b, allocated after %a's last direct use, must
// not take %a's place while %v (a view into %a) is still read.
// CHECK-LABEL: func.func @offset_view
// CHECK: %[[A:.*]] = kernel.alloc temporary {offset = 0 : i64} : memref<2x8xf32>
// CHECK: kernel.view %[[A]] offset 32 : memref<2x8xf32> to memref<1x8xf32>
// CHECK: kernel.alloc temporary {offset = 256 : i64} : memref<8xf32>
func.func @offset_view() {
  %s = kernel.stream 0
  %a = kernel.alloc temporary : memref<2x8xf32>
  kernel.call "fill"() outs(%a : memref<2x8xf32>) on %s params [1.0]
  %v = kernel.view %a offset 32 : memref<2x8xf32> to memref<1x8xf32>
  %b = kernel.alloc temporary : memref<8xf32>
  kernel.call "fill"() outs(%b : memref<8xf32>) on %s params [2.0]
  %w = kernel.view %v : memref<1x8xf32> to memref<8xf32>
  kernel.call "add"(%w, %b : memref<8xf32>, memref<8xf32>) outs(%b : memref<8xf32>) on %s params []
  return
}
