#include "kvtier/chunk_codec.h"

#include <xxhash.h>

#include <cstring>

namespace strata {
namespace {

constexpr char kMagic[8] = {'S', 'T', 'R', 'A', 'T', 'A', 'K', 'V'};
constexpr size_t kHeaderChecksumOffset = 72;

void put_le(uint8_t* p, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint64_t get_le(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= uint64_t{p[i]} << (8 * i);
  return v;
}

}  // namespace

std::array<uint8_t, kChunkHeaderBytes> encode_chunk_header(const KvChunk& chunk) {
  std::array<uint8_t, kChunkHeaderBytes> h{};
  uint8_t* p = h.data();
  std::memcpy(p, kMagic, 8);
  put_le(p + 8, kChunkFormatVersion, 4);
  put_le(p + 12, kChunkHeaderBytes, 4);
  std::memcpy(p + 16, chunk.key.bytes.data(), 32);
  put_le(p + 48, static_cast<uint32_t>(chunk.num_tokens), 4);
  put_le(p + 52, 0, 4);
  put_le(p + 56, chunk.payload.size(), 8);
  put_le(p + 64, XXH3_64bits(chunk.payload.data(), chunk.payload.size()), 8);
  put_le(p + 72, XXH3_64bits(p, kHeaderChecksumOffset), 8);
  return h;
}

std::string encode_chunk(const KvChunk& chunk) {
  const std::array<uint8_t, kChunkHeaderBytes> h = encode_chunk_header(chunk);
  std::string out;
  out.reserve(kChunkHeaderBytes + chunk.payload.size());
  out.append(reinterpret_cast<const char*>(h.data()), h.size());
  out.append(reinterpret_cast<const char*>(chunk.payload.data()), chunk.payload.size());
  return out;
}

Result<ChunkHeader> decode_chunk_header(std::span<const uint8_t> bytes, size_t max_payload_bytes) {
  if (bytes.size() < kChunkHeaderBytes) {
    return invalid_argument("chunk: " + std::to_string(bytes.size()) +
                            " bytes, shorter than the 80-byte header");
  }
  const uint8_t* p = bytes.data();
  if (std::memcmp(p, kMagic, 8) != 0) return invalid_argument("chunk: bad magic");
  const uint64_t version = get_le(p + 8, 4);
  if (version != kChunkFormatVersion) {
    return invalid_argument("chunk: format version " + std::to_string(version) + ", expected " +
                            std::to_string(kChunkFormatVersion));
  }
  const uint64_t header_bytes = get_le(p + 12, 4);
  if (header_bytes != kChunkHeaderBytes) {
    return invalid_argument("chunk: header bytes " + std::to_string(header_bytes) +
                            ", expected 80");
  }
  if (get_le(p + 72, 8) != XXH3_64bits(p, kHeaderChecksumOffset)) {
    return invalid_argument("chunk: header checksum mismatch");
  }
  if (get_le(p + 52, 4) != 0) return invalid_argument("chunk: reserved field is not 0");
  ChunkHeader h;
  std::memcpy(h.key.bytes.data(), p + 16, 32);
  const uint64_t num_tokens = get_le(p + 48, 4);
  if (num_tokens == 0 || num_tokens > uint64_t{INT32_MAX}) {
    return invalid_argument("chunk: num_tokens " + std::to_string(num_tokens) + " out of range");
  }
  h.num_tokens = static_cast<int32_t>(num_tokens);
  h.payload_bytes = get_le(p + 56, 8);
  if (h.payload_bytes > max_payload_bytes) {
    return invalid_argument("chunk: payload_bytes " + std::to_string(h.payload_bytes) +
                            " exceeds the limit " + std::to_string(max_payload_bytes));
  }
  h.payload_checksum = get_le(p + 64, 8);
  return h;
}

Status verify_chunk_payload(const ChunkHeader& header, std::span<const uint8_t> payload) {
  if (payload.size() != header.payload_bytes) {
    return invalid_argument("chunk: payload is " + std::to_string(payload.size()) +
                            " bytes, header says " + std::to_string(header.payload_bytes));
  }
  if (XXH3_64bits(payload.data(), payload.size()) != header.payload_checksum) {
    return invalid_argument("chunk: payload checksum mismatch");
  }
  return Status::ok();
}

Result<KvChunkHandle> decode_chunk(std::span<const uint8_t> bytes, const ChunkKey& expected_key,
                                   size_t max_payload_bytes) {
  STRATA_ASSIGN_OR_RETURN(ChunkHeader header, decode_chunk_header(bytes, max_payload_bytes));
  if (header.key != expected_key) {
    return invalid_argument("chunk: key " + header.key.hex().substr(0, 16) +
                            "... does not match the requested key " +
                            expected_key.hex().substr(0, 16) + "...");
  }
  const std::span<const uint8_t> payload = bytes.subspan(kChunkHeaderBytes);
  STRATA_RETURN_IF_ERROR(verify_chunk_payload(header, payload));
  auto chunk = std::make_shared<KvChunk>();
  chunk->key = header.key;
  chunk->num_tokens = header.num_tokens;
  chunk->payload.assign(payload.begin(), payload.end());
  return KvChunkHandle(std::move(chunk));
}

}  // namespace strata
