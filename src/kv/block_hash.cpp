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

}  // namespace strata
