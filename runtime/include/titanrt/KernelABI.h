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
// of the op's KernelOpInterface::getKernelParams (lib/Dialect/Titan/IR/
// KernelContracts.cpp documents each kernel's list); either may be null
// when the kernel has none of that kind. `workspace` is the scratch the
// target's workspace rule for the op asks for (lib/Target/<T>/), or null.
// `types` is {number of operands, number of results, then each buffer's
// TitanRtType}.
//
// `dtype` is the buffers' floating-point type: f32 or f64, i32 for
// integer-only kernels, bf16 or f16 when some buffer has that type. The
// 16-bit entries run the f32 kernel on f32 copies of the 16-bit buffers and
// round its results to nearest even (the GPU's semantics: f32 inside, one
// rounding per op output); the copies come first in the workspace, which
// titan-bufferize's widen-low-precision sizes for them, each rounded up to
// 64 bytes, followed by the f32 kernel's own workspace. titan_rt_cast_*
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

/// Element type codes of the `types` array.
enum TitanRtType {
  TITAN_RT_F32 = 0,
  TITAN_RT_F64 = 1,
  TITAN_RT_BF16 = 2,
  TITAN_RT_F16 = 3,
  TITAN_RT_I32 = 4,
  TITAN_RT_I64 = 5,
  TITAN_RT_F8E4M3FN = 6,
  TITAN_RT_F8E5M2 = 7,
};

#define TITAN_RT_KERNEL_TYPE(name, suffix)                                     \
  void titan_rt_##name##_##suffix(void **buffers, const int64_t *shapes,       \
                                  const int64_t *ints, const double *floats,   \
                                  void *workspace, const int64_t *types);
#define TITAN_RT_KERNEL(name)                                                  \
  TITAN_RT_KERNEL_TYPE(name, f32)                                              \
  TITAN_RT_KERNEL_TYPE(name, f64)                                              \
  TITAN_RT_KERNEL_TYPE(name, bf16)                                             \
  TITAN_RT_KERNEL_TYPE(name, f16)

TITAN_RT_KERNEL(embedding)
TITAN_RT_KERNEL(embedding_grad)
TITAN_RT_KERNEL(rms_norm)
TITAN_RT_KERNEL(rms_norm_grad)
TITAN_RT_KERNEL(rope_angles)
TITAN_RT_KERNEL(rope)
TITAN_RT_KERNEL(attention)
TITAN_RT_KERNEL(attention_grad)
TITAN_RT_KERNEL(linear)
TITAN_RT_KERNEL(linear_grad_input)
TITAN_RT_KERNEL(linear_grad_weight)
TITAN_RT_KERNEL(swiglu)
TITAN_RT_KERNEL(swiglu_grad)
TITAN_RT_KERNEL(silu)
TITAN_RT_KERNEL(silu_grad)
TITAN_RT_KERNEL(mul)
TITAN_RT_KERNEL(add)
TITAN_RT_KERNEL(sqrt)
TITAN_RT_KERNEL(fill)
TITAN_RT_KERNEL(cross_entropy)
TITAN_RT_KERNEL(cross_entropy_grad)
TITAN_RT_KERNEL(row_max)
TITAN_RT_KERNEL(sum_exp)
TITAN_RT_KERNEL(sum_exp_grad)
TITAN_RT_KERNEL(target_logit)
TITAN_RT_KERNEL(target_logit_grad)
TITAN_RT_KERNEL(cross_entropy_from_stats)
TITAN_RT_KERNEL(cross_entropy_from_stats_grad)
TITAN_RT_KERNEL(global_norm)
TITAN_RT_KERNEL(lr_schedule)
TITAN_RT_KERNEL(adamw)
TITAN_RT_KERNEL(adamw_multi)
TITAN_RT_KERNEL(cast)
TITAN_RT_KERNEL(amax)
TITAN_RT_KERNEL(float8_scale)
TITAN_RT_KERNEL(quantize)
TITAN_RT_KERNEL(scaled_matmul)

#undef TITAN_RT_KERNEL

// Collectives of the dist dialect, same form, for f32, f64, bf16, f16,
// f8E4M3FN and f8E5M2 buffers: buffers = {input, result};
// ints = {a, b, mask of mesh axes (bit 0 pp ... bit 4 tp)} with (a, b) =
// all_gather / reduce_scatter: (dim, 0); all_reduce: (0, 0 sum / 1 mean /
// 2 max); all_to_all: (split dim, concat dim); broadcast: (root, 0);
// send_recv: (shift, 0). Each returns a request that titan_rt_wait
// completes and releases; both buffers stay in use until then.
#define TITAN_RT_COLLECTIVE_TYPE(name, suffix)                                 \
  void *titan_rt_##name##_##suffix(void **buffers, const int64_t *shapes,      \
                                   const int64_t *ints, const double *floats,  \
                                   void *workspace, const int64_t *types);
#define TITAN_RT_COLLECTIVE(name)                                              \
  TITAN_RT_COLLECTIVE_TYPE(name, f32)                                          \
  TITAN_RT_COLLECTIVE_TYPE(name, f64)                                          \
  TITAN_RT_COLLECTIVE_TYPE(name, bf16)                                         \
  TITAN_RT_COLLECTIVE_TYPE(name, f16)                                          \
  TITAN_RT_COLLECTIVE_TYPE(name, f8E4M3FN)                                     \
  TITAN_RT_COLLECTIVE_TYPE(name, f8E5M2)

TITAN_RT_COLLECTIVE(all_gather_start)
TITAN_RT_COLLECTIVE(reduce_scatter_start)
TITAN_RT_COLLECTIVE(all_reduce_start)
TITAN_RT_COLLECTIVE(all_to_all_start)
TITAN_RT_COLLECTIVE(broadcast_start)
TITAN_RT_COLLECTIVE(send_recv_start)

#undef TITAN_RT_COLLECTIVE
#undef TITAN_RT_COLLECTIVE_TYPE

void titan_rt_wait(void *request);

/// kernel.copy: `bytes` from `src` to `dst`, both in the arena, in order
/// with the step's kernels.
void titan_rt_copy(void *dst, const void *src, int64_t bytes);

/// dist.shard_offset: buffers = {result (i32)}; ints = {stride, number of
/// axes, axis indices (0 pp ... 4 tp) outermost first}.
void titan_rt_shard_offset_i32(void **buffers, const int64_t *shapes,
                               const int64_t *ints, const double *floats,
                               void *workspace, const int64_t *types);

#ifdef __cplusplus
}
#endif

#endif // TITANRT_KERNELABI_H
