// RUN: titan-opt %s -kernel-offload-state=max-prefetch-bytes=128 | FileCheck %s

// A kernel that fetches more than max-prefetch-bytes (w's 256 bytes) waits
// for its copy right before it: the copy starts there, not one reader
// ahead, so the staging buffer lives no longer than the copy (a step's
// gradient accumulation reads every gradient in one kernel).
// CHECK-LABEL: func.func @budget(
// CHECK-SAME: %[[W:.*]]: memref<64xf32, #kernel.memory_space<host>> {kernel.slot = "param:w"}
// CHECK: kernel.generic ins(%[[X:.*]] : memref<64xf32>)
// CHECK: %[[WD:.*]] = kernel.alloc staging : memref<64xf32>
// CHECK-NEXT: %[[R:.*]] = kernel.copy_start %[[W]], %[[WD]]
// CHECK-NEXT: kernel.wait %[[R]]
// CHECK-NEXT: kernel.generic ins(%[[WD]] : memref<64xf32>)
func.func @budget(%w: memref<64xf32> {kernel.slot = "param:w"},
                  %x: memref<64xf32> {kernel.slot = "input:x"}) {
  %s = kernel.stream 0
  %a = kernel.alloc temporary : memref<64xf32>
  kernel.generic ins(%x : memref<64xf32>) outs(%a : memref<64xf32>) on %s {
  ^bb0(%v: f32):
    %y = arith.mulf %v, %v : f32
    kernel.yield %y : f32
  }
  %b = kernel.alloc temporary : memref<64xf32>
  kernel.generic ins(%w : memref<64xf32>) outs(%b : memref<64xf32>) on %s {
  ^bb0(%v: f32):
    %y = arith.addf %v, %v : f32
    kernel.yield %y : f32
  }
  return
}

// A kernel.copy of a result into an offloaded slot goes on the copy stream
// (waited for at once, but for the fetch that follows it there): a later
// fetch of the slot is issued after it, in order on the copy stream.
// CHECK-LABEL: func.func @copy_into_slot(
// CHECK-SAME: %[[G:.*]]: memref<16xf32, #kernel.memory_space<host>> {kernel.slot = "grad:w"}
// CHECK: %[[COPIES:.*]] = kernel.stream 64
// CHECK: %[[R:.*]] = kernel.copy_start %{{.*}}, %[[G]] on %[[COPIES]] : memref<16xf32>, memref<16xf32, #kernel.memory_space<host>>
// CHECK-NEXT: %[[GD:.*]] = kernel.alloc staging : memref<16xf32>
// CHECK-NEXT: kernel.copy_start %[[G]], %[[GD]] on %[[COPIES]]
// CHECK-NEXT: kernel.wait %[[R]] on %[[COPIES]]
// CHECK-NOT: kernel.copy %
func.func @copy_into_slot(%g: memref<16xf32> {kernel.slot = "grad:w"},
                          %x: memref<16xf32> {kernel.slot = "input:x"}) {
  %s = kernel.stream 0
  %t = kernel.alloc temporary : memref<16xf32>
  kernel.generic ins(%x : memref<16xf32>) outs(%t : memref<16xf32>) on %s {
  ^bb0(%v: f32):
    %y = arith.mulf %v, %v : f32
    kernel.yield %y : f32
  }
  kernel.copy %t, %g on %s : memref<16xf32>, memref<16xf32>
  %u = kernel.alloc temporary : memref<16xf32>
  kernel.generic ins(%g : memref<16xf32>) outs(%u : memref<16xf32>) on %s {
  ^bb0(%v: f32):
    %y = arith.addf %v, %v : f32
    kernel.yield %y : f32
  }
  return
}
