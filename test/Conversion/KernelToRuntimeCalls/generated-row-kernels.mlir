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
// input): exp's polynomial approximation runs on the chunk's vector of 16
// (its vector-dialect ops lowered as the rest; each lane the scalar
// polynomial's bits).
// CHECK-LABEL: llvm.func internal @titan_generated_0(
// CHECK:       ^bb{{[0-9]+}}(%{{.*}}: i64, %{{.*}}: vector<16xf32>):
// CHECK:       llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr -> vector<16xf32>
// CHECK:       llvm.intr.fma(%{{.*}}) : (vector<16xf32>, vector<16xf32>, vector<16xf32>) -> vector<16xf32>
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

// -----

// A row kernel with a column sum (RMSNorm's backward, rows of 64 bf16 in
// 4 row blocks of 1 or 2 of its 6 rows, its dx added into a residual
// gradient): the step runs it over its 4 row blocks, then its totals over
// the 64 columns. A block zeroes its 64 partials (f32, in the workspace),
// then runs its rows [b * 6 / 4, (b + 1) * 6 / 4), each row's dw addends
// added to its partials after its elements. The totals take block 0's
// partials, then add blocks 1, 2 and 3 in order, each a loop along the
// columns.
// CHECK-LABEL: llvm.func @titan_column_sums(
// CHECK-DAG:   %[[BLOCKS:.*]] = llvm.mlir.constant(4 : i64) : i64
// CHECK:       llvm.call @titan_rt_parallel_for(%{{.*}}, %{{.*}}, %[[BLOCKS]], %{{.*}}, %{{.*}}, %{{.*}})
// CHECK:       %[[TOTALS:.*]] = llvm.mlir.addressof @titan_generated_0_totals
// CHECK:       %[[COLS:.*]] = llvm.mlir.constant(64 : i64) : i64
// CHECK:       llvm.call @titan_rt_parallel_for(%[[TOTALS]], %{{.*}}, %[[COLS]],
// CHECK-LABEL: llvm.func internal @titan_generated_0(
// CHECK-DAG:   %[[ROWS:.*]] = llvm.mlir.constant(6 : i64) : i64
// CHECK-DAG:   %[[NBLOCKS:.*]] = llvm.mlir.constant(4 : i64) : i64
// CHECK-DAG:   %[[ZERO:.*]] = llvm.mlir.constant(0.000000e+00 : f32) : f32
// CHECK:       llvm.store %[[ZERO]], %{{.*}} {access_groups
// CHECK:       %[[FIRST:.*]] = llvm.mul %{{.*}}, %[[ROWS]] : i64
// CHECK:       llvm.sdiv %[[FIRST]], %[[NBLOCKS]] : i64
// CHECK:       llvm.intr.sqrt
// CHECK:       %[[PARTIAL:.*]] = llvm.load %{{.*}} : !llvm.ptr -> f32
// CHECK:       %[[ADDED:.*]] = llvm.fadd %[[PARTIAL]], %{{.*}} : f32
// CHECK:       llvm.store %[[ADDED]], %{{.*}} : f32, !llvm.ptr
// CHECK-LABEL: llvm.func internal @titan_generated_0_totals(
// CHECK:       %[[P0:.*]] = llvm.load %{{.*}} {access_groups = [#{{.*}}]} : !llvm.ptr -> f32
// CHECK:       llvm.store %[[P0]], %{{.*}} {access_groups
// CHECK:       %[[PB:.*]] = llvm.load %{{.*}} {access_groups = [#{{.*}}]} : !llvm.ptr -> f32
// CHECK:       %[[SUM:.*]] = llvm.load %{{.*}} {access_groups = [#{{.*}}]} : !llvm.ptr -> f32
// CHECK:       %[[NEXT:.*]] = llvm.fadd %[[SUM]], %[[PB]] : f32
// CHECK:       llvm.store %[[NEXT]], %{{.*}} {access_groups
module attributes {kernel.arena_bytes = 4096 : i64, kernel.slots = {"param:dwf" = array<i64: 1792, 256>, "param:dy" = array<i64: 1024, 768>, "param:r" = array<i64: 2048, 768>, "param:w" = array<i64: 0, 128>, "param:x" = array<i64: 256, 768>}} {
  func.func @column_sums(%arg0: memref<64xbf16> {kernel.slot = "param:w"}, %arg1: memref<6x64xbf16> {kernel.slot = "param:x"}, %arg2: memref<6x64xbf16> {kernel.slot = "param:dy"}, %arg3: memref<64xf32> {kernel.slot = "param:dwf"}, %arg4: memref<6x64xbf16> {kernel.slot = "param:r"}) {
    %0 = kernel.stream 0
    %1 = kernel.alloc temporary {offset = 3840 : i64} : memref<64xf32>
    %2 = kernel.alloc workspace {offset = 2816 : i64} : memref<4x1x64xf32>
    kernel.generic ins(%arg4, %arg1, %arg0, %arg2 : memref<6x64xbf16>, memref<6x64xbf16>, memref<64xbf16>, memref<6x64xbf16>) outs(%arg4 : memref<6x64xbf16>) workspace(%2 : memref<4x1x64xf32>) reduce [#kernel.reduction<column_sum>](%1 : memref<64xf32>) on %0 {
    ^bb0(%arg5: bf16, %arg6: bf16, %arg7: bf16, %arg8: bf16):
      %3 = arith.extf %arg6 : bf16 to f32
      %4 = arith.extf %arg7 : bf16 to f32
      %5 = arith.extf %arg8 : bf16 to f32
      %cst = arith.constant 6.400000e+01 : f32
      %6 = arith.mulf %3, %3 : f32
      %7 = kernel.row_sum %6 : f32
      %8 = arith.divf %7, %cst : f32
      %cst_0 = arith.constant 9.99999974E-6 : f32
      %9 = arith.addf %8, %cst_0 : f32
      %10 = math.sqrt %9 : f32
      %cst_1 = arith.constant 1.000000e+00 : f32
      %11 = arith.divf %cst_1, %10 : f32
      %12 = arith.mulf %5, %4 : f32
      %13 = arith.mulf %12, %3 : f32
      %14 = kernel.row_sum %13 : f32
      %15 = arith.mulf %3, %11 : f32
      %16 = arith.mulf %14, %11 : f32
      %17 = arith.divf %16, %cst : f32
      %18 = arith.mulf %15, %17 : f32
      %19 = arith.subf %12, %18 : f32
      %20 = arith.mulf %11, %19 : f32
      %21 = arith.mulf %5, %15 : f32
      %22 = arith.truncf %20 : f32 to bf16
      %23 = arith.extf %arg5 : bf16 to f32
      %24 = arith.extf %22 : bf16 to f32
      %25 = arith.addf %23, %24 : f32
      %26 = arith.truncf %25 : f32 to bf16
      kernel.yield %26, %21 : bf16, f32
    } {row_length = 64 : i64}
    kernel.generic ins(%1 : memref<64xf32>) outs(%arg3 : memref<64xf32>) on %0 {
    ^bb0(%arg5: f32):
      %3 = arith.truncf %arg5 : f32 to bf16
      %4 = arith.extf %3 : bf16 to f32
      kernel.yield %4 : f32
    }
    return
  }
}

// -----

// A row kernel in stages on the host (the cross-entropy's rows, 6 rows of
// 70 f32): each row's label is loaded once (its map d0 floordiv 70); the
// first stage takes the row's max and its label's logit in 16 lanes, the
// column a vector of 16 compared with the label splat; the second sums
// exp(x - max) in 16 lanes too, max splat (exp's polynomial on vectors,
// its fma and floor); the lse and the loss are stored once a row and no
// loop over the row's elements follows.
// CHECK-LABEL: llvm.func internal @titan_generated_0(
// CHECK:       %[[IOTA:.*]] = llvm.mlir.constant(dense<[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]> : vector<16xi64>) : vector<16xi64>
// CHECK:       %[[NEG:.*]] = llvm.mlir.constant(dense<0xFF800000> : vector<16xf32>) : vector<16xf32>
// CHECK:       llvm.load %{{.*}} : !llvm.ptr -> i32
// CHECK:       llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr -> vector<16xf32>
// CHECK:       llvm.add %{{.*}}, %[[IOTA]] : vector<16xi64>
// CHECK:       llvm.icmp "eq" %{{.*}}, %{{.*}} : vector<16xi64>
// CHECK:       llvm.intr.maximum(%{{.*}}, %{{.*}}) : (vector<16xf32>, vector<16xf32>) -> vector<16xf32>
// CHECK:       llvm.fadd %{{.*}}, %{{.*}} : vector<16xf32>
// CHECK:       llvm.intr.maximum(%{{.*}}, %{{.*}}) : (f32, f32) -> f32
// CHECK:       llvm.fsub %{{.*}}, %{{.*}} : vector<16xf32>
// CHECK:       llvm.intr.floor(%{{.*}}) : (vector<16xf32>) -> vector<16xf32>
// CHECK:       llvm.intr.fma(%{{.*}}) : (vector<16xf32>, vector<16xf32>, vector<16xf32>) -> vector<16xf32>
// CHECK:       llvm.fadd %{{.*}}, %{{.*}} : vector<16xf32>
// CHECK:       llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr
// CHECK-NEXT:  llvm.getelementptr
// CHECK-NEXT:  llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr
// CHECK-NEXT:  llvm.add
// CHECK-NEXT:  llvm.br ^bb1(
// CHECK-NEXT:  }
module attributes {kernel.arena_bytes = 4096 : i64, kernel.slots = {}} {
  func.func @stages() {
    %s = kernel.stream 0
    %x = kernel.alloc temporary {offset = 0 : i64} : memref<6x70xf32>
    %y = kernel.alloc temporary {offset = 2048 : i64} : memref<6xi32>
    %lse = kernel.alloc temporary {offset = 2304 : i64} : memref<6xf32>
    %loss = kernel.alloc temporary {offset = 2560 : i64} : memref<6xf32>
    kernel.generic ins(%x, %y : memref<6x70xf32>, memref<6xi32>) outs(%lse, %loss : memref<6xf32>, memref<6xf32>) on %s {
    ^bb0(%a: f32, %label: i32):
      %m = kernel.row_max %a : f32
      %d = arith.subf %a, %m : f32
      %e = math.exp %d : f32
      %sum = kernel.row_sum %e : f32
      %log = math.log %sum : f32
      %l = arith.addf %m, %log : f32
      %j = kernel.column : i64
      %label64 = arith.extsi %label : i32 to i64
      %at = arith.cmpi eq, %j, %label64 : i64
      %zero = arith.constant 0.0 : f32
      %v = arith.select %at, %a, %zero : f32
      %t = kernel.row_sum %v : f32
      %r = arith.subf %l, %t : f32
      kernel.yield %l, %r : f32, f32
    } {row_length = 70 : i64, input_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0 floordiv 70)>]}
    return
  }
}
