#include "kvtier/chunk_codec.h"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "kvtier_test_util.h"

namespace strata {
namespace {

using testing::make_test_chunk;

constexpr size_t kMax = 1 << 20;

std::vector<uint8_t> bytes_of(const std::string& s) {
  return {s.begin(), s.end()};
}

// Re-seals the header checksum after a test edited a header field, so the
// field's own check (not the checksum) must catch the edit.
void reseal(std::vector<uint8_t>& b) {
  const uint64_t sum = XXH3_64bits(b.data(), 72);
  for (int i = 0; i < 8; ++i) b[72 + i] = static_cast<uint8_t>(sum >> (8 * i));
}

void put_u32(std::vector<uint8_t>& b, size_t off, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[off + i] = static_cast<uint8_t>(v >> (8 * i));
}
void put_u64(std::vector<uint8_t>& b, size_t off, uint64_t v) {
  for (int i = 0; i < 8; ++i) b[off + i] = static_cast<uint8_t>(v >> (8 * i));
}

TEST(ChunkCodecTest, RoundTrip) {
  KvChunkHandle c = make_test_chunk(1, 1000);
  const std::string enc = encode_chunk(*c);
  ASSERT_EQ(enc.size(), kChunkHeaderBytes + 1000);
  EXPECT_EQ(enc.substr(0, 8), "STRATAKV");
  const std::vector<uint8_t> b = bytes_of(enc);
  Result<KvChunkHandle> d = decode_chunk(b, c->key, kMax);
  ASSERT_TRUE(d.is_ok()) << d.status().to_string();
  EXPECT_EQ((*d)->key, c->key);
  EXPECT_EQ((*d)->num_tokens, c->num_tokens);
  EXPECT_EQ((*d)->payload, c->payload);
  const std::array<uint8_t, kChunkHeaderBytes> h = encode_chunk_header(*c);
  EXPECT_EQ(0, std::memcmp(h.data(), enc.data(), kChunkHeaderBytes));
}

TEST(ChunkCodecTest, EmptyPayloadRoundTrips) {
  KvChunkHandle c = make_test_chunk(2, 0);
  Result<KvChunkHandle> d = decode_chunk(bytes_of(encode_chunk(*c)), c->key, kMax);
  ASSERT_TRUE(d.is_ok()) << d.status().to_string();
  EXPECT_TRUE((*d)->payload.empty());
}

struct Corruption {
  std::string name;
  std::function<void(std::vector<uint8_t>&)> apply;
  std::string expected_message_part;
};

TEST(ChunkCodecTest, EveryHeaderFieldCorruptionIsRejectedWithOneLine) {
  KvChunkHandle c = make_test_chunk(3, 256);
  const std::vector<uint8_t> good = bytes_of(encode_chunk(*c));
  const std::vector<Corruption> cases = {
      {"magic", [](auto& b) { b[0] ^= 1; }, "bad magic"},
      {"version (1: the block layout before head-major)",
       [](auto& b) {
         put_u32(b, 8, 1);
         reseal(b);
       },
       "format version 1"},
      {"header bytes",
       [](auto& b) {
         put_u32(b, 12, 96);
         reseal(b);
       },
       "header bytes 96"},
      {"key",
       [](auto& b) {
         b[20] ^= 1;
         reseal(b);
       },
       "does not match the requested key"},
      {"key without reseal", [](auto& b) { b[20] ^= 1; }, "header checksum mismatch"},
      {"num_tokens zero",
       [](auto& b) {
         put_u32(b, 48, 0);
         reseal(b);
       },
       "num_tokens 0"},
      {"reserved",
       [](auto& b) {
         put_u32(b, 52, 1);
         reseal(b);
       },
       "reserved"},
      {"payload bytes larger",
       [](auto& b) {
         put_u64(b, 56, 257);
         reseal(b);
       },
       "payload is 256 bytes, header says 257"},
      {"payload bytes over limit",
       [](auto& b) {
         put_u64(b, 56, kMax + 1);
         reseal(b);
       },
       "exceeds the limit"},
      {"payload checksum field",
       [](auto& b) {
         b[64] ^= 1;
         reseal(b);
       },
       "payload checksum mismatch"},
      {"header checksum field", [](auto& b) { b[72] ^= 1; }, "header checksum mismatch"},
      {"payload bit flip", [](auto& b) { b[kChunkHeaderBytes + 100] ^= 0x10; },
       "payload checksum mismatch"},
      {"truncated payload", [](auto& b) { b.pop_back(); }, "payload is 255 bytes"},
      {"trailing byte", [](auto& b) { b.push_back(0); }, "payload is 257 bytes"},
      {"truncated header", [](auto& b) { b.resize(40); }, "shorter than the 80-byte header"},
  };
  for (const Corruption& k : cases) {
    std::vector<uint8_t> b = good;
    k.apply(b);
    Result<KvChunkHandle> d = decode_chunk(b, c->key, kMax);
    ASSERT_FALSE(d.is_ok()) << k.name;
    const std::string& msg = d.status().message();
    EXPECT_NE(msg.find(k.expected_message_part), std::string::npos) << k.name << ": " << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << k.name;
    EXPECT_EQ(msg.rfind("chunk: ", 0), 0u) << k.name << ": " << msg;
  }
}

TEST(ChunkCodecTest, WrongExpectedKeyIsRejected) {
  KvChunkHandle c = make_test_chunk(4, 64);
  KvChunkHandle other = make_test_chunk(5, 64);
  Result<KvChunkHandle> d = decode_chunk(bytes_of(encode_chunk(*c)), other->key, kMax);
  ASSERT_FALSE(d.is_ok());
  EXPECT_NE(d.status().message().find("does not match"), std::string::npos);
}

TEST(ChunkCodecTest, HeaderAloneDecodes) {
  KvChunkHandle c = make_test_chunk(6, 300);
  const std::array<uint8_t, kChunkHeaderBytes> h = encode_chunk_header(*c);
  Result<ChunkHeader> d = decode_chunk_header(h, kMax);
  ASSERT_TRUE(d.is_ok()) << d.status().to_string();
  EXPECT_EQ(d->key, c->key);
  EXPECT_EQ(d->payload_bytes, 300u);
  EXPECT_EQ(d->num_tokens, c->num_tokens);
  EXPECT_TRUE(verify_chunk_payload(*d, c->payload).is_ok());
  EXPECT_FALSE(decode_chunk_header(h, 299).is_ok());  // over the caller's bound
}

// The seed corpus of fuzz/fuzz_chunk_codec.cpp (fuzz/corpus/chunk_codec/),
// built here so it follows the format: valid chunk files of a few payload
// sizes (up to a real chunk of the test models: 32 tokens x 1 KiB) and one of
// each header defect, resealed so the field's own check is what rejects it.
std::vector<std::pair<std::string, std::vector<uint8_t>>> fuzz_seeds() {
  std::vector<std::pair<std::string, std::vector<uint8_t>>> seeds;
  for (size_t payload : {size_t{0}, size_t{1}, size_t{63}, size_t{1024}, size_t{32768}}) {
    KvChunkHandle c = make_test_chunk(static_cast<uint32_t>(100 + payload), payload);
    seeds.emplace_back("valid_payload_" + std::to_string(payload), bytes_of(encode_chunk(*c)));
  }
  const std::vector<uint8_t> good = bytes_of(encode_chunk(*make_test_chunk(7, 256)));
  auto defect = [&](const std::string& name, auto&& edit) {
    std::vector<uint8_t> b = good;
    edit(b);
    seeds.emplace_back("invalid_" + name, std::move(b));
  };
  defect("magic", [](auto& b) { b[0] ^= 1; });
  defect("version", [](auto& b) { put_u32(b, 8, 1), reseal(b); });
  defect("header_bytes", [](auto& b) { put_u32(b, 12, 96), reseal(b); });
  defect("header_checksum", [](auto& b) { b[72] ^= 1; });
  defect("num_tokens_zero", [](auto& b) { put_u32(b, 48, 0), reseal(b); });
  defect("num_tokens_negative", [](auto& b) { put_u32(b, 48, 0x80000000u), reseal(b); });
  defect("reserved", [](auto& b) { put_u32(b, 52, 1), reseal(b); });
  defect("payload_bytes_huge", [](auto& b) { put_u64(b, 56, ~uint64_t{0} - 40), reseal(b); });
  defect("payload_checksum", [](auto& b) { b[kChunkHeaderBytes + 100] ^= 0x10; });
  defect("truncated_payload", [](auto& b) { b.resize(b.size() - 1); });
  defect("truncated_header", [](auto& b) { b.resize(40); });
  return seeds;
}

// Fails when the committed seeds are not what fuzz_seeds() builds (the format
// changed); to regenerate them:
//   STRATA_WRITE_FUZZ_SEEDS=1 build/test_kvtier --gtest_filter='*FuzzSeedCorpus*'
// Further files in the directory (inputs the fuzzer found) are left alone.
TEST(ChunkCodecTest, FuzzSeedCorpusIsCurrent) {
  const std::string dir = std::string(STRATA_SOURCE_DIR) + "/fuzz/corpus/chunk_codec/";
  const bool is_writing = std::getenv("STRATA_WRITE_FUZZ_SEEDS") != nullptr;
  for (const auto& [name, bytes] : fuzz_seeds()) {
    if (is_writing) {
      std::ofstream(dir + name, std::ios::binary)
          .write(reinterpret_cast<const char*>(bytes.data()),
                 static_cast<std::streamsize>(bytes.size()));
    }
    std::ifstream f(dir + name, std::ios::binary);
    ASSERT_TRUE(f.good()) << dir + name << " is missing; regenerate the seeds (see above)";
    const std::vector<uint8_t> committed{std::istreambuf_iterator<char>(f), {}};
    EXPECT_EQ(committed, bytes) << name << " is stale; regenerate the seeds (see above)";
    ChunkKey key;
    if (bytes.size() >= 48) std::memcpy(key.bytes.data(), bytes.data() + 16, 32);
    Result<KvChunkHandle> d = decode_chunk(bytes, key, kMax);
    EXPECT_EQ(d.is_ok(), name.rfind("valid_", 0) == 0) << name << ": " << d.status().to_string();
  }
}

}  // namespace
}  // namespace strata
