//===- KernelABI.h - compiled step <-> runtime kernels ------------*- C -*-===//
//
// Every kernel.call of the kernel IR becomes one call
//
//   titan_rt_<kernel>_<dtype>(void **buffers, const int64_t *shapes,
//                             const int64_t *ints, const double *floats,
//                             void *workspace, const int64_t *types);
//
// `buffers` holds the op's operands, then its results: pointers into the
// rank's arena, placed by the memory plan (a result may alias an operand
// where the op's contract allows it: KernelOpInterface::getInPlaceOperand).
// `shapes` holds, per buffer, its rank followed by its dimensions. `ints`
// and `floats` are the kernel's i64 and f64 parameters, each in the order
// include/titan/Contract/KernelCatalog.def lists them (the one place each
// kernel's buffers and parameters are written); either may be null when the
// kernel has none of that kind. `workspace` is the scratch the target's
// workspace rule for the op asks for (lib/Target/<T>/), or null. `types` is
// {number of operands, number of results, then each buffer's TitanRtType
// (its titan::Dtype's value)}.
//
// `dtype` is the buffers' floating-point type: f32 or f64, i32 for
// integer-only kernels, bf16 or f16 when some buffer has that type. The
// 16-bit entries run the f32 kernel on f32 copies of the 16-bit buffers and
// round its results to nearest even (the GPU's semantics: f32 inside, one
// rounding per op output); the copies come first in the workspace, which
// titan-bufferize's widen-low-precision sizes for them, each rounded up to
// 64 bytes, followed by the f32 kernel's own workspace. On a CPU with bf16
// matrix units (AMX) the linears' 16-bit entries take bf16 operands as they
// are (oneDNN's bf16 matmul into f32), staging only a 16-bit result there;
// oneDNN's heap holds their primitives and per-thread scratchpads, as it
// holds dnnl_sgemm's packing buffers. titan_rt_cast_*
// converts between any two float types of the precision model. Float8
// buffers (quantize's result, scaled_matmul's operands) hold raw codes and
// are never widened; their formats are kernel parameters.
//
// The step itself allocates nothing: its buffers are all in the arena.
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_KERNELABI_H
#define TITANRT_KERNELABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// The location of the titan op whose kernel runs (its TorchTitan module
/// path, e.g. "layers.3.attention.wq"): the compiled step stores it before
/// each call and null at its end, so a kernel's error can name the op.
extern const char *titan_rt_op;

/// Element type codes of the `types` array: titan::Dtype's values
/// (titan/Contract/Dtype.def), by their C names.
enum TitanRtType {
#define TITAN_DTYPE(name, NAME, code, ...) TITAN_RT_##NAME = code,
#include "titan/Contract/Dtype.def"
};

/// Every kernel of KernelCatalog.def, for each of its dtypes. Collectives
/// return a request that titan_rt_wait completes and releases; their
/// buffers stay in use until then.
#define TITAN_RT_DECLARE(result, name, suffix)                                 \
  result titan_rt_##name##_##suffix(void **buffers, const int64_t *shapes,     \
                                    const int64_t *ints, const double *floats, \
                                    void *workspace, const int64_t *types);
#define TITAN_RT_DECLARE_Kernel(name, suffix)                                  \
  TITAN_RT_DECLARE(void, name, suffix)
#define TITAN_RT_DECLARE_Special(name, suffix)                                 \
  TITAN_RT_DECLARE(void, name, suffix)
#define TITAN_RT_DECLARE_Collective(name, suffix)                              \
  TITAN_RT_DECLARE(void *, name, suffix)
#define TITAN_RT_DECLARE_Generated(name, suffix)
#define TITAN_KERNEL(name, impl, kind, dtypes, ...)                            \
  TITAN_KERNEL_DTYPES_##dtypes(TITAN_RT_DECLARE_##kind, name)
#include "titan/Contract/KernelCatalog.def"
#undef TITAN_RT_DECLARE_Generated
#undef TITAN_RT_DECLARE_Collective
#undef TITAN_RT_DECLARE_Special
#undef TITAN_RT_DECLARE_Kernel
#undef TITAN_RT_DECLARE

void titan_rt_wait(void *request);

/// training.enable_cpu_offload (kernel-offload-state): the base of the
/// run's host arena, where the offloaded state and the host steps' buffers
/// live (buffers of #kernel.memory_space<host>); null without one. Set by
/// the runtime before any step runs.
extern char *titan_rt_host_arena;

/// libtitanrt_host's entries, which a host step (kernel.host_step: the
/// offloaded optimizer) calls on any target: the kernels KernelCatalog.def
/// flags kHostStep, f32 and f64, with the ABI of titan_rt_<kernel>_<dtype>
/// on host memory (unittests/Runtime checks that each flagged kernel has
/// both).
#define TITAN_RT_DECLARE_HOST(name, suffix)                                    \
  void titan_rt_host_##name##_##suffix(                                        \
      void **buffers, const int64_t *shapes, const int64_t *ints,              \
      const double *floats, void *workspace, const int64_t *types);
TITAN_RT_DECLARE_HOST(global_norm, f32)
TITAN_RT_DECLARE_HOST(global_norm, f64)
TITAN_RT_DECLARE_HOST(lr_schedule, f32)
TITAN_RT_DECLARE_HOST(lr_schedule, f64)
#undef TITAN_RT_DECLARE_HOST

/// kernel.copy: `bytes` from `src` to `dst`, both in the arena, in order
/// with the step's kernels.
void titan_rt_copy(void *dst, const void *src, int64_t bytes);
/// kernel.copy_start: starts copying `bytes` from `src` to `dst` (one in
/// the host arena, one in the arena) after the step's kernels issued
/// before it, overlapping those issued after it; returns a request that
/// titan_rt_wait completes (then the kernels after the wait see `dst`).
void *titan_rt_copy_start(void *dst, const void *src, int64_t bytes);
/// A host step's kernel.copy (between host memory and the device's, or
/// within either): has completed when it returns, after the work issued
/// before it.
void titan_rt_copy_sync(void *dst, const void *src, int64_t bytes);

/// A kernel the compiler generated (kernel.generic): computes work items
/// [begin, end) (elements, or rows) of the buffers `buffers` points to, and
/// combines that span's reductions into their buffers atomically (which the
/// step zeroes before the spans run).
typedef void (*titan_rt_generated_kernel)(void *const *buffers, int64_t begin,
                                          int64_t end);

/// Runs `kernel` over work items [0, items) (elements, or rows of a kernel
/// with transposed outputs) on the CPU target's threads, in spans of `span`
/// items (0: the runtime's span of elements), fixed by the sizes alone (the
/// same bits on any thread count). `name` (the kernel's function) and
/// `bytes` (what one call moves, each buffer once) are for the kernel
/// profile.
void titan_rt_parallel_for(titan_rt_generated_kernel kernel,
                           void *const *buffers, int64_t items, int64_t span,
                           const char *name, int64_t bytes);
/// titan_rt_parallel_for of libtitanrt_host: a host step's generated
/// kernels on a GPU target (the same spans, so the same bits).
void titan_rt_host_parallel_for(titan_rt_generated_kernel kernel,
                                void *const *buffers, int64_t items,
                                int64_t span, const char *name, int64_t bytes);

/// The CUDA target's generated kernel `name` of the compiled `image` (a
/// cubin or NUL-terminated PTX, loaded once) on `count` device buffers and
/// `elements` work items (packs of elements, the kernel's count argument),
/// on the step's compute stream. The last
/// `reductions` buffers are reduction results (one f32 each), zeroed on
/// the stream before the launch: the kernel's blocks combine into them.
void titan_rt_launch_generated(const void *image, const char *name,
                               void *const *buffers, int64_t count,
                               int64_t elements, int64_t reductions);

#ifdef __cplusplus
}
#endif

#endif // TITANRT_KERNELABI_H
