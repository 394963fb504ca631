// RUN: titan-opt %s -split-input-file -kernel-offload-state -verify-diagnostics

// A host step calls libtitanrt_host's entries: only the kernels the catalog
// flags kHostStep, on f32 or f64 buffers.
func.func @optimizer_step(%x: memref<64xf32> {kernel.slot = "param:w"})
    attributes {kernel.host_step} {
  %s = kernel.stream 0
  // expected-error @+1 {{'kernel.call' op runs in a host step (kernel.host_step), but libtitanrt_host has no entry for kernel 'silu' on these buffers (KernelCatalog.def's kHostStep kernels, f32 and f64)}}
  kernel.call "silu"(%x : memref<64xf32>) outs(%x : memref<64xf32>) on %s params []
  return
}

// -----

func.func @optimizer_step(%g: memref<64xbf16> {kernel.slot = "grad:w"}, %n: memref<f32> {kernel.slot = "output:grad_norm"})
    attributes {kernel.host_step} {
  %s = kernel.stream 0
  %ws = kernel.alloc workspace : memref<64xi8>
  // expected-error @+1 {{'kernel.call' op runs in a host step (kernel.host_step), but libtitanrt_host has no entry for kernel 'global_norm' on these buffers}}
  kernel.call "global_norm"(%g : memref<64xbf16>) outs(%n : memref<f32>) workspace(%ws : memref<64xi8>) on %s params [1]
  return
}
