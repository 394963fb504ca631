//===- titan-opt.cpp - titan's pass driver --------------------------------===//
//
// mlir-opt for titan: parses, verifies, runs passes and prints titan IR.
//
//===----------------------------------------------------------------------===//

#include "titan/InitTitan.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  titan::registerAllPasses();
  mlir::DialectRegistry registry;
  titan::registerAllDialects(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "titan optimizer driver\n", registry));
}
