// GgufBytes: a byte-exact GGUF builder for tests that must craft files the
// writer would never produce (wrong counts, bad types, overlapping offsets).
// Every field is written exactly as given; nothing is validated.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace strata::testing {

struct GgufBytes {
  std::vector<uint8_t> bytes;

  template <typename T>
  GgufBytes& put(T v) {
    uint8_t b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    bytes.insert(bytes.end(), b, b + sizeof(T));
    return *this;
  }
  GgufBytes& u8(uint8_t v) { return put(v); }
  GgufBytes& u32(uint32_t v) { return put(v); }
  GgufBytes& u64(uint64_t v) { return put(v); }
  GgufBytes& str(std::string_view s) {
    u64(s.size());
    bytes.insert(bytes.end(), s.begin(), s.end());
    return *this;
  }
  GgufBytes& raw(const std::vector<uint8_t>& b) {
    bytes.insert(bytes.end(), b.begin(), b.end());
    return *this;
  }
  GgufBytes& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
    u32(0x46554747);
    u32(version);
    u64(n_tensors);
    return u64(n_kv);
  }
  // A key followed by its value type; the caller writes the value.
  GgufBytes& key(std::string_view k, uint32_t type) {
    str(k);
    return u32(type);
  }
  GgufBytes& tensor_info(std::string_view name, const std::vector<uint64_t>& ne, uint32_t type,
                         uint64_t offset) {
    str(name);
    u32(static_cast<uint32_t>(ne.size()));
    for (uint64_t d : ne) u64(d);
    u32(type);
    return u64(offset);
  }
  GgufBytes& pad(uint64_t alignment = 32) {
    while (bytes.size() % alignment != 0) bytes.push_back(0);
    return *this;
  }
  GgufBytes& zeros(size_t n) {
    bytes.insert(bytes.end(), n, 0);
    return *this;
  }
};

}  // namespace strata::testing
