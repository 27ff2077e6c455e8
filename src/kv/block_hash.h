// BlockHash: the content key of one full KV block, a SHA-256 digest chained
// over the block's parent key, its token ids and typed extra keys.
//
// The key names a block's contents independently of the process that
// computed it, so it is the key of the in-engine prefix cache and, later, of
// every KV tier (host RAM, disk, remote). Its byte encoding is therefore a
// contract (version 1) and must not change silently:
//
//   key(block i) = SHA-256( parent            32 bytes: key(block i-1), or
//                                             kRootSeed for block 0
//                         | num_tokens        u32 little-endian
//                         | tokens            num_tokens x i32 little-endian
//                         | num_extra_keys    u32 little-endian
//                         | extra key*        u8 tag | u32 LE byte length | bytes )
//
//   kRootSeed = SHA-256("strata.kv.block_hash.v1") (a fixed seed: the same in
//   every process and across restarts; never randomized).
//   Extra key tags: 1 = cache_salt (UTF-8 bytes). The salt enters block 0
//   only, and only when non-empty; the chain carries it into every later
//   block, so two identical prompts with different salts share no block.
//
// A plain value; thread-safe to copy and compare.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace strata {

struct BlockHash {
  std::array<uint8_t, 32> bytes{};

  bool operator==(const BlockHash&) const = default;
  // Lowercase hex of all 32 bytes, for logs and tier file names.
  std::string to_hex() const;
};

struct BlockHashHasher {
  size_t operator()(const BlockHash& h) const {
    uint64_t v;  // the digest is uniform, so its first 8 bytes are a fine bucket key
    std::memcpy(&v, h.bytes.data(), sizeof(v));
    return static_cast<size_t>(v);
  }
};

enum class BlockHashExtraTag : uint8_t { kCacheSalt = 1 };

// The parent key of block 0.
const BlockHash& root_block_hash();

// key(block) for a block holding `tokens` whose predecessor's key is
// `parent` (root_block_hash() for block 0). `cache_salt` is folded in as an
// extra key when non-empty; callers pass it for block 0 only.
BlockHash hash_block(const BlockHash& parent, std::span<const int32_t> tokens,
                     std::string_view cache_salt = {});

// Extends `hashes`, the chained keys of the first hashes->size() full blocks
// of `tokens`, to every full block of `tokens` (block i holds tokens
// [i * block_size, (i + 1) * block_size)). `cache_salt` enters block 0 only.
// The one place a sequence's chain is computed: the scheduler keeps it per
// request, the KV connectors derive chunk keys from it.
void extend_block_hashes(std::span<const int32_t> tokens, int32_t block_size,
                         std::string_view cache_salt, std::vector<BlockHash>* hashes);
// The chained keys of every full block of `tokens`.
std::vector<BlockHash> block_hashes_of(std::span<const int32_t> tokens, int32_t block_size,
                                       std::string_view cache_salt = {});

}  // namespace strata
