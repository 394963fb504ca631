//===- JoinedBody.cpp - one generated kernel's body from several ----------===//

#include "titan/Dialect/Kernel/Transforms/JoinedBody.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;
using namespace titan;
using namespace titan::kernel;

void titan::kernel::buildJoinedBody(
    OpBuilder &b, GenericOp joined, ArrayRef<GenericOp> parts,
    function_ref<unsigned(unsigned part, unsigned index)> inputOf) {
  Block *body = b.createBlock(&joined.getBody());
  for (Value v : joined.getInputs())
    body->addArgument(cast<MemRefType>(v.getType()).getElementType(),
                      v.getLoc());
  SmallVector<Value> outputs, reduced;
  for (auto [p, constPart] : llvm::enumerate(parts)) {
    GenericOp part = constPart;
    Block &partBody = part.getBody().front();
    IRMapping map;
    for (BlockArgument arg : partBody.getArguments())
      map.map(arg, body->getArgument(inputOf(p, arg.getArgNumber())));
    for (Operation &op : partBody.without_terminator())
      b.clone(op, map);
    ValueRange yielded = cast<YieldOp>(partBody.getTerminator()).getValues();
    unsigned numOutputs = part.getOutputs().size();
    for (Value v : yielded.take_front(numOutputs))
      outputs.push_back(map.lookupOrDefault(v));
    for (Value v : yielded.drop_front(numOutputs))
      reduced.push_back(map.lookupOrDefault(v));
  }
  llvm::append_range(outputs, reduced);
  YieldOp::create(b, joined.getLoc(), outputs);
}

SmallVector<int64_t>
titan::kernel::joinedTransposedOutputs(ArrayRef<GenericOp> parts) {
  SmallVector<int64_t> transposed;
  int64_t before = 0;
  for (GenericOp constPart : parts) {
    GenericOp part = constPart;
    for (int64_t index : part.getTransposedOutputs())
      transposed.push_back(before + index);
    before += part.getOutputs().size();
  }
  return transposed;
}
