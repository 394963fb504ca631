//===- MixedPrecision.cpp - low-precision compute copies of parameters ----===//
//
// Casts each parameter where the model's ops read it, then walks the forward
// once, giving every activation the element type of the values it is
// computed from; the loss reads f32 logits.
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/Dist/IR/Dist.h"
#include "titan/Dialect/Titan/IR/Parameters.h"
#include "titan/Dialect/Titan/IR/TitanOps.h"
#include "titan/Dialect/Titan/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringSwitch.h"

namespace titan {
#define GEN_PASS_DEF_TITANMIXEDPRECISION
#include "titan/Dialect/Titan/Transforms/Passes.h.inc"
} // namespace titan

using namespace mlir;
using namespace titan;

namespace {

RankedTensorType withElementType(Type t, Type element) {
  return cast<RankedTensorType>(t).clone(element);
}

/// The value the model's ops read for parameter `arg`: the argument, its
/// replica, or its gathered copy (dist-partition's forms).
Value modelView(Value arg) {
  Value v = arg;
  for (bool changed = true; changed;) {
    changed = false;
    if (!v.hasOneUse())
      break;
    Operation *user = *v.getUsers().begin();
    if (auto rep = dyn_cast<dist::ReplicateOp>(user)) {
      v = rep.getResult();
      changed = true;
    } else if (auto gather = dyn_cast<dist::AllGatherStartOp>(user)) {
      v = cast<dist::WaitOp>(*gather.getFuture().getUsers().begin())
              .getResult();
      changed = true;
    }
  }
  return v;
}

/// Ops whose float result keeps a fixed f32 type whatever their operands.
bool hasFixedResultType(Operation *op) {
  return isa<RopeAnglesOp, CrossEntropyOp, CrossEntropyFromStatsOp, CastOp>(op);
}

/// Results that keep their type while the op's others follow the compute
/// type: attention's log-sum-exp is in the accumulator type, on whole
/// sequences and on context parallel's ring (whose block kernels and merges
/// take it, and whose CUDA kernels write cuDNN's f32 statistics into it).
bool keepsResultType(Value result) {
  if (auto attention = result.getDefiningOp<AttentionOp>())
    return result == attention.getLse();
  if (auto ring = result.getDefiningOp<dist::RingAttentionOp>())
    return result == ring.getLse();
  return false;
}

/// Ops that read logits for the loss, which TorchTitan computes in f32, and
/// that store statistics of them: they read an f32 copy. The fused
/// titan.cross_entropy computes in f32 from 16-bit logits itself.
bool readsLogits(Operation *op) {
  return isa<RowMaxOp, SumExpOp, TargetLogitOp>(op);
}

struct TitanMixedPrecisionPass
    : titan::impl::TitanMixedPrecisionBase<TitanMixedPrecisionPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    OpBuilder b(module.getContext());
    Type compute = llvm::StringSwitch<Type>(paramType)
                       .Case("bf16", b.getBF16Type())
                       .Case("f16", b.getF16Type())
                       .Case("f32", b.getF32Type())
                       .Default(Type());
    if (!compute) {
      module.emitError() << "titan-mixed-precision: param-type must be bf16, "
                            "f16 or f32, got '"
                         << paramType << "'";
      return signalPassFailure();
    }
    if (compute.isF32())
      return;
    func::FuncOp forward =
        lookupFunction(module, forwardName, "titan-mixed-precision");
    if (!forward)
      return signalPassFailure();
    Block &body = forward.getBody().front();

    // Low-precision copies where the model reads each parameter.
    for (const ParameterArgument &p : getParameterArguments(forward)) {
      if (!p.type.getElementType().isF32()) {
        forward.emitOpError()
            << "parameter '" << p.name.getValue()
            << "' must be f32 for mixed precision (master weights), got "
            << p.type;
        return signalPassFailure();
      }
      Value view = modelView(body.getArgument(p.index));
      if (Operation *def = view.getDefiningOp())
        b.setInsertionPointAfter(def);
      else
        b.setInsertionPointToStart(&body);
      Value copy = CastOp::create(
          b, view.getLoc(), withElementType(view.getType(), compute), view);
      view.replaceAllUsesExcept(copy, copy.getDefiningOp());
    }

    // Every activation takes the type it is computed from.
    DenseMap<Value, Value> f32Logits;
    for (Operation &op : llvm::make_early_inc_range(body)) {
      if (readsLogits(&op)) {
        Value logits = op.getOperand(0);
        if (!cast<RankedTensorType>(logits.getType())
                 .getElementType()
                 .isF32()) {
          Value &widened = f32Logits[logits];
          if (!widened) {
            b.setInsertionPointAfterValue(logits);
            widened = CastOp::create(
                b, op.getLoc(),
                withElementType(logits.getType(), b.getF32Type()), logits);
          }
          op.setOperand(0, widened);
        }
      }
      if (hasFixedResultType(&op) || isa<func::ReturnOp>(op))
        continue;
      Type element;
      for (Value operand : op.getOperands()) {
        Type t = operand.getType();
        if (auto future = dyn_cast<dist::FutureType>(t))
          t = future.getValueType();
        auto tensor = dyn_cast<RankedTensorType>(t);
        if (tensor && isa<FloatType>(tensor.getElementType())) {
          element = tensor.getElementType();
          break;
        }
      }
      if (!element)
        continue;
      for (Value result : op.getResults()) {
        if (keepsResultType(result))
          continue;
        if (auto future = dyn_cast<dist::FutureType>(result.getType())) {
          result.setType(dist::FutureType::get(
              b.getContext(), withElementType(future.getValueType(), element)));
        } else if (auto tensor = dyn_cast<RankedTensorType>(result.getType());
                   tensor && isa<FloatType>(tensor.getElementType())) {
          result.setType(tensor.clone(element));
        }
      }
    }
    if (failed(mlir::verify(forward)))
      return signalPassFailure();
  }
};

} // namespace
