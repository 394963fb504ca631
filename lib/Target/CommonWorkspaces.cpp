//===- CommonWorkspaces.cpp - what targets' workspace rules share ---------===//

#include "titan/Target/CommonWorkspaces.h"

#include "titan/Target/WorkspaceRules.h"

using namespace mlir;
using namespace titan;
using namespace titan::dist;

int64_t titan::target::rowsOf(Value v) {
  auto t = cast<ShapedType>(v.getType());
  return t.getRank() == 0 ? 1 : t.getNumElements() / t.getShape().back();
}

int64_t titan::target::elementsOf(Value v) {
  return cast<ShapedType>(v.getType()).getNumElements();
}

int64_t titan::target::lastDimOf(Value v) {
  auto t = cast<ShapedType>(v.getType());
  return t.getRank() == 0 ? 1 : t.getShape().back();
}

int64_t titan::target::ringRowsOf(Value v, int64_t dim) {
  auto t = cast<ShapedType>(v.getType());
  int64_t rows = 1;
  for (int64_t d = dim; d + 1 < t.getRank(); ++d)
    rows *= t.getDimSize(d);
  return rows;
}

int64_t titan::target::copyBytes(Value v, int64_t elementBytes) {
  return (elementsOf(v) * elementBytes + 63) / 64 * 64;
}

namespace {
int64_t bytesOf(RankedTensorType t) {
  return t.getNumElements() * ((t.getElementTypeBitWidth() + 7) / 8);
}
int64_t outerElements(RankedTensorType t, int64_t dim) {
  int64_t outer = 1;
  for (int64_t d = 0; d < dim; ++d)
    outer *= t.getDimSize(d);
  return outer;
}
} // namespace

int64_t titan::target::allGatherStagingBytes(AllGatherStartOp op) {
  auto in = op.getInput().getType();
  auto out = op.getFuture().getType().getValueType();
  int64_t parts = getGroupSize(getMesh(op), op.getAxes()), dim = op.getDim();
  bool staged = outerElements(in, dim) > 1 ||
                out.getDimSize(dim) != parts * in.getDimSize(dim);
  return staged ? parts * bytesOf(in) : 0;
}

int64_t titan::target::reduceScatterStagingBytes(ReduceScatterStartOp op) {
  auto in = op.getInput().getType();
  int64_t parts = getGroupSize(getMesh(op), op.getAxes()), dim = op.getDim();
  int64_t rows = (in.getDimSize(dim) + parts - 1) / parts;
  bool staged =
      outerElements(in, dim) > 1 || rows * parts != in.getDimSize(dim);
  return staged ? bytesOf(in) / in.getDimSize(dim) * rows * parts : 0;
}

int64_t titan::target::allToAllStagingBytes(AllToAllStartOp op) {
  return 2 * bytesOf(op.getInput().getType());
}

void titan::target::addCollectiveWorkspaceRules(WorkspaceRules &rules) {
  rules.add<AllGatherStartOp>(allGatherStagingBytes);
  rules.add<ReduceScatterStartOp>(reduceScatterStagingBytes);
  rules.add<AllToAllStartOp>(allToAllStagingBytes);
}
