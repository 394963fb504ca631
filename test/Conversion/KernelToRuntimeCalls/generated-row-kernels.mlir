// RUN: titan-opt %s -split-input-file -kernel-to-runtime-calls | FileCheck %s

// A row kernel on the host (RMSNorm with its residual add and its output's
// amax, rows of 70): the step runs it over its 6 rows, 58 a span (at least
// 4096 elements). For each row the function first sums the squares in 16
// f32 lanes (lane k: columns k, k + 16, ... of the row's first 64), the
// body's ops on vectors of 16 loaded with the element's alignment only (a
// row of 70 bf16 starts anywhere), then the row's other 6 columns in order; the lanes are added pairwise and the
// tail last. Then a loop over the row's elements computes the sum, the
// norm (1 / sqrt, correctly rounded) and the amax, the weight read at the
// column. The amax's accumulator goes to the buffer with one atomic umax
// (in the function's text before the loop over rows, as its exit block).
// CHECK-LABEL: llvm.func @titan_rows(
// CHECK-DAG:   %[[ROWS:.*]] = llvm.mlir.constant(6 : i64) : i64
// CHECK-DAG:   %[[SPAN:.*]] = llvm.mlir.constant(58 : i64) : i64
// CHECK:       llvm.call @titan_rt_parallel_for(%{{.*}}, %{{.*}}, %[[ROWS]], %[[SPAN]],
// CHECK-LABEL: llvm.func internal @titan_generated_0(
// CHECK-DAG:   %[[LANES:.*]] = llvm.mlir.constant(16 : i64) : i64
// CHECK-DAG:   %[[WHOLE:.*]] = llvm.mlir.constant(64 : i64) : i64
// CHECK-DAG:   %[[COLS:.*]] = llvm.mlir.constant(70 : i64) : i64
// CHECK:       llvm.atomicrmw umax
// CHECK:       ^bb{{[0-9]+}}(%{{.*}}: i64, %{{.*}}: vector<16xf32>):
// CHECK:       llvm.icmp "slt" %{{.*}}, %[[WHOLE]] : i64
// CHECK:       llvm.load %{{.*}} {alignment = 2 : i64} : !llvm.ptr -> vector<16xbf16>
// CHECK:       llvm.add %{{.*}}, %[[LANES]] : i64
// CHECK:       ^bb{{[0-9]+}}(%{{.*}}: i64, %{{.*}}: f32):
// CHECK:       llvm.icmp "slt" %{{.*}}, %[[COLS]] : i64
// CHECK:       llvm.intr.sqrt
// CHECK:       llvm.fdiv
// CHECK:       llvm.intr.umax
module attributes {kernel.arena_bytes = 65536 : i64, kernel.slots = {"param:w" = array<i64: 8192, 128>}} {
  func.func @rows(%w: memref<70xbf16> {kernel.slot = "param:w"}) {
    %s = kernel.stream 0
    %a = kernel.alloc temporary {offset = 0 : i64} : memref<6x70xbf16>
    %b = kernel.alloc temporary {offset = 1024 : i64} : memref<6x70xbf16>
    %h = kernel.alloc temporary {offset = 2048 : i64} : memref<6x70xbf16>
    %y = kernel.alloc temporary {offset = 3072 : i64} : memref<6x70xbf16>
    %m = kernel.alloc temporary {offset = 4096 : i64} : memref<f32>
    kernel.generic ins(%a, %b, %w : memref<6x70xbf16>, memref<6x70xbf16>, memref<70xbf16>) outs(%h, %y : memref<6x70xbf16>, memref<6x70xbf16>) reduce [#kernel.reduction<absmax>](%m : memref<f32>) on %s {
    ^bb0(%x0: bf16, %x1: bf16, %g: bf16):
      %e0 = arith.extf %x0 : bf16 to f32
      %e1 = arith.extf %x1 : bf16 to f32
      %sum = arith.addf %e0, %e1 : f32
      %hb = arith.truncf %sum : f32 to bf16
      %x = arith.extf %hb : bf16 to f32
      %sq = arith.mulf %x, %x : f32
      %ss = kernel.row_sum %sq : f32
      %c = arith.constant 70.0 : f32
      %mean = arith.divf %ss, %c : f32
      %eps = arith.constant 1.0e-5 : f32
      %v = arith.addf %mean, %eps : f32
      %r = math.sqrt %v : f32
      %one = arith.constant 1.0 : f32
      %inv = arith.divf %one, %r : f32
      %n = arith.mulf %x, %inv : f32
      %gf = arith.extf %g : bf16 to f32
      %o = arith.mulf %n, %gf : f32
      %ob = arith.truncf %o : f32 to bf16
      %oe = arith.extf %ob : bf16 to f32
      kernel.yield %hb, %ob, %oe : bf16, bf16, f32
    } {row_length = 70 : i64}
    return
  }
}

// -----

// A row sum over a value with an exponential (a SiLU fused into the norm's
// input): exp's polynomial approximation has no vector form here, so each
// chunk's 16 elements are computed one by one and gathered into the lanes'
// vector (the same order and bits).
// CHECK-LABEL: llvm.func internal @titan_generated_0(
// CHECK:       ^bb{{[0-9]+}}(%{{.*}}: i64, %{{.*}}: vector<16xf32>):
// CHECK-NOT:   !llvm.ptr -> vector<16xf32>
// CHECK:       llvm.insertelement
// CHECK:       llvm.intr.sqrt
module attributes {kernel.arena_bytes = 65536 : i64, kernel.slots = {}} {
  func.func @exp_rows() {
    %s = kernel.stream 0
    %x = kernel.alloc temporary {offset = 0 : i64} : memref<4x32xf32>
    %y = kernel.alloc temporary {offset = 1024 : i64} : memref<4x32xf32>
    kernel.generic ins(%x : memref<4x32xf32>) outs(%y : memref<4x32xf32>) on %s {
    ^bb0(%a: f32):
      %n = arith.negf %a : f32
      %e = math.exp %n : f32
      %one = arith.constant 1.0 : f32
      %d = arith.addf %one, %e : f32
      %v = arith.divf %a, %d : f32
      %sq = arith.mulf %v, %v : f32
      %ss = kernel.row_sum %sq : f32
      %r = math.sqrt %ss : f32
      %o = arith.mulf %v, %r : f32
      kernel.yield %o : f32
    } {row_length = 32 : i64}
    return
  }
}
