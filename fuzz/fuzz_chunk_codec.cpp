// libFuzzer target: the chunk codec (src/kvtier/chunk_codec) on arbitrary
// bytes, as the disk tier reads them from a file (header, then payload) and
// the Redis tier from a value (the whole value at once). An input is the raw
// bytes of one chunk file, so a chunk file copied from a cache directory is a
// seed as it is (fuzz/corpus/chunk_codec/).
//
// Each input is decoded three ways: as given; with both checksums resealed
// (so mutations reach the checks behind them: reserved, num_tokens, the
// payload length, the key); and resealed with payload_bytes set to the real
// payload length (so most mutations of the other fields decode and exercise
// the success path). Besides crashes and sanitizer reports, each is checked
// against an oracle:
//   - the two decode paths agree: decode_chunk accepts exactly when
//     decode_chunk_header + verify_chunk_payload do, with the same fields;
//   - whatever decodes re-encodes to the same bytes (one encoding per chunk),
//     and decoding that again gives an equal chunk;
//   - max_payload_bytes is the exact bound, a different expected key is
//     rejected, and every rejection is one non-empty line.
// Finally the input read as a chunk (key, num_tokens, payload) is encoded and
// must decode back to itself (or be rejected, for num_tokens <= 0).
#include <xxhash.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "kvtier/chunk_codec.h"

namespace {

using strata::ChunkHeader;
using strata::ChunkKey;
using strata::kChunkHeaderBytes;
using strata::KvChunk;
using strata::KvChunkHandle;
using strata::Result;
using strata::Status;

constexpr size_t kNoLimit = std::numeric_limits<size_t>::max();

void check(bool ok) {
  if (!ok) __builtin_trap();
}

// A rejection must say why, on one line.
void check_message(const Status& s) {
  check(!s.is_ok());
  check(!s.message().empty());
  check(s.message().find('\n') == std::string::npos);
}

void put_le(uint8_t* p, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

ChunkKey key_at(std::span<const uint8_t> bytes, size_t offset) {
  ChunkKey key;
  if (bytes.size() >= offset + 32) std::memcpy(key.bytes.data(), bytes.data() + offset, 32);
  return key;
}

// Decodes `bytes` (exactly sized, so a read past the end is an ASan report)
// by both paths and checks the oracle above.
void check_decode(const std::vector<uint8_t>& bytes) {
  const std::span<const uint8_t> in(bytes);
  const ChunkKey key = key_at(in, 16);  // the header's own key, when there is one

  Result<ChunkHeader> header = strata::decode_chunk_header(in, kNoLimit);
  Status split = header.is_ok() ? Status::ok() : header.status();
  if (header.is_ok()) {
    check(header->num_tokens > 0);
    check(header->key == key);
    split = strata::verify_chunk_payload(*header, in.subspan(kChunkHeaderBytes));
  }
  Result<KvChunkHandle> whole = strata::decode_chunk(in, key, kNoLimit);
  check(whole.is_ok() == split.is_ok());
  if (!whole.is_ok()) {
    check_message(whole.status());
    if (!header.is_ok()) check_message(header.status());
    return;
  }
  const KvChunk& chunk = **whole;
  check(chunk.key == header->key);
  check(chunk.num_tokens == header->num_tokens);
  check(chunk.payload.size() == header->payload_bytes);
  check(std::equal(chunk.payload.begin(), chunk.payload.end(), bytes.begin() + kChunkHeaderBytes));

  // One encoding per chunk: re-encoding gives the input back, byte for byte.
  const std::string encoded = strata::encode_chunk(chunk);
  check(encoded.size() == bytes.size());
  check(std::memcmp(encoded.data(), bytes.data(), bytes.size()) == 0);
  const std::array<uint8_t, kChunkHeaderBytes> h = strata::encode_chunk_header(chunk);
  check(std::memcmp(h.data(), bytes.data(), kChunkHeaderBytes) == 0);
  const std::vector<uint8_t> again_bytes(encoded.begin(), encoded.end());
  Result<KvChunkHandle> again = strata::decode_chunk(again_bytes, key, kNoLimit);
  check(again.is_ok());
  check((*again)->key == chunk.key && (*again)->num_tokens == chunk.num_tokens &&
        (*again)->payload == chunk.payload);

  // max_payload_bytes is the exact bound.
  const size_t n = chunk.payload.size();
  check(strata::decode_chunk(in, key, n).is_ok());
  if (n > 0) {
    Result<KvChunkHandle> over = strata::decode_chunk(in, key, n - 1);
    check(!over.is_ok());
    check_message(over.status());
    Result<ChunkHeader> over_header = strata::decode_chunk_header(in, n - 1);
    check(!over_header.is_ok());
    check_message(over_header.status());
  }
  // Another expected key is refused.
  ChunkKey other = key;
  other.bytes[bytes[0] % 32] ^= static_cast<uint8_t>(1u << (bytes.size() % 8));
  Result<KvChunkHandle> wrong = strata::decode_chunk(in, other, kNoLimit);
  check(!wrong.is_ok());
  check_message(wrong.status());
}

// Rewrites the checksums (and, if asked, payload_bytes) to match the bytes.
void reseal(std::vector<uint8_t>& b, bool fix_payload_bytes) {
  if (b.size() < kChunkHeaderBytes) return;
  const size_t payload = b.size() - kChunkHeaderBytes;
  if (fix_payload_bytes) put_le(b.data() + 56, payload, 8);
  put_le(b.data() + 64, XXH3_64bits(b.data() + kChunkHeaderBytes, payload), 8);
  put_le(b.data() + 72, XXH3_64bits(b.data(), 72), 8);
}

// The input as a chunk to store: key, num_tokens (u32 LE), payload.
void check_encode(const uint8_t* data, size_t size) {
  if (size < 36) return;
  KvChunk chunk;
  std::memcpy(chunk.key.bytes.data(), data, 32);
  uint32_t tokens = 0;
  for (int i = 0; i < 4; ++i) tokens |= uint32_t{data[32 + i]} << (8 * i);
  chunk.num_tokens = static_cast<int32_t>(tokens);
  chunk.payload.assign(data + 36, data + size);
  const std::string s = strata::encode_chunk(chunk);
  const std::vector<uint8_t> encoded(s.begin(), s.end());
  check(encoded.size() == kChunkHeaderBytes + chunk.payload.size());
  Result<KvChunkHandle> back = strata::decode_chunk(encoded, chunk.key, chunk.payload.size());
  if (chunk.num_tokens <= 0) {  // not a chunk the engine makes: refused, not mangled
    check(!back.is_ok());
    check_message(back.status());
    return;
  }
  check(back.is_ok());
  check((*back)->key == chunk.key && (*back)->num_tokens == chunk.num_tokens &&
        (*back)->payload == chunk.payload);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> bytes(data, data + size);
  check_decode(bytes);
  if (size >= kChunkHeaderBytes) {
    reseal(bytes, /*fix_payload_bytes=*/false);
    check_decode(bytes);
    reseal(bytes, /*fix_payload_bytes=*/true);
    check_decode(bytes);
  }
  check_encode(data, size);
  return 0;
}
