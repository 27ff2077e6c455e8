#include "kvtier/chunk_key.h"

#include <openssl/evp.h>

#include <algorithm>
#include <bit>
#include <vector>

#include "gguf/gguf.h"
#include "model/model_config.h"
#include "util/hex.h"

namespace strata {
namespace {

constexpr uint64_t kSampleBytes = 4096;

// Incremental SHA-256 (OpenSSL EVP) with the little-endian field encoders
// the key contract uses.
class Sha256 {
 public:
  Sha256() : ctx_(EVP_MD_CTX_new()) { EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr); }
  ~Sha256() { EVP_MD_CTX_free(ctx_); }
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void bytes(const void* data, size_t n) {
    if (n > 0) EVP_DigestUpdate(ctx_, data, n);
  }
  void u8(uint8_t v) { bytes(&v, 1); }
  void u32(uint32_t v) { le(v, 4); }
  void u64(uint64_t v) { le(v, 8); }
  void str(std::string_view s) {
    u32(static_cast<uint32_t>(s.size()));
    bytes(s.data(), s.size());
  }
  std::array<uint8_t, 32> finish() {
    std::array<uint8_t, 32> out{};
    unsigned int n = 0;
    EVP_DigestFinal_ex(ctx_, out.data(), &n);
    return out;
  }

 private:
  void le(uint64_t v, int n) {
    uint8_t b[8];
    for (int i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(v >> (8 * i));
    bytes(b, static_cast<size_t>(n));
  }
  EVP_MD_CTX* ctx_;
};

void hash_value(Sha256& h, const GgufValue& v) {
  switch (v.type) {
    case GgufValueType::kUint8:
    case GgufValueType::kUint16:
    case GgufValueType::kUint32:
    case GgufValueType::kUint64:
      h.u64(v.u64);
      return;
    case GgufValueType::kInt8:
    case GgufValueType::kInt16:
    case GgufValueType::kInt32:
    case GgufValueType::kInt64:
      h.u64(static_cast<uint64_t>(v.i64));
      return;
    case GgufValueType::kFloat32:
    case GgufValueType::kFloat64:
      h.u64(std::bit_cast<uint64_t>(v.f64));
      return;
    case GgufValueType::kBool:
      h.u8(v.b ? 1 : 0);
      return;
    case GgufValueType::kString:
      h.str(v.str);
      return;
    case GgufValueType::kArray:
      h.u32(static_cast<uint32_t>(v.elem_type));
      h.u64(v.count);
      if (v.elem_type == GgufValueType::kString) {
        for (std::string_view s : v.strings) h.str(s);
      } else if (v.elems != nullptr) {
        h.bytes(v.elems, static_cast<size_t>(v.count) * gguf_scalar_bytes(v.elem_type));
      }
      return;
  }
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string ModelFingerprint::hex() const {
  return to_hex(digest);
}

std::array<uint8_t, 32> digest_gguf_tables(const GgufFile& gguf) {
  Sha256 h;
  for (const auto& [key, value] : gguf.metadata()) {
    h.str(key);
    h.u32(static_cast<uint32_t>(value.type));
    hash_value(h, value);
  }
  for (const GgufTensor& t : gguf.tensors()) {
    h.str(t.name);
    h.u32(static_cast<uint32_t>(t.type));
    h.u32(t.n_dims);
    for (int64_t n : t.ne) h.u64(static_cast<uint64_t>(n));
    h.u64(t.offset);
    h.u64(t.nbytes);
    if (t.data == nullptr || t.nbytes == 0) continue;
    // Head, middle and tail samples (overlapping on small tensors is fine:
    // the encoding stays a function of the bytes).
    const uint64_t n = std::min(kSampleBytes, t.nbytes);
    h.bytes(t.data, n);
    h.bytes(t.data + (t.nbytes - n) / 2, n);
    h.bytes(t.data + (t.nbytes - n), n);
  }
  return h.finish();
}

ModelFingerprint fingerprint_from_inputs(const ModelFingerprintInputs& in) {
  Sha256 h;
  constexpr std::string_view kDomain = "strata.kv.model";
  h.bytes(kDomain.data(), kDomain.size());
  h.u32(kChunkFormatVersion);
  h.str(in.architecture);
  h.bytes(in.weights_digest.data(), in.weights_digest.size());
  h.str(in.kv_dtype);
  h.u32(static_cast<uint32_t>(in.block_size));
  h.u32(static_cast<uint32_t>(in.num_layers));
  h.u32(static_cast<uint32_t>(in.n_kv_heads));
  h.u32(static_cast<uint32_t>(in.head_dim));
  h.u32(static_cast<uint32_t>(in.chunk_tokens));
  return ModelFingerprint{h.finish()};
}

ModelFingerprint compute_model_fingerprint(const GgufFile& gguf, const ModelConfig& config,
                                           int32_t block_size, int32_t chunk_tokens) {
  ModelFingerprintInputs in;
  in.architecture = std::string(architecture_name(config.arch));
  in.weights_digest = digest_gguf_tables(gguf);
  in.kv_dtype = "f16";
  in.block_size = block_size;
  in.num_layers = config.num_layers;
  in.n_kv_heads = config.num_kv_heads;
  in.head_dim = config.head_dim;
  in.chunk_tokens = chunk_tokens;
  return fingerprint_from_inputs(in);
}

std::string ChunkKey::hex() const {
  return to_hex(bytes);
}

std::optional<ChunkKey> ChunkKey::from_hex(std::string_view hex) {
  if (hex.size() != 64) return std::nullopt;
  ChunkKey key;
  for (size_t i = 0; i < 32; ++i) {
    const int hi = hex_digit(hex[2 * i]);
    const int lo = hex_digit(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    key.bytes[i] = static_cast<uint8_t>(hi * 16 + lo);
  }
  return key;
}

ChunkKey make_chunk_key(const ModelFingerprint& fp, const BlockHash& last_block_hash,
                        const ParallelLayout& layout) {
  Sha256 h;
  constexpr std::string_view kDomain = "strata.kv.chunk";
  h.bytes(kDomain.data(), kDomain.size());
  h.u32(kChunkFormatVersion);
  h.bytes(fp.digest.data(), fp.digest.size());
  h.bytes(last_block_hash.bytes.data(), last_block_hash.bytes.size());
  if (layout.is_parallel()) {
    h.u32(static_cast<uint32_t>(layout.tensor_parallel_size));
    h.u32(static_cast<uint32_t>(layout.pipeline_parallel_size));
    h.u32(static_cast<uint32_t>(layout.rank));
  }
  return ChunkKey{h.finish()};
}

}  // namespace strata
