// RUN: titan-opt %s -split-input-file -verify-diagnostics

func.func @kind() {
  // expected-error @+2 {{expected ::titan::kernel::AllocKind to be one of: activation, temporary, collective, workspace, copy}}
  // expected-error @+1 {{failed to parse Kernel_AllocKindAttr parameter 'value'}}
  %a = kernel.alloc scratch : memref<4xf32>
  return
}

// -----

func.func @offset() {
  // expected-error @+1 {{'kernel.alloc' op offset 100 must be a non-negative multiple of 256}}
  %a = kernel.alloc temporary {offset = 100 : i64} : memref<4xf32>
  return
}

// -----

func.func @overflow() {
  // expected-error @+1 {{'kernel.alloc' op buffer of type 'memref<4611686018427387904x4xf32>' has a size in bytes that overflows int64}}
  %a = kernel.alloc temporary : memref<4611686018427387904x4xf32>
  return
}

// -----

func.func @layout(%m: memref<4x4xf32, strided<[8, 1]>>) {
  // expected-error @+1 {{'kernel.view' op source must have the identity layout}}
  %v = kernel.view %m : memref<4x4xf32, strided<[8, 1]>> to memref<16xf32>
  return
}

// -----

func.func @view_size(%m: memref<4x4xf32>) {
  // expected-error @+1 {{'kernel.view' op views 'memref<4x4xf32>' as 'memref<8xf32>', which has another size in bytes}}
  %v = kernel.view %m : memref<4x4xf32> to memref<8xf32>
  return
}

// -----

func.func @params(%m: memref<4xf32>) {
  %s = kernel.stream 0
  // expected-error @+1 {{'kernel.call' op parameter #1 must be an i64 or f64 attribute, got 1.000000e+00 : f32}}
  kernel.call "fill"() outs(%m : memref<4xf32>) on %s params [1 : i64, 1.0 : f32]
  return
}

// -----

func.func @no_output(%m: memref<4xf32>) {
  %s = kernel.stream 0
  // expected-error @+1 {{'kernel.call' op must write at least one output}}
  "kernel.call"(%m, %s) <{kernel = "silu", params = [], operandSegmentSizes = array<i32: 1, 0, 0, 1>}> : (memref<4xf32>, !kernel.stream) -> ()
  return
}

// -----

func.func @copy(%a: memref<4xf32>, %b: memref<8xf32>) {
  %s = kernel.stream 0
  // expected-error @+1 {{'kernel.copy' op copies 'memref<4xf32>' into 'memref<8xf32>'; the shapes and element types must be equal}}
  kernel.copy %a, %b on %s : memref<4xf32>, memref<8xf32>
  return
}

// -----

// A copy may cross memory spaces (kernel-offload-state's staging); a view
// may not.
func.func @host_view(%a: memref<4xf32, #kernel.memory_space<host>>, %b: memref<4xf32>) {
  %s = kernel.stream 0
  kernel.copy %a, %b on %s : memref<4xf32, #kernel.memory_space<host>>, memref<4xf32>
  // expected-error @+1 {{'kernel.view' op views 'memref<4xf32, #kernel.memory_space<host>>' as 'memref<2x2xf32>' in another memory space}}
  %v = kernel.view %a : memref<4xf32, #kernel.memory_space<host>> to memref<2x2xf32>
  return
}

// -----

func.func @copy_start_same_space(%a: memref<4xf32>, %b: memref<4xf32>) {
  %s = kernel.stream 64
  // expected-error @+1 {{'kernel.copy_start' op copies within one memory space (kernel.copy does); copy_start copies between host and device}}
  %r = kernel.copy_start %a, %b on %s : memref<4xf32>, memref<4xf32> -> !kernel.request
  kernel.wait %r on %s
  return
}

// -----

func.func @copy_start_unwaited(%a: memref<4xf32, #kernel.memory_space<host>>, %b: memref<4xf32>) {
  %s = kernel.stream 64
  // expected-error @+1 {{'kernel.copy_start' op request must be waited exactly once, by a kernel.wait in the same block (a step's CUDA graph capture cannot end with a copy unjoined)}}
  %r = kernel.copy_start %a, %b on %s : memref<4xf32, #kernel.memory_space<host>>, memref<4xf32> -> !kernel.request
  return
}

// -----

func.func @other_space() {
  // expected-error @+1 {{'kernel.alloc' op buffer must be in device memory or in #kernel.memory_space<host>, got 'memref<4xf32, 1>'}}
  %a = kernel.alloc temporary : memref<4xf32, 1>
  return
}

// -----

// expected-error @+1 {{'kernel.host_step' must be a unit attribute}}
func.func @host_step_attr() attributes {kernel.host_step = 1} {
  return
}

// -----

func.func @never_waited(%a: memref<4xf32>, %b: memref<4xf32>) {
  %s = kernel.stream 0
  // expected-error @+1 {{'kernel.collective_start' op request must be waited exactly once, by a kernel.wait in the same block}}
  %r = kernel.collective_start "all_reduce_start"(%a : memref<4xf32>) outs(%b : memref<4xf32>) on %s params [0, 0, 16] -> !kernel.request
  return
}

// -----

// A request that leaves its function would be waited outside the step's
// CUDA graph capture.
func.func @escapes(%a: memref<4xf32>, %b: memref<4xf32>) -> !kernel.request {
  %s = kernel.stream 0
  // expected-error @+1 {{'kernel.collective_start' op request must be waited exactly once, by a kernel.wait in the same block (a step's CUDA graph capture cannot end with a collective unjoined)}}
  %r = kernel.collective_start "all_reduce_start"(%a : memref<4xf32>) outs(%b : memref<4xf32>) on %s params [0, 0, 16] -> !kernel.request
  return %r : !kernel.request
}

// -----

func.func @waited_twice(%a: memref<4xf32>, %b: memref<4xf32>) {
  %s = kernel.stream 0
  // expected-error @+1 {{'kernel.collective_start' op request must be waited exactly once}}
  %r = kernel.collective_start "all_reduce_start"(%a : memref<4xf32>) outs(%b : memref<4xf32>) on %s params [0, 0, 16] -> !kernel.request
  kernel.wait %r on %s
  kernel.wait %r on %s
  return
}

// -----

// expected-error @+1 {{'kernel.slot' must be a string}}
func.func @slot(%a: memref<4xf32> {kernel.slot = 3 : i64}) {
  return
}

// -----

// expected-error @+1 {{'kernel.arena_bytes' must be a non-negative multiple of 256}}
module attributes {kernel.arena_bytes = 100 : i64} {
}

// -----

// expected-error @+1 {{slot 'param:w' must be array<i64: offset, bytes> with an offset aligned to 256}}
module attributes {kernel.slots = {"param:w" = array<i64: 8, 64>}} {
}

// -----

// expected-error @+1 {{unknown kernel attribute 'kernel.arena'}}
module attributes {kernel.arena = 1 : i64} {
}

// -----

// The kernel catalog (titan/Contract/KernelCatalog.def) checks every call.

func.func @unknown_kernel(%x: memref<4x8xf32>, %w: memref<8xf32>, %y: memref<4x8xf32>) {
  %s = kernel.stream 0
  // expected-error @+1 {{'kernel.call' op calls unknown kernel 'rms_nrom'; did you mean 'rms_norm'? (titan/Contract/KernelCatalog.def lists the kernels)}}
  kernel.call "rms_nrom"(%x, %w : memref<4x8xf32>, memref<8xf32>) outs(%y : memref<4x8xf32>) on %s params [1.0e-05 : f64]
  return
}

// -----

func.func @inputs(%x: memref<4x8xf32>, %y: memref<4x8xf32>) {
  %s = kernel.stream 0
  // expected-error @+1 {{'kernel.call' op kernel 'rms_norm' takes 2 inputs (input, weight), got 1}}
  kernel.call "rms_norm"(%x : memref<4x8xf32>) outs(%y : memref<4x8xf32>) on %s params [1.0e-05 : f64]
  return
}

// -----

func.func @outputs(%q: memref<1x4x2x8xf32>, %o: memref<1x4x2x8xf32>) {
  %s = kernel.stream 0
  // expected-error @+1 {{'kernel.call' op kernel 'attention' takes 2 outputs (result, lse), got 1}}
  kernel.call "attention"(%q, %q, %q : memref<1x4x2x8xf32>, memref<1x4x2x8xf32>, memref<1x4x2x8xf32>) outs(%o : memref<1x4x2x8xf32>) on %s params [1.0 : f64]
  return
}

// -----

// document_starts is attention's optional last input: 3 or 4 inputs.
func.func @optional_input(%q: memref<1x4x2x8xf32>, %d: memref<1x4xi32>, %o: memref<1x4x2x8xf32>, %l: memref<1x2x4xf32>) {
  %s = kernel.stream 0
  kernel.call "attention"(%q, %q, %q, %d : memref<1x4x2x8xf32>, memref<1x4x2x8xf32>, memref<1x4x2x8xf32>, memref<1x4xi32>) outs(%o, %l : memref<1x4x2x8xf32>, memref<1x2x4xf32>) on %s params [1.0 : f64]
  // expected-error @+1 {{'kernel.call' op kernel 'attention' takes 3 or 4 inputs (query, key, value, document_starts?), got 5}}
  kernel.call "attention"(%q, %q, %q, %d, %d : memref<1x4x2x8xf32>, memref<1x4x2x8xf32>, memref<1x4x2x8xf32>, memref<1x4xi32>, memref<1x4xi32>) outs(%o, %l : memref<1x4x2x8xf32>, memref<1x2x4xf32>) on %s params [1.0 : f64]
  return
}

// -----

func.func @param_type(%x: memref<4x8xf32>, %w: memref<8xf32>, %y: memref<4x8xf32>) {
  %s = kernel.stream 0
  // expected-error @+1 {{'kernel.call' op kernel 'rms_norm' takes parameter #0 (eps) as f64, got 1 : i64}}
  kernel.call "rms_norm"(%x, %w : memref<4x8xf32>, memref<8xf32>) outs(%y : memref<4x8xf32>) on %s params [1]
  return
}

// -----

func.func @param_count(%m: memref<4xf32>) {
  %s = kernel.stream 0
  // expected-error @+1 {{'kernel.call' op kernel 'fill' takes 1 parameter (value), got 2}}
  kernel.call "fill"() outs(%m : memref<4xf32>) on %s params [1.0 : f64, 2.0 : f64]
  return
}

// -----

func.func @optional_param(%x: memref<4x8xf32>, %w: memref<16x8xf32>, %y: memref<4x16xf32>) {
  %s = kernel.stream 0
  // expected-error @+1 {{'kernel.call' op kernel 'linear' takes 0 to 1 parameters (accumulate?), got 2}}
  kernel.call "linear"(%x, %w : memref<4x8xf32>, memref<16x8xf32>) outs(%y : memref<4x16xf32>) on %s params [1, 1]
  return
}

// -----

func.func @counted(%a: memref<4xf32>, %b: memref<8xf32>, %n: memref<f32>) {
  %s = kernel.stream 0
  // expected-error @+1 {{'kernel.call' op kernel 'global_norm' takes 3 inputs (input...), got 2}}
  kernel.call "global_norm"(%a, %b : memref<4xf32>, memref<8xf32>) outs(%n : memref<f32>) on %s params [3]
  return
}

// -----

func.func @collective_call(%a: memref<4xf32>, %b: memref<4xf32>) {
  %s = kernel.stream 0
  // expected-error @+1 {{'kernel.call' op kernel 'all_reduce_start' is a collective (kernel.collective_start)}}
  kernel.call "all_reduce_start"(%a : memref<4xf32>) outs(%b : memref<4xf32>) on %s params [0, 0, 16]
  return
}

// -----

func.func @not_collective(%a: memref<4xf32>, %b: memref<4xf32>) {
  %s = kernel.stream 0
  // expected-error @+1 {{'kernel.collective_start' op kernel 'silu' is not a collective}}
  %r = kernel.collective_start "silu"(%a : memref<4xf32>) outs(%b : memref<4xf32>) on %s params [] -> !kernel.request
  kernel.wait %r on %s
  return
}

// -----

func.func @collective_params(%a: memref<4xf32>, %b: memref<4xf32>) {
  %s = kernel.stream 0
  // expected-error @+1 {{'kernel.collective_start' op kernel 'all_reduce_start' takes 3 parameters (unused, reduction, axis_mask), got 2}}
  %r = kernel.collective_start "all_reduce_start"(%a : memref<4xf32>) outs(%b : memref<4xf32>) on %s params [0, 16] -> !kernel.request
  kernel.wait %r on %s
  return
}

// -----

func.func @view_outside(%a: memref<2x8xf32>) {
  // expected-error @+1 {{'kernel.view' op views 32 bytes at offset 48 of 'memref<2x8xf32>' (64 bytes), which is not inside it}}
  %v = kernel.view %a offset 48 : memref<2x8xf32> to memref<1x8xf32>
  return
}

// -----

func.func @generic_elements(%a: memref<4xf32>, %b: memref<8xf32>) {
  %s = kernel.stream 0
  // expected-error @+1 {{'kernel.generic' op buffer of type 'memref<4xf32>' has 4 elements; every buffer must have 8 or one (broadcast)}}
  kernel.generic ins(%a : memref<4xf32>) outs(%b : memref<8xf32>) on %s {
  ^bb0(%x: f32):
    kernel.yield %x : f32
  }
  return
}

// -----

func.func @generic_broadcast_output(%a: memref<4xf32>, %b: memref<4xf32>, %m: memref<f32>) {
  %s = kernel.stream 0
  kernel.generic ins(%a : memref<4xf32>) outs(%b, %m : memref<4xf32>, memref<f32>) on %s {
  ^bb0(%x: f32):
    // expected-error @+1 {{'kernel.yield' op yields a broadcast output's value that depends on a per-element input}}
    kernel.yield %x, %x : f32, f32
  }
  return
}

// -----

func.func @generic_broadcast_in_place(%a: memref<4xf32>, %b: memref<4xf32>, %m: memref<f32>) {
  %s = kernel.stream 0
  // expected-error @+1 {{'kernel.generic' op broadcast output of type 'memref<f32>' is also an input: it is written once, before the other indices read it}}
  kernel.generic ins(%a, %m : memref<4xf32>, memref<f32>) outs(%b, %m : memref<4xf32>, memref<f32>) on %s {
  ^bb0(%x: f32, %y: f32):
    %z = arith.addf %x, %y : f32
    kernel.yield %z, %y : f32, f32
  }
  return
}

// -----

func.func @generic_transposed_index(%a: memref<4x8xf32>, %b: memref<8x4xf32>) {
  %s = kernel.stream 0
  // expected-error @+1 {{'kernel.generic' op transposed output 1 is not a distinct output index}}
  kernel.generic ins(%a : memref<4x8xf32>) outs(%b : memref<8x4xf32>) on %s {
  ^bb0(%x: f32):
    kernel.yield %x : f32
  } {transposed_outputs = array<i64: 1>}
  return
}

// -----

func.func @generic_transposed_rank(%a: memref<32xf32>, %b: memref<32xf32>) {
  %s = kernel.stream 0
  // expected-error @+1 {{'kernel.generic' op transposed output of type 'memref<32xf32>' must have rank 2 or more and all 32 elements}}
  kernel.generic ins(%a : memref<32xf32>) outs(%b : memref<32xf32>) on %s {
  ^bb0(%x: f32):
    kernel.yield %x : f32
  } {transposed_outputs = array<i64: 0>}
  return
}

// -----

func.func @generic_transposed_columns(%a: memref<4x8xf32>, %b: memref<8x4xf32>, %c: memref<4x8xf32>) {
  %s = kernel.stream 0
  // expected-error @+1 {{'kernel.generic' op transposed outputs must share their leading dimension (the kernel's columns)}}
  kernel.generic ins(%a : memref<4x8xf32>) outs(%b, %c : memref<8x4xf32>, memref<4x8xf32>) on %s {
  ^bb0(%x: f32):
    kernel.yield %x, %x : f32, f32
  } {transposed_outputs = array<i64: 0, 1>}
  return
}

// -----

func.func @generic_transposed_in_place(%a: memref<8x8xf32>) {
  %s = kernel.stream 0
  // expected-error @+1 {{'kernel.generic' op transposed output of type 'memref<8x8xf32>' is also an input: index i is written where another index reads}}
  kernel.generic ins(%a : memref<8x8xf32>) outs(%a : memref<8x8xf32>) on %s {
  ^bb0(%x: f32):
    kernel.yield %x : f32
  } {transposed_outputs = array<i64: 0>}
  return
}

// -----

func.func @generic_segments_partition(%a: memref<4xf32>, %b: memref<4xf32>) {
  %s = kernel.stream 0
  // expected-error @+1 {{'kernel.generic' op segments must be (inputs, outputs, reductions) triples that partition the kernel's buffers}}
  kernel.generic ins(%a : memref<4xf32>) outs(%b : memref<4xf32>) on %s {
  ^bb0(%x: f32):
    kernel.yield %x : f32
  } {segments = array<i64: 1, 1, 0, 1, 1, 0>}
  return
}

// -----

func.func @generic_segment_elements(%a: memref<4xf32>, %b: memref<8xf32>, %c: memref<8xf32>, %d: memref<4xf32>) {
  %s = kernel.stream 0
  // expected-error @+1 {{'kernel.generic' op buffer of type 'memref<4xf32>' has 4 elements; every buffer must have 8 or one (broadcast)}}
  kernel.generic ins(%a, %c : memref<4xf32>, memref<8xf32>) outs(%b, %d : memref<8xf32>, memref<4xf32>) on %s {
  ^bb0(%x: f32, %y: f32):
    kernel.yield %y, %x : f32, f32
  } {segments = array<i64: 1, 1, 0, 1, 1, 0>}
  return
}

// -----

func.func @generic_segment_reads_another(%a: memref<4xf32>, %b: memref<4xf32>, %c: memref<8xf32>, %d: memref<8xf32>) {
  %s = kernel.stream 0
  kernel.generic ins(%a, %c : memref<4xf32>, memref<8xf32>) outs(%b, %d : memref<4xf32>, memref<8xf32>) on %s {
  ^bb0(%x: f32, %y: f32):
    // expected-error @+1 {{'arith.addf' op reads an input of another segment of its kernel.generic}}
    %z = arith.addf %x, %y : f32
    kernel.yield %x, %z : f32, f32
  } {segments = array<i64: 1, 1, 0, 1, 1, 0>}
  return
}

// -----

func.func @generic_segments_alias(%a: memref<4xf32>, %b: memref<4xf32>, %c: memref<4xf32>) {
  %s = kernel.stream 0
  // expected-error @+1 {{'kernel.generic' op segment 1 writes a buffer segment 0 reads or writes}}
  kernel.generic ins(%a, %c : memref<4xf32>, memref<4xf32>) outs(%b, %a : memref<4xf32>, memref<4xf32>) on %s {
  ^bb0(%x: f32, %y: f32):
    kernel.yield %x, %y : f32, f32
  } {segments = array<i64: 1, 1, 0, 1, 1, 0>}
  return
}

// -----

func.func @generic_transposed_twice(%a: memref<4x8xf32>, %b: memref<8x4xf32>) {
  %s = kernel.stream 0
  %v = kernel.view %b : memref<8x4xf32> to memref<4x8xf32>
  // expected-error @+1 {{'kernel.generic' op transposed output of type 'memref<8x4xf32>' is also another output}}
  kernel.generic ins(%a : memref<4x8xf32>) outs(%b, %v : memref<8x4xf32>, memref<4x8xf32>) on %s {
  ^bb0(%x: f32):
    kernel.yield %x, %x : f32, f32
  } {transposed_outputs = array<i64: 0>}
  return
}

// -----

func.func @generic_reduction_type(%a: memref<4xf32>, %m: memref<2xf32>) {
  %s = kernel.stream 0
  // expected-error @+1 {{'kernel.generic' op absmax reduction buffer of type 'memref<2xf32>' must hold one f32}}
  kernel.generic ins(%a : memref<4xf32>) reduce [#kernel.reduction<absmax>](%m : memref<2xf32>) on %s {
  ^bb0(%x: f32):
    kernel.yield %x : f32
  }
  return
}

// -----

func.func @generic_reduction_kinds(%a: memref<4xf32>, %m: memref<f32>) {
  %s = kernel.stream 0
  // expected-error @+1 {{'kernel.generic' op has 1 reductions but 2 reduction kinds}}
  kernel.generic ins(%a : memref<4xf32>) reduce [#kernel.reduction<absmax>, #kernel.reduction<absmax>](%m : memref<f32>) on %s {
  ^bb0(%x: f32):
    kernel.yield %x : f32
  }
  return
}

// -----

func.func @generic_arguments(%a: memref<4xbf16>, %b: memref<4xf32>) {
  %s = kernel.stream 0
  // expected-error @+1 {{'kernel.generic' op body's arguments must be the element types of the inputs}}
  kernel.generic ins(%a : memref<4xbf16>) outs(%b : memref<4xf32>) on %s {
  ^bb0(%x: f32):
    kernel.yield %x : f32
  }
  return
}

// -----

func.func @generic_yield(%a: memref<4xf32>, %b: memref<4xbf16>) {
  %s = kernel.stream 0
  kernel.generic ins(%a : memref<4xf32>) outs(%b : memref<4xbf16>) on %s {
  ^bb0(%x: f32):
    // expected-error @+1 {{'kernel.yield' op must yield one value of each output's, then each reduction's, element type}}
    kernel.yield %x : f32
  }
  return
}

// -----

func.func @generic_effects(%a: memref<4xf32>, %b: memref<4xf32>) {
  %s = kernel.stream 0
  kernel.generic ins(%a : memref<4xf32>) outs(%b : memref<4xf32>) on %s {
  ^bb0(%x: f32):
    // expected-error @+1 {{'kernel.alloc' op cannot be in a kernel.generic body: the body only computes (no memory effects, no regions)}}
    %t = kernel.alloc temporary : memref<4xf32>
    kernel.yield %x : f32
  }
  return
}

// -----

func.func @generic_outputs(%a: memref<4xf32>) {
  %s = kernel.stream 0
  // expected-error @+1 {{'kernel.generic' op must write at least one output or reduction}}
  "kernel.generic"(%a, %s) ({
  ^bb0(%x: f32):
    kernel.yield
  }) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 1>} : (memref<4xf32>, !kernel.stream) -> ()
  return
}

// -----

func.func @generic_reduction_view(%a: memref<4xf32>, %m: memref<f32>) {
  %s = kernel.stream 0
  %v = kernel.view %m : memref<f32> to memref<1xf32>
  // expected-error @+1 {{'kernel.generic' op reduction buffer of type 'memref<f32>' is also an input or output}}
  kernel.generic ins(%a, %v : memref<4xf32>, memref<1xf32>) reduce [#kernel.reduction<absmax>](%m : memref<f32>) on %s {
  ^bb0(%x: f32, %y: f32):
    kernel.yield %x : f32
  }
  return
}

// -----

func.func @row_sum_outside_rows(%a: memref<4xf32>, %b: memref<4xf32>) {
  %s = kernel.stream 0
  kernel.generic ins(%a : memref<4xf32>) outs(%b : memref<4xf32>) on %s {
  ^bb0(%x: f32):
    // expected-error @+1 {{'kernel.row_sum' op must be in a row kernel (a kernel.generic with a row_length)}}
    %r = kernel.row_sum %x : f32
    kernel.yield %r : f32
  }
  return
}

// -----

func.func @per_row_output_of_an_element(%a: memref<2x4xf32>, %b: memref<2xf32>) {
  %s = kernel.stream 0
  kernel.generic ins(%a : memref<2x4xf32>) outs(%b : memref<2xf32>) on %s {
  ^bb0(%x: f32):
    %m = kernel.row_max %x : f32
    %d = arith.subf %x, %m : f32
    // expected-error @+1 {{'kernel.yield' op yields a per-row output's value that depends on an element (not only on the row's reductions and per-row inputs)}}
    kernel.yield %d : f32
  } {row_length = 4 : i64}
  return
}

// -----

func.func @row_max_outside_rows(%a: memref<8xf32>, %b: memref<8xf32>) {
  %s = kernel.stream 0
  kernel.generic ins(%a : memref<8xf32>) outs(%b : memref<8xf32>) on %s {
  ^bb0(%x: f32):
    // expected-error @+1 {{'kernel.row_max' op must be in a row kernel (a kernel.generic with a row_length)}}
    %m = kernel.row_max %x : f32
    kernel.yield %m : f32
  }
  return
}

// -----

func.func @logsumexp_outside_rows(%a: memref<8xf32>, %b: memref<8xf32>) {
  %s = kernel.stream 0
  kernel.generic ins(%a : memref<8xf32>) outs(%b : memref<8xf32>) on %s {
  ^bb0(%x: f32):
    // expected-error @+1 {{'kernel.row_logsumexp' op must be in a row kernel (a kernel.generic with a row_length)}}
    %l = kernel.row_logsumexp %x : f32
    kernel.yield %l : f32
  }
  return
}

// -----

func.func @column_outside_rows(%a: memref<8xf32>, %b: memref<8xf32>) {
  %s = kernel.stream 0
  kernel.generic ins(%a : memref<8xf32>) outs(%b : memref<8xf32>) on %s {
  ^bb0(%x: f32):
    // expected-error @+1 {{'kernel.column' op must be in a row kernel (a kernel.generic with a row_length)}}
    %j = kernel.column : i64
    kernel.yield %x : f32
  }
  return
}

// -----

func.func @row_length_divides(%a: memref<2x4xf32>, %b: memref<2x4xf32>) {
  %s = kernel.stream 0
  // expected-error @+1 {{'kernel.generic' op row length 3 does not divide the kernel's 8 elements}}
  kernel.generic ins(%a : memref<2x4xf32>) outs(%b : memref<2x4xf32>) on %s {
  ^bb0(%x: f32):
    kernel.yield %x : f32
  } {row_length = 3 : i64}
  return
}

// -----

func.func @row_kernel_tiles(%a: memref<2x4xf32>, %b: memref<4x2xf32>) {
  %s = kernel.stream 0
  // expected-error @+1 {{'kernel.generic' op a row kernel has one segment and no transposed outputs}}
  kernel.generic ins(%a : memref<2x4xf32>) outs(%b : memref<4x2xf32>) on %s {
  ^bb0(%x: f32):
    kernel.yield %x : f32
  } {row_length = 4 : i64, transposed_outputs = array<i64: 0>}
  return
}

// -----

func.func @row_kernel_column_output(%a: memref<2x4xf32>, %b: memref<4xf32>) {
  %s = kernel.stream 0
  // expected-error @+1 {{'kernel.generic' op buffer of type 'memref<4xf32>' has 4 elements; every buffer must have 8, one (broadcast), for an input the row length, or for an output one a row}}
  kernel.generic ins(%a : memref<2x4xf32>) outs(%b : memref<4xf32>) on %s {
  ^bb0(%x: f32):
    kernel.yield %x : f32
  } {row_length = 4 : i64}
  return
}

// -----

func.func @row_sum_type(%a: memref<2x4xbf16>, %b: memref<2x4xbf16>) {
  %s = kernel.stream 0
  kernel.generic ins(%a : memref<2x4xbf16>) outs(%b : memref<2x4xbf16>) on %s {
  ^bb0(%x: bf16):
    // expected-error @+1 {{'kernel.row_sum' op operand #0 must be 32-bit float or 64-bit float, but got 'bf16'}}
    %r = kernel.row_sum %x : bf16
    kernel.yield %r : bf16
  } {row_length = 4 : i64}
  return
}

// -----

func.func @column_sum_outside_rows(%a: memref<2x4xf32>, %ws: memref<1x1x4xf32>, %dw: memref<4xf32>) {
  %s = kernel.stream 0
  // expected-error @+1 {{'kernel.generic' op column_sum reduction needs a row kernel (a row_length)}}
  kernel.generic ins(%a : memref<2x4xf32>) workspace(%ws : memref<1x1x4xf32>) reduce [#kernel.reduction<column_sum>](%dw : memref<4xf32>) on %s {
  ^bb0(%x: f32):
    kernel.yield %x : f32
  }
  return
}

// -----

func.func @column_sum_length(%a: memref<2x4xf32>, %ws: memref<1x1x4xf32>, %dw: memref<8xf32>) {
  %s = kernel.stream 0
  // expected-error @+1 {{'kernel.generic' op column_sum reduction buffer of type 'memref<8xf32>' must hold 4 (the row length) f32 or f64}}
  kernel.generic ins(%a : memref<2x4xf32>) workspace(%ws : memref<1x1x4xf32>) reduce [#kernel.reduction<column_sum>](%dw : memref<8xf32>) on %s {
  ^bb0(%x: f32):
    kernel.yield %x : f32
  } {row_length = 4 : i64}
  return
}

// -----

func.func @column_sum_workspace(%a: memref<2x4xf32>, %dw: memref<4xf32>) {
  %s = kernel.stream 0
  // expected-error @+1 {{'kernel.generic' op column_sum reductions need a workspace for their blocks' partial sums}}
  kernel.generic ins(%a : memref<2x4xf32>) reduce [#kernel.reduction<column_sum>](%dw : memref<4xf32>) on %s {
  ^bb0(%x: f32):
    kernel.yield %x : f32
  } {row_length = 4 : i64}
  return
}

// -----

// Three blocks of partials for two rows: a block without a row.
func.func @column_sum_blocks(%a: memref<2x4xf32>, %ws: memref<3x1x4xf32>, %dw: memref<4xf32>) {
  %s = kernel.stream 0
  // expected-error @+1 {{'kernel.generic' op workspace of type 'memref<3x1x4xf32>' must hold the column sums' partials: P x 1 x 4 elements of 'f32', contiguous, with 1 <= P <= the rows}}
  kernel.generic ins(%a : memref<2x4xf32>) workspace(%ws : memref<3x1x4xf32>) reduce [#kernel.reduction<column_sum>](%dw : memref<4xf32>) on %s {
  ^bb0(%x: f32):
    kernel.yield %x : f32
  } {row_length = 4 : i64}
  return
}

// -----

func.func @workspace_without_column_sums(%a: memref<2x4xf32>, %b: memref<2x4xf32>, %ws: memref<1x1x4xf32>) {
  %s = kernel.stream 0
  // expected-error @+1 {{'kernel.generic' op workspace of type 'memref<1x1x4xf32>' must hold the column sums' partials}}
  kernel.generic ins(%a : memref<2x4xf32>) outs(%b : memref<2x4xf32>) workspace(%ws : memref<1x1x4xf32>) on %s {
  ^bb0(%x: f32):
    kernel.yield %x : f32
  } {row_length = 4 : i64}
  return
}

// -----

func.func @column_sum_no_blocks(%a: memref<2x4xf32>, %ws: memref<0x1x4xf32>, %dw: memref<4xf32>) {
  %s = kernel.stream 0
  // expected-error @+1 {{'kernel.generic' op workspace of type 'memref<0x1x4xf32>' must hold the column sums' partials}}
  kernel.generic ins(%a : memref<2x4xf32>) workspace(%ws : memref<0x1x4xf32>) reduce [#kernel.reduction<column_sum>](%dw : memref<4xf32>) on %s {
  ^bb0(%x: f32):
    kernel.yield %x : f32
  } {row_length = 4 : i64}
  return
}

// -----

func.func @column_sum_strided(%a: memref<2x4xf32>, %ws: memref<1x1x4xf32>, %dw: memref<4xf32, strided<[2]>>) {
  %s = kernel.stream 0
  // expected-error @+1 {{'kernel.generic' op reduction buffer of type 'memref<4xf32, strided<[2]>>' is not contiguous (identity layout)}}
  kernel.generic ins(%a : memref<2x4xf32>) workspace(%ws : memref<1x1x4xf32>) reduce [#kernel.reduction<column_sum>](%dw : memref<4xf32, strided<[2]>>) on %s {
  ^bb0(%x: f32):
    kernel.yield %x : f32
  } {row_length = 4 : i64}
  return
}

// -----

func.func @column_sums_alias(%a: memref<2x4xf32>, %ws: memref<1x2x4xf32>, %dw: memref<4xf32>) {
  %s = kernel.stream 0
  // expected-error @+1 {{'kernel.generic' op reduction buffer of type 'memref<4xf32>' is also another reduction}}
  kernel.generic ins(%a : memref<2x4xf32>) workspace(%ws : memref<1x2x4xf32>) reduce [#kernel.reduction<column_sum>, #kernel.reduction<column_sum>](%dw, %dw : memref<4xf32>, memref<4xf32>) on %s {
  ^bb0(%x: f32):
    kernel.yield %x, %x : f32, f32
  } {row_length = 4 : i64}
  return
}

// -----

func.func @map_count(%a: memref<4xf32>, %b: memref<4xf32>) {
  %s = kernel.stream 0
  // expected-error @+1 {{'kernel.generic' op has 2 input maps for 1 inputs}}
  kernel.generic ins(%a : memref<4xf32>) outs(%b : memref<4xf32>) on %s {
  ^bb0(%x: f32):
    kernel.yield %x : f32
  } {input_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>]}
  return
}

// -----

func.func @map_arity(%a: memref<4xf32>, %b: memref<4xf32>) {
  %s = kernel.stream 0
  // expected-error @+1 {{'kernel.generic' op input map affine_map<(d0, d1) -> (d0 + d1)> must take one index to one element}}
  kernel.generic ins(%a : memref<4xf32>) outs(%b : memref<4xf32>) on %s {
  ^bb0(%x: f32):
    kernel.yield %x : f32
  } {input_maps = [affine_map<(d0, d1) -> (d0 + d1)>]}
  return
}

// -----

// Element i + 1 of a 4-element input is outside it at i = 3.
func.func @map_outside(%a: memref<4xf32>, %b: memref<4xf32>) {
  %s = kernel.stream 0
  // expected-error @+1 {{'kernel.generic' op input map affine_map<(d0) -> (d0 + 1)> of input 0 may leave its 4 elements for an index below 4}}
  kernel.generic ins(%a : memref<4xf32>) outs(%b : memref<4xf32>) on %s {
  ^bb0(%x: f32):
    kernel.yield %x : f32
  } {input_maps = [affine_map<(d0) -> (d0 + 1)>]}
  return
}

// -----

// A mod of a possibly negative value has no unsigned form.
func.func @map_negative_dividend(%a: memref<4xf32>, %b: memref<4xf32>) {
  %s = kernel.stream 0
  // expected-error @+1 {{'kernel.generic' op input map affine_map<(d0) -> ((d0 - 1) mod 4)> of input 0 may leave its 4 elements for an index below 4}}
  kernel.generic ins(%a : memref<4xf32>) outs(%b : memref<4xf32>) on %s {
  ^bb0(%x: f32):
    kernel.yield %x : f32
  } {input_maps = [affine_map<(d0) -> ((d0 - 1) mod 4)>]}
  return
}

// -----

// Index i reads element i xor 1, which index i xor 1 may have written.
func.func @mapped_and_written(%a: memref<4xf32>) {
  %s = kernel.stream 0
  // expected-error @+1 {{'kernel.generic' op input 1 is read through a map and also written}}
  kernel.generic ins(%a, %a : memref<4xf32>, memref<4xf32>) outs(%a : memref<4xf32>) on %s {
  ^bb0(%x: f32, %p: f32):
    %r = arith.addf %x, %p : f32
    kernel.yield %r : f32
  } {input_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ((d0 floordiv 2) * 2 + 1 - d0 mod 2)>]}
  return
}

// -----

func.func @mapped_rows(%a: memref<2x4xf32>, %b: memref<2x4xf32>) {
  %s = kernel.stream 0
  // expected-error @+1 {{'kernel.generic' op a row kernel reads each input at its index, column or row (no other input maps, no kernel.index)}}
  kernel.generic ins(%a : memref<2x4xf32>) outs(%b : memref<2x4xf32>) on %s {
  ^bb0(%x: f32):
    kernel.yield %x : f32
  } {input_maps = [affine_map<(d0) -> (7 - d0)>], row_length = 4 : i64}
  return
}

// -----

func.func @index_in_rows(%a: memref<2x4xf32>, %b: memref<2x4xf32>) {
  %s = kernel.stream 0
  // expected-error @+1 {{'kernel.generic' op a row kernel reads each input at its index, column or row (no other input maps, no kernel.index)}}
  kernel.generic ins(%a : memref<2x4xf32>) outs(%b : memref<2x4xf32>) on %s {
  ^bb0(%x: f32):
    %i = kernel.index : i64
    %f = arith.uitofp %i : i64 to f32
    %r = arith.addf %x, %f : f32
    kernel.yield %r : f32
  } {row_length = 4 : i64}
  return
}

// -----

func.func @index_outside() {
  // expected-error @+1 {{'kernel.index' op expects parent op 'kernel.generic'}}
  %i = kernel.index : i64
  return
}

// -----

// A cast-transpose's tiles read each element where they write it.
func.func @mapped_tiles(%a: memref<4x2xf32>, %b: memref<2x4xf32>) {
  %s = kernel.stream 0
  // expected-error @+1 {{'kernel.generic' op a segment in tiles (writing a transposed output) reads each input at its index (no input maps, no kernel.index)}}
  kernel.generic ins(%a : memref<4x2xf32>) outs(%b : memref<2x4xf32>) on %s {
  ^bb0(%x: f32):
    kernel.yield %x : f32
  } {input_maps = [affine_map<(d0) -> (7 - d0)>], transposed_outputs = array<i64: 0>}
  return
}
