// RUN: titan-opt %s -kernel-offload-state | FileCheck %s
// RUN: titan-opt %s -kernel-offload-state -kernel-plan-memory | FileCheck %s --check-prefix=PLAN

// training.enable_cpu_offload (FSDP2's CPUOffloadPolicy): the shards of
// parameters w and v, their gradients and w's moment live in host memory.
// The device step copies each shard in on the copy stream (stream 64),
// started one reader ahead (v's right after the cast that read w's) and
// waited for right before its reader; each reduce-scattered gradient goes
// back after its wait, waited for before the next write-back starts (the
// last before the step returns). A collective's output is written whole:
// nothing to copy in.

// CHECK-LABEL: func.func @forward_backward(
// CHECK-SAME: %[[W:.*]]: memref<64xf32, #kernel.memory_space<host>> {kernel.slot = "param:w"}
// CHECK-SAME: %[[V:.*]]: memref<64xf32, #kernel.memory_space<host>> {kernel.slot = "param:v"}
// CHECK-SAME: %[[G:.*]]: memref<64xf32, #kernel.memory_space<host>> {kernel.slot = "grad:w"}
// CHECK-SAME: %[[GV:.*]]: memref<64xf32, #kernel.memory_space<host>> {kernel.slot = "grad:v"}
// CHECK-SAME: %[[X:.*]]: memref<128xf32> {kernel.slot = "input:x"}
// CHECK: %[[COPIES:.*]] = kernel.stream 64
// CHECK: %[[WD:.*]] = kernel.alloc staging : memref<64xf32>
// CHECK-NEXT: %[[RW:.*]] = kernel.copy_start %[[W]], %[[WD]] on %[[COPIES]] : memref<64xf32, #kernel.memory_space<host>>, memref<64xf32> -> !kernel.request
// CHECK: kernel.wait %[[RW]] on %[[COPIES]]
// CHECK-NEXT: kernel.generic ins(%[[WD]] : memref<64xf32>)
// CHECK: kernel.yield
// CHECK-NEXT: }
// CHECK-NEXT: %[[VD:.*]] = kernel.alloc staging : memref<64xf32>
// CHECK-NEXT: %[[RV:.*]] = kernel.copy_start %[[V]], %[[VD]] on %[[COPIES]]
// CHECK: kernel.collective_start "all_gather_start"
// CHECK: kernel.wait %[[RV]] on %[[COPIES]]
// CHECK-NEXT: kernel.generic ins(%[[VD]] : memref<64xf32>)
// CHECK: %[[GD:.*]] = kernel.alloc staging : memref<64xf32>
// CHECK-NOT: kernel.copy
// CHECK: kernel.collective_start "reduce_scatter_start"({{.*}}) outs(%[[GD]] : memref<64xf32>)
// CHECK-NEXT: kernel.wait
// CHECK-NEXT: %[[BW:.*]] = kernel.copy_start %[[GD]], %[[G]] on %[[COPIES]] : memref<64xf32>, memref<64xf32, #kernel.memory_space<host>>
// CHECK: kernel.collective_start "reduce_scatter_start"
// CHECK-NEXT: kernel.wait
// CHECK-NEXT: kernel.wait %[[BW]] on %[[COPIES]]
// CHECK-NEXT: %[[BV:.*]] = kernel.copy_start %{{.*}}, %[[GV]] on %[[COPIES]]
// CHECK-NEXT: kernel.wait %[[BV]] on %[[COPIES]]
// CHECK-NEXT: return
func.func @forward_backward(%w: memref<64xf32> {kernel.slot = "param:w"},
                            %v: memref<64xf32> {kernel.slot = "param:v"},
                            %g: memref<64xf32> {kernel.slot = "grad:w"},
                            %gv: memref<64xf32> {kernel.slot = "grad:v"},
                            %x: memref<128xf32> {kernel.slot = "input:x"}) {
  %s = kernel.stream 0
  %c = kernel.stream 5
  %bf = kernel.alloc copy : memref<64xbf16>
  kernel.generic ins(%w : memref<64xf32>) outs(%bf : memref<64xbf16>) on %s {
  ^bb0(%a: f32):
    %t = arith.truncf %a : f32 to bf16
    kernel.yield %t : bf16
  }
  %full = kernel.alloc collective : memref<128xbf16>
  %r = kernel.collective_start "all_gather_start"(%bf : memref<64xbf16>) outs(%full : memref<128xbf16>) on %c params [0, 0, 4] -> !kernel.request
  kernel.wait %r on %c
  %gfull = kernel.alloc temporary : memref<128xf32>
  kernel.generic ins(%full, %x : memref<128xbf16>, memref<128xf32>) outs(%gfull : memref<128xf32>) on %s {
  ^bb0(%a: bf16, %b: f32):
    %e = arith.extf %a : bf16 to f32
    %m = arith.mulf %e, %b : f32
    kernel.yield %m : f32
  }
  %bv = kernel.alloc copy : memref<64xbf16>
  kernel.generic ins(%v : memref<64xf32>) outs(%bv : memref<64xbf16>) on %s {
  ^bb0(%a: f32):
    %t = arith.truncf %a : f32 to bf16
    kernel.yield %t : bf16
  }
  %r2 = kernel.collective_start "reduce_scatter_start"(%gfull : memref<128xf32>) outs(%g : memref<64xf32>) on %c params [0, 0, 4] -> !kernel.request
  kernel.wait %r2 on %c
  %r3 = kernel.collective_start "reduce_scatter_start"(%gfull : memref<128xf32>) outs(%gv : memref<64xf32>) on %c params [0, 0, 4] -> !kernel.request
  kernel.wait %r3 on %c
  return
}

// The host step: the norm's square written whole into a host buffer (no
// copy in) and copied to a device one for the all-reduce (which keeps its
// device buffers), the sum copied back after the wait; the library call's workspace and the update on the host;
// the device-side output slot staged through a host buffer.
// CHECK-LABEL: func.func @optimizer_step(
// CHECK-SAME: %[[W:.*]]: memref<64xf32, #kernel.memory_space<host>> {kernel.slot = "param:w"}
// CHECK-SAME: %[[G:.*]]: memref<64xf32, #kernel.memory_space<host>> {kernel.slot = "grad:w"}
// CHECK-SAME: %[[M:.*]]: memref<64xf32, #kernel.memory_space<host>> {kernel.slot = "exp_avg:w"}
// CHECK-SAME: %[[N:.*]]: memref<f32> {kernel.slot = "output:grad_norm"}
// CHECK-SAME: attributes {kernel.host_step}
// CHECK: %[[SQ:.*]] = kernel.alloc temporary : memref<f32>
// CHECK: %[[WS:.*]] = kernel.alloc workspace : memref<64xi8, #kernel.memory_space<host>>
// CHECK: %[[SQH:.*]] = kernel.alloc staging : memref<f32, #kernel.memory_space<host>>
// CHECK-NEXT: kernel.call "global_norm"(%[[G]] : memref<64xf32, #kernel.memory_space<host>>) outs(%[[SQH]] : memref<f32, #kernel.memory_space<host>>) workspace(%[[WS]] : memref<64xi8, #kernel.memory_space<host>>)
// CHECK-NEXT: kernel.copy %[[SQH]], %[[SQ]]
// CHECK: %[[SUM:.*]] = kernel.alloc collective : memref<f32>
// CHECK-NEXT: kernel.collective_start "all_reduce_start"(%[[SQ]] : memref<f32>) outs(%[[SUM]] : memref<f32>)
// CHECK-NEXT: kernel.wait
// CHECK-NEXT: %[[SUMH:.*]] = kernel.alloc staging : memref<f32, #kernel.memory_space<host>>
// CHECK-NEXT: kernel.copy %[[SUM]], %[[SUMH]]
// CHECK-NEXT: %[[NH:.*]] = kernel.alloc staging : memref<f32, #kernel.memory_space<host>>
// CHECK-NEXT: kernel.generic ins(%[[SUMH]] : memref<f32, #kernel.memory_space<host>>) outs(%[[NH]] : memref<f32, #kernel.memory_space<host>>)
// CHECK: kernel.copy %[[NH]], %[[N]]
// CHECK: %[[NH2:.*]] = kernel.alloc staging : memref<f32, #kernel.memory_space<host>>
// CHECK-NEXT: kernel.copy %[[N]], %[[NH2]]
// CHECK-NEXT: kernel.generic ins(%[[W]], %[[G]], %[[M]], %[[NH2]] : {{.*}}) outs(%[[W]], %[[M]] : memref<64xf32, #kernel.memory_space<host>>, memref<64xf32, #kernel.memory_space<host>>)
func.func @optimizer_step(%w: memref<64xf32> {kernel.slot = "param:w"},
                          %g: memref<64xf32> {kernel.slot = "grad:w"},
                          %m: memref<64xf32> {kernel.slot = "exp_avg:w"},
                          %norm: memref<f32> {kernel.slot = "output:grad_norm"})
    attributes {kernel.host_step} {
  %s = kernel.stream 0
  %c = kernel.stream 5
  %sq = kernel.alloc temporary : memref<f32>
  %ws = kernel.alloc workspace : memref<64xi8>
  kernel.call "global_norm"(%g : memref<64xf32>) outs(%sq : memref<f32>) workspace(%ws : memref<64xi8>) on %s params [1]
  %sum = kernel.alloc collective : memref<f32>
  %r = kernel.collective_start "all_reduce_start"(%sq : memref<f32>) outs(%sum : memref<f32>) on %c params [0, 0, 4] -> !kernel.request
  kernel.wait %r on %c
  kernel.generic ins(%sum : memref<f32>) outs(%norm : memref<f32>) on %s {
  ^bb0(%a: f32):
    %q = math.sqrt %a : f32
    kernel.yield %q : f32
  }
  kernel.generic ins(%w, %g, %m, %norm : memref<64xf32>, memref<64xf32>, memref<64xf32>, memref<f32>) outs(%w, %m : memref<64xf32>, memref<64xf32>) on %s {
  ^bb0(%p: f32, %d: f32, %a: f32, %n: f32):
    %q = arith.divf %d, %n : f32
    %u = arith.subf %p, %q : f32
    %v = arith.addf %a, %q : f32
    kernel.yield %u, %v : f32, f32
  }
  return
}

// The plan: the offloaded slots in the host arena, the device's slots and
// buffers in its own; the steps' host buffers (the norm's staging, the
// workspace) above the host slots.
// PLAN: module attributes {kernel.arena_bytes = {{[0-9]+}} : i64, kernel.host_arena_bytes = {{[0-9]+}} : i64, kernel.host_slots = {"exp_avg:w" = array<i64: 1024, 256>, "grad:v" = array<i64: 768, 256>, "grad:w" = array<i64: 512, 256>, "param:v" = array<i64: 256, 256>, "param:w" = array<i64: 0, 256>}, kernel.slots = {"input:x" = array<i64: 0, 512>, "output:grad_norm" = array<i64: 512, 4>}}
// PLAN-LABEL: func.func @forward_backward(
// PLAN: kernel.alloc staging {offset = {{[0-9]+}} : i64} : memref<64xf32>
// PLAN-LABEL: func.func @optimizer_step(
// PLAN: kernel.alloc workspace {offset = {{[0-9]+}} : i64} : memref<64xi8, #kernel.memory_space<host>>
