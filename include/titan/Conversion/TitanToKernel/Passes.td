//===- Passes.td - titan -> kernel IR ----------------------*- tablegen -*-===//

#ifndef TITAN_CONVERSION_TITANTOKERNEL_PASSES_TD
#define TITAN_CONVERSION_TITANTOKERNEL_PASSES_TD

include "mlir/Pass/PassBase.td"

def TitanBufferize : Pass<"titan-bufferize", "::mlir::ModuleOp"> {
  let summary = "Bufferize the training steps into the kernel IR";
  let description = [{
    Rewrites each step function (`functions`, default `forward_backward` and
    `optimizer_step`) of value-semantic titan and dist ops into the kernel
    dialect: one `kernel.call` per op with a `KernelOpInterface` (its
    contract gives the kernel, the typed parameters, the workspace and the
    in-place operands), `kernel.collective_start`/`kernel.wait` per dist
    collective, `kernel.view` for ops with the `BufferView` trait.

    Arguments and results become *slots*, the step's long-lived state
    (`kernel.slot = "param:<name>"`, ...: titan/Dialect/Titan/IR/
    Parameters.h), one memref argument per slot; a slot both read and
    written (a parameter updated by AdamW) is one argument. Every other
    value gets a `kernel.alloc`, except where it can be written where it is
    wanted, with no copy:

    * a result reuses its in-place operand's buffer when nothing reads that
      buffer afterwards (AdamW's parameter and moments, elementwise ops); an
      argument's buffer only for the result returned into the same slot;
    * a value returned into a slot is computed in the slot (a collective's
      output too) when nothing reads that slot's old value afterwards.

    `target` names the registered target backend (titan/Target/
    TargetBackend.h: `cpu`, `cuda`, or another one) whose workspace rules
    apply: each op's WorkspaceOpInterface answers for it (the models the
    backends attach; an unknown target is an error that lists the
    registered ones). With `widen-low-precision` (a target whose dtype
    policy runs 16-bit kernels on f32 copies: the CPU), a kernel call on
    bf16 or f16 buffers also gets f32 copies of them in its workspace (each
    rounded up to 64 bytes, inputs then results, before the kernel's own
    workspace), so that the memory plan holds everything the target uses.

    `deterministic` (`debug.deterministic`) marks every
    `titan.attention_grad` and `dist.context_attention_grad` `deterministic`
    first: their kernels then run the algorithm whose gradients are the
    same bits on every run (on CUDA, cuDNN's deterministic backward and its
    larger workspace). Without it, ops keep what they say.

    `host-steps` names steps that run on the host
    (`training.enable_cpu_offload` on a GPU: `optimizer_step`, which
    TorchTitan's CPUOffloadPolicy runs on the CPU): each is marked
    `kernel.host_step` and planned with `host-target`'s workspace rules and
    widened 16-bit copies (its kernels are that target's, which widen);
    `kernel-offload-state` then places their buffers.

    Other functions (the forward, which `forward_backward` contains) are
    removed: the kernel IR module holds the steps only.

    Only what cannot be placed so is copied into its slot at the end
    (`kernel.copy`). Allocations are classified for the memory plan:
    `activation` (a forward value still used after the loss is computed),
    `temporary`, `collective`, `workspace`.
  }];
  let options = [
    ListOption<"functions", "functions", "std::string",
               "The step functions to bufferize">,
    Option<"target", "target", "std::string", "\"cpu\"",
           "The target backend whose kernel workspaces are planned">,
    Option<"widenLowPrecision", "widen-low-precision", "bool", "false",
           "Plan f32 copies of the bf16/f16 buffers of each kernel call in "
           "its workspace (for a target that runs 16-bit kernels as f32 "
           "kernels on widened copies)">,
    ListOption<"hostSteps", "host-steps", "std::string",
               "Step functions that run on the host (marked "
               "kernel.host_step; their workspaces are host-target's, with "
               "widened 16-bit copies)">,
    Option<"hostTarget", "host-target", "std::string", "\"cpu\"",
           "The target backend whose kernels run the host steps">,
    Option<"deterministic", "deterministic", "bool", "false",
           "The attention gradients run their deterministic kernels "
           "(debug.deterministic)">,
  ];
  // The titan dialect's ops carry the targets' workspace models.
  let dependentDialects = ["::titan::kernel::KernelDialect",
                           "::titan::TitanDialect"];
}

#endif // TITAN_CONVERSION_TITANTOKERNEL_PASSES_TD
