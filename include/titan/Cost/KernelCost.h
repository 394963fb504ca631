//===- KernelCost.h - a kernel call's work and time -------------*- C++ -*-===//
//
// The work of one kernel.call (its FLOPs and the bytes it moves, from its
// buffer types and parameters: the call's catalog contract) and its time
// on a hardware description: GEMMs and attention by their efficiency
// curves, everything else by memory bandwidth, each plus the kernel's
// fixed overhead (a roofline with calibrated efficiencies).
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_COST_KERNELCOST_H
#define TITAN_COST_KERNELCOST_H

#include "titan/Cost/Hardware.h"
#include "titan/Dialect/Kernel/IR/Kernel.h"

namespace titan::cost {

/// The roofline class a kernel's time follows.
enum class WorkUnit { Gemm, AttentionForward, AttentionBackward, Memory };

llvm::StringRef stringifyWorkUnit(WorkUnit unit);

struct KernelWork {
  WorkUnit unit = WorkUnit::Memory;
  /// Multiply-adds x 2 (GEMMs, attention's two GEMMs; causal attention
  /// counts the half it computes), 0 for memory-bound kernels.
  double flops = 0;
  /// Bytes read and written (every input and output buffer once).
  double bytes = 0;
  /// The GEMM's input precision: FP8 (scaled_matmul), BF16 or F32.
  enum class Precision { F32, BF16, FP8 } precision = Precision::F32;
  /// Kernel launches (a generated row kernel with column sums runs a
  /// second pass for their totals), each paying the launch overhead.
  int launches = 1;
};

/// The work of `call` from its kernel's contract (titan/Kernel/
/// KernelCatalog.def): linear and its gradients, the collective matmuls
/// and scaled_matmul as GEMMs, attention and context attention (and their
/// gradients) as attention, the rest memory-bound.
KernelWork kernelWork(kernel::CallOp call);

/// The work of a generated kernel: memory-bound, every buffer once (its
/// fused intermediates never reach memory) but column sums' partials twice
/// (written by the kernel, read by its totals' pass, a second launch), and
/// one operation per body op and element.
KernelWork kernelWork(kernel::GenericOp generic);

/// The bytes of memref buffer `v` (a float8 or i8 element is 1 byte; 0 for
/// a dynamic shape).
double bufferBytes(mlir::Value v);

/// Seconds `work` takes on one device of `hw` when `ranksSharing` ranks
/// share its compute (hw.ranksShareCompute; 1 for GPUs).
double kernelSeconds(const KernelWork &work, const Hardware &hw,
                     int64_t ranksSharing = 1);

} // namespace titan::cost

#endif // TITAN_COST_KERNELCOST_H
