// Loss parallel's pieces as bufferization leaves them (kernel calls on
// slots), for generated-loss-parallel.test: f32 logits [4 x 1000] in two
// vocabulary shards (part0: columns 0 to 499, part1: 500 to 999), as two
// ranks of loss parallel hold them; the all-reduces between the pieces
// are the test's adds (and the whole row's max an input):
//   each shard's row_max; each shard's sum_exp from the whole row's max,
//   added; each shard's target_logit with its start (0 and 500), added;
//   cross_entropy_from_stats of the whole row's statistics, and its
//   gradients for a loss gradient of 0.75; target_logit without a start
//   on part0, whose rows 1 and 2 have labels outside it (NaN).
module {
  func.func @step(%part0: memref<4x500xf32> {kernel.slot = "param:part0"},
                  %part1: memref<4x500xf32> {kernel.slot = "param:part1"},
                  %labels: memref<4xi32> {kernel.slot = "param:labels"},
                  %start0: memref<i32> {kernel.slot = "param:start0"},
                  %start1: memref<i32> {kernel.slot = "param:start1"},
                  %max: memref<4xf32> {kernel.slot = "param:max"},
                  %grad: memref<f32> {kernel.slot = "param:grad"},
                  %max0: memref<4xf32> {kernel.slot = "param:max0"},
                  %max1: memref<4xf32> {kernel.slot = "param:max1"},
                  %sum: memref<4xf32> {kernel.slot = "param:sum"},
                  %target: memref<4xf32> {kernel.slot = "param:target"},
                  %loss: memref<f32> {kernel.slot = "param:loss"},
                  %dsum: memref<4xf32> {kernel.slot = "param:dsum"},
                  %dtarget: memref<4xf32> {kernel.slot = "param:dtarget"},
                  %nostart: memref<4xf32> {kernel.slot = "param:nostart"}) {
    %s = kernel.stream 0
    kernel.call "row_max"(%part0 : memref<4x500xf32>) outs(%max0 : memref<4xf32>) on %s params []
    kernel.call "row_max"(%part1 : memref<4x500xf32>) outs(%max1 : memref<4xf32>) on %s params []
    %s0 = kernel.alloc temporary : memref<4xf32>
    %s1 = kernel.alloc temporary : memref<4xf32>
    kernel.call "sum_exp"(%part0, %max : memref<4x500xf32>, memref<4xf32>) outs(%s0 : memref<4xf32>) on %s params []
    kernel.call "sum_exp"(%part1, %max : memref<4x500xf32>, memref<4xf32>) outs(%s1 : memref<4xf32>) on %s params []
    kernel.call "add"(%s0, %s1 : memref<4xf32>, memref<4xf32>) outs(%sum : memref<4xf32>) on %s params []
    %t0 = kernel.alloc temporary : memref<4xf32>
    %t1 = kernel.alloc temporary : memref<4xf32>
    kernel.call "target_logit"(%part0, %labels, %start0 : memref<4x500xf32>, memref<4xi32>, memref<i32>) outs(%t0 : memref<4xf32>) on %s params [1]
    kernel.call "target_logit"(%part1, %labels, %start1 : memref<4x500xf32>, memref<4xi32>, memref<i32>) outs(%t1 : memref<4xf32>) on %s params [1]
    kernel.call "add"(%t0, %t1 : memref<4xf32>, memref<4xf32>) outs(%target : memref<4xf32>) on %s params []
    kernel.call "cross_entropy_from_stats"(%max, %sum, %target : memref<4xf32>, memref<4xf32>, memref<4xf32>) outs(%loss : memref<f32>) on %s params []
    kernel.call "cross_entropy_from_stats_grad"(%sum, %grad : memref<4xf32>, memref<f32>) outs(%dsum, %dtarget : memref<4xf32>, memref<4xf32>) on %s params []
    kernel.call "target_logit"(%part0, %labels : memref<4x500xf32>, memref<4xi32>) outs(%nostart : memref<4xf32>) on %s params [0]
    return
  }
}
