// RUN: titan-opt %s -split-input-file -kernel-generate-pointwise | FileCheck %s

// A pointwise call becomes a generated kernel whose body is the op's scalar
// semantics (titan.silu: x / (1 + exp(-x))) in f32, the computation type of
// f32 buffers, with no rounding to add.
// CHECK-LABEL: func.func @silu_f32(
// CHECK:       kernel.generic ins(%arg0 : memref<4x8xf32>) outs(%arg1 : memref<4x8xf32>) on %{{.*}} {
// CHECK-NEXT:  ^bb0(%[[X:.*]]: f32):
// CHECK-NEXT:    %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:    %[[NEG:.*]] = arith.negf %[[X]] : f32
// CHECK-NEXT:    %[[E:.*]] = math.exp %[[NEG]] : f32
// CHECK-NEXT:    %[[D:.*]] = arith.addf %[[ONE]], %[[E]] : f32
// CHECK-NEXT:    %[[Y:.*]] = arith.divf %[[X]], %[[D]] : f32
// CHECK-NEXT:    kernel.yield %[[Y]] : f32
// CHECK-NOT:   kernel.call
func.func @silu_f32(%x: memref<4x8xf32>, %y: memref<4x8xf32>) {
  %s = kernel.stream 0
  kernel.call "silu"(%x : memref<4x8xf32>) outs(%y : memref<4x8xf32>) on %s params []
  return
}

// -----

// A producer fuses into its only consumer: the temporary between them is
// gone (it never reaches the arena), and the silu's result is still rounded
// to bf16 before the mul reads it, as the two calls computed it. The
// widened-copy workspace of the CPU's 16-bit library entry goes too.
// CHECK-LABEL: func.func @silu_mul_bf16(
// CHECK-NOT:   kernel.alloc
// CHECK:       kernel.generic ins(%arg1, %arg0 : memref<4x8xbf16>, memref<4x8xbf16>) outs(%arg2 : memref<4x8xbf16>)
// CHECK-NEXT:  ^bb0(%[[U:.*]]: bf16, %[[X:.*]]: bf16):
// CHECK-NEXT:    %[[XW:.*]] = arith.extf %[[X]] : bf16 to f32
// CHECK:         %[[T:.*]] = arith.divf %[[XW]], %{{.*}} : f32
// CHECK-NEXT:    %[[TR:.*]] = arith.truncf %[[T]] : f32 to bf16
// CHECK-NEXT:    %[[TW:.*]] = arith.extf %[[TR]] : bf16 to f32
// CHECK-NEXT:    %[[UW:.*]] = arith.extf %[[U]] : bf16 to f32
// CHECK-NEXT:    %[[P:.*]] = arith.mulf %[[TW]], %[[UW]] : f32
// CHECK-NEXT:    %[[R:.*]] = arith.truncf %[[P]] : f32 to bf16
// CHECK-NEXT:    kernel.yield %[[R]] : bf16
// CHECK-NOT:   kernel.generic
func.func @silu_mul_bf16(%x: memref<4x8xbf16>, %u: memref<4x8xbf16>, %y: memref<4x8xbf16>) {
  %s = kernel.stream 0
  %t = kernel.alloc temporary : memref<4x8xbf16>
  %w = kernel.alloc workspace : memref<256xi8>
  kernel.call "silu"(%x : memref<4x8xbf16>) outs(%t : memref<4x8xbf16>) workspace(%w : memref<256xi8>) on %s params []
  kernel.call "mul"(%t, %u : memref<4x8xbf16>, memref<4x8xbf16>) outs(%y : memref<4x8xbf16>) on %s params []
  return
}

// -----

// A cast chain: f32 -> bf16 -> f32 rounds once to bf16 in the middle;
// casts convert by the generator's rounding alone. The intermediate is also
// read after the consumer, so the fused kernel still writes it.
// CHECK-LABEL: func.func @cast_kept(
// CHECK:       %[[MID:.*]] = kernel.alloc temporary : memref<16xbf16>
// CHECK:       kernel.generic ins(%arg0 : memref<16xf32>) outs(%arg1, %[[MID]] : memref<16xf32>, memref<16xbf16>)
// CHECK-NEXT:  ^bb0(%[[A:.*]]: f32):
// CHECK-NEXT:    %[[B:.*]] = arith.truncf %[[A]] : f32 to bf16
// CHECK-NEXT:    %[[C:.*]] = arith.extf %[[B]] : bf16 to f32
// CHECK-NEXT:    kernel.yield %[[C]], %[[B]] : f32, bf16
// CHECK:       %[[M:.*]] = kernel.view %[[MID]]
// CHECK:       kernel.call "linear"(%[[M]]
func.func @cast_kept(%a: memref<16xf32>, %c: memref<16xf32>, %w: memref<16x16xbf16>, %o: memref<16xbf16>) {
  %s = kernel.stream 0
  %mid = kernel.alloc temporary : memref<16xbf16>
  kernel.call "cast"(%a : memref<16xf32>) outs(%mid : memref<16xbf16>) on %s params []
  kernel.call "cast"(%mid : memref<16xbf16>) outs(%c : memref<16xf32>) on %s params []
  %m = kernel.view %mid : memref<16xbf16> to memref<1x16xbf16>
  %r = kernel.view %o : memref<16xbf16> to memref<1x16xbf16>
  kernel.call "linear"(%m, %w : memref<1x16xbf16>, memref<16x16xbf16>) outs(%r : memref<1x16xbf16>) on %s params []
  return
}

// -----

// Not fused: a call between them writes what both read (the producer
// would read the new values at the consumer's place, the consumer the old
// ones at the producer's), the consumer runs on another stream. Each call
// is still generated. Where another op only reads the intermediate in
// between (the GEMM reading sqrt's result), the consumer moves up to the
// producer and they fuse there, still writing the intermediate for the
// GEMM. The later silu of the same input stays a kernel of its own: as
// a sibling it would hold an f32 result as large as the read it saves
// longer.
// CHECK-LABEL: func.func @kept(
// CHECK:       kernel.generic ins(%arg0 : memref<2x4xf32>)
// CHECK:       kernel.call "linear"
// CHECK:       kernel.generic ins(%{{.*}}, %arg0 :
// CHECK:       kernel.generic ins(%arg1 : memref<2x4xf32>) outs(%arg4, %[[T2:[0-9]+]] : memref<2x4xf32>, memref<2x4xf32>)
// CHECK:       kernel.call "linear"(%[[T2]],
// CHECK-COUNT-2: kernel.generic
// CHECK-NOT:   kernel.generic
func.func @kept(%x: memref<2x4xf32>, %u: memref<2x4xf32>, %w: memref<4x4xf32>, %n: memref<4xf32>, %y: memref<2x4xf32>, %z: memref<2x4xf32>) {
  %s = kernel.stream 0
  %s1 = kernel.stream 1
  %t = kernel.alloc temporary : memref<2x4xf32>
  kernel.call "silu"(%x : memref<2x4xf32>) outs(%t : memref<2x4xf32>) on %s params []
  kernel.call "linear"(%u, %w : memref<2x4xf32>, memref<4x4xf32>) outs(%x : memref<2x4xf32>) on %s params []
  kernel.call "mul"(%t, %x : memref<2x4xf32>, memref<2x4xf32>) outs(%y : memref<2x4xf32>) on %s params []
  %t2 = kernel.alloc temporary : memref<2x4xf32>
  kernel.call "sqrt"(%u : memref<2x4xf32>) outs(%t2 : memref<2x4xf32>) on %s params []
  kernel.call "linear"(%t2, %w : memref<2x4xf32>, memref<4x4xf32>) outs(%z : memref<2x4xf32>) on %s params []
  kernel.call "add"(%t2, %u : memref<2x4xf32>, memref<2x4xf32>) outs(%y : memref<2x4xf32>) on %s params []
  %t3 = kernel.alloc temporary : memref<2x4xf32>
  kernel.call "silu"(%u : memref<2x4xf32>) outs(%t3 : memref<2x4xf32>) on %s params []
  kernel.call "silu"(%t3 : memref<2x4xf32>) outs(%z : memref<2x4xf32>) on %s1 params []
  return
}

// -----

// Left as library calls: kernels that are not pointwise ops, and pointwise
// ops on types the generator does not take (float8 casts stay the runtime's
// saturating conversion; a body would compute on a float8 operand, which
// only titan.transpose's moves).
// CHECK-LABEL: func.func @library(
// CHECK:       kernel.call "cast"
// CHECK:       kernel.call "cast"
// CHECK-NOT:   kernel.generic
func.func @library(%a: memref<16xf32>, %b: memref<16xf8E4M3FN>) {
  %s = kernel.stream 0
  kernel.call "cast"(%a : memref<16xf32>) outs(%b : memref<16xf8E4M3FN>) on %s params []
  kernel.call "cast"(%b : memref<16xf8E4M3FN>) outs(%a : memref<16xf32>) on %s params []
  return
}

// -----

// An in-place producer (silu over its input) fuses: the fused kernel still
// writes its result over the input, whose buffer others use, and reads the
// input before writing it.
// CHECK-LABEL: func.func @in_place(
// CHECK:       kernel.generic ins(%arg1, %arg0 : memref<8xf32>, memref<8xf32>) outs(%arg2, %arg0 : memref<8xf32>, memref<8xf32>)
// CHECK-NOT:   kernel.generic
func.func @in_place(%x: memref<8xf32>, %u: memref<8xf32>, %y: memref<8xf32>) {
  %s = kernel.stream 0
  kernel.call "silu"(%x : memref<8xf32>) outs(%x : memref<8xf32>) on %s params []
  kernel.call "mul"(%x, %u : memref<8xf32>, memref<8xf32>) outs(%y : memref<8xf32>) on %s params []
  return
}

// -----

// Not fused: the consumer writes its output over a view of a buffer the
// producer reads through another, shifted view. Fused, element i's store
// would land where element i + 4 still has to be read.
// CHECK-LABEL: func.func @shifted_views(
// CHECK-COUNT-2: kernel.generic
func.func @shifted_views(%r: memref<12xf32>) {
  %s = kernel.stream 0
  %lo = kernel.view %r offset 0 : memref<12xf32> to memref<8xf32>
  %hi = kernel.view %r offset 16 : memref<12xf32> to memref<8xf32>
  %t = kernel.alloc temporary : memref<8xf32>
  kernel.call "add"(%lo, %hi : memref<8xf32>, memref<8xf32>) outs(%t : memref<8xf32>) on %s params []
  kernel.call "add"(%t, %t : memref<8xf32>, memref<8xf32>) outs(%hi : memref<8xf32>) on %s params []
  return
}

// -----

// Float8's tensorwise cast: the amax is a reduction kernel (absmax of the
// input's elements); the scale (one element) and the quantize (one element
// per input element, the scale broadcast) become one kernel, which
// computes the scale from the amax and still writes it once (the GEMM and
// the transposed cast read it). The scale's body is torchao's
// amax_to_scale, the quantize's the saturating float8 encoding on the f32
// bits. The transposed cast of the same input with that scale joins the
// kernel (moving up past the GEMM, which only reads the scale): one read
// of the input gives both layouts, the code computed once and stored to
// the transposed output's place too. The rowwise cast's scale has neither
// one element nor the input's count: it stays a library call, as does a
// row amax.
// CHECK-LABEL: func.func @float8(
// CHECK:       kernel.generic ins(%arg0 : memref<4x8xbf16>) reduce [#kernel.reduction<absmax>](%[[AMAX:.*]] : memref<f32>)
// CHECK-NEXT:  ^bb0(%[[X0:.*]]: bf16):
// CHECK-NEXT:    %[[W:.*]] = arith.extf %[[X0]] : bf16 to f32
// CHECK-NEXT:    kernel.yield %[[W]] : f32
// CHECK:       kernel.generic ins(%arg0, %[[AMAX]] : memref<4x8xbf16>, memref<f32>) outs(%[[QT:.*]], %[[SCALE:.*]], %[[Q:.*]] : memref<8x4xf8E4M3FN>, memref<f32>, memref<4x8xf8E4M3FN>)
// CHECK-NEXT:  ^bb0(%{{.*}}: bf16, %{{.*}}: f32):
// CHECK:         arith.maximumf
// CHECK:         arith.divf
// CHECK:         arith.bitcast %{{.*}} : f32 to i32
// CHECK:         math.roundeven
// CHECK:         %[[CODE:.*]] = arith.trunci %{{.*}} : i32 to i8
// CHECK:         %[[F8:.*]] = arith.bitcast %[[CODE]] : i8 to f8E4M3FN
// CHECK-NOT:     arith.trunci
// CHECK:         kernel.yield %[[F8]], %{{.*}}, %[[F8]] : f8E4M3FN, f32, f8E4M3FN
// CHECK-NEXT:  } {transposed_outputs = array<i64: 0>}
// CHECK:       kernel.call "scaled_matmul"(%[[Q]], %[[SCALE]]
// CHECK:       kernel.call "quantize"(%arg0, %arg1 : memref<4x8xbf16>, memref<4x1xf32>)
// CHECK:       kernel.call "amax"(%arg0 : memref<4x8xbf16>) outs(%arg1 : memref<4x1xf32>) on %{{.*}} params [1]
func.func @float8(%x: memref<4x8xbf16>, %rows: memref<4x1xf32>, %w: memref<16x8xf8E4M3FN>, %ws: memref<1024xi8>, %y: memref<4x16xbf16>, %qr: memref<4x8xf8E4M3FN>) {
  %s = kernel.stream 0
  %amax = kernel.alloc temporary : memref<f32>
  kernel.call "amax"(%x : memref<4x8xbf16>) outs(%amax : memref<f32>) on %s params [0]
  %scale = kernel.alloc temporary : memref<f32>
  kernel.call "float8_scale"(%amax : memref<f32>) outs(%scale : memref<f32>) on %s params [0, 4.480000e+02]
  %q = kernel.alloc temporary : memref<4x8xf8E4M3FN>
  kernel.call "quantize"(%x, %scale : memref<4x8xbf16>, memref<f32>) outs(%q : memref<4x8xf8E4M3FN>) on %s params [0, 0]
  %qt = kernel.alloc temporary : memref<8x4xf8E4M3FN>
  kernel.call "quantize"(%x, %scale : memref<4x8xbf16>, memref<f32>) outs(%qt : memref<8x4xf8E4M3FN>) on %s params [0, 1]
  kernel.call "scaled_matmul"(%q, %scale, %w, %scale : memref<4x8xf8E4M3FN>, memref<f32>, memref<16x8xf8E4M3FN>, memref<f32>) outs(%y : memref<4x16xbf16>) workspace(%ws : memref<1024xi8>) on %s params [0, 0, 0, 0, 0, 0]
  kernel.call "quantize"(%x, %rows : memref<4x8xbf16>, memref<4x1xf32>) outs(%qr : memref<4x8xf8E4M3FN>) on %s params [0, 0]
  kernel.call "amax"(%x : memref<4x8xbf16>) outs(%rows : memref<4x1xf32>) on %s params [1]
  return
}

// -----

// A reduction fuses with its producer, even one of two outputs: the
// gradient's amax is taken while swiglu_grad's values are in registers,
// and both gradients are still written (the up gradient, which the amax
// does not read, too). A kernel reading a reduction does not fuse with its
// producer (the result is complete only after the last index).
// CHECK-LABEL: func.func @reduce_producer(
// CHECK:       kernel.generic ins(%arg0, %arg1, %arg2 : memref<8xbf16>, memref<8xbf16>, memref<8xbf16>) outs(%[[GG:.*]], %arg3 : memref<8xbf16>, memref<8xbf16>) reduce [#kernel.reduction<absmax>](%[[M:.*]] : memref<f32>)
// CHECK:         kernel.yield %{{.*}}, %{{.*}}, %{{.*}} : bf16, bf16, f32
// CHECK:       kernel.generic ins(%[[M]] : memref<f32>) outs(%{{.*}} : memref<f32>)
// CHECK-NOT:   kernel.generic
func.func @reduce_producer(%gate: memref<8xbf16>, %up: memref<8xbf16>, %dy: memref<8xbf16>, %upg: memref<8xbf16>, %use: memref<8xbf16>) {
  %s = kernel.stream 0
  %gg = kernel.alloc temporary : memref<8xbf16>
  kernel.call "swiglu_grad"(%gate, %up, %dy : memref<8xbf16>, memref<8xbf16>, memref<8xbf16>) outs(%gg, %upg : memref<8xbf16>, memref<8xbf16>) on %s params []
  %m = kernel.alloc temporary : memref<f32>
  kernel.call "amax"(%gg : memref<8xbf16>) outs(%m : memref<f32>) on %s params [0]
  %sc = kernel.alloc temporary : memref<f32>
  kernel.call "float8_scale"(%m : memref<f32>) outs(%sc : memref<f32>) on %s params [0, 5.734400e+04]
  kernel.copy %gg, %use on %s : memref<8xbf16>, memref<8xbf16>
  return
}

// -----

// The producer's other output is read in between: the consumer moves up
// to the producer (the producer, moved down, would write that output only
// after the read). The amax's input, read by nothing else, is no longer
// written.
// CHECK-LABEL: func.func @other_output_read(
// CHECK:       kernel.generic ins(%arg0, %arg1, %arg2 : {{.*}}) outs(%arg3 : memref<8xbf16>) reduce [#kernel.reduction<absmax>](%{{.*}} : memref<f32>)
// CHECK-NEXT:  ^bb0
// CHECK:       kernel.copy %arg3
// CHECK-NOT:   kernel.generic
func.func @other_output_read(%gate: memref<8xbf16>, %up: memref<8xbf16>, %dy: memref<8xbf16>, %upg: memref<8xbf16>, %use: memref<8xbf16>) {
  %s = kernel.stream 0
  %gg = kernel.alloc temporary : memref<8xbf16>
  kernel.call "swiglu_grad"(%gate, %up, %dy : memref<8xbf16>, memref<8xbf16>, memref<8xbf16>) outs(%gg, %upg : memref<8xbf16>, memref<8xbf16>) on %s params []
  kernel.copy %upg, %use on %s : memref<8xbf16>, memref<8xbf16>
  %m = kernel.alloc temporary : memref<f32>
  kernel.call "amax"(%gg : memref<8xbf16>) outs(%m : memref<f32>) on %s params [0]
  return
}

// -----

// A producer with a reduction fuses with a consumer of another output
// (both float8 gradients of swiglu's backward, each cast with its own
// amax): one kernel with both reductions, the consumer's first. Another
// output read in between (the GEMM reading the first cast's input) moves
// the second amax up to the producer.
// CHECK-LABEL: func.func @two_reductions(
// CHECK:       kernel.generic ins(%arg0, %arg1, %arg2 : {{.*}}) outs(%[[UG:.*]], %[[GG:.*]] : memref<4x8xbf16>, memref<4x8xbf16>) reduce [#kernel.reduction<absmax>, #kernel.reduction<absmax>](%[[MU:.*]], %[[MG:.*]] : memref<f32>, memref<f32>)
// CHECK:         kernel.yield %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : bf16, bf16, f32, f32
// CHECK:       kernel.call "linear"(%[[GG]]
// CHECK-NOT:   reduce
func.func @two_reductions(%gate: memref<4x8xbf16>, %up: memref<4x8xbf16>, %dy: memref<4x8xbf16>, %w: memref<8x8xbf16>, %y: memref<4x8xbf16>) {
  %s = kernel.stream 0
  %gg = kernel.alloc temporary : memref<4x8xbf16>
  %ug = kernel.alloc temporary : memref<4x8xbf16>
  kernel.call "swiglu_grad"(%gate, %up, %dy : memref<4x8xbf16>, memref<4x8xbf16>, memref<4x8xbf16>) outs(%gg, %ug : memref<4x8xbf16>, memref<4x8xbf16>) on %s params []
  %mg = kernel.alloc temporary : memref<f32>
  kernel.call "amax"(%gg : memref<4x8xbf16>) outs(%mg : memref<f32>) on %s params [0]
  kernel.call "linear"(%gg, %w : memref<4x8xbf16>, memref<8x8xbf16>) outs(%y : memref<4x8xbf16>) on %s params []
  %mu = kernel.alloc temporary : memref<f32>
  kernel.call "amax"(%ug : memref<4x8xbf16>) outs(%mu : memref<f32>) on %s params [0]
  kernel.call "linear"(%ug, %w : memref<4x8xbf16>, memref<8x8xbf16>) outs(%y : memref<4x8xbf16>) on %s params []
  return
}

// -----

// Recomputed in the casts: SwiGLU's gradients feed only their float8 casts,
// which read the amaxes the producer reduces and so cannot fuse with it.
// Recomputed there from gate, up and dy (one more read of 3 tensors) they
// are neither written nor read back (4 tensors moved): the producer keeps
// only its amaxes, and one kernel, the second gradient's casts moved up to
// the first's past the GEMM, writes both gradients' float8 layouts,
// rounding each gradient to bf16 as the producer did before encoding it.
// CHECK-LABEL: func.func @recompute_in_casts(
// CHECK-NOT:   kernel.alloc temporary : memref<4x8xbf16>
// CHECK:       kernel.generic ins(%arg0, %arg1, %arg2 : memref<4x8xbf16>, memref<4x8xbf16>, memref<4x8xbf16>) reduce [#kernel.reduction<absmax>, #kernel.reduction<absmax>](%[[MU:.*]], %[[MG:.*]] : memref<f32>, memref<f32>) on
// CHECK-NOT:   kernel.alloc temporary : memref<4x8xbf16>
// CHECK:       kernel.generic ins(%[[MU]], %arg0, %arg1, %arg2, %[[MG]] : {{.*}}) outs(%[[UQT:.*]], %[[SU:.*]], %[[UQ:.*]], %[[GQT:.*]], %[[SG:.*]], %[[GQ:.*]] : memref<8x4xf8E4M3FN>, memref<f32>, memref<4x8xf8E4M3FN>, memref<8x4xf8E4M3FN>, memref<f32>, memref<4x8xf8E4M3FN>) on
// CHECK:         math.exp
// CHECK-NOT:     math.exp
// CHECK:         %[[UB:.*]] = arith.truncf %{{.*}} : f32 to bf16
// CHECK:         arith.extf %[[UB]] : bf16 to f32
// CHECK:         %[[GB:.*]] = arith.truncf %{{.*}} : f32 to bf16
// CHECK:         arith.extf %[[GB]] : bf16 to f32
// CHECK:       } {transposed_outputs = array<i64: 0, 3>}
// CHECK-NEXT:  kernel.call "scaled_matmul"(%[[UQ]], %[[SU]]
// CHECK-NEXT:  kernel.call "scaled_matmul"(%[[GQ]], %[[SG]]
func.func @recompute_in_casts(%gate: memref<4x8xbf16>, %up: memref<4x8xbf16>, %dy: memref<4x8xbf16>, %w: memref<16x8xf8E4M3FN>, %ws: memref<1024xi8>, %y1: memref<4x16xbf16>, %y2: memref<8x16xbf16>, %y3: memref<4x16xbf16>, %y4: memref<8x16xbf16>) {
  %s = kernel.stream 0
  %gg = kernel.alloc temporary : memref<4x8xbf16>
  %ug = kernel.alloc temporary : memref<4x8xbf16>
  kernel.call "swiglu_grad"(%gate, %up, %dy : memref<4x8xbf16>, memref<4x8xbf16>, memref<4x8xbf16>) outs(%gg, %ug : memref<4x8xbf16>, memref<4x8xbf16>) on %s params []
  %mg = kernel.alloc temporary : memref<f32>
  kernel.call "amax"(%gg : memref<4x8xbf16>) outs(%mg : memref<f32>) on %s params [0]
  %mu = kernel.alloc temporary : memref<f32>
  kernel.call "amax"(%ug : memref<4x8xbf16>) outs(%mu : memref<f32>) on %s params [0]
  %su = kernel.alloc temporary : memref<f32>
  kernel.call "float8_scale"(%mu : memref<f32>) outs(%su : memref<f32>) on %s params [0, 4.480000e+02]
  %uq = kernel.alloc temporary : memref<4x8xf8E4M3FN>
  kernel.call "quantize"(%ug, %su : memref<4x8xbf16>, memref<f32>) outs(%uq : memref<4x8xf8E4M3FN>) on %s params [0, 0]
  %uqt = kernel.alloc temporary : memref<8x4xf8E4M3FN>
  kernel.call "quantize"(%ug, %su : memref<4x8xbf16>, memref<f32>) outs(%uqt : memref<8x4xf8E4M3FN>) on %s params [0, 1]
  kernel.call "scaled_matmul"(%uq, %su, %w, %su : memref<4x8xf8E4M3FN>, memref<f32>, memref<16x8xf8E4M3FN>, memref<f32>) outs(%y1 : memref<4x16xbf16>) workspace(%ws : memref<1024xi8>) on %s params [0, 0, 0, 0, 0, 0]
  %sg = kernel.alloc temporary : memref<f32>
  kernel.call "float8_scale"(%mg : memref<f32>) outs(%sg : memref<f32>) on %s params [0, 4.480000e+02]
  %gq = kernel.alloc temporary : memref<4x8xf8E4M3FN>
  kernel.call "quantize"(%gg, %sg : memref<4x8xbf16>, memref<f32>) outs(%gq : memref<4x8xf8E4M3FN>) on %s params [0, 0]
  %gqt = kernel.alloc temporary : memref<8x4xf8E4M3FN>
  kernel.call "quantize"(%gg, %sg : memref<4x8xbf16>, memref<f32>) outs(%gqt : memref<8x4xf8E4M3FN>) on %s params [0, 1]
  kernel.call "scaled_matmul"(%gq, %sg, %w, %sg : memref<4x8xf8E4M3FN>, memref<f32>, memref<16x8xf8E4M3FN>, memref<f32>) outs(%y3 : memref<4x16xbf16>) workspace(%ws : memref<1024xi8>) on %s params [0, 0, 0, 0, 0, 0]
  return
}

// -----

// Not recomputed where that moves as many bytes or more: SwiGLU's forward
// (h from gate and up, 2 tensors read again to save h's write and read)
// and one gradient cast alone (3 tensors read again to save 2). The
// producers keep writing h and the gradient.
// CHECK-LABEL: func.func @recompute_not_cheaper(
// CHECK:       kernel.generic ins(%arg1, %arg0 : {{.*}}) outs(%[[H:.*]] : memref<4x8xbf16>) reduce
// CHECK:       kernel.generic ins(%[[H]], %{{.*}} : memref<4x8xbf16>, memref<f32>)
// CHECK:       kernel.generic ins(%arg0, %arg1, %arg2 : {{.*}}) outs(%[[GG:.*]], %arg4 : memref<4x8xbf16>, memref<4x8xbf16>) reduce
// CHECK:       kernel.generic ins(%[[GG]], %{{.*}} : memref<4x8xbf16>, memref<f32>)
func.func @recompute_not_cheaper(%gate: memref<4x8xbf16>, %up: memref<4x8xbf16>, %dy: memref<4x8xbf16>, %hq: memref<4x8xf8E4M3FN>, %ug: memref<4x8xbf16>, %gq: memref<4x8xf8E4M3FN>) {
  %s = kernel.stream 0
  %t = kernel.alloc temporary : memref<4x8xbf16>
  kernel.call "silu"(%gate : memref<4x8xbf16>) outs(%t : memref<4x8xbf16>) on %s params []
  %h = kernel.alloc temporary : memref<4x8xbf16>
  kernel.call "mul"(%t, %up : memref<4x8xbf16>, memref<4x8xbf16>) outs(%h : memref<4x8xbf16>) on %s params []
  %mh = kernel.alloc temporary : memref<f32>
  kernel.call "amax"(%h : memref<4x8xbf16>) outs(%mh : memref<f32>) on %s params [0]
  %sh = kernel.alloc temporary : memref<f32>
  kernel.call "float8_scale"(%mh : memref<f32>) outs(%sh : memref<f32>) on %s params [0, 4.480000e+02]
  kernel.call "quantize"(%h, %sh : memref<4x8xbf16>, memref<f32>) outs(%hq : memref<4x8xf8E4M3FN>) on %s params [0, 0]
  %gg = kernel.alloc temporary : memref<4x8xbf16>
  kernel.call "swiglu_grad"(%gate, %up, %dy : memref<4x8xbf16>, memref<4x8xbf16>, memref<4x8xbf16>) outs(%gg, %ug : memref<4x8xbf16>, memref<4x8xbf16>) on %s params []
  %mg = kernel.alloc temporary : memref<f32>
  kernel.call "amax"(%gg : memref<4x8xbf16>) outs(%mg : memref<f32>) on %s params [0]
  %sg = kernel.alloc temporary : memref<f32>
  kernel.call "float8_scale"(%mg : memref<f32>) outs(%sg : memref<f32>) on %s params [0, 4.480000e+02]
  kernel.call "quantize"(%gg, %sg : memref<4x8xbf16>, memref<f32>) outs(%gq : memref<4x8xf8E4M3FN>) on %s params [0, 0]
  return
}

// -----

// Not recomputed: a reader that reads another input through a map (its
// index elsewhere) does not compute the producer's outputs at its index
// nor join another reader; with it left out, the other link alone saves
// nothing (both inputs read again for one tensor's write and read).
// CHECK-LABEL: func.func @recompute_mapped_reader(
// CHECK:       kernel.generic ins(%arg0, %arg1 : {{.*}}) outs(%[[L1:.*]], %[[L2:.*]] : memref<32xf32>, memref<32xf32>) reduce
// CHECK:       kernel.generic ins(%[[L1]], %{{.*}} : memref<32xf32>, memref<f32>) outs(%arg3
// CHECK:       kernel.generic ins(%[[L2]], %{{.*}}, %arg2 : {{.*}}) outs(%arg4
// CHECK:       input_maps
func.func @recompute_mapped_reader(%a: memref<32xf32>, %b: memref<32xf32>, %c: memref<32xf32>, %o1: memref<32xf32>, %o2: memref<32xf32>) {
  %s = kernel.stream 0
  %l1 = kernel.alloc temporary : memref<32xf32>
  %l2 = kernel.alloc temporary : memref<32xf32>
  %m1 = kernel.alloc temporary : memref<f32>
  %m2 = kernel.alloc temporary : memref<f32>
  kernel.generic ins(%a, %b : memref<32xf32>, memref<32xf32>) outs(%l1, %l2 : memref<32xf32>, memref<32xf32>) reduce [#kernel.reduction<absmax>, #kernel.reduction<absmax>](%m1, %m2 : memref<f32>, memref<f32>) on %s {
  ^bb0(%x: f32, %y: f32):
    %p = arith.mulf %x, %y : f32
    %q = arith.addf %x, %y : f32
    kernel.yield %p, %q, %p, %q : f32, f32, f32, f32
  }
  kernel.generic ins(%l1, %m1 : memref<32xf32>, memref<f32>) outs(%o1 : memref<32xf32>) on %s {
  ^bb0(%x: f32, %m: f32):
    %p = arith.divf %x, %m : f32
    kernel.yield %p : f32
  }
  kernel.generic ins(%l2, %m2, %c : memref<32xf32>, memref<f32>, memref<32xf32>) outs(%o2 : memref<32xf32>) on %s {
  ^bb0(%x: f32, %m: f32, %z: f32):
    %p = arith.divf %x, %m : f32
    %r = arith.addf %p, %z : f32
    kernel.yield %r : f32
  } {input_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> ((d0 + 1) mod 32)>]}
  return
}

// -----

// Not recomputed: readers whose transposed outputs see the index as
// different rows x columns (8 x 4, 16 x 2) cannot be one kernel in tiles.
// CHECK-LABEL: func.func @recompute_tiles_differ(
// CHECK:       kernel.generic ins(%arg0, %arg1 : {{.*}}) outs(%[[L1:.*]], %[[L2:.*]] : memref<32xf32>, memref<32xf32>) reduce
// CHECK:       kernel.generic ins(%[[L1]], %{{.*}} : memref<32xf32>, memref<f32>) outs(%arg2
// CHECK:       kernel.generic ins(%[[L2]], %{{.*}} : memref<32xf32>, memref<f32>) outs(%arg3
func.func @recompute_tiles_differ(%a: memref<32xf32>, %b: memref<32xf32>, %o1: memref<8x4xf32>, %o2: memref<16x2xf32>) {
  %s = kernel.stream 0
  %l1 = kernel.alloc temporary : memref<32xf32>
  %l2 = kernel.alloc temporary : memref<32xf32>
  %m1 = kernel.alloc temporary : memref<f32>
  %m2 = kernel.alloc temporary : memref<f32>
  kernel.generic ins(%a, %b : memref<32xf32>, memref<32xf32>) outs(%l1, %l2 : memref<32xf32>, memref<32xf32>) reduce [#kernel.reduction<absmax>, #kernel.reduction<absmax>](%m1, %m2 : memref<f32>, memref<f32>) on %s {
  ^bb0(%x: f32, %y: f32):
    %p = arith.mulf %x, %y : f32
    %q = arith.addf %x, %y : f32
    kernel.yield %p, %q, %p, %q : f32, f32, f32, f32
  }
  kernel.generic ins(%l1, %m1 : memref<32xf32>, memref<f32>) outs(%o1 : memref<8x4xf32>) on %s {
  ^bb0(%x: f32, %m: f32):
    %p = arith.divf %x, %m : f32
    kernel.yield %p : f32
  } {transposed_outputs = array<i64: 0>}
  kernel.generic ins(%l2, %m2 : memref<32xf32>, memref<f32>) outs(%o2 : memref<16x2xf32>) on %s {
  ^bb0(%x: f32, %m: f32):
    %p = arith.divf %x, %m : f32
    kernel.yield %p : f32
  } {transposed_outputs = array<i64: 0>}
  return
}

// -----

// A kernel with reductions joins an earlier sibling too (SwiGLU's gradient
// amaxes, their gradients recomputed in the casts, join the transposed
// cast of the recomputed h, which reads gate and up as well): the joined
// kernel writes the transposed layout and reduces, the amax moved up past
// the GEMM that reads neither.
// CHECK-LABEL: func.func @sibling_reduction(
// CHECK:       kernel.generic ins(%arg0, %arg1 : memref<4x8xbf16>, memref<f32>) outs(%arg2 : memref<8x4xf8E4M3FN>) reduce [#kernel.reduction<absmax>](%[[M:.*]] : memref<f32>) on
// CHECK:       } {transposed_outputs = array<i64: 0>}
// CHECK-NEXT:  kernel.call "scaled_matmul"
// CHECK-NOT:   kernel.generic
func.func @sibling_reduction(%x: memref<4x8xbf16>, %scale: memref<f32>, %qt: memref<8x4xf8E4M3FN>, %w: memref<16x8xf8E4M3FN>, %ws: memref<1024xi8>, %y: memref<4x16xbf16>) {
  %s = kernel.stream 0
  kernel.call "quantize"(%x, %scale : memref<4x8xbf16>, memref<f32>) outs(%qt : memref<8x4xf8E4M3FN>) on %s params [0, 1]
  kernel.call "scaled_matmul"(%qt, %scale, %w, %scale : memref<8x4xf8E4M3FN>, memref<f32>, memref<16x8xf8E4M3FN>, memref<f32>) outs(%y : memref<4x16xbf16>) workspace(%ws : memref<1024xi8>) on %s params [0, 0, 0, 0, 0, 0]
  %m = kernel.alloc temporary : memref<f32>
  kernel.call "amax"(%x : memref<4x8xbf16>) outs(%m : memref<f32>) on %s params [0]
  return
}

// -----

// One-element buffers stay well defined. A scalar producer fuses into the
// first consumer (8 elements), which still writes the scalar; the second
// consumer (4 elements) does not take that 8-element kernel as its
// producer.
// CHECK-LABEL: func.func @scalar_two_sizes(
// CHECK:       kernel.generic ins(%arg2, %arg0, %arg1 : memref<8xf32>, memref<f32>, memref<f32>) outs(%arg4, %[[S:.*]] : memref<8xf32>, memref<f32>)
// CHECK:       kernel.generic ins(%arg3, %[[S]] : memref<4xf32>, memref<f32>) outs(%arg5 : memref<4xf32>)
func.func @scalar_two_sizes(%a: memref<f32>, %b: memref<f32>, %x1: memref<8xf32>, %x2: memref<4xf32>, %y1: memref<8xf32>, %y2: memref<4xf32>) {
  %s = kernel.stream 0
  %s2 = kernel.alloc temporary : memref<f32>
  kernel.call "mul"(%a, %b : memref<f32>, memref<f32>) outs(%s2 : memref<f32>) on %s params []
  kernel.call "mul"(%x1, %s2 : memref<8xf32>, memref<f32>) outs(%y1 : memref<8xf32>) on %s params []
  kernel.call "mul"(%x2, %s2 : memref<4xf32>, memref<f32>) outs(%y2 : memref<4xf32>) on %s params []
  return
}

// -----

// Not fused: an in-place update of a scalar would be written once while
// the other indices of the consumer read it.
// CHECK-LABEL: func.func @scalar_in_place(
// CHECK:       kernel.generic ins(%arg0, %arg0 : memref<f32>, memref<f32>) outs(%arg0 : memref<f32>)
// CHECK:       kernel.generic ins(%arg1, %arg0 : memref<8xf32>, memref<f32>) outs(%arg2 : memref<8xf32>)
func.func @scalar_in_place(%sc: memref<f32>, %x: memref<8xf32>, %y: memref<8xf32>) {
  %s = kernel.stream 0
  kernel.call "add"(%sc, %sc : memref<f32>, memref<f32>) outs(%sc : memref<f32>) on %s params []
  kernel.call "mul"(%x, %sc : memref<8xf32>, memref<f32>) outs(%y : memref<8xf32>) on %s params []
  return
}

// -----

// Not fused: the producer reads (through a view) the buffer the amax
// reduces into, which is zeroed before a reduction kernel runs.
// CHECK-LABEL: func.func @reads_reduction(
// CHECK:       kernel.generic ins(%arg1, %{{.*}} : memref<8xf32>, memref<1xf32>) outs(%arg2 : memref<8xf32>) on
// CHECK:       kernel.generic ins(%arg2 : memref<8xf32>) reduce
func.func @reads_reduction(%r: memref<f32>, %x: memref<8xf32>, %y: memref<8xf32>) {
  %s = kernel.stream 0
  %v = kernel.view %r : memref<f32> to memref<1xf32>
  kernel.call "mul"(%x, %v : memref<8xf32>, memref<1xf32>) outs(%y : memref<8xf32>) on %s params []
  kernel.call "amax"(%y : memref<8xf32>) outs(%r : memref<f32>) on %s params [0]
  return
}

// -----

// Hoisting refused: the consumer (the transposed cast) cannot move up to
// the cast of the same input, as an op between writes what it reads (%u,
// its second input); and in @hoist_reads_output an op between reads the
// buffer it would write early. Each cast stays its own kernel; the GEMM
// between only reads the scale, which alone would allow the move.
// CHECK-LABEL: func.func @hoist_blocked_by_write(
// CHECK:       kernel.generic ins(%arg0, %{{.*}} : memref<4x8xbf16>, memref<f32>) outs(%{{.*}}, %{{.*}} : memref<4x8xf8E4M3FN>, memref<f32>)
// CHECK:       kernel.call "scaled_matmul"
// CHECK:       kernel.call "linear"
// CHECK:       kernel.generic ins({{.*}}) outs(%{{.*}} : memref<8x4xf8E4M3FN>)
func.func @hoist_blocked_by_write(%x: memref<4x8xbf16>, %w: memref<16x8xf8E4M3FN>, %ws: memref<1024xi8>, %y: memref<4x16xbf16>, %u: memref<4x8xbf16>, %lw: memref<8x8xbf16>) {
  %s = kernel.stream 0
  %amax = kernel.alloc temporary : memref<f32>
  kernel.call "amax"(%x : memref<4x8xbf16>) outs(%amax : memref<f32>) on %s params [0]
  %scale = kernel.alloc temporary : memref<f32>
  kernel.call "float8_scale"(%amax : memref<f32>) outs(%scale : memref<f32>) on %s params [0, 4.480000e+02]
  %q = kernel.alloc temporary : memref<4x8xf8E4M3FN>
  kernel.call "quantize"(%x, %scale : memref<4x8xbf16>, memref<f32>) outs(%q : memref<4x8xf8E4M3FN>) on %s params [0, 0]
  kernel.call "scaled_matmul"(%q, %scale, %w, %scale : memref<4x8xf8E4M3FN>, memref<f32>, memref<16x8xf8E4M3FN>, memref<f32>) outs(%y : memref<4x16xbf16>) workspace(%ws : memref<1024xi8>) on %s params [0, 0, 0, 0, 0, 0]
  kernel.call "linear"(%x, %lw : memref<4x8xbf16>, memref<8x8xbf16>) outs(%u : memref<4x8xbf16>) on %s params []
  %t = kernel.alloc temporary : memref<4x8xbf16>
  kernel.call "add"(%x, %u : memref<4x8xbf16>, memref<4x8xbf16>) outs(%t : memref<4x8xbf16>) on %s params []
  %qt = kernel.alloc temporary : memref<8x4xf8E4M3FN>
  kernel.call "quantize"(%t, %scale : memref<4x8xbf16>, memref<f32>) outs(%qt : memref<8x4xf8E4M3FN>) on %s params [0, 1]
  return
}

// -----

// CHECK-LABEL: func.func @hoist_reads_output(
// CHECK:       kernel.generic ins(%arg0, %{{.*}} : memref<4x8xbf16>, memref<f32>) outs(%{{.*}}, %{{.*}} : memref<4x8xf8E4M3FN>, memref<f32>)
// CHECK:       kernel.call "scaled_matmul"
// CHECK:       kernel.generic ins(%arg0, %{{.*}} : memref<4x8xbf16>, memref<f32>) outs(%arg5 : memref<8x4xf8E4M3FN>)
func.func @hoist_reads_output(%x: memref<4x8xbf16>, %w: memref<16x8xf8E4M3FN>, %ws: memref<1024xi8>, %y: memref<4x16xbf16>, %v: memref<16x8xf8E4M3FN>, %qt: memref<8x4xf8E4M3FN>) {
  %s = kernel.stream 0
  %amax = kernel.alloc temporary : memref<f32>
  kernel.call "amax"(%x : memref<4x8xbf16>) outs(%amax : memref<f32>) on %s params [0]
  %scale = kernel.alloc temporary : memref<f32>
  kernel.call "float8_scale"(%amax : memref<f32>) outs(%scale : memref<f32>) on %s params [0, 4.480000e+02]
  %q = kernel.alloc temporary : memref<4x8xf8E4M3FN>
  kernel.call "quantize"(%x, %scale : memref<4x8xbf16>, memref<f32>) outs(%q : memref<4x8xf8E4M3FN>) on %s params [0, 0]
  %qtv = kernel.view %qt : memref<8x4xf8E4M3FN> to memref<4x8xf8E4M3FN>
  kernel.call "scaled_matmul"(%qtv, %scale, %w, %scale : memref<4x8xf8E4M3FN>, memref<f32>, memref<16x8xf8E4M3FN>, memref<f32>) outs(%y : memref<4x16xbf16>) workspace(%ws : memref<1024xi8>) on %s params [0, 0, 0, 0, 0, 0]
  kernel.call "quantize"(%x, %scale : memref<4x8xbf16>, memref<f32>) outs(%qt : memref<8x4xf8E4M3FN>) on %s params [0, 1]
  return
}

// -----

// A float8 re-gather (dist-narrow-gathers): the shard's bf16 cast and its
// float8 cast with the forward's scale are one kernel (no bf16 copy is
// written); the gathered float8 weight's transposed copy is a kernel whose
// body only moves the float8 element (no arithmetic, no widening).
// CHECK-LABEL: func.func @float8_regather(
// CHECK:       kernel.generic ins(%arg1, %arg0 : memref<f32>, memref<2x8xf32>) outs(%[[Q:.*]] : memref<2x8xf8E4M3FN>)
// CHECK:       kernel.collective_start "all_gather_start"(%[[Q]]
// CHECK:       kernel.generic ins(%{{.*}} : memref<4x8xf8E4M3FN>) outs(%arg2 : memref<8x4xf8E4M3FN>) on %{{.*}} {
// CHECK-NEXT:  ^bb0(%[[E:.*]]: f8E4M3FN):
// CHECK-NEXT:    kernel.yield %[[E]] : f8E4M3FN
// CHECK-NEXT:  } {transposed_outputs = array<i64: 0>}
func.func @float8_regather(%shard: memref<2x8xf32>, %scale: memref<f32>, %wt: memref<8x4xf8E4M3FN>) {
  %s = kernel.stream 0
  %c = kernel.stream 1
  %b = kernel.alloc temporary : memref<2x8xbf16>
  kernel.call "cast"(%shard : memref<2x8xf32>) outs(%b : memref<2x8xbf16>) on %s params []
  %q = kernel.alloc temporary : memref<2x8xf8E4M3FN>
  kernel.call "quantize"(%b, %scale : memref<2x8xbf16>, memref<f32>) outs(%q : memref<2x8xf8E4M3FN>) on %s params [0, 0]
  %g = kernel.alloc temporary : memref<4x8xf8E4M3FN>
  %r = kernel.collective_start "all_gather_start"(%q : memref<2x8xf8E4M3FN>) outs(%g : memref<4x8xf8E4M3FN>) on %c params [0, 0, 2] -> !kernel.request
  kernel.wait %r on %s
  kernel.call "transpose"(%g : memref<4x8xf8E4M3FN>) outs(%wt : memref<8x4xf8E4M3FN>) on %s params []
  return
}

// -----

// The consumer moves up when the producer cannot move down: a call between
// them writes what the producer reads, nothing the consumer reads or
// writes. The fused kernel runs at the producer's place, before that call.
// CHECK-LABEL: func.func @moves_up(
// CHECK:       kernel.generic ins(%arg1, %arg0 : memref<2x4xf32>, memref<2x4xf32>) outs(%arg4 : memref<2x4xf32>)
// CHECK:       kernel.call "linear"(%arg1, %arg2 : {{.*}}) outs(%arg0 :
// CHECK-NOT:   kernel.generic
func.func @moves_up(%x: memref<2x4xf32>, %u: memref<2x4xf32>, %w: memref<4x4xf32>, %n: memref<4xf32>, %y: memref<2x4xf32>) {
  %s = kernel.stream 0
  %t = kernel.alloc temporary : memref<2x4xf32>
  kernel.call "silu"(%x : memref<2x4xf32>) outs(%t : memref<2x4xf32>) on %s params []
  kernel.call "linear"(%u, %w : memref<2x4xf32>, memref<4x4xf32>) outs(%x : memref<2x4xf32>) on %s params []
  kernel.call "mul"(%t, %u : memref<2x4xf32>, memref<2x4xf32>) outs(%y : memref<2x4xf32>) on %s params []
  return
}

// -----

// Siblings: a recomputed activation's cast and, after the GEMM that reads
// it, its transposed cast, both with the scale the forward computed (no
// producer links them): one kernel at the first's place writes both
// layouts from one read. One after an op writing its input stays apart,
// and so does one reading what the first writes (the GEMM's result).
// CHECK-LABEL: func.func @siblings(
// CHECK:       kernel.generic ins(%arg0, %arg1 : memref<4x8xbf16>, memref<f32>) outs(%[[Q:.*]], %arg5 : memref<4x8xf8E4M3FN>, memref<8x4xf8E4M3FN>) on %{{.*}} {
// CHECK:       } {transposed_outputs = array<i64: 1>}
// CHECK-NEXT:  kernel.call "scaled_matmul"(%[[Q]]
// CHECK-NEXT:  kernel.call "linear"(%arg0, %arg6 : {{.*}}) outs(%arg0
// CHECK-NEXT:  kernel.generic ins(%arg0 : memref<4x8xbf16>) outs(%arg7 : memref<4x8xbf16>)
func.func @siblings(%x: memref<4x8xbf16>, %scale: memref<f32>, %w: memref<16x8xf8E4M3FN>, %ws: memref<1024xi8>, %y: memref<4x16xbf16>, %qt: memref<8x4xf8E4M3FN>, %lw: memref<8x8xbf16>, %z: memref<4x8xbf16>) {
  %s = kernel.stream 0
  %q = kernel.alloc temporary : memref<4x8xf8E4M3FN>
  kernel.call "quantize"(%x, %scale : memref<4x8xbf16>, memref<f32>) outs(%q : memref<4x8xf8E4M3FN>) on %s params [0, 0]
  kernel.call "scaled_matmul"(%q, %scale, %w, %scale : memref<4x8xf8E4M3FN>, memref<f32>, memref<16x8xf8E4M3FN>, memref<f32>) outs(%y : memref<4x16xbf16>) workspace(%ws : memref<1024xi8>) on %s params [0, 0, 0, 0, 0, 0]
  kernel.call "quantize"(%x, %scale : memref<4x8xbf16>, memref<f32>) outs(%qt : memref<8x4xf8E4M3FN>) on %s params [0, 1]
  kernel.call "linear"(%x, %lw : memref<4x8xbf16>, memref<8x8xbf16>) outs(%x : memref<4x8xbf16>) on %s params []
  kernel.call "silu"(%x : memref<4x8xbf16>) outs(%z : memref<4x8xbf16>) on %s params []
  %yq = kernel.alloc temporary : memref<4x16xf8E4M3FN>
  kernel.call "quantize"(%y, %scale : memref<4x16xbf16>, memref<f32>) outs(%yq : memref<4x16xf8E4M3FN>) on %s params [0, 0]
  return
}

// -----

// RMSNorm is a row kernel (row_length: the last dimension): its body sums
// the squares over the row (kernel.row_sum) and reads the weight at the
// element's column. The residual add before it and the amax of its result
// after it fuse: one kernel writes the sum (the backward reads it) and the
// norm and reduces the norm's amax. The float8 cast with its transposed
// copy (a kernel in tiles) does not join a row kernel.
// CHECK-LABEL: func.func @rms_norm(
// CHECK:       kernel.generic ins(%arg2, %arg0, %arg1 : memref<8xbf16>, memref<4x8xbf16>, memref<4x8xbf16>) outs(%[[Y:.*]], %arg3 : memref<4x8xbf16>, memref<4x8xbf16>) reduce [#kernel.reduction<absmax>](%[[M:.*]] : memref<f32>)
// CHECK:         %[[H:.*]] = arith.addf
// CHECK:         %[[HB:.*]] = arith.truncf %[[H]] : f32 to bf16
// CHECK:         %[[X:.*]] = arith.extf %[[HB]] : bf16 to f32
// CHECK:         %[[SQ:.*]] = arith.mulf %[[X]], %[[X]] : f32
// CHECK:         %[[SS:.*]] = kernel.row_sum %[[SQ]] : f32
// CHECK:         %[[C:.*]] = arith.constant 8.000000e+00 : f32
// CHECK:         arith.divf %[[SS]], %[[C]] : f32
// CHECK:         math.sqrt
// CHECK:         kernel.yield %{{.*}}, %[[HB]], %{{.*}} : bf16, bf16, f32
// CHECK:       } {row_length = 8 : i64}
// CHECK:       kernel.generic ins(%[[Y]], %[[M]] : memref<4x8xbf16>, memref<f32>) outs(%arg5, %arg4 : memref<8x4xf8E4M3FN>, memref<4x8xf8E4M3FN>)
// CHECK-NOT:   row_length
// CHECK:       } {transposed_outputs = array<i64: 0>}
func.func @rms_norm(%a: memref<4x8xbf16>, %b: memref<4x8xbf16>, %w: memref<8xbf16>, %h: memref<4x8xbf16>, %q: memref<4x8xf8E4M3FN>, %qt: memref<8x4xf8E4M3FN>) {
  %s = kernel.stream 0
  kernel.call "add"(%a, %b : memref<4x8xbf16>, memref<4x8xbf16>) outs(%h : memref<4x8xbf16>) on %s params []
  %y = kernel.alloc temporary : memref<4x8xbf16>
  kernel.call "rms_norm"(%h, %w : memref<4x8xbf16>, memref<8xbf16>) outs(%y : memref<4x8xbf16>) on %s params [1.0e-5]
  %m = kernel.alloc temporary : memref<f32>
  kernel.call "amax"(%y : memref<4x8xbf16>) outs(%m : memref<f32>) on %s params [0]
  %sc = kernel.alloc temporary : memref<f32>
  kernel.call "float8_scale"(%m : memref<f32>) outs(%sc : memref<f32>) on %s params [0, 4.480000e+02]
  kernel.call "quantize"(%y, %sc : memref<4x8xbf16>, memref<f32>) outs(%q : memref<4x8xf8E4M3FN>) on %s params [0, 0]
  kernel.call "quantize"(%y, %sc : memref<4x8xbf16>, memref<f32>) outs(%qt : memref<8x4xf8E4M3FN>) on %s params [0, 1]
  return
}

// -----

// RMSNorm's backward is a row kernel too: two row sums (sum(x * x) for
// the norm, sum(dy * w * x) for dx's projection) and dx, and the weight
// gradient's addends dy * xhat summed over the rows per column (a
// column_sum in f32, its partials in a workspace of one block: the 6 rows
// are too few for blocks of 4). The residual add of dx and its amax fuse into it;
// the bf16 weight gradient is a pointwise rounding of the f32 sum, which
// fuses with the cast to f32 after it (FSDP's reduce_dtype).
// CHECK-LABEL: func.func @rms_norm_grad(
// CHECK:       %[[TOTAL:.*]] = kernel.alloc temporary : memref<8xf32>
// CHECK:       %[[WS:.*]] = kernel.alloc workspace : memref<1x1x8xf32>
// CHECK:       kernel.generic ins(%arg3, %arg0, %arg1, %arg2 : memref<6x8xbf16>, memref<6x8xbf16>, memref<8xbf16>, memref<6x8xbf16>) outs(%arg3 : memref<6x8xbf16>) workspace(%[[WS]] : memref<1x1x8xf32>) reduce [#kernel.reduction<absmax>, #kernel.reduction<column_sum>](%{{.*}}, %[[TOTAL]] : memref<f32>, memref<8xf32>)
// CHECK:         %[[SS:.*]] = kernel.row_sum
// CHECK:         math.sqrt
// CHECK:         %[[DOT:.*]] = kernel.row_sum
// CHECK:         %[[XHAT:.*]] = arith.mulf
// CHECK:         %[[DW:.*]] = arith.mulf %{{.*}}, %[[XHAT]] : f32
// CHECK:         kernel.yield %{{.*}}, %{{.*}}, %[[DW]] : bf16, f32, f32
// CHECK:       } {row_length = 8 : i64}
// CHECK:       kernel.generic ins(%[[TOTAL]] : memref<8xf32>) outs(%arg4 : memref<8xf32>)
// CHECK:         arith.truncf %{{.*}} : f32 to bf16
// CHECK:         arith.extf %{{.*}} : bf16 to f32
// CHECK-NOT:   kernel.call
func.func @rms_norm_grad(%x: memref<6x8xbf16>, %w: memref<8xbf16>, %dy: memref<6x8xbf16>, %r: memref<6x8xbf16>, %dwf: memref<8xf32>) {
  %s = kernel.stream 0
  %dx = kernel.alloc temporary : memref<6x8xbf16>
  %dw = kernel.alloc temporary : memref<8xbf16>
  kernel.call "rms_norm_grad"(%x, %w, %dy : memref<6x8xbf16>, memref<8xbf16>, memref<6x8xbf16>) outs(%dx, %dw : memref<6x8xbf16>, memref<8xbf16>) on %s params [1.0e-5]
  kernel.call "cast"(%dw : memref<8xbf16>) outs(%dwf : memref<8xf32>) on %s params []
  kernel.call "add"(%r, %dx : memref<6x8xbf16>, memref<6x8xbf16>) outs(%r : memref<6x8xbf16>) on %s params []
  %m = kernel.alloc temporary : memref<f32>
  kernel.call "amax"(%r : memref<6x8xbf16>) outs(%m : memref<f32>) on %s params [0]
  return
}

// -----

// In f32 the column sum is the weight gradient itself: no rounding kernel.
// 600 rows make 150 blocks of 4 (fewer than 512).
// CHECK-LABEL: func.func @rms_norm_grad_f32(
// CHECK:       kernel.generic ins(%arg0, %arg1, %arg2 : memref<600x8xf32>, memref<8xf32>, memref<600x8xf32>) outs(%arg3 : memref<600x8xf32>) workspace(%{{.*}} : memref<150x1x8xf32>) reduce [#kernel.reduction<column_sum>](%arg4 : memref<8xf32>)
// CHECK-NOT:   kernel.generic
func.func @rms_norm_grad_f32(%x: memref<600x8xf32>, %w: memref<8xf32>, %dy: memref<600x8xf32>, %dx: memref<600x8xf32>, %dw: memref<8xf32>) {
  %s = kernel.stream 0
  kernel.call "rms_norm_grad"(%x, %w, %dy : memref<600x8xf32>, memref<8xf32>, memref<600x8xf32>) outs(%dx, %dw : memref<600x8xf32>, memref<8xf32>) on %s params [1.0e-5]
  return
}

// -----

// A weight of another length than the rows' stays a call; so does a norm
// whose input is f64 and weight bf16 (no computation type rounds both
// once). titan.rms_norm's verifier admits neither, and no library defines
// rms_norm (it is Generated): kernel-to-runtime-calls would refuse them.
// CHECK-LABEL: func.func @rms_norm_library(
// CHECK-COUNT-2: kernel.call "rms_norm"
// CHECK-NOT:   kernel.generic
func.func @rms_norm_library(%x: memref<4x8xf32>, %w: memref<4xf32>, %y: memref<4x8xf32>, %xd: memref<4x8xf64>, %wb: memref<8xbf16>, %yd: memref<4x8xf64>) {
  %s = kernel.stream 0
  kernel.call "rms_norm"(%x, %w : memref<4x8xf32>, memref<4xf32>) outs(%y : memref<4x8xf32>) on %s params [1.0e-5]
  kernel.call "rms_norm"(%xd, %wb : memref<4x8xf64>, memref<8xbf16>) outs(%yd : memref<4x8xf64>) on %s params [1.0e-5]
  return
}

// -----

// A sequence-parallel norm: a collective gathers its result. The amax of
// the result stays a kernel of its own, which runs while the gather moves
// the result (fused, it would leave the gather nothing to overlap).
// CHECK-LABEL: func.func @gathered_norm(
// CHECK:       kernel.generic ins(%arg0, %arg1 : memref<4x8xbf16>, memref<8xbf16>) outs(%[[Y:.*]] : memref<4x8xbf16>) on
// CHECK:       } {row_length = 8 : i64}
// CHECK:       kernel.collective_start "all_gather_start"(%[[Y]]
// CHECK:       kernel.generic ins(%[[Y]] : memref<4x8xbf16>) reduce [#kernel.reduction<absmax>]
func.func @gathered_norm(%x: memref<4x8xbf16>, %w: memref<8xbf16>, %g: memref<8x8xbf16>) {
  %s = kernel.stream 0
  %c = kernel.stream 1
  %y = kernel.alloc temporary : memref<4x8xbf16>
  kernel.call "rms_norm"(%x, %w : memref<4x8xbf16>, memref<8xbf16>) outs(%y : memref<4x8xbf16>) on %s params [1.0e-5]
  %r = kernel.collective_start "all_gather_start"(%y : memref<4x8xbf16>) outs(%g : memref<8x8xbf16>) on %c params [0, 0, 2] -> !kernel.request
  %m = kernel.alloc temporary : memref<f32>
  kernel.call "amax"(%y : memref<4x8xbf16>) outs(%m : memref<f32>) on %s params [0]
  kernel.wait %r on %s
  return
}

// -----

// RoPE's gradient and the amax of its result read through a view as
// tokens x features (Float8's cast of dq): the view is a reshape of the
// rotation's output (no offset, one element type), so the amax fuses with
// the rotation, which reduces the values it computes; the rotated buffer
// is still written (the casts read it).
// CHECK-LABEL: func.func @rope_amax_through_view(
// CHECK:       %[[Q:.*]] = kernel.alloc temporary : memref<1x2x2x4xbf16>
// CHECK:       %[[V:.*]] = kernel.view %[[Q]]
// CHECK:       kernel.generic ins(%arg0, %arg0, %arg1, %arg1 : memref<1x2x2x4xbf16>, memref<1x2x2x4xbf16>, memref<2x2x2xf32>, memref<2x2x2xf32>) outs(%[[Q]] : memref<1x2x2x4xbf16>) reduce [#kernel.reduction<absmax>](%arg2 : memref<f32>) on
// CHECK:         kernel.index : i64
// CHECK:       } {input_maps = [
// CHECK-NOT:   kernel.generic
// CHECK:       return %[[V]]
func.func @rope_amax_through_view(%dq: memref<1x2x2x4xbf16>, %f: memref<2x2x2xf32>, %m: memref<f32>) -> memref<2x8xbf16> {
  %s = kernel.stream 0
  %q = kernel.alloc temporary : memref<1x2x2x4xbf16>
  kernel.call "rope"(%dq, %f : memref<1x2x2x4xbf16>, memref<2x2x2xf32>) outs(%q : memref<1x2x2x4xbf16>) on %s params [1]
  %v = kernel.view %q : memref<1x2x2x4xbf16> to memref<2x8xbf16>
  kernel.call "amax"(%v : memref<2x8xbf16>) outs(%m : memref<f32>) on %s params [0]
  return %v : memref<2x8xbf16>
}

// -----

// A producer of what RoPE reads through a map does not fuse: the rotation
// reads each element's pair partner, which the producer's loop would not
// have computed yet. A consumer reading RoPE's input too keeps one
// argument for the element at the index (the identity read), apart from
// the partner's.
// CHECK-LABEL: func.func @rope_neighbours(
// CHECK:       kernel.generic ins(%arg0, %arg0 : memref<1x2x2x4xf32>, memref<1x2x2x4xf32>) outs(%[[X:.*]] : memref<1x2x2x4xf32>)
// CHECK:       kernel.generic ins(%[[X]], %[[X]], %arg1, %arg1 : {{.*}}) outs(%arg2 : memref<1x2x2x4xf32>)
// CHECK:       } {input_maps = [#{{[a-z0-9]+}}, #{{[a-z0-9]+}}, #{{[a-z0-9]+}}, #{{[a-z0-9]+}}]}
// CHECK-NOT:   kernel.generic
func.func @rope_neighbours(%a: memref<1x2x2x4xf32>, %f: memref<2x2x2xf32>, %out: memref<1x2x2x4xf32>) {
  %s = kernel.stream 0
  %x = kernel.alloc temporary : memref<1x2x2x4xf32>
  kernel.call "mul"(%a, %a : memref<1x2x2x4xf32>, memref<1x2x2x4xf32>) outs(%x : memref<1x2x2x4xf32>) on %s params []
  %r = kernel.alloc temporary : memref<1x2x2x4xf32>
  kernel.call "rope"(%x, %f : memref<1x2x2x4xf32>, memref<2x2x2xf32>) outs(%r : memref<1x2x2x4xf32>) on %s params [0]
  kernel.call "mul"(%r, %x : memref<1x2x2x4xf32>, memref<1x2x2x4xf32>) outs(%out : memref<1x2x2x4xf32>) on %s params []
  return
}

// -----

// A producer does not move down to its consumer past an op reading a
// collective's result (before which the collective schedule waits) when
// the collective started before the producer, which would then no longer
// overlap it: the consumer (the amax) moves up to the producer instead,
// before the GEMM reading the gathered weight.
// CHECK-LABEL: func.func @producer_keeps_overlap(
// CHECK:       kernel.collective_start "all_gather_start"
// CHECK:       kernel.generic ins(%arg0 : memref<4x8xf32>) reduce [#kernel.reduction<absmax>](%arg4 : memref<f32>)
// CHECK:       kernel.call "linear"
// CHECK-NOT:   kernel.generic
func.func @producer_keeps_overlap(%a: memref<4x8xf32>, %shard: memref<4x8xf32>, %w: memref<8x8xf32>, %out: memref<8x8xf32>, %m: memref<f32>) {
  %s = kernel.stream 0
  %c = kernel.stream 1
  %g = kernel.alloc collective : memref<8x8xf32>
  %r = kernel.collective_start "all_gather_start"(%shard : memref<4x8xf32>) outs(%g : memref<8x8xf32>) on %c params [0, 0, 2] -> !kernel.request
  kernel.wait %r on %s
  %x = kernel.alloc temporary : memref<4x8xf32>
  kernel.call "silu"(%a : memref<4x8xf32>) outs(%x : memref<4x8xf32>) on %s params []
  kernel.call "linear"(%g, %w : memref<8x8xf32>, memref<8x8xf32>) outs(%out : memref<8x8xf32>) on %s params []
  kernel.call "amax"(%x : memref<4x8xf32>) outs(%m : memref<f32>) on %s params [0]
  return
}
