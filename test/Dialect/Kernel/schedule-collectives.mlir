// RUN: titan-opt %s -split-input-file -kernel-schedule-collectives | FileCheck %s
// RUN: titan-opt %s -split-input-file -kernel-schedule-collectives=max-in-flight-bytes=256 | FileCheck %s --check-prefix=BUDGET
// RUN: titan-opt %s -split-input-file -kernel-schedule-collectives=max-in-flight-bytes=128 | FileCheck %s --check-prefix=SMALL
// RUN: titan-opt %s -split-input-file -kernel-schedule-collectives=keep-start-order=true | FileCheck %s --check-prefix=KEEP

// A gather hoisted above independent compute, with the allocation of its
// result; its wait sunk past independent compute and a view to just above
// the first reader of the gathered buffer; both on the stream of its group
// (axis mask 4: stream 5, defined first), compute stays on stream 0.
// CHECK-LABEL: func.func @hoist(
// CHECK-NEXT:  %[[S5:.*]] = kernel.stream 5
// CHECK-NEXT:  %[[S0:.*]] = kernel.stream 0
// CHECK-NEXT:  %[[G:.*]] = kernel.alloc collective : memref<8x8xf32>
// CHECK-NEXT:  %[[R:.*]] = kernel.collective_start "all_gather_start"(%arg0 : memref<4x8xf32>) outs(%[[G]] : memref<8x8xf32>) on %[[S5]]
// CHECK-NEXT:  kernel.call "silu"(%arg1 : memref<16x8xf32>) outs(%arg2 : memref<16x8xf32>) on %[[S0]]
// CHECK-NEXT:  kernel.alloc workspace
// CHECK-NEXT:  kernel.call "silu"(%arg2 : memref<16x8xf32>) outs(%arg1 : memref<16x8xf32>) on %[[S0]]
// CHECK-NEXT:  %[[V:.*]] = kernel.view %[[G]]
// CHECK-NEXT:  kernel.wait %[[R]] on %[[S5]]
// CHECK-NEXT:  kernel.call "silu"(%[[V]] : memref<64xf32>)
// CHECK-NEXT:  return
// SMALL-LABEL: func.func @hoist(
// SMALL-NEXT:  kernel.stream 5
// SMALL-NEXT:  kernel.stream 0
// SMALL-NEXT:  kernel.call "silu"
// SMALL-NEXT:  kernel.alloc collective
// SMALL-NEXT:  kernel.collective_start
// SMALL-NEXT:  kernel.alloc workspace
// SMALL-NEXT:  kernel.wait
// SMALL-NEXT:  kernel.call "silu"
func.func @hoist(%p: memref<4x8xf32>, %a: memref<16x8xf32>, %b: memref<16x8xf32>, %out: memref<64xf32>) {
  %s = kernel.stream 0
  kernel.call "silu"(%a : memref<16x8xf32>) outs(%b : memref<16x8xf32>) on %s params []
  %unrelated = kernel.alloc workspace : memref<32xi8>
  %g = kernel.alloc collective : memref<8x8xf32>
  %r = kernel.collective_start "all_gather_start"(%p : memref<4x8xf32>) outs(%g : memref<8x8xf32>) on %s params [0, 0, 4] -> !kernel.request
  kernel.wait %r on %s
  kernel.call "silu"(%b : memref<16x8xf32>) outs(%a : memref<16x8xf32>) on %s params []
  %v = kernel.view %g : memref<8x8xf32> to memref<64xf32>
  kernel.call "silu"(%v : memref<64xf32>) outs(%out : memref<64xf32>) on %s params []
  return
}

// -----

// The start stays below the op that writes its input from a step buffer
// (through an offset view of the same buffer); the wait sinks past independent compute but
// stays above the next writer of the input (the collective still reads
// it). Axis mask 2: stream 3.
// CHECK-LABEL: func.func @input_writers(
// CHECK-NEXT:  %[[S3:.*]] = kernel.stream 3
// CHECK-NEXT:  kernel.stream 0
// CHECK-NEXT:  %[[E:.*]] = kernel.alloc temporary
// CHECK-NEXT:  kernel.call "silu"(%arg0 : memref<4x8xf32>) outs(%[[E]] : memref<4x8xf32>)
// CHECK-NEXT:  %[[T:.*]] = kernel.alloc temporary
// CHECK-NEXT:  kernel.call "silu"(%arg0 : memref<4x8xf32>) outs(%arg1 : memref<4x8xf32>)
// CHECK-NEXT:  %[[H:.*]] = kernel.view %[[T]] offset 128
// CHECK-NEXT:  kernel.call "silu"(%[[E]] : memref<4x8xf32>) outs(%[[H]] : memref<4x8xf32>)
// CHECK-NEXT:  kernel.view %[[T]] :
// CHECK-NEXT:  kernel.alloc collective
// CHECK-NEXT:  %[[R:.*]] = kernel.collective_start "all_reduce_start"{{.*}} on %[[S3]]
// CHECK-NEXT:  kernel.call "silu"(%arg0 : memref<4x8xf32>) outs(%arg2 : memref<4x8xf32>)
// CHECK-NEXT:  kernel.wait %[[R]] on %[[S3]]
// CHECK-NEXT:  kernel.call "silu"(%arg0 : memref<4x8xf32>) outs(%[[H]] : memref<4x8xf32>)
// CHECK-NEXT:  kernel.call "silu"(%{{.*}} : memref<64xf32>) outs(%arg3 : memref<64xf32>)
// CHECK-NEXT:  return
func.func @input_writers(%a: memref<4x8xf32>, %b: memref<4x8xf32>, %c: memref<4x8xf32>, %out: memref<64xf32>) {
  %s = kernel.stream 0
  %e = kernel.alloc temporary : memref<4x8xf32>
  kernel.call "silu"(%a : memref<4x8xf32>) outs(%e : memref<4x8xf32>) on %s params []
  %t = kernel.alloc temporary : memref<8x8xf32>
  kernel.call "silu"(%a : memref<4x8xf32>) outs(%b : memref<4x8xf32>) on %s params []
  %h = kernel.view %t offset 128 : memref<8x8xf32> to memref<4x8xf32>
  kernel.call "silu"(%e : memref<4x8xf32>) outs(%h : memref<4x8xf32>) on %s params []
  %v = kernel.view %t : memref<8x8xf32> to memref<64xf32>
  %o = kernel.alloc collective : memref<64xf32>
  %r = kernel.collective_start "all_reduce_start"(%v : memref<64xf32>) outs(%o : memref<64xf32>) on %s params [0, 0, 2] -> !kernel.request
  kernel.wait %r on %s
  kernel.call "silu"(%a : memref<4x8xf32>) outs(%c : memref<4x8xf32>) on %s params []
  kernel.call "silu"(%a : memref<4x8xf32>) outs(%h : memref<4x8xf32>) on %s params []
  kernel.call "silu"(%o : memref<64xf32>) outs(%out : memref<64xf32>) on %s params []
  return
}

// -----

// The start stays below an op that reads (or writes) its output buffer
// (write after read); the wait stays above a reader of the output through
// an offset view.
// CHECK-LABEL: func.func @output_users(
// CHECK:       %[[G:.*]] = kernel.alloc collective
// CHECK-NEXT:  %[[F:.*]] = kernel.view %[[G]] :
// CHECK-NEXT:  kernel.call "silu"(%arg1 : memref<64xf32>) outs(%[[F]] : memref<64xf32>)
// CHECK-NEXT:  kernel.call "silu"(%[[F]] : memref<64xf32>) outs(%arg1 : memref<64xf32>)
// CHECK-NEXT:  %[[R:.*]] = kernel.collective_start "all_gather_start"
// CHECK-NEXT:  kernel.call "silu"(%arg3 : memref<32xf32>) outs(%arg2 : memref<32xf32>)
// CHECK-NEXT:  kernel.view %[[G]] offset 128
// CHECK-NEXT:  kernel.wait %[[R]]
// CHECK-NEXT:  kernel.call "silu"(%{{.*}} : memref<32xf32>) outs(%arg2 : memref<32xf32>)
// CHECK-NEXT:  return
func.func @output_users(%p: memref<4x8xf32>, %a: memref<64xf32>, %out: memref<32xf32>, %x: memref<32xf32>) {
  %s = kernel.stream 0
  %g = kernel.alloc collective : memref<8x8xf32>
  %first = kernel.view %g : memref<8x8xf32> to memref<64xf32>
  kernel.call "silu"(%a : memref<64xf32>) outs(%first : memref<64xf32>) on %s params []
  kernel.call "silu"(%first : memref<64xf32>) outs(%a : memref<64xf32>) on %s params []
  %r = kernel.collective_start "all_gather_start"(%p : memref<4x8xf32>) outs(%g : memref<8x8xf32>) on %s params [0, 0, 4] -> !kernel.request
  kernel.wait %r on %s
  kernel.call "silu"(%x : memref<32xf32>) outs(%out : memref<32xf32>) on %s params []
  %half = kernel.view %g offset 128 : memref<8x8xf32> to memref<32xf32>
  kernel.call "silu"(%half : memref<32xf32>) outs(%out : memref<32xf32>) on %s params []
  return
}

// -----

// Two gathers of 256 planned bytes each (their inputs are state slots,
// which live all step anyway). Unbounded, the second start follows the
// first at once: the starts keep their order. With a budget of 256 bytes,
// the second start stops below the compute the first one's window already
// grew over; with 128, neither fits and both keep their windows.
// CHECK-LABEL: func.func @budget(
// CHECK-NEXT:  kernel.stream 5
// CHECK-NEXT:  kernel.stream 0
// CHECK-NEXT:  %[[G1:.*]] = kernel.alloc collective
// CHECK-NEXT:  %[[R1:.*]] = kernel.collective_start "all_gather_start"(%arg0
// CHECK-NEXT:  %[[G2:.*]] = kernel.alloc collective
// CHECK-NEXT:  %[[R2:.*]] = kernel.collective_start "all_gather_start"(%arg1
// CHECK-NEXT:  kernel.call "silu"(%arg2
// CHECK-NEXT:  kernel.call "silu"(%arg3
// CHECK-NEXT:  kernel.call "silu"(%arg2
// CHECK-NEXT:  kernel.wait %[[R1]]
// CHECK-NEXT:  kernel.call "add"(%[[G1]], %[[G1]]
// CHECK-NEXT:  kernel.wait %[[R2]]
// CHECK-NEXT:  kernel.call "add"(%[[G2]], %[[G2]]
// CHECK-NEXT:  return
// BUDGET-LABEL: func.func @budget(
// BUDGET-NEXT:  kernel.stream 5
// BUDGET-NEXT:  kernel.stream 0
// BUDGET-NEXT:  %[[G1:.*]] = kernel.alloc collective
// BUDGET-NEXT:  %[[R1:.*]] = kernel.collective_start "all_gather_start"(%arg0
// BUDGET-NEXT:  kernel.call "silu"(%arg2
// BUDGET-NEXT:  kernel.call "silu"(%arg3
// BUDGET-NEXT:  kernel.call "silu"(%arg2
// BUDGET-NEXT:  %[[G2:.*]] = kernel.alloc collective
// BUDGET-NEXT:  %[[R2:.*]] = kernel.collective_start "all_gather_start"(%arg1
// BUDGET-NEXT:  kernel.wait %[[R1]]
// BUDGET-NEXT:  kernel.call "add"(%[[G1]], %[[G1]]
// BUDGET-NEXT:  kernel.wait %[[R2]]
// BUDGET-NEXT:  kernel.call "add"(%[[G2]], %[[G2]]
// BUDGET-NEXT:  return
// SMALL-LABEL: func.func @budget(
// SMALL-NEXT:  kernel.stream 5
// SMALL-NEXT:  kernel.stream 0
// SMALL-NEXT:  kernel.call "silu"(%arg2
// SMALL-NEXT:  kernel.call "silu"(%arg3
// SMALL-NEXT:  kernel.alloc collective
// SMALL-NEXT:  kernel.collective_start "all_gather_start"(%arg0
// SMALL-NEXT:  kernel.wait
func.func @budget(%p: memref<4x8xf32>, %q: memref<4x8xf32>, %a: memref<16x8xf32>, %b: memref<16x8xf32>, %u: memref<8x8xf32>) {
  %s = kernel.stream 0
  kernel.call "silu"(%a : memref<16x8xf32>) outs(%b : memref<16x8xf32>) on %s params []
  kernel.call "silu"(%b : memref<16x8xf32>) outs(%a : memref<16x8xf32>) on %s params []
  %g1 = kernel.alloc collective : memref<8x8xf32>
  %r1 = kernel.collective_start "all_gather_start"(%p : memref<4x8xf32>) outs(%g1 : memref<8x8xf32>) on %s params [0, 0, 4] -> !kernel.request
  kernel.wait %r1 on %s
  kernel.call "silu"(%a : memref<16x8xf32>) outs(%b : memref<16x8xf32>) on %s params []
  kernel.call "add"(%g1, %g1 : memref<8x8xf32>, memref<8x8xf32>) outs(%u : memref<8x8xf32>) on %s params []
  %g2 = kernel.alloc collective : memref<8x8xf32>
  %r2 = kernel.collective_start "all_gather_start"(%q : memref<4x8xf32>) outs(%g2 : memref<8x8xf32>) on %s params [0, 0, 4] -> !kernel.request
  kernel.wait %r2 on %s
  kernel.call "add"(%g2, %g2 : memref<8x8xf32>, memref<8x8xf32>) outs(%u : memref<8x8xf32>) on %s params []
  return
}

// -----

// A reduce-scatter into a gradient slot nothing reads afterwards is waited
// for just before the return; its start stays below the op that computes
// its input.
// CHECK-LABEL: func.func @to_return(
// CHECK:       kernel.call "silu"(%arg0 : memref<8x8xf32>) outs(%[[T:.*]] : memref<8x8xf32>)
// CHECK-NEXT:  %[[R:.*]] = kernel.collective_start "reduce_scatter_start"(%[[T]]
// CHECK-NEXT:  kernel.call "silu"(%arg2
// CHECK-NEXT:  kernel.call "silu"(%arg3
// CHECK-NEXT:  kernel.wait %[[R]]
// CHECK-NEXT:  return
func.func @to_return(%x: memref<8x8xf32>, %slot: memref<4x8xf32>, %a: memref<16x8xf32>, %b: memref<16x8xf32>) {
  %s = kernel.stream 0
  %t = kernel.alloc temporary : memref<8x8xf32>
  kernel.call "silu"(%x : memref<8x8xf32>) outs(%t : memref<8x8xf32>) on %s params []
  %r = kernel.collective_start "reduce_scatter_start"(%t : memref<8x8xf32>) outs(%slot : memref<4x8xf32>) on %s params [0, 0, 4] -> !kernel.request
  kernel.wait %r on %s
  kernel.call "silu"(%a : memref<16x8xf32>) outs(%b : memref<16x8xf32>) on %s params []
  kernel.call "silu"(%b : memref<16x8xf32>) outs(%a : memref<16x8xf32>) on %s params []
  return
}

// -----

// Start order. A gather may pass the start of a reduce-scatter issued
// before it (every rank of the group runs this program, so all reorder
// alike: the backward's re-gathers prefetch past the reduce-scatters),
// but not another gather (one kind keeps its order) nor a start whose
// group includes the pipeline axis (mask bit 0: ranks of other programs);
// with keep-start-order=true no start passes another.
// CHECK-LABEL: func.func @start_order(
// CHECK:       kernel.collective_start "send_recv_start"
// CHECK-NEXT:  kernel.alloc collective
// CHECK-NEXT:  kernel.collective_start "all_gather_start"(%arg4
// CHECK-NEXT:  kernel.alloc collective
// CHECK-NEXT:  kernel.collective_start "all_gather_start"(%arg5
// CHECK-NEXT:  kernel.call "silu"(%arg0
// CHECK-NEXT:  %[[E:.*]] = kernel.alloc temporary
// CHECK-NEXT:  kernel.call "silu"(%arg0 : memref<8x8xf32>) outs(%[[E]] :
// CHECK-NEXT:  %[[T:.*]] = kernel.alloc temporary
// CHECK-NEXT:  kernel.call "silu"(%[[E]] : memref<8x8xf32>) outs(%[[T]] :
// CHECK-NEXT:  kernel.collective_start "reduce_scatter_start"(%[[T]]
// KEEP-LABEL: func.func @start_order(
// KEEP:       kernel.collective_start "send_recv_start"
// KEEP:       kernel.collective_start "all_gather_start"(%arg4
// KEEP:       kernel.collective_start "reduce_scatter_start"
// KEEP:       kernel.collective_start "all_gather_start"(%arg5
func.func @start_order(%x: memref<8x8xf32>, %slot: memref<4x8xf32>, %y: memref<8x8xf32>, %z: memref<8x8xf32>, %p: memref<4x8xf32>, %q: memref<4x8xf32>, %u: memref<8x8xf32>) {
  %s = kernel.stream 0
  %r0 = kernel.collective_start "send_recv_start"(%y : memref<8x8xf32>) outs(%z : memref<8x8xf32>) on %s params [1, 0, 1] -> !kernel.request
  kernel.wait %r0 on %s
  %g0 = kernel.alloc collective : memref<8x8xf32>
  %r1 = kernel.collective_start "all_gather_start"(%p : memref<4x8xf32>) outs(%g0 : memref<8x8xf32>) on %s params [0, 0, 4] -> !kernel.request
  kernel.wait %r1 on %s
  kernel.call "silu"(%x : memref<8x8xf32>) outs(%u : memref<8x8xf32>) on %s params []
  %e = kernel.alloc temporary : memref<8x8xf32>
  kernel.call "silu"(%x : memref<8x8xf32>) outs(%e : memref<8x8xf32>) on %s params []
  %t = kernel.alloc temporary : memref<8x8xf32>
  kernel.call "silu"(%e : memref<8x8xf32>) outs(%t : memref<8x8xf32>) on %s params []
  %r2 = kernel.collective_start "reduce_scatter_start"(%t : memref<8x8xf32>) outs(%slot : memref<4x8xf32>) on %s params [0, 0, 4] -> !kernel.request
  kernel.wait %r2 on %s
  %g = kernel.alloc collective : memref<8x8xf32>
  %r3 = kernel.collective_start "all_gather_start"(%q : memref<4x8xf32>) outs(%g : memref<8x8xf32>) on %s params [0, 0, 4] -> !kernel.request
  kernel.wait %r3 on %s
  kernel.call "add"(%g, %g0 : memref<8x8xf32>, memref<8x8xf32>) outs(%u : memref<8x8xf32>) on %s params []
  return
}

// -----

// An op whose effects are unknown (here a call) is a barrier: neither the
// start nor the wait crosses it.
// CHECK-LABEL: func.func @barrier(
// CHECK:       kernel.call "silu"
// CHECK-NEXT:  call @opaque()
// CHECK-NEXT:  kernel.alloc collective
// CHECK-NEXT:  %[[R:.*]] = kernel.collective_start "all_gather_start"
// CHECK-NEXT:  kernel.wait %[[R]]
// CHECK-NEXT:  call @opaque()
// CHECK-NEXT:  kernel.call "silu"
func.func private @opaque()
func.func @barrier(%p: memref<4x8xf32>, %a: memref<16x8xf32>, %b: memref<16x8xf32>) {
  %s = kernel.stream 0
  kernel.call "silu"(%a : memref<16x8xf32>) outs(%b : memref<16x8xf32>) on %s params []
  func.call @opaque() : () -> ()
  %g = kernel.alloc collective : memref<8x8xf32>
  %r = kernel.collective_start "all_gather_start"(%p : memref<4x8xf32>) outs(%g : memref<8x8xf32>) on %s params [0, 0, 4] -> !kernel.request
  kernel.wait %r on %s
  func.call @opaque() : () -> ()
  kernel.call "silu"(%b : memref<16x8xf32>) outs(%a : memref<16x8xf32>) on %s params []
  return
}

// -----

// Mixed precision casts each parameter shard into a bf16 copy right before
// its gather: the cast reads only a state slot and writes only the gather's
// input, so it moves up with the start (FSDP2 casts in the all-gather's
// copy-in). A producer that reads a step buffer does not.
// CHECK-LABEL: func.func @state_producer(
// CHECK:       kernel.alloc temporary : memref<4x8xbf16>
// CHECK-NEXT:  kernel.call "cast"(%arg0 : memref<4x8xf32>)
// CHECK-NEXT:  kernel.alloc collective
// CHECK-NEXT:  kernel.collective_start "all_gather_start"
// CHECK-NEXT:  kernel.call "silu"(%arg1
// CHECK-NEXT:  kernel.call "silu"(%arg2
// CHECK:       kernel.call "silu"(%[[E:[0-9]+]] : memref<4x8xf32>) outs(%[[T:.*]] :
// CHECK-NEXT:  kernel.alloc collective
// CHECK-NEXT:  kernel.collective_start "all_reduce_start"(%[[T]]
// CHECK-NEXT:  kernel.wait
func.func @state_producer(%p: memref<4x8xf32>, %a: memref<4x8xf32>, %b: memref<4x8xf32>, %u: memref<8x8xbf16>, %v: memref<4x8xf32>) {
  %s = kernel.stream 0
  kernel.call "silu"(%a : memref<4x8xf32>) outs(%b : memref<4x8xf32>) on %s params []
  kernel.call "silu"(%b : memref<4x8xf32>) outs(%a : memref<4x8xf32>) on %s params []
  %c = kernel.alloc temporary : memref<4x8xbf16>
  kernel.call "cast"(%p : memref<4x8xf32>) outs(%c : memref<4x8xbf16>) on %s params []
  %g = kernel.alloc collective : memref<8x8xbf16>
  %r = kernel.collective_start "all_gather_start"(%c : memref<4x8xbf16>) outs(%g : memref<8x8xbf16>) on %s params [0, 0, 4] -> !kernel.request
  kernel.wait %r on %s
  kernel.call "add"(%g, %g : memref<8x8xbf16>, memref<8x8xbf16>) outs(%u : memref<8x8xbf16>) on %s params []
  %e = kernel.alloc temporary : memref<4x8xf32>
  kernel.call "silu"(%a : memref<4x8xf32>) outs(%e : memref<4x8xf32>) on %s params []
  %t = kernel.alloc temporary : memref<4x8xf32>
  kernel.call "silu"(%e : memref<4x8xf32>) outs(%t : memref<4x8xf32>) on %s params []
  %o = kernel.alloc collective : memref<4x8xf32>
  %r2 = kernel.collective_start "all_reduce_start"(%t : memref<4x8xf32>) outs(%o : memref<4x8xf32>) on %s params [0, 0, 16] -> !kernel.request
  kernel.wait %r2 on %s
  kernel.call "add"(%o, %o : memref<4x8xf32>, memref<4x8xf32>) outs(%v : memref<4x8xf32>) on %s params []
  return
}

// -----

// A weight's float8 cast of its shard computes the scale from the amax
// (one element) and writes it for the GEMMs: it moves up with the start,
// and so does the scale kernel before it, but not above the kernel that
// computed the amax from a step buffer.
// CHECK-LABEL: func.func @float8_state_producer(
// CHECK:       kernel.call "amax"
// CHECK-NEXT:  kernel.alloc temporary : memref<f32>
// CHECK-NEXT:  kernel.call "float8_scale"
// CHECK-NEXT:  kernel.alloc temporary : memref<4x8xf8E4M3FN>
// CHECK-NEXT:  kernel.call "quantize"(%arg0, %[[S:.*]] : memref<4x8xbf16>, memref<f32>)
// CHECK-NEXT:  kernel.alloc collective
// CHECK-NEXT:  kernel.collective_start "all_gather_start"
// CHECK-NEXT:  kernel.call "silu"(%arg3
// CHECK-NEXT:  kernel.call "silu"(%arg2
// CHECK-NEXT:  kernel.call "silu"(%arg3
func.func @float8_state_producer(%p: memref<4x8xbf16>, %w: memref<4x8xf32>, %a: memref<4x8xf32>, %b: memref<4x8xf32>, %u: memref<8x8xf8E4M3FN>) {
  %s = kernel.stream 0
  %act = kernel.alloc temporary : memref<4x8xf32>
  kernel.call "silu"(%w : memref<4x8xf32>) outs(%act : memref<4x8xf32>) on %s params []
  %m = kernel.alloc temporary : memref<f32>
  kernel.call "amax"(%act : memref<4x8xf32>) outs(%m : memref<f32>) on %s params [0]
  kernel.call "silu"(%b : memref<4x8xf32>) outs(%a : memref<4x8xf32>) on %s params []
  %sc = kernel.alloc temporary : memref<f32>
  kernel.call "float8_scale"(%m : memref<f32>) outs(%sc : memref<f32>) on %s params [0, 4.480000e+02]
  kernel.call "silu"(%a : memref<4x8xf32>) outs(%b : memref<4x8xf32>) on %s params []
  kernel.call "silu"(%b : memref<4x8xf32>) outs(%a : memref<4x8xf32>) on %s params []
  %q = kernel.alloc temporary : memref<4x8xf8E4M3FN>
  kernel.call "quantize"(%p, %sc : memref<4x8xbf16>, memref<f32>) outs(%q : memref<4x8xf8E4M3FN>) on %s params [0, 0]
  %g = kernel.alloc collective : memref<8x8xf8E4M3FN>
  %r = kernel.collective_start "all_gather_start"(%q : memref<4x8xf8E4M3FN>) outs(%g : memref<8x8xf8E4M3FN>) on %s params [0, 0, 4] -> !kernel.request
  kernel.wait %r on %s
  kernel.call "transpose"(%g : memref<8x8xf8E4M3FN>) outs(%u : memref<8x8xf8E4M3FN>) on %s params []
  kernel.call "scaled_matmul"(%q, %sc, %q, %sc : memref<4x8xf8E4M3FN>, memref<f32>, memref<4x8xf8E4M3FN>, memref<f32>) outs(%a : memref<4x8xf32>) on %s params [0, 0, 0, 0, 0, 0]
  return
}
