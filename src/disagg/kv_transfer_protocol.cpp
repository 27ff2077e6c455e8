#include "disagg/kv_transfer_protocol.h"

#include <cstring>

namespace strata::disagg {
namespace {

constexpr char kAskMagic[8] = {'S', 'T', 'R', 'K', 'V', 'A', 'S', 'K'};
constexpr char kReplyMagic[8] = {'S', 'T', 'R', 'K', 'V', 'R', 'P', 'L'};

void put_u32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint32_t get_u32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(p[i]) << (8 * i);
  return v;
}
void put_f64(uint8_t* p, double d) {
  uint64_t v = 0;
  std::memcpy(&v, &d, sizeof(v));
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
double get_f64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  double d = 0.0;
  std::memcpy(&d, &v, sizeof(d));
  return d;
}

}  // namespace

size_t KvAskHeader::body_bytes() const {
  return salt_bytes + static_cast<size_t>(end_chunk) * static_cast<size_t>(chunk_tokens) * 4;
}

std::vector<uint8_t> encode_ask(const KvAsk& ask) {
  std::vector<uint8_t> out(kAskHeaderBytes + ask.cache_salt.size() + ask.tokens.size() * 4, 0);
  uint8_t* p = out.data();
  std::memcpy(p, kAskMagic, 8);
  put_u32(p + 8, kKvTransferVersion);
  put_u32(p + 12, static_cast<uint32_t>(ask.chunk_tokens));
  put_u32(p + 16, static_cast<uint32_t>(ask.first_chunk));
  put_u32(p + 20, static_cast<uint32_t>(ask.end_chunk));
  put_u32(p + 24, static_cast<uint32_t>(ask.cache_salt.size()));
  std::memcpy(p + 32, ask.fingerprint.digest.data(), 32);
  std::memcpy(p + kAskHeaderBytes, ask.cache_salt.data(), ask.cache_salt.size());
  uint8_t* t = p + kAskHeaderBytes + ask.cache_salt.size();
  for (size_t i = 0; i < ask.tokens.size(); ++i) {
    put_u32(t + 4 * i, static_cast<uint32_t>(ask.tokens[i]));
  }
  return out;
}

Result<KvAskHeader> decode_ask_header(std::span<const uint8_t> bytes) {
  if (bytes.size() < kAskHeaderBytes) return invalid_argument("kv ask: truncated header");
  const uint8_t* p = bytes.data();
  if (std::memcmp(p, kAskMagic, 8) != 0) return invalid_argument("kv ask: bad magic");
  if (get_u32(p + 8) != kKvTransferVersion) {
    return invalid_argument("kv ask: unsupported version " + std::to_string(get_u32(p + 8)));
  }
  KvAskHeader h;
  const uint32_t chunk_tokens = get_u32(p + 12);
  const uint32_t first_chunk = get_u32(p + 16);
  const uint32_t end_chunk = get_u32(p + 20);
  h.salt_bytes = get_u32(p + 24);
  if (get_u32(p + 28) != 0) return invalid_argument("kv ask: reserved field is not 0");
  if (chunk_tokens == 0 || chunk_tokens > kMaxAskTokens) {
    return invalid_argument("kv ask: chunk_tokens out of range");
  }
  if (end_chunk == 0 || first_chunk >= end_chunk ||
      static_cast<uint64_t>(end_chunk) * chunk_tokens > kMaxAskTokens) {
    return invalid_argument("kv ask: chunk range out of bounds");
  }
  if (h.salt_bytes > kMaxSaltBytes) return invalid_argument("kv ask: cache salt too long");
  h.chunk_tokens = static_cast<int32_t>(chunk_tokens);
  h.first_chunk = static_cast<int32_t>(first_chunk);
  h.end_chunk = static_cast<int32_t>(end_chunk);
  std::memcpy(h.fingerprint.digest.data(), p + 32, 32);
  return h;
}

Result<KvAsk> decode_ask_body(const KvAskHeader& h, std::span<const uint8_t> body) {
  if (body.size() != h.body_bytes()) return invalid_argument("kv ask: body size mismatch");
  KvAsk ask;
  ask.fingerprint = h.fingerprint;
  ask.chunk_tokens = h.chunk_tokens;
  ask.first_chunk = h.first_chunk;
  ask.end_chunk = h.end_chunk;
  ask.cache_salt.assign(reinterpret_cast<const char*>(body.data()), h.salt_bytes);
  const size_t n = (body.size() - h.salt_bytes) / 4;
  ask.tokens.resize(n);
  const uint8_t* t = body.data() + h.salt_bytes;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t v = get_u32(t + 4 * i);
    if (v > 0x7fffffffu) return invalid_argument("kv ask: negative token id");
    ask.tokens[i] = static_cast<int32_t>(v);
  }
  return ask;
}

std::array<uint8_t, kReplyHeaderBytes> encode_reply_header(const KvReplyHeader& r) {
  std::array<uint8_t, kReplyHeaderBytes> out{};
  std::memcpy(out.data(), kReplyMagic, 8);
  put_u32(out.data() + 8, static_cast<uint32_t>(r.status));
  put_f64(out.data() + 16, r.queue_delay_s);
  put_f64(out.data() + 24, r.prefill_s_per_token);
  return out;
}

Result<KvReplyHeader> decode_reply_header(std::span<const uint8_t> bytes) {
  if (bytes.size() < kReplyHeaderBytes) return invalid_argument("kv reply: truncated header");
  const uint8_t* p = bytes.data();
  if (std::memcmp(p, kReplyMagic, 8) != 0) return invalid_argument("kv reply: bad magic");
  const uint32_t status = get_u32(p + 8);
  if (status > static_cast<uint32_t>(KvReplyStatus::kBadAsk)) {
    return invalid_argument("kv reply: unknown status " + std::to_string(status));
  }
  KvReplyHeader r;
  r.status = static_cast<KvReplyStatus>(status);
  r.queue_delay_s = get_f64(p + 16);
  r.prefill_s_per_token = get_f64(p + 24);
  // Rates feed deadlines: a NaN or negative figure must not disable them.
  if (!(r.queue_delay_s >= 0.0 && r.queue_delay_s < 1e6)) r.queue_delay_s = 0.0;
  if (!(r.prefill_s_per_token >= 0.0 && r.prefill_s_per_token < 10.0)) r.prefill_s_per_token = 0.0;
  return r;
}

std::array<uint8_t, kFrameIndexBytes> encode_frame_index(uint32_t chunk_index) {
  std::array<uint8_t, kFrameIndexBytes> out{};
  put_u32(out.data(), chunk_index);
  return out;
}

uint32_t decode_frame_index(std::span<const uint8_t, kFrameIndexBytes> bytes) {
  return get_u32(bytes.data());
}

}  // namespace strata::disagg
