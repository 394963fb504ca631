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
    // expected-remark @+1 {{async TP: not fused with the GEMMs before it: its input is not titan.linear or titan.linear_grad_input GEMMs (summed by titan.add) used only here}}
    %f3 = dist.reduce_scatter_start %b axes ["tp"] dim 1 : tensor<2x8x8xf32> -> !dist.future<tensor<2x4x8xf32>>
    %r3 = dist.wait %f3 : !dist.future<tensor<2x4x8xf32>>
    %c = titan.linear %h, %wo : (tensor<2x8x4xf32>, tensor<8x4xf32>) -> tensor<2x8x8xf32>
    %s = titan.add %c, %e : tensor<2x8x8xf32>
    // expected-remark @+1 {{async TP: not fused with the GEMMs before it: its input is not titan.linear or titan.linear_grad_input GEMMs (summed by titan.add) used only here}}
    %f4 = dist.reduce_scatter_start %s axes ["tp"] dim 1 : tensor<2x8x8xf32> -> !dist.future<tensor<2x4x8xf32>>
    %r4 = dist.wait %f4 : !dist.future<tensor<2x4x8xf32>>
    return %y0, %y1, %r2, %r3, %b, %r4 : tensor<8x6xf32>, tensor<8x6xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x8x8xf32>, tensor<2x4x8xf32>
  }
}

// -----

// Float8: the gathered value is quantized for a scaled GEMM: left alone,
// with a remark.
// CHECK-LABEL: func.func @float8(
// CHECK: dist.all_gather_start
// CHECK: titan.quantize
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 2>} {
  func.func @float8(%x: tensor<2x4x8xf32>, %scale: tensor<f32>) -> tensor<2x8x8xf8E4M3FN> {
    // expected-remark @+1 {{async TP: not fused: no titan.linear or titan.linear_grad_input reads the gathered value with its weight computed before the wait (Float8's quantized, scaled GEMMs are not fused)}}
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
