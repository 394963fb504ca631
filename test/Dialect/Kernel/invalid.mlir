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
  // expected-error @+1 {{'kernel.copy' op copies 'memref<4xf32>' into 'memref<8xf32>'; the types must be equal}}
  kernel.copy %a, %b on %s : memref<4xf32>, memref<8xf32>
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
