//===- LlamaPlan.h - TorchTitan's parallel plan for Llama -------*- C++ -*-===//
//
// TorchTitan v0.2.0's parallelize_llama plan (torchtitan/models/llama3/
// infra/parallelize.py) written as the attributes the dist passes read
// (titan/Dialect/Dist/IR/DistPlan.h). With the importer, the one place that
// knows Llama's parameter and module names; the passes only read the plan.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_IMPORT_LLAMAPLAN_H
#define TITAN_IMPORT_LLAMAPLAN_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace titan {

/// Attaches the plan to the Llama forward `forward`, whose parameters carry
/// TorchTitan's names (`titan.param`): each parameter's #dist.param_plan
/// (tensor-parallel style, transformer block), the sequence-parallel
/// results (the embedding's, the row-wise linears'), the loss-parallel
/// cross-entropies and the context-parallel inputs' sequence dimension.
/// A parameter outside the tensor-parallel plan gets no style.
void attachLlamaParallelPlan(mlir::func::FuncOp forward);

} // namespace titan

#endif // TITAN_IMPORT_LLAMAPLAN_H
