// The loss's gradients as bufferization leaves them (kernel calls on
// slots), for generated-loss-grad.test:
//   bf16: logits [3 x 5 x 37] (rows of 37: no multiple of a vector) with
//   their labels and f32 log-sum-exps, the 0-d loss gradient;
//   f64: logits [4 x 1000] with theirs (f64 statistics);
//   loss parallel, the two vocabulary shards of the f64 logits as f32
//   [4 x 500] (columns 500 to 999, then 0 to 499): sum_exp's gradient from
//   the whole row's max and the statistics' gradients, target_logit's from
//   the labels and the shard's start (none for the first shard, whose
//   start is 0: a label past it matches no column), their sum, and its
//   cast to bf16 (as the mixed-precision backward casts it).
module {
  func.func @step(%logits: memref<3x5x37xbf16> {kernel.slot = "param:logits"},
                  %labels: memref<3x5xi32> {kernel.slot = "param:labels"},
                  %lse: memref<3x5xf32> {kernel.slot = "param:lse"},
                  %grad: memref<f32> {kernel.slot = "param:grad"},
                  %dlogits: memref<3x5x37xbf16> {kernel.slot = "param:dlogits"},
                  %l64: memref<4x1000xf64> {kernel.slot = "param:l64"},
                  %y64: memref<4xi32> {kernel.slot = "param:y64"},
                  %lse64: memref<4xf64> {kernel.slot = "param:lse64"},
                  %d64: memref<4x1000xf64> {kernel.slot = "param:d64"},
                  %part: memref<4x500xf32> {kernel.slot = "param:part"},
                  %max: memref<4xf32> {kernel.slot = "param:max"},
                  %dsum: memref<4xf32> {kernel.slot = "param:dsum"},
                  %dtarget: memref<4xf32> {kernel.slot = "param:dtarget"},
                  %start: memref<i32> {kernel.slot = "param:start"},
                  %dpart: memref<4x500xbf16> {kernel.slot = "param:dpart"},
                  %part0: memref<4x500xf32> {kernel.slot = "param:part0"},
                  %dpart0: memref<4x500xbf16> {kernel.slot = "param:dpart0"}) {
    %s = kernel.stream 0
    kernel.call "cross_entropy_grad"(%logits, %labels, %lse, %grad : memref<3x5x37xbf16>, memref<3x5xi32>, memref<3x5xf32>, memref<f32>) outs(%dlogits : memref<3x5x37xbf16>) on %s params []
    kernel.call "cross_entropy_grad"(%l64, %y64, %lse64, %grad : memref<4x1000xf64>, memref<4xi32>, memref<4xf64>, memref<f32>) outs(%d64 : memref<4x1000xf64>) on %s params []
    %a = kernel.alloc temporary : memref<4x500xf32>
    %b = kernel.alloc temporary : memref<4x500xf32>
    %c = kernel.alloc temporary : memref<4x500xf32>
    kernel.call "sum_exp_grad"(%part, %max, %dsum : memref<4x500xf32>, memref<4xf32>, memref<4xf32>) outs(%a : memref<4x500xf32>) on %s params []
    kernel.call "target_logit_grad"(%dtarget, %y64, %start : memref<4xf32>, memref<4xi32>, memref<i32>) outs(%b : memref<4x500xf32>) on %s params [1]
    kernel.call "add"(%a, %b : memref<4x500xf32>, memref<4x500xf32>) outs(%c : memref<4x500xf32>) on %s params []
    kernel.call "cast"(%c : memref<4x500xf32>) outs(%dpart : memref<4x500xbf16>) on %s params []
    %a0 = kernel.alloc temporary : memref<4x500xf32>
    %b0 = kernel.alloc temporary : memref<4x500xf32>
    %c0 = kernel.alloc temporary : memref<4x500xf32>
    kernel.call "sum_exp_grad"(%part0, %max, %dsum : memref<4x500xf32>, memref<4xf32>, memref<4xf32>) outs(%a0 : memref<4x500xf32>) on %s params []
    kernel.call "target_logit_grad"(%dtarget, %y64 : memref<4xf32>, memref<4xi32>) outs(%b0 : memref<4x500xf32>) on %s params [0]
    kernel.call "add"(%a0, %b0 : memref<4x500xf32>, memref<4x500xf32>) outs(%c0 : memref<4x500xf32>) on %s params []
    kernel.call "cast"(%c0 : memref<4x500xf32>) outs(%dpart0 : memref<4x500xbf16>) on %s params []
    return
  }
}
