// RUN: titan-opt %s -split-input-file -titan-lower-to-cpu -verify-diagnostics | FileCheck %s

// Inputs and results arrive as one array of buffer pointers; each op is one
// kernel call on (buffers, shapes, attrs); a reshape is a view; buffers are
// freed after their last use; results are copied into the caller's buffers.
// CHECK-DAG: llvm.mlir.global private constant @__titan_shapes_0(dense<[3, 2, 4, 8, 1, 8, 3, 2, 4, 8]> : tensor<10xi64>)
// CHECK-DAG: llvm.mlir.global private constant @__titan_attrs_1(dense<1.000000e-05> : tensor<1xf64>)
// CHECK-DAG: llvm.func @titan_rt_rms_norm_f32(!llvm.ptr, !llvm.ptr, !llvm.ptr)
// CHECK-DAG: llvm.func @titan_rt_alloc(i64) -> !llvm.ptr
// CHECK-DAG: llvm.func @titan_rt_free(!llvm.ptr)
// CHECK-LABEL: llvm.func @titan_norm_then_view(
// CHECK-SAME: %[[ARGV:.*]]: !llvm.ptr) {
// CHECK:      %[[BUFS:.*]] = llvm.alloca %{{.*}} x !llvm.ptr
// CHECK:      %[[X_SLOT:.*]] = llvm.getelementptr %[[ARGV]][0]
// CHECK:      %[[X:.*]] = llvm.load %[[X_SLOT]] : !llvm.ptr -> !llvm.ptr
// CHECK:      %[[W_SLOT:.*]] = llvm.getelementptr %[[ARGV]][1]
// CHECK:      %[[W:.*]] = llvm.load %[[W_SLOT]] : !llvm.ptr -> !llvm.ptr
// CHECK:      %[[BYTES:.*]] = llvm.mlir.constant(256 : i64) : i64
// CHECK:      %[[Y:.*]] = llvm.call @titan_rt_alloc(%[[BYTES]])
// CHECK:      llvm.store %[[X]], %{{.*}}
// CHECK:      llvm.store %[[W]], %{{.*}}
// CHECK:      llvm.store %[[Y]], %{{.*}}
// CHECK:      %[[SHAPES:.*]] = llvm.mlir.addressof @__titan_shapes_0
// CHECK:      %[[ATTRS:.*]] = llvm.mlir.addressof @__titan_attrs_1
// CHECK:      llvm.call @titan_rt_rms_norm_f32(%[[BUFS]], %[[SHAPES]], %[[ATTRS]])
// CHECK-NOT:  titan_rt_reshape
// CHECK:      %[[OUT_SLOT:.*]] = llvm.getelementptr %[[ARGV]][2]
// CHECK:      %[[OUT:.*]] = llvm.load %[[OUT_SLOT]]
// CHECK:      "llvm.intr.memcpy"(%[[OUT]], %[[Y]], %{{.*}}) <{isVolatile = false}>
// CHECK:      llvm.call @titan_rt_free(%[[Y]])
// CHECK:      llvm.return
func.func @norm_then_view(%x: tensor<2x4x8xf32>, %w: tensor<8xf32>) -> tensor<8x8xf32> {
  %y = titan.rms_norm %x, %w {eps = 1.0e-5 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %v = titan.reshape %y : tensor<2x4x8xf32> -> tensor<8x8xf32>
  return %v : tensor<8x8xf32>
}

// -----

// float64 programs call the f64 kernels; ops without attributes pass null.
// CHECK-LABEL: llvm.func @titan_double(
// CHECK: %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK: llvm.call @titan_rt_linear_f64(%{{.*}}, %{{.*}}, %[[NULL]])
func.func @double(%x: tensor<2x3xf64>, %w: tensor<4x3xf64>) -> tensor<2x4xf64> {
  %y = titan.linear %x, %w : (tensor<2x3xf64>, tensor<4x3xf64>) -> tensor<2x4xf64>
  return %y : tensor<2x4xf64>
}

// -----

// Attributes travel in the documented order.
// CHECK-DAG: dense<[1.000000e+04, 1.000000e+00, 8.000000e+00, 1.000000e+00, 4.000000e+00, 8.192000e+03]> : tensor<6xf64>
// CHECK-DAG: dense<[3.000000e-03, 2.000000e+00, 5.000000e-01, 2.000000e+00, 1.000000e-01]> : tensor<5xf64>
// CHECK-DAG: dense<[9.000000e-01, 0.94999999999999996, 1.000000e-08, 1.000000e-01, 1.000000e+00]> : tensor<5xf64>
// CHECK-LABEL: llvm.func @titan_attrs(
// CHECK: llvm.call @titan_rt_rope_angles_f32
// CHECK: llvm.call @titan_rt_lr_schedule_f32
// CHECK: llvm.call @titan_rt_adamw_f32
func.func @attrs(%p: tensor<4xf32>, %s: tensor<i64>) -> (tensor<8x2xf32>, tensor<4xf32>) {
  %a = titan.rope_angles {theta = 1.0e4 : f64, scaling_factor = 8.0 : f64, low_freq_factor = 1.0 : f64,
                          high_freq_factor = 4.0 : f64, original_max_position_embeddings = 8192 : i64} : tensor<8x2xf32>
  %lr = titan.lr_schedule %s, %s {lr = 3.0e-3 : f64, warmup_steps = 2 : i64, decay_ratio = 0.5 : f64, decay_type = "cosine", min_lr_factor = 0.1 : f64} : (tensor<i64>, tensor<i64>) -> tensor<f32>
  %n:3 = titan.adamw %p, %p, %p, %p, %lr, %lr, %s {beta1 = 0.9 : f64, beta2 = 0.95 : f64, eps = 1.0e-8 : f64, weight_decay = 0.1 : f64, max_norm = 1.0 : f64} : tensor<4xf32>, tensor<f32>, tensor<i64>
  return %a, %n#0 : tensor<8x2xf32>, tensor<4xf32>
}

// -----

// Collectives return a request; the wait completes it, and the input stays
// alive until then. attrs = (split dim, concat dim, axis mask = tp (bit 4)).
// CHECK-DAG: llvm.mlir.global private constant @[[ATTRS:__titan_attrs_[0-9]+]](dense<[0.000000e+00, 1.000000e+00, 1.600000e+01]> : tensor<3xf64>)
// CHECK-LABEL: llvm.func @titan_exchange(
// CHECK: %[[X:.*]] = llvm.call @titan_rt_alloc
// CHECK: llvm.call @titan_rt_silu_f32
// CHECK: %[[RESULT:.*]] = llvm.call @titan_rt_alloc
// CHECK: %[[REQ:.*]] = llvm.call @titan_rt_all_to_all_start_f32({{.*}}) : (!llvm.ptr, !llvm.ptr, !llvm.ptr) -> !llvm.ptr
// CHECK-NOT: titan_rt_free(%[[X]])
// CHECK: llvm.call @titan_rt_wait(%[[REQ]])
// CHECK: llvm.call @titan_rt_free(%[[X]])
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 2>} {
  func.func @exchange(%a: tensor<8x4xf32>) -> tensor<4x8xf32> {
    %x = titan.silu %a : tensor<8x4xf32>
    %f = dist.all_to_all_start %x axes ["tp"] split 0 concat 1 : tensor<8x4xf32> -> !dist.future<tensor<4x8xf32>>
    %y = dist.wait %f : !dist.future<tensor<4x8xf32>>
    return %y : tensor<4x8xf32>
  }
}

// -----

// Loss parallel on the CPU target: dist.shard_offset is an i32 kernel with
// attrs (stride, axis count, axes = tp (4)); ops with a vocab_start operand
// pass attrs (1); the max all-reduce passes reduction code 2.
// CHECK-DAG: llvm.mlir.global private constant @[[OFFSET:__titan_attrs_[0-9]+]](dense<[8.000000e+00, 1.000000e+00, 4.000000e+00]> : tensor<3xf64>)
// CHECK-DAG: llvm.mlir.global private constant @[[MAX:__titan_attrs_[0-9]+]](dense<[0.000000e+00, 2.000000e+00, 1.600000e+01]> : tensor<3xf64>)
// CHECK-DAG: llvm.mlir.global private constant @[[START:__titan_attrs_[0-9]+]](dense<1.000000e+00> : tensor<1xf64>)
// CHECK-LABEL: llvm.func @titan_loss_parallel(
// CHECK: llvm.call @titan_rt_shard_offset_i32
// CHECK: llvm.call @titan_rt_embedding_f32
// CHECK: llvm.call @titan_rt_row_max_f32
// CHECK: llvm.call @titan_rt_all_reduce_start_f32
// CHECK: llvm.call @titan_rt_sum_exp_f32
// CHECK: llvm.call @titan_rt_target_logit_f32
// CHECK: llvm.call @titan_rt_cross_entropy_from_stats_f32
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 2>} {
  func.func @loss_parallel(%w: tensor<8x4xf32>, %t: tensor<3xi32>, %l: tensor<3x8xf32>) -> (tensor<3x4xf32>, tensor<f32>) {
    %start = dist.shard_offset axes ["tp"] stride 8 : tensor<i32>
    %h = titan.embedding %w[%t] vocab_start %start : tensor<i32> : tensor<8x4xf32>, tensor<3xi32> -> tensor<3x4xf32>
    %m = titan.row_max %l : tensor<3x8xf32> -> tensor<3xf32>
    %mf = dist.all_reduce_start %m axes ["tp"] {reduction = "max"} : tensor<3xf32> -> !dist.future<tensor<3xf32>>
    %max = dist.wait %mf : !dist.future<tensor<3xf32>>
    %s = titan.sum_exp %l, %max : (tensor<3x8xf32>, tensor<3xf32>) -> tensor<3xf32>
    %x = titan.target_logit %l, %t vocab_start %start : tensor<i32> : (tensor<3x8xf32>, tensor<3xi32>) -> tensor<3xf32>
    %loss = titan.cross_entropy_from_stats %max, %s, %x : (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<f32>
    return %h, %loss : tensor<3x4xf32>, tensor<f32>
  }
}

// -----

func.func @bf16(%x: tensor<4xbf16>) -> tensor<4xbf16> {
  // expected-error @+1 {{'titan.silu' op has element type 'bf16', but the CPU target implements f32 and f64 only}}
  %y = titan.silu %x : tensor<4xbf16>
  return %y : tensor<4xbf16>
}

// -----

func.func @i64_tokens(%w: tensor<8x4xf32>, %t: tensor<3xi64>) -> tensor<3x4xf32> {
  // expected-error @+1 {{'titan.embedding' op the CPU target takes i32 token ids}}
  %y = titan.embedding %w[%t] : tensor<8x4xf32>, tensor<3xi64> -> tensor<3x4xf32>
  return %y : tensor<3x4xf32>
}

// -----

func.func @callee(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
func.func @caller(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'func.call' op is not supported by titan-lower-to-cpu}}
  %y = func.call @callee(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// expected-error @+1 {{'func.func' op must take and return statically shaped tensors, got 'i32'}}
func.func @scalar(%x: i32) {
  return
}
