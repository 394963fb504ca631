//===- HostKernels.h - the kernels of host steps ----------------*- C++ -*-===//
//
// libtitanrt_host's kernels (HostKernels.cpp): the kHostStep kernels of
// KernelCatalog.def, which a host step calls as titan_rt_host_<name>_<dtype>
// on any target and the CPU target's own entries call too, so that both
// give the same bits.
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_HOSTKERNELS_H
#define TITANRT_HOSTKERNELS_H

#include "KernelCall.h"

namespace titanrt::host {

/// global_norm: ints {number of inputs}; the inputs' norms rounded to f32
/// before the norm of norms (torch.nn.utils.clip_grad_norm_'s stacking).
/// T: float or double.
template <typename T> void globalNorm(const abi::Call &c);
/// lr_schedule: ints {warmup_steps, decay type}; floats {lr, decay_ratio
/// (-1: none), min_lr_factor}.
template <typename T> void lrSchedule(const abi::Call &c);

} // namespace titanrt::host

#endif // TITANRT_HOSTKERNELS_H
