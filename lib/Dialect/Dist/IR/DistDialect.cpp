//===- DistDialect.cpp - dist dialect -------------------------------------===//

#include "titan/Dialect/Dist/IR/Dist.h"
#include "titan/Dialect/Titan/IR/Dtype.h"
#include "titan/Dialect/Titan/IR/TitanOps.h"

#include "mlir/Interfaces/FunctionInterfaces.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

#include <array>
#include <limits>

using namespace mlir;
using namespace titan::dist;
namespace mesh = titan::mesh;

#include "titan/Dialect/Dist/IR/DistOpsDialect.cpp.inc"

#include "titan/Dialect/Dist/IR/DistOpsEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "titan/Dialect/Dist/IR/DistOpsAttributes.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "titan/Dialect/Dist/IR/DistOpsTypes.cpp.inc"

void DistDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "titan/Dialect/Dist/IR/DistOpsAttributes.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "titan/Dialect/Dist/IR/DistOpsTypes.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "titan/Dialect/Dist/IR/DistOps.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// MeshAttr
//===----------------------------------------------------------------------===//

ArrayRef<StringRef> MeshAttr::getAxisNames() {
  static const std::array<StringRef, mesh::kNumAxes> names = [] {
    std::array<StringRef, mesh::kNumAxes> names;
    for (const mesh::AxisInfo &info : mesh::kAxes)
      names[info.axis] = info.name;
    return names;
  }();
  return names;
}

int MeshAttr::getAxisIndex(StringRef axis) {
  std::optional<mesh::Axis> a = mesh::parseAxis(axis);
  return a ? int(*a) : -1;
}

int64_t MeshAttr::getSize(mesh::Axis axis) const {
  switch (axis) {
  case mesh::kPP:
    return getPp();
  case mesh::kDPReplicate:
    return getDpReplicate();
  case mesh::kDPShard:
    return getDpShard();
  case mesh::kCP:
    return getCp();
  case mesh::kTP:
    return getTp();
  case mesh::kNumAxes:
    break;
  }
  llvm_unreachable("not a mesh axis");
}

std::optional<int64_t> MeshAttr::getAxisSize(StringRef axis) const {
  if (std::optional<mesh::Axis> a = mesh::parseAxis(axis))
    return getSize(*a);
  return std::nullopt;
}

int64_t MeshAttr::getWorldSize() const {
  int64_t world = 1;
  for (const mesh::AxisInfo &info : mesh::kAxes)
    world *= getSize(info.axis);
  return world;
}

bool MeshAttr::isLoadBalanced(StringRef axis) const {
  std::optional<mesh::Axis> a = mesh::parseAxis(axis);
  return a && (getLoadBalancedMask() & mesh::axisBit(*a));
}

unsigned MeshAttr::getLoadBalancedMask() const {
  unsigned mask = 0;
  assert(getLoadBalanced() && "a #dist.mesh always has its load_balanced "
                              "list (build it with MeshAttr::get)");
  for (Attribute axis : getLoadBalanced()) {
    auto name = dyn_cast<StringAttr>(axis);
    std::optional<mesh::Axis> a =
        name ? mesh::parseAxis(name.getValue()) : std::nullopt;
    assert(a && "load_balanced names an unknown mesh axis: MeshAttr::verify "
                "rejects it, so the mesh was built unverified");
    mask |= mesh::axisBit(*a);
  }
  return mask;
}

mesh::SplitLayout MeshAttr::getSplitLayout(ArrayRef<StringRef> axes) const {
  mesh::SplitLayout layout;
  for (StringRef axis : axes) {
    std::optional<int64_t> size = getAxisSize(axis);
    assert(size && "getSplitLayout of an unknown mesh axis: shardings are "
                   "verified to name the mesh's axes");
    layout.degree *= *size;
    layout.loadBalanced |= isLoadBalanced(axis);
  }
  return layout;
}

mesh::SplitLayout MeshAttr::getSplitLayout(ArrayAttr axes) const {
  SmallVector<StringRef> names;
  for (Attribute axis : axes) {
    auto name = dyn_cast<StringAttr>(axis);
    assert(name && "getSplitLayout of a list that is not of axis names: "
                   "shardings are verified to list names");
    names.push_back(name.getValue());
  }
  return getSplitLayout(names);
}

ArrayAttr MeshAttr::defaultLoadBalanced(MLIRContext *ctx,
                                        ArrayRef<int64_t> sizes) {
  assert(sizes.size() == mesh::kNumAxes && "one size per mesh axis");
  SmallVector<StringRef> axes;
  for (const mesh::AxisInfo &info : mesh::kAxes)
    if (info.loadBalanced && sizes[info.axis] > 1)
      axes.push_back(info.name);
  return Builder(ctx).getStrArrayAttr(axes);
}

/// `#dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 2, cp = 2, tp = 1>`, the
/// keys in any order (as `struct(params)`); `load_balanced = [...]` is
/// optional, its default the table's for the sizes (defaultLoadBalanced).
Attribute MeshAttr::parse(AsmParser &parser, Type) {
  MLIRContext *ctx = parser.getContext();
  std::optional<int64_t> sizes[mesh::kNumAxes];
  ArrayAttr loadBalanced;
  bool sawLoadBalanced = false;
  if (parser.parseLess())
    return {};
  auto parseEntry = [&]() -> ParseResult {
    SMLoc keyLoc = parser.getCurrentLocation();
    StringRef key;
    if (parser.parseKeyword(&key) || parser.parseEqual())
      return failure();
    if (key == "load_balanced") {
      if (sawLoadBalanced)
        return parser.emitError(keyLoc, "duplicate 'load_balanced' in "
                                        "#dist.mesh");
      sawLoadBalanced = true;
      return parser.parseAttribute(loadBalanced);
    }
    std::optional<mesh::Axis> axis = mesh::parseAxis(key);
    if (!axis)
      return parser.emitError(keyLoc, "#dist.mesh has no key '")
             << key << "' (the mesh axes and load_balanced)";
    if (sizes[*axis])
      return parser.emitError(keyLoc, "duplicate '")
             << key << "' in #dist.mesh";
    int64_t size;
    if (parser.parseInteger(size))
      return failure();
    sizes[*axis] = size;
    return success();
  };
  if (parser.parseCommaSeparatedList(parseEntry) || parser.parseGreater())
    return {};
  int64_t values[mesh::kNumAxes];
  for (const mesh::AxisInfo &info : mesh::kAxes) {
    if (!sizes[info.axis]) {
      parser.emitError(parser.getCurrentLocation(), "#dist.mesh is missing '")
          << info.name << "'";
      return {};
    }
    values[info.axis] = *sizes[info.axis];
  }
  if (!sawLoadBalanced)
    loadBalanced = defaultLoadBalanced(ctx, values);
  return parser.getChecked<MeshAttr>(ctx, values[mesh::kPP],
                                     values[mesh::kDPReplicate],
                                     values[mesh::kDPShard], values[mesh::kCP],
                                     values[mesh::kTP], loadBalanced);
}

void MeshAttr::print(AsmPrinter &printer) const {
  printer << '<';
  int64_t sizes[mesh::kNumAxes];
  for (const mesh::AxisInfo &info : mesh::kAxes) {
    sizes[info.axis] = getSize(info.axis);
    printer << (info.axis == 0 ? "" : ", ") << info.name << " = "
            << sizes[info.axis];
  }
  if (getLoadBalanced() != defaultLoadBalanced(getContext(), sizes)) {
    printer << ", load_balanced = ";
    printer.printAttribute(getLoadBalanced());
  }
  printer << '>';
}

LogicalResult MeshAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               int64_t pp, int64_t dpReplicate, int64_t dpShard,
                               int64_t cp, int64_t tp, ArrayAttr loadBalanced) {
  int64_t sizes[] = {pp, dpReplicate, dpShard, cp, tp};
  int64_t world = 1;
  for (const mesh::AxisInfo &info : mesh::kAxes) {
    int64_t size = sizes[info.axis];
    if (size < 1)
      return emitError() << "mesh axis '" << info.name
                         << "' must have size >= 1, got " << size;
    // Ranks are C ints in MPI and NCCL.
    if (__builtin_mul_overflow(world, size, &world) ||
        world > std::numeric_limits<int32_t>::max()) {
      InFlightDiagnostic diag = emitError() << "mesh world size ";
      for (const mesh::AxisInfo &a : mesh::kAxes)
        diag << (a.axis == 0 ? "" : " x ") << a.name << " " << sizes[a.axis];
      return diag << " exceeds 2^31 - 1 ranks";
    }
  }
  if (!loadBalanced)
    return emitError() << "a mesh needs its load_balanced list (MeshAttr::get "
                          "fills in the default)";
  llvm::SmallDenseSet<StringRef> seen;
  for (Attribute a : loadBalanced) {
    auto name = dyn_cast<StringAttr>(a);
    if (!name || !mesh::parseAxis(name.getValue()))
      return emitError() << "load_balanced names unknown mesh axis " << a;
    if (!seen.insert(name.getValue()).second)
      return emitError() << "mesh axis '" << name.getValue()
                         << "' appears more than once in load_balanced";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// ShardingAttr
//===----------------------------------------------------------------------===//

/// Checks one list of mesh axes of a sharding (`what`: where it stands).
static LogicalResult
verifyAxisList(function_ref<InFlightDiagnostic()> emitError, Attribute list,
               const Twine &what, llvm::SmallDenseSet<StringRef> &seen) {
  auto axes = dyn_cast<ArrayAttr>(list);
  if (!axes)
    return emitError() << what << " must be a list of mesh axes";
  for (Attribute a : axes) {
    auto name = dyn_cast<StringAttr>(a);
    if (!name || MeshAttr::getAxisIndex(name.getValue()) < 0)
      return emitError() << what << " names unknown mesh axis " << a;
    if (!seen.insert(name.getValue()).second)
      return emitError() << "mesh axis '" << name.getValue()
                         << "' appears more than once in a sharding";
  }
  return success();
}

LogicalResult ShardingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                   ArrayAttr dims, ArrayAttr partial,
                                   ReductionKindAttr reduction) {
  llvm::SmallDenseSet<StringRef> seen;
  for (auto [d, dimAttr] : llvm::enumerate(dims))
    if (failed(verifyAxisList(emitError, dimAttr,
                              "sharding of dimension " + Twine(d), seen)))
      return failure();
  if (partial &&
      failed(verifyAxisList(emitError, partial, "partial axes", seen)))
    return failure();
  if (reduction && (!partial || partial.empty()))
    return emitError() << "a reduction kind needs partial axes";
  return success();
}

static SmallVector<StringRef> axisNames(ArrayAttr list) {
  SmallVector<StringRef> axes;
  if (list)
    for (Attribute a : list)
      axes.push_back(cast<StringAttr>(a).getValue());
  return axes;
}

SmallVector<StringRef> ShardingAttr::getAxes(unsigned dim) const {
  return dim < getDims().size() ? axisNames(cast<ArrayAttr>(getDims()[dim]))
                                : SmallVector<StringRef>();
}

SmallVector<StringRef> ShardingAttr::getPartialAxes() const {
  return axisNames(getPartial());
}

ReductionKind ShardingAttr::getReductionKind() const {
  return getReduction() ? getReduction().getValue() : ReductionKind::Sum;
}

bool ShardingAttr::isReplicated() const {
  return getPartialAxes().empty() && llvm::all_of(getDims(), [](Attribute dim) {
           return cast<ArrayAttr>(dim).empty();
         });
}

FailureOr<SmallVector<int64_t>>
ShardingAttr::getLocalShape(ArrayRef<int64_t> shape, MeshAttr mesh,
                            std::string *reason) const {
  if (getDims().size() > shape.size()) {
    if (reason)
      *reason = "the sharding has more dimensions than the tensor";
    return failure();
  }
  SmallVector<int64_t> local(shape);
  for (unsigned d = 0; d < getDims().size(); ++d) {
    SmallVector<StringRef> axes = getAxes(d);
    // The trailing storage axes form one padded group (FSDP2's shards).
    size_t group = axes.size();
    while (group > 0 && isStorageAxis(axes[group - 1]))
      --group;
    int64_t padded = 1;
    for (auto [i, axis] : llvm::enumerate(axes)) {
      int64_t parts = *mesh.getAxisSize(axis);
      if (i >= group) {
        padded *= parts;
        continue;
      }
      if (local[d] % parts != 0) {
        if (reason)
          *reason = ("dimension " + std::to_string(d) + " (" +
                     std::to_string(local[d]) + ") is not divisible by the " +
                     std::to_string(parts) + " shards of '" + axis.str() + "'");
        return failure();
      }
      local[d] /= parts;
    }
    local[d] = (local[d] + padded - 1) / padded;
  }
  return local;
}

bool titan::dist::isStorageAxis(StringRef axis) {
  std::optional<mesh::Axis> a = mesh::parseAxis(axis);
  return a && mesh::axisInfo(*a).storage;
}

//===----------------------------------------------------------------------===//
// Dialect attributes
//===----------------------------------------------------------------------===//

/// The pipeline's index attributes are non-negative integers.
static LogicalResult verifyIndexAttr(Operation *op, NamedAttribute attr,
                                     StringRef where) {
  auto index = dyn_cast<IntegerAttr>(attr.getValue());
  if (!index || index.getInt() < 0)
    return op->emitError() << "'" << attr.getName().getValue() << "' on "
                           << where << " must be a non-negative integer, got "
                           << attr.getValue();
  return success();
}

/// One #dist.sharding per result, none with more dimensions than its
/// result (whose type is global before dist-partition and local after).
static LogicalResult verifyResultShardings(Operation *op, NamedAttribute attr) {
  auto list = dyn_cast<ArrayAttr>(attr.getValue());
  if (!list || list.size() != op->getNumResults())
    return op->emitError() << "'" << attr.getName().getValue()
                           << "' must list one #dist.sharding per result ("
                           << op->getNumResults() << "), got "
                           << attr.getValue();
  for (auto [sharding, result] : llvm::zip(list, op->getResults())) {
    auto s = dyn_cast<ShardingAttr>(sharding);
    auto type = dyn_cast<RankedTensorType>(result.getType());
    if (!s || !type || s.getDims().size() > size_t(type.getRank()))
      return op->emitError()
             << "'" << attr.getName().getValue() << "' entry " << sharding
             << " does not fit result type " << result.getType();
  }
  return success();
}

LogicalResult DistDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attr) {
  if (attr.getName() == kStageAttrName)
    return verifyIndexAttr(op, attr, "a function");
  if (attr.getName() == kPhaseAttrName) {
    auto phase = dyn_cast<StringAttr>(attr.getValue());
    if (!phase || !llvm::is_contained({"unshard", "forward", "forward_backward",
                                       "backward", "backward_input",
                                       "backward_weight", "reduce_grad"},
                                      phase.getValue()))
      return op->emitError()
             << "'" << kPhaseAttrName
             << "' must be one of \"unshard\", \"forward\", "
                "\"forward_backward\", \"backward\", \"backward_input\", "
                "\"backward_weight\", \"reduce_grad\", got "
             << attr.getValue();
    return success();
  }
  if (attr.getName() == kPipelineAttrName) {
    auto dict = dyn_cast<DictionaryAttr>(attr.getValue());
    auto stages = dict ? dict.getAs<IntegerAttr>("num_stages") : IntegerAttr();
    auto ranks = dict ? dict.getAs<DenseI64ArrayAttr>("stage_ranks")
                      : DenseI64ArrayAttr();
    if (!stages || !ranks || stages.getInt() < 1 ||
        ranks.size() != stages.getInt())
      return op->emitError() << "'" << kPipelineAttrName
                             << "' must be a dictionary with num_stages (>= 1) "
                                "and stage_ranks (one rank per stage), got "
                             << attr.getValue();
    return success();
  }
  if (attr.getName() == kShardingsAttrName)
    return verifyResultShardings(op, attr);
  if (attr.getName() == kMeshAttrName && !isa<MeshAttr>(attr.getValue()))
    return op->emitError() << "'" << kMeshAttrName
                           << "' must be a #dist.mesh, got " << attr.getValue();
  if (attr.getName() == kPartitionedAttrName && !isa<UnitAttr>(attr.getValue()))
    return op->emitError() << "'" << kPartitionedAttrName
                           << "' must be a unit attribute";
  return success();
}

/// A sharded argument must fit its tensor and the enclosing mesh; before
/// partitioning (global types) every split dimension must divide.
LogicalResult DistDialect::verifyRegionArgAttribute(Operation *op, unsigned,
                                                    unsigned argIndex,
                                                    NamedAttribute attr) {
  if (attr.getName() == kKeepGatheredAttrName) {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitError()
             << "'" << kKeepGatheredAttrName << "' must be a unit attribute";
    return success();
  }
  if (llvm::is_contained({kStageInputAttrName, kStageOutputGradAttrName,
                          kStashAttrName, kPerStepAttrName},
                         attr.getName().getValue()))
    return verifyIndexAttr(op, attr, "argument " + std::to_string(argIndex));
  if (attr.getName() != kShardingAttrName)
    return success();
  auto sharding = dyn_cast<ShardingAttr>(attr.getValue());
  if (!sharding)
    return op->emitError() << "'" << kShardingAttrName
                           << "' must be a #dist.sharding, got "
                           << attr.getValue();
  auto func = dyn_cast<FunctionOpInterface>(op);
  auto type =
      func ? dyn_cast<RankedTensorType>(func.getArgumentTypes()[argIndex])
           : RankedTensorType();
  if (!type)
    return op->emitError() << "argument " << argIndex
                           << " has a sharding but is not a ranked tensor";
  MeshAttr mesh = getMesh(op);
  if (!mesh)
    return op->emitError() << "argument " << argIndex
                           << " has a sharding but no enclosing op has a "
                              "#dist.mesh ('"
                           << kMeshAttrName << "')";
  if (sharding.getDims().size() > size_t(type.getRank()))
    return op->emitError() << "argument " << argIndex << " sharding "
                           << sharding << " has more dimensions than its type "
                           << type;
  std::string reason;
  if (!op->hasAttr(kPartitionedAttrName) &&
      failed(sharding.getLocalShape(type.getShape(), mesh, &reason)))
    return op->emitError() << "argument " << argIndex << " of type " << type
                           << " cannot be sharded as " << sharding << ": "
                           << reason;
  return success();
}

LogicalResult DistDialect::verifyRegionResultAttribute(Operation *op, unsigned,
                                                       unsigned resultIndex,
                                                       NamedAttribute attr) {
  if (llvm::is_contained({kStageOutputAttrName, kStageInputGradAttrName,
                          kStashAttrName, kPerStepAttrName},
                         attr.getName().getValue()))
    return verifyIndexAttr(op, attr, "result " + std::to_string(resultIndex));
  return success();
}

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

MeshAttr titan::dist::getMesh(Operation *op) {
  for (Operation *p = op; p; p = p->getParentOp())
    if (auto m = p->getAttrOfType<MeshAttr>(DistDialect::kMeshAttrName))
      return m;
  return {};
}

int64_t titan::dist::getGroupSize(MeshAttr mesh, ArrayAttr axes) {
  int64_t n = 1;
  for (Attribute a : axes)
    n *= mesh.getAxisSize(cast<StringAttr>(a).getValue()).value_or(1);
  return n;
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

namespace {
/// Checks `axes` against the module's mesh and returns the group size.
FailureOr<int64_t> verifyAxes(Operation *op, ArrayAttr axes) {
  MeshAttr mesh = getMesh(op);
  if (!mesh)
    return op->emitOpError() << "needs a #dist.mesh on an enclosing op ('"
                             << DistDialect::kMeshAttrName << "')";
  if (axes.empty())
    return op->emitOpError() << "needs at least one mesh axis";
  llvm::SmallDenseSet<StringRef> seen;
  for (Attribute a : axes) {
    StringRef name = cast<StringAttr>(a).getValue();
    if (!mesh.getAxisSize(name))
      return op->emitOpError() << "names unknown mesh axis '" << name << "'";
    if (!seen.insert(name).second)
      return op->emitOpError() << "names mesh axis '" << name << "' twice";
  }
  return getGroupSize(mesh, axes);
}

/// all_gather multiplies `dim` by the group size; reduce_scatter divides it.
/// Uneven (FSDP-padded) shards: a gather may drop the padding of the last
/// shards (result size in ((n-1)*local, n*local]) and a scatter pads its
/// input with zeros to a multiple of the group (result ceil(size / n)).
LogicalResult verifyGatherScatter(Operation *op, Value input, ArrayAttr axes,
                                  int64_t dim, Type futureType, bool gather) {
  FailureOr<int64_t> group = verifyAxes(op, axes);
  if (failed(group))
    return failure();
  auto in = cast<RankedTensorType>(input.getType());
  auto out = cast<FutureType>(futureType).getValueType();
  if (dim < 0 || dim >= in.getRank())
    return op->emitOpError()
           << "dim " << dim << " is out of range for rank " << in.getRank();
  SmallVector<int64_t> expected(in.getShape());
  int64_t n = *group;
  if (gather) {
    expected[dim] *= n;
    // Any size whose padded shards have the input's size.
    if (out.getRank() == in.getRank() && out.getDimSize(dim) <= expected[dim] &&
        (out.getDimSize(dim) + n - 1) / n == in.getDimSize(dim))
      expected[dim] = out.getDimSize(dim);
  } else {
    expected[dim] = (expected[dim] + n - 1) / n;
  }
  auto expectedType = RankedTensorType::get(expected, in.getElementType());
  if (out != expectedType)
    return op->emitOpError()
           << "result type " << out << " must be " << expectedType
           << " for a group of " << n << " ranks";
  return success();
}
/// Collectives whose result has the input's type.
LogicalResult verifySameType(Operation *op, Value input, FutureType future) {
  if (future.getValueType() != input.getType())
    return op->emitOpError()
           << "result type " << future.getValueType()
           << " must equal the input type " << input.getType();
  return success();
}
} // namespace

LogicalResult titan::dist::verifyFutureWaitedOnce(Operation *op) {
  Value future = op->getResult(0);
  unsigned waits = 0;
  for (Operation *user : future.getUsers()) {
    if (!isa<WaitOp>(user))
      return op->emitOpError()
             << "future must be used only by dist.wait, not by '"
             << user->getName() << "'";
    if (user->getBlock() != op->getBlock())
      return op->emitOpError()
             << "future must be waited in the block that starts it";
    ++waits;
  }
  if (waits == 0)
    return op->emitOpError()
           << "future is never waited (every collective needs one dist.wait)";
  if (waits > 1)
    return op->emitOpError() << "future is waited " << waits
                             << " times (it must be waited exactly once)";
  return success();
}

LogicalResult AllGatherStartOp::verify() {
  return verifyGatherScatter(*this, getInput(), getAxes(), getDim(),
                             getFuture().getType(), /*gather=*/true);
}

LogicalResult ReduceScatterStartOp::verify() {
  return verifyGatherScatter(*this, getInput(), getAxes(), getDim(),
                             getFuture().getType(), /*gather=*/false);
}

LogicalResult AllReduceStartOp::verify() {
  if (failed(verifyAxes(*this, getAxes())))
    return failure();
  return verifySameType(*this, getInput(), getFuture().getType());
}

LogicalResult AllToAllStartOp::verify() {
  FailureOr<int64_t> group = verifyAxes(*this, getAxes());
  if (failed(group))
    return failure();
  auto in = getInput().getType();
  int64_t split = getSplitDim(), concat = getConcatDim();
  for (int64_t d : {split, concat})
    if (d < 0 || d >= in.getRank())
      return emitOpError() << "dim " << d << " is out of range for rank "
                           << in.getRank();
  if (in.getDimSize(split) % *group != 0)
    return emitOpError() << "input dimension " << split << " ("
                         << in.getDimSize(split) << ") is not divisible by the "
                         << *group << " ranks of the group";
  SmallVector<int64_t> shape(in.getShape());
  shape[split] /= *group;
  shape[concat] *= *group;
  auto expected = RankedTensorType::get(shape, in.getElementType());
  if (getFuture().getType().getValueType() != expected)
    return emitOpError() << "result type "
                         << getFuture().getType().getValueType() << " must be "
                         << expected << " for a group of " << *group
                         << " ranks";
  return success();
}

LogicalResult BroadcastStartOp::verify() {
  FailureOr<int64_t> group = verifyAxes(*this, getAxes());
  if (failed(group))
    return failure();
  if (int64_t(getRoot()) < 0 || int64_t(getRoot()) >= *group)
    return emitOpError() << "root " << int64_t(getRoot())
                         << " is not a rank of the group of " << *group;
  return verifySameType(*this, getInput(), getFuture().getType());
}

LogicalResult SendRecvStartOp::verify() {
  if (failed(verifyAxes(*this, getAxes())))
    return failure();
  if (getAxes().size() != 1)
    return emitOpError() << "shifts along exactly one mesh axis, got "
                         << getAxes().size();
  return verifySameType(*this, getInput(), getFuture().getType());
}

LogicalResult ShardOffsetOp::verify() {
  FailureOr<int64_t> group = verifyAxes(*this, getAxes());
  if (failed(group))
    return failure();
  if (int64_t(getStride()) < 0 ||
      (*group - 1) * int64_t(getStride()) > INT32_MAX)
    return emitOpError() << "stride " << int64_t(getStride())
                         << " gives offsets outside the i32 range";
  return success();
}

LogicalResult ReplicateOp::verify() {
  return failure(failed(verifyAxes(*this, getAxes())));
}

LogicalResult ShardingConstraintOp::verify() {
  MeshAttr mesh = getMesh(*this);
  if (!mesh)
    return emitOpError() << "needs an enclosing #dist.mesh ('"
                         << DistDialect::kMeshAttrName << "')";
  RankedTensorType type = getInput().getType();
  std::string reason;
  if (getSharding().getDims().size() > size_t(type.getRank()) ||
      failed(getSharding().getLocalShape(type.getShape(), mesh, &reason)))
    return emitOpError() << "cannot shard " << type << " as " << getSharding()
                         << (reason.empty() ? "" : ": ") << reason;
  return success();
}

LogicalResult LocalShardOp::verify() {
  FailureOr<int64_t> group = verifyAxes(*this, getAxes());
  if (failed(group))
    return failure();
  auto in = cast<RankedTensorType>(getInput().getType());
  auto out = cast<RankedTensorType>(getResult().getType());
  int64_t dim = getDim();
  if (dim < 0 || dim >= in.getRank() || in.getRank() != out.getRank() ||
      in.getElementType() != out.getElementType())
    return emitOpError() << "dim " << dim << " must index " << in
                         << ", and the result have its rank and element type";
  mesh::SplitLayout split = getMesh(*this).getSplitLayout(getAxes());
  for (int64_t d = 0; d < in.getRank(); ++d) {
    int64_t expected = d == dim ? in.getDimSize(d) / *group : in.getDimSize(d);
    if ((d == dim && !split.divides(in.getDimSize(d))) ||
        out.getDimSize(d) != expected)
      return emitOpError() << "splits " << in << " along " << dim << " into "
                           << split.numChunks() << " equal parts of "
                           << (split.loadBalanced ? "which each rank keeps two"
                                                  : "which each rank keeps one")
                           << ", not into " << out;
  }
  return success();
}

/// Context-parallel attention's axes: known, and split load-balanced (the
/// kernels take either layout, but the targets' workspace rules size two
/// chunks per rank).
static LogicalResult verifyContextParallelAxes(Operation *op, ArrayAttr axes) {
  if (failed(verifyAxes(op, axes)))
    return failure();
  if (!getMesh(op).getSplitLayout(axes).loadBalanced)
    return op->emitOpError()
           << "needs its axes " << axes
           << " split load-balanced (#dist.mesh's load_balanced)";
  return success();
}

/// The document starts of context-parallel attention, when present: i32
/// B x S over the whole sequence (the local query's rows times the group).
static LogicalResult verifyContextDocumentStarts(Operation *op, Value query,
                                                 Value starts, ArrayAttr axes) {
  auto q = cast<RankedTensorType>(query.getType());
  return titan::verifyDocumentStarts(
      op, query, starts, q.getDimSize(1) * getGroupSize(getMesh(op), axes));
}

/// Context-parallel attention's axes, then its document starts.
static LogicalResult verifyContextAttention(Operation *op, Value query,
                                            Value starts, ArrayAttr axes) {
  if (failed(verifyContextParallelAxes(op, axes)))
    return failure();
  return verifyContextDocumentStarts(op, query, starts, axes);
}

LogicalResult ContextAttentionOp::verify() {
  return verifyContextAttention(*this, getQuery(), getDocumentStarts(),
                                getAxes());
}

LogicalResult ContextAttentionGradOp::verify() {
  return verifyContextAttention(*this, getQuery(), getDocumentStarts(),
                                getAxes());
}

LogicalResult RingAttentionGradOp::verify() {
  return verifyContextAttention(*this, getQuery(), getDocumentStarts(),
                                getAxes());
}

LogicalResult RingAttentionOp::verify() {
  auto q = cast<RankedTensorType>(getQuery().getType());
  auto k = cast<RankedTensorType>(getKey().getType());
  if (failed(verifyContextAttention(*this, getQuery(), getDocumentStarts(),
                                    getAxes())))
    return failure();
  if (q.getRank() != 4 || k.getRank() != 4 || k != getValue().getType() ||
      q.getDimSize(0) != k.getDimSize(0) ||
      q.getDimSize(1) != k.getDimSize(1) ||
      q.getDimSize(3) != k.getDimSize(3) ||
      q.getDimSize(2) % k.getDimSize(2) != 0)
    return emitOpError() << "needs query B x S x Hq x D and key, value "
                            "B x S x Hkv x D with Hkv dividing Hq, got "
                         << q << " and " << k;
  if (q.getDimSize(1) % 2 != 0)
    return emitOpError() << "holds two load-balanced chunks per rank: the "
                            "local sequence "
                         << q.getDimSize(1) << " must be even";
  return success();
}

#define GET_OP_CLASSES
#include "titan/Dialect/Dist/IR/DistOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Collective matmuls
//===----------------------------------------------------------------------===//

namespace {
/// The type of titan.linear(lhs, weight) (`gradInput`:
/// titan.linear_grad_input), or null with `reason` when they do not fit.
RankedTensorType gemmType(RankedTensorType lhs, RankedTensorType weight,
                          bool gradInput, std::string &reason) {
  if (weight.getRank() != 2 || lhs.getRank() < 2 ||
      lhs.getElementType() != weight.getElementType()) {
    reason = "needs 2-D weights and operands of rank >= 2 of one element type";
    return {};
  }
  int64_t contracted = weight.getDimSize(gradInput ? 0 : 1);
  if (lhs.getShape().back() != contracted) {
    reason = "contracts a last dimension of " +
             std::to_string(lhs.getShape().back()) +
             " with a weight dimension of " + std::to_string(contracted);
    return {};
  }
  SmallVector<int64_t> shape(lhs.getShape());
  shape.back() = weight.getDimSize(gradInput ? 1 : 0);
  return RankedTensorType::get(shape, lhs.getElementType());
}

/// A collective matmul's ring: over one known axis other than pp (the
/// kernels' ring is one axis; pp ranks run different programs), along a
/// dimension before the last (the GEMMs' rows).
FailureOr<int64_t> verifyRing(Operation *op, ArrayAttr axes, int64_t dim,
                              int64_t rank) {
  FailureOr<int64_t> group = verifyAxes(op, axes);
  if (failed(group))
    return failure();
  if (axes.size() != 1 ||
      mesh::axisInfo(*mesh::parseAxis(cast<StringAttr>(axes[0]).getValue()))
          .pipeline)
    return op->emitOpError()
           << "runs its ring over one mesh axis other than pp, not " << axes;
  if (dim < 0 || dim >= rank - 1)
    return op->emitOpError() << "dim " << dim
                             << " must be a row dimension of the GEMMs (before "
                                "the last of rank "
                             << rank << ")";
  return group;
}

/// A collective matmul's gather: `gathered` is `input` gathered over the
/// ring (verifyRing) along `dim`; its type, or failure with an error.
FailureOr<RankedTensorType> verifyRingGather(Operation *op, Value input,
                                             Value gathered, ArrayAttr axes,
                                             int64_t dim) {
  auto in = cast<RankedTensorType>(input.getType());
  FailureOr<int64_t> group = verifyRing(op, axes, dim, in.getRank());
  if (failed(group))
    return failure();
  SmallVector<int64_t> shape(in.getShape());
  shape[dim] *= *group;
  auto expected = RankedTensorType::get(shape, in.getElementType());
  if (gathered.getType() != expected)
    return op->emitOpError()
           << "gathers " << in << " over " << *group << " ranks into "
           << expected << ", not " << gathered.getType();
  return expected;
}
} // namespace

LogicalResult AllGatherLinearOp::verify() {
  FailureOr<RankedTensorType> gathered =
      verifyRingGather(*this, getInput(), getGathered(), getAxes(), getDim());
  if (failed(gathered))
    return failure();
  // The kernels' limit (KernelCatalog.def).
  if (getWeights().empty() || getWeights().size() > 16 ||
      getWeights().size() != getOutputs().size())
    return emitOpError() << "needs one output per weight, and 1 to 16 weights";
  for (auto [weight, output] : llvm::zip(getWeights(), getOutputs())) {
    std::string reason;
    RankedTensorType expected =
        gemmType(*gathered, cast<RankedTensorType>(weight.getType()),
                 getGradInput(), reason);
    if (!expected)
      return emitOpError() << reason;
    if (output.getType() != expected)
      return emitOpError() << "output " << output.getType()
                           << " must be the GEMM's " << expected;
  }
  return success();
}

LogicalResult LinearReduceScatterOp::verify() {
  if (getPairs().empty() || getPairs().size() % 2 != 0 ||
      getPairs().size() > 32)
    return emitOpError() << "needs 1 to 16 pairs of (lhs, weight), not "
                         << getPairs().size() << " operands";
  RankedTensorType sum;
  for (unsigned i = 0; i < getNumGemms(); ++i) {
    std::string reason;
    RankedTensorType gemm = gemmType(
        cast<RankedTensorType>(getLhs(i).getType()),
        cast<RankedTensorType>(getWeight(i).getType()), getGradInput(), reason);
    if (!gemm)
      return emitOpError() << reason;
    if (sum && gemm != sum)
      return emitOpError() << "sums GEMMs of types " << sum << " and " << gemm;
    sum = gemm;
  }
  FailureOr<int64_t> group =
      verifyRing(*this, getAxes(), getDim(), sum.getRank());
  if (failed(group))
    return failure();
  if (sum.getDimSize(getDim()) % *group != 0)
    return emitOpError() << "dim " << getDim() << " of " << sum
                         << " must divide into " << *group << " parts";
  SmallVector<int64_t> shape(sum.getShape());
  shape[getDim()] /= *group;
  auto expected = RankedTensorType::get(shape, sum.getElementType());
  if (getResult().getType() != expected)
    return emitOpError() << "reduce-scatters " << sum << " into " << expected
                         << ", not " << getResult().getType();
  return success();
}

//===----------------------------------------------------------------------===//
// Float8's collective matmuls
//===----------------------------------------------------------------------===//

namespace {
bool isFloat8(RankedTensorType t) {
  return titan::isFloat8Type(t.getElementType());
}

/// The shape of titan.scaled_matmul's `linear` (`gradInput`: `grad_input`)
/// form on `lhs` (untransposed, rank-0 scale) and `weight` (K-major when
/// `transposed`) with `weightScale`, or failure with `reason`: the rules of
/// ScaledMatmulOp::verify for these two forms.
FailureOr<SmallVector<int64_t>> scaledGemmShape(RankedTensorType lhs,
                                                RankedTensorType weight,
                                                RankedTensorType weightScale,
                                                bool gradInput, bool transposed,
                                                std::string &reason) {
  if (lhs.getRank() < 2 || weight.getRank() != 2 || !isFloat8(lhs) ||
      !isFloat8(weight)) {
    reason = "needs float8 operands: 2-D weights, lhs of rank >= 2";
    return failure();
  }
  if (transposed && !gradInput) {
    reason = "takes K-major weights (rhs_transposed) only in the grad_input "
             "form";
    return failure();
  }
  // The weight as [N, K].
  int64_t n = weight.getDimSize(transposed ? 1 : 0);
  int64_t k = weight.getDimSize(transposed ? 0 : 1);
  int64_t contracted = gradInput ? n : k;
  if (lhs.getShape().back() != contracted) {
    reason = "contracts a last dimension of " +
             std::to_string(lhs.getShape().back()) +
             " with a weight dimension of " + std::to_string(contracted);
    return failure();
  }
  // Rank 0, or one scale per output column: [N, 1] reduced along K
  // (linear), [1, K] reduced along N (grad_input).
  SmallVector<int64_t> perColumn =
      gradInput ? SmallVector<int64_t>{1, k} : SmallVector<int64_t>{n, 1};
  if (!weightScale.getElementType().isF32() ||
      (weightScale.getRank() != 0 &&
       weightScale.getShape() != ArrayRef<int64_t>(perColumn))) {
    reason = "needs f32 weight scales of rank 0 or one per output column";
    return failure();
  }
  SmallVector<int64_t> shape(lhs.getShape());
  shape.back() = gradInput ? k : n;
  return shape;
}

bool isGemmResultType(Type element) {
  return element.isF32() || element.isBF16() || element.isF16();
}

RankedTensorType tensorOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}
} // namespace

LogicalResult AllGatherScaledMatmulOp::verify() {
  FailureOr<RankedTensorType> gathered =
      verifyRingGather(*this, getInput(), getGathered(), getAxes(), getDim());
  if (failed(gathered))
    return failure();
  // The kernels' limit (KernelCatalog.def).
  if (getRhs().empty() || getRhs().size() % 2 != 0 || getNumGemms() > 16 ||
      getNumGemms() != getOutputs().size())
    return emitOpError() << "needs 1 to 16 pairs of (weight, weight scale) "
                            "and one output per pair";
  Type weightElement = tensorOf(getWeight(0)).getElementType();
  for (unsigned i = 0; i < getNumGemms(); ++i) {
    std::string reason;
    FailureOr<SmallVector<int64_t>> gemm = scaledGemmShape(
        *gathered, tensorOf(getWeight(i)), tensorOf(getWeightScale(i)),
        getGradInput(), getRhsTransposed(), reason);
    if (failed(gemm))
      return emitOpError() << "GEMM " << i << ": " << reason;
    if (tensorOf(getWeight(i)).getElementType() != weightElement)
      return emitOpError() << "needs weights of one float8 type";
    RankedTensorType out = tensorOf(getOutputs()[i]);
    if (out.getShape() != ArrayRef<int64_t>(*gemm) ||
        !isGemmResultType(out.getElementType()))
      return emitOpError() << "output " << out
                           << " must have the GEMM's shape and be f32, bf16 "
                              "or f16";
  }
  return success();
}

bool ScaledMatmulReduceScatterOp::isRowScale(ShapedType lhs, ShapedType scale) {
  return scale.getRank() > 0 && scale.getShape().back() == 1 &&
         scale.getShape().drop_back() == lhs.getShape().drop_back();
}

LogicalResult ScaledMatmulReduceScatterOp::verify() {
  if (getQuads().empty() || getQuads().size() % 4 != 0 || getNumGemms() > 16)
    return emitOpError() << "needs 1 to 16 quads of (lhs, lhs scale, weight, "
                            "weight scale), not "
                         << getQuads().size() << " operands";
  RankedTensorType result = getResult().getType();
  if (!isGemmResultType(result.getElementType()))
    return emitOpError() << "produces f32, bf16 or f16";
  SmallVector<int64_t> sum;
  for (unsigned i = 0; i < getNumGemms(); ++i) {
    // One scale, or one per lhs row (a shard's rows take theirs).
    RankedTensorType scale = tensorOf(getLhsScale(i));
    if ((scale.getRank() != 0 && !isRowScale(tensorOf(getLhs(i)), scale)) ||
        !scale.getElementType().isF32())
      return emitOpError() << "GEMM " << i
                           << ": needs an f32 lhs scale of rank 0 or one per "
                              "lhs row";
    if (tensorOf(getLhs(i)).getElementType() !=
            tensorOf(getLhs(0)).getElementType() ||
        tensorOf(getWeight(i)).getElementType() !=
            tensorOf(getWeight(0)).getElementType())
      return emitOpError() << "needs lhs of one float8 type and weights of "
                              "one float8 type";
    std::string reason;
    FailureOr<SmallVector<int64_t>> gemm =
        scaledGemmShape(tensorOf(getLhs(i)), tensorOf(getWeight(i)),
                        tensorOf(getWeightScale(i)), getGradInput(),
                        getRhsTransposed(), reason);
    if (failed(gemm))
      return emitOpError() << "GEMM " << i << ": " << reason;
    if (i > 0 && *gemm != sum)
      return emitOpError() << "sums GEMMs of different shapes";
    sum = *gemm;
  }
  FailureOr<int64_t> group =
      verifyRing(*this, getAxes(), getDim(), int64_t(sum.size()));
  if (failed(group))
    return failure();
  if (sum[getDim()] % *group != 0)
    return emitOpError() << "dim " << getDim() << " of the GEMMs' sum must "
                         << "divide into " << *group << " parts";
  sum[getDim()] /= *group;
  if (result.getShape() != ArrayRef<int64_t>(sum))
    return emitOpError() << "reduce-scatters the GEMMs' sum into "
                         << RankedTensorType::get(sum, result.getElementType())
                         << ", not " << result;
  return success();
}
