#include "kvtier/chunk_key.h"

#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"
#include "model/model_config.h"

namespace strata {
namespace {

ModelFingerprintInputs base_inputs() {
  ModelFingerprintInputs in;
  in.architecture = "llama";
  for (size_t i = 0; i < in.weights_digest.size(); ++i) {
    in.weights_digest[i] = static_cast<uint8_t>(i);
  }
  in.kv_dtype = "f16";
  in.block_size = 16;
  in.num_layers = 22;
  in.n_kv_heads = 4;
  in.head_dim = 64;
  in.chunk_tokens = 256;
  return in;
}

BlockHash chain(std::initializer_list<std::vector<int32_t>> blocks, std::string_view salt = {}) {
  BlockHash h = root_block_hash();
  bool is_first = true;
  for (const std::vector<int32_t>& b : blocks) {
    h = hash_block(h, b, is_first ? salt : std::string_view());
    is_first = false;
  }
  return h;
}

// The encodings are a contract shared by every process and every stored
// chunk: a change here orphans all disk and Redis contents. Bump
// kChunkFormatVersion (and these goldens) deliberately, never by accident.
// The values were cross-checked with an independent Python (hashlib)
// implementation of the encoding written in chunk_key.h (which also gives
// version 1's goldens, 95ceb803... and 4a03055f..., from the same inputs).
TEST(ChunkKeyTest, GoldenFingerprintAndKey) {
  const ModelFingerprint fp = fingerprint_from_inputs(base_inputs());
  EXPECT_EQ(fp.hex(), "b39e4b60dafab1890b396d48eba20f671a24d85135ec668230a4990979adabda");
  const ChunkKey key = make_chunk_key(fp, chain({{1, 2, 3, 4}, {5, 6, 7, 8}}));
  EXPECT_EQ(key.hex(), "11039943361e9fd4c1984f6c39cc07f23d061fea16dd3eef480468163d6ec0cb");
  EXPECT_EQ(kChunkFormatVersion, 2u);
}

TEST(ChunkKeyTest, HexRoundTrips) {
  const ChunkKey key = make_chunk_key(fingerprint_from_inputs(base_inputs()), chain({{9}}));
  const std::string hex = key.hex();
  ASSERT_EQ(hex.size(), 64u);
  EXPECT_EQ(ChunkKey::from_hex(hex), key);
  std::string upper = hex;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  EXPECT_EQ(ChunkKey::from_hex(upper), key);
  EXPECT_FALSE(ChunkKey::from_hex(hex.substr(1)).has_value());
  EXPECT_FALSE(ChunkKey::from_hex(hex + "0").has_value());
  EXPECT_FALSE(ChunkKey::from_hex(std::string(63, '0') + "g").has_value());
}

TEST(ChunkKeyTest, EveryFingerprintInputChangesTheFingerprint) {
  std::vector<ModelFingerprintInputs> variants(9, base_inputs());
  variants[1].architecture = "qwen2";
  variants[2].weights_digest[31] ^= 1;  // e.g. one tensor's type differs
  variants[3].kv_dtype = "bf16";
  variants[4].block_size = 32;
  variants[5].num_layers = 21;
  variants[6].n_kv_heads = 8;
  variants[7].head_dim = 128;
  variants[8].chunk_tokens = 512;
  std::set<std::string> seen;
  for (const ModelFingerprintInputs& v : variants) seen.insert(fingerprint_from_inputs(v).hex());
  EXPECT_EQ(seen.size(), variants.size());
}

// A tiny GGUF whose one tensor's type, values or metadata can vary.
std::vector<uint8_t> tiny_gguf(DType type, uint8_t fill, std::string_view name) {
  GgufWriter w;
  w.add_string("general.architecture", "llama");
  w.add_string("general.name", name);
  const size_t bytes = type == DType::kF32 ? 4 * 64 : 2 * 64;
  w.add_tensor("token_embd.weight", type, {64}, std::vector<uint8_t>(bytes, fill));
  return w.serialize();
}

TEST(ChunkKeyTest, GgufDigestSeparatesTensorTypeValuesAndMetadata) {
  const std::vector<std::vector<uint8_t>> images = {
      tiny_gguf(DType::kF32, 0, "a"), tiny_gguf(DType::kF16, 0, "a"),
      tiny_gguf(DType::kF32, 1, "a"), tiny_gguf(DType::kF32, 0, "b")};
  std::set<std::array<uint8_t, 32>> seen;
  for (const std::vector<uint8_t>& img : images) {
    Result<GgufFile> f = GgufFile::parse(img.data(), img.size());
    ASSERT_TRUE(f.is_ok()) << f.status().to_string();
    seen.insert(digest_gguf_tables(*f));
  }
  EXPECT_EQ(seen.size(), images.size());
  // And it is a pure function of the file.
  Result<GgufFile> f1 = GgufFile::parse(images[0].data(), images[0].size());
  Result<GgufFile> f2 = GgufFile::parse(images[0].data(), images[0].size());
  EXPECT_EQ(digest_gguf_tables(*f1), digest_gguf_tables(*f2));
}

TEST(ChunkKeyTest, ComputeModelFingerprintOnARealModelSeparatesLayouts) {
  const std::string path = std::string(STRATA_BINARY_DIR) + "/models/llama-f32.gguf";
  const std::string alt = std::string(STRATA_SOURCE_DIR) + "/build/models/llama-f32.gguf";
  Result<GgufFile> f = GgufFile::open(path);
  if (!f) f = GgufFile::open(alt);
  if (!f) GTEST_SKIP() << "no test model (make models)";
  Result<ModelConfig> config = ModelConfig::from_gguf(*f);
  ASSERT_TRUE(config.is_ok());
  const ModelFingerprint a = compute_model_fingerprint(*f, *config, 16, 256);
  EXPECT_EQ(a, compute_model_fingerprint(*f, *config, 16, 256));
  EXPECT_NE(a, compute_model_fingerprint(*f, *config, 32, 256));  // block size
  EXPECT_NE(a, compute_model_fingerprint(*f, *config, 16, 128));  // chunk tokens
  ModelConfig other = *config;
  other.arch = Architecture::kQwen2;
  EXPECT_NE(a, compute_model_fingerprint(*f, other, 16, 256));  // architecture
}

TEST(ChunkKeyTest, SaltAndPrefixSeparateKeys) {
  const ModelFingerprint fp = fingerprint_from_inputs(base_inputs());
  const ChunkKey plain = make_chunk_key(fp, chain({{1, 2}, {3, 4}}));
  EXPECT_EQ(plain, make_chunk_key(fp, chain({{1, 2}, {3, 4}})));
  EXPECT_NE(plain, make_chunk_key(fp, chain({{1, 2}, {3, 4}}, "user-a")));
  EXPECT_NE(make_chunk_key(fp, chain({{1, 2}, {3, 4}}, "user-a")),
            make_chunk_key(fp, chain({{1, 2}, {3, 4}}, "user-b")));
  EXPECT_NE(plain, make_chunk_key(fp, chain({{9, 2}, {3, 4}})));  // earlier token differs
  ModelFingerprintInputs other = base_inputs();
  other.chunk_tokens = 128;
  EXPECT_NE(plain, make_chunk_key(fingerprint_from_inputs(other), chain({{1, 2}, {3, 4}})));
}

// Under model parallelism each rank stores its own slice under a key that
// names the layout and the rank: slices never mix, and a TP=2 chunk never
// loads into one process (whose key, without a layout, keeps the golden
// encoding above).
TEST(ChunkKeyTest, ParallelLayoutSeparatesSlices) {
  const ModelFingerprint fp = fingerprint_from_inputs(base_inputs());
  const BlockHash h = chain({{1, 2}, {3, 4}});
  const auto layout = [](int t, int p, int rank) {
    ParallelLayout l;
    l.tensor_parallel_size = t;
    l.pipeline_parallel_size = p;
    l.rank = rank;
    return l;
  };
  const ChunkKey whole = make_chunk_key(fp, h);
  EXPECT_EQ(whole, make_chunk_key(fp, h, layout(1, 1, 0)));  // one process: no layout
  const ChunkKey tp2_r0 = make_chunk_key(fp, h, layout(2, 1, 0));
  EXPECT_EQ(tp2_r0, make_chunk_key(fp, h, layout(2, 1, 0)));
  const std::vector<ChunkKey> keys = {whole,
                                      tp2_r0,
                                      make_chunk_key(fp, h, layout(2, 1, 1)),
                                      make_chunk_key(fp, h, layout(1, 2, 0)),
                                      make_chunk_key(fp, h, layout(1, 2, 1)),
                                      make_chunk_key(fp, h, layout(2, 2, 0)),
                                      make_chunk_key(fp, h, layout(2, 2, 3)),
                                      make_chunk_key(fp, h, layout(4, 1, 0))};
  for (size_t i = 0; i < keys.size(); ++i) {
    for (size_t j = i + 1; j < keys.size(); ++j) EXPECT_NE(keys[i], keys[j]) << i << " vs " << j;
  }
  // The layout does not replace the prefix: another chain, another key.
  EXPECT_NE(tp2_r0, make_chunk_key(fp, chain({{9, 2}, {3, 4}}), layout(2, 1, 0)));
}

}  // namespace
}  // namespace strata
