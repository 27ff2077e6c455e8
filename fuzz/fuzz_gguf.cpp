// libFuzzer target: GgufFile::parse on arbitrary bytes. When the input is
// accepted, every metadata value and every byte of every tensor is read, so
// ASan reports any view the parser let point outside the input.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "gguf/gguf.h"

namespace {

volatile uint64_t g_sink;  // keeps the reads from being optimized away

uint64_t touch(std::string_view s) {
  uint64_t h = s.size();
  for (char c : s) h = h * 31 + static_cast<uint8_t>(c);
  return h;
}

uint64_t touch(const strata::GgufValue& v) {
  uint64_t h = v.u64 ^ static_cast<uint64_t>(v.i64) ^ static_cast<uint64_t>(v.b);
  h += static_cast<uint64_t>(v.f64 == v.f64);
  h += touch(v.str);
  if (v.type == strata::GgufValueType::kArray) {
    if (v.elem_type == strata::GgufValueType::kString) {
      if (v.strings.size() != v.count) __builtin_trap();
      for (std::string_view s : v.strings) h += touch(s);
    } else {
      for (uint64_t i = 0; i < v.count; ++i) {
        h += static_cast<uint64_t>(v.int_at(i));
        h += static_cast<uint64_t>(v.float_at(i) == 0.0);
      }
    }
  }
  return h;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A copy sized exactly to the input, so reading one byte past it is caught
  // even when libFuzzer's own buffer has slack.
  std::vector<uint8_t> copy(data, data + size);
  strata::Result<strata::GgufFile> f = strata::GgufFile::parse(copy.data(), copy.size());
  if (!f.is_ok()) {
    if (f.status().message().empty()) __builtin_trap();  // every rejection says why
    return 0;
  }
  uint64_t h = f->version() + f->alignment() + f->data_offset();
  for (const auto& [key, value] : f->metadata()) {
    h += touch(key) + touch(value);
    if (f->find(key) != &value) __builtin_trap();
    (void)f->get_uint(key);
    (void)f->get_int(key);
    (void)f->get_float(key);
    (void)f->get_string(key);
  }
  for (const strata::GgufTensor& t : f->tensors()) {
    if (f->tensor(t.name) != &t) __builtin_trap();
    h += static_cast<uint64_t>(t.n_elements()) + t.nbytes;
    for (uint64_t i = 0; i < t.nbytes; ++i) h += t.data[i];
  }
  g_sink = h;
  return 0;
}
