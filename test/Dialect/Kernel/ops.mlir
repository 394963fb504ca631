// RUN: titan-opt %s | titan-opt | FileCheck %s
// RUN: titan-opt %s --mlir-print-op-generic | titan-opt | FileCheck %s

// The input maps of @mapped, printed as aliases before the module.
// CHECK-DAG: #[[PARTNER:.*]] = affine_map<(d0) -> ((d0 floordiv 2) * 2 - d0 mod 2 + 1)>
// CHECK-DAG: #[[COS:.*]] = affine_map<(d0) -> (((d0 floordiv 8) mod 3) * 4 + ((d0 mod 4) floordiv 2) * 2)>
// CHECK: module attributes {kernel.arena_bytes = 4096 : i64, kernel.slots = {"param:w" = array<i64: 0, 64>}}
// CHECK-LABEL: func.func @step(
// CHECK-SAME: %{{.*}}: memref<16xf32> {kernel.slot = "param:w"}
// CHECK: %[[S:.*]] = kernel.stream 0
// CHECK: %[[A:.*]] = kernel.alloc temporary {offset = 256 : i64} : memref<4x4xf32>
// CHECK: %[[V:.*]] = kernel.view %[[A]] : memref<4x4xf32> to memref<16xf32>
// CHECK: %[[WS:.*]] = kernel.alloc workspace {offset = 512 : i64} : memref<64xi8>
// CHECK: kernel.call "rms_norm"(%{{.*}}, %{{.*}} : memref<16xf32>, memref<16xf32>) outs(%[[V]] : memref<16xf32>) workspace(%[[WS]] : memref<64xi8>) on %[[S]] params [1.000000e-05]
// CHECK: kernel.call "fill"() outs(%[[V]] : memref<16xf32>) on %[[S]] params [0.000000e+00]
// CHECK: %[[R:.*]] = kernel.collective_start "all_reduce_start"(%[[V]] : memref<16xf32>) outs(%{{.*}} : memref<16xf32>) workspace(%[[WS]] : memref<64xi8>) on %[[S]] params [0, 0, 16] -> !kernel.request
// CHECK: kernel.wait %[[R]] on %[[S]]
// CHECK: kernel.copy %[[V]], %{{.*}} on %[[S]] : memref<16xf32>, memref<16xf32>
module attributes {kernel.arena_bytes = 4096 : i64, kernel.slots = {"param:w" = array<i64: 0, 64>}} {
  func.func @step(%w: memref<16xf32> {kernel.slot = "param:w"}) {
    %s = kernel.stream 0
    %a = kernel.alloc temporary {offset = 256 : i64} : memref<4x4xf32>
    %v = kernel.view %a : memref<4x4xf32> to memref<16xf32>
    %ws = kernel.alloc workspace {offset = 512 : i64} : memref<64xi8>
    kernel.call "rms_norm"(%w, %w : memref<16xf32>, memref<16xf32>) outs(%v : memref<16xf32>) workspace(%ws : memref<64xi8>) on %s params [1.0e-5 : f64]
    kernel.call "fill"() outs(%v : memref<16xf32>) on %s params [0.0 : f64]
    %out = kernel.alloc collective {offset = 768 : i64} : memref<16xf32>
    %r = kernel.collective_start "all_reduce_start"(%v : memref<16xf32>) outs(%out : memref<16xf32>) workspace(%ws : memref<64xi8>) on %s params [0 : i64, 0 : i64, 16 : i64] -> !kernel.request
    kernel.wait %r on %s
    kernel.copy %v, %w on %s : memref<16xf32>, memref<16xf32>
    return
  }

  // A row kernel: rows of 4, the weight read at each element's column.
  // CHECK-LABEL: func.func @rows(
  // CHECK: kernel.generic ins(%{{.*}}, %{{.*}} : memref<4x4xf32>, memref<4xf32>) outs(%{{.*}} : memref<4x4xf32>) on %{{.*}} {
  // CHECK: %[[SS:.*]] = kernel.row_sum %{{.*}} : f32
  // CHECK: arith.mulf %[[SS]], %{{.*}} : f32
  // CHECK: } {row_length = 4 : i64}
  func.func @rows(%x: memref<4x4xf32>, %g: memref<4xf32>, %y: memref<4x4xf32>) {
    %s = kernel.stream 0
    kernel.generic ins(%x, %g : memref<4x4xf32>, memref<4xf32>) outs(%y : memref<4x4xf32>) on %s {
    ^bb0(%a: f32, %b: f32):
      %sq = arith.mulf %a, %a : f32
      %ss = kernel.row_sum %sq : f32
      %r = arith.mulf %ss, %b : f32
      kernel.yield %r : f32
    } {row_length = 4 : i64}
    return
  }

  // A row kernel in stages with a per-row input and output (the
  // cross-entropy's rows): the row's max, then the sum of exp(x - max)
  // and the label's logit (the label read through d0 floordiv 8, the
  // column from kernel.column); the lse and the loss written once a row.
  // A row's log-sum-exp (one reduction; a target may read the row once).
  // CHECK-LABEL: func.func @row_logsumexp(
  // CHECK: kernel.row_logsumexp %{{.*}} : f32
  func.func @row_logsumexp(%x: memref<4x8xf32>, %lse: memref<4xf32>) {
    %s = kernel.stream 0
    kernel.generic ins(%x : memref<4x8xf32>) outs(%lse : memref<4xf32>) on %s {
    ^bb0(%a: f32):
      %l = kernel.row_logsumexp %a : f32
      kernel.yield %l : f32
    } {row_length = 8 : i64}
    return
  }

  // CHECK-LABEL: func.func @row_stages(
  // CHECK: %[[M:.*]] = kernel.row_max %{{.*}} : f32
  // CHECK: kernel.column : i64
  // CHECK: kernel.row_sum %{{.*}} : f32
  // CHECK: } {input_maps = [#{{.*}}, #{{.*}}], row_length = 8 : i64}
  func.func @row_stages(%x: memref<4x8xf32>, %y: memref<4xi32>, %lse: memref<4xf32>, %loss: memref<4xf32>) {
    %s = kernel.stream 0
    kernel.generic ins(%x, %y : memref<4x8xf32>, memref<4xi32>) outs(%lse, %loss : memref<4xf32>, memref<4xf32>) on %s {
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
    } {row_length = 8 : i64, input_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0 floordiv 8)>]}
    return
  }

  // A row kernel with a column sum (a norm's weight gradient): each
  // column's values summed over the rows, the partials of 2 row blocks in
  // the workspace.
  // CHECK-LABEL: func.func @column_sums(
  // CHECK: kernel.generic ins(%{{.*}} : memref<4x4xf32>) outs(%{{.*}} : memref<4x4xf32>) workspace(%{{.*}} : memref<2x1x4xf32>) reduce [#kernel.reduction<column_sum>](%{{.*}} : memref<4xf32>) on %{{.*}} {
  // CHECK: kernel.yield %{{.*}}, %{{.*}} : f32, f32
  // CHECK: } {row_length = 4 : i64}
  func.func @column_sums(%x: memref<4x4xf32>, %y: memref<4x4xf32>, %ws: memref<2x1x4xf32>, %dw: memref<4xf32>) {
    %s = kernel.stream 0
    kernel.generic ins(%x : memref<4x4xf32>) outs(%y : memref<4x4xf32>) workspace(%ws : memref<2x1x4xf32>) reduce [#kernel.reduction<column_sum>](%dw : memref<4xf32>) on %s {
    ^bb0(%a: f32):
      %sq = arith.mulf %a, %a : f32
      kernel.yield %a, %sq : f32, f32
    } {row_length = 4 : i64}
    return
  }
  // Input maps and the index (RoPE): each element, its pair partner and
  // the cos/sin table at its position and pair; the parity from the index.
  // CHECK-LABEL: func.func @mapped(
  // CHECK: kernel.index : i64
  // CHECK: } {input_maps = [#{{.*}}, #[[PARTNER]], #[[COS]]]}
  func.func @mapped(%x: memref<2x3x2x4xf32>, %f: memref<3x2x2xf32>, %y: memref<2x3x2x4xf32>) {
    %s = kernel.stream 0
    kernel.generic ins(%x, %x, %f : memref<2x3x2x4xf32>, memref<2x3x2x4xf32>, memref<3x2x2xf32>) outs(%y : memref<2x3x2x4xf32>) on %s {
    ^bb0(%a: f32, %p: f32, %c: f32):
      %i = kernel.index : i64
      %one = arith.constant 1 : i64
      %odd = arith.andi %i, %one : i64
      %t = arith.uitofp %odd : i64 to f32
      %ac = arith.mulf %a, %c : f32
      %pt = arith.mulf %p, %t : f32
      %r = arith.addf %ac, %pt : f32
      kernel.yield %r : f32
    } {input_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ((d0 floordiv 2) * 2 + 1 - d0 mod 2)>, affine_map<(d0) -> (((d0 floordiv 8) mod 3) * 4 + ((d0 mod 4) floordiv 2) * 2)>]}
    return
  }
  // A cast beside a cast-transpose in one launch: the
  // first segment in tiles, the second element by element.
  // CHECK-LABEL: func.func @tiles_and_elements(
  // CHECK: } {segments = array<i64: 1, 1, 0, 1, 1, 0>, transposed_outputs = array<i64: 0>}
  func.func @tiles_and_elements(%a: memref<4x2xf32>, %b: memref<2x4xf32>, %c: memref<8xbf16>, %d: memref<8xf32>) {
    %s = kernel.stream 0
    kernel.generic ins(%a, %c : memref<4x2xf32>, memref<8xbf16>) outs(%b, %d : memref<2x4xf32>, memref<8xf32>) on %s {
    ^bb0(%x: f32, %y: bf16):
      %w = arith.extf %y : bf16 to f32
      kernel.yield %x, %w : f32, f32
    } {segments = array<i64: 1, 1, 0, 1, 1, 0>, transposed_outputs = array<i64: 0>}
    return
  }
}
