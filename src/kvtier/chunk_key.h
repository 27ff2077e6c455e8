// ChunkKey and ModelFingerprint: the content key of one KV chunk (a run of
// whole blocks, --kv-chunk-tokens tokens) in every tier (RAM, disk, Redis).
//
// A chunk's key binds (a) everything that determines its tokens - the
// prefix cache's chained hash of the chunk's LAST block (src/kv/block_hash.h:
// fixed seed, the cache salt folded into block 0, so the chain covers every
// earlier token and the salt) - and (b) everything that determines the bytes
// of its K/V - the model fingerprint. A chunk can therefore never be loaded
// into a different model, quantization, KV dtype or block layout.
//
// The encodings below are a contract (kChunkFormatVersion); a golden test pins
// them. Changing any byte of them requires bumping kChunkFormatVersion, which
// orphans every stored chunk (they then simply miss).
//
//   fingerprint = SHA-256( "strata.kv.model"        15 bytes
//                        | u32 kChunkFormatVersion
//                        | str architecture         (u32 LE length | bytes)
//                        | weights_digest           32 bytes, see below
//                        | str kv_dtype             "f16"
//                        | u32 block_size | u32 num_layers | u32 n_kv_heads
//                        | u32 head_dim   | u32 chunk_tokens )
//   weights_digest = SHA-256 over the GGUF metadata in file order (per entry:
//       str key | u32 value type | value: scalars as u64/i64/f64-bits/u8 LE,
//       strings as str, arrays as u32 elem type | u64 count | packed elements
//       or str per string element) then the tensor table in file order (per
//       tensor: str name | u32 type | u32 n_dims | 4 x i64 ne | u64 offset |
//       u64 nbytes | up to 3 x 4 KiB samples of the tensor's data: its head,
//       middle and tail). The samples separate two files that differ only in
//       their weight values (same shapes, same metadata) without reading GBs.
//   key = SHA-256( "strata.kv.chunk" 15 bytes | u32 kChunkFormatVersion
//                | fingerprint 32 bytes | last_block_hash 32 bytes
//                [| u32 T | u32 P | u32 rank] )
//   The bracketed layout is there only under model parallelism (T x P > 1):
//   each rank stores its own slice of a chunk (its KV heads under tensor
//   parallelism, its layers under pipeline parallelism), so the slice of
//   rank r under (T, P) has a key of its own, and a chunk of one layout (or
//   of another rank) never loads into another; one process's keys are those
//   of the format without the layout, unchanged.
//
// Plain values; thread-safe to copy and compare.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "kv/block_hash.h"
#include "parallel/parallel_layout.h"

namespace strata {

class GgufFile;
struct ModelConfig;

// 2: KV blocks head-major ([n_kv_heads][block_size][head_dim]; 1 had
// [block_size][n_kv_heads][head_dim]): a version 1 chunk's bytes would load
// as other heads' values, so its keys no longer match and it simply misses.
inline constexpr uint32_t kChunkFormatVersion = 2;

struct ModelFingerprint {
  std::array<uint8_t, 32> digest{};  // SHA-256

  bool operator==(const ModelFingerprint&) const = default;
  std::string hex() const;  // 64 lowercase hex chars
};

// The fingerprint's inputs as plain values (what compute_model_fingerprint
// extracts from a model), so tests can vary one input at a time.
struct ModelFingerprintInputs {
  std::string architecture;                  // "llama", "qwen2", ...
  std::array<uint8_t, 32> weights_digest{};  // digest_gguf_tables()
  std::string kv_dtype = "f16";
  int32_t block_size = 0;
  int32_t num_layers = 0;
  int32_t n_kv_heads = 0;
  int32_t head_dim = 0;
  int32_t chunk_tokens = 0;
};

// SHA-256 over the GGUF metadata and tensor table (+ data samples), as above.
std::array<uint8_t, 32> digest_gguf_tables(const GgufFile& gguf);

ModelFingerprint fingerprint_from_inputs(const ModelFingerprintInputs& inputs);

// The fingerprint of `gguf` served with `config`, KV dtype f16, `block_size`
// tokens per block and `chunk_tokens` tokens per chunk.
ModelFingerprint compute_model_fingerprint(const GgufFile& gguf, const ModelConfig& config,
                                           int32_t block_size, int32_t chunk_tokens);

struct ChunkKey {
  std::array<uint8_t, 32> bytes{};

  bool operator==(const ChunkKey&) const = default;
  // 64 lowercase hex chars: the disk file name and the Redis key suffix.
  std::string hex() const;
  // Parses exactly 64 hex chars (either case); nullopt otherwise.
  static std::optional<ChunkKey> from_hex(std::string_view hex);
};

struct ChunkKeyHash {
  size_t operator()(const ChunkKey& key) const {
    uint64_t v;  // a SHA-256 digest is uniform: its first 8 bytes are a fine bucket key
    std::memcpy(&v, key.bytes.data(), sizeof(v));
    return static_cast<size_t>(v);
  }
};

// Key of the chunk whose LAST block has chained prefix-cache hash
// `last_block_hash`: of the whole chunk (one process), or of `layout.rank`'s
// slice of it when the layout is parallel.
ChunkKey make_chunk_key(const ModelFingerprint& fp, const BlockHash& last_block_hash,
                        const ParallelLayout& layout = {});

}  // namespace strata
