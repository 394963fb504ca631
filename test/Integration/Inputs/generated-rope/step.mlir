// RoPE as bufferization leaves it (kernel calls on slots), for
// generated-rope.test:
//   bf16: q [2 x 12 x 3 x 16] rotated (the forward), dq rotated back (the
//   backward's transpose) and the amax of the result (Float8's cast of the
//   gradient), the table f16 [12 x 8 x 2];
//   f32: x [3 x 7 x 2 x 6] (three pairs a head: no multiple of a vector)
//   rotated, and r rotated back, by f6 [7 x 3 x 2].
module {
  func.func @step(%q: memref<2x12x3x16xbf16> {kernel.slot = "param:q"},
                  %dq: memref<2x12x3x16xbf16> {kernel.slot = "param:dq"},
                  %f16: memref<12x8x2xf32> {kernel.slot = "param:f16"},
                  %qr: memref<2x12x3x16xbf16> {kernel.slot = "param:qr"},
                  %dqr: memref<2x12x3x16xbf16> {kernel.slot = "param:dqr"},
                  %amax: memref<f32> {kernel.slot = "param:amax"},
                  %x: memref<3x7x2x6xf32> {kernel.slot = "param:x"},
                  %r: memref<3x7x2x6xf32> {kernel.slot = "param:r"},
                  %f6: memref<7x3x2xf32> {kernel.slot = "param:f6"},
                  %xr: memref<3x7x2x6xf32> {kernel.slot = "param:xr"},
                  %rr: memref<3x7x2x6xf32> {kernel.slot = "param:rr"}) {
    %s = kernel.stream 0
    kernel.call "rope"(%q, %f16 : memref<2x12x3x16xbf16>, memref<12x8x2xf32>) outs(%qr : memref<2x12x3x16xbf16>) on %s params [0]
    kernel.call "rope"(%dq, %f16 : memref<2x12x3x16xbf16>, memref<12x8x2xf32>) outs(%dqr : memref<2x12x3x16xbf16>) on %s params [1]
    kernel.call "amax"(%dqr : memref<2x12x3x16xbf16>) outs(%amax : memref<f32>) on %s params [0]
    kernel.call "rope"(%x, %f6 : memref<3x7x2x6xf32>, memref<7x3x2xf32>) outs(%xr : memref<3x7x2x6xf32>) on %s params [0]
    kernel.call "rope"(%r, %f6 : memref<3x7x2x6xf32>, memref<7x3x2xf32>) outs(%rr : memref<3x7x2x6xf32>) on %s params [1]
    return
  }
}
