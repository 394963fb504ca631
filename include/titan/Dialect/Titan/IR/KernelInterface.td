//===- KernelInterface.td - an op's kernel contract --------*- tablegen -*-===//
//
// What a target needs to run an op as one library kernel, stated once on the
// op: the kernel's name, its typed parameters and which operands it may
// overwrite with a result. titan-bufferize builds the target-neutral kernel
// IR from this contract and the chosen target's workspace rules; the CPU and
// the CUDA targets implement the kernels.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DIALECT_TITAN_IR_KERNELINTERFACE_TD
#define TITAN_DIALECT_TITAN_IR_KERNELINTERFACE_TD

include "mlir/IR/OpBase.td"

def Titan_KernelOpInterface : OpInterface<"KernelOpInterface"> {
  let cppNamespace = "::titan";
  let description = [{
    An op that executes as one kernel call on buffers: its operands are read,
    its results written (on a stream the CPU target ignores). The contract:

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

/// A target's workspace rule: the scratch memory its kernel for the op needs
/// while it runs (planned like any other buffer, alive only during the
/// call). Targets implement a kernel differently (the CPU materializes one
/// attention head's scores, cuBLASLt and cuDNN have scratch of their own),
/// so each target has its own interface, attached as external models by the
/// target (lib/Target/<T>/), the way upstream MLIR attaches bufferization
/// models; the dialects know no target's rules. An op without the chosen
/// target's model needs no workspace there (titan::getWorkspaceBytes).
class Titan_WorkspaceOpInterface<string target>
    : OpInterface<target # "WorkspaceOpInterface"> {
  let cppNamespace = "::titan";
  let description = "The " # target # " target's workspace rule for the op.";
  let methods = [
    InterfaceMethod<"Bytes of scratch memory the target's kernel needs.",
      "int64_t", "getWorkspaceBytes", (ins)>,
  ];
}
def Titan_CPUWorkspaceOpInterface : Titan_WorkspaceOpInterface<"CPU">;
def Titan_CUDAWorkspaceOpInterface : Titan_WorkspaceOpInterface<"CUDA">;

/// The op's result is its first operand's buffer seen with another type
/// (same bytes): no kernel runs (titan.reshape, dist.replicate).
def Titan_BufferView : NativeOpTrait<"BufferView"> {
  let cppNamespace = "::titan::OpTrait";
}

#endif // TITAN_DIALECT_TITAN_IR_KERNELINTERFACE_TD
