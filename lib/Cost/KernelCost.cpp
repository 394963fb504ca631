//===- KernelCost.cpp - the work of a kernel call and its roofline time ---===//
//
// The work rules of every kernel live here, in one switch keyed by the
// kernel catalog's ids (titan/Contract/KernelCatalog.def): a kernel's FLOPs
// and bytes follow from its contract (which buffers it reads and writes,
// what its parameters mean), the same contract the catalog writes down,
// so a kernel added to the catalog gets its rule here, beside the others.
// Kernels without a rule are memory-bound, which is right for every
// elementwise, row and copy kernel.
//
//===----------------------------------------------------------------------===//

#include "titan/Cost/KernelCost.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace titan;
using namespace titan::cost;
using catalog::KernelId;

namespace {

double numElements(Value v) {
  auto type = dyn_cast<MemRefType>(v.getType());
  return type && type.hasStaticShape() ? double(type.getNumElements()) : 0;
}

int64_t dimSize(Value v, int64_t dim) {
  auto type = dyn_cast<MemRefType>(v.getType());
  if (!type || type.getRank() == 0)
    return 1;
  if (dim < 0)
    dim += type.getRank();
  return dim >= 0 && dim < type.getRank() ? type.getDimSize(dim) : 1;
}

/// M x N x K of a GEMM from its three operands' sizes: |A| |B| |C| =
/// (MK)(KN)(MN), whatever the operands' layouts and transposes.
double gemmFlops(Value a, Value b, Value c) {
  return 2 * std::sqrt(numElements(a) * numElements(b) * numElements(c));
}

KernelWork::Precision precisionOf(Value v) {
  auto type = dyn_cast<MemRefType>(v.getType());
  if (!type)
    return KernelWork::Precision::F32;
  Type element = type.getElementType();
  if (element.isBF16() || element.isF16())
    return KernelWork::Precision::BF16;
  if (isa<FloatType>(element) && element.getIntOrFloatBitWidth() == 8)
    return KernelWork::Precision::FP8;
  return KernelWork::Precision::F32;
}

int64_t intParam(kernel::CallOp call, unsigned index) {
  ArrayAttr params = call.getParams();
  if (index >= params.size())
    return 0;
  auto attr = dyn_cast<IntegerAttr>(params[index]);
  return attr ? attr.getInt() : 0;
}

/// Causal attention's forward FLOPs: QK^T and PV over [B, Sq, Hq, D]
/// queries and Sk keys, 2 x 2 x B Hq Sq Sk D, of which the causal mask
/// leaves half. Context attention's chunk pairs are load-balanced so that
/// every ring step (and the all-gathered form) sees half its pairs too
/// (KernelCatalog.def's context_attention).
double attentionForwardFlops(Value query, Value key) {
  double sk = double(dimSize(key, 1));
  return 4 * numElements(query) * sk * 0.5;
}

/// FlashAttention's backward: dS, dP, dQ, dK, dV GEMMs and the recomputed
/// QK^T, 2.5 times the forward's FLOPs (FlashAttention-2, section 3).
constexpr double kAttentionBackwardFactor = 2.5;

} // namespace

llvm::StringRef titan::cost::stringifyWorkUnit(WorkUnit unit) {
  switch (unit) {
  case WorkUnit::Gemm:
    return "gemm";
  case WorkUnit::AttentionForward:
    return "attention_forward";
  case WorkUnit::AttentionBackward:
    return "attention_backward";
  case WorkUnit::Memory:
    return "memory";
  }
  return "memory";
}

KernelWork titan::cost::kernelWork(kernel::GenericOp generic) {
  KernelWork work;
  work.bytes = double(generic.getTrafficBytes());
  // The column sums' partials are written, then read by the totals.
  if (Value workspace = generic.getWorkspace()) {
    work.bytes += bufferBytes(workspace);
    work.launches = 2;
  }
  // What depends on broadcast inputs alone is computed once per kernel;
  // each segment's ops run over its own elements.
  DenseSet<Value> uniform = generic.getUniformValues();
  for (const kernel::GenericSegment &segment : generic.getSegmentList())
    for (Operation *op : generic.getSegmentOps(segment)) {
      bool once = llvm::all_of(op->getResults(),
                               [&](Value v) { return uniform.contains(v); });
      work.flops += once ? 1.0 : double(segment.elements);
    }
  return work;
}

KernelWork titan::cost::kernelWork(kernel::CallOp call) {
  KernelWork work;
  for (Value v : call.getInputs())
    work.bytes += bufferBytes(v);
  for (Value v : call.getOutputs())
    work.bytes += bufferBytes(v);
  auto inputs = call.getInputs();
  auto outputs = call.getOutputs();
  const catalog::Entry *entry = catalog::lookup(call.getKernel());
  if (!entry)
    return work;
  auto id = KernelId(entry - catalog::kEntries);
  switch (id) {
  case KernelId::linear:
  case KernelId::linear_grad_input:
  case KernelId::linear_grad_weight:
    if (inputs.size() < 2 || outputs.empty())
      break;
    work.unit = WorkUnit::Gemm;
    work.flops = gemmFlops(inputs[0], inputs[1], outputs[0]);
    work.precision = precisionOf(inputs[0]);
    // accumulate (kernel-fuse-gemm-accumulate) reads the result too.
    if (intParam(call, 0) != 0)
      work.bytes += bufferBytes(outputs[0]);
    break;
  case KernelId::scaled_matmul:
    // lhs, lhs_scale, rhs, rhs_scale -> result; float8 operands.
    if (inputs.size() < 4 || outputs.empty())
      break;
    work.unit = WorkUnit::Gemm;
    work.flops = gemmFlops(inputs[0], inputs[2], outputs[0]);
    work.precision = KernelWork::Precision::FP8;
    if (intParam(call, 5) != 0)
      work.bytes += bufferBytes(outputs[0]);
    break;
  case KernelId::all_gather_linear: {
    // input, weight_i... -> gathered, result_i...: GEMM(gathered,
    // weight_i) -> result_i for i < count.
    int64_t count = intParam(call, 0);
    if (count < 1 || int64_t(inputs.size()) < 1 + count ||
        int64_t(outputs.size()) < 1 + count)
      break;
    work.unit = WorkUnit::Gemm;
    for (int64_t i = 0; i < count; ++i)
      work.flops += gemmFlops(outputs[0], inputs[1 + i], outputs[1 + i]);
    work.precision = precisionOf(inputs[1]);
    break;
  }
  case KernelId::linear_reduce_scatter:
  case KernelId::scaled_matmul_reduce_scatter: {
    // (lhs_i, weight_i) pairs, or Float8's (lhs_i, lhs_scale_i, weight_i,
    // weight_scale_i) quads -> result (reduce-scattered, so the GEMMs'
    // output is not a buffer): each GEMM is 2 |lhs_i| x the result's
    // columns (linear's N, grad_input's K).
    bool scaled = id == KernelId::scaled_matmul_reduce_scatter;
    int64_t count = intParam(call, 0), stride = scaled ? 4 : 2;
    if (count < 1 || int64_t(inputs.size()) < stride * count || outputs.empty())
      break;
    work.unit = WorkUnit::Gemm;
    for (int64_t i = 0; i < count; ++i)
      work.flops +=
          2 * numElements(inputs[stride * i]) * double(dimSize(outputs[0], -1));
    work.precision =
        scaled ? KernelWork::Precision::FP8 : precisionOf(inputs[0]);
    break;
  }
  case KernelId::all_gather_scaled_matmul: {
    // input, input_scale, (weight_i, weight_scale_i)... -> gathered,
    // result_i...: scaled GEMM(gathered, weight_i) -> result_i.
    int64_t count = intParam(call, 0);
    if (count < 1 || int64_t(inputs.size()) < 2 + 2 * count ||
        int64_t(outputs.size()) < 1 + count)
      break;
    work.unit = WorkUnit::Gemm;
    for (int64_t i = 0; i < count; ++i)
      work.flops += gemmFlops(outputs[0], inputs[2 + 2 * i], outputs[1 + i]);
    work.precision = KernelWork::Precision::FP8;
    break;
  }
  case KernelId::attention:
  case KernelId::context_attention:
    if (inputs.size() < 2)
      break;
    work.unit = WorkUnit::AttentionForward;
    work.flops = attentionForwardFlops(inputs[0], inputs[1]);
    work.precision = precisionOf(inputs[0]);
    break;
  case KernelId::attention_grad:
  case KernelId::context_attention_grad:
    if (inputs.size() < 2)
      break;
    work.unit = WorkUnit::AttentionBackward;
    work.flops =
        kAttentionBackwardFactor * attentionForwardFlops(inputs[0], inputs[1]);
    work.precision = precisionOf(inputs[0]);
    break;
  default:
    // Elementwise, row, loss, optimizer and copy kernels: memory-bound.
    if (!inputs.empty())
      work.precision = precisionOf(inputs[0]);
    else if (!outputs.empty())
      work.precision = precisionOf(outputs[0]);
    break;
  }
  return work;
}

double titan::cost::kernelSeconds(const KernelWork &work, const Hardware &hw,
                                  int64_t ranksSharing) {
  // Ranks sharing a CPU node's cores each get a share of its rates.
  double share =
      hw.ranksShareCompute && ranksSharing > 1 ? double(ranksSharing) : 1.0;
  double bandwidth = hw.memoryBytesPerSecond * hw.memoryEfficiency / share;
  double memorySeconds = bandwidth > 0 ? work.bytes / bandwidth : 0;
  // The peak of the GEMM's precision; a device without it (no FP8 on an
  // A100, no bf16 units on a CPU description) runs the next wider one.
  double peak = 0;
  switch (work.precision) {
  case KernelWork::Precision::FP8:
    peak = hw.peakFlopsFP8;
    [[fallthrough]];
  case KernelWork::Precision::BF16:
    if (peak <= 0)
      peak = hw.peakFlopsBF16;
    [[fallthrough]];
  case KernelWork::Precision::F32:
    if (peak <= 0)
      peak = hw.peakFlopsF32;
    break;
  }
  peak /= share;
  double seconds = memorySeconds;
  switch (work.unit) {
  case WorkUnit::Gemm:
    // peak x efficiency x W / (W + half): time (W + half) / (peak x eff).
    if (peak > 0 && hw.gemmEfficiency > 0 && work.flops > 0)
      seconds = std::max(memorySeconds, (work.flops + hw.gemmHalfFlops) /
                                            (peak * hw.gemmEfficiency));
    break;
  case WorkUnit::AttentionForward:
    if (peak > 0 && hw.attentionForwardEfficiency > 0)
      seconds = std::max(memorySeconds,
                         work.flops / (peak * hw.attentionForwardEfficiency));
    break;
  case WorkUnit::AttentionBackward:
    if (peak > 0 && hw.attentionBackwardEfficiency > 0)
      seconds = std::max(memorySeconds,
                         work.flops / (peak * hw.attentionBackwardEfficiency));
    break;
  case WorkUnit::Memory:
    break;
  }
  return seconds + work.launches * hw.kernelOverheadSeconds;
}

double titan::cost::bufferBytes(Value v) {
  auto type = dyn_cast<MemRefType>(v.getType());
  if (!type || !type.hasStaticShape())
    return 0;
  Type element = type.getElementType();
  unsigned bits = element.isIntOrFloat() ? element.getIntOrFloatBitWidth() : 64;
  return double(type.getNumElements()) * double((bits + 7) / 8);
}
