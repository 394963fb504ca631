//===- BufferLiveness.cpp - buffers of a function on the CPU target -------===//

#include "titan/Conversion/TitanToCPU/BufferLiveness.h"
#include "titan/Dialect/Dist/IR/Dist.h"
#include "titan/Dialect/Titan/IR/TitanOps.h"

using namespace mlir;
using namespace titan;

int64_t titan::bufferBytes(Type type) {
  if (auto future = dyn_cast<dist::FutureType>(type))
    type = future.getValueType();
  auto t = cast<RankedTensorType>(type);
  return t.getNumElements() * ((t.getElementTypeBitWidth() + 7) / 8);
}

bool BufferLiveness::isView(Operation *op) {
  return isa<ReshapeOp, dist::ReplicateOp, dist::WaitOp>(op);
}

Value BufferLiveness::bufferOf(Value v) const {
  Value r = root.lookup(v);
  return r ? r : v;
}

BufferLiveness::BufferLiveness(func::FuncOp func) {
  for (Operation &op : func.getBody().front())
    ops.push_back(&op);
  DenseMap<Value, unsigned> lastUse;
  for (auto [index, op] : llvm::enumerate(ops)) {
    for (Value operand : op->getOperands())
      lastUse[bufferOf(operand)] = index;
    // A collective reads its input until it is waited for.
    if (auto wait = dyn_cast<dist::WaitOp>(op))
      for (Value input : wait.getFuture().getDefiningOp()->getOperands())
        lastUse[bufferOf(input)] = index;
    for (Value result : op->getResults())
      root[result] = isView(op) ? bufferOf(op->getOperand(0)) : result;
  }
  for (auto [value, index] : lastUse)
    if (!isa<BlockArgument>(value))
      freed[index].push_back(value);
}

ArrayRef<Value> BufferLiveness::freedAfter(unsigned index) const {
  auto it = freed.find(index);
  return it == freed.end() ? ArrayRef<Value>() : ArrayRef<Value>(it->second);
}

int64_t BufferLiveness::peakBytes() const {
  int64_t live = 0, peak = 0;
  for (auto [index, op] : llvm::enumerate(ops)) {
    if (!isView(op))
      for (Value result : op->getResults())
        live += bufferBytes(result.getType());
    peak = std::max(peak, live);
    for (Value buffer : freedAfter(index))
      live -= bufferBytes(buffer.getType());
  }
  return peak;
}
