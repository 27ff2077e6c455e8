#include "engine/kv_slice_message.h"

#include <cstring>
#include <string>

namespace strata {
namespace {

class Writer {
 public:
  void u8(uint8_t v) { out_.push_back(v); }
  void u32(uint32_t v) { le(v, 4); }
  void u64(uint64_t v) { le(v, 8); }
  void str(const std::string& s) {
    u32(static_cast<uint32_t>(s.size()));
    out_.insert(out_.end(), s.begin(), s.end());
  }
  std::vector<uint8_t> take() { return std::move(out_); }

 private:
  void le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  std::vector<uint8_t> out_;
};

class Reader {
 public:
  explicit Reader(std::span<const uint8_t> bytes) : bytes_(bytes) {}
  bool u8(uint8_t* v) {
    uint64_t x = 0;
    if (!le(&x, 1)) return false;
    *v = static_cast<uint8_t>(x);
    return true;
  }
  bool u32(uint32_t* v) {
    uint64_t x = 0;
    if (!le(&x, 4)) return false;
    *v = static_cast<uint32_t>(x);
    return true;
  }
  bool u64(uint64_t* v) { return le(v, 8); }
  bool str(std::string* s) {
    uint32_t n = 0;
    if (!u32(&n) || n > bytes_.size() - pos_) return false;
    s->assign(reinterpret_cast<const char*>(bytes_.data() + pos_), n);
    pos_ += n;
    return true;
  }
  bool raw(void* dst, size_t n) {
    if (n > bytes_.size() - pos_) return false;
    if (n > 0) std::memcpy(dst, bytes_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  size_t left() const { return bytes_.size() - pos_; }

 private:
  bool le(uint64_t* v, int n) {
    if (static_cast<size_t>(n) > bytes_.size() - pos_) return false;
    uint64_t x = 0;
    for (int i = 0; i < n; ++i) x |= static_cast<uint64_t>(bytes_[pos_ + i]) << (8 * i);
    pos_ += static_cast<size_t>(n);
    *v = x;
    return true;
  }
  std::span<const uint8_t> bytes_;
  size_t pos_ = 0;
};

}  // namespace

std::vector<uint8_t> encode_kv_slice_message(const KvSliceMessage& m) {
  Writer w;
  w.u8(static_cast<uint8_t>(m.op));
  w.u32(static_cast<uint32_t>(m.block_size));
  const KvTierOptions& o = m.options;
  w.u32(static_cast<uint32_t>(o.chunk_tokens));
  w.u64(o.cpu_bytes);
  w.str(o.disk_dir);
  w.u64(o.disk_bytes);
  w.str(o.remote_url);
  w.str(o.remote_password);
  w.u32(static_cast<uint32_t>(o.remote_timeout_ms));
  w.u64(o.max_pending_store_bytes);
  w.u64(m.load_id);
  w.u64(static_cast<uint64_t>(m.first_chunk));
  w.u64(static_cast<uint64_t>(m.first_block));
  w.u32(static_cast<uint32_t>(m.hashes.size()));
  for (const BlockHash& h : m.hashes) {
    for (uint8_t b : h.bytes) w.u8(b);
  }
  w.u32(static_cast<uint32_t>(m.block_ids.size()));
  for (int32_t id : m.block_ids) w.u32(static_cast<uint32_t>(id));
  return w.take();
}

Result<KvSliceMessage> decode_kv_slice_message(std::span<const uint8_t> bytes) {
  Reader r(bytes);
  KvSliceMessage m;
  uint8_t op = 0;
  uint32_t block_size = 0, chunk_tokens = 0, timeout_ms = 0, n_hashes = 0, n_ids = 0;
  uint64_t cpu_bytes = 0, disk_bytes = 0, max_pending = 0, first_chunk = 0, first_block = 0;
  KvTierOptions& o = m.options;
  const bool ok = r.u8(&op) && r.u32(&block_size) && r.u32(&chunk_tokens) && r.u64(&cpu_bytes) &&
                  r.str(&o.disk_dir) && r.u64(&disk_bytes) && r.str(&o.remote_url) &&
                  r.str(&o.remote_password) && r.u32(&timeout_ms) && r.u64(&max_pending) &&
                  r.u64(&m.load_id) && r.u64(&first_chunk) && r.u64(&first_block) &&
                  r.u32(&n_hashes);
  if (!ok || op < static_cast<uint8_t>(KvSliceOp::kOpen) ||
      op > static_cast<uint8_t>(KvSliceOp::kClose)) {
    return invalid_argument("kv slice message: truncated or unknown");
  }
  if (static_cast<size_t>(n_hashes) * 32 > r.left()) {
    return invalid_argument("kv slice message: more hashes than bytes");
  }
  m.hashes.resize(n_hashes);
  for (BlockHash& h : m.hashes) r.raw(h.bytes.data(), h.bytes.size());
  if (!r.u32(&n_ids) || static_cast<size_t>(n_ids) * 4 != r.left()) {
    return invalid_argument("kv slice message: block ids do not match its size");
  }
  m.block_ids.resize(n_ids);
  for (int32_t& id : m.block_ids) {
    uint32_t v = 0;
    r.u32(&v);
    id = static_cast<int32_t>(v);
  }
  m.op = static_cast<KvSliceOp>(op);
  m.block_size = static_cast<int32_t>(block_size);
  o.chunk_tokens = static_cast<int32_t>(chunk_tokens);
  o.cpu_bytes = static_cast<size_t>(cpu_bytes);
  o.disk_bytes = static_cast<size_t>(disk_bytes);
  o.remote_timeout_ms = static_cast<int32_t>(timeout_ms);
  o.max_pending_store_bytes = static_cast<size_t>(max_pending);
  m.first_chunk = static_cast<int64_t>(first_chunk);
  m.first_block = static_cast<int64_t>(first_block);
  return m;
}

}  // namespace strata
