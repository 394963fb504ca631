//===- DtypeTest.cpp - the one element type enum --------------------------===//
//
// titan::Dtype (titan/Contract/Dtype.h): its codes are the ABI's (compiled
// programs carry them), its names are the catalog's entry point suffixes,
// and the catalog's entries list their entry points by it.
//
//===----------------------------------------------------------------------===//

#include "titan/Contract/Dtype.h"
#include "titan/Contract/KernelCatalog.h"

#include "gtest/gtest.h"

#include <set>
#include <string>

using namespace titan;

namespace {

// The codes compiled programs pass in a call's `types`: changing one breaks
// every compiled executable, so they are pinned here.
TEST(Dtype, CodesAreTheABIs) {
  EXPECT_EQ(int(Dtype::f32), 0);
  EXPECT_EQ(int(Dtype::f64), 1);
  EXPECT_EQ(int(Dtype::bf16), 2);
  EXPECT_EQ(int(Dtype::f16), 3);
  EXPECT_EQ(int(Dtype::i32), 4);
  EXPECT_EQ(int(Dtype::i64), 5);
  EXPECT_EQ(int(Dtype::f8E4M3FN), 6);
  EXPECT_EQ(int(Dtype::f8E5M2), 7);
  EXPECT_EQ(kNumDtypes, 8u);
  for (unsigned code = 0; code < kNumDtypes; ++code)
    EXPECT_EQ(dtypeFromCode(code), Dtype(code));
  EXPECT_FALSE(dtypeFromCode(-1));
  EXPECT_FALSE(dtypeFromCode(kNumDtypes));
}

TEST(Dtype, NamesAndBytes) {
  EXPECT_STREQ(dtypeName(Dtype::bf16), "bf16");
  EXPECT_STREQ(dtypeName(Dtype::f8E4M3FN), "f8E4M3FN");
  EXPECT_STREQ(torchDtypeName(Dtype::bf16), "bfloat16");
  EXPECT_STREQ(torchDtypeName(Dtype::f8E5M2), "float8_e5m2");
  EXPECT_EQ(dtypeBytes(Dtype::f64), 8);
  EXPECT_EQ(dtypeBytes(Dtype::f32), 4);
  EXPECT_EQ(dtypeBytes(Dtype::i32), 4);
  EXPECT_EQ(dtypeBytes(Dtype::i64), 8);
  EXPECT_EQ(dtypeBytes(Dtype::f16), 2);
  EXPECT_EQ(dtypeBytes(Dtype::f8E5M2), 1);
}

TEST(Dtype, ParsingInvertsTheNames) {
  std::set<std::string> names, torchNames;
  for (Dtype d : kDtypes) {
    EXPECT_EQ(parseDtype(dtypeName(d)), d);
    EXPECT_EQ(parseTorchDtype(torchDtypeName(d)), d);
    EXPECT_TRUE(names.insert(dtypeName(d)).second) << dtypeName(d);
    EXPECT_TRUE(torchNames.insert(torchDtypeName(d)).second);
  }
  EXPECT_FALSE(parseDtype("float32"));
  EXPECT_FALSE(parseDtype("BF16"));
  EXPECT_FALSE(parseDtype(""));
  EXPECT_FALSE(parseTorchDtype("f32"));
  static_assert(parseDtype("f8E5M2") == Dtype::f8E5M2);
}

// The catalog's dtype lists (KernelCatalog.def's Float, Comm and I32) are
// sets of Dtypes: a target defines titan_rt_<name>_<dtypeName> for each.
TEST(Dtype, CatalogEntriesListTheirEntryPoints) {
  const catalog::Entry &rmsNorm = catalog::get(catalog::KernelId::rms_norm);
  for (Dtype d : {Dtype::f32, Dtype::f64, Dtype::bf16, Dtype::f16})
    EXPECT_TRUE(rmsNorm.has(d)) << dtypeName(d);
  for (Dtype d : {Dtype::i32, Dtype::i64, Dtype::f8E4M3FN, Dtype::f8E5M2})
    EXPECT_FALSE(rmsNorm.has(d)) << dtypeName(d);

  const catalog::Entry *allGather = catalog::lookup("all_gather_start");
  ASSERT_NE(allGather, nullptr);
  EXPECT_TRUE(allGather->has(Dtype::f8E5M2));
  EXPECT_FALSE(allGather->has(Dtype::i32));

  const catalog::Entry *shardOffset = catalog::lookup("shard_offset");
  ASSERT_NE(shardOffset, nullptr);
  EXPECT_EQ(shardOffset->dtypes, catalog::dtypeBit(Dtype::i32));
}

} // namespace
