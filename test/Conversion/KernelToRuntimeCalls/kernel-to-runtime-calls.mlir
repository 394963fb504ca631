// RUN: titan-opt %s -split-input-file -kernel-to-runtime-calls -verify-diagnostics | FileCheck %s

// A step takes the rank's arena; every slot and buffer is the arena plus its
// planned offset (64-bit). Each kernel call passes the buffer pointers, the
// shapes (rank, dims per buffer), the i64 and f64 parameters, the workspace
// and the buffers' types ({operands, results, type codes}); arrays of equal
// content are one global; no kernel has parameters of a kind it lacks
// (null); views and streams emit nothing.
// CHECK-DAG: llvm.mlir.global private constant @[[SHAPES:__titan_array_[0-9]+]](dense<[2, 4, 4]> : tensor<3xi64>)
// CHECK-DAG: llvm.mlir.global private constant @[[F64:__titan_array_[0-9]+]](dense<[1.000000e-05, 2.000000e+00, 2.000000e+00, 2.000000e+00]> : tensor<4xf64>)
// CHECK-DAG: llvm.mlir.global private constant @[[I64:__titan_array_[0-9]+]](dense<[3, 1]> : tensor<2xi64>)
// CHECK-DAG: llvm.mlir.global private constant @[[TYPES:__titan_array_[0-9]+]](dense<[0, 1, 0]> : tensor<3xi64>)
// CHECK-DAG: llvm.func @titan_rt_rope_angles_f32(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr)
// CHECK-DAG: llvm.func @titan_rt_all_reduce_start_f32(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> !llvm.ptr
// CHECK-DAG: llvm.func @titan_rt_wait(!llvm.ptr)
// CHECK-LABEL: llvm.func @titan_step(
// CHECK-SAME: %[[ARENA:.*]]: !llvm.ptr) attributes {no_inline, optimize_none} {
// CHECK:      %[[BUFS:.*]] = llvm.alloca %{{.*}} x !llvm.ptr
// CHECK:      %[[OFF_W:.*]] = llvm.mlir.constant(0 : i64) : i64
// CHECK:      %[[W:.*]] = llvm.getelementptr %[[ARENA]][%[[OFF_W]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK:      %[[OFF_A:.*]] = llvm.mlir.constant(4294967552 : i64) : i64
// CHECK:      %[[A:.*]] = llvm.getelementptr %[[ARENA]][%[[OFF_A]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK:      %[[WS:.*]] = llvm.getelementptr %[[ARENA]]
// CHECK:      llvm.store %[[A]], %{{.*}}
// CHECK:      %[[S1:.*]] = llvm.mlir.addressof @[[SHAPES]]
// CHECK:      %[[I1:.*]] = llvm.mlir.addressof @[[I64]]
// CHECK:      %[[F1:.*]] = llvm.mlir.addressof @[[F64]]
// CHECK:      %[[T1:.*]] = llvm.mlir.addressof @[[TYPES]]
// CHECK:      llvm.call @titan_rt_rope_angles_f32(%[[BUFS]], %[[S1]], %[[I1]], %[[F1]], %[[WS]], %[[T1]])
// CHECK:      %[[NOWS:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK:      %[[NOINTS:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK:      llvm.call @titan_rt_fill_f32(%[[BUFS]], %{{.*}}, %[[NOINTS]], %{{.*}}, %[[NOWS]], %{{.*}})
// CHECK:      llvm.mlir.addressof @[[SHAPES]]
// CHECK:      llvm.mlir.addressof @[[I64]]
// CHECK:      llvm.mlir.addressof @[[F64]]
// CHECK:      llvm.call @titan_rt_rope_angles_f32(
// CHECK:      %[[REQ:.*]] = llvm.call @titan_rt_all_reduce_start_f32(
// CHECK:      llvm.call @titan_rt_wait(%[[REQ]])
// CHECK:      llvm.call @titan_rt_copy(%[[W]], %[[A]], %{{.*}}) : (!llvm.ptr, !llvm.ptr, i64) -> ()
// CHECK:      llvm.return
module attributes {kernel.arena_bytes = 4294968576 : i64, kernel.slots = {"param:w" = array<i64: 0, 64>}} {
  func.func @step(%w: memref<16xf32> {kernel.slot = "param:w"}) {
    %s = kernel.stream 0
    %a = kernel.alloc temporary {offset = 4294967552 : i64} : memref<4x4xf32>
    %v = kernel.view %a : memref<4x4xf32> to memref<16xf32>
    %ws = kernel.alloc workspace {offset = 4294967808 : i64} : memref<64xi8>
    kernel.call "rope_angles"() outs(%a : memref<4x4xf32>) workspace(%ws : memref<64xi8>) on %s params [3 : i64, 1 : i64, 1.0e-5 : f64, 2.0 : f64, 2.0 : f64, 2.0 : f64]
    kernel.call "fill"() outs(%v : memref<16xf32>) on %s params [0.0 : f64]
    kernel.call "rope_angles"() outs(%a : memref<4x4xf32>) workspace(%ws : memref<64xi8>) on %s params [3 : i64, 1 : i64, 1.0e-5 : f64, 2.0 : f64, 2.0 : f64, 2.0 : f64]
    %out = kernel.alloc collective {offset = 4294968064 : i64} : memref<16xf32>
    %r = kernel.collective_start "all_reduce_start"(%v : memref<16xf32>) outs(%out : memref<16xf32>) on %s params [0 : i64, 0 : i64, 16 : i64] -> !kernel.request
    kernel.wait %r on %s
    kernel.copy %v, %w on %s : memref<16xf32>, memref<16xf32>
    return
  }
}

// -----

// float64 buffers call the f64 kernels; integer-only kernels are i32;
// kernels with bf16 buffers call the bf16 entry (the f32 kernel on widened
// copies; a cast's f32 result passes as it is: type codes 2 and 0);
// collectives carry their element type (bf16, f8) to the runtime.
// CHECK-LABEL: llvm.func @titan_double(
// CHECK: llvm.call @titan_rt_linear_f64(
// CHECK: llvm.call @titan_rt_shard_offset_i32(
// CHECK: llvm.call @titan_rt_cast_bf16(
// CHECK: llvm.call @titan_rt_all_gather_start_bf16(
// CHECK: llvm.call @titan_rt_all_gather_start_f8E4M3FN(
module attributes {kernel.arena_bytes = 1024 : i64, kernel.slots = {"param:w" = array<i64: 0, 96>}} {
  func.func @double(%w: memref<4x3xf64> {kernel.slot = "param:w"}) {
    %s = kernel.stream 0
    %x = kernel.alloc temporary {offset = 256 : i64} : memref<2x3xf64>
    %y = kernel.alloc temporary {offset = 512 : i64} : memref<2x4xf64>
    kernel.call "linear"(%x, %w : memref<2x3xf64>, memref<4x3xf64>) outs(%y : memref<2x4xf64>) on %s params []
    %o = kernel.alloc temporary {offset = 768 : i64} : memref<i32>
    kernel.call "shard_offset"() outs(%o : memref<i32>) on %s params [16, 1, 4]
    %h = kernel.alloc temporary {offset = 256 : i64} : memref<4xbf16>
    %hv = kernel.view %h : memref<4xbf16> to memref<1x4xbf16>
    %wide = kernel.alloc temporary {offset = 768 : i64} : memref<1x4xf32>
    kernel.call "cast"(%hv : memref<1x4xbf16>) outs(%wide : memref<1x4xf32>) on %s params []
    %g = kernel.alloc collective {offset = 512 : i64} : memref<8xbf16>
    %r = kernel.collective_start "all_gather_start"(%h : memref<4xbf16>) outs(%g : memref<8xbf16>) on %s params [0, 0, 4] -> !kernel.request
    kernel.wait %r on %s
    %e = kernel.alloc temporary {offset = 256 : i64} : memref<4xf8E4M3FN>
    %f = kernel.alloc collective {offset = 512 : i64} : memref<8xf8E4M3FN>
    %r2 = kernel.collective_start "all_gather_start"(%e : memref<4xf8E4M3FN>) outs(%f : memref<8xf8E4M3FN>) on %s params [0, 0, 4] -> !kernel.request
    kernel.wait %r2 on %s
    return
  }
}

// -----

// expected-error @+1 {{kernel-to-runtime-calls: the module has no memory plan (run kernel-plan-memory first)}}
module {
  func.func @step(%w: memref<16xf32> {kernel.slot = "param:w"}) {
    return
  }
}

// -----

module attributes {kernel.arena_bytes = 1024 : i64, kernel.slots = {"param:w" = array<i64: 0, 64>}} {
  func.func @step(%w: memref<16xf32> {kernel.slot = "param:w"}) {
    // expected-error @+1 {{'kernel.alloc' op has no planned offset (run kernel-plan-memory first)}}
    %a = kernel.alloc temporary : memref<16xf32>
    return
  }
}

// -----

module attributes {kernel.arena_bytes = 1024 : i64, kernel.slots = {"param:w" = array<i64: 0, 16>}} {
  func.func @step(%w: memref<16xf8E4M3FN> {kernel.slot = "param:w"}) {
    %s = kernel.stream 0
    // expected-error @+1 {{'kernel.call' op has element type 'f8E4M3FN', but the runtime's kernels compute in f64, f32, bf16 and f16}}
    kernel.call "fill"() outs(%w : memref<16xf8E4M3FN>) on %s params [0.0 : f64]
    return
  }
}

// -----

// A pointwise op's kernel is generated, never a library call.
module attributes {kernel.arena_bytes = 1024 : i64, kernel.slots = {"param:w" = array<i64: 0, 64>}} {
  func.func @step(%w: memref<16xf32> {kernel.slot = "param:w"}) {
    %s = kernel.stream 0
    // expected-error @+1 {{'kernel.call' op calls 'silu', which no library implements: the compiler generates it (run kernel-generate-pointwise first; it takes f64, f32, bf16 and f16)}}
    kernel.call "silu"(%w : memref<16xf32>) outs(%w : memref<16xf32>) on %s params []
    return
  }
}

// -----

module attributes {kernel.arena_bytes = 1024 : i64, kernel.slots = {"param:w" = array<i64: 0, 64>, "input:tokens" = array<i64: 256, 128>}} {
  func.func @step(%w: memref<16xf32> {kernel.slot = "param:w"}, %t: memref<16xi64> {kernel.slot = "input:tokens"}) {
    %s = kernel.stream 0
    // expected-error @+1 {{'kernel.call' op the runtime takes i32 token ids and labels}}
    kernel.call "embedding"(%w, %t : memref<16xf32>, memref<16xi64>) outs(%w : memref<16xf32>) on %s params [0]
    return
  }
}

// -----

// Before each kernel call the step records the op's location (its
// TorchTitan module path) in the runtime's titan_rt_op, one constant string
// per distinct site, so a kernel's error can name the op; null at the end.
// CHECK-DAG: llvm.mlir.global private constant @[[SITE:__titan_site_[0-9]+]]("layers.0.attention_norm\00")
// CHECK-DAG: llvm.mlir.global external @titan_rt_op() {{.*}} : !llvm.ptr
// CHECK-LABEL: llvm.func @titan_step(
// CHECK:      %[[NAME:.*]] = llvm.mlir.addressof @[[SITE]] : !llvm.ptr
// CHECK-NEXT: %[[SLOT:.*]] = llvm.mlir.addressof @titan_rt_op : !llvm.ptr
// CHECK-NEXT: llvm.store %[[NAME]], %[[SLOT]] : !llvm.ptr, !llvm.ptr
// CHECK:      llvm.call @titan_rt_fill_f32(
// CHECK:      llvm.mlir.addressof @[[SITE]]
// CHECK:      llvm.call @titan_rt_fill_f32(
// CHECK:      %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK-NEXT: %[[SLOT2:.*]] = llvm.mlir.addressof @titan_rt_op : !llvm.ptr
// CHECK-NEXT: llvm.store %[[NULL]], %[[SLOT2]] : !llvm.ptr, !llvm.ptr
// CHECK-NEXT: llvm.return
module attributes {kernel.arena_bytes = 256 : i64, kernel.slots = {"param:w" = array<i64: 0, 64>}} {
  func.func @step(%w: memref<16xf32> {kernel.slot = "param:w"}) {
    %s = kernel.stream 0
    kernel.call "fill"() outs(%w : memref<16xf32>) on %s params [0.0 : f64] loc("layers.0.attention_norm")
    kernel.call "fill"() outs(%w : memref<16xf32>) on %s params [0.0 : f64] loc("layers.0.attention_norm")
    return
  }
}

// -----

// A view at an offset is its source's pointer plus the offset in bytes.
// CHECK-LABEL: llvm.func @titan_step(
// CHECK:      %[[OFF:.*]] = llvm.mlir.constant(256 : i64) : i64
// CHECK:      %[[A:.*]] = llvm.getelementptr %{{.*}}[%[[OFF]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK:      %[[VOFF:.*]] = llvm.mlir.constant(32 : i64) : i64
// CHECK:      %[[V:.*]] = llvm.getelementptr %[[A]][%[[VOFF]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK:      llvm.store %[[V]], %{{.*}}
// CHECK:      llvm.call @titan_rt_fill_f32(
module attributes {kernel.arena_bytes = 512 : i64, kernel.slots = {"param:w" = array<i64: 0, 64>}} {
  func.func @step(%w: memref<16xf32> {kernel.slot = "param:w"}) {
    %s = kernel.stream 0
    %a = kernel.alloc temporary {offset = 256 : i64} : memref<2x8xf32>
    %v = kernel.view %a offset 32 : memref<2x8xf32> to memref<1x8xf32>
    kernel.call "fill"() outs(%v : memref<1x8xf32>) on %s params [0.0 : f64]
    return
  }
}
