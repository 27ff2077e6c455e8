#include "engine/kv_slice_message.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace strata {
namespace {

KvSliceMessage sample() {
  KvSliceMessage m;
  m.op = KvSliceOp::kOpen;
  m.block_size = 16;
  m.options.chunk_tokens = 64;
  m.options.cpu_bytes = 1 << 20;
  m.options.disk_dir = "/tmp/kv";
  m.options.disk_bytes = size_t{3} << 30;
  m.options.remote_url = "redis://h:6379";
  m.options.remote_password = "pw";
  m.options.remote_timeout_ms = 150;
  m.options.max_pending_store_bytes = 12345;
  m.load_id = 77;
  m.first_chunk = 2;
  m.first_block = 9;
  m.hashes.resize(2);
  m.hashes[0].bytes[0] = 1;
  m.hashes[1].bytes[31] = 0xff;
  m.block_ids = {4, 5, 6, 7, 8, 9, 10, 11};
  return m;
}

TEST(KvSliceMessageTest, RoundTrips) {
  const KvSliceMessage m = sample();
  Result<KvSliceMessage> d = decode_kv_slice_message(encode_kv_slice_message(m));
  ASSERT_TRUE(d.is_ok()) << d.status().message();
  EXPECT_EQ(d->op, m.op);
  EXPECT_EQ(d->block_size, 16);
  EXPECT_EQ(d->options.chunk_tokens, 64);
  EXPECT_EQ(d->options.cpu_bytes, m.options.cpu_bytes);
  EXPECT_EQ(d->options.disk_dir, "/tmp/kv");
  EXPECT_EQ(d->options.disk_bytes, m.options.disk_bytes);
  EXPECT_EQ(d->options.remote_url, "redis://h:6379");
  EXPECT_EQ(d->options.remote_password, "pw");
  EXPECT_EQ(d->options.remote_timeout_ms, 150);
  EXPECT_EQ(d->options.max_pending_store_bytes, 12345u);
  EXPECT_EQ(d->load_id, 77u);
  EXPECT_EQ(d->first_chunk, 2);
  EXPECT_EQ(d->first_block, 9);
  EXPECT_EQ(d->hashes, m.hashes);
  EXPECT_EQ(d->block_ids, m.block_ids);
}

// A worker ends the group on a message that does not decode: every
// truncation, a trailing byte and an unknown op are errors, never reads
// past the end.
TEST(KvSliceMessageTest, RefusesTruncatedTrailingAndUnknown) {
  const std::vector<uint8_t> bytes = encode_kv_slice_message(sample());
  for (size_t n = 0; n < bytes.size(); ++n) {
    const std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
    EXPECT_FALSE(decode_kv_slice_message(cut).is_ok()) << n;
  }
  std::vector<uint8_t> longer = bytes;
  longer.push_back(0);
  EXPECT_FALSE(decode_kv_slice_message(longer).is_ok());
  std::vector<uint8_t> unknown = bytes;
  unknown[0] = 99;
  EXPECT_FALSE(decode_kv_slice_message(unknown).is_ok());
}

}  // namespace
}  // namespace strata
