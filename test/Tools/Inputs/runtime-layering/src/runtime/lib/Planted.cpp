// A runtime file with planted violations (runtime-layering.test).
#include "mlir/IR/Builders.h"
#include "titan/Contract/Dtype.h"
#include "titan/Data/Tokenizer.h"
#include "titan/Dialect/Kernel/IR/Kernel.h"
