//===- GeneratedDeviceKernels.cpp - kernel.generic as GPU kernels ---------===//
//
// A generated kernel on a GPU: an NVVM kernel in the step's gpu.module,
// which MLIR's gpu-module-to-binary compiles with LLVM's NVPTX back end and
// ptxas. Pointwise kernels are grid-stride loops over packs of up to 16
// bytes; kernels with transposed outputs go through shared-memory tiles;
// reductions combine over warps (shuffles), blocks (shared memory) and the
// grid (one atomic per block).
//
//===----------------------------------------------------------------------===//

#include "titan/Conversion/KernelToRuntimeCalls/GeneratedKernels.h"

#include "KernelBody.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"

#include <limits>
#include <tuple>

using namespace mlir;
using namespace titan;

/// nvvm.read.ptx.sreg.* as i64.
template <typename SRegOp> static Value sreg(OpBuilder &b, Location loc) {
  Value v = SRegOp::create(b, loc, b.getI32Type());
  return LLVM::ZExtOp::create(b, loc, b.getI64Type(), v);
}

namespace {
/// The shared memory a block's reduction passes through: one i32 per warp
/// (at most 32 warps a block), declared once per device module.
Value reductionScratch(OpBuilder &b, Location loc, gpu::GPUModuleOp device) {
  constexpr StringLiteral name = "__titan_reduction_scratch";
  auto type = LLVM::LLVMArrayType::get(b.getI32Type(), 32);
  if (!device.lookupSymbol(name)) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(device.getBody());
    LLVM::GlobalOp::create(b, loc, type, /*isConstant=*/false,
                           LLVM::Linkage::Internal, name, Attribute(),
                           /*alignment=*/4, /*addrSpace=*/3);
  }
  return LLVM::AddressOfOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext(), 3), name);
}

/// `v` (32 or 64 bits) from the lane `offset` away in a butterfly (a
/// 64-bit value as its two halves).
Value shuffleXor(OpBuilder &b, Location loc, Value v, int offset) {
  Type i32 = b.getI32Type();
  auto c = [&](int64_t x) {
    return LLVM::ConstantOp::create(b, loc, i32, b.getI32IntegerAttr(x));
  };
  auto shuffle = [&](Value x) {
    return NVVM::ShflOp::create(b, loc, x.getType(), c(-1), x, c(offset), c(31),
                                NVVM::ShflKind::bfly, UnitAttr());
  };
  if (v.getType().getIntOrFloatBitWidth() == 32)
    return shuffle(v);
  Type i64 = b.getI64Type();
  Value bits = LLVM::BitcastOp::create(b, loc, i64, v);
  Value low = shuffle(LLVM::TruncOp::create(b, loc, i32, bits));
  Value high = shuffle(LLVM::TruncOp::create(
      b, loc, i32,
      LLVM::LShrOp::create(
          b, loc, bits,
          LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(32)))));
  Value joined = LLVM::OrOp::create(
      b, loc, LLVM::ZExtOp::create(b, loc, i64, low),
      LLVM::ShlOp::create(
          b, loc, LLVM::ZExtOp::create(b, loc, i64, high),
          LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(32))));
  return LLVM::BitcastOp::create(b, loc, v.getType(), joined);
}

/// `v` combined over the warp's 32 lanes by butterfly shuffles, in every
/// lane (with the same bits in each: `combine` is commutative).
Value warpCombine(OpBuilder &b, Location loc, Value v,
                  function_ref<Value(Value, Value)> combine) {
  for (int offset = 16; offset > 0; offset /= 2)
    v = combine(v, shuffleXor(b, loc, v, offset));
  return v;
}

/// The largest of `v` (the bits of a non-negative f32) over the warp.
Value warpAbsMax(OpBuilder &b, Location loc, Value v) {
  return warpCombine(b, loc, v, [&](Value x, Value y) -> Value {
    return LLVM::UMaxOp::create(b, loc, x, y);
  });
}

/// A GPU's reductions: each thread's accumulator reduced over its warp
/// (shuffles), the warps' over the block (shared memory), and the block's
/// atomically into the buffer (which the launch zeroed): one atomic per
/// block, in any order, to the same bits.
void publishDeviceReductions(OpBuilder &b, Location loc,
                             ArrayRef<Value> accumulators,
                             ArrayRef<Value> buffers, gpu::GPUModuleOp device) {
  Type i32 = b.getI32Type();
  auto c = [&](int64_t x) {
    return LLVM::ConstantOp::create(b, loc, i32, b.getI32IntegerAttr(x));
  };
  Value thread = NVVM::ThreadIdXOp::create(b, loc, i32);
  Value warps = LLVM::UDivOp::create(
      b, loc, NVVM::BlockDimXOp::create(b, loc, i32), c(32));
  Value lane = LLVM::AndOp::create(b, loc, thread, c(31));
  Value warp = LLVM::LShrOp::create(b, loc, thread, c(5));
  Value laneZero =
      LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq, lane, c(0));
  Value scratch = reductionScratch(b, loc, device);
  Type ptr3 = scratch.getType();
  for (auto [acc, buffer] : llvm::zip(accumulators, buffers)) {
    Value mine = warpAbsMax(b, loc, acc);
    emitIf(b, loc, laneZero, [&] {
      Value slot = LLVM::GEPOp::create(b, loc, ptr3, i32, scratch,
                                       ArrayRef<LLVM::GEPArg>{warp});
      LLVM::StoreOp::create(b, loc, mine, slot);
    });
    NVVM::Barrier0Op::create(b, loc);
    Value firstWarp =
        LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq, warp, c(0));
    emitIf(b, loc, firstWarp, [&] {
      Value inBlock =
          LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ult, lane, warps);
      // Lanes past the block's warps read slot 0 (any warp's value is a
      // valid stand-in for max).
      Value slotIndex = LLVM::SelectOp::create(b, loc, inBlock, lane, c(0));
      Value slot = LLVM::GEPOp::create(b, loc, ptr3, i32, scratch,
                                       ArrayRef<LLVM::GEPArg>{slotIndex});
      Value block = warpAbsMax(b, loc, LLVM::LoadOp::create(b, loc, i32, slot));
      emitIf(b, loc, laneZero, [&] {
        LLVM::AtomicRMWOp::create(b, loc, LLVM::AtomicBinOp::umax, buffer,
                                  block, LLVM::AtomicOrdering::monotonic);
      });
    });
    // The scratch is reused by the next reduction.
    NVVM::Barrier0Op::create(b, loc);
  }
}
} // namespace

namespace {
/// The shared memory a block's row reductions pass through: 32 f64 slots
/// (a value per warp, in the reduction's type; a log-sum-exp's maxima in
/// slots 0 to 15 and sums in 16 to 31), declared once per device module.
Value rowSumScratch(OpBuilder &b, Location loc, gpu::GPUModuleOp device) {
  constexpr StringLiteral name = "__titan_row_sum_scratch";
  if (!device.lookupSymbol(name)) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(device.getBody());
    LLVM::GlobalOp::create(b, loc, LLVM::LLVMArrayType::get(b.getF64Type(), 32),
                           /*isConstant=*/false, LLVM::Linkage::Internal, name,
                           Attribute(), /*alignment=*/8, /*addrSpace=*/3);
  }
  return LLVM::AddressOfOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext(), 3), name);
}

/// The thread's lane and warp (i32) and the block's warps.
std::tuple<Value, Value, Value> blockWarps(OpBuilder &b, Location loc) {
  Type i32 = b.getI32Type();
  auto c = [&](int64_t x) {
    return LLVM::ConstantOp::create(b, loc, i32, b.getI32IntegerAttr(x));
  };
  Value thread = NVVM::ThreadIdXOp::create(b, loc, i32);
  return {LLVM::AndOp::create(b, loc, thread, c(31)),
          LLVM::LShrOp::create(b, loc, thread, c(5)),
          LLVM::UDivOp::create(b, loc, NVVM::BlockDimXOp::create(b, loc, i32),
                               c(32))};
}

/// Row reduction `reduction` of each thread's `v` over the block, in every
/// thread: over each warp (warpCombine), then every thread combines the
/// warps' values in warp order, from the reduction's identity. A fixed
/// order for a block size, so any grid gives the same bits.
Value blockRowReduction(OpBuilder &b, Location loc, Operation *reduction,
                        Value v, gpu::GPUModuleOp device) {
  Type i32 = b.getI32Type();
  auto c = [&](int64_t x) {
    return LLVM::ConstantOp::create(b, loc, i32, b.getI32IntegerAttr(x));
  };
  auto combine = [&](Value x, Value y) {
    return KernelBodyEmitter::combineRow(b, loc, reduction, x, y);
  };
  v = warpCombine(b, loc, v, combine);
  Value lane, warp, warps;
  std::tie(lane, warp, warps) = blockWarps(b, loc);
  Value scratch = rowSumScratch(b, loc, device);
  Type ptr3 = scratch.getType(), type = v.getType();
  emitIf(b, loc,
         LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq, lane, c(0)),
         [&] {
           LLVM::StoreOp::create(
               b, loc, v,
               LLVM::GEPOp::create(b, loc, ptr3, type, scratch,
                                   ArrayRef<LLVM::GEPArg>{warp}));
         });
  NVVM::Barrier0Op::create(b, loc);
  Value start = arith::ConstantOp::create(
      b, loc, b.getFloatAttr(type, KernelBodyEmitter::rowIdentity(reduction)));
  Value total =
      emitLoop(b, loc, c(0), warps, c(1), {start},
               [&](Value w, ValueRange acc) -> SmallVector<Value> {
                 Value slot = LLVM::GEPOp::create(b, loc, ptr3, type, scratch,
                                                  ArrayRef<LLVM::GEPArg>{w});
                 return {
                     combine(acc[0], LLVM::LoadOp::create(b, loc, type, slot))};
               })
          .front();
  // The scratch is rewritten by the next reduction.
  NVVM::Barrier0Op::create(b, loc);
  return total;
}

/// A running log-sum-exp: the values' max and the sum of their
/// exponentials shifted by it.
struct RunningLse {
  Value max, sum;
};

/// `sum * exp(from - to)`, 0 for an empty sum (whose max may be -inf).
Value rescale(OpBuilder &b, Location loc, Value sum, Value from, Value to) {
  Value zero =
      arith::ConstantOp::create(b, loc, b.getFloatAttr(sum.getType(), 0.0));
  Value empty =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, sum, zero);
  Value shifted =
      math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, from, to));
  return arith::SelectOp::create(b, loc, empty, zero,
                                 arith::MulFOp::create(b, loc, sum, shifted));
}

/// Two running log-sum-exps as one (the online softmax's merge).
RunningLse mergeLse(OpBuilder &b, Location loc, RunningLse x, RunningLse y) {
  Value max = arith::MaximumFOp::create(b, loc, x.max, y.max);
  return {max, arith::AddFOp::create(b, loc, rescale(b, loc, x.sum, x.max, max),
                                     rescale(b, loc, y.sum, y.max, max))};
}

/// `acc` with a pack's values: their max first, one rescale of the sum,
/// then each value's exponential (-inf adds 0, whatever the max).
RunningLse addLanes(OpBuilder &b, Location loc, RunningLse acc,
                    ArrayRef<Value> lanes) {
  Value max = acc.max;
  for (Value v : lanes)
    max = arith::MaximumFOp::create(b, loc, max, v);
  Value sum = rescale(b, loc, acc.sum, acc.max, max);
  Type type = max.getType();
  Value zero = arith::ConstantOp::create(b, loc, b.getFloatAttr(type, 0.0));
  Value negInf = arith::ConstantOp::create(
      b, loc, b.getFloatAttr(type, -std::numeric_limits<double>::infinity()));
  for (Value v : lanes) {
    Value term =
        math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, v, max));
    Value none =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, v, negInf);
    sum = arith::AddFOp::create(
        b, loc, sum, arith::SelectOp::create(b, loc, none, zero, term));
  }
  return {max, sum};
}

/// The block's log-sum-exp of each thread's running one, in every thread:
/// merged over each warp (butterfly shuffles of both halves), then every
/// thread merges the warps' in warp order from shared memory (maxima in
/// slots 0 to 15, sums in 16 to 31: at most 16 warps a block; the launcher
/// runs 8); max + log(sum).
Value blockLogSumExp(OpBuilder &b, Location loc, RunningLse v,
                     gpu::GPUModuleOp device) {
  Type i32 = b.getI32Type();
  auto c = [&](int64_t x) {
    return LLVM::ConstantOp::create(b, loc, i32, b.getI32IntegerAttr(x));
  };
  for (int offset = 16; offset > 0; offset /= 2)
    v = mergeLse(
        b, loc, v,
        {shuffleXor(b, loc, v.max, offset), shuffleXor(b, loc, v.sum, offset)});
  Value lane, warp, warps;
  std::tie(lane, warp, warps) = blockWarps(b, loc);
  Value scratch = rowSumScratch(b, loc, device);
  Type ptr3 = scratch.getType(), type = v.max.getType();
  auto slot = [&](Value index) {
    return LLVM::GEPOp::create(b, loc, ptr3, type, scratch,
                               ArrayRef<LLVM::GEPArg>{index});
  };
  emitIf(b, loc,
         LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq, lane, c(0)),
         [&] {
           LLVM::StoreOp::create(b, loc, v.max, slot(warp));
           LLVM::StoreOp::create(
               b, loc, v.sum, slot(LLVM::AddOp::create(b, loc, warp, c(16))));
         });
  NVVM::Barrier0Op::create(b, loc);
  Value start[] = {
      arith::ConstantOp::create(
          b, loc,
          b.getFloatAttr(type, -std::numeric_limits<double>::infinity())),
      arith::ConstantOp::create(b, loc, b.getFloatAttr(type, 0.0))};
  SmallVector<Value> total = emitLoop(
      b, loc, c(0), warps, c(1), start,
      [&](Value w, ValueRange acc) -> SmallVector<Value> {
        RunningLse merged = mergeLse(
            b, loc, {acc[0], acc[1]},
            {LLVM::LoadOp::create(b, loc, type, slot(w)),
             LLVM::LoadOp::create(
                 b, loc, type, slot(LLVM::AddOp::create(b, loc, w, c(16))))});
        return {merged.max, merged.sum};
      });
  // The scratch is rewritten by the next reduction.
  NVVM::Barrier0Op::create(b, loc);
  return arith::AddFOp::create(b, loc, total[0],
                               math::LogOp::create(b, loc, total[1]));
}

/// A thread's running state of row reduction `r`: its value, or a
/// log-sum-exp's (max, sum) pair.
unsigned deviceStateSize(Operation *r) {
  return isa<kernel::RowLogSumExpOp>(r) ? 2 : 1;
}

/// Each of `reductions`' running states, flattened, at their start.
SmallVector<Value> startDeviceStates(OpBuilder &b, Location loc,
                                     ArrayRef<Operation *> reductions) {
  SmallVector<Value> states;
  for (Operation *r : reductions) {
    Type type = r->getResult(0).getType();
    states.push_back(arith::ConstantOp::create(
        b, loc, b.getFloatAttr(type, KernelBodyEmitter::rowIdentity(r))));
    if (deviceStateSize(r) == 2)
      states.push_back(
          arith::ConstantOp::create(b, loc, b.getFloatAttr(type, 0.0)));
  }
  return states;
}

/// Rows begin, begin + step, ... before `end` of `e`'s row kernel of
/// `cols` columns, by one block: for each stage of the row's reductions,
/// its threads reduce the row's packs (thread t: packs t, t + threads,
/// ..., each pack's elements in order; a log-sum-exp as running (max,
/// sum) pairs) and combine their values (blockRowReduction,
/// blockLogSumExp); thread 0 stores the per-row outputs; then the
/// threads compute the row's packs. Returns the absmax reductions'
/// accumulators.
SmallVector<Value> emitDeviceRows(OpBuilder &b, KernelBodyEmitter &e,
                                  gpu::GPUModuleOp device, Value begin,
                                  Value end, Value step, int64_t cols,
                                  unsigned width, ValueRange accumulators) {
  Location loc = e.getGeneric().getLoc();
  IndexMath m{b, loc};
  Value thread = sreg<NVVM::ThreadIdXOp>(b, loc);
  Value threads = sreg<NVVM::BlockDimXOp>(b, loc);
  Value packs = m.c(cols / width);
  return emitLoop(
      b, loc, begin, end, step, accumulators,
      [&](Value row, ValueRange acc) -> SmallVector<Value> {
        Value rowStart = m.mul(row, m.c(cols));
        e.beginRow(b, row);
        for (unsigned stage = 0; stage < e.getNumRowStages(); ++stage) {
          ArrayRef<Operation *> reductions = e.getRowReductions(stage);
          SmallVector<Value> partials = emitLoop(
              b, loc, thread, packs, threads,
              startDeviceStates(b, loc, reductions),
              [&](Value pack, ValueRange acc) {
                Value col = m.mul(pack, m.c(width));
                SmallVector<Value> next(acc);
                unsigned at = 0;
                for (auto [r, lanes] : llvm::zip_equal(
                         reductions,
                         e.emitRowReductionValues(
                             b, stage, m.add(rowStart, col), col, width, {}))) {
                  if (deviceStateSize(r) == 2) {
                    RunningLse lse =
                        addLanes(b, loc, {next[at], next[at + 1]}, lanes);
                    next[at] = lse.max;
                    next[at + 1] = lse.sum;
                  } else {
                    for (Value v : lanes)
                      next[at] =
                          KernelBodyEmitter::combineRow(b, loc, r, next[at], v);
                  }
                  at += deviceStateSize(r);
                }
                return next;
              });
          SmallVector<Value> totals;
          unsigned at = 0;
          for (Operation *r : reductions) {
            totals.push_back(
                deviceStateSize(r) == 2
                    ? blockLogSumExp(b, loc, {partials[at], partials[at + 1]},
                                     device)
                    : blockRowReduction(b, loc, r, partials[at], device));
            at += deviceStateSize(r);
          }
          e.setRowReductions(b, stage, totals);
        }
        emitIf(b, loc,
               LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq, thread,
                                    m.c(0)),
               [&] { e.storeRowOutputs(b, row); });
        if (!e.getGeneric().writesElements())
          return SmallVector<Value>(acc);
        return emitLoop(b, loc, thread, packs, threads, acc,
                        [&](Value pack, ValueRange acc) {
                          Value col = m.mul(pack, m.c(width));
                          return e.emitPack(b, m.add(rowStart, col), width, acc,
                                            {}, nullptr, col);
                        });
      });
}
/// `e`'s row kernel with column sums (R rows of `cols` columns, P row
/// blocks): block b takes row blocks b, b + grid, ...; for each, its
/// threads zero their columns' partials (thread t: the columns of packs t,
/// t + threads, ..., which it alone adds to, a pack at a time), then run
/// the block's rows in order (emitDeviceRows).
SmallVector<Value> emitDeviceRowBlocks(OpBuilder &b, KernelBodyEmitter &e,
                                       gpu::GPUModuleOp device, int64_t cols,
                                       unsigned width) {
  Location loc = e.getGeneric().getLoc();
  IndexMath m{b, loc};
  Value thread = sreg<NVVM::ThreadIdXOp>(b, loc);
  Value threads = sreg<NVVM::BlockDimXOp>(b, loc);
  return emitLoop(
      b, loc, sreg<NVVM::BlockIdXOp>(b, loc),
      m.c(e.getGeneric().getColumnSumBlocks()), sreg<NVVM::GridDimXOp>(b, loc),
      e.startAccumulators(b), [&](Value block, ValueRange acc) {
        e.setColumnSumBlock(block);
        emitLoop(b, loc, thread, m.c(cols / width), threads, {},
                 [&](Value pack, ValueRange) {
                   e.zeroColumnSums(b, m.mul(pack, m.c(width)), width, {});
                   return SmallVector<Value>();
                 });
        return emitDeviceRows(b, e, device, e.firstRowOfBlock(b, block),
                              e.firstRowOfBlock(b, m.add(block, m.c(1))),
                              m.c(1), cols, width, acc);
      });
}
} // namespace

namespace {
/// `void name(ptr<1> buffer..., i64 items)`, an NVVM kernel in `device`
/// with a parameter per buffer of `generic` (its operand order), with `b`
/// at its entry.
LLVM::LLVMFuncOp createDeviceKernel(OpBuilder &b, kernel::GenericOp generic,
                                    StringRef name, gpu::GPUModuleOp device) {
  MLIRContext *ctx = generic.getContext();
  b.setInsertionPointToEnd(device.getBody());
  Type global = LLVM::LLVMPointerType::get(ctx, /*addressSpace=*/1);
  SmallVector<Type> params(generic->getNumOperands() - 1, global);
  params.push_back(b.getI64Type());
  auto fn = LLVM::LLVMFuncOp::create(
      b, generic.getLoc(), name,
      LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), params));
  fn->setAttr(NVVM::NVVMDialect::getKernelFuncAttrName(), b.getUnitAttr());
  fn->setAttr(kGeneratedKernelAttrName, b.getUnitAttr());
  b.setInsertionPointToStart(fn.addEntryBlock(b));
  return fn;
}
} // namespace

LLVM::LLVMFuncOp titan::outlineDeviceColumnTotals(kernel::GenericOp generic,
                                                  StringRef name,
                                                  gpu::GPUModuleOp device) {
  OpBuilder b(generic.getContext());
  Location loc = generic.getLoc();
  LLVM::LLVMFuncOp fn = createDeviceKernel(b, generic, name, device);
  SmallVector<Value> bases(
      fn.getArguments().take_front(generic->getNumOperands() - 1));
  KernelBodyEmitter e(generic, bases, generic.getSegmentList().front());
  IndexMath m{b, loc};
  int64_t cols = generic.getRowLength();
  Type type = e.getColumnSumType();
  // Thread t of the grid: columns t, t + threads, ... of each sum (one
  // coalesced read of each block's partials), the blocks added in order.
  Value first = m.add(
      m.mul(sreg<NVVM::BlockIdXOp>(b, loc), sreg<NVVM::BlockDimXOp>(b, loc)),
      sreg<NVVM::ThreadIdXOp>(b, loc));
  Value step =
      m.mul(sreg<NVVM::GridDimXOp>(b, loc), sreg<NVVM::BlockDimXOp>(b, loc));
  for (auto [k, total] : llvm::enumerate(e.getColumnSumBases())) {
    emitLoop(b, loc, first, m.c(cols), step, {}, [&](Value col, ValueRange) {
      auto partial = [&](Value block) {
        return loadElement(b, loc, type, e.partialAddress(b, block, k, col),
                           {});
      };
      // Block 0's partial, then the others' added in order (the host's
      // order, to the bit).
      Value sum =
          emitLoop(b, loc, m.c(1), m.c(generic.getColumnSumBlocks()), m.c(1),
                   {partial(m.c(0))},
                   [&](Value block, ValueRange acc) -> SmallVector<Value> {
                     return {
                         arith::AddFOp::create(b, loc, acc[0], partial(block))};
                   })
              .front();
      storeElement(b, loc, sum, elementAddress(b, loc, total, type, col), {});
      return SmallVector<Value>();
    });
  }
  LLVM::ReturnOp::create(b, loc, ValueRange{});
  return fn;
}

gpu::GPUModuleOp titan::getOrCreateDeviceModule(ModuleOp module, StringRef name,
                                                StringRef chip) {
  if (auto existing = module.lookupSymbol<gpu::GPUModuleOp>(name))
    return existing;
  MLIRContext *ctx = module.getContext();
  module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                  UnitAttr::get(ctx));
  OpBuilder b(ctx);
  b.setInsertionPointToEnd(module.getBody());
  auto target = NVVM::NVVMTargetAttr::get(ctx, /*optLevel=*/2,
                                          "nvptx64-nvidia-cuda", chip);
  return gpu::GPUModuleOp::create(b, module.getLoc(), name,
                                  b.getArrayAttr({target}));
}

/// The operands (in operand order, the stream aside) of segments that run
/// in tiles, which take no packs.
static SmallVector<bool> inTiledSegments(kernel::GenericOp generic) {
  SmallVector<bool> tiled(generic->getNumOperands() - 1, false);
  unsigned inputs = generic.getInputs().size(),
           outputs = generic.getOutputs().size(),
           reductions = inputs + outputs + (generic.getWorkspace() ? 1 : 0);
  for (const kernel::GenericSegment &segment : generic.getSegmentList()) {
    if (!generic.getTransposedShape(segment))
      continue;
    for (unsigned i = segment.inputBegin; i < segment.inputEnd; ++i)
      tiled[i] = true;
    for (unsigned i = segment.outputBegin; i < segment.outputEnd; ++i)
      tiled[inputs + i] = true;
    for (unsigned i = segment.reductionBegin; i < segment.reductionEnd; ++i)
      tiled[reductions + i] = true;
  }
  return tiled;
}

unsigned titan::devicePackWidth(kernel::GenericOp generic,
                                ArrayRef<std::optional<int64_t>> offsets) {
  unsigned widest = 1;
  SmallVector<std::pair<unsigned, std::optional<int64_t>>> packed;
  // The workspace's partials (f32 or f64, a pack's worth at a time) must
  // be aligned too, but do not set the width.
  std::optional<std::pair<unsigned, std::optional<int64_t>>> partials;
  SmallVector<bool> tiled = inTiledSegments(generic);
  for (auto [i, buffer, offset] :
       llvm::enumerate(generic->getOperands().drop_back(), offsets)) {
    // A mapped input is read element by element; segments in tiles (of a
    // kernel with transposed outputs) read and write a tile's elements.
    if ((i < generic.getInputs().size() && generic.isMapped(i)) || tiled[i])
      continue;
    if (buffer == generic.getWorkspace()) {
      partials = {unsigned(cast<MemRefType>(buffer.getType())
                               .getElementType()
                               .getIntOrFloatBitWidth() /
                           8),
                  offset};
      continue;
    }
    // A per-row output is written an element at a time, by one thread.
    if (generic.isBroadcast(buffer) || generic.isPerRowOutput(buffer) ||
        llvm::is_contained(generic.getReductions(), buffer))
      continue;
    unsigned bytes = cast<MemRefType>(buffer.getType())
                         .getElementType()
                         .getIntOrFloatBitWidth() /
                     8;
    widest = std::max(widest, bytes);
    packed.push_back({bytes, offset});
  }
  unsigned width = 16 / widest;
  // A row kernel's packs are whole within rows; the segments element by
  // element take whole packs (a kernel all in tiles takes none).
  if (packed.empty() || width <= 1 || generic.getRowLength() % width != 0 ||
      llvm::any_of(generic.getSegmentList(),
                   [&](const kernel::GenericSegment &segment) {
                     return !generic.getTransposedShape(segment) &&
                            segment.elements % width != 0;
                   }))
    return 1;
  if (partials)
    packed.push_back(*partials);
  for (auto [bytes, offset] : packed)
    if (!offset || *offset % (width * bytes) != 0)
      return 1;
  return width;
}

namespace {
/// A tile of a GPU kernel with transposed outputs: kTileSize x kTileSize
/// elements, which the block's kTileRows rows of 32 threads read along rows
/// (coalesced) and write, transposed, along the output's rows (coalesced).
constexpr int64_t kTileSize = 32, kTileRows = 8;
/// The threads of a tile's block, which the launch's work items count.
constexpr int64_t kTileThreads = kTileSize * kTileRows;

std::string sharedTileName(StringRef kernel, unsigned k) {
  return (kernel + "_tile" + Twine(k)).str();
}

/// Declares the shared-memory tile of each transposed output slot `k` of
/// kernel `kernel`'s segments (whose buffers' addresses are `bases`):
/// kTileSize rows of kTileSize + 1 elements (the padding puts a column's
/// elements in distinct banks) of the widest type any segment stores in
/// it.
void declareSharedTiles(gpu::GPUModuleOp device, kernel::GenericOp generic,
                        ArrayRef<Value> bases, StringRef kernel) {
  SmallVector<Type> widest;
  for (const kernel::GenericSegment &segment : generic.getSegmentList()) {
    KernelBodyEmitter e(generic, bases, segment);
    for (auto [k, element] : llvm::enumerate(e.getTransposedTypes())) {
      Type stored = memoryType(element);
      if (k == widest.size())
        widest.push_back(stored);
      else if (stored.getIntOrFloatBitWidth() >
               widest[k].getIntOrFloatBitWidth())
        widest[k] = stored;
    }
  }
  OpBuilder b(device.getContext());
  b.setInsertionPointToStart(device.getBody());
  for (auto [k, element] : llvm::enumerate(widest))
    LLVM::GlobalOp::create(
        b, generic.getLoc(),
        LLVM::LLVMArrayType::get(element, kTileSize * (kTileSize + 1)),
        /*isConstant=*/false, LLVM::Linkage::Internal,
        sharedTileName(kernel, k), Attribute(),
        /*alignment=*/16, /*addrSpace=*/3);
}

/// The shared-memory tile of transposed output slot `k` of kernel
/// `kernel` (declareSharedTiles).
Value sharedTile(OpBuilder &b, Location loc, StringRef kernel, unsigned k) {
  return LLVM::AddressOfOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext(), 3),
      sharedTileName(kernel, k));
}

/// A tile's place of element (row, col) of the tile at (r0, c0).
Value tileSlot(IndexMath &m, Value row, Value col, Value r0, Value c0) {
  return m.add(m.mul(m.sub(row, r0), m.c(kTileSize + 1)), m.sub(col, c0));
}

/// One tile of the R x C kernel, at row r0 and column c0 (its ends clipped
/// to the kernel's), for thread (tx, ty) of a block of `rowStep` rows of
/// 32 threads.
struct DeviceTile {
  Value r0, c0, rowEnd, colEnd;
  Value tx, ty, rowStep;
};

/// The tile's elements (r0 + ty + rowStep i, c0 + tx) of `e`'s kernel of
/// `cols` columns: untransposed outputs and reductions as a pointwise
/// kernel computes them, each transposed output's element into its shared
/// tile. Bounds are loops of 0 or 1 trip, so an edge tile needs no other
/// code.
SmallVector<Value> emitTileCompute(OpBuilder &b, KernelBodyEmitter &e,
                                   ArrayRef<Value> shared, const DeviceTile &t,
                                   int64_t cols, ValueRange accumulators) {
  Location loc = e.getGeneric().getLoc();
  IndexMath m{b, loc};
  return emitLoop(b, loc, m.add(t.r0, t.ty), t.rowEnd, t.rowStep, accumulators,
                  [&](Value row, ValueRange acc) {
                    return emitLoop(
                        b, loc, m.add(t.c0, t.tx), t.colEnd, m.c(kTileSize),
                        acc, [&](Value col, ValueRange acc) {
                          Value at = tileSlot(m, row, col, t.r0, t.c0);
                          return e.emitPack(
                              b, m.add(m.mul(row, m.c(cols)), col), 1, acc, {},
                              [&](OpBuilder &b, unsigned k, Value v) {
                                storeElement(b, loc, v,
                                             elementAddress(b, loc, shared[k],
                                                            v.getType(), at),
                                             {});
                              });
                        });
                  });
}

/// The tile's elements (c0 + ty + rowStep i, r0 + tx) of the transposed
/// outputs (of `rows` rows), from the shared tiles: consecutive threads
/// write consecutive bytes of an output row.
void emitTileStore(OpBuilder &b, KernelBodyEmitter &e, ArrayRef<Value> shared,
                   const DeviceTile &t, int64_t rows) {
  Location loc = e.getGeneric().getLoc();
  IndexMath m{b, loc};
  SmallVector<Value> outputs = e.getTransposedBases();
  SmallVector<Type> types = e.getTransposedTypes();
  emitLoop(b, loc, m.add(t.c0, t.ty), t.colEnd, t.rowStep, {},
           [&](Value col, ValueRange) {
             emitLoop(b, loc, m.add(t.r0, t.tx), t.rowEnd, m.c(kTileSize), {},
                      [&](Value row, ValueRange) {
                        copyElements(b, loc, shared,
                                     tileSlot(m, row, col, t.r0, t.c0), outputs,
                                     m.add(m.mul(col, m.c(rows)), row), types,
                                     {});
                        return SmallVector<Value>();
                      });
             return SmallVector<Value>();
           });
}

/// The R x C kernel's tiles, tile t of (R/32) x (C/32) by block t, t + grid,
/// ...: each block computes the tile (emitTileCompute), and after a barrier
/// writes its transposed outputs' part (emitTileStore); a second barrier
/// frees the shared tiles for the next.
SmallVector<Value> emitTiles(OpBuilder &b, KernelBodyEmitter &e,
                             StringRef kernel, Value tiles, int64_t rows,
                             int64_t cols) {
  Location loc = e.getGeneric().getLoc();
  IndexMath m{b, loc};
  Value thread = sreg<NVVM::ThreadIdXOp>(b, loc);
  DeviceTile t;
  t.tx = LLVM::URemOp::create(b, loc, thread, m.c(kTileSize));
  t.ty = LLVM::UDivOp::create(b, loc, thread, m.c(kTileSize));
  // The block's rows of 32 threads (kTileRows with the runtime's 256
  // threads; any whole number of warps covers the tile).
  t.rowStep = LLVM::UDivOp::create(b, loc, sreg<NVVM::BlockDimXOp>(b, loc),
                                   m.c(kTileSize));
  SmallVector<Value> shared;
  for (unsigned k = 0, n = e.getTransposedTypes().size(); k < n; ++k)
    shared.push_back(sharedTile(b, loc, kernel, k));
  int64_t colTiles = (cols + kTileSize - 1) / kTileSize;
  return emitLoop(
      b, loc, sreg<NVVM::BlockIdXOp>(b, loc), tiles,
      sreg<NVVM::GridDimXOp>(b, loc), e.startAccumulators(b),
      [&](Value index, ValueRange acc) {
        t.r0 = m.mul(LLVM::UDivOp::create(b, loc, index, m.c(colTiles)),
                     m.c(kTileSize));
        t.c0 = m.mul(LLVM::URemOp::create(b, loc, index, m.c(colTiles)),
                     m.c(kTileSize));
        t.rowEnd = m.min(m.add(t.r0, m.c(kTileSize)), m.c(rows));
        t.colEnd = m.min(m.add(t.c0, m.c(kTileSize)), m.c(cols));
        SmallVector<Value> combined =
            emitTileCompute(b, e, shared, t, cols, acc);
        NVVM::Barrier0Op::create(b, loc);
        emitTileStore(b, e, shared, t, rows);
        // The tiles are rewritten by the next iteration.
        NVVM::Barrier0Op::create(b, loc);
        return combined;
      });
}

/// The tiles of segment `segment` of a kernel in tiles.
int64_t segmentTiles(kernel::GenericOp generic,
                     const kernel::GenericSegment &segment) {
  std::pair<int64_t, int64_t> shape = *generic.getTransposedShape(segment);
  return ((shape.first + kTileSize - 1) / kTileSize) *
         ((shape.second + kTileSize - 1) / kTileSize);
}
} // namespace

int64_t titan::deviceWorkItems(kernel::GenericOp generic, unsigned width) {
  // A row kernel: a block of kTileThreads a row (a row block, with column
  // sums).
  if (int64_t blocks = generic.getColumnSumBlocks())
    return blocks * kTileThreads;
  if (int64_t cols = generic.getRowLength())
    return generic.getNumElements() / cols * kTileThreads;
  // A kernel in tiles: a block of kTileThreads a tile (the largest
  // segment's tiles: the blocks loop over each segment's, and the grid
  // over the packs of those element by element); else packs.
  bool tiled = !generic.getTransposedOutputs().empty();
  int64_t items = 0;
  for (const kernel::GenericSegment &segment : generic.getSegmentList()) {
    if (!tiled)
      items += segment.elements / width;
    else if (generic.getTransposedShape(segment))
      items = std::max(items, segmentTiles(generic, segment) * kTileThreads);
    else
      items = std::max(items, segment.elements / width);
  }
  // Whole blocks of kTileThreads: a tile's block never runs short.
  return tiled ? (items + kTileThreads - 1) / kTileThreads * kTileThreads
               : items;
}

LLVM::LLVMFuncOp titan::outlineDeviceKernel(kernel::GenericOp generic,
                                            StringRef name,
                                            gpu::GPUModuleOp device,
                                            unsigned width) {
  OpBuilder b(generic.getContext());
  Location loc = generic.getLoc();
  LLVM::LLVMFuncOp fn = createDeviceKernel(b, generic, name, device);
  Block *entry = &fn.getBody().front();
  unsigned buffers = generic->getNumOperands() - 1;
  Value block = sreg<NVVM::BlockIdXOp>(b, loc);
  Value blockSize = sreg<NVVM::BlockDimXOp>(b, loc);
  Value thread = sreg<NVVM::ThreadIdXOp>(b, loc);
  Value first = LLVM::AddOp::create(
      b, loc, LLVM::MulOp::create(b, loc, block, blockSize), thread);
  SmallVector<Value> bases(entry->getArguments().take_front(buffers));
  Value isFirst = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq, first,
                                       constantI64(b, loc, 0));
  // The launch passes the work items (deviceWorkItems).
  Value items = entry->getArgument(buffers);
  SmallVector<kernel::GenericSegment> segments = generic.getSegmentList();
  // A grid-stride loop over `packs` packs of `e`'s segment: thread t of the
  // grid takes pack t, t + threads, ... (consecutive threads, consecutive
  // packs: coalesced).
  Value step =
      LLVM::MulOp::create(b, loc, sreg<NVVM::GridDimXOp>(b, loc), blockSize);
  Value w = constantI64(b, loc, width);
  auto emitPacks = [&](KernelBodyEmitter &e, Value packs) {
    return emitLoop(b, loc, first, packs, step, e.startAccumulators(b),
                    [&](Value pack, ValueRange acc) {
                      return e.emitPack(b, LLVM::MulOp::create(b, loc, pack, w),
                                        width, acc, {});
                    });
  };
  if (!generic.getTransposedOutputs().empty()) {
    // Each segment's tiles in turn, every block looping over them (the
    // others' packs, the grid looping over them). The segments share the
    // shared tiles (each one's loop ends with a barrier), each as wide as
    // its widest element.
    declareSharedTiles(device, generic, bases, name);
    for (const kernel::GenericSegment &segment : segments) {
      KernelBodyEmitter e(generic, bases, segment);
      e.emitUniform(b, isFirst);
      if (!generic.getTransposedShape(segment)) {
        publishDeviceReductions(
            b, loc, emitPacks(e, constantI64(b, loc, segment.elements / width)),
            e.getReductionBases(), device);
        continue;
      }
      std::pair<int64_t, int64_t> shape = *generic.getTransposedShape(segment);
      Value tiles = segments.size() == 1
                        ? LLVM::UDivOp::create(
                              b, loc, items, constantI64(b, loc, kTileThreads))
                        : constantI64(b, loc, segmentTiles(generic, segment));
      SmallVector<Value> accumulators =
          emitTiles(b, e, name, tiles, shape.first, shape.second);
      publishDeviceReductions(b, loc, accumulators, e.getReductionBases(),
                              device);
    }
    LLVM::ReturnOp::create(b, loc, ValueRange{});
    return fn;
  }
  if (int64_t cols = generic.getRowLength()) {
    KernelBodyEmitter e(generic, bases, segments.front());
    e.emitUniform(b, isFirst);
    // The launch passes kTileThreads work items a row (rows from the
    // launch: kernels alike but in their row count share the function),
    // or a row block with column sums (rows and blocks built in).
    SmallVector<Value> accumulators =
        e.getNumColumnSums()
            ? emitDeviceRowBlocks(b, e, device, cols, width)
            : emitDeviceRows(
                  b, e, device, sreg<NVVM::BlockIdXOp>(b, loc),
                  LLVM::UDivOp::create(b, loc, items,
                                       constantI64(b, loc, kTileThreads)),
                  sreg<NVVM::GridDimXOp>(b, loc), cols, width,
                  e.startAccumulators(b));
    publishDeviceReductions(b, loc, accumulators, e.getReductionBases(),
                            device);
    LLVM::ReturnOp::create(b, loc, ValueRange{});
    return fn;
  }
  // A grid-stride loop per segment. One segment runs over the launch's
  // items; those of a horizontally fused kernel over their own counts, one
  // after another.
  for (const kernel::GenericSegment &segment : segments) {
    KernelBodyEmitter e(generic, bases, segment);
    e.emitUniform(b, isFirst);
    Value packs = segments.size() == 1
                      ? items
                      : constantI64(b, loc, segment.elements / width);
    publishDeviceReductions(b, loc, emitPacks(e, packs), e.getReductionBases(),
                            device);
  }
  LLVM::ReturnOp::create(b, loc, ValueRange{});
  return fn;
}
