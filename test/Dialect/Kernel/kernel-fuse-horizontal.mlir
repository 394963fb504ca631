// RUN: titan-opt %s -split-input-file -kernel-generate-pointwise -kernel-fuse-horizontal | FileCheck %s
// RUN: titan-opt %s -split-input-file -kernel-generate-pointwise -kernel-fuse-horizontal="max-segments=2" | FileCheck %s --check-prefix=TWO
// RUN: titan-opt %s -split-input-file -kernel-generate-pointwise -kernel-fuse-horizontal="max-hoist=1" | FileCheck %s --check-prefix=HOIST1

// FSDP's shard casts of one block as the collective schedule leaves them,
// each before its gather. The casts of one stream with only allocations
// and gathers between them join the first as segments of one kernel,
// whatever their sizes (32, 16 and 32 elements): the first gather starts
// after it. The
// 33-element cast (no multiple of 16) would cost the others their packs:
// it stays apart, as does the cast of the gathered weight, which a wait
// completes. Each segment keeps its own buffers and body.
// CHECK-LABEL: func.func @shard_casts(
// CHECK:       kernel.generic ins(%arg0, %arg2, %arg1 : memref<4x8xf32>, memref<16xf32>, memref<4x8xf32>) outs(%[[A:[0-9]+]], %[[M:[0-9]+]], %[[B:[0-9]+]] : memref<4x8xbf16>, memref<16xbf16>, memref<4x8xbf16>) on %{{.*}} {
// CHECK-NEXT:  ^bb0(%[[X:.*]]: f32, %[[Y:.*]]: f32, %[[Z:.*]]: f32):
// CHECK-NEXT:    %[[TX:.*]] = arith.truncf %[[X]] : f32 to bf16
// CHECK-NEXT:    %[[TY:.*]] = arith.truncf %[[Y]] : f32 to bf16
// CHECK-NEXT:    %[[TZ:.*]] = arith.truncf %[[Z]] : f32 to bf16
// CHECK-NEXT:    kernel.yield %[[TX]], %[[TY]], %[[TZ]] : bf16, bf16, bf16
// CHECK-NEXT:  } {segments = array<i64: 1, 1, 0, 1, 1, 0, 1, 1, 0>}
// CHECK:       kernel.collective_start "all_gather_start"(%[[A]]
// CHECK:       kernel.collective_start "all_gather_start"(%[[B]]
// CHECK:       kernel.generic ins(%arg3 : memref<33xf32>)
// CHECK:       kernel.wait
// CHECK:       kernel.generic ins(%{{.*}} : memref<8x8xbf16>)
// CHECK-NOT:   kernel.generic
// At most two segments a launch: the third cast starts a kernel of its own.
// TWO-LABEL:   func.func @shard_casts(
// TWO:         kernel.generic ins(%arg0, %arg2 :
// TWO:         } {segments = array<i64: 1, 1, 0, 1, 1, 0>}
// TWO:         kernel.generic ins(%arg1 : memref<4x8xf32>)
func.func @shard_casts(%w1: memref<4x8xf32>, %w2: memref<4x8xf32>, %n: memref<16xf32>, %odd: memref<33xf32>, %o: memref<8x8xf32>) {
  %s = kernel.stream 0
  %c = kernel.stream 5
  %a = kernel.alloc temporary : memref<4x8xbf16>
  kernel.call "cast"(%w1 : memref<4x8xf32>) outs(%a : memref<4x8xbf16>) on %s params [] loc("layers.0.attention.wq.weight")
  %ga = kernel.alloc collective : memref<8x8xbf16>
  %ra = kernel.collective_start "all_gather_start"(%a : memref<4x8xbf16>) outs(%ga : memref<8x8xbf16>) on %c params [0, 0, 4] -> !kernel.request
  %m = kernel.alloc temporary : memref<16xbf16>
  kernel.call "cast"(%n : memref<16xf32>) outs(%m : memref<16xbf16>) on %s params [] loc("layers.0.attention_norm.weight")
  %b = kernel.alloc temporary : memref<4x8xbf16>
  kernel.call "cast"(%w2 : memref<4x8xf32>) outs(%b : memref<4x8xbf16>) on %s params [] loc("layers.0.attention.wk.weight")
  %gb = kernel.alloc collective : memref<8x8xbf16>
  %rb = kernel.collective_start "all_gather_start"(%b : memref<4x8xbf16>) outs(%gb : memref<8x8xbf16>) on %c params [0, 0, 4] -> !kernel.request
  %e = kernel.alloc temporary : memref<33xbf16>
  kernel.call "cast"(%odd : memref<33xf32>) outs(%e : memref<33xbf16>) on %s params [] loc("layers.0.attention.wv.weight")
  kernel.wait %ra on %s
  kernel.call "cast"(%ga : memref<8x8xbf16>) outs(%o : memref<8x8xf32>) on %s params [] loc("layers.0.attention.wq")
  kernel.wait %rb on %s
  return
}

// -----

// Not joined: a kernel reading the amax the kernel before it reduces; a
// library kernel between two kernels; kernels on different streams; a
// cast-transpose (it runs in tiles); kernels of different blocks, and
// kernels of no block (a run of them would grow with the model's depth).
// CHECK-LABEL: func.func @kept_apart(
// CHECK-NOT:   segments
// CHECK:       return
func.func @kept_apart(%x: memref<8xf32>, %y: memref<8xf32>, %w: memref<8x8xf32>, %z: memref<8xf32>, %u: memref<8xf32>, %v: memref<8xf32>, %m: memref<f32>, %q: memref<4x2xf32>, %qt: memref<2x4xf32>, %w2: memref<8xf32>, %w3: memref<8xf32>, %w4: memref<8xf32>) {
  %s = kernel.stream 0
  %s1 = kernel.stream 1
  kernel.generic ins(%x : memref<8xf32>) reduce [#kernel.reduction<absmax>](%m : memref<f32>) on %s {
  ^bb0(%a: f32):
    kernel.yield %a : f32
  }
  kernel.generic ins(%x, %m : memref<8xf32>, memref<f32>) outs(%y : memref<8xf32>) on %s {
  ^bb0(%a: f32, %b: f32):
    %c = arith.mulf %a, %b : f32
    kernel.yield %c : f32
  }
  %l = kernel.view %x : memref<8xf32> to memref<1x8xf32>
  %r = kernel.view %z : memref<8xf32> to memref<1x8xf32>
  kernel.call "linear"(%l, %w : memref<1x8xf32>, memref<8x8xf32>) outs(%r : memref<1x8xf32>) on %s params []
  kernel.generic ins(%x : memref<8xf32>) outs(%u : memref<8xf32>) on %s {
  ^bb0(%a: f32):
    %c = math.sqrt %a : f32
    kernel.yield %c : f32
  }
  kernel.generic ins(%x : memref<8xf32>) outs(%v : memref<8xf32>) on %s1 {
  ^bb0(%a: f32):
    %c = arith.negf %a : f32
    kernel.yield %c : f32
  }
  kernel.generic ins(%q : memref<4x2xf32>) outs(%qt : memref<2x4xf32>) on %s1 {
  ^bb0(%a: f32):
    kernel.yield %a : f32
  } {transposed_outputs = array<i64: 0>} loc("layers.0.feed_forward")
  kernel.generic ins(%x : memref<8xf32>) outs(%z : memref<8xf32>) on %s {
  ^bb0(%a: f32):
    kernel.yield %a : f32
  } loc("layers.0.feed_forward")
  kernel.generic ins(%u : memref<8xf32>) outs(%w2 : memref<8xf32>) on %s {
  ^bb0(%a: f32):
    kernel.yield %a : f32
  } loc("layers.1.feed_forward")
  kernel.generic ins(%u : memref<8xf32>) outs(%w3 : memref<8xf32>) on %s {
  ^bb0(%a: f32):
    kernel.yield %a : f32
  }
  kernel.generic ins(%u : memref<8xf32>) outs(%w4 : memref<8xf32>) on %s {
  ^bb0(%a: f32):
    kernel.yield %a : f32
  }
  return
}

// -----

// A shard cast moves up past ops that touch none of its buffers (the block
// before's GEMM and generated kernel, a gather's start) to join the nearest
// shard cast of its own block: the collective schedule started the gathers
// apart, as its budget allowed; their casts run in one launch at the first
// one's place, and each gather still starts where it was. Not past a wait
// completing what it reads (its scale's all-reduce), nor past more than
// max-hoist ops that run something.
// CHECK-LABEL: func.func @hoisted(
// CHECK:       kernel.generic ins(%arg0, %arg1 : memref<4x8xf32>, memref<4x8xf32>) outs(%[[A:[0-9]+]], %[[B:[0-9]+]] : memref<4x8xbf16>, memref<4x8xbf16>)
// CHECK:       } {segments = array<i64: 1, 1, 0, 1, 1, 0>}
// CHECK:       kernel.collective_start "all_gather_start"(%[[A]]
// CHECK:       kernel.call "linear"
// CHECK:       kernel.generic ins(%{{.*}} : memref<1x8xf32>) outs(%arg5 : memref<1x8xf32>)
// CHECK:       kernel.collective_start "all_gather_start"(%[[B]]
// CHECK:       kernel.wait
// CHECK:       kernel.generic ins(%arg2, %{{.*}} : memref<4x8xf32>, memref<f32>)
// CHECK-NOT:   segments
// HOIST1-LABEL: func.func @hoisted(
// HOIST1-NOT:   segments
func.func @hoisted(%w1: memref<4x8xf32>, %w2: memref<4x8xf32>, %w3: memref<4x8xf32>, %x: memref<1x8xf32>, %wt: memref<8x8xf32>, %z: memref<1x8xf32>, %amax: memref<f32>) {
  %s = kernel.stream 0
  %c = kernel.stream 5
  %a = kernel.alloc temporary : memref<4x8xbf16>
  kernel.call "cast"(%w1 : memref<4x8xf32>) outs(%a : memref<4x8xbf16>) on %s params [] loc("layers.1.attention.wq.weight")
  %ga = kernel.alloc collective : memref<8x8xbf16>
  %ra = kernel.collective_start "all_gather_start"(%a : memref<4x8xbf16>) outs(%ga : memref<8x8xbf16>) on %c params [0, 0, 4] -> !kernel.request
  %y = kernel.alloc temporary : memref<1x8xf32>
  kernel.call "linear"(%x, %wt : memref<1x8xf32>, memref<8x8xf32>) outs(%y : memref<1x8xf32>) on %s params [] loc("layers.0.feed_forward.w2")
  kernel.call "silu"(%y : memref<1x8xf32>) outs(%z : memref<1x8xf32>) on %s params [] loc("layers.0.feed_forward")
  %b = kernel.alloc temporary : memref<4x8xbf16>
  kernel.call "cast"(%w2 : memref<4x8xf32>) outs(%b : memref<4x8xbf16>) on %s params [] loc("layers.1.attention.wk.weight")
  %gb = kernel.alloc collective : memref<8x8xbf16>
  %rb = kernel.collective_start "all_gather_start"(%b : memref<4x8xbf16>) outs(%gb : memref<8x8xbf16>) on %c params [0, 0, 4] -> !kernel.request
  %m = kernel.alloc temporary : memref<f32>
  %rm = kernel.collective_start "all_reduce_start"(%amax : memref<f32>) outs(%m : memref<f32>) on %c params [2, 0, 4] -> !kernel.request
  kernel.wait %rm on %s
  %d = kernel.alloc temporary : memref<4x8xbf16>
  kernel.generic ins(%w3, %m : memref<4x8xf32>, memref<f32>) outs(%d : memref<4x8xbf16>) on %s {
  ^bb0(%v: f32, %k: f32):
    %p = arith.mulf %v, %k : f32
    %t = arith.truncf %p : f32 to bf16
    kernel.yield %t : bf16
  } loc("layers.1.attention.wv.weight")
  %gd = kernel.alloc collective : memref<8x8xbf16>
  %rd = kernel.collective_start "all_gather_start"(%d : memref<4x8xbf16>) outs(%gd : memref<8x8xbf16>) on %c params [0, 0, 4] -> !kernel.request
  kernel.wait %ra on %s
  kernel.wait %rb on %s
  kernel.wait %rd on %s
  return
}

// -----

// Not hoisted: past a kernel writing the cast's parameter (an update of
// it), past one reading the scale it writes, nor a cast whose output a
// kernel reads (not only its gather).
// CHECK-LABEL: func.func @not_hoisted(
// HOIST1-LABEL: func.func @not_hoisted(
// CHECK-NOT:   segments
// CHECK:       return
func.func @not_hoisted(%w1: memref<4x8xf32>, %w2: memref<4x8xf32>, %w3: memref<4x8xf32>, %w4: memref<4x8xf32>, %u: memref<4x8xf32>, %wt: memref<8x8xf32>, %amax: memref<f32>, %sc: memref<f32>, %y: memref<4x8xf32>, %z: memref<4x8xbf16>) {
  %s = kernel.stream 0
  %c = kernel.stream 5
  %a = kernel.alloc temporary : memref<4x8xbf16>
  kernel.call "cast"(%w1 : memref<4x8xf32>) outs(%a : memref<4x8xbf16>) on %s params [] loc("layers.1.attention.wq.weight")
  %ga = kernel.alloc collective : memref<8x8xbf16>
  %ra = kernel.collective_start "all_gather_start"(%a : memref<4x8xbf16>) outs(%ga : memref<8x8xbf16>) on %c params [0, 0, 4] -> !kernel.request
  kernel.call "linear"(%u, %wt : memref<4x8xf32>, memref<8x8xf32>) outs(%w2 : memref<4x8xf32>) on %s params [] loc("layers.0.feed_forward.w2")
  %b = kernel.alloc temporary : memref<4x8xbf16>
  kernel.call "cast"(%w2 : memref<4x8xf32>) outs(%b : memref<4x8xbf16>) on %s params [] loc("layers.1.attention.wk.weight")
  %gb = kernel.alloc collective : memref<8x8xbf16>
  %rb = kernel.collective_start "all_gather_start"(%b : memref<4x8xbf16>) outs(%gb : memref<8x8xbf16>) on %c params [0, 0, 4] -> !kernel.request
  kernel.generic ins(%u, %sc : memref<4x8xf32>, memref<f32>) outs(%y : memref<4x8xf32>) on %s {
  ^bb0(%v: f32, %k: f32):
    %p = arith.mulf %v, %k : f32
    kernel.yield %p : f32
  } loc("layers.0.feed_forward")
  %d = kernel.alloc temporary : memref<4x8xbf16>
  kernel.generic ins(%w3, %amax : memref<4x8xf32>, memref<f32>) outs(%d, %sc : memref<4x8xbf16>, memref<f32>) on %s {
  ^bb0(%v: f32, %k: f32):
    %p = arith.mulf %v, %k : f32
    %t = arith.truncf %p : f32 to bf16
    kernel.yield %t, %k : bf16, f32
  } loc("layers.1.attention.wv.weight")
  %gd = kernel.alloc collective : memref<8x8xbf16>
  %rd = kernel.collective_start "all_gather_start"(%d : memref<4x8xbf16>) outs(%gd : memref<8x8xbf16>) on %c params [0, 0, 4] -> !kernel.request
  %lo = kernel.alloc temporary : memref<4x4xf32>
  kernel.call "linear"(%y, %u : memref<4x8xf32>, memref<4x8xf32>) outs(%lo : memref<4x4xf32>) on %s params [] loc("layers.0.feed_forward.w2")
  %e = kernel.alloc temporary : memref<4x8xbf16>
  kernel.call "cast"(%w4 : memref<4x8xf32>) outs(%e : memref<4x8xbf16>) on %s params [] loc("layers.1.attention.wo.weight")
  kernel.call "cast"(%e : memref<4x8xbf16>) outs(%z : memref<4x8xbf16>) on %s params [] loc("layers.1.attention.wo")
  kernel.wait %ra on %s
  kernel.wait %rb on %s
  kernel.wait %rd on %s
  return
}

// -----

// Kernels in tiles join each other (the backward's cast-transpose of a
// gradient and the float8 transposes of weights its GEMMs read), of any
// sizes (tiles move elements one by one: no packs): each segment keeps
// its transposed outputs (indices shifted past the earlier kernels'
// outputs) and runs in its own tiles. A plain kernel joins them too, as a
// segment run element by element (when no collective started between
// them sends what the earlier one writes: @collective_after_earlier).
// CHECK-LABEL: func.func @tiled(
// CHECK:       kernel.generic ins(%arg0, %arg1, %arg5, %arg0 : memref<4x8xbf16>, memref<8x16xf8E4M3FN>, memref<3x5xf8E4M3FN>, memref<4x8xbf16>) outs(%{{.*}}, %arg2, %arg3, %arg6, %arg4 : memref<8x4xf32>, memref<4x8xf32>, memref<16x8xf8E4M3FN>, memref<5x3xf8E4M3FN>, memref<4x8xf32>)
// CHECK:       } {segments = array<i64: 1, 2, 0, 1, 1, 0, 1, 1, 0, 1, 1, 0>, transposed_outputs = array<i64: 0, 2, 3>}
// CHECK-NOT:   kernel.generic
func.func @tiled(%g: memref<4x8xbf16>, %w: memref<8x16xf8E4M3FN>, %gu: memref<4x8xf32>, %wt: memref<16x8xf8E4M3FN>, %p: memref<4x8xf32>, %o: memref<3x5xf8E4M3FN>, %ot: memref<5x3xf8E4M3FN>) {
  %s = kernel.stream 0
  %gt = kernel.alloc temporary : memref<8x4xf32>
  kernel.generic ins(%g : memref<4x8xbf16>) outs(%gt, %gu : memref<8x4xf32>, memref<4x8xf32>) on %s {
  ^bb0(%x: bf16):
    %y = arith.extf %x : bf16 to f32
    kernel.yield %y, %y : f32, f32
  } {transposed_outputs = array<i64: 0>} loc("layers.0.feed_forward.w2")
  kernel.generic ins(%w : memref<8x16xf8E4M3FN>) outs(%wt : memref<16x8xf8E4M3FN>) on %s {
  ^bb0(%x: f8E4M3FN):
    kernel.yield %x : f8E4M3FN
  } {transposed_outputs = array<i64: 0>} loc("layers.0.feed_forward.w2")
  kernel.generic ins(%o : memref<3x5xf8E4M3FN>) outs(%ot : memref<5x3xf8E4M3FN>) on %s {
  ^bb0(%x: f8E4M3FN):
    kernel.yield %x : f8E4M3FN
  } {transposed_outputs = array<i64: 0>} loc("layers.0.feed_forward.w3")
  kernel.generic ins(%g : memref<4x8xbf16>) outs(%p : memref<4x8xf32>) on %s {
  ^bb0(%x: bf16):
    %y = arith.extf %x : bf16 to f32
    kernel.yield %y : f32
  } loc("layers.0.feed_forward.w2")
  return
}

// -----

// The wait for a gather stands between a gradient's cast-transpose and the
// transpose of the gathered float8 weight, which reads the gather's
// result: the cast-transpose moves down past the wait (which touches none
// of its buffers) and both run in one launch at the later one's place,
// when the gather still overlaps a compute op (the GEMM, as an FSDP gather
// issued ahead does). In @past_wait_exposes the gather starts right before
// the cast-transpose, its only overlap (a sequence-parallel gather), so
// nothing moves; in @wait_touches_earlier the gather reads the cast's
// output, so nothing moves.
// CHECK-LABEL: func.func @past_wait(
// CHECK:       kernel.call "linear"
// CHECK-NEXT:  kernel.alloc temporary
// CHECK-NEXT:  kernel.wait
// CHECK-NEXT:  kernel.generic ins(%arg0, %[[G:.*]] : memref<4x8xbf16>, memref<8x16xf8E4M3FN>)
// CHECK:       } {segments = array<i64: 1, 1, 0, 1, 1, 0>, transposed_outputs = array<i64: 0, 1>}
// CHECK-LABEL: func.func @past_wait_exposes(
// CHECK:       kernel.collective_start
// CHECK:       kernel.generic ins(%arg0 : memref<4x8xbf16>)
// CHECK:       kernel.wait
// CHECK:       kernel.generic ins(%{{.*}} : memref<8x16xf8E4M3FN>)
// The kernel after the wait reads the amax the earlier kernel reduces
// (a cast's scale): the earlier one does not move down to it, as one
// launch's segments run in no order.
// CHECK-LABEL: func.func @past_wait_reads_earlier(
// CHECK:       kernel.generic ins(%arg0 : memref<4x8xbf16>) reduce [#kernel.reduction<absmax>]
// CHECK:       kernel.wait
// CHECK:       kernel.generic ins(%{{.*}}, %{{.*}} : memref<8x16xf8E4M3FN>, memref<f32>)
// CHECK-LABEL: func.func @wait_touches_earlier(
// CHECK:       kernel.generic ins(%arg0 : memref<4x8xbf16>)
// CHECK:       kernel.wait
// CHECK:       kernel.generic ins(%{{.*}} : memref<8x16xf8E4M3FN>)
func.func @past_wait(%g: memref<4x8xbf16>, %shard: memref<4x16xf8E4M3FN>, %wt: memref<16x8xf8E4M3FN>, %a: memref<4x8xbf16>, %b: memref<8x8xbf16>, %o: memref<4x8xbf16>) {
  %s = kernel.stream 0
  %c = kernel.stream 1
  %full = kernel.alloc collective : memref<8x16xf8E4M3FN>
  %r = kernel.collective_start "all_gather_start"(%shard : memref<4x16xf8E4M3FN>) outs(%full : memref<8x16xf8E4M3FN>) on %c params [0, 0, 2] -> !kernel.request
  kernel.call "linear"(%a, %b : memref<4x8xbf16>, memref<8x8xbf16>) outs(%o : memref<4x8xbf16>) on %s params []
  %gt = kernel.alloc temporary : memref<8x4xf32>
  kernel.generic ins(%g : memref<4x8xbf16>) outs(%gt : memref<8x4xf32>) on %s {
  ^bb0(%x: bf16):
    %y = arith.extf %x : bf16 to f32
    kernel.yield %y : f32
  } {transposed_outputs = array<i64: 0>} loc("layers.0.feed_forward.w2")
  kernel.wait %r on %s
  kernel.generic ins(%full : memref<8x16xf8E4M3FN>) outs(%wt : memref<16x8xf8E4M3FN>) on %s {
  ^bb0(%x: f8E4M3FN):
    kernel.yield %x : f8E4M3FN
  } {transposed_outputs = array<i64: 0>} loc("layers.0.feed_forward.w2")
  return
}

func.func @past_wait_exposes(%g: memref<4x8xbf16>, %shard: memref<4x16xf8E4M3FN>, %wt: memref<16x8xf8E4M3FN>) {
  %s = kernel.stream 0
  %c = kernel.stream 1
  %full = kernel.alloc collective : memref<8x16xf8E4M3FN>
  %r = kernel.collective_start "all_gather_start"(%shard : memref<4x16xf8E4M3FN>) outs(%full : memref<8x16xf8E4M3FN>) on %c params [0, 0, 2] -> !kernel.request
  %gt = kernel.alloc temporary : memref<8x4xf32>
  kernel.generic ins(%g : memref<4x8xbf16>) outs(%gt : memref<8x4xf32>) on %s {
  ^bb0(%x: bf16):
    %y = arith.extf %x : bf16 to f32
    kernel.yield %y : f32
  } {transposed_outputs = array<i64: 0>} loc("layers.0.feed_forward.w2")
  kernel.wait %r on %s
  kernel.generic ins(%full : memref<8x16xf8E4M3FN>) outs(%wt : memref<16x8xf8E4M3FN>) on %s {
  ^bb0(%x: f8E4M3FN):
    kernel.yield %x : f8E4M3FN
  } {transposed_outputs = array<i64: 0>} loc("layers.0.feed_forward.w2")
  return
}

func.func @past_wait_reads_earlier(%g: memref<4x8xbf16>, %shard: memref<4x16xf8E4M3FN>, %wt: memref<16x8xf32>, %a: memref<4x8xbf16>, %b: memref<8x8xbf16>, %o: memref<4x8xbf16>) {
  %s = kernel.stream 0
  %c = kernel.stream 1
  %full = kernel.alloc collective : memref<8x16xf8E4M3FN>
  %r = kernel.collective_start "all_gather_start"(%shard : memref<4x16xf8E4M3FN>) outs(%full : memref<8x16xf8E4M3FN>) on %c params [0, 0, 2] -> !kernel.request
  kernel.call "linear"(%a, %b : memref<4x8xbf16>, memref<8x8xbf16>) outs(%o : memref<4x8xbf16>) on %s params []
  %m = kernel.alloc temporary : memref<f32>
  kernel.generic ins(%g : memref<4x8xbf16>) reduce [#kernel.reduction<absmax>](%m : memref<f32>) on %s {
  ^bb0(%x: bf16):
    %y = arith.extf %x : bf16 to f32
    kernel.yield %y : f32
  } loc("layers.0.feed_forward.w2")
  kernel.wait %r on %s
  kernel.generic ins(%full, %m : memref<8x16xf8E4M3FN>, memref<f32>) outs(%wt : memref<16x8xf32>) on %s {
  ^bb0(%x: f8E4M3FN, %sc: f32):
    %w = arith.extf %x : f8E4M3FN to f32
    %y = arith.mulf %w, %sc : f32
    kernel.yield %y : f32
  } {transposed_outputs = array<i64: 0>} loc("layers.0.feed_forward.w2")
  return
}

func.func @wait_touches_earlier(%g: memref<4x8xbf16>, %wt: memref<16x8xf8E4M3FN>) {
  %s = kernel.stream 0
  %c = kernel.stream 1
  %q = kernel.alloc temporary : memref<4x16xf8E4M3FN>
  %gt = kernel.alloc temporary : memref<8x4xbf16>
  kernel.generic ins(%g : memref<4x8xbf16>) outs(%gt : memref<8x4xbf16>) on %s {
  ^bb0(%x: bf16):
    kernel.yield %x : bf16
  } {transposed_outputs = array<i64: 0>} loc("layers.0.feed_forward.w2")
  %full = kernel.alloc collective : memref<8x16xf8E4M3FN>
  %v = kernel.view %gt : memref<8x4xbf16> to memref<4x16xf8E4M3FN>
  %r = kernel.collective_start "all_gather_start"(%v : memref<4x16xf8E4M3FN>) outs(%full : memref<8x16xf8E4M3FN>) on %c params [0, 0, 2] -> !kernel.request
  kernel.wait %r on %s
  kernel.generic ins(%full : memref<8x16xf8E4M3FN>) outs(%wt : memref<16x8xf8E4M3FN>) on %s {
  ^bb0(%x: f8E4M3FN):
    kernel.yield %x : f8E4M3FN
  } {transposed_outputs = array<i64: 0>} loc("layers.0.feed_forward.w2")
  return
}

// -----

// A kernel whose result a collective sends (a weight gradient's cast to
// f32 for its reduce-scatter) keeps its launch: joined with the next
// kernel, the reduce-scatter would start only after that one's work too.
// CHECK-LABEL: func.func @collective_after_earlier(
// CHECK:       kernel.generic ins(%[[G:.*]] : memref<4x8xbf16>) outs(%[[GF:.*]] : memref<4x8xf32>)
// CHECK:       kernel.collective_start "reduce_scatter_start"(%[[GF]]
// CHECK:       kernel.generic ins(%arg1 : memref<4x8xbf16>) outs(%arg3 : memref<4x8xf32>)
// CHECK-NOT:   segments
func.func @collective_after_earlier(%in: memref<4x8xbf16>, %h: memref<4x8xbf16>, %shard: memref<2x8xf32>, %o: memref<4x8xf32>, %w: memref<8x8xbf16>) {
  %s = kernel.stream 0
  %c = kernel.stream 1
  %g = kernel.alloc temporary : memref<4x8xbf16>
  kernel.call "linear"(%in, %w : memref<4x8xbf16>, memref<8x8xbf16>) outs(%g : memref<4x8xbf16>) on %s params []
  %gf = kernel.alloc temporary : memref<4x8xf32>
  kernel.generic ins(%g : memref<4x8xbf16>) outs(%gf : memref<4x8xf32>) on %s {
  ^bb0(%x: bf16):
    %y = arith.extf %x : bf16 to f32
    kernel.yield %y : f32
  } loc("layers.0.feed_forward.w2.weight")
  %r = kernel.collective_start "reduce_scatter_start"(%gf : memref<4x8xf32>) outs(%shard : memref<2x8xf32>) on %c params [0, 0, 2] -> !kernel.request
  kernel.generic ins(%h : memref<4x8xbf16>) outs(%o : memref<4x8xf32>) on %s {
  ^bb0(%x: bf16):
    %y = arith.extf %x : bf16 to f32
    kernel.yield %y : f32
  } loc("layers.0.feed_forward.w1")
  kernel.wait %r on %s
  return
}

// -----

// The parameters' float8 amaxes at the step's start (one kernel a block,
// dist-batch-parameter-amaxes) reduce only the step's state and write no
// element: they join across blocks, up to max-segments. An amax of a
// temporary stays with its own block.
// CHECK-LABEL: func.func @parameter_amaxes(
// CHECK:       kernel.generic ins(%arg0, %arg1, %arg2 : {{.*}}) reduce [#kernel.reduction<absmax>, #kernel.reduction<absmax>, #kernel.reduction<absmax>]
// CHECK:       } {segments = array<i64: 1, 0, 1, 1, 0, 1, 1, 0, 1>}
// CHECK-NEXT:  kernel.generic ins(%arg7 : memref<8xf32>) reduce
// TWO-LABEL:   func.func @parameter_amaxes(
// TWO:         kernel.generic ins(%arg0, %arg1 :
// TWO:         kernel.generic ins(%arg2 :
func.func @parameter_amaxes(%w0: memref<4x8xf32>, %w1: memref<4x8xf32>, %w2: memref<4x8xf32>, %m0: memref<f32>, %m1: memref<f32>, %m2: memref<f32>, %m3: memref<f32>, %t: memref<8xf32>) {
  %s = kernel.stream 0
  kernel.generic ins(%w0 : memref<4x8xf32>) reduce [#kernel.reduction<absmax>](%m0 : memref<f32>) on %s {
  ^bb0(%a: f32):
    kernel.yield %a : f32
  } loc("layers.0.attention.wq.weight")
  kernel.generic ins(%w1 : memref<4x8xf32>) reduce [#kernel.reduction<absmax>](%m1 : memref<f32>) on %s {
  ^bb0(%a: f32):
    kernel.yield %a : f32
  } loc("layers.1.attention.wq.weight")
  kernel.generic ins(%w2 : memref<4x8xf32>) reduce [#kernel.reduction<absmax>](%m2 : memref<f32>) on %s {
  ^bb0(%a: f32):
    kernel.yield %a : f32
  } loc("layers.2.attention.wq.weight")
  kernel.generic ins(%t : memref<8xf32>) reduce [#kernel.reduction<absmax>](%m3 : memref<f32>) on %s {
  ^bb0(%a: f32):
    kernel.yield %a : f32
  } loc("layers.3.attention.wq")
  return
}
