// GgufWriter: builds a GGUF v3 file in memory and writes it out.
//
// Used by the tiny-model writer (tools/) and by tests that craft files. Add
// metadata and tensors in the order they should appear, then write(). Tensor
// data is copied in; offsets are aligned to `alignment` (general.alignment is
// emitted first when it differs from 32). Not thread-safe.
//
// The writer does not validate what it is given (duplicate keys, a data size
// that does not match type and dims): tests rely on that to craft files the
// reader must reject. Callers that want a valid file pass consistent input;
// GgufFile::parse(serialize()) is the check.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/gguf.h"
#include "util/status.h"

namespace strata {

class GgufWriter {
 public:
  explicit GgufWriter(uint64_t alignment = 32);

  void add_u8(std::string_view key, uint8_t v);
  void add_i8(std::string_view key, int8_t v);
  void add_u16(std::string_view key, uint16_t v);
  void add_i16(std::string_view key, int16_t v);
  void add_u32(std::string_view key, uint32_t v);
  void add_i32(std::string_view key, int32_t v);
  void add_u64(std::string_view key, uint64_t v);
  void add_i64(std::string_view key, int64_t v);
  void add_f32(std::string_view key, float v);
  void add_f64(std::string_view key, double v);
  void add_bool(std::string_view key, bool v);
  void add_string(std::string_view key, std::string_view v);
  void add_string_array(std::string_view key, const std::vector<std::string>& v);
  void add_f32_array(std::string_view key, const std::vector<float>& v);
  void add_i32_array(std::string_view key, const std::vector<int32_t>& v);
  // A numeric array of any scalar element type; `packed` holds `count`
  // little-endian elements back to back.
  void add_array(std::string_view key, GgufValueType elem_type, uint64_t count,
                 const std::vector<uint8_t>& packed);

  // `ne` lists dims with ne[0] contiguous; `data` holds the encoded bytes
  // (dtype_row_bytes(type, ne[0]) * rows).
  void add_tensor(std::string_view name, DType type, const std::vector<int64_t>& ne,
                  std::vector<uint8_t> data);

  // The complete file image.
  std::vector<uint8_t> serialize() const;
  // Writes serialize() to `path` through a temporary file in the same
  // directory and a rename, so readers never see a partial file.
  Status write(const std::string& path) const;

 private:
  struct Tensor {
    std::string name;
    DType type;
    std::vector<int64_t> ne;
    std::vector<uint8_t> data;
  };
  void add_key(std::string_view key, GgufValueType type);

  uint64_t alignment_;
  std::vector<uint8_t> kv_bytes_;
  uint64_t kv_count_ = 0;
  std::vector<Tensor> tensors_;
};

}  // namespace strata
