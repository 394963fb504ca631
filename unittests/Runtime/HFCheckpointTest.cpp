//===- HFCheckpointTest.cpp - Hugging Face's q/k row order ----------------===//
//
// RowOrder is TorchTitan v0.2.0's Llama3StateDictAdapter._permute (HF's
// row of each of titan's rows), and forEachPiece maps any range of a
// tensor's elements, wherever it starts and ends, onto the file's elements
// exactly once: what every rank's partial reads and writes rely on.
//
//===----------------------------------------------------------------------===//

#include "HFCheckpoint.h"

#include "gtest/gtest.h"

#include <vector>

using namespace titanrt;

namespace {

/// _permute(w, heads): w.view(heads, headDim / 2, 2, cols).transpose(1, 2):
/// the permuted tensor's element [h][j][i][c] is w's [h][i][j][c].
std::vector<int> permute(const std::vector<int> &w, int64_t heads,
                         int64_t headDim, int64_t cols) {
  std::vector<int> out(w.size());
  int64_t half = headDim / 2;
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < half; ++i)
      for (int64_t j = 0; j < 2; ++j)
        for (int64_t c = 0; c < cols; ++c)
          out[((h * 2 + j) * half + i) * cols + c] =
              w[((h * half + i) * 2 + j) * cols + c];
  return out;
}

TEST(HFCheckpointTest, RowOrderIsTorchTitansPermute) {
  const int64_t heads = 3, headDim = 8, cols = 5, n = heads * headDim * cols;
  std::vector<int> w(n);
  for (int64_t e = 0; e < n; ++e)
    w[e] = int(e);
  std::vector<int> expected = permute(w, heads, headDim, cols);
  RowOrder order{heads, headDim};
  // Every range [first, first + count), as a rank's runs may be.
  for (int64_t first = 0; first < n; first += 7)
    for (int64_t count : {int64_t(1), int64_t(4), int64_t(13), n - first}) {
      count = std::min(count, n - first);
      std::vector<int> file(n, -1);
      order.forEachPiece(first, count, cols,
                         [&](int64_t at, int64_t offset, int64_t k) {
                           for (int64_t e = 0; e < k; ++e)
                             file[at + e] = w[first + offset + e];
                         });
      for (int64_t e = 0; e < n; ++e)
        if (file[e] >= 0) {
          ASSERT_EQ(file[e], expected[e]) << "first " << first;
          --count;
        }
      EXPECT_EQ(count, 0) << "first " << first;
    }
}

TEST(HFCheckpointTest, IdentityIsOnePiece) {
  int pieces = 0;
  RowOrder().forEachPiece(3, 100, 7,
                          [&](int64_t at, int64_t offset, int64_t count) {
                            EXPECT_EQ(at, 3);
                            EXPECT_EQ(offset, 0);
                            EXPECT_EQ(count, 100);
                            ++pieces;
                          });
  EXPECT_EQ(pieces, 1);
}

} // namespace
