// RoPE as bufferization leaves it (kernel calls on slots), for
// generated-rope.test:
//   bf16: q [2 x 12 x 3 x 16] rotated (the forward), dq rotated back (the
//   backward's transpose) and the amax of the result (Float8's cast of the
//   gradient), the table f16 [12 x 8 x 2];
//   f32: x [3 x 7 x 2 x 6] (three pairs a head: no multiple of a vector)
//   rotated, and r rotated back, by f6 [7 x 3 x 2];
//   and two kernels of one block that kernel-fuse-horizontal joins into
//   one launch of a segment in tiles and one element by element: t [37 x
//   29] widened into its transpose, u [70000] widened (69 work items of
//   1024 elements, the last one short: two spans on the host).
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
                  %rr: memref<3x7x2x6xf32> {kernel.slot = "param:rr"},
                  %t: memref<37x29xbf16> {kernel.slot = "param:t"},
                  %tt: memref<29x37xf32> {kernel.slot = "param:tt"},
                  %u: memref<70000xbf16> {kernel.slot = "param:u"},
                  %uf: memref<70000xf32> {kernel.slot = "param:uf"}) {
    %s = kernel.stream 0
    kernel.call "rope"(%q, %f16 : memref<2x12x3x16xbf16>, memref<12x8x2xf32>) outs(%qr : memref<2x12x3x16xbf16>) on %s params [0]
    kernel.call "rope"(%dq, %f16 : memref<2x12x3x16xbf16>, memref<12x8x2xf32>) outs(%dqr : memref<2x12x3x16xbf16>) on %s params [1]
    kernel.call "amax"(%dqr : memref<2x12x3x16xbf16>) outs(%amax : memref<f32>) on %s params [0]
    kernel.call "rope"(%x, %f6 : memref<3x7x2x6xf32>, memref<7x3x2xf32>) outs(%xr : memref<3x7x2x6xf32>) on %s params [0]
    kernel.call "rope"(%r, %f6 : memref<3x7x2x6xf32>, memref<7x3x2xf32>) outs(%rr : memref<3x7x2x6xf32>) on %s params [1]
    kernel.generic ins(%t : memref<37x29xbf16>) outs(%tt : memref<29x37xf32>) on %s {
    ^bb0(%a: bf16):
      %w = arith.extf %a : bf16 to f32
      kernel.yield %w : f32
    } {transposed_outputs = array<i64: 0>} loc("layers.0.feed_forward.w2")
    kernel.generic ins(%u : memref<70000xbf16>) outs(%uf : memref<70000xf32>) on %s {
    ^bb0(%a: bf16):
      %w = arith.extf %a : bf16 to f32
      kernel.yield %w : f32
    } loc("layers.0.feed_forward.w1.weight")
    return
  }
}
