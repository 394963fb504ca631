//===- FuseAddRMSNorm.cpp - residual add + RMSNorm as one call ------------===//
//
// add(a, b) outs(h); rms_norm(h, w) outs(y)  ==>  add_rms_norm(a, b, w)
// outs(h, y) (see Passes.td for when it applies).
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/Kernel/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLExtras.h"

namespace titan::kernel {
#define GEN_PASS_DEF_KERNELFUSEADDRMSNORM
#include "titan/Dialect/Kernel/Transforms/Passes.h.inc"
} // namespace titan::kernel

using namespace mlir;
using namespace titan;
using namespace titan::kernel;

namespace {

bool isF32OrF64(Value v) {
  Type element = cast<MemRefType>(v.getType()).getElementType();
  return element.isF32() || element.isF64();
}

/// kernel.call `kernel` (two inputs, one output) with no workspace, on
/// f32/f64 buffers.
bool isCall(Operation *op, catalog::KernelId kernel) {
  auto call = dyn_cast_or_null<CallOp>(op);
  return call && call.calls(kernel) && !call.getWorkspace() &&
         llvm::all_of(call->getOperands().drop_back(), isF32OrF64) &&
         isF32OrF64(call.getOutputs()[0]);
}

/// The add whose result `norm` reads, when the two can become one call.
CallOp fusableAdd(CallOp norm) {
  Operation *op = norm->getPrevNode();
  while (op && isa<AllocOp, ViewOp>(op))
    op = op->getPrevNode();
  if (!isCall(op, catalog::KernelId::add))
    return nullptr;
  auto add = cast<CallOp>(op);
  if (add.getOutputs()[0] != norm.getInputs()[0] ||
      add.getStream() != norm.getStream())
    return nullptr;
  return add;
}

struct KernelFuseAddRMSNormPass
    : kernel::impl::KernelFuseAddRMSNormBase<KernelFuseAddRMSNormPass> {
  void runOnOperation() override {
    SmallVector<std::pair<CallOp, CallOp>> pairs;
    getOperation().walk([&](CallOp norm) {
      if (!isCall(norm, catalog::KernelId::rms_norm))
        return;
      if (CallOp add = fusableAdd(norm))
        pairs.emplace_back(add, norm);
    });
    for (auto [add, norm] : pairs) {
      OpBuilder b(norm);
      Value inputs[] = {add.getInputs()[0], add.getInputs()[1],
                        norm.getInputs()[1]};
      Value outputs[] = {add.getOutputs()[0], norm.getOutputs()[0]};
      auto fused = CallOp::create(
          b, b.getFusedLoc({add.getLoc(), norm.getLoc()}),
          b.getStringAttr(catalog::name(catalog::KernelId::add_rms_norm)),
          inputs, outputs, Value(), norm.getStream(), norm.getParamsAttr());
      // Keep the calls' other attributes (module names for traces).
      for (NamedAttribute attr : norm->getDiscardableAttrs())
        fused->setAttr(attr.getName(), attr.getValue());
      norm.erase();
      add.erase();
    }
  }
};

} // namespace
