// kv_transfer_protocol: the bytes of the KV transfer channel, a direct TCP
// connection from a decode worker (the client) to a prefill worker.
//
// Everything is named by content: the decode worker sends the tokens (and
// cache salt) it wants KV for, never block ids; the prefill worker answers
// with chunks keyed by chunk key (kvtier/chunk_key.h) in the disk/Redis
// chunk encoding (kvtier/chunk_codec.h), so the receiver checks key,
// token count and checksums exactly as it checks a tier's chunk.
//
//   decode -> prefill   ask: header (kAskHeaderBytes) | cache salt | tokens
//     offset size field (little-endian)
//          0    8 magic "STRKVASK"
//          8    4 u32 kKvTransferVersion
//         12    4 u32 chunk_tokens
//         16    4 u32 first_chunk   chunks [first_chunk, end_chunk) are wanted
//         20    4 u32 end_chunk     tokens = end_chunk * chunk_tokens
//         24    4 u32 salt_bytes
//         28    4 u32 reserved (0)
//         32   32 model fingerprint
//         64    - salt (salt_bytes), then tokens (i32 each)
//   prefill -> decode   reply header (kReplyHeaderBytes), then frames
//          0    8 magic "STRKVRPL"
//          8    4 u32 status (KvReplyStatus)
//         12    4 u32 reserved (0)
//         16    8 f64 the prefill worker's queueing delay now (seconds)
//         24    8 f64 its measured prefill seconds per token (0 = unknown)
//     frame: u32 chunk index | encoded chunk (80-byte header | payload);
//     chunk index kEndOfChunks ends the reply (no chunk follows).
// Frames come in chunk order, each as soon as its chunk is computed. The
// prefill worker may stop early (it could not compute a chunk): whatever
// is missing the decode worker computes itself.
//
// Pure functions; thread-safe.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kvtier/chunk_key.h"
#include "util/status.h"

namespace strata::disagg {

inline constexpr uint32_t kKvTransferVersion = 1;
inline constexpr size_t kAskHeaderBytes = 64;
inline constexpr size_t kReplyHeaderBytes = 32;
inline constexpr size_t kFrameIndexBytes = 4;
inline constexpr uint32_t kEndOfChunks = 0xffffffffu;
// Bounds a malformed ask cannot exceed (no allocation beyond them).
inline constexpr uint32_t kMaxAskTokens = uint32_t{1} << 22;
inline constexpr uint32_t kMaxSaltBytes = 4096;

enum class KvReplyStatus : uint32_t {
  kOk = 0,
  kWrongModel = 1,  // fingerprint or chunk size differs: nothing will come
  kBadAsk = 2,      // refused (malformed, too long for the model)
};

struct KvAsk {
  ModelFingerprint fingerprint;
  int32_t chunk_tokens = 0;
  int32_t first_chunk = 0;
  int32_t end_chunk = 0;
  std::string cache_salt;
  std::vector<int32_t> tokens;  // end_chunk * chunk_tokens
};

// The fixed part of an ask, validated (magic, version, bounds).
struct KvAskHeader {
  ModelFingerprint fingerprint;
  int32_t chunk_tokens = 0;
  int32_t first_chunk = 0;
  int32_t end_chunk = 0;
  uint32_t salt_bytes = 0;
  // Bytes that follow the header: salt then tokens.
  size_t body_bytes() const;
};

struct KvReplyHeader {
  KvReplyStatus status = KvReplyStatus::kOk;
  double queue_delay_s = 0.0;
  double prefill_s_per_token = 0.0;
};

std::vector<uint8_t> encode_ask(const KvAsk& ask);
Result<KvAskHeader> decode_ask_header(std::span<const uint8_t> bytes);
// The whole ask from its header and body.
Result<KvAsk> decode_ask_body(const KvAskHeader& header, std::span<const uint8_t> body);

std::array<uint8_t, kReplyHeaderBytes> encode_reply_header(const KvReplyHeader& reply);
Result<KvReplyHeader> decode_reply_header(std::span<const uint8_t> bytes);

std::array<uint8_t, kFrameIndexBytes> encode_frame_index(uint32_t chunk_index);
uint32_t decode_frame_index(std::span<const uint8_t, kFrameIndexBytes> bytes);

}  // namespace strata::disagg
