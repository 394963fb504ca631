//===- DatasetTest.cpp - samples and context parallel's sequence shards ---===//
//
// Context parallel's load-balanced split (TorchTitan v0.2.0): cp rank r
// holds chunks r and 2n - 1 - r of the 2n chunks (or chunk r of n,
// contiguous), the n ranks' tokens
// together are the sequence, each position once; and a rank's sample is
// the whole sample's tokens and labels at its positions. A text dataset's
// packing, position, looping and finite pass (validation).
//
//===----------------------------------------------------------------------===//

#include "Dataset.h"

#include "titan/Contract/TrainConfig.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

using namespace titanrt;

namespace {

/// The shard's sequence positions of a sequence of `seqLen`.
std::vector<int64_t> positions(SequenceShard shard, int64_t seqLen) {
  std::vector<int64_t> out;
  for (int64_t t = 0; t < shard.length(seqLen); ++t)
    out.push_back(shard.position(t, seqLen));
  return out;
}

TEST(SequenceShard, WholeSequenceWithoutContextParallel) {
  std::vector<int64_t> expected(7);
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(positions({1, 0}, 7), expected);
}

TEST(SequenceShard, LoadBalancedChunks) {
  // cp 4, 16 tokens: 8 chunks of 2; rank r holds chunks r and 7 - r.
  EXPECT_EQ(positions({4, 0}, 16), (std::vector<int64_t>{0, 1, 14, 15}));
  EXPECT_EQ(positions({4, 1}, 16), (std::vector<int64_t>{2, 3, 12, 13}));
  EXPECT_EQ(positions({4, 2}, 16), (std::vector<int64_t>{4, 5, 10, 11}));
  EXPECT_EQ(positions({4, 3}, 16), (std::vector<int64_t>{6, 7, 8, 9}));
  // cp 2, 8 tokens: 4 chunks of 2.
  EXPECT_EQ(positions({2, 1}, 8), (std::vector<int64_t>{2, 3, 4, 5}));
}

TEST(SequenceShard, ContiguousChunks) {
  // A manifest without load-balanced sequence axes: chunk r of n.
  EXPECT_EQ(positions({4, 1, false}, 16), (std::vector<int64_t>{4, 5, 6, 7}));
  EXPECT_EQ(positions({2, 1, false}, 6), (std::vector<int64_t>{3, 4, 5}));
}

TEST(SequenceShard, RanksTogetherHoldTheSequenceOnce) {
  for (int64_t degree : {1, 2, 3, 4, 8})
    for (int64_t chunk : {1, 3, 16}) {
      int64_t seqLen = 2 * degree * chunk;
      std::vector<int64_t> all;
      for (int64_t rank = 0; rank < degree; ++rank) {
        std::vector<int64_t> own = positions({degree, rank}, seqLen);
        EXPECT_EQ(int64_t(own.size()), seqLen / degree);
        all.insert(all.end(), own.begin(), own.end());
      }
      std::sort(all.begin(), all.end());
      std::vector<int64_t> expected(size_t(seqLen), 0);
      std::iota(expected.begin(), expected.end(), 0);
      EXPECT_EQ(all, expected) << "cp " << degree << ", chunk " << chunk;
    }
}

/// A text file of `text` (the byte tokenizer's ids are its bytes).
class TextFile {
public:
  explicit TextFile(llvm::StringRef text) {
    EXPECT_FALSE(
        llvm::sys::fs::createTemporaryFile("titan-dataset", "txt", path));
    std::error_code ec;
    llvm::raw_fd_ostream out(path, ec);
    EXPECT_FALSE(ec);
    out << text;
  }
  ~TextFile() { llvm::sys::fs::remove(path); }

  std::unique_ptr<Dataset> open(int64_t seqLen, SequenceShard shard = {},
                                bool loop = true) const {
    DataOptions o;
    o.path = path.str().str();
    o.vocabSize = 256;
    o.seqLen = seqLen;
    o.sequence = shard;
    o.loop = loop;
    return Dataset::open(o, titan::TrainConfig());
  }

  llvm::SmallString<128> path;
};

TEST(Dataset, ShardedSampleIsTheSampleAtItsPositions) {
  std::string text;
  for (int i = 0; i < 200; ++i)
    text += char('a' + i % 26);
  TextFile file(text);
  constexpr int64_t kSeqLen = 16, kDegree = 4, kSample = 3;
  std::vector<int32_t> tokens(kSeqLen), labels(kSeqLen);
  ASSERT_TRUE(
      file.open(kSeqLen)->sample(kSample, tokens.data(), labels.data()));
  for (int64_t rank = 0; rank < kDegree; ++rank) {
    SequenceShard shard{kDegree, rank};
    std::unique_ptr<Dataset> part = file.open(kSeqLen, shard);
    ASSERT_EQ(part->localLength(), kSeqLen / kDegree);
    std::vector<int32_t> ownTokens(kSeqLen / kDegree),
        ownLabels(kSeqLen / kDegree), whole(kSeqLen, -1);
    part->sample(kSample, ownTokens.data(), ownLabels.data(), whole.data());
    for (int64_t t = 0; t < part->localLength(); ++t) {
      EXPECT_EQ(ownTokens[t], tokens[shard.position(t, kSeqLen)]);
      EXPECT_EQ(ownLabels[t], labels[shard.position(t, kSeqLen)]);
    }
    // The block-causal mask's input: every rank sees the whole sequence.
    EXPECT_EQ(whole, tokens);
  }
}

TEST(Dataset, PacksDocumentsIntoWindowsOfSeqLenPlusOne) {
  // Documents "abc", "defgh", "ij": the stream abcdefghij, windows of 4.
  TextFile file("abc\ndefgh\r\nij\n");
  std::unique_ptr<Dataset> data = file.open(3);
  std::vector<int32_t> tokens(3), labels(3);
  ASSERT_TRUE(data->sample(1, tokens.data(), labels.data()));
  EXPECT_EQ(tokens, (std::vector<int32_t>{'e', 'f', 'g'}));
  EXPECT_EQ(labels, (std::vector<int32_t>{'f', 'g', 'h'}));
  // The next window starts at token 0 of document 2 ("ij").
  std::optional<DataPosition> next = data->position(2);
  ASSERT_TRUE(next);
  EXPECT_EQ(next->document, 2);
  EXPECT_EQ(next->token, 0);
  // Looping: window 2 is "ij" + "ab" (the buffer carries over the end).
  ASSERT_TRUE(data->sample(2, tokens.data(), labels.data()));
  EXPECT_EQ(tokens, (std::vector<int32_t>{'i', 'j', 'a'}));
}

TEST(Dataset, FinitePassEndsAndRewinds) {
  // 10 tokens: two whole windows of 4; the rest is dropped, as TorchTitan
  // drops a non-infinite dataset's last partial buffer.
  TextFile file("abc\ndefgh\nij\n");
  std::unique_ptr<Dataset> data = file.open(3, {}, /*loop=*/false);
  std::vector<int32_t> tokens(3), labels(3), first(3);
  ASSERT_TRUE(data->sample(0, first.data(), labels.data()));
  ASSERT_TRUE(data->sample(1, tokens.data(), labels.data()));
  EXPECT_FALSE(data->sample(2, tokens.data(), labels.data()));
  data->rewind(0);
  ASSERT_TRUE(data->sample(0, tokens.data(), labels.data()));
  EXPECT_EQ(tokens, first);
}

} // namespace
