// The cross-entropy's forward as bufferization leaves it (kernel calls on
// slots), for generated-cross-entropy.test:
//   bf16: logits [3 x 5 x 37] (rows of 37: no multiple of a vector), their
//   labels, the first and the last column among them;
//   f32: logits [1024 x 64] (a mean of 1024 rows), offset by 1e4 in some
//   rows (the max keeps exp in range);
//   f64: logits [4 x 1000] (f64 statistics);
//   f32 [2 x 8] whose first row's label is outside the row and whose
//   second row holds a NaN: a NaN loss, and the NaN row's lse NaN.
module {
  func.func @step(%logits: memref<3x5x37xbf16> {kernel.slot = "param:logits"},
                  %labels: memref<3x5xi32> {kernel.slot = "param:labels"},
                  %loss: memref<f32> {kernel.slot = "param:loss"},
                  %lse: memref<3x5xf32> {kernel.slot = "param:lse"},
                  %l32: memref<1024x64xf32> {kernel.slot = "param:l32"},
                  %y32: memref<1024xi32> {kernel.slot = "param:y32"},
                  %loss32: memref<f32> {kernel.slot = "param:loss32"},
                  %lse32: memref<1024xf32> {kernel.slot = "param:lse32"},
                  %l64: memref<4x1000xf64> {kernel.slot = "param:l64"},
                  %y64: memref<4xi32> {kernel.slot = "param:y64"},
                  %loss64: memref<f32> {kernel.slot = "param:loss64"},
                  %lse64: memref<4xf64> {kernel.slot = "param:lse64"},
                  %bad: memref<2x8xf32> {kernel.slot = "param:bad"},
                  %ybad: memref<2xi32> {kernel.slot = "param:ybad"},
                  %lossbad: memref<f32> {kernel.slot = "param:lossbad"},
                  %lsebad: memref<2xf32> {kernel.slot = "param:lsebad"}) {
    %s = kernel.stream 0
    kernel.call "cross_entropy"(%logits, %labels : memref<3x5x37xbf16>, memref<3x5xi32>) outs(%loss, %lse : memref<f32>, memref<3x5xf32>) on %s params []
    kernel.call "cross_entropy"(%l32, %y32 : memref<1024x64xf32>, memref<1024xi32>) outs(%loss32, %lse32 : memref<f32>, memref<1024xf32>) on %s params []
    kernel.call "cross_entropy"(%l64, %y64 : memref<4x1000xf64>, memref<4xi32>) outs(%loss64, %lse64 : memref<f32>, memref<4xf64>) on %s params []
    kernel.call "cross_entropy"(%bad, %ybad : memref<2x8xf32>, memref<2xi32>) outs(%lossbad, %lsebad : memref<f32>, memref<2xf32>) on %s params []
    return
  }
}
