//===- KernelCatalogTest.cpp - the kernel catalog and the ops -------------===//
//
// Every op with a kernel contract names a kernel of KernelCatalog.def, and
// the catalog's entries are well formed (what kernel.call's verifier and the
// in-place rules rely on).
//
//===----------------------------------------------------------------------===//

#include "titan/Contract/KernelCatalog.h"
#include "titan/Dialect/Dist/IR/Dist.h"
#include "titan/Dialect/Titan/IR/TitanDialect.h"
#include "titan/Dialect/Titan/IR/TitanOps.h"

#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

using namespace titan;

namespace {

template <typename T, size_t N> size_t namedCount(const T (&list)[N]) {
  size_t n = 0;
  while (n < N && list[n].name)
    ++n;
  return n;
}

TEST(KernelCatalog, EveryKernelOpNamesAnEntry) {
  mlir::MLIRContext context;
  context.loadDialect<TitanDialect, dist::DistDialect>();
  int ops = 0;
  for (mlir::RegisteredOperationName name : context.getRegisteredOperations()) {
    if (!name.hasInterface<KernelOpInterface>())
      continue;
    ++ops;
    // KernelOpInterface's getKernelName: the op's name without its dialect.
    std::string kernel = name.stripDialect().str();
    const catalog::Entry *entry = catalog::lookup(kernel);
    ASSERT_NE(entry, nullptr) << name.getStringRef().str() << ": kernel '"
                              << kernel << "' is not in KernelCatalog.def";
    bool collective = name.getDialectNamespace() == "dist" &&
                      name.stripDialect().ends_with("_start");
    EXPECT_EQ(entry->kind == catalog::Kind::Collective, collective) << kernel;
  }
  EXPECT_GT(ops, 40);
}

TEST(KernelCatalog, EntriesAreWellFormed) {
  std::set<std::string> names;
  for (const catalog::Entry &entry : catalog::kEntries) {
    SCOPED_TRACE(entry.name);
    EXPECT_TRUE(names.insert(entry.name).second) << "listed twice";
    EXPECT_NE(entry.dtypes, 0u);
    size_t inputs = namedCount(entry.inputs),
           outputs = namedCount(entry.outputs),
           params = namedCount(entry.params);
    EXPECT_GE(outputs, 1u);
    // The count parameter is a required i64 before anything it counts.
    bool counts = false;
    auto checkCounted = [&](catalog::Quantity quantity) {
      if (quantity != catalog::Quantity::Counted)
        return;
      counts = true;
      EXPECT_GE(entry.countParam, 0) << "a counted element needs a count";
    };
    for (size_t i = 0; i < inputs; ++i) {
      checkCounted(entry.inputs[i].quantity);
      // The call's number of inputs says whether an optional one is there:
      // only the last, and no counted one beside it.
      if (entry.inputs[i].quantity == catalog::Quantity::Optional) {
        EXPECT_EQ(i + 1, inputs) << "an optional input must be the last";
        EXPECT_FALSE(llvm::any_of(
            llvm::ArrayRef(entry.inputs, inputs), [](const catalog::Buffer &b) {
              return b.quantity == catalog::Quantity::Counted;
            }));
      }
    }
    for (size_t i = 0; i < outputs; ++i) {
      EXPECT_NE(entry.outputs[i].quantity, catalog::Quantity::Optional);
      checkCounted(entry.outputs[i].quantity);
      EXPECT_LT(entry.outputs[i].inPlaceOf, int(inputs));
    }
    for (size_t i = 0; i < params; ++i) {
      checkCounted(entry.params[i].quantity);
      if (entry.params[i].quantity == catalog::Quantity::Counted) {
        EXPECT_GT(int(i), entry.countParam);
      }
      // Only the last parameter may be optional.
      if (entry.params[i].quantity == catalog::Quantity::Optional) {
        EXPECT_EQ(i + 1, params);
      }
    }
    if (entry.countParam < 0)
      continue;
    EXPECT_TRUE(counts) << "a count parameter that counts nothing";
    ASSERT_LT(size_t(entry.countParam), params);
    const catalog::Param &count = entry.params[entry.countParam];
    EXPECT_EQ(count.type, catalog::ParamType::I64);
    EXPECT_EQ(count.quantity, catalog::Quantity::One);
  }
}

TEST(KernelCatalog, InPlaceRules) {
  EXPECT_EQ(catalog::inPlaceInput("add", 0), 0u);
  EXPECT_EQ(catalog::inPlaceInput("adamw", 1), 2u);
  EXPECT_EQ(catalog::inPlaceInput("adamw", 2), 3u);
  EXPECT_EQ(catalog::inPlaceInput("attention", 0), std::nullopt);
  EXPECT_EQ(catalog::inPlaceInput("no_such_kernel", 0), std::nullopt);
}

} // namespace

// Every kernel that communicates (the collectives, and kernels flagged
// kCommunicates) names its group by an `axis_mask` parameter at a fixed
// place: the manifest and the collective scheduler read the group there.
TEST(KernelCatalog, CommunicatingKernelsNameTheirGroup) {
  unsigned communicating = 0;
  for (const catalog::Entry &e : catalog::kEntries) {
    bool communicates =
        e.kind == catalog::Kind::Collective || e.has(catalog::kCommunicates);
    std::optional<unsigned> index = catalog::paramIndex(e, "axis_mask");
    if (!communicates)
      continue;
    ++communicating;
    EXPECT_TRUE(index.has_value()) << e.name;
  }
  EXPECT_GT(communicating, 2u);
  EXPECT_EQ(
      catalog::paramIndex(catalog::get(catalog::KernelId::all_gather_linear),
                          "axis_mask"),
      3u);
  EXPECT_EQ(catalog::paramIndex(
                catalog::get(catalog::KernelId::all_gather_start), "axis_mask"),
            2u);
  EXPECT_FALSE(catalog::paramIndex(
      catalog::get(catalog::KernelId::all_gather_start), "no_such_parameter"));
}
