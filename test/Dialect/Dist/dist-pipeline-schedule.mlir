// RUN: titan-opt %s -split-input-file -dist-pipeline-schedule="microbatches=2" -dist-pipeline-verify -verify-diagnostics | FileCheck %s

// 1F1B on 2 ranks, 2 microbatches: rank 0 warms up with one forward; each
// stage's UNSHARD (its per-step gathers) comes first and its REDUCE_GRAD
// (its per-step gradient reduce-scatters) after its last backward; the
// transfers
// TorchTitan's lowered schedules list come with each action (RECV before
// the action that needs a remote tensor, SEND after the one computing it).
// CHECK-LABEL: module attributes
// CHECK-SAME: dist.pipeline = {actions = {{\[}}["0UNSHARD", "0F0", "0SEND_F0", "0F1", "0SEND_F1", "0RECV_B0", "0B0", "0RECV_B1", "0B1", "0REDUCE_GRAD"], ["1UNSHARD", "1RECV_F0", "1F0", "1B0", "1SEND_B0", "1RECV_F1", "1F1", "1B1", "1SEND_B1", "1REDUCE_GRAD"]], microbatches = 2 : i64, num_stages = 2 : i64, schedule = "1F1B", stage_ranks = array<i64: 0, 1>}
module attributes {dist.mesh = #dist.mesh<pp = 2, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 1>,
                   dist.pipeline = {num_stages = 2 : i64, schedule = "1F1B", stage_ranks = array<i64: 0, 1>}} {
}

// -----

// ZBVZeroBubble on 2 ranks: the V puts stages 1 and 2 on rank 1, so the
// activations and gradients between them need no transfer.
// CHECK-LABEL: module attributes
// CHECK-SAME: ["1UNSHARD", "2UNSHARD", "1RECV_F0", "1F0", "2F0", "2SEND_F0", "1RECV_F1", "1F1", "2F1", "2SEND_F1", "2RECV_B0", "2I0", "2W0", "1I0", "1SEND_B0", "1W0", "2RECV_B1", "2I1", "2W1", "2REDUCE_GRAD", "1I1", "1SEND_B1", "1W1", "1REDUCE_GRAD"]
module attributes {dist.mesh = #dist.mesh<pp = 2, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 1>,
                   dist.pipeline = {num_stages = 4 : i64, schedule = "ZBVZeroBubble", stage_ranks = array<i64: 0, 1, 1, 0>}} {
}

// -----

// Interleaved1F1B needs whole groups of p microbatches.
// expected-error @+1 {{dist-pipeline-schedule: parallelism.pipeline_parallel_schedule 'Interleaved1F1B' sends microbatches through the stages in groups of the pipeline degree: 2 microbatches}}
module attributes {dist.mesh = #dist.mesh<pp = 4, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 1>,
                   dist.pipeline = {num_stages = 8 : i64, schedule = "Interleaved1F1B", stage_ranks = array<i64: 0, 1, 2, 3, 0, 1, 2, 3>}} {
}

// -----

// expected-error @+1 {{dist-pipeline-schedule: the module has no dist.pipeline (run dist-pipeline-split first)}}
module attributes {dist.mesh = #dist.mesh<pp = 2, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 1>} {
}
