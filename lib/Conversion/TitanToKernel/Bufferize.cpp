//===- Bufferize.cpp - titan steps -> kernel IR ---------------------------===//
//
// A step is a straight line of ops on static shapes, so bufferization needs
// no dataflow fixpoint: one backward scan finds where each buffer is last
// read, and one forward scan decides, op by op, where each result is
// written (its in-place operand, its slot, or a new buffer).
//
//===----------------------------------------------------------------------===//

#include "titan/Contract/Manifest.h"
#include "titan/Conversion/TitanToKernel/Passes.h"
#include "titan/Dialect/Dist/IR/Dist.h"
#include "titan/Dialect/Kernel/IR/Kernel.h"
#include "titan/Dialect/Titan/IR/KernelInterface.h"
#include "titan/Dialect/Titan/IR/Parameters.h"
#include "titan/Dialect/Titan/IR/TitanDialect.h"
#include "titan/Dialect/Titan/IR/TitanOps.h"
#include "titan/Target/TargetBackend.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringMap.h"

namespace titan {
#define GEN_PASS_DEF_TITANBUFFERIZE
#include "titan/Conversion/TitanToKernel/Passes.h.inc"
} // namespace titan

using namespace mlir;
using namespace titan;

namespace {

/// The buffer type of a tensor (or of the tensor a future will hold).
MemRefType bufferType(Type type) {
  if (auto future = dyn_cast<dist::FutureType>(type))
    type = future.getValueType();
  auto tensor = cast<RankedTensorType>(type);
  return MemRefType::get(tensor.getShape(), tensor.getElementType());
}

/// Bytes of f32 copies of the 16-bit float buffers of `op` (operands then
/// results, each rounded up to 64 bytes): what a target that widens 16-bit
/// kernels (its DtypePolicy) stages in the workspace.
int64_t widenedBytes(Operation *op) {
  int64_t bytes = 0;
  for (Type t :
       llvm::concat<const Type>(op->getOperandTypes(), op->getResultTypes())) {
    auto shaped = dyn_cast<ShapedType>(t);
    if (!shaped ||
        !(shaped.getElementType().isBF16() || shaped.getElementType().isF16()))
      continue;
    bytes += (shaped.getNumElements() * 4 + 63) / 64 * 64;
  }
  return bytes;
}

class StepBufferizer {
public:
  StepBufferizer(func::FuncOp step, StringRef target, bool widenLowPrecision)
      : step(step), b(step.getContext()), target(target),
        widenLowPrecision(widenLowPrecision) {}

  LogicalResult run() {
    if (!step.getBody().hasOneBlock())
      return step.emitOpError() << "must have a single block to be bufferized";
    for (Type t : llvm::concat<const Type>(step.getArgumentTypes(),
                                           step.getResultTypes()))
      if (auto tensor = dyn_cast<RankedTensorType>(t);
          !tensor || !tensor.hasStaticShape())
        return step.emitOpError()
               << "must take and return statically shaped tensors, got " << t;
    if (failed(collectSlots()))
      return failure();
    analyze();
    return rewrite();
  }

private:
  //===--------------------------------------------------------------------===//
  // Slots: the step's long-lived state
  //===--------------------------------------------------------------------===//

  unsigned addSlot(StringRef name, Type type) {
    auto [it, inserted] = slotIndex.try_emplace(name, slotNames.size());
    if (inserted) {
      slotNames.push_back(name.str());
      slotTypes.push_back(bufferType(type));
    }
    return it->second;
  }

  /// The slot of a step argument or result. A pipeline stage's
  /// per-microbatch values (the activations it receives and sends, their
  /// gradients, its stashes, and its microbatch of tokens and labels) live
  /// in the stage's frame (manifest::FrameSlot), which the memory plan
  /// places apart, once per microbatch in flight;
  /// what the stage computes once per step ("per_step<stage>:<j>") is an
  /// arena slot.
  std::optional<std::string> slotOf(DictionaryAttr attrs) {
    auto stage =
        step->getAttrOfType<IntegerAttr>(dist::DistDialect::kStageAttrName);
    if (stage && attrs) {
      using manifest::FrameSlot;
      static constexpr std::pair<StringLiteral, FrameSlot::Kind> kinds[] = {
          {dist::DistDialect::kStageInputAttrName, FrameSlot::StageInput},
          {dist::DistDialect::kStageOutputAttrName, FrameSlot::StageOutput},
          {dist::DistDialect::kStageOutputGradAttrName,
           FrameSlot::StageOutputGrad},
          {dist::DistDialect::kStageInputGradAttrName,
           FrameSlot::StageInputGrad},
          {dist::DistDialect::kStashAttrName, FrameSlot::Stash}};
      for (auto [attr, kind] : kinds)
        if (auto index = attrs.getAs<IntegerAttr>(attr))
          return FrameSlot{stage.getInt(), kind, index.getInt()}.str();
      // A gradient summed over the step's microbatches: in the arena.
      if (auto name = attrs.getAs<StringAttr>(
              dist::DistDialect::kUnshardedGradAttrName))
        return "unsharded_grad:" + name.str();
      // Once per step, for every microbatch: in the arena.
      if (auto index =
              attrs.getAs<IntegerAttr>(dist::DistDialect::kPerStepAttrName))
        return "per_step" + std::to_string(stage.getInt()) + ":" +
               std::to_string(index.getInt());
      // The microbatch's inputs: in its frame.
      if (auto input = attrs.getAs<StringAttr>(TitanDialect::kInputAttrName))
        for (FrameSlot::Kind kind :
             {FrameSlot::Tokens, FrameSlot::Labels, FrameSlot::DocumentStarts})
          if (input.getValue() == FrameSlot::inputName(kind))
            return FrameSlot{stage.getInt(), kind}.str();
    }
    return getStateSlot(attrs);
  }

  LogicalResult collectSlots() {
    for (unsigned i = 0, e = step.getNumArguments(); i < e; ++i) {
      std::optional<std::string> slot = slotOf(step.getArgAttrDict(i));
      if (!slot)
        return step.emitOpError()
               << "argument #" << i
               << " has no state slot (a titan.param, titan.grad, "
                  "titan.exp_avg, titan.exp_avg_sq or titan.input attribute)";
      if (slotIndex.count(*slot))
        return step.emitOpError()
               << "arguments share the state slot '" << *slot << "'";
      argSlots.push_back(addSlot(*slot, step.getArgumentTypes()[i]));
    }
    llvm::SmallDenseSet<unsigned> returned;
    for (unsigned i = 0, e = step.getNumResults(); i < e; ++i) {
      std::optional<std::string> slot = slotOf(step.getResultAttrDict(i));
      if (!slot)
        return step.emitOpError()
               << "result #" << i
               << " has no state slot (a titan.param, titan.grad, "
                  "titan.exp_avg, titan.exp_avg_sq or titan.output attribute)";
      Type type = step.getResultTypes()[i];
      if (auto it = slotIndex.find(*slot);
          it != slotIndex.end() && slotTypes[it->second] != bufferType(type))
        return step.emitOpError() << "result #" << i << " of type " << type
                                  << " does not fit its state slot '" << *slot
                                  << "' of type " << slotTypes[it->second];
      unsigned index = addSlot(*slot, type);
      if (!returned.insert(index).second)
        return step.emitOpError()
               << "results share the state slot '" << *slot << "'";
      resultSlots.push_back(index);
    }
    return success();
  }

  //===--------------------------------------------------------------------===//
  // Analysis on tensors
  //===--------------------------------------------------------------------===//

  /// The element offset of a titan.slice whose box is one contiguous run
  /// of its input (a view), else std::nullopt.
  static std::optional<int64_t> contiguousSlice(Operation *op) {
    auto slice = dyn_cast<SliceOp>(op);
    return slice ? slice.getContiguousOffset() : std::nullopt;
  }

  /// The value whose buffer `v` lives in: views and waits look through to
  /// their source (a wait's result is its collective's output).
  Value root(Value v) const {
    Value r = roots.lookup(v);
    return r ? r : v;
  }

  void analyze() {
    Block &body = step.getBody().front();
    for (Operation &op : body)
      ops.push_back(&op);
    for (auto [index, op] : llvm::enumerate(ops)) {
      unsigned i = index;
      if (op->hasTrait<titan::OpTrait::BufferView>() || contiguousSlice(op))
        roots[op->getResult(0)] = root(op->getOperand(0));
      else if (auto wait = dyn_cast<dist::WaitOp>(op))
        roots[wait.getResult()] = root(wait.getFuture());
      for (Value operand : op->getOperands())
        lastUse[root(operand)] = i;
      // A collective reads its input until it is waited for.
      if (auto wait = dyn_cast<dist::WaitOp>(op))
        for (Value input : wait.getFuture().getDefiningOp()->getOperands())
          lastUse[root(input)] = i;
    }
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    for (auto [p, value] : llvm::enumerate(ret.getOperands())) {
      returnedTo[root(value)].push_back(resultSlots[p]);
      if (slotNames[resultSlots[p]] == "output:loss")
        if (Operation *def = root(value).getDefiningOp())
          lossIndex = indexOf(def);
    }
  }

  int64_t indexOf(Operation *op) const {
    return llvm::find(ops, op) - ops.begin();
  }

  int64_t lastUseOf(Value root) const {
    auto it = lastUse.find(root);
    return it == lastUse.end() ? -1 : int64_t(it->second);
  }

  //===--------------------------------------------------------------------===//
  // Rewrite into the kernel IR
  //===--------------------------------------------------------------------===//

  /// `buffer` seen as `type` (same bytes).
  Value viewAs(Value buffer, MemRefType type, Location loc) {
    if (buffer.getType() == type)
      return buffer;
    return kernel::ViewOp::create(b, loc, type, buffer);
  }

  /// A forward value the backward reads: defined by the op at `index`, at
  /// or before the loss, and read after it.
  bool isActivation(Value result, unsigned index) const {
    return lossIndex >= 0 && int64_t(index) <= lossIndex &&
           lastUseOf(root(result)) > lossIndex;
  }

  /// A low-precision copy of a parameter (mixed precision's cast of the
  /// parameter or of its replica).
  bool isParameterCopy(Operation *op) const {
    auto copy = dyn_cast<CastOp>(op);
    if (!copy)
      return false;
    auto arg = dyn_cast<BlockArgument>(root(copy.getInput()));
    return arg && StringRef(slotNames[argSlots[arg.getArgNumber()]])
                      .starts_with("param:");
  }

  /// The allocation a buffer (or a view of it) comes from, if any.
  static kernel::AllocOp allocOf(Value buffer) {
    while (auto view = buffer.getDefiningOp<kernel::ViewOp>())
      buffer = view.getSource();
    return buffer.getDefiningOp<kernel::AllocOp>();
  }

  /// Whether slot `slot` may be overwritten at op `index`: nothing reads the
  /// value it held at entry from then on.
  bool slotFreeAt(unsigned slot, unsigned index) const {
    Value entry = slotEntry[slot];
    return !entry || lastUseOf(entry) < int64_t(index);
  }

  /// Where result `j` of the op at `index` is written.
  Value destination(Operation *op, unsigned index, unsigned j,
                    KernelOpInterface contract) {
    Value result = op->getResult(j);
    Location loc = op->getLoc();
    MemRefType type = bufferType(result.getType());
    SmallVector<unsigned, 1> slots = returnedTo.lookup(result);

    // Into the slot it is returned to.
    for (unsigned slot : slots)
      if (!slotWritten.contains(slot) && slotFreeAt(slot, index)) {
        slotWritten.insert(slot);
        placedIn[result] = slot;
        return viewAs(slotArgs[slot], type, loc);
      }
    // In place: the operand's buffer is read for the last time here.
    if (std::optional<unsigned> k = contract.getInPlaceOperand(j)) {
      Value operand = op->getOperand(*k);
      Value source = root(operand);
      auto placed = placedIn.find(source);
      bool inSlot = placed != placedIn.end();
      bool allowed = lastUseOf(source) == int64_t(index) &&
                     !claimed.contains(source) &&
                     buffers.lookup(operand).getType() == type &&
                     // A state slot only for the result that replaces it.
                     (!inSlot || llvm::is_contained(slots, placed->second));
      if (allowed) {
        claimed.insert(source);
        // The buffer now also holds this result: it may outlive the loss.
        if (isActivation(result, index))
          if (auto alloc = allocOf(buffers.lookup(operand)))
            alloc.setKind(kernel::AllocKind::Activation);
        if (inSlot) {
          // Copied first: inserting `result` may grow the map under
          // `placed`.
          unsigned slot = placed->second;
          placedIn[result] = slot;
          slotWritten.insert(slot);
        }
        return buffers.lookup(operand);
      }
    }
    auto kind = kernel::AllocKind::Temporary;
    if (isa<dist::FutureType>(result.getType()))
      kind = kernel::AllocKind::Collective;
    else if (isParameterCopy(op))
      kind = kernel::AllocKind::Copy;
    else if (isActivation(result, index))
      kind = kernel::AllocKind::Activation;
    return kernel::AllocOp::create(
        b, loc, type, kernel::AllocKindAttr::get(b.getContext(), kind),
        IntegerAttr());
  }

  LogicalResult rewriteOp(Operation *op, unsigned index, Value stream) {
    Location loc = op->getLoc();
    if (std::optional<int64_t> offset = contiguousSlice(op)) {
      // A view at the box's first byte: no copy.
      Value source = buffers.lookup(op->getOperand(0));
      int64_t bytes =
          *offset *
          cast<MemRefType>(source.getType()).getElementTypeBitWidth() / 8;
      buffers[op->getResult(0)] =
          kernel::ViewOp::create(b, loc, bufferType(op->getResult(0).getType()),
                                 source, b.getI64IntegerAttr(bytes));
      return success();
    }
    if (op->hasTrait<titan::OpTrait::BufferView>()) {
      buffers[op->getResult(0)] =
          viewAs(buffers.lookup(op->getOperand(0)),
                 bufferType(op->getResult(0).getType()), loc);
      return success();
    }
    if (auto wait = dyn_cast<dist::WaitOp>(op)) {
      kernel::WaitOp::create(b, loc, requests.lookup(wait.getFuture()), stream);
      buffers[wait.getResult()] = buffers.lookup(wait.getFuture());
      if (auto it = placedIn.find(wait.getFuture()); it != placedIn.end())
        placedIn[wait.getResult()] = it->second;
      return success();
    }
    auto contract = dyn_cast<KernelOpInterface>(op);
    if (!contract)
      return op->emitOpError()
             << "has no kernel contract (KernelOpInterface) and cannot be "
                "bufferized";
    SmallVector<Value> outputs;
    for (unsigned j = 0, e = op->getNumResults(); j < e; ++j)
      outputs.push_back(destination(op, index, j, contract));
    SmallVector<Value> inputs;
    for (Value operand : op->getOperands())
      inputs.push_back(buffers.lookup(operand));
    Value workspace;
    int64_t bytes = getWorkspaceBytes(op, target);
    bool collective = op->getNumResults() == 1 &&
                      isa<dist::FutureType>(op->getResult(0).getType());
    if (widenLowPrecision && !collective && !isa<CastOp>(op))
      bytes += widenedBytes(op);
    if (bytes > 0)
      workspace = kernel::AllocOp::create(
          b, loc, MemRefType::get({bytes}, b.getI8Type()),
          kernel::AllocKindAttr::get(b.getContext(),
                                     kernel::AllocKind::Workspace),
          IntegerAttr());
    StringAttr name = b.getStringAttr(contract.getKernelName());
    ArrayAttr params = contract.getKernelParams();
    if (collective) {
      if (inputs.size() != 1)
        return op->emitOpError() << "a collective takes one input buffer";
      requests[op->getResult(0)] = kernel::CollectiveStartOp::create(
          b, loc, kernel::RequestType::get(b.getContext()), name, inputs[0],
          outputs[0], workspace, stream, params);
    } else {
      auto call = kernel::CallOp::create(b, loc, name, inputs, outputs,
                                         workspace, stream, params);
      if (isa<AddOp>(op) &&
          (op->hasAttr(TitanDialect::kRecomputeRegionAttrName) ||
           op->hasAttr(TitanDialect::kRecomputedAttrName)))
        call->setAttr(kernel::KernelDialect::kSeparateRoundingAttrName,
                      b.getUnitAttr());
    }
    for (auto [result, buffer] : llvm::zip(op->getResults(), outputs))
      buffers[result] = buffer;
    return success();
  }

  LogicalResult rewrite() {
    MLIRContext *ctx = step.getContext();
    b.setInsertionPoint(step);
    auto kernelStep = func::FuncOp::create(
        b, step.getLoc(), step.getSymName(),
        b.getFunctionType(SmallVector<Type>(slotTypes.begin(), slotTypes.end()),
                          {}));
    kernelStep.setVisibility(step.getVisibility());
    // All at once: setting one argument's attributes rebuilds them all.
    SmallVector<Attribute> argAttrs;
    for (const std::string &name : slotNames)
      argAttrs.push_back(b.getDictionaryAttr(b.getNamedAttr(
          kernel::KernelDialect::kSlotAttrName, StringAttr::get(ctx, name))));
    kernelStep.setAllArgAttrs(argAttrs);
    Block *body = kernelStep.addEntryBlock();
    b.setInsertionPointToStart(body);
    slotArgs.assign(body->getArguments().begin(), body->getArguments().end());
    slotEntry.assign(slotNames.size(), Value());
    Block &old = step.getBody().front();
    for (auto [i, arg] : llvm::enumerate(old.getArguments())) {
      buffers[arg] = slotArgs[argSlots[i]];
      slotEntry[argSlots[i]] = arg;
      placedIn[arg] = argSlots[i];
    }
    Value stream = kernel::StreamOp::create(
        b, step.getLoc(), kernel::StreamType::get(ctx), b.getI64IntegerAttr(0));

    for (auto [index, op] : llvm::enumerate(ops)) {
      if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        if (failed(copyResults(ret, stream)))
          return failure();
        continue;
      }
      if (failed(rewriteOp(op, index, stream)))
        return failure();
    }
    func::ReturnOp::create(b, step.getLoc());
    step.erase();
    return success();
  }

  /// Copies into their slots the results that were not computed there.
  /// Sources that are state slots go first, before any slot is written.
  LogicalResult copyResults(func::ReturnOp ret, Value stream) {
    SmallVector<std::pair<Value, unsigned>> copies;
    for (auto [p, value] : llvm::enumerate(ret.getOperands())) {
      unsigned slot = resultSlots[p];
      auto placed = placedIn.find(root(value));
      if (placed != placedIn.end() && placed->second == slot &&
          buffers.lookup(value).getType() == slotTypes[slot])
        continue;
      copies.push_back({value, slot});
    }
    std::stable_partition(copies.begin(), copies.end(),
                          [&](const std::pair<Value, unsigned> &c) {
                            return isa<BlockArgument>(root(c.first));
                          });
    for (auto [i, copy] : llvm::enumerate(copies)) {
      auto [value, slot] = copy;
      Value source = buffers.lookup(value);
      // A slot read by a later copy must not be written before it.
      for (auto &later : ArrayRef(copies).drop_front(i + 1))
        if (auto arg = dyn_cast<BlockArgument>(root(later.first));
            arg && argSlots[arg.getArgNumber()] == slot)
          return ret.emitOpError()
                 << "returns state slot '" << slotNames[slot]
                 << "' into another slot while overwriting it";
      kernel::CopyOp::create(b, ret.getLoc(), source, slotArgs[slot], stream);
    }
    return success();
  }

  func::FuncOp step;
  OpBuilder b;
  StringRef target; ///< the target backend's name
  bool widenLowPrecision;

  // Slots.
  SmallVector<std::string> slotNames;
  SmallVector<MemRefType> slotTypes;
  llvm::StringMap<unsigned> slotIndex;
  SmallVector<unsigned> argSlots, resultSlots;

  // Analysis.
  SmallVector<Operation *> ops;
  DenseMap<Value, Value> roots;
  DenseMap<Value, unsigned> lastUse;
  DenseMap<Value, SmallVector<unsigned, 1>> returnedTo;
  int64_t lossIndex = -1;

  // Rewrite state.
  SmallVector<Value> slotArgs, slotEntry;
  DenseMap<Value, Value> buffers, requests;
  DenseMap<Value, unsigned> placedIn; ///< root -> the slot it is computed in
  llvm::SmallDenseSet<Value> claimed; ///< roots reused in place
  llvm::SmallDenseSet<unsigned> slotWritten;
};

struct TitanBufferizePass
    : titan::impl::TitanBufferizeBase<TitanBufferizePass> {
  using Base::Base;

  /// debug.deterministic: the attention gradients ask for their
  /// deterministic kernels, which their parameters and the targets'
  /// workspace rules then follow.
  static void markDeterministic(ModuleOp module) {
    module.walk([](Operation *op) {
      if (auto grad = dyn_cast<AttentionGradOp>(op))
        grad.setDeterministic(true);
      else if (auto grad = dyn_cast<dist::ContextAttentionGradOp>(op))
        grad.setDeterministic(true);
    });
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<std::string> names(functions.begin(), functions.end());
    if (names.empty())
      names = {"forward_backward", "optimizer_step"};
    SmallVector<func::FuncOp> steps;
    for (const std::string &name : names) {
      func::FuncOp step = lookupFunction(module, name, "titan-bufferize");
      if (!step)
        return signalPassFailure();
      steps.push_back(step);
    }
    // The kernel IR module holds the steps only (the forward is part of
    // forward_backward).
    for (auto func : llvm::make_early_inc_range(module.getOps<func::FuncOp>()))
      if (!llvm::is_contained(steps, func))
        func.erase();
    if (failed(checkBackend(module, target)))
      return signalPassFailure();
    for (const std::string &name : hostSteps)
      if (!llvm::is_contained(names, name)) {
        module.emitError() << "titan-bufferize: host step '" << name
                           << "' is not one of the steps bufferized";
        return signalPassFailure();
      }
    if (!hostSteps.empty() && failed(checkBackend(module, hostTarget)))
      return signalPassFailure();
    if (deterministic)
      markDeterministic(module);
    for (auto [name, step] : llvm::zip(names, steps)) {
      bool onHost = llvm::is_contained(hostSteps, name);
      StringRef rules = onHost ? StringRef(hostTarget) : StringRef(target);
      // The host's kernels run 16-bit buffers on widened copies.
      if (failed(
              StepBufferizer(step, rules, onHost || widenLowPrecision).run()))
        return signalPassFailure();
      // (The bufferized step replaces the function.)
      if (onHost)
        module.lookupSymbol<func::FuncOp>(name)->setAttr(
            kernel::KernelDialect::kHostStepAttrName,
            UnitAttr::get(&getContext()));
    }
  }

  /// Whether target `name` is registered with its workspace models.
  LogicalResult checkBackend(ModuleOp module, StringRef name) {
    const titan::target::TargetBackend *backend =
        titan::target::lookupTargetBackend(name);
    if (!backend)
      return module.emitError()
             << "titan-bufferize: unknown target '" << name
             << "' (registered: " << titan::target::getTargetBackendNameList()
             << ")";
    if (!backend->hasExternalModels(&getContext()))
      return module.emitError()
             << "titan-bufferize: the " << name
             << " target's workspace models are not registered "
                "(titan::registerAllDialects registers them)";
    return success();
  }
};

} // namespace
