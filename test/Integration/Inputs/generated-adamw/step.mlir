// An optimizer step as bufferization leaves it (kernel calls on slots), for
// generated-adamw.test: the step's scalars (f32 and f64 with gradient norms
// that clip; f32 with one that does not, a NaN one and an infinite one),
// then AdamW on three f32 parameters (40001 elements: more than one thread's
// span, 16-element packs and a tail of one; 3 x 37; one element) and one
// f64 parameter (64), each in place, as titan-optimizer writes them (each
// update at its parameter's location: a block's updates join into one
// launch); then two f32 parameters whose gradients hold a NaN and an
// infinity, with the NaN and the infinite norm's coefficients.
module {
  func.func @step(%lr: memref<f32> {kernel.slot = "param:lr"},
                  %norm: memref<f32> {kernel.slot = "param:norm"},
                  %norm64: memref<f32> {kernel.slot = "param:norm64"},
                  %step: memref<i64> {kernel.slot = "param:step"},
                  %c: memref<f32> {kernel.slot = "param:clip_coef"},
                  %d: memref<f32> {kernel.slot = "param:decay"},
                  %ss: memref<f32> {kernel.slot = "param:step_size"},
                  %bc: memref<f32> {kernel.slot = "param:bias_correction2_sqrt"},
                  %c64: memref<f64> {kernel.slot = "param:clip_coef64"},
                  %d64: memref<f64> {kernel.slot = "param:decay64"},
                  %ss64: memref<f64> {kernel.slot = "param:step_size64"},
                  %bc64: memref<f64> {kernel.slot = "param:bias_correction2_sqrt64"},
                  %n0: memref<f32> {kernel.slot = "param:norm_unclipped"},
                  %n1: memref<f32> {kernel.slot = "param:norm_nan"},
                  %n2: memref<f32> {kernel.slot = "param:norm_inf"},
                  %k0: memref<f32> {kernel.slot = "param:clip_coef_unclipped"},
                  %k1: memref<f32> {kernel.slot = "param:clip_coef_nan"},
                  %k2: memref<f32> {kernel.slot = "param:clip_coef_inf"},
                  %p1: memref<40001xf32> {kernel.slot = "param:p1"},
                  %g1: memref<40001xf32> {kernel.slot = "param:g1"},
                  %m1: memref<40001xf32> {kernel.slot = "param:m1"},
                  %v1: memref<40001xf32> {kernel.slot = "param:v1"},
                  %p2: memref<3x37xf32> {kernel.slot = "param:p2"},
                  %g2: memref<3x37xf32> {kernel.slot = "param:g2"},
                  %m2: memref<3x37xf32> {kernel.slot = "param:m2"},
                  %v2: memref<3x37xf32> {kernel.slot = "param:v2"},
                  %p3: memref<1xf32> {kernel.slot = "param:p3"},
                  %g3: memref<1xf32> {kernel.slot = "param:g3"},
                  %m3: memref<1xf32> {kernel.slot = "param:m3"},
                  %v3: memref<1xf32> {kernel.slot = "param:v3"},
                  %p4: memref<64xf64> {kernel.slot = "param:p4"},
                  %g4: memref<64xf64> {kernel.slot = "param:g4"},
                  %m4: memref<64xf64> {kernel.slot = "param:m4"},
                  %v4: memref<64xf64> {kernel.slot = "param:v4"},
                  %p5: memref<37xf32> {kernel.slot = "param:p5"},
                  %g5: memref<37xf32> {kernel.slot = "param:g5"},
                  %m5: memref<37xf32> {kernel.slot = "param:m5"},
                  %v5: memref<37xf32> {kernel.slot = "param:v5"},
                  %p6: memref<37xf32> {kernel.slot = "param:p6"},
                  %g6: memref<37xf32> {kernel.slot = "param:g6"},
                  %m6: memref<37xf32> {kernel.slot = "param:m6"},
                  %v6: memref<37xf32> {kernel.slot = "param:v6"}) {
    %s = kernel.stream 0
    kernel.call "adamw_scalars"(%lr, %norm, %step : memref<f32>, memref<f32>, memref<i64>) outs(%c, %d, %ss, %bc : memref<f32>, memref<f32>, memref<f32>, memref<f32>) on %s params [9.000000e-01, 9.500000e-01, 1.000000e-01, 1.000000e+00] loc("optimizer")
    kernel.call "adamw_scalars"(%lr, %norm64, %step : memref<f32>, memref<f32>, memref<i64>) outs(%c64, %d64, %ss64, %bc64 : memref<f64>, memref<f64>, memref<f64>, memref<f64>) on %s params [9.000000e-01, 9.500000e-01, 1.000000e-01, 1.000000e+00] loc("optimizer")
    // The clipping coefficient of a norm that does not clip, a NaN norm and
    // an infinite one (the rest of each call's results: dead temporaries).
    %d0a = kernel.alloc temporary : memref<f32>
    %d0b = kernel.alloc temporary : memref<f32>
    %d0c = kernel.alloc temporary : memref<f32>
    kernel.call "adamw_scalars"(%lr, %n0, %step : memref<f32>, memref<f32>, memref<i64>) outs(%k0, %d0a, %d0b, %d0c : memref<f32>, memref<f32>, memref<f32>, memref<f32>) on %s params [9.000000e-01, 9.500000e-01, 1.000000e-01, 1.000000e+00] loc("optimizer")
    %d1a = kernel.alloc temporary : memref<f32>
    %d1b = kernel.alloc temporary : memref<f32>
    %d1c = kernel.alloc temporary : memref<f32>
    kernel.call "adamw_scalars"(%lr, %n1, %step : memref<f32>, memref<f32>, memref<i64>) outs(%k1, %d1a, %d1b, %d1c : memref<f32>, memref<f32>, memref<f32>, memref<f32>) on %s params [9.000000e-01, 9.500000e-01, 1.000000e-01, 1.000000e+00] loc("optimizer")
    %d2a = kernel.alloc temporary : memref<f32>
    %d2b = kernel.alloc temporary : memref<f32>
    %d2c = kernel.alloc temporary : memref<f32>
    kernel.call "adamw_scalars"(%lr, %n2, %step : memref<f32>, memref<f32>, memref<i64>) outs(%k2, %d2a, %d2b, %d2c : memref<f32>, memref<f32>, memref<f32>, memref<f32>) on %s params [9.000000e-01, 9.500000e-01, 1.000000e-01, 1.000000e+00] loc("optimizer")
    kernel.call "adamw"(%p1, %g1, %m1, %v1, %c, %d, %ss, %bc : memref<40001xf32>, memref<40001xf32>, memref<40001xf32>, memref<40001xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%p1, %m1, %v1 : memref<40001xf32>, memref<40001xf32>, memref<40001xf32>) on %s params [9.000000e-01, 9.500000e-01, 1.000000e-08] loc("layers.0.attention.wq.weight")
    kernel.call "adamw"(%p2, %g2, %m2, %v2, %c, %d, %ss, %bc : memref<3x37xf32>, memref<3x37xf32>, memref<3x37xf32>, memref<3x37xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%p2, %m2, %v2 : memref<3x37xf32>, memref<3x37xf32>, memref<3x37xf32>) on %s params [9.000000e-01, 9.500000e-01, 1.000000e-08] loc("layers.0.attention_norm.weight")
    kernel.call "adamw"(%p3, %g3, %m3, %v3, %c, %d, %ss, %bc : memref<1xf32>, memref<1xf32>, memref<1xf32>, memref<1xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%p3, %m3, %v3 : memref<1xf32>, memref<1xf32>, memref<1xf32>) on %s params [9.000000e-01, 9.500000e-01, 1.000000e-08] loc("layers.0.ffn_norm.weight")
    kernel.call "adamw"(%p4, %g4, %m4, %v4, %c64, %d64, %ss64, %bc64 : memref<64xf64>, memref<64xf64>, memref<64xf64>, memref<64xf64>, memref<f64>, memref<f64>, memref<f64>, memref<f64>) outs(%p4, %m4, %v4 : memref<64xf64>, memref<64xf64>, memref<64xf64>) on %s params [9.000000e-01, 9.500000e-01, 1.000000e-08] loc("layers.1.attention.wq.weight")
    // Gradients holding a NaN and an infinity, with the coefficients of
    // the NaN and the infinite norm: the step is skipped, the state kept.
    kernel.call "adamw"(%p5, %g5, %m5, %v5, %k1, %d, %ss, %bc : memref<37xf32>, memref<37xf32>, memref<37xf32>, memref<37xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%p5, %m5, %v5 : memref<37xf32>, memref<37xf32>, memref<37xf32>) on %s params [9.000000e-01, 9.500000e-01, 1.000000e-08] loc("layers.2.attention.wq.weight")
    kernel.call "adamw"(%p6, %g6, %m6, %v6, %k2, %d, %ss, %bc : memref<37xf32>, memref<37xf32>, memref<37xf32>, memref<37xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) outs(%p6, %m6, %v6 : memref<37xf32>, memref<37xf32>, memref<37xf32>) on %s params [9.000000e-01, 9.500000e-01, 1.000000e-08] loc("layers.2.attention.wk.weight")
    return
  }
}
