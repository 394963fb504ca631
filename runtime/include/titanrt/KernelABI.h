//===- KernelABI.h - the compiled step <-> runtime kernel interface -*- C
//-*-===//
//
// Every titan op the CPU target executes becomes one call
//
//   titan_rt_<op>_<dtype>(void **buffers, const int64_t *shapes,
//                         const double *attrs);
//
// `buffers` holds the op's operands, then its results (preallocated by the
// caller). `shapes` holds, per buffer, its rank followed by its dimensions.
// `attrs` holds the op's attributes in the order documented in
// lib/Conversion/TitanToCPU (e.g. rms_norm: {eps}). `dtype` is f32 or f64.
//
// The compiled step allocates its intermediate buffers with titan_rt_alloc and
// releases them with titan_rt_free after their last use.
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_KERNELABI_H
#define TITANRT_KERNELABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

void *titan_rt_alloc(int64_t bytes);
void titan_rt_free(void *ptr);

#define TITAN_RT_KERNEL(name)                                                  \
  void titan_rt_##name##_f32(void **buffers, const int64_t *shapes,            \
                             const double *attrs);                             \
  void titan_rt_##name##_f64(void **buffers, const int64_t *shapes,            \
                             const double *attrs);

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
TITAN_RT_KERNEL(reshape)
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

#undef TITAN_RT_KERNEL

// Collectives of the dist dialect: buffers = {input, result}; attrs =
// {a, b, mask of mesh axes (bit 0 pp ... bit 4 tp)} with (a, b) =
// all_gather / reduce_scatter: (dim, 0); all_reduce: (0, 0 sum / 1 mean /
// 2 max);
// all_to_all: (split dim, concat dim); broadcast: (root, 0);
// send_recv: (shift, 0).
// Each returns a request that titan_rt_wait completes and releases; the
// input must stay alive until then.
#define TITAN_RT_COLLECTIVE(name)                                              \
  void *titan_rt_##name##_f32(void **buffers, const int64_t *shapes,           \
                              const double *attrs);                            \
  void *titan_rt_##name##_f64(void **buffers, const int64_t *shapes,           \
                              const double *attrs);

TITAN_RT_COLLECTIVE(all_gather_start)
TITAN_RT_COLLECTIVE(reduce_scatter_start)
TITAN_RT_COLLECTIVE(all_reduce_start)
TITAN_RT_COLLECTIVE(all_to_all_start)
TITAN_RT_COLLECTIVE(broadcast_start)
TITAN_RT_COLLECTIVE(send_recv_start)

#undef TITAN_RT_COLLECTIVE

void titan_rt_wait(void *request);

/// dist.shard_offset: buffers = {result (i32)}; attrs = {stride, number of
/// axes, axis indices (0 pp ... 4 tp) outermost first}.
void titan_rt_shard_offset_i32(void **buffers, const int64_t *shapes,
                               const double *attrs);

#ifdef __cplusplus
}
#endif

#endif // TITANRT_KERNELABI_H
