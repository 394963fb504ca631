//===- Passes.td - the pipeline schedule's passes ----------*- tablegen -*-===//
//
// The passes that write and check a pipeline schedule's action lists in the
// IR. They live beside the schedules (lib/Pipeline) rather than with the
// other dist passes, which know no schedule.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_PIPELINE_TRANSFORMS_PASSES_TD
#define TITAN_PIPELINE_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def DistPipelineSchedule : Pass<"dist-pipeline-schedule", "::mlir::ModuleOp"> {
  let summary = "Write every pipeline rank's action list into the IR";
  let description = [{
    Builds the action lists of the module's pipeline (`dist.pipeline`:
    its stages and their ranks, the schedule's name) for `microbatches`
    microbatches: GPipe, 1F1B, Interleaved1F1B, LoopedBFS,
    InterleavedZeroBubble, ZBVZeroBubble or DualPipeV
    (lib/Pipeline/Schedule.cpp), or the file `csv` in TorchTitan's format.
    Each rank's list gets the transfers it implies in TorchTitan's lowered
    notation (`RECV_F` before a forward whose previous stage is on another
    rank, `SEND_F` after one whose next stage is; `RECV_B` and `SEND_B`
    around each B or I), is checked as `dist-pipeline-verify` checks it,
    and is stored in `dist.pipeline` as `actions` (one array of strings per
    pipeline rank, e.g. `["0F0", "0SEND_F0", ...]`) with `microbatches`.
    The runtime executes the rank's list. Errors name the config keys of
    settings that cannot run.
  }];
  let options = [
    Option<"microbatches", "microbatches", "int64_t", "1",
           "Microbatches per step (training.local_batch_size / "
           "parallelism.pipeline_parallel_microbatch_size)">,
    Option<"csv", "csv", "std::string", "\"\"",
           "parallelism.pipeline_parallel_schedule_csv: run this file's "
           "actions instead of the named schedule's">,
  ];
}

def DistPipelineVerify : Pass<"dist-pipeline-verify", "::mlir::ModuleOp"> {
  let summary = "Check the pipeline action lists of a module";
  let description = [{
    Checks `dist.pipeline`'s `actions`: each is an action of one of its
    rank's stages (`<stage><F|B|I|W|SEND_F|RECV_F|SEND_B|RECV_B><mb>`);
    every microbatch of every stage has one F and one B or one I and one W,
    F before I or B, I before W; an action that needs a remote tensor has
    its RECV before it, a tensor a remote stage reads has its SEND after
    the action computing it, each SEND its RECV on the peer's rank in the
    same order between each pair of ranks; and the list simulates to the
    end (no rank waits on an action that comes later in some rank's list).
    A rank blocks only at its receives, each after its peer's matching
    send follows an action that can run, so a list that passes cannot
    deadlock.
  }];
}

#endif // TITAN_PIPELINE_TRANSFORMS_PASSES_TD
