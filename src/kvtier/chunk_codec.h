// chunk_codec: the serialized form of one KvChunk, shared by the disk tier
// (one file per chunk) and the Redis tier (one value per chunk).
//
// Layout (little-endian), version kChunkFormatVersion:
//   offset  size  field
//        0     8  magic "STRATAKV"
//        8     4  u32 format version
//       12     4  u32 header bytes (80)
//       16    32  chunk key
//       48     4  u32 num_tokens
//       52     4  u32 reserved (0)
//       56     8  u64 payload_bytes
//       64     8  u64 XXH3-64 of the payload
//       72     8  u64 XXH3-64 of header bytes [0, 72)
//       80     -  payload (payload_bytes)
//
// Decoding trusts nothing: every field is checked and each defect is a
// one-line Status naming it ("chunk: payload checksum mismatch"). Pure
// functions; thread-safe.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "kvtier/kv_chunk.h"
#include "util/status.h"

namespace strata {

inline constexpr size_t kChunkHeaderBytes = 80;

// The decoded, validated header.
struct ChunkHeader {
  ChunkKey key;
  int32_t num_tokens = 0;
  uint64_t payload_bytes = 0;
  uint64_t payload_checksum = 0;  // XXH3-64
};

// Header + payload in one string (the Redis value; the disk file's bytes).
std::string encode_chunk(const KvChunk& chunk);
// The header alone, so a writer can send header and payload without a copy.
std::array<uint8_t, kChunkHeaderBytes> encode_chunk_header(const KvChunk& chunk);

// Validates the first kChunkHeaderBytes of `bytes`: magic, version, header
// bytes, header checksum, reserved, num_tokens > 0, payload_bytes <=
// max_payload_bytes. Does not look at the payload.
Result<ChunkHeader> decode_chunk_header(std::span<const uint8_t> bytes, size_t max_payload_bytes);

// Payload length == header's payload_bytes and checksum matches.
Status verify_chunk_payload(const ChunkHeader& header, std::span<const uint8_t> payload);

// The whole value: header as above, key == expected_key, payload length ==
// bytes left after the header, payload checksum.
Result<KvChunkHandle> decode_chunk(std::span<const uint8_t> bytes, const ChunkKey& expected_key,
                                   size_t max_payload_bytes);

}  // namespace strata
