//===- KernelInterface.td - an op's kernel contract --------*- tablegen -*-===//
//
// What a target needs to run an op as one library kernel, stated once on the
// op: the kernel's name, its typed parameters and which operands it may
// overwrite with a result. titan-bufferize builds the target-neutral kernel
// IR from this contract and the chosen target's workspace rules; the target
// backends (lib/Target/) implement the kernels.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DIALECT_TITAN_IR_KERNELINTERFACE_TD
#define TITAN_DIALECT_TITAN_IR_KERNELINTERFACE_TD

include "mlir/IR/OpBase.td"

def Titan_KernelOpInterface : OpInterface<"KernelOpInterface"> {
  let cppNamespace = "::titan";
  let description = [{
    An op that executes as one kernel call on buffers: its operands are read,
    its results written (on a stream, which a target may ignore). The
    contract:

    * `getKernelName()`: the kernel, `<name>_<dtype>` in each target's
      library (the op's mnemonic unless it says otherwise);
    * `getKernelParams()`: the kernel's scalar parameters in order, as typed
      attributes (`i64` integers, `f64` floats), computed at compile time;
    * `getInPlaceOperand(result)`: an operand whose buffer the result may
      reuse when that operand is not used afterwards (the kernel supports
      the aliasing: its entry in titan/Contract/KernelCatalog.def says so),
      or std::nullopt.
  }];
  let methods = [
    InterfaceMethod<"The kernel's name in the targets' libraries.",
      "::llvm::StringRef", "getKernelName", (ins), [{}], [{
        return $_op->getName().stripDialect();
      }]>,
    InterfaceMethod<"The kernel's scalar parameters, in ABI order.",
      "::mlir::ArrayAttr", "getKernelParams", (ins), [{}], [{
        return ::mlir::ArrayAttr::get($_op->getContext(), {});
      }]>,
    InterfaceMethod<"The operand whose buffer result `result` may reuse.",
      "std::optional<unsigned>", "getInPlaceOperand",
      (ins "unsigned":$result), [{}], [{
        return ::titan::catalog::inPlaceInput($_op.getKernelName(), result);
      }]>,
  ];
}

/// The scratch memory an op's kernel needs while it runs (planned like any
/// other buffer, alive only during the call). Targets implement a kernel
/// differently (one materializes an attention head's scores, another calls
/// a library with scratch of its own), so the answer depends on the target,
/// named by the caller. The dialects know no target: the target backends
/// (lib/Target/) attach a model to the ops they have rules for, the way
/// upstream MLIR attaches bufferization models, and that model answers with
/// the named target's rule. An op without the interface, or a target
/// without a rule for it, needs no workspace (titan::getWorkspaceBytes).
def Titan_WorkspaceOpInterface : OpInterface<"WorkspaceOpInterface"> {
  let cppNamespace = "::titan";
  let description = [{
    The workspace an op's kernel needs on a target: `getWorkspaceBytes(t)`
    is the bytes of scratch memory target `t`'s kernel for the op uses
    during the call (0: none).
  }];
  let methods = [
    InterfaceMethod<"Bytes of scratch memory `target`'s kernel needs.",
      "int64_t", "getWorkspaceBytes", (ins "::llvm::StringRef":$target)>,
  ];
}

/// The op's result is its first operand's buffer seen with another type
/// (same bytes): no kernel runs (titan.reshape, dist.replicate).
def Titan_BufferView : NativeOpTrait<"BufferView"> {
  let cppNamespace = "::titan::OpTrait";
}

/// A GEMM that accumulates in f32 and rounds its sum once to the result's
/// element type, which may be f32 for 16-bit or float8 operands (cuBLASLt's
/// and oneDNN's D type): titan-widen-gemm-results folds a widening cast of
/// its result into it.
def Titan_WidenableResult : NativeOpTrait<"WidenableResult"> {
  let cppNamespace = "::titan::OpTrait";
}

#endif // TITAN_DIALECT_TITAN_IR_KERNELINTERFACE_TD
