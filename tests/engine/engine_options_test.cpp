// EngineOptions: the default KV budget (what --max-num-seqs x --max-model-len
// can use, capped) and the trained-context check of --max-model-len.
#include "engine/engine_options.h"

#include <gtest/gtest.h>

#include "runtime/kv_storage.h"

namespace strata {
namespace {

// The bundled demo model's shape: 6 layers, 2 KV heads of 32, 256 tokens.
ModelConfig demo_config() {
  ModelConfig c;
  c.context_length = 256;
  c.hidden_dim = 256;
  c.num_layers = 6;
  c.num_heads = 8;
  c.num_kv_heads = 2;
  c.head_dim = 32;
  c.ffn_dim = 704;
  c.vocab_size = 4096;
  return c;
}

TEST(EngineOptions, DefaultKvBudgetIsWhatTheRequestsCanUse) {
  const ModelConfig c = demo_config();
  EngineOptions o;
  ASSERT_TRUE(o.validate().is_ok());
  // 16 tokens x 64 (K) + 64 (V) x 2 bytes x 6 layers.
  ASSERT_EQ(KvStorage::bytes_per_block(c, 16), size_t{24576});
  // 256 sequences x 256 / 16 blocks: 96 MiB, not the 2 GiB cap.
  EXPECT_EQ(o.resolved_kv_cache_memory_bytes(c), size_t{256} * 16 * 24576);
  // Whole blocks per request: 100 tokens take 7.
  o.max_num_seqs = 4;
  o.max_model_len = 100;
  EXPECT_EQ(o.resolved_kv_cache_memory_bytes(c), size_t{4} * 7 * 24576);
}

TEST(EngineOptions, DefaultKvBudgetIsCappedAndAnExplicitOneIsKept) {
  ModelConfig c = demo_config();
  c.context_length = 1 << 20;
  EngineOptions o;
  o.max_num_seqs = 1 << 20;  // 2^20 x 2^16 blocks x 24 KiB: far past size_t's range
  EXPECT_EQ(o.resolved_kv_cache_memory_bytes(c), EngineOptions::kMaxAutoKvCacheBytes);
  o.kv_cache_memory_bytes = 12345;
  EXPECT_EQ(o.resolved_kv_cache_memory_bytes(c), size_t{12345});
}

TEST(EngineOptions, MaxModelLenPastTheTrainedContextNeedsTheOverride) {
  const ModelConfig c = demo_config();
  EngineOptions o;
  EXPECT_TRUE(o.check_model(c).is_ok());  // 0: the model's own
  o.max_model_len = 256;
  EXPECT_TRUE(o.check_model(c).is_ok());
  o.max_model_len = 257;
  const Status s = o.check_model(c);
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("trained context of 256"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("--allow-long-max-model-len"), std::string::npos) << s.message();
  o.allow_long_max_model_len = true;
  EXPECT_TRUE(o.check_model(c).is_ok());
}

}  // namespace
}  // namespace strata
