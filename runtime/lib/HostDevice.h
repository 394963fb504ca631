//===- HostDevice.h - code both the host and CUDA call ---------*- C++ -*-===//

#ifndef TITANRT_HOSTDEVICE_H
#define TITANRT_HOSTDEVICE_H

// Compiled by nvcc, the header's inline functions also run on the device.
#ifdef __CUDACC__
#define TITANRT_HOST_DEVICE __host__ __device__
#else
#define TITANRT_HOST_DEVICE
#endif

#endif // TITANRT_HOSTDEVICE_H
