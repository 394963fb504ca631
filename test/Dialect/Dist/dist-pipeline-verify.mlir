// RUN: titan-opt %s -split-input-file -dist-pipeline-verify -verify-diagnostics

// A valid hand-written list passes.
module attributes {dist.mesh = #dist.mesh<pp = 2, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 1>,
                   dist.pipeline = {actions = [["0UNSHARD", "0F0", "0SEND_F0", "0RECV_B0", "0B0"], ["1RECV_F0", "1F0", "1I0", "1SEND_B0", "1W0"]], microbatches = 1 : i64, num_stages = 2 : i64, schedule = "1F1B", stage_ranks = array<i64: 0, 1>}} {
}

// -----

// The activation is never received.
// expected-error @+1 {{dist-pipeline-verify: pipeline rank 1: 1F0 has no RECV_F before it}}
module attributes {dist.mesh = #dist.mesh<pp = 2, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 1>,
                   dist.pipeline = {actions = [["0F0", "0SEND_F0", "0RECV_B0", "0B0"], ["1F0", "1B0", "1SEND_B0"]], microbatches = 1 : i64, num_stages = 2 : i64, schedule = "1F1B", stage_ranks = array<i64: 0, 1>}} {
}

// -----

// A send before the action that computes it.
// expected-error @+1 {{dist-pipeline-verify: pipeline rank 0: 0SEND_F0 comes before the action that computes what it sends}}
module attributes {dist.mesh = #dist.mesh<pp = 2, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 1>,
                   dist.pipeline = {actions = [["0SEND_F0", "0F0", "0RECV_B0", "0B0"], ["1RECV_F0", "1F0", "1B0", "1SEND_B0"]], microbatches = 1 : i64, num_stages = 2 : i64, schedule = "1F1B", stage_ranks = array<i64: 0, 1>}} {
}

// -----

// Rank 1 receives its two activations in the other order than rank 0
// sends them (NCCL would hang; MPI's tags would hide it).
// expected-error @+1 {{dist-pipeline-verify: pipeline ranks 0 and 1: the activations rank 0 sends do not match the ones rank 1 receives, in order, at transfer 1}}
module attributes {dist.mesh = #dist.mesh<pp = 2, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 1>,
                   dist.pipeline = {actions = [["0F0", "0SEND_F0", "0F1", "0SEND_F1", "0RECV_B0", "0B0", "0RECV_B1", "0B1"], ["1RECV_F1", "1F1", "1RECV_F0", "1F0", "1B0", "1SEND_B0", "1B1", "1SEND_B1"]], microbatches = 2 : i64, num_stages = 2 : i64, schedule = "1F1B", stage_ranks = array<i64: 0, 1>}} {
}

// -----

// A weight gradient before its input gradient can never run.
// expected-error @+1 {{dist-pipeline-verify: the schedule deadlocks: every rank waits for an input that comes later in some rank's list (rank 0 at 0B0, rank 1 at 1W0)}}
module attributes {dist.mesh = #dist.mesh<pp = 2, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 1>,
                   dist.pipeline = {actions = [["0F0", "0SEND_F0", "0RECV_B0", "0B0"], ["1RECV_F0", "1F0", "1W0", "1I0", "1SEND_B0"]], microbatches = 1 : i64, num_stages = 2 : i64, schedule = "1F1B", stage_ranks = array<i64: 0, 1>}} {
}

// -----

// An action of another rank's stage.
// expected-error @+1 {{dist-pipeline-verify: pipeline rank 0 runs 1F0, which is not an action of one of its stages}}
module attributes {dist.mesh = #dist.mesh<pp = 2, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 1>,
                   dist.pipeline = {actions = [["1F0"], []], microbatches = 1 : i64, num_stages = 2 : i64, schedule = "1F1B", stage_ranks = array<i64: 0, 1>}} {
}

// -----

// UNSHARD after the stage's first action.
// expected-error @+1 {{dist-pipeline-verify: pipeline rank 0: 0UNSHARD must come once, before the stage's other actions}}
module attributes {dist.mesh = #dist.mesh<pp = 2, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 1>,
                   dist.pipeline = {actions = [["0F0", "0UNSHARD", "0SEND_F0", "0RECV_B0", "0B0"], ["1RECV_F0", "1F0", "1B0", "1SEND_B0"]], microbatches = 1 : i64, num_stages = 2 : i64, schedule = "1F1B", stage_ranks = array<i64: 0, 1>}} {
}

// -----

// A backward after the stage's REDUCE_GRAD would miss the reduction.
// expected-error @+1 {{dist-pipeline-verify: pipeline rank 1: 1REDUCE_GRAD must come once, after the stage's last backward}}
module attributes {dist.mesh = #dist.mesh<pp = 2, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 1>,
                   dist.pipeline = {actions = [["0F0", "0SEND_F0", "0RECV_B0", "0B0", "0REDUCE_GRAD"], ["1RECV_F0", "1F0", "1I0", "1SEND_B0", "1REDUCE_GRAD", "1W0"]], microbatches = 1 : i64, num_stages = 2 : i64, schedule = "1F1B", stage_ranks = array<i64: 0, 1>}} {
}
