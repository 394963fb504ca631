//===- GeneratedKernels.h - kernel.generic as loops or kernels --*- C++ -*-===//
//
// A generated kernel's code: on the host, one LLVM function running the
// body over a range of its work (element indices, or rows of a kernel with
// transposed outputs), which the step calls through the runtime's
// titan_rt_parallel_for (the runtime splits the range among its threads,
// in spans fixed by the size alone); on a GPU, an NVVM kernel in the
// module's gpu.module (a grid-stride loop over packs or tiles), which
// MLIR's gpu-module-to-binary compiles with LLVM's NVPTX back end and
// ptxas and the step launches through titan_rt_launch_generated.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_CONVERSION_KERNELTORUNTIMECALLS_GENERATEDKERNELS_H
#define TITAN_CONVERSION_KERNELTORUNTIMECALLS_GENERATEDKERNELS_H

#include "titan/Dialect/Kernel/IR/Kernel.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"

namespace titan {

/// What makes two generated kernels the same code: their buffers' element
/// types and roles and their bodies (the element count is a run-time
/// argument; a kernel with transposed outputs has its rows and columns
/// built in), so a step outlines each distinct kernel once.
std::string generatedKernelKey(kernel::GenericOp generic);

/// `void name(ptr buffers, i64 begin, i64 end)`, private to the module:
/// for each index in [begin, end), loads the elements of `generic`'s inputs
/// (buffers[0..]) at it, runs the body (still arith/math) and stores the
/// yielded elements into its outputs (the buffers after the inputs). Every
/// input is loaded before any output is stored, so an output may be an
/// input. A kernel with transposed outputs (R x C) takes rows [begin, end)
/// instead, in tiles of columns, each row's elements of a tile in one loop.
/// The step's host call is hostWorkItems(generic) items.
mlir::LLVM::LLVMFuncOp outlineGeneratedKernel(kernel::GenericOp generic,
                                              mlir::StringRef name);

/// `void name(ptr buffers, i64 begin, i64 end)` for a row kernel with
/// column sums, after it: columns [begin, end) of each column sum, the sum
/// of its row blocks' partials (the kernel's workspace) in block order. The
/// step's host call runs it over the row length's items.
mlir::LLVM::LLVMFuncOp outlineColumnTotals(kernel::GenericOp generic,
                                           mlir::StringRef name);

/// The module's gpu.module `name` for GPU `chip` (an NVVM target), created
/// the first time; `module` becomes a gpu.container_module.
mlir::gpu::GPUModuleOp getOrCreateDeviceModule(mlir::ModuleOp module,
                                               mlir::StringRef name,
                                               mlir::StringRef chip);

/// `void name(ptr<1> buffer..., i64 items)`, an NVVM kernel in `device`:
/// thread t of the grid computes packs t, t + threads, ... of `width`
/// consecutive elements (coalesced; one vector access per buffer and pack,
/// which `width` makes 16 bytes for the widest element), loading every
/// input before storing any output. `width` must divide the element count,
/// and each buffer's address must be aligned to its pack's size. A kernel
/// with transposed outputs runs in 32 x 32 tiles through shared memory,
/// a block of 256 threads per tile (reads along rows, transposed writes
/// along the output's rows, both coalesced). The launch passes
/// deviceWorkItems(generic, width), by which the runtime sizes the grid.
mlir::LLVM::LLVMFuncOp outlineDeviceKernel(kernel::GenericOp generic,
                                           mlir::StringRef name,
                                           mlir::gpu::GPUModuleOp device,
                                           unsigned width);

/// `void name(ptr<1> buffer..., i64 items)` for a row kernel with column
/// sums, launched after it over the row length's threads: each column
/// sum's element j is its row blocks' partials at j added in block order.
mlir::LLVM::LLVMFuncOp outlineDeviceColumnTotals(kernel::GenericOp generic,
                                                 mlir::StringRef name,
                                                 mlir::gpu::GPUModuleOp device);

/// The work items of a GPU kernel of `generic` (its count argument): its
/// packs of `width` elements, 256 per tile of a kernel in tiles, or 256
/// per row (per row block, with column sums) of a row kernel.
int64_t deviceWorkItems(kernel::GenericOp generic, unsigned width);

/// The work items of a host kernel of `generic` and how many make a span
/// of titan_rt_parallel_for: its elements (the runtime's span), or its rows
/// in spans of 64 (a 64-byte line of each float8 column of a transposed
/// output per span), or a row kernel's rows (its row blocks, with column
/// sums).
std::pair<int64_t, int64_t> hostWorkItems(kernel::GenericOp generic);

/// The pack width a GPU kernel of `generic` may use when its per-element
/// buffers start at byte offsets `offsets` of 16-byte aligned memory
/// (std::nullopt: unknown): 16 bytes over the widest element type, when it
/// divides the element count and every such buffer is aligned to its pack;
/// 1 otherwise (and for a kernel in tiles).
unsigned devicePackWidth(kernel::GenericOp generic,
                         llvm::ArrayRef<std::optional<int64_t>> offsets);

/// Lowers the arith/math of the outlined kernels to LLVM: f32 exponentials
/// as MLIR's polynomial approximation (vectorizable, no libm call, the same
/// bits on the host and the GPU), bf16 conversions as integer arithmetic
/// (rounding to nearest even, with no runtime library call), then arith and
/// math to the LLVM dialect (on a GPU, f64 math as libdevice's functions).
mlir::LogicalResult lowerGeneratedKernelBodies(mlir::ModuleOp module);

} // namespace titan

#endif // TITAN_CONVERSION_KERNELTORUNTIMECALLS_GENERATEDKERNELS_H
