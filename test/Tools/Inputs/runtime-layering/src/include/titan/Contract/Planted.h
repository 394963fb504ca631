// A contract header with a planted violation (runtime-layering.test).
#include "titan/Support/Format.h"
#include "titan/Target/CUDA/CUDABackend.h"
