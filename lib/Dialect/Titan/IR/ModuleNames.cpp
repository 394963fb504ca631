//===- ModuleNames.cpp - the TorchTitan module an op came from ------------===//

#include "titan/Dialect/Titan/IR/ModuleNames.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Location.h"

using namespace mlir;

std::optional<StringRef> titan::getModuleName(Location loc) {
  std::optional<StringRef> name;
  loc->walk([&](Location l) {
    if (auto n = dyn_cast<NameLoc>(l)) {
      name = n.getName().getValue();
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return name;
}

bool titan::isInModule(StringRef name, StringRef module) {
  return name == module ||
         (name.starts_with(module) && name.drop_front(module.size())[0] == '.');
}

std::optional<int64_t> titan::getLayerIndex(StringRef name) {
  int64_t index;
  if (!name.consume_front("layers.") ||
      name.split('.').first.getAsInteger(10, index) || index < 0)
    return std::nullopt;
  return index;
}

std::string titan::getModelUnit(StringRef name) {
  if (std::optional<int64_t> layer = getLayerIndex(name))
    return ("layers." + Twine(*layer)).str();
  return name.take_until([](char c) { return c == '.'; }).str();
}
