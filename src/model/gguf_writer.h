// GgufWriter: builds a GGUF v3 file in memory and writes it out.
//
// Used by the tiny-model writer (tools/) and by tests that craft files. Add
// metadata and tensors in the order they should appear, then write(). Tensor
// data is copied in; offsets are aligned to `alignment` (general.alignment is
// emitted when it differs from 32). Not thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/gguf.h"
#include "util/status.h"

namespace strata {

class GgufWriter {
 public:
  explicit GgufWriter(uint64_t alignment = 32);

  void add_u32(std::string_view key, uint32_t v);
  void add_i32(std::string_view key, int32_t v);
  void add_u64(std::string_view key, uint64_t v);
  void add_f32(std::string_view key, float v);
  void add_bool(std::string_view key, bool v);
  void add_string(std::string_view key, std::string_view v);
  void add_string_array(std::string_view key, const std::vector<std::string>& v);
  void add_f32_array(std::string_view key, const std::vector<float>& v);
  void add_i32_array(std::string_view key, const std::vector<int32_t>& v);

  // `ne` lists dims with ne[0] contiguous; `data` holds the encoded bytes
  // (dtype_row_bytes(type, ne[0]) * rows).
  void add_tensor(std::string_view name, DType type, const std::vector<int64_t>& ne,
                  std::vector<uint8_t> data);

  // The complete file image.
  std::vector<uint8_t> serialize() const;
  Status write(const std::string& path) const;

 private:
  struct Tensor {
    std::string name;
    DType type;
    std::vector<int64_t> ne;
    std::vector<uint8_t> data;
  };
  uint64_t alignment_;
  std::vector<uint8_t> kv_bytes_;
  uint64_t kv_count_ = 0;
  std::vector<Tensor> tensors_;
};

}  // namespace strata
