// A runtime file with planted violations (runtime-layering.test).
#include "titan/Contract/Dtype.h"
#include "titan/Dialect/Kernel/IR/Kernel.h"
#include "mlir/IR/Builders.h"
#include "titan/Data/Tokenizer.h"
