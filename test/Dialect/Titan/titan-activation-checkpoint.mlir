// TorchTitan v0.2.0's activation checkpointing policies
// (torchtitan/distributed/activation_checkpoint.py and the save list of
// torchtitan/models/llama3/infra/parallelize.py) on two Llama blocks, and
// what titan-autodiff recomputes for them.
//
// RUN: titan-opt %S/Inputs/two-blocks.mlir -titan-activation-checkpoint="mode=selective selective-option=op" | FileCheck %s --check-prefix=OP
// RUN: titan-opt %S/Inputs/two-blocks.mlir -titan-activation-checkpoint="mode=full" | FileCheck %s --check-prefix=FULL
// RUN: titan-opt %S/Inputs/two-blocks.mlir -titan-activation-checkpoint="mode=selective selective-option=2" | FileCheck %s --check-prefix=EVERY2
// RUN: titan-opt %S/Inputs/two-blocks.mlir -titan-activation-checkpoint="mode=none" | FileCheck %s --check-prefix=NONE
// RUN: titan-opt %S/Inputs/two-blocks.mlir -titan-activation-checkpoint="mode=full" -titan-autodiff | FileCheck %s --check-prefix=FULL-BWD
// RUN: titan-opt %S/Inputs/two-blocks.mlir -titan-activation-checkpoint="mode=selective selective-option=2" -titan-autodiff | FileCheck %s --check-prefix=EVERY2-BWD
// RUN: titan-opt %S/Inputs/two-blocks.mlir -titan-activation-checkpoint="mode=selective selective-option=op" -titan-autodiff | FileCheck %s --check-prefix=OP-BWD
// RUN: titan-opt %S/Inputs/two-blocks.mlir -titan-activation-checkpoint="mode=selective selective-option=op force-recompute-fqns=attention.wq" | FileCheck %s --check-prefix=FORCE
// RUN: not titan-opt %S/Inputs/two-blocks.mlir -titan-activation-checkpoint="mode=selective selective-option=op force-recompute-fqns=feed_forward" 2>&1 | FileCheck %s --check-prefix=FORCE-NOT-LINEAR
// RUN: not titan-opt %S/Inputs/two-blocks.mlir -titan-activation-checkpoint="mode=sometimes" 2>&1 | FileCheck %s --check-prefix=BAD-MODE
// RUN: not titan-opt %S/Inputs/two-blocks.mlir -titan-activation-checkpoint="mode=selective selective-option=0" 2>&1 | FileCheck %s --check-prefix=BAD-OPTION

// Per-op: every block is a region; its matmuls are counted in program order
// and the odd ones kept (wq, wv, w1, w2), the attention kept; norms, RoPE,
// reshapes, SwiGLU, residual adds and the other matmuls are recomputed.
// The embedding, final norm, output and loss are outside every block.
// OP:      titan.embedding
// OP-NOT:  titan.recompute_region
// OP:      titan.rms_norm %0, %arg8 {eps = {{.*}}, titan.recompute_region = 0 : i64}
// OP-NEXT: titan.linear %2, %arg1 {titan.recompute_region = 0 : i64, titan.save}
// OP-NEXT: titan.linear %2, %arg2 {titan.recompute_region = 0 : i64} :
// OP-NEXT: titan.linear %2, %arg3 {titan.recompute_region = 0 : i64, titan.save}
// OP:      titan.rope %6, %1 {titan.recompute_region = 0 : i64} :
// OP:      titan.attention %9, %10, %8 {scale = {{.*}}, titan.recompute_region = 0 : i64, titan.save}
// OP:      titan.linear %11, %arg4 {titan.recompute_region = 0 : i64} :
// OP-NEXT: titan.add %0, %12 {titan.recompute_region = 0 : i64} :
// OP:      titan.linear %14, %arg5 {titan.recompute_region = 0 : i64, titan.save}
// OP-NEXT: titan.linear %14, %arg7 {titan.recompute_region = 0 : i64} :
// OP-NEXT: titan.swiglu %15, %16 {titan.recompute_region = 0 : i64} :
// OP-NEXT: titan.linear %17, %arg6 {titan.recompute_region = 0 : i64, titan.save}
// OP:      titan.linear %20, %arg10 {titan.recompute_region = 1 : i64, titan.save}
// OP-NEXT: titan.linear %20, %arg11 {titan.recompute_region = 1 : i64} :
// OP:      titan.rms_norm %37, %arg19 {eps = 1.000000e-05 : f64} :
// OP-NEXT: titan.linear %38, %arg20 :

// Full: every op of every block is in its region, nothing is kept.
// FULL-NOT: titan.save
// FULL:     titan.linear %2, %arg1 {titan.recompute_region = 0 : i64} :
// FULL:     titan.attention {{.*}} {scale = {{.*}}, titan.recompute_region = 0 : i64} :
// FULL:     titan.linear %35, %arg15 {titan.recompute_region = 1 : i64} :
// FULL:     titan.rms_norm %37, %arg19 {eps = 1.000000e-05 : f64} :

// Every 2nd block: TorchTitan counts blocks from 1, so block 1 (0-based) is
// checkpointed fully and block 0 is not touched.
// EVERY2-NOT: titan.recompute_region = 0
// EVERY2:     titan.linear %20, %arg10 {titan.recompute_region = 1 : i64} :
// EVERY2-NOT: titan.save

// NONE-NOT: titan.recompute_region

// The backward of every-2nd-block: block 1 is recomputed from its input
// (%19), block 0's backward reads the forward's values.
// EVERY2-BWD-LABEL: func.func @forward_backward(
// EVERY2-BWD:       titan.rms_norm %19, %arg17 {eps = {{.*}}, titan.recomputed}
// EVERY2-BWD-NOT:   titan.rms_norm %0, %arg8 {eps = {{.*}}, titan.recomputed}
// EVERY2-BWD:       titan.rms_norm_grad %0, %arg8
// EVERY2-BWD:       return

// The backward of full AC: at each block's backward the block is computed
// again from its input (%0 for block 0, %19 for block 1) and the RoPE
// angles; the block's output (%19 = block 1's input) is kept, not
// recomputed; block 1 is recomputed before block 0; the gradient ops read
// the copies.
// FULL-BWD-LABEL: func.func @forward_backward(
// FULL-BWD:       titan.cross_entropy_grad
// FULL-BWD:       %[[N1:.*]] = titan.rms_norm %19, %arg17 {eps = {{.*}}, titan.recomputed}
// FULL-BWD-NEXT:  %[[Q1:.*]] = titan.linear %[[N1]], %arg10 {titan.recomputed}
// FULL-BWD:       titan.attention {{.*}}titan.recomputed
// FULL-BWD:       %[[H1:.*]] = titan.add %19, %{{.*}} {titan.recomputed}
// FULL-BWD:       titan.swiglu {{.*}}titan.recomputed
// FULL-BWD-NOT:   titan.add %31, %{{.*}} {titan.recomputed}
// FULL-BWD:       titan.swiglu_grad
// FULL-BWD:       titan.linear_grad_weight %{{.*}}, %[[N1]]
// FULL-BWD:       titan.rms_norm %0, %arg8 {eps = {{.*}}, titan.recomputed}
// FULL-BWD:       titan.embedding_grad
// FULL-BWD:       return

// The backward of per-op AC: kept results (wq, wv, attention, w1, w2) are
// read from the forward; wk, wo and w3 and the elementwise ops are
// recomputed; copies the backward does not read (the recomputed residual
// add of the attention is read by the ffn norm, the final add is an output)
// are not made.
// OP-BWD-LABEL: func.func @forward_backward(
// OP-BWD:       titan.cross_entropy_grad
// OP-BWD:       %[[N1:.*]] = titan.rms_norm %19, %arg17 {eps = {{.*}}, titan.recomputed}
// OP-BWD-NEXT:  titan.linear %[[N1]], %arg11 {titan.recomputed}
// OP-BWD-NOT:   titan.linear %[[N1]], %arg10 {titan.recomputed}
// OP-BWD-NOT:   titan.attention {{.*}}titan.recomputed
// OP-BWD:       titan.linear %{{.*}}, %arg13 {titan.recomputed}
// OP-BWD:       titan.linear %{{.*}}, %arg16 {titan.recomputed}
// OP-BWD-NEXT:  titan.swiglu %33, %{{.*}} {titan.recomputed}
// OP-BWD:       titan.attention_grad {{.*}}, %result_0, %lse_1,
// OP-BWD:       return

// per_op_sac_force_recompute_mm_shapes_by_fqns: wq's weight shape (32 x
// 32, which wo shares) is always recomputed and not counted: the count
// starts at wk (kept), wv (recomputed), w1 (kept), w3, w2 (kept).
// FORCE:      titan.linear %2, %arg1 {titan.recompute_region = 0 : i64} :
// FORCE-NEXT: titan.linear %2, %arg2 {titan.recompute_region = 0 : i64, titan.save}
// FORCE-NEXT: titan.linear %2, %arg3 {titan.recompute_region = 0 : i64} :
// FORCE:      titan.linear %11, %arg4 {titan.recompute_region = 0 : i64} :
// FORCE:      titan.linear %14, %arg5 {titan.recompute_region = 0 : i64, titan.save}
// FORCE-NEXT: titan.linear %14, %arg7 {titan.recompute_region = 0 : i64} :
// FORCE:      titan.linear %17, %arg6 {titan.recompute_region = 0 : i64, titan.save}
// FORCE-NOT-LINEAR: error: {{.*}}force-recompute-fqns names 'layers.0.feed_forward', which is not a linear layer

// BAD-MODE: error: {{.*}}titan-activation-checkpoint: mode 'sometimes' must be none, selective or full
// BAD-OPTION: error: {{.*}}titan-activation-checkpoint: selective-option '0' must be op or a positive integer N (every Nth block)
