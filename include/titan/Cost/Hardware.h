//===- Hardware.h - the machines the cost model predicts for ----*- C++ -*-===//
//
// A hardware description: one device's compute and memory rates with the
// fractions of them kernels reach (calibrated from measurements), and the
// network between devices (an NVLink-style domain of devicesPerNode, and
// per-device links between nodes). titan ships descriptions for H100 SXM
// (80 GB, 700 W; and TorchTitan's 96 GB / 500 W benchmark machines), H200,
// B200, A100 and the CPU build machine; a TOML file with the same keys
// describes any other (`--hardware FILE`).
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_COST_HARDWARE_H
#define TITAN_COST_HARDWARE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <string>

namespace titan::cost {

struct Hardware {
  /// The name --gpu takes ("h100", "h100-96gb", "h200", "b200", "a100",
  /// "cpu") and a line saying what it is and where its numbers come from.
  std::string name, description;

  /// Dense peak rates of one device, FLOP/s, by the GEMM's input type.
  double peakFlopsBF16 = 0, peakFlopsFP8 = 0, peakFlopsF32 = 0;
  /// A GEMM of W FLOPs runs at peak x gemmEfficiency x W / (W +
  /// gemmHalfFlops): large GEMMs reach gemmEfficiency of peak, small ones
  /// are latency-bound (the curve is fitted to measured GEMMs).
  double gemmEfficiency = 0.75, gemmHalfFlops = 0;
  /// Fused attention's fraction of peak, forward and backward.
  double attentionForwardEfficiency = 0.5, attentionBackwardEfficiency = 0.4;

  /// Device memory: capacity (bytes) and bandwidth (bytes/s), and the
  /// fraction of the bandwidth memory-bound kernels reach.
  double memoryBytes = 0, memoryBytesPerSecond = 0, memoryEfficiency = 0.8;
  /// The fixed cost of one kernel (launch and tail), seconds.
  double kernelOverheadSeconds = 0;

  /// Devices per node: the NVLink domain (GPUs) or the ranks sharing one
  /// host (CPU).
  int64_t devicesPerNode = 8;
  /// Inside a node: NCCL's bus bandwidth of a ring over all its devices
  /// (bytes/s) and the latency of one ring step (s).
  double intraNodeBusBytesPerSecond = 0, intraNodeLatencySeconds = 0;
  /// Between nodes: each device's network link (bytes/s) and the latency
  /// of one step that crosses it (s).
  double interNodeBytesPerSecond = 0, interNodeLatencySeconds = 0;

  /// The host side of training.enable_cpu_offload: each device's link to
  /// host memory (bytes/s each way: kernel.copy_start), and the node's host
  /// memory bandwidth (bytes/s), which its ranks' host steps (the
  /// offloaded optimizer) share. 0: unknown, and both are costed at the
  /// device's memory rates (the CPU description, whose steps run on the
  /// host already; a hardware file that leaves them out).
  double hostLinkBytesPerSecond = 0, hostMemoryBytesPerSecond = 0;

  /// A CPU node's ranks share its cores: with R ranks on a node each
  /// computes at 1/R of the rates above (which are the whole node's).
  /// False for GPUs (a device per rank).
  bool ranksShareCompute = false;

  /// The peak rate MFU is quoted against for `bf16` (or f32) training.
  /// (A device without a bf16 rate runs bf16 GEMMs at its f32 one, as
  /// kernelSeconds does.)
  double peakFlops(bool bf16) const {
    return bf16 && peakFlopsBF16 > 0 ? peakFlopsBF16 : peakFlopsF32;
  }
};

/// The descriptions titan ships, in a fixed order.
llvm::ArrayRef<Hardware> builtinHardware();

/// The shipped description called `name`, or null.
const Hardware *lookupHardware(llvm::StringRef name);

/// A description from a TOML file: a [hardware] table whose keys are the
/// fields above in snake_case (peak_flops_bf16, gemm_efficiency, ...);
/// `base = "h100"` starts from a shipped one. Errors name the file, the
/// key and what is wrong (unknown key, wrong type, negative rate).
llvm::Expected<Hardware> loadHardwareFile(llvm::StringRef path);

/// `hw` as the TOML loadHardwareFile reads.
void printHardwareToml(const Hardware &hw, llvm::raw_ostream &os);

} // namespace titan::cost

#endif // TITAN_COST_HARDWARE_H
