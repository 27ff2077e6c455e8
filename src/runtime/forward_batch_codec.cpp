#include "runtime/forward_batch_codec.h"

#include <cstring>

namespace strata {
namespace {

void put_array(std::vector<uint8_t>* out, const std::vector<int32_t>& v) {
  const uint32_t n = static_cast<uint32_t>(v.size());
  const size_t at = out->size();
  out->resize(at + sizeof(n) + v.size() * sizeof(int32_t));
  std::memcpy(out->data() + at, &n, sizeof(n));
  if (!v.empty()) std::memcpy(out->data() + at + sizeof(n), v.data(), v.size() * sizeof(int32_t));
}

class Reader {
 public:
  explicit Reader(std::span<const uint8_t> bytes) : bytes_(bytes) {}
  bool read_u32(uint32_t* v) {
    if (bytes_.size() - at_ < sizeof(*v)) return false;
    std::memcpy(v, bytes_.data() + at_, sizeof(*v));
    at_ += sizeof(*v);
    return true;
  }
  bool read_array(std::vector<int32_t>* v) {
    uint32_t n = 0;
    if (!read_u32(&n) || (bytes_.size() - at_) / sizeof(int32_t) < n) return false;
    v->resize(n);
    if (n > 0) std::memcpy(v->data(), bytes_.data() + at_, size_t{n} * sizeof(int32_t));
    at_ += size_t{n} * sizeof(int32_t);
    return true;
  }
  bool at_end() const { return at_ == bytes_.size(); }

 private:
  std::span<const uint8_t> bytes_;
  size_t at_ = 0;
};

}  // namespace

std::vector<uint8_t> encode_forward_batch(const ForwardBatch& b) {
  std::vector<uint8_t> out;
  put_array(&out, b.tokens);
  put_array(&out, b.positions);
  put_array(&out, b.seq_index);
  put_array(&out, b.slot_mapping);
  put_array(&out, b.logits_indices);
  const uint32_t num_tables = static_cast<uint32_t>(b.block_tables.size());
  const size_t at = out.size();
  out.resize(at + sizeof(num_tables));
  std::memcpy(out.data() + at, &num_tables, sizeof(num_tables));
  for (const std::vector<int32_t>& t : b.block_tables) put_array(&out, t);
  return out;
}

Result<ForwardBatch> decode_forward_batch(std::span<const uint8_t> bytes) {
  Reader r(bytes);
  ForwardBatch b;
  uint32_t num_tables = 0;
  if (!r.read_array(&b.tokens) || !r.read_array(&b.positions) || !r.read_array(&b.seq_index) ||
      !r.read_array(&b.slot_mapping) || !r.read_array(&b.logits_indices) ||
      !r.read_u32(&num_tables) || num_tables > bytes.size() / sizeof(uint32_t)) {
    return invalid_argument("forward batch: truncated message");
  }
  b.block_tables.resize(num_tables);
  for (std::vector<int32_t>& t : b.block_tables) {
    if (!r.read_array(&t)) return invalid_argument("forward batch: truncated block table");
  }
  if (!r.at_end()) return invalid_argument("forward batch: trailing bytes");
  return b;
}

}  // namespace strata
