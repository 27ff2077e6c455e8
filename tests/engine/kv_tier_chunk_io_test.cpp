// chunk_io: the payload layout (per layer: K of each block, then V of each
// block), gather/scatter round trips, skipped blocks and size checks.
#include <gtest/gtest.h>

#include <cstring>

#include "engine_test_util.h"
#include "kvtier/chunk_io.h"

namespace strata::testing {
namespace {

// Fills every fp16 slot of `storage` with a value naming (layer, k/v, block, index).
void fill_pattern(KvStorage& storage) {
  for (int il = 0; il < storage.num_layers(); ++il) {
    const KvLayerView v = storage.layer(il);
    const size_t n = static_cast<size_t>(v.num_blocks) * v.block_size * v.n_kv_heads * v.head_dim;
    for (size_t i = 0; i < n; ++i) {
      v.k[i] = static_cast<uint16_t>(il * 7919 + i * 3);
      v.v[i] = static_cast<uint16_t>(il * 104729 + i * 5 + 1);
    }
  }
}

TEST(KvTierChunkIo, PayloadLayoutIsLayerMajorKThenV) {
  STRATA_REQUIRE_MODEL();
  const ModelConfig& config = peaky_model().weights->config();
  Result<KvStorage> s = KvStorage::create(config, 16, 8);
  ASSERT_TRUE(s.is_ok());
  fill_pattern(*s);
  const std::vector<int32_t> blocks = {5, 2};
  const std::vector<uint8_t> payload = gather_chunk_payload(*s, blocks);
  ASSERT_EQ(payload.size(), 32 * kv_bytes_per_token(config));
  EXPECT_EQ(kv_bytes_per_token(config),
            static_cast<size_t>(config.num_layers) * 2 * config.kv_dim() * 2);
  const size_t plane = 16 * static_cast<size_t>(config.kv_dim()) * 2;  // one block, K or V
  for (int il = 0; il < config.num_layers; ++il) {
    const KvLayerView v = s->layer(il);
    for (size_t j = 0; j < blocks.size(); ++j) {
      const size_t k_at = (static_cast<size_t>(il) * 2 * blocks.size() + j) * plane;
      const size_t v_at = k_at + blocks.size() * plane;
      EXPECT_EQ(std::memcmp(payload.data() + k_at, v.k + blocks[j] * plane / 2, plane), 0);
      EXPECT_EQ(std::memcmp(payload.data() + v_at, v.v + blocks[j] * plane / 2, plane), 0);
    }
  }
}

TEST(KvTierChunkIo, ScatterRestoresGatheredBlocksAndSkipsNegativeIds) {
  STRATA_REQUIRE_MODEL();
  const ModelConfig& config = peaky_model().weights->config();
  Result<KvStorage> src = KvStorage::create(config, 16, 8);
  Result<KvStorage> dst = KvStorage::create(config, 16, 8);
  ASSERT_TRUE(src.is_ok() && dst.is_ok());
  fill_pattern(*src);
  const std::vector<uint8_t> payload = gather_chunk_payload(*src, std::vector<int32_t>{1, 3});
  ASSERT_TRUE(scatter_chunk_payload(*dst, payload, std::vector<int32_t>{-1, 6}).is_ok());
  const size_t plane_elems = 16 * static_cast<size_t>(config.kv_dim());
  for (int il = 0; il < config.num_layers; ++il) {
    const KvLayerView a = src->layer(il);
    const KvLayerView b = dst->layer(il);
    EXPECT_EQ(std::memcmp(b.k + 6 * plane_elems, a.k + 3 * plane_elems, plane_elems * 2), 0);
    EXPECT_EQ(std::memcmp(b.v + 6 * plane_elems, a.v + 3 * plane_elems, plane_elems * 2), 0);
    for (size_t i = 0; i < plane_elems; ++i) {  // the skipped block's target stays untouched
      ASSERT_EQ(b.k[0 * plane_elems + i], 0);
      ASSERT_EQ(b.k[1 * plane_elems + i], 0);
    }
  }
}

TEST(KvTierChunkIo, ScatterRefusesAWrongSizeOrBlockAndWritesNothing) {
  STRATA_REQUIRE_MODEL();
  const ModelConfig& config = peaky_model().weights->config();
  Result<KvStorage> s = KvStorage::create(config, 16, 4);
  ASSERT_TRUE(s.is_ok());
  std::vector<uint8_t> payload(32 * kv_bytes_per_token(config), 0xAB);
  std::vector<uint8_t> short_payload(payload.size() - 2, 0xAB);
  EXPECT_FALSE(scatter_chunk_payload(*s, short_payload, std::vector<int32_t>{0, 1}).is_ok());
  EXPECT_FALSE(scatter_chunk_payload(*s, payload, std::vector<int32_t>{0, 4}).is_ok());
  EXPECT_FALSE(scatter_chunk_payload(*s, payload, std::vector<int32_t>{0}).is_ok());
  for (int il = 0; il < config.num_layers; ++il) EXPECT_EQ(s->layer(il).k[0], 0);
}

}  // namespace
}  // namespace strata::testing
