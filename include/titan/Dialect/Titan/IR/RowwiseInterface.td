//===- RowwiseInterface.td - a row op's scalar semantics ---*- tablegen -*-===//
//
// An op that computes each row of its last dimension from that row's
// elements and sums over the row (a norm) states what it computes on one
// element, as arith/math ops and row sums, once. The compiler generates
// every target's kernel for it, fused with its pointwise neighbours.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DIALECT_TITAN_IR_ROWWISEINTERFACE_TD
#define TITAN_DIALECT_TITAN_IR_ROWWISEINTERFACE_TD

include "mlir/IR/OpBase.td"

def Titan_RowwiseOpInterface : OpInterface<"RowwiseOpInterface"> {
  let cppNamespace = "::titan";
  let description = [{
    An op whose every result element at (row r, column j) of the operands'
    last dimension (of `C` columns) depends only on the operands' elements
    there, on per-column operands' element j (`getColumnOperands`: a
    norm's weight, of `C` elements), on per-row operands' element r
    (`getRowOperands`: a label) and on reductions over row r of such
    values. Its scalar semantics is `buildRowScalar`: given one element of
    each operand, a float widened to the computation type (as a pointwise
    op's), an integer as it is, `C`, and `RowBuilders` that build the sum,
    the maximum or the log-sum-exp over the element's row of a value
    computed from elements (the kernel generator's `kernel.row_sum`,
    `kernel.row_max`, `kernel.row_logsumexp`) and the element's column, it builds arith/math ops computing each
    result's element. The generator rounds each result to its element
    type.

    A result of one element per row (`getRowResults`: a log-sum-exp) is
    built from the row's reductions and per-row operands alone. A result
    of one element (`getMeanResults`: the mean loss) is the mean over the
    rows of the value built for it (a value per row, as a row result's),
    summed in f64 in a fixed order and rounded once.

    A result of `C` elements (`getColumnSumResults`: a norm's weight
    gradient) is a sum over the rows, per column: `buildRowScalar` gives
    the value each element adds to its column's sum, which the generator
    sums (a `column_sum` reduction) in the computation type and rounds
    once to the result's type.

    The methods are static: a kernel-IR pass reaches them from a
    `kernel.call`'s kernel name through the registered op.
  }];
  let methods = [
    StaticInterfaceMethod<[{
        One element of each result, in the computation type of `operands`,
        for a call with `params` over rows of `rowLength` elements; `rowSum`
        builds the sum of a value over its row. Nothing when the op with
        these parameters has no generated form (its call stays a library
        kernel).
      }],
      "::llvm::SmallVector<::mlir::Value>", "buildRowScalar",
      (ins "::mlir::OpBuilder &":$b, "::mlir::Location":$loc,
           "::mlir::ValueRange":$operands,
           "::llvm::ArrayRef<::mlir::Attribute>":$params,
           "int64_t":$rowLength,
           "const ::titan::RowBuilders &":$row)>,
    StaticInterfaceMethod<[{
        The operands of one element per column, read at the element's column
        (a norm's weight); the others have an element per index.
      }],
      "::llvm::SmallVector<unsigned>", "getColumnOperands", (ins), [{}],
      [{ return {}; }]>,
    StaticInterfaceMethod<[{
        The results of one element per column, each the sum over the rows of
        its value at the column; the others have an element per index.
      }],
      "::llvm::SmallVector<unsigned>", "getColumnSumResults", (ins), [{}],
      [{ return {}; }]>,
    StaticInterfaceMethod<[{
        The operands of one element per row (the operands' leading shape),
        read at the element's row.
      }],
      "::llvm::SmallVector<unsigned>", "getRowOperands", (ins), [{}],
      [{ return {}; }]>,
    StaticInterfaceMethod<[{
        The results of one element per row, each its row's value.
      }],
      "::llvm::SmallVector<unsigned>", "getRowResults", (ins), [{}],
      [{ return {}; }]>,
    StaticInterfaceMethod<[{
        The results of one element, each the mean over the rows of a value
        per row (summed in f64).
      }],
      "::llvm::SmallVector<unsigned>", "getMeanResults", (ins), [{}],
      [{ return {}; }]>,
  ];
}

#endif // TITAN_DIALECT_TITAN_IR_ROWWISEINTERFACE_TD
