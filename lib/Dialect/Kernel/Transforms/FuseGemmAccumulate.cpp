//===- FuseGemmAccumulate.cpp - GEMM + add as one accumulating GEMM -------===//
//
// add(acc, gemm(...)) outs(acc)  ==>  gemm(...) outs(acc) params [1]
// (see Passes.td for when it applies).
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/Kernel/Transforms/BufferAccess.h"
#include "titan/Dialect/Kernel/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLExtras.h"

namespace titan::kernel {
#define GEN_PASS_DEF_KERNELFUSEGEMMACCUMULATE
#include "titan/Dialect/Kernel/Transforms/Passes.h.inc"
} // namespace titan::kernel

using namespace mlir;
using namespace titan;
using namespace titan::kernel;

namespace {

/// The parameters that make `call` add into its result, when it is a GEMM
/// that overwrites it: the linears' optional `accumulate` (absent now),
/// the scaled GEMM's last (0 now).
std::optional<SmallVector<Attribute>> accumulatingParams(CallOp call,
                                                         Builder &b) {
  using catalog::KernelId;
  Attribute one = b.getI64IntegerAttr(1);
  if (call.calls(KernelId::linear) || call.calls(KernelId::linear_grad_input) ||
      call.calls(KernelId::linear_grad_weight)) {
    if (!call.getParams().empty())
      return std::nullopt;
    return SmallVector<Attribute>{one};
  }
  // Tensorwise scaled GEMMs only (one scale each): cuBLASLt's FP8 GEMM
  // adds into its result with those (Transformer Engine's weight-gradient
  // accumulation); its outer-vector (rowwise) mode with beta = 1 is not
  // confirmed, so a rowwise GEMM keeps its add.
  if (!call.calls(KernelId::scaled_matmul) || call.getInputs().size() < 4 ||
      !isOneElement(call.getInputs()[1]) || !isOneElement(call.getInputs()[3]))
    return std::nullopt;
  SmallVector<Attribute> params(call.getParams().getValue());
  auto last =
      params.empty() ? IntegerAttr() : dyn_cast<IntegerAttr>(params.back());
  if (!last || last.getInt() != 0)
    return std::nullopt;
  params.back() = one;
  return params;
}

/// Whether `op` touches the memory of `buffer`.
bool touches(Operation *op, Value buffer) {
  return llvm::any_of(op->getOperands(),
                      [&](Value v) { return viewedBuffer(v) == buffer; });
}

/// Whether `op` may read or write `accumulator`: it names its buffer, or it
/// completes a collective whose start names it or is not known (the
/// collective reads or writes it until then).
bool mayAccess(Operation *op, Value accumulator) {
  if (auto wait = dyn_cast<WaitOp>(op)) {
    CollectiveStartOp start = wait.getStart();
    return !start || touches(start, accumulator);
  }
  return touches(op, accumulator);
}

/// The GEMM that writes `t` for `add` to read, when the fold applies: `t`
/// is a temporary (kernel.alloc) used only by that GEMM's output and by
/// `add`, and between them nothing reads or writes `acc`, a collective's
/// completion included.
CallOp producer(CallOp add, Value t, Value acc, Builder &b) {
  auto alloc = t.getDefiningOp<AllocOp>();
  if (!alloc || !t.hasNUses(2) || t.getType() != acc.getType())
    return nullptr;
  CallOp gemm;
  for (Operation *user : t.getUsers())
    if (auto call = dyn_cast<CallOp>(user); call && call != add)
      gemm = call;
  if (!gemm || !accumulatingParams(gemm, b) || gemm.getOutputs()[0] != t ||
      llvm::is_contained(gemm.getInputs(), t) ||
      gemm->getBlock() != add->getBlock() || !gemm->isBeforeInBlock(add))
    return nullptr;
  Value accumulator = viewedBuffer(acc);
  if (touches(gemm, accumulator))
    return nullptr;
  for (Operation *op = gemm->getNextNode(); op != add; op = op->getNextNode())
    if (mayAccess(op, accumulator))
      return nullptr;
  return gemm;
}

struct KernelFuseGemmAccumulatePass
    : kernel::impl::KernelFuseGemmAccumulateBase<KernelFuseGemmAccumulatePass> {
  void runOnOperation() override {
    SmallVector<CallOp> adds;
    getOperation().walk([&](CallOp call) {
      if (call.calls(catalog::KernelId::add) && !call.getWorkspace() &&
          !call->hasAttr(KernelDialect::kSeparateRoundingAttrName))
        adds.push_back(call);
    });
    Builder b(&getContext());
    for (CallOp add : adds) {
      Value lhs = add.getInputs()[0], rhs = add.getInputs()[1],
            out = add.getOutputs()[0];
      for (auto [t, acc] : {std::pair(rhs, lhs), {lhs, rhs}}) {
        if (acc != out || t == acc)
          continue;
        CallOp gemm = producer(add, t, acc, b);
        if (!gemm)
          continue;
        gemm.getOutputsMutable()[0].set(acc);
        gemm.setParamsAttr(b.getArrayAttr(*accumulatingParams(gemm, b)));
        Operation *alloc = t.getDefiningOp();
        add.erase();
        if (alloc->use_empty())
          alloc->erase();
        break;
      }
    }
  }
};

} // namespace
