// The forward batch's wire bytes (rank 0 -> the other ranks): round trips,
// and every truncation or extension of a message is refused.
#include "runtime/forward_batch_codec.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

ForwardBatch sample_batch() {
  ForwardBatch b;
  b.block_tables = {{3, 4, 5}, {9}};
  for (int i = 0; i < 5; ++i) b.add_token(10 + i, i, 0, 4, i == 4);
  b.add_token(77, 2, 1, 4, true);
  return b;
}

TEST(ForwardBatchCodec, RoundTrips) {
  const ForwardBatch b = sample_batch();
  Result<ForwardBatch> back = decode_forward_batch(encode_forward_batch(b));
  ASSERT_TRUE(back.is_ok()) << back.status().message();
  EXPECT_EQ(back->tokens, b.tokens);
  EXPECT_EQ(back->positions, b.positions);
  EXPECT_EQ(back->seq_index, b.seq_index);
  EXPECT_EQ(back->slot_mapping, b.slot_mapping);
  EXPECT_EQ(back->logits_indices, b.logits_indices);
  EXPECT_EQ(back->block_tables, b.block_tables);
  Result<ForwardBatch> empty = decode_forward_batch(encode_forward_batch(ForwardBatch{}));
  ASSERT_TRUE(empty.is_ok());
  EXPECT_EQ(empty->num_tokens(), 0);
}

TEST(ForwardBatchCodec, RefusesEveryTruncationAndTrailingBytes) {
  const std::vector<uint8_t> bytes = encode_forward_batch(sample_batch());
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_FALSE(decode_forward_batch(std::span(bytes.data(), n)).is_ok()) << n;
  }
  std::vector<uint8_t> longer = bytes;
  longer.push_back(0);
  EXPECT_FALSE(decode_forward_batch(longer).is_ok());
  // A count far past the bytes left.
  std::vector<uint8_t> huge = bytes;
  huge[3] = 0x7f;
  EXPECT_FALSE(decode_forward_batch(huge).is_ok());
}

}  // namespace
}  // namespace strata
