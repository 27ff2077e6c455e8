// GgufFile: a read-only, fully validated view of a GGUF v3 (and v2) file.
//
// The file is mmapped; tensor data and metadata strings are zero-copy views
// into the mapping, valid as long as the GgufFile lives (it is move-only).
// open() validates every field before it is used, with overflow-checked
// arithmetic: magic and version, counts, string/array lengths against the
// bytes remaining, value and element types, alignment (power of two), tensor
// types/dims/block multiples, byte sizes and their sums, offsets within the
// file, no overlapping tensors, no duplicate tensor names or metadata keys.
// Any defect is a Status whose one-line message names the field. Memory used
// is O(file size). Thread-safety: const methods are safe from any thread.
//
// Limits beyond the spec's own: keys <= 65535 bytes and non-empty, tensor
// names <= 4096 bytes and non-empty, general.alignment an integer power of
// two <= 1 MiB, bool values 0 or 1, nested arrays rejected. Tensor types must
// be known to dtype_traits() but need not be supported (is_supported): the
// model loader decides. Trailing bytes after the last tensor are allowed, and
// a file without tensors needs no data section.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "util/dtype.h"
#include "util/status.h"

namespace strata {

// GGUF metadata value types, numbered as the spec numbers them.
enum class GgufValueType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};

std::string_view gguf_value_type_name(GgufValueType t);
// Size in bytes of a scalar value type; 0 for string/array.
uint64_t gguf_scalar_bytes(GgufValueType t);

// One metadata value. Scalars are widened into one of u64/i64/f64/bool;
// strings and arrays are views into the mapping.
struct GgufValue {
  GgufValueType type = GgufValueType::kUint8;
  uint64_t u64 = 0;      // unsigned integer types
  int64_t i64 = 0;       // signed integer types
  double f64 = 0;        // float types
  bool b = false;        // kBool
  std::string_view str;  // kString

  // kArray only:
  GgufValueType elem_type = GgufValueType::kUint8;
  uint64_t count = 0;
  const uint8_t* elems = nullptr;         // numeric elements, packed little-endian
  std::vector<std::string_view> strings;  // string elements (elem_type == kString)

  // Numeric element i of a numeric array, converted (i < count). int_at
  // truncates floats toward zero, saturating out-of-range values (NaN -> 0);
  // uint64 values above INT64_MAX wrap as two's complement.
  int64_t int_at(uint64_t i) const;
  double float_at(uint64_t i) const;
};

struct GgufTensor {
  std::string name;
  DType type = DType::kF32;
  uint32_t n_dims = 0;
  int64_t ne[4] = {1, 1, 1, 1};  // ne[0] is the contiguous (row) dimension
  uint64_t offset = 0;           // relative to the data section
  uint64_t nbytes = 0;
  const uint8_t* data = nullptr;  // points into the mapping

  int64_t n_elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
};

class GgufFile {
 public:
  // Maps and validates `path`. Errors: kNotFound (no such file), kIoError
  // (cannot open/map), kInvalidArgument (not a regular file, empty, or any
  // format defect; the message then ends with the path).
  static Result<GgufFile> open(const std::string& path);
  // Validates an in-memory image (used by the fuzzer and tests); the bytes
  // must outlive the returned object.
  static Result<GgufFile> parse(const uint8_t* data, size_t size);

  GgufFile(GgufFile&&) noexcept;
  GgufFile& operator=(GgufFile&&) noexcept;
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;
  ~GgufFile();

  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  size_t file_size() const { return size_; }
  uint64_t data_offset() const { return data_offset_; }

  // Metadata, in file order.
  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return kv_; }
  const GgufValue* find(std::string_view key) const;

  // Typed getters: nullopt when absent or of an incompatible type. Integer
  // getters accept any integer type whose value fits.
  std::optional<uint64_t> get_uint(std::string_view key) const;
  std::optional<int64_t> get_int(std::string_view key) const;
  std::optional<double> get_float(std::string_view key) const;  // float or integer types
  std::optional<bool> get_bool(std::string_view key) const;
  std::optional<std::string_view> get_string(std::string_view key) const;
  const GgufValue* get_array(std::string_view key) const;  // nullptr unless kArray

  const std::vector<GgufTensor>& tensors() const { return tensors_; }

  // Hints that the mapped bytes [p, p + bytes) will not be read soon: their
  // whole pages leave this process's memory, and a later read maps them in
  // again from the file. For a tensor whose data the model keeps in another
  // layout. No-op for parse()d images.
  void release_pages(const void* p, size_t bytes) const;
  const GgufTensor* tensor(std::string_view name) const;

 private:
  GgufFile() = default;

  void* map_ = nullptr;  // mmap base, or nullptr for parse()
  const uint8_t* base_ = nullptr;
  size_t size_ = 0;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, GgufValue>> kv_;
  std::unordered_map<std::string, size_t> kv_index_;
  std::vector<GgufTensor> tensors_;
  std::unordered_map<std::string, size_t> tensor_index_;
};

}  // namespace strata
