//===- BufferAccess.cpp - what kernel ops read and write ------------------===//

#include "titan/Dialect/Kernel/Transforms/BufferAccess.h"

using namespace mlir;
using namespace titan;
using namespace titan::kernel;

bool titan::kernel::collectAccess(Operation *op, SmallVectorImpl<Value> &reads,
                                  SmallVectorImpl<Value> &writes) {
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  if (!effects)
    return false;
  SmallVector<MemoryEffects::EffectInstance> instances;
  effects.getEffects(instances);
  for (const MemoryEffects::EffectInstance &e : instances) {
    Value v = e.getValue();
    // Memory it names no buffer of: unknown, unless it is the ranks'
    // communication state (a collective's start and wait).
    if (!v && !isa<CommunicationResource>(e.getResource()) &&
        isa<MemoryEffects::Read, MemoryEffects::Write>(e.getEffect()))
      return false;
    if (!v || !isa<MemRefType>(v.getType()))
      continue;
    if (isa<MemoryEffects::Read>(e.getEffect()))
      reads.push_back(viewedBuffer(v));
    else if (isa<MemoryEffects::Write>(e.getEffect()))
      writes.push_back(viewedBuffer(v));
  }
  // A collective uses its buffers until its wait: there it has read its
  // input, used its workspace and written its output. A wait whose start
  // is not in sight completes buffers unknown here.
  if (auto wait = dyn_cast<WaitOp>(op)) {
    // A copy's likewise.
    if (CopyStartOp copy = wait.getCopyStart()) {
      reads.push_back(viewedBuffer(copy.getSource()));
      writes.push_back(viewedBuffer(copy.getTarget()));
      return true;
    }
    CollectiveStartOp start = wait.getStart();
    if (!start)
      return false;
    reads.push_back(viewedBuffer(start.getInput()));
    writes.push_back(viewedBuffer(start.getOutput()));
    if (Value workspace = start.getWorkspace()) {
      reads.push_back(viewedBuffer(workspace));
      writes.push_back(viewedBuffer(workspace));
    }
  }
  return true;
}

bool titan::kernel::canDefineBefore(Value v, Operation *at) {
  Operation *def = v.getDefiningOp();
  if (!def || def->getBlock() != at->getBlock() || def->isBeforeInBlock(at))
    return true;
  if (!isa<AllocOp, ViewOp>(def))
    return false;
  return llvm::all_of(def->getOperands(), [&](Value operand) {
    return canDefineBefore(operand, at);
  });
}

bool titan::kernel::isOneElement(Value buffer) {
  return cast<MemRefType>(buffer.getType()).getNumElements() == 1;
}

bool titan::kernel::isStateOrOneElement(Value buffer) {
  return isa<BlockArgument>(viewedBuffer(buffer)) || isOneElement(buffer);
}

void titan::kernel::defineBefore(Value v, Operation *at) {
  Operation *def = v.getDefiningOp();
  if (!def || def->getBlock() != at->getBlock() || def->isBeforeInBlock(at))
    return;
  for (Value operand : def->getOperands())
    defineBefore(operand, at);
  def->moveBefore(at);
}
