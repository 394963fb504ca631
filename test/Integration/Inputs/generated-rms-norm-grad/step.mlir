// RMSNorm's backward as bufferization leaves it (kernel calls on slots),
// for generated-rms-norm-grad.test:
//   bf16: x, dy [300 x 70], w [70]; dx added into the residual gradient r
//   (in place) and its amax taken; dw cast to f32 (FSDP's reduce dtype).
//   f32: x, dy [129 x 256], w [256]; dx and dw.
// Rows of 70 are no multiple of a vector; the test splits the rows into 7
// blocks (43 or 42 rows), so the column sums add several blocks' partials.
module {
  func.func @step(%x: memref<300x70xbf16> {kernel.slot = "param:x"},
                  %w: memref<70xbf16> {kernel.slot = "param:w"},
                  %dy: memref<300x70xbf16> {kernel.slot = "param:dy"},
                  %r: memref<300x70xbf16> {kernel.slot = "param:r"},
                  %dwf: memref<70xf32> {kernel.slot = "param:dwf"},
                  %amax: memref<f32> {kernel.slot = "param:amax"},
                  %xf: memref<129x256xf32> {kernel.slot = "param:xf"},
                  %wf: memref<256xf32> {kernel.slot = "param:wf"},
                  %dyf: memref<129x256xf32> {kernel.slot = "param:dyf"},
                  %dxf: memref<129x256xf32> {kernel.slot = "param:dxf"},
                  %dwf32: memref<256xf32> {kernel.slot = "param:dwf32"}) {
    %s = kernel.stream 0
    %dx = kernel.alloc temporary : memref<300x70xbf16>
    %dw = kernel.alloc temporary : memref<70xbf16>
    kernel.call "rms_norm_grad"(%x, %w, %dy : memref<300x70xbf16>, memref<70xbf16>, memref<300x70xbf16>) outs(%dx, %dw : memref<300x70xbf16>, memref<70xbf16>) on %s params [1.0e-5]
    kernel.call "cast"(%dw : memref<70xbf16>) outs(%dwf : memref<70xf32>) on %s params []
    kernel.call "add"(%r, %dx : memref<300x70xbf16>, memref<300x70xbf16>) outs(%r : memref<300x70xbf16>) on %s params []
    kernel.call "amax"(%r : memref<300x70xbf16>) outs(%amax : memref<f32>) on %s params [0]
    kernel.call "rms_norm_grad"(%xf, %wf, %dyf : memref<129x256xf32>, memref<256xf32>, memref<129x256xf32>) outs(%dxf, %dwf32 : memref<129x256xf32>, memref<256xf32>) on %s params [1.0e-5]
    return
  }
}
