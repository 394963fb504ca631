//===- PointwiseInterface.td - an op's scalar semantics ----*- tablegen -*-===//
//
// A pointwise op states what it computes on one element, as arith/math ops,
// once. The compiler generates every target's kernel for it (alone or fused
// with its neighbours) from that body; no target writes it by hand.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DIALECT_TITAN_IR_POINTWISEINTERFACE_TD
#define TITAN_DIALECT_TITAN_IR_POINTWISEINTERFACE_TD

include "mlir/IR/OpBase.td"

def Titan_PointwiseOpInterface : OpInterface<"PointwiseOpInterface"> {
  let cppNamespace = "::titan";
  let description = [{
    An op whose every result element depends only on the operands' elements
    at the same index, an operand of one element standing for every index
    (a tensorwise scale), or a reduction of such values over every index
    (`getNumAbsMaxResults`: a tensorwise amax). Its scalar semantics is `buildScalar`: given one
    element of each operand, widened to the computation type (f64 when an
    operand or result is f64, otherwise f32), and the parameters of its
    kernel call (`KernelOpInterface::getKernelParams`' list), it builds
    arith/math ops computing each result's element, in that type or, for
    a float8 result, as the float8 value itself. The kernel generator
    rounds each result to its element type, so a fused kernel computes
    exactly what the ops compute one by one.

    An op may read elements at other indices (RoPE: each element's pair
    partner, and its position's cos and sin; a loss gradient: its row's
    label and statistics): `getElementReads` names the elements the scalar
    takes as (operand, map from the flat result index to the operand's
    flat element index), and `buildIndexedScalar` computes from them and
    the index itself. Operands that are not floats (labels) come as they
    are, not widened.
    The methods are static: a kernel-IR pass reaches them from a
    `kernel.call`'s kernel name (the op's mnemonic) through the registered
    op, without an instance.
  }];
  let methods = [
    StaticInterfaceMethod<[{
        One element of each result, in the computation type of `operands`
        (which are one element of each operand, in that type), for a call
        with `params`; nothing when the op with these parameters is not
        pointwise (a rowwise float8 cast), and its call stays a library
        kernel.
      }],
      "::llvm::SmallVector<::mlir::Value>", "buildScalar",
      (ins "::mlir::OpBuilder &":$b, "::mlir::Location":$loc,
           "::mlir::ValueRange":$operands,
           "::llvm::ArrayRef<::mlir::Attribute>":$params)>,
    StaticInterfaceMethod<[{
        How many of the last results are reductions over every index rather
        than elements: each is the largest absolute value of what the body
        gives for it (an f32 of one element; the tensorwise amax).
      }],
      "unsigned", "getNumAbsMaxResults",
      (ins "::llvm::ArrayRef<::mlir::Attribute>":$params), [{}],
      [{ return 0; }]>,
    StaticInterfaceMethod<[{
        The elements one result element is computed from, for a call with
        `params` on buffers of `shapes`: (operand, affine map of one
        dimension, the flat result index, to the operand's flat element
        index). Empty: each operand at the index (or its one element), and
        `buildScalar` computes.
      }],
      "::llvm::SmallVector<std::pair<unsigned, ::mlir::AffineMap>>",
      "getElementReads",
      (ins "::mlir::MLIRContext *":$ctx,
           "::llvm::ArrayRef<::mlir::Attribute>":$params,
           "::titan::CallShapes":$shapes),
      [{}], [{ return {}; }]>,
    StaticInterfaceMethod<[{
        One element of each result from `reads` (getElementReads' elements,
        floats in the computation type) and `index`, the flat result index
        (i64), for a call with `params` on buffers of `shapes`.
      }],
      "::llvm::SmallVector<::mlir::Value>", "buildIndexedScalar",
      (ins "::mlir::OpBuilder &":$b, "::mlir::Location":$loc,
           "::mlir::ValueRange":$reads, "::mlir::Value":$index,
           "::llvm::ArrayRef<::mlir::Attribute>":$params,
           "::titan::CallShapes":$shapes),
      [{}], [{ return ConcreteOp::buildScalar(b, loc, reads, params); }]>,
    StaticInterfaceMethod<[{
        Whether the call with `params` writes its (non-reduction) results
        transposed: the operands are rows x cols (cols their last
        dimension), and element (r, j)'s result goes to (j, r) of a result
        whose leading dimension is cols (a float8 cast's K-major copy).
      }],
      "bool", "writesTransposed",
      (ins "::llvm::ArrayRef<::mlir::Attribute>":$params), [{}],
      [{ return false; }]>,
  ];
}

#endif // TITAN_DIALECT_TITAN_IR_POINTWISEINTERFACE_TD
