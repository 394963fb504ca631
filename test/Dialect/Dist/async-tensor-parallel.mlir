// RUN: titan-opt %s -split-input-file -dist-async-tensor-parallel -verify-diagnostics | FileCheck %s

#mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 2, cp = 1, tp = 2>

// The forward's column-parallel linears: one gather of the sequence shard
// feeds wq, wk, wv; the gathered value stays for its other user.
// CHECK-LABEL: func.func @gather_qkv(
// CHECK-SAME: %[[X:[^:]*]]: tensor<2x4x8xf32>, %[[WQ:[^:]*]]: tensor<6x8xf32>, %[[WK:[^:]*]]: tensor<4x8xf32>, %[[WV:[^:]*]]: tensor<4x8xf32>
// CHECK-NEXT: %[[G:[^,]*]], %[[O:.*]]:3 = dist.all_gather_linear %[[X]], [%[[WQ]], %[[WK]], %[[WV]]] axes ["tp"] dim 1 : (tensor<2x4x8xf32>, tensor<6x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<2x8x8xf32>, tensor<2x8x6xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32>)
// CHECK-NEXT: %[[DW:.*]] = titan.linear_grad_weight %[[O]]#0, %[[G]]
// CHECK-NEXT: return %[[O]]#0, %[[O]]#1, %[[O]]#2, %[[DW]]
module attributes {dist.mesh = #mesh} {
  func.func @gather_qkv(%x: tensor<2x4x8xf32>, %wq: tensor<6x8xf32>, %wk: tensor<4x8xf32>, %wv: tensor<4x8xf32>) -> (tensor<2x8x6xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<6x8xf32>) {
    %f = dist.all_gather_start %x axes ["tp"] dim 1 : tensor<2x4x8xf32> -> !dist.future<tensor<2x8x8xf32>>
    %g = dist.wait %f : !dist.future<tensor<2x8x8xf32>>
    %q = titan.linear %g, %wq : (tensor<2x8x8xf32>, tensor<6x8xf32>) -> tensor<2x8x6xf32>
    %k = titan.linear %g, %wk : (tensor<2x8x8xf32>, tensor<4x8xf32>) -> tensor<2x8x4xf32>
    %v = titan.linear %g, %wv : (tensor<2x8x8xf32>, tensor<4x8xf32>) -> tensor<2x8x4xf32>
    %dw = titan.linear_grad_weight %q, %g : (tensor<2x8x6xf32>, tensor<2x8x8xf32>) -> tensor<6x8xf32>
    return %q, %k, %v, %dw : tensor<2x8x6xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<6x8xf32>
  }
}

// -----

// The row-parallel linear's partial sums, reduce-scattered along the
// sequence.
// CHECK-LABEL: func.func @scatter_wo(
// CHECK-SAME: %[[H:[^:]*]]: tensor<2x8x4xf32>, %[[WO:[^:]*]]: tensor<8x4xf32>
// CHECK-NEXT: %[[R:.*]] = dist.linear_reduce_scatter %[[H]], %[[WO]] axes ["tp"] dim 1 : (tensor<2x8x4xf32>, tensor<8x4xf32>) -> tensor<2x4x8xf32>
// CHECK-NEXT: return %[[R]]
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 2>} {
  func.func @scatter_wo(%h: tensor<2x8x4xf32>, %wo: tensor<8x4xf32>) -> tensor<2x4x8xf32> {
    %p = titan.linear %h, %wo : (tensor<2x8x4xf32>, tensor<8x4xf32>) -> tensor<2x8x8xf32>
    %f = dist.reduce_scatter_start %p axes ["tp"] dim 1 : tensor<2x8x8xf32> -> !dist.future<tensor<2x4x8xf32>>
    %r = dist.wait %f : !dist.future<tensor<2x4x8xf32>>
    return %r : tensor<2x4x8xf32>
  }
}

// -----

// The backward: all_gather(dy) -> grad_input (row-parallel linear; the
// weight gradient reads the gathered dy), and the column-parallel
// linears' input gradients summed, then reduce-scattered.
// CHECK-LABEL: func.func @backward(
// CHECK-SAME: %[[DY:[^:]*]]: tensor<2x4x8xf32>, %[[WO:[^:]*]]: tensor<8x4xf32>, %[[H:[^:]*]]: tensor<2x8x4xf32>, %[[D1:[^:]*]]: tensor<2x8x6xf32>, %[[W1:[^:]*]]: tensor<6x8xf32>, %[[D3:[^:]*]]: tensor<2x8x6xf32>, %[[W3:[^:]*]]: tensor<6x8xf32>
// CHECK-NEXT: %[[G:[^,]*]], %[[O:.*]] = dist.all_gather_linear %[[DY]], [%[[WO]]] axes ["tp"] dim 1 grad_input : (tensor<2x4x8xf32>, tensor<8x4xf32>) -> (tensor<2x8x8xf32>, tensor<2x8x4xf32>)
// CHECK-NEXT: titan.linear_grad_weight %[[G]], %[[H]]
// CHECK-NEXT: %[[R:.*]] = dist.linear_reduce_scatter %[[D1]], %[[W1]], %[[D3]], %[[W3]] axes ["tp"] dim 1 grad_input : (tensor<2x8x6xf32>, tensor<6x8xf32>, tensor<2x8x6xf32>, tensor<6x8xf32>) -> tensor<2x4x8xf32>
// CHECK-NOT: titan.add
// CHECK: return %[[O]]
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 2>} {
  func.func @backward(%dy: tensor<2x4x8xf32>, %wo: tensor<8x4xf32>, %h: tensor<2x8x4xf32>, %d1: tensor<2x8x6xf32>, %w1: tensor<6x8xf32>, %d3: tensor<2x8x6xf32>, %w3: tensor<6x8xf32>) -> (tensor<2x8x4xf32>, tensor<8x4xf32>, tensor<2x4x8xf32>) {
    %f = dist.all_gather_start %dy axes ["tp"] dim 1 : tensor<2x4x8xf32> -> !dist.future<tensor<2x8x8xf32>>
    %g = dist.wait %f : !dist.future<tensor<2x8x8xf32>>
    %dh = titan.linear_grad_input %g, %wo : (tensor<2x8x8xf32>, tensor<8x4xf32>) -> tensor<2x8x4xf32>
    %dwo = titan.linear_grad_weight %g, %h : (tensor<2x8x8xf32>, tensor<2x8x4xf32>) -> tensor<8x4xf32>
    %a = titan.linear_grad_input %d1, %w1 : (tensor<2x8x6xf32>, tensor<6x8xf32>) -> tensor<2x8x8xf32>
    %b = titan.linear_grad_input %d3, %w3 : (tensor<2x8x6xf32>, tensor<6x8xf32>) -> tensor<2x8x8xf32>
    %s = titan.add %a, %b : tensor<2x8x8xf32>
    %rf = dist.reduce_scatter_start %s axes ["tp"] dim 1 : tensor<2x8x8xf32> -> !dist.future<tensor<2x4x8xf32>>
    %r = dist.wait %rf : !dist.future<tensor<2x4x8xf32>>
    return %dh, %dwo, %r : tensor<2x8x4xf32>, tensor<8x4xf32>, tensor<2x4x8xf32>
  }
}

// -----

// Left alone: a gather along the GEMM's contracted dimension (remark), an
// FSDP gather (dp_shard), a reduce-scatter over dp_shard, a GEMM with a
// second user, a sum with a non-GEMM term (remarks).
// CHECK-LABEL: func.func @declined(
// CHECK-NOT: dist.all_gather_linear
// CHECK-NOT: dist.linear_reduce_scatter
// CHECK: return
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 2, cp = 1, tp = 2>} {
  func.func @declined(%x: tensor<8x4xf32>, %w: tensor<6x8xf32>, %p: tensor<4x8xf32>, %h: tensor<2x8x4xf32>, %wo: tensor<8x4xf32>, %e: tensor<2x8x8xf32>) -> (tensor<8x6xf32>, tensor<8x6xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x8x8xf32>, tensor<2x4x8xf32>) {
    // expected-remark @+1 {{async TP: not fused with its GEMMs: the gather runs along their contracted (last) dimension}}
    %f0 = dist.all_gather_start %x axes ["tp"] dim 1 : tensor<8x4xf32> -> !dist.future<tensor<8x8xf32>>
    %g0 = dist.wait %f0 : !dist.future<tensor<8x8xf32>>
    %y0 = titan.linear %g0, %w : (tensor<8x8xf32>, tensor<6x8xf32>) -> tensor<8x6xf32>
    %f1 = dist.all_gather_start %p axes ["dp_shard"] dim 0 : tensor<4x8xf32> -> !dist.future<tensor<8x8xf32>>
    %g1 = dist.wait %f1 : !dist.future<tensor<8x8xf32>>
    %y1 = titan.linear %g1, %w : (tensor<8x8xf32>, tensor<6x8xf32>) -> tensor<8x6xf32>
    %a = titan.linear %h, %wo : (tensor<2x8x4xf32>, tensor<8x4xf32>) -> tensor<2x8x8xf32>
    %f2 = dist.reduce_scatter_start %a axes ["dp_shard"] dim 1 : tensor<2x8x8xf32> -> !dist.future<tensor<2x4x8xf32>>
    %r2 = dist.wait %f2 : !dist.future<tensor<2x4x8xf32>>
    %b = titan.linear %h, %wo : (tensor<2x8x4xf32>, tensor<8x4xf32>) -> tensor<2x8x8xf32>
    // expected-remark @+1 {{async TP: not fused with the GEMMs before it: its input is not titan.linear, titan.linear_grad_input or tensorwise titan.scaled_matmul GEMMs of one kind (summed by titan.add) used only here}}
    %f3 = dist.reduce_scatter_start %b axes ["tp"] dim 1 : tensor<2x8x8xf32> -> !dist.future<tensor<2x4x8xf32>>
    %r3 = dist.wait %f3 : !dist.future<tensor<2x4x8xf32>>
    %c = titan.linear %h, %wo : (tensor<2x8x4xf32>, tensor<8x4xf32>) -> tensor<2x8x8xf32>
    %s = titan.add %c, %e : tensor<2x8x8xf32>
    // expected-remark @+1 {{async TP: not fused with the GEMMs before it: its input is not titan.linear, titan.linear_grad_input or tensorwise titan.scaled_matmul GEMMs of one kind (summed by titan.add) used only here}}
    %f4 = dist.reduce_scatter_start %s axes ["tp"] dim 1 : tensor<2x8x8xf32> -> !dist.future<tensor<2x4x8xf32>>
    %r4 = dist.wait %f4 : !dist.future<tensor<2x4x8xf32>>
    return %y0, %y1, %r2, %r3, %b, %r4 : tensor<8x6xf32>, tensor<8x6xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x8x8xf32>, tensor<2x4x8xf32>
  }
}

// -----

// Float8 where the gather still moves high precision (a rowwise recipe's
// per-token scales, or a scale dist-narrow-gathers could not move before
// it): the gathered value is quantized for a scaled GEMM: left alone,
// with a remark.
// CHECK-LABEL: func.func @float8(
// CHECK: dist.all_gather_start
// CHECK: titan.quantize
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 2>} {
  func.func @float8(%x: tensor<2x4x8xf32>, %scale: tensor<f32>) -> tensor<2x8x8xf8E4M3FN> {
    // expected-remark @+1 {{async TP: not fused: no titan.linear or titan.linear_grad_input reads the gathered value with its weight computed before the wait (Float8's scaled GEMMs are fused where the gather moves float8: tensorwise scales)}}
    %f = dist.all_gather_start %x axes ["tp"] dim 1 : tensor<2x4x8xf32> -> !dist.future<tensor<2x8x8xf32>>
    %g = dist.wait %f : !dist.future<tensor<2x8x8xf32>>
    %q = titan.quantize %g, %scale : (tensor<2x8x8xf32>, tensor<f32>) -> tensor<2x8x8xf8E4M3FN>
    return %q : tensor<2x8x8xf8E4M3FN>
  }
}

// -----

// A weight computed after the wait stays a plain GEMM on the gathered value
// (a remark says so); the others are fused.
// CHECK-LABEL: func.func @late_weight(
// CHECK: %[[G:[^,]*]], %[[O:.*]] = dist.all_gather_linear %{{.*}}, [%{{.*}}] axes ["tp"] dim 1 :
// CHECK: %[[W:.*]] = titan.add
// CHECK: titan.linear %[[G]], %[[W]]
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 2>} {
  func.func @late_weight(%x: tensor<2x4x8xf32>, %w: tensor<6x8xf32>, %a: tensor<6x8xf32>) -> (tensor<2x8x6xf32>, tensor<2x8x6xf32>) {
    // expected-remark @+1 {{async TP: some GEMMs' weights are computed after the gather's wait; they read the gathered value}}
    %f = dist.all_gather_start %x axes ["tp"] dim 1 : tensor<2x4x8xf32> -> !dist.future<tensor<2x8x8xf32>>
    %g = dist.wait %f : !dist.future<tensor<2x8x8xf32>>
    %y = titan.linear %g, %w : (tensor<2x8x8xf32>, tensor<6x8xf32>) -> tensor<2x8x6xf32>
    %late = titan.add %w, %a : tensor<6x8xf32>
    %z = titan.linear %g, %late : (tensor<2x8x8xf32>, tensor<6x8xf32>) -> tensor<2x8x6xf32>
    return %y, %z : tensor<2x8x6xf32>, tensor<2x8x6xf32>
  }
}

// -----

// Float8 (tensorwise), after dist-narrow-gathers: the gather moves float8
// and feeds the scaled GEMMs of wq and wk. wk's cast comes after the wait
// (it reads nothing gathered): the fused op goes after it. The
// transposed copy reads the fused op's gathered value.
// CHECK-LABEL: func.func @gather_float8(
// CHECK-SAME: %[[X:[^:]*]]: tensor<2x4x8xf8E4M3FN>, %[[S:[^:]*]]: tensor<f32>, %[[WQ:[^:]*]]: tensor<6x8xf8E4M3FN>, %[[SQ:[^:]*]]: tensor<f32>, %[[WK:[^:]*]]: tensor<4x8xbf16>, %[[SK:[^:]*]]: tensor<f32>
// CHECK-NEXT: %[[QK:.*]] = titan.quantize %[[WK]], %[[SK]]
// CHECK-NEXT: %[[G:[^,]*]], %[[O:.*]]:2 = dist.all_gather_scaled_matmul %[[X]], %[[S]], [%[[WQ]], %[[SQ]], %[[QK]], %[[SK]]] axes ["tp"] dim 1 : (tensor<2x4x8xf8E4M3FN>, tensor<f32>, tensor<6x8xf8E4M3FN>, tensor<f32>, tensor<4x8xf8E4M3FN>, tensor<f32>) -> (tensor<2x8x8xf8E4M3FN>, tensor<2x8x6xbf16>, tensor<2x8x4xbf16>)
// CHECK-NEXT: %[[T:.*]] = titan.transpose %[[G]]
// CHECK-NEXT: return %[[O]]#0, %[[O]]#1, %[[T]]
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 2>} {
  func.func @gather_float8(%x: tensor<2x4x8xf8E4M3FN>, %s: tensor<f32>, %wq: tensor<6x8xf8E4M3FN>, %sq: tensor<f32>, %wk: tensor<4x8xbf16>, %sk: tensor<f32>) -> (tensor<2x8x6xbf16>, tensor<2x8x4xbf16>, tensor<8x2x8xf8E4M3FN>) {
    %f = dist.all_gather_start %x axes ["tp"] dim 1 : tensor<2x4x8xf8E4M3FN> -> !dist.future<tensor<2x8x8xf8E4M3FN>>
    %g = dist.wait %f : !dist.future<tensor<2x8x8xf8E4M3FN>>
    %q = titan.scaled_matmul linear %g, %s, %wq, %sq : (tensor<2x8x8xf8E4M3FN>, tensor<f32>, tensor<6x8xf8E4M3FN>, tensor<f32>) -> tensor<2x8x6xbf16>
    %qk = titan.quantize %wk, %sk : (tensor<4x8xbf16>, tensor<f32>) -> tensor<4x8xf8E4M3FN>
    %k = titan.scaled_matmul linear %g, %s, %qk, %sk : (tensor<2x8x8xf8E4M3FN>, tensor<f32>, tensor<4x8xf8E4M3FN>, tensor<f32>) -> tensor<2x8x4xbf16>
    %t = titan.transpose %g : tensor<2x8x8xf8E4M3FN> -> tensor<8x2x8xf8E4M3FN>
    return %q, %k, %t : tensor<2x8x6xbf16>, tensor<2x8x4xbf16>, tensor<8x2x8xf8E4M3FN>
  }
}

// -----

// A weight cast that runs after something reads the gathered value (here
// a reader of wq's result before it) cannot move the fused op past that
// reader: wk's GEMM stays apart.
// CHECK-LABEL: func.func @gather_float8_late_weight(
// CHECK: dist.all_gather_scaled_matmul %{{.*}}, %{{.*}}, [%{{[^,]*}}, %{{[^,]*}}] axes
// CHECK: titan.scaled_matmul linear
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 2>} {
  func.func @gather_float8_late_weight(%x: tensor<2x4x8xf8E4M3FN>, %s: tensor<f32>, %wq: tensor<6x8xf8E4M3FN>, %sq: tensor<f32>, %wk: tensor<4x8xbf16>) -> (tensor<2x8x6xbf16>, tensor<2x8x4xbf16>) {
    // expected-remark @+1 {{async TP: some scaled GEMMs' weights or scales are computed after the gathered value is read}}
    %f = dist.all_gather_start %x axes ["tp"] dim 1 : tensor<2x4x8xf8E4M3FN> -> !dist.future<tensor<2x8x8xf8E4M3FN>>
    %g = dist.wait %f : !dist.future<tensor<2x8x8xf8E4M3FN>>
    %q = titan.scaled_matmul linear %g, %s, %wq, %sq : (tensor<2x8x8xf8E4M3FN>, tensor<f32>, tensor<6x8xf8E4M3FN>, tensor<f32>) -> tensor<2x8x6xbf16>
    %a = titan.amax %q : tensor<2x8x6xbf16> -> tensor<f32>
    %qk = titan.quantize %wk, %a : (tensor<4x8xbf16>, tensor<f32>) -> tensor<4x8xf8E4M3FN>
    %k = titan.scaled_matmul linear %g, %s, %qk, %a : (tensor<2x8x8xf8E4M3FN>, tensor<f32>, tensor<4x8xf8E4M3FN>, tensor<f32>) -> tensor<2x8x4xbf16>
    return %q, %k : tensor<2x8x6xbf16>, tensor<2x8x4xbf16>
  }
}

// -----

// The backward's grad-input GEMMs of wq, wk and wv (e5m2 gradients,
// K-major e4m3 weights), summed and reduce-scattered, as one ring.
// CHECK-LABEL: func.func @scatter_float8_grad_input(
// CHECK-SAME: %[[D1:[^:]*]]: tensor<2x8x6xf8E5M2>, %[[S1:[^:]*]]: tensor<f32>, %[[W1:[^:]*]]: tensor<8x6xf8E4M3FN>, %[[T1:[^:]*]]: tensor<f32>, %[[D2:[^:]*]]: tensor<2x8x4xf8E5M2>, %[[S2:[^:]*]]: tensor<f32>, %[[W2:[^:]*]]: tensor<8x4xf8E4M3FN>, %[[T2:[^:]*]]: tensor<1x8xf32>
// CHECK-NEXT: %[[R:.*]] = dist.scaled_matmul_reduce_scatter %[[D1]], %[[S1]], %[[W1]], %[[T1]], %[[D2]], %[[S2]], %[[W2]], %[[T2]] axes ["tp"] dim 1 grad_input rhs_transposed : (tensor<2x8x6xf8E5M2>, tensor<f32>, tensor<8x6xf8E4M3FN>, tensor<f32>, tensor<2x8x4xf8E5M2>, tensor<f32>, tensor<8x4xf8E4M3FN>, tensor<1x8xf32>) -> tensor<2x4x8xbf16>
// CHECK-NEXT: return %[[R]]
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 2>} {
  func.func @scatter_float8_grad_input(%d1: tensor<2x8x6xf8E5M2>, %s1: tensor<f32>, %w1: tensor<8x6xf8E4M3FN>, %t1: tensor<f32>, %d2: tensor<2x8x4xf8E5M2>, %s2: tensor<f32>, %w2: tensor<8x4xf8E4M3FN>, %t2: tensor<1x8xf32>) -> tensor<2x4x8xbf16> {
    %a = titan.scaled_matmul grad_input %d1, %s1, %w1, %t1 {rhs_transposed} : (tensor<2x8x6xf8E5M2>, tensor<f32>, tensor<8x6xf8E4M3FN>, tensor<f32>) -> tensor<2x8x8xbf16>
    %b = titan.scaled_matmul grad_input %d2, %s2, %w2, %t2 {rhs_transposed} : (tensor<2x8x4xf8E5M2>, tensor<f32>, tensor<8x4xf8E4M3FN>, tensor<1x8xf32>) -> tensor<2x8x8xbf16>
    %sum = titan.add %a, %b : tensor<2x8x8xbf16>
    %f = dist.reduce_scatter_start %sum axes ["tp"] dim 1 : tensor<2x8x8xbf16> -> !dist.future<tensor<2x4x8xbf16>>
    %r = dist.wait %f : !dist.future<tensor<2x4x8xbf16>>
    return %r : tensor<2x4x8xbf16>
  }
}

// -----

// Not fused: a float8 gather of uneven shards (padded: 7 rows of 2 x 4),
// and a sum of scaled GEMMs whose lhs formats differ (the kernel takes one).
// CHECK-LABEL: func.func @float8_kept(
// CHECK: dist.all_gather_start
// CHECK: dist.reduce_scatter_start
// CHECK-NOT: scaled_matmul_reduce_scatter
// CHECK-NOT: all_gather_scaled_matmul
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 2>} {
  func.func @float8_kept(%x: tensor<2x4x8xf8E4M3FN>, %s: tensor<f32>, %w: tensor<6x8xf8E4M3FN>, %d1: tensor<2x8x6xf8E5M2>, %d2: tensor<2x8x6xf8E4M3FN>, %v: tensor<8x6xf8E4M3FN>) -> (tensor<2x7x6xbf16>, tensor<2x4x8xbf16>) {
    %f = dist.all_gather_start %x axes ["tp"] dim 1 : tensor<2x4x8xf8E4M3FN> -> !dist.future<tensor<2x7x8xf8E4M3FN>>
    %g = dist.wait %f : !dist.future<tensor<2x7x8xf8E4M3FN>>
    %q = titan.scaled_matmul linear %g, %s, %w, %s : (tensor<2x7x8xf8E4M3FN>, tensor<f32>, tensor<6x8xf8E4M3FN>, tensor<f32>) -> tensor<2x7x6xbf16>
    %a = titan.scaled_matmul linear %d1, %s, %v, %s : (tensor<2x8x6xf8E5M2>, tensor<f32>, tensor<8x6xf8E4M3FN>, tensor<f32>) -> tensor<2x8x8xbf16>
    %b = titan.scaled_matmul linear %d2, %s, %v, %s : (tensor<2x8x6xf8E4M3FN>, tensor<f32>, tensor<8x6xf8E4M3FN>, tensor<f32>) -> tensor<2x8x8xbf16>
    %sum = titan.add %a, %b : tensor<2x8x8xbf16>
    // expected-remark @+1 {{async TP: not fused with the GEMMs before it: its input is not titan.linear, titan.linear_grad_input or tensorwise titan.scaled_matmul GEMMs of one kind (summed by titan.add) used only here}}
    %rf = dist.reduce_scatter_start %sum axes ["tp"] dim 1 : tensor<2x8x8xbf16> -> !dist.future<tensor<2x4x8xbf16>>
    %r = dist.wait %rf : !dist.future<tensor<2x4x8xbf16>>
    return %q, %r : tensor<2x7x6xbf16>, tensor<2x4x8xbf16>
  }
}

// -----

// Rowwise Float8's row-parallel forward: the lhs has one scale per row (the
// all-reduced amax of each token's row); the reduce-scatter fuses, each row
// block taking its rows' scales.
// CHECK-LABEL: func.func @scatter_float8_rowwise(
// CHECK-SAME: %[[H:[^:]*]]: tensor<2x8x6xf8E4M3FN>, %[[S:[^:]*]]: tensor<2x8x1xf32>, %[[W:[^:]*]]: tensor<8x6xf8E4M3FN>, %[[T:[^:]*]]: tensor<8x1xf32>
// CHECK-NEXT: %[[R:.*]] = dist.scaled_matmul_reduce_scatter %[[H]], %[[S]], %[[W]], %[[T]] axes ["tp"] dim 1 : (tensor<2x8x6xf8E4M3FN>, tensor<2x8x1xf32>, tensor<8x6xf8E4M3FN>, tensor<8x1xf32>) -> tensor<2x4x8xbf16>
// CHECK-NEXT: return %[[R]]
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 2>} {
  func.func @scatter_float8_rowwise(%h: tensor<2x8x6xf8E4M3FN>, %s: tensor<2x8x1xf32>, %w: tensor<8x6xf8E4M3FN>, %t: tensor<8x1xf32>) -> tensor<2x4x8xbf16> {
    %p = titan.scaled_matmul linear %h, %s, %w, %t : (tensor<2x8x6xf8E4M3FN>, tensor<2x8x1xf32>, tensor<8x6xf8E4M3FN>, tensor<8x1xf32>) -> tensor<2x8x8xbf16>
    %f = dist.reduce_scatter_start %p axes ["tp"] dim 1 : tensor<2x8x8xbf16> -> !dist.future<tensor<2x4x8xbf16>>
    %r = dist.wait %f : !dist.future<tensor<2x4x8xbf16>>
    return %r : tensor<2x4x8xbf16>
  }
}
