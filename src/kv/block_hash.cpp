#include "kv/block_hash.h"

#include <openssl/sha.h>

#include <vector>

#include "util/hex.h"

namespace strata {
namespace {

void put_u32(std::vector<uint8_t>* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<uint8_t>(v >> (8 * i)));
}

BlockHash sha256(const std::vector<uint8_t>& data) {
  BlockHash h;
  SHA256(data.data(), data.size(), h.bytes.data());
  return h;
}

}  // namespace

std::string BlockHash::to_hex() const {
  return strata::to_hex(bytes);
}

const BlockHash& root_block_hash() {
  static const BlockHash kRoot = [] {
    constexpr std::string_view kSeed = "strata.kv.block_hash.v1";
    return sha256(std::vector<uint8_t>(kSeed.begin(), kSeed.end()));
  }();
  return kRoot;
}

BlockHash hash_block(const BlockHash& parent, std::span<const int32_t> tokens,
                     std::string_view cache_salt) {
  std::vector<uint8_t> buf;
  buf.reserve(32 + 4 + 4 * tokens.size() + 4 + (cache_salt.empty() ? 0 : 5 + cache_salt.size()));
  buf.insert(buf.end(), parent.bytes.begin(), parent.bytes.end());
  put_u32(&buf, static_cast<uint32_t>(tokens.size()));
  for (int32_t t : tokens) put_u32(&buf, static_cast<uint32_t>(t));
  put_u32(&buf, cache_salt.empty() ? 0u : 1u);
  if (!cache_salt.empty()) {
    buf.push_back(static_cast<uint8_t>(BlockHashExtraTag::kCacheSalt));
    put_u32(&buf, static_cast<uint32_t>(cache_salt.size()));
    buf.insert(buf.end(), cache_salt.begin(), cache_salt.end());
  }
  return sha256(buf);
}

void extend_block_hashes(std::span<const int32_t> tokens, int32_t block_size,
                         std::string_view cache_salt, std::vector<BlockHash>* hashes) {
  const size_t bs = static_cast<size_t>(block_size);
  const size_t num_full = tokens.size() / bs;
  hashes->reserve(num_full);
  for (size_t i = hashes->size(); i < num_full; ++i) {
    const BlockHash& parent = i == 0 ? root_block_hash() : (*hashes)[i - 1];
    hashes->push_back(
        hash_block(parent, tokens.subspan(i * bs, bs), i == 0 ? cache_salt : std::string_view()));
  }
}

std::vector<BlockHash> block_hashes_of(std::span<const int32_t> tokens, int32_t block_size,
                                       std::string_view cache_salt) {
  std::vector<BlockHash> hashes;
  extend_block_hashes(tokens, block_size, cache_salt, &hashes);
  return hashes;
}

}  // namespace strata
