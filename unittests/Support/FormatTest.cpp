//===- FormatTest.cpp - human-readable numbers ----------------------------===//

#include "titan/Support/Format.h"
#include "titan/Support/Suggest.h"

#include "gtest/gtest.h"

#include <cmath>
#include <limits>

using namespace titan;

TEST(FormatNumber, ShortestRoundTrip) {
  EXPECT_EQ(formatNumber(8e-4), "0.0008");
  EXPECT_EQ(formatNumber(1e-5), "1e-05");
  EXPECT_EQ(formatNumber(0.95), "0.95");
  EXPECT_EQ(formatNumber(1.0 / 3.0), "0.3333333333333333");
  EXPECT_EQ(formatNumber(-0.5), "-0.5");
}

// A NaN or an infinity in an attribute (fuzzing found titan.adamw's
// verifier printing one) is printed, not converted to an integer.
TEST(FormatNumber, NonFinite) {
  EXPECT_EQ(formatNumber(std::nan("")), "nan");
  EXPECT_EQ(formatNumber(-std::numeric_limits<double>::infinity()), "-inf");
  EXPECT_EQ(formatNumber(1e300), "1e+300");
}

TEST(FormatNumber, WholeNumbersAsIntegers) {
  EXPECT_EQ(formatNumber(500000.0), "500000");
  EXPECT_EQ(formatNumber(0.0), "0");
  EXPECT_EQ(formatNumber(-1.0), "-1");
  EXPECT_EQ(formatNumber(1e20), "1e+20");
}

TEST(FormatWithCommas, Groups) {
  EXPECT_EQ(formatWithCommas(0), "0");
  EXPECT_EQ(formatWithCommas(999), "999");
  EXPECT_EQ(formatWithCommas(1000), "1,000");
  EXPECT_EQ(formatWithCommas(405853388800), "405,853,388,800");
  EXPECT_EQ(formatWithCommas(-6163712), "-6,163,712");
}

TEST(Suggest, NearMissesOnly) {
  llvm::StringRef keys[] = {"steps", "seq_len", "local_batch_size"};
  EXPECT_EQ(closestMatch("stepz", keys), "steps");
  EXPECT_EQ(closestMatch("seqlen", keys), "seq_len");
  EXPECT_EQ(closestMatch("local_batchsize", keys), "local_batch_size");
  EXPECT_EQ(closestMatch("momentum", keys), "");
  EXPECT_EQ(didYouMean("stpes", keys), "; did you mean 'steps'?");
  EXPECT_EQ(didYouMean("xyz", keys), "");
}
