//===- KernelDialect.td - the kernel dialect ---------------*- tablegen -*-===//
//
// titan's target-neutral kernel IR: bufferized training steps as library
// kernel calls on planned buffers.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DIALECT_KERNEL_IR_KERNELDIALECT_TD
#define TITAN_DIALECT_KERNEL_IR_KERNELDIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def Kernel_Dialect : Dialect {
  let name = "kernel";
  let cppNamespace = "::titan::kernel";
  let summary = "Bufferized steps: kernel calls on planned buffers";
  let description = [{
    A training step after bufferization: a `func.func` whose arguments are
    the step's long-lived state, one memref per *slot* (`kernel.slot =
    "param:<name>"`, `"grad:<name>"`, `"exp_avg:<name>"`,
    `"exp_avg_sq:<name>"`, `"input:<name>"`, `"output:<name>"`), and whose
    body is a straight line of kernel calls, collectives and copies on
    buffers from `kernel.alloc` and views of them. It returns nothing: every
    result is written into its slot.

    `kernel-plan-memory` gives every buffer an offset in one arena per rank
    (`kernel.alloc {offset = ...}`, module attributes `kernel.arena_bytes`
    and `kernel.slots`); the CPU target lowers the planned IR to calls into
    libtitanrt, and the CUDA target will lower the same IR to its kernels.
  }];
  // kernel.generic's bodies.
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect"];
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
  let hasRegionArgAttrVerify = 1;
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    /// Argument attribute: the state slot a step argument lives in.
    static constexpr ::llvm::StringLiteral kSlotAttrName = "kernel.slot";
    /// Module attributes set by kernel-plan-memory: the arena's size and
    /// each slot's {offset, bytes}.
    static constexpr ::llvm::StringLiteral kArenaBytesAttrName =
        "kernel.arena_bytes";
    static constexpr ::llvm::StringLiteral kSlotsAttrName = "kernel.slots";
    /// Module attribute set by kernel-plan-memory under pipeline
    /// parallelism: each frame slot's {offset, bytes} inside its stage's
    /// microbatch frame (slots "frame<stage>:..."), which the runtime
    /// allocates once per microbatch in flight.
    static constexpr ::llvm::StringLiteral kFrameSlotsAttrName =
        "kernel.frame_slots";
    /// On a kernel.call "add": keep it a separate kernel (rounded as such)
    /// rather than fold it into the GEMM producing an operand. Set on the
    /// adds of recompute regions, whose operands die early only because
    /// of activation checkpointing: folding them would change the step's
    /// rounding with the checkpointing mode.
    static constexpr ::llvm::StringLiteral kSeparateRoundingAttrName =
        "kernel.separate_rounding";
    /// training.enable_cpu_offload on a GPU (kernel-offload-state). On a
    /// func.func: the step runs on the host (its kernels are the host's,
    /// its generated kernels host loops, its copies synchronous); set by
    /// titan-bufferize's host-steps. On the module, set by
    /// kernel-plan-memory: the host arena's size and each host slot's
    /// {offset, bytes} in it.
    static constexpr ::llvm::StringLiteral kHostStepAttrName =
        "kernel.host_step";
    static constexpr ::llvm::StringLiteral kHostArenaBytesAttrName =
        "kernel.host_arena_bytes";
    static constexpr ::llvm::StringLiteral kHostSlotsAttrName =
        "kernel.host_slots";
    /// Every planned offset and the arena size are multiples of this (the
    /// alignment of cudaMalloc; enough for any vector load on the CPU).
    static constexpr int64_t kAlignment = 256;
  }];
}

class Kernel_Op<string mnemonic, list<Trait> traits = []>
    : Op<Kernel_Dialect, mnemonic, traits>;

#endif // TITAN_DIALECT_KERNEL_IR_KERNELDIALECT_TD
