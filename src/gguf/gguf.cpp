// GGUF reader: every field the file controls is validated before use.
//
// Which check guards which known class of bug in other engines:
// - CVE-2025-53630 and its bypass CVE-2026-27940 (integer overflow while
//   summing tensor sizes and padding into an allocation size, then a heap
//   overflow when the data is read into the undersized buffer): every sum and
//   product here goes through checked_add/checked_mul, and nothing is ever
//   allocated from a size the file claims. Tensor data is never copied; it
//   stays in the mapping and each range is checked against the file size.
// - CVE-2026-33298 (tensor element count times type size wraps, so a tiny
//   buffer backs an exabyte-sized logical tensor): dims must be positive, their
//   product must fit in int64 without overflow, ne[0] must be a multiple of
//   the block size, and the byte size is computed with overflow checks and
//   must lie inside the file.
// - CVE-2025-49847 (a vocab piece whose length, truncated to int32 on its way
//   to a copy, overruns the caller's buffer): string lengths are u64, checked
//   against the bytes remaining, and exposed as string_views whose size_t
//   length is exact, never narrowed here. Consumers (the tokenizer) must still
//   bound their own copies by the destination size.
// - Count-driven exhaustion (a header claiming 2^60 KVs, tensors or array
//   elements, so the reader reserves memory before failing): every count is
//   checked against the bytes remaining, using the minimum encoded size of
//   one item, before any allocation; vectors grow only with items actually
//   parsed, so memory stays O(file size).
// - Recursion DoS through nested arrays: nested arrays are rejected.
#include "gguf/gguf.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

namespace strata {
namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as little-endian u32
constexpr uint64_t kDefaultAlignment = 32;
constexpr uint64_t kMaxAlignment = uint64_t{1} << 20;
constexpr uint64_t kMaxKeyBytes = 65535;        // the spec's bound on key length
constexpr uint64_t kMaxTensorNameBytes = 4096;  // far above any real name (ggml: 63)
constexpr uint32_t kMaxDims = 4;
// Minimum encoded sizes, used to bound counts before allocating anything.
constexpr uint64_t kMinKvBytes = 8 + 1 + 4 + 1;  // key len, 1-byte key, type, u8 value
constexpr uint64_t kMinTensorInfoBytes =
    8 + 1 + 4 + 8 + 4 + 8;  // name, n_dims, 1 dim, type, offset

bool checked_add(uint64_t a, uint64_t b, uint64_t* out) {
  return !__builtin_add_overflow(a, b, out);
}
bool checked_mul(uint64_t a, uint64_t b, uint64_t* out) {
  return !__builtin_mul_overflow(a, b, out);
}

bool is_known_value_type(uint32_t raw) {
  return raw <= static_cast<uint32_t>(GgufValueType::kFloat64);
}

bool is_unsigned_type(GgufValueType t) {
  return t == GgufValueType::kUint8 || t == GgufValueType::kUint16 || t == GgufValueType::kUint32 ||
         t == GgufValueType::kUint64;
}
bool is_signed_type(GgufValueType t) {
  return t == GgufValueType::kInt8 || t == GgufValueType::kInt16 || t == GgufValueType::kInt32 ||
         t == GgufValueType::kInt64;
}
bool is_float_type(GgufValueType t) {
  return t == GgufValueType::kFloat32 || t == GgufValueType::kFloat64;
}

template <typename T>
T load_le(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));  // x86-64 only: host order is little-endian
  return v;
}

// Decodes one packed numeric element of type `t` at `p` into `out`.
void decode_scalar(GgufValueType t, const uint8_t* p, GgufValue* out) {
  out->type = t;
  switch (t) {
    case GgufValueType::kUint8:
      out->u64 = load_le<uint8_t>(p);
      break;
    case GgufValueType::kInt8:
      out->i64 = load_le<int8_t>(p);
      break;
    case GgufValueType::kUint16:
      out->u64 = load_le<uint16_t>(p);
      break;
    case GgufValueType::kInt16:
      out->i64 = load_le<int16_t>(p);
      break;
    case GgufValueType::kUint32:
      out->u64 = load_le<uint32_t>(p);
      break;
    case GgufValueType::kInt32:
      out->i64 = load_le<int32_t>(p);
      break;
    case GgufValueType::kFloat32:
      out->f64 = load_le<float>(p);
      break;
    case GgufValueType::kBool:
      out->b = p[0] != 0;
      break;
    case GgufValueType::kUint64:
      out->u64 = load_le<uint64_t>(p);
      break;
    case GgufValueType::kInt64:
      out->i64 = load_le<int64_t>(p);
      break;
    case GgufValueType::kFloat64:
      out->f64 = load_le<double>(p);
      break;
    case GgufValueType::kString:
    case GgufValueType::kArray:
      break;
  }
}

// A bounds-checked cursor over the file image. Every read names the field it
// reads so that a failure produces one message that says what was wrong.
class Cursor {
 public:
  Cursor(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  uint64_t pos() const { return pos_; }
  uint64_t remaining() const { return size_ - pos_; }
  const uint8_t* here() const { return data_ + pos_; }

  Status need(uint64_t n, const std::string& what) const {
    if (n > remaining()) {
      return invalid_argument("gguf: " + what + ": needs " + std::to_string(n) +
                              " bytes at offset " + std::to_string(pos_) + " but only " +
                              std::to_string(remaining()) + " remain (truncated file)");
    }
    return Status::ok();
  }

  template <typename T>
  Status read(T* out, const std::string& what) {
    STRATA_RETURN_IF_ERROR(need(sizeof(T), what));
    *out = load_le<T>(data_ + pos_);
    pos_ += sizeof(T);
    return Status::ok();
  }

  // read_string() without a message: false (and nothing consumed) on failure.
  bool try_read_string(std::string_view* out) {
    if (remaining() < 8) return false;
    const uint64_t len = load_le<uint64_t>(data_ + pos_);
    if (len > remaining() - 8) return false;
    *out = std::string_view(reinterpret_cast<const char*>(data_ + pos_ + 8), len);
    pos_ += 8 + len;
    return true;
  }

  // A u64 length followed by that many bytes.
  Status read_string(std::string_view* out, const std::string& what) {
    uint64_t len = 0;
    STRATA_RETURN_IF_ERROR(read(&len, what + " length"));
    if (len > remaining()) {
      return invalid_argument("gguf: " + what + ": length " + std::to_string(len) +
                              " exceeds the " + std::to_string(remaining()) +
                              " bytes remaining in the file");
    }
    *out = std::string_view(reinterpret_cast<const char*>(data_ + pos_), len);
    pos_ += len;
    return Status::ok();
  }

  void skip(uint64_t n) { pos_ += n; }  // caller has checked need(n)

 private:
  const uint8_t* data_;
  uint64_t size_;
  uint64_t pos_ = 0;
};

std::string quoted(std::string_view s) {
  // Keys and names come from the file: cap what goes into a message and
  // replace control bytes so the message stays one line.
  constexpr size_t kMaxShown = 80;
  std::string out = "'";
  for (size_t i = 0; i < s.size() && i < kMaxShown; ++i) {
    const char c = s[i];
    out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? '?' : c;
  }
  if (s.size() > kMaxShown) out += "...";
  out += "'";
  return out;
}

// Parses one value of type `type` (already read and checked to be known).
Status read_value(Cursor& cur, GgufValueType type, const std::string& what, GgufValue* out) {
  out->type = type;
  if (type == GgufValueType::kString) {
    return cur.read_string(&out->str, what);
  }
  if (type != GgufValueType::kArray) {
    const uint64_t n = gguf_scalar_bytes(type);
    STRATA_RETURN_IF_ERROR(cur.need(n, what + " value"));
    if (type == GgufValueType::kBool && cur.here()[0] > 1) {
      return invalid_argument("gguf: " + what + ": bool value must be 0 or 1, got " +
                              std::to_string(cur.here()[0]));
    }
    decode_scalar(type, cur.here(), out);
    cur.skip(n);
    return Status::ok();
  }

  uint32_t raw_elem = 0;
  STRATA_RETURN_IF_ERROR(cur.read(&raw_elem, what + " array element type"));
  if (!is_known_value_type(raw_elem)) {
    return invalid_argument("gguf: " + what + ": unknown array element type " +
                            std::to_string(raw_elem));
  }
  const auto elem = static_cast<GgufValueType>(raw_elem);
  if (elem == GgufValueType::kArray) {
    return invalid_argument("gguf: " + what + ": nested arrays are not supported");
  }
  uint64_t count = 0;
  STRATA_RETURN_IF_ERROR(cur.read(&count, what + " array count"));
  out->elem_type = elem;
  out->count = count;

  if (elem == GgufValueType::kString) {
    // Each string needs at least its 8-byte length: bound the count first.
    if (count > cur.remaining() / 8) {
      return invalid_argument("gguf: " + what + ": array count " + std::to_string(count) +
                              " of strings cannot fit in the " + std::to_string(cur.remaining()) +
                              " bytes remaining");
    }
    out->strings.reserve(count);
    for (uint64_t i = 0; i < count; ++i) {
      std::string_view s;
      if (!cur.try_read_string(&s)) {  // the message is built only on failure
        return cur.read_string(&s, what + " element " + std::to_string(i));
      }
      out->strings.push_back(s);
    }
    return Status::ok();
  }

  const uint64_t elem_bytes = gguf_scalar_bytes(elem);
  if (count > cur.remaining() / elem_bytes) {
    return invalid_argument("gguf: " + what + ": array count " + std::to_string(count) + " of " +
                            std::string(gguf_value_type_name(elem)) + " (" +
                            std::to_string(elem_bytes) + " bytes each) exceeds the " +
                            std::to_string(cur.remaining()) + " bytes remaining");
  }
  const uint64_t total = count * elem_bytes;  // cannot overflow: checked above
  if (elem == GgufValueType::kBool) {
    for (uint64_t i = 0; i < count; ++i) {
      if (cur.here()[i] > 1) {
        return invalid_argument("gguf: " + what + ": bool element " + std::to_string(i) +
                                " must be 0 or 1, got " + std::to_string(cur.here()[i]));
      }
    }
  }
  out->elems = cur.here();
  cur.skip(total);
  return Status::ok();
}

// Reads general.alignment out of its value, accepting any integer type.
Status alignment_from_value(const GgufValue& v, uint64_t* out) {
  uint64_t a = 0;
  if (is_unsigned_type(v.type)) {
    a = v.u64;
  } else if (is_signed_type(v.type) && v.i64 > 0) {
    a = static_cast<uint64_t>(v.i64);
  } else if (!is_signed_type(v.type)) {
    return invalid_argument("gguf: metadata key 'general.alignment': must be an integer, got " +
                            std::string(gguf_value_type_name(v.type)));
  }
  if (a == 0 || (a & (a - 1)) != 0 || a > kMaxAlignment) {
    return invalid_argument("gguf: metadata key 'general.alignment': " + std::to_string(a) +
                            " is not a power of two in [1, " + std::to_string(kMaxAlignment) + "]");
  }
  *out = a;
  return Status::ok();
}

}  // namespace

std::string_view gguf_value_type_name(GgufValueType t) {
  switch (t) {
    case GgufValueType::kUint8:
      return "uint8";
    case GgufValueType::kInt8:
      return "int8";
    case GgufValueType::kUint16:
      return "uint16";
    case GgufValueType::kInt16:
      return "int16";
    case GgufValueType::kUint32:
      return "uint32";
    case GgufValueType::kInt32:
      return "int32";
    case GgufValueType::kFloat32:
      return "float32";
    case GgufValueType::kBool:
      return "bool";
    case GgufValueType::kString:
      return "string";
    case GgufValueType::kArray:
      return "array";
    case GgufValueType::kUint64:
      return "uint64";
    case GgufValueType::kInt64:
      return "int64";
    case GgufValueType::kFloat64:
      return "float64";
  }
  return "unknown";
}

uint64_t gguf_scalar_bytes(GgufValueType t) {
  switch (t) {
    case GgufValueType::kUint8:
    case GgufValueType::kInt8:
    case GgufValueType::kBool:
      return 1;
    case GgufValueType::kUint16:
    case GgufValueType::kInt16:
      return 2;
    case GgufValueType::kUint32:
    case GgufValueType::kInt32:
    case GgufValueType::kFloat32:
      return 4;
    case GgufValueType::kUint64:
    case GgufValueType::kInt64:
    case GgufValueType::kFloat64:
      return 8;
    case GgufValueType::kString:
    case GgufValueType::kArray:
      return 0;
  }
  return 0;
}

int64_t GgufValue::int_at(uint64_t i) const {
  GgufValue v;
  decode_scalar(elem_type, elems + i * gguf_scalar_bytes(elem_type), &v);
  if (is_unsigned_type(elem_type)) return static_cast<int64_t>(v.u64);
  if (is_signed_type(elem_type)) return v.i64;
  if (is_float_type(elem_type)) {
    // Saturate: converting an out-of-range or NaN double to int64 is UB.
    if (!(v.f64 == v.f64)) return 0;
    if (v.f64 >= 9223372036854775808.0) return std::numeric_limits<int64_t>::max();
    if (v.f64 < -9223372036854775808.0) return std::numeric_limits<int64_t>::min();
    return static_cast<int64_t>(v.f64);
  }
  return v.b ? 1 : 0;
}

double GgufValue::float_at(uint64_t i) const {
  GgufValue v;
  decode_scalar(elem_type, elems + i * gguf_scalar_bytes(elem_type), &v);
  if (is_unsigned_type(elem_type)) return static_cast<double>(v.u64);
  if (is_signed_type(elem_type)) return static_cast<double>(v.i64);
  if (is_float_type(elem_type)) return v.f64;
  return v.b ? 1.0 : 0.0;
}

GgufFile::GgufFile(GgufFile&& o) noexcept {
  *this = std::move(o);
}

GgufFile& GgufFile::operator=(GgufFile&& o) noexcept {
  if (this == &o) return *this;
  if (map_ != nullptr) munmap(map_, size_);
  map_ = o.map_;
  base_ = o.base_;
  size_ = o.size_;
  version_ = o.version_;
  alignment_ = o.alignment_;
  data_offset_ = o.data_offset_;
  kv_ = std::move(o.kv_);
  kv_index_ = std::move(o.kv_index_);
  tensors_ = std::move(o.tensors_);
  tensor_index_ = std::move(o.tensor_index_);
  o.map_ = nullptr;
  o.base_ = nullptr;
  o.size_ = 0;
  return *this;
}

void GgufFile::release_pages(const void* p, size_t bytes) const {
  if (map_ == nullptr || bytes == 0) return;
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto lo = reinterpret_cast<uintptr_t>(p);
  const uintptr_t first = (lo + page - 1) / page * page;
  const uintptr_t last = (lo + bytes) / page * page;
  const auto map_lo = reinterpret_cast<uintptr_t>(map_);
  if (first >= last || first < map_lo || last > map_lo + size_) return;
  // The mapping is private and read-only: dropped pages read back from the file.
  madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

GgufFile::~GgufFile() {
  if (map_ != nullptr) munmap(map_, size_);
}

Result<GgufFile> GgufFile::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    Status s = io_error("gguf: cannot open '" + path + "': " + std::strerror(err));
    if (err == ENOENT) s = not_found("gguf: cannot open '" + path + "': " + std::strerror(err));
    return s;
  }
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return io_error("gguf: cannot stat '" + path + "': " + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return invalid_argument("gguf: '" + path + "' is not a regular file");
  }
  if (st.st_size == 0) {
    ::close(fd);
    return invalid_argument("gguf: '" + path + "' is empty");
  }
  const size_t size = static_cast<size_t>(st.st_size);
  void* map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int map_err = errno;
  ::close(fd);  // the mapping keeps the file alive
  if (map == MAP_FAILED) {
    return io_error("gguf: cannot mmap '" + path + "': " + std::strerror(map_err));
  }
  Result<GgufFile> parsed = parse(static_cast<const uint8_t*>(map), size);
  if (!parsed.is_ok()) {
    munmap(map, size);
    return Status(parsed.status().code(), parsed.status().message() + " (in '" + path + "')");
  }
  parsed->map_ = map;
  return parsed;
}

Result<GgufFile> GgufFile::parse(const uint8_t* data, size_t size) {
  GgufFile f;
  f.alignment_ = kDefaultAlignment;
  f.base_ = data;
  f.size_ = size;
  Cursor cur(data, size);

  // --- Header.
  uint32_t magic = 0;
  STRATA_RETURN_IF_ERROR(cur.read(&magic, "header magic"));
  if (magic != kMagic) {
    return invalid_argument("gguf: header magic: not a GGUF file (expected 'GGUF')");
  }
  STRATA_RETURN_IF_ERROR(cur.read(&f.version_, "header version"));
  if (f.version_ != 2 && f.version_ != 3) {
    const bool looks_big_endian = f.version_ == 0x02000000u || f.version_ == 0x03000000u;
    return invalid_argument("gguf: header version: " + std::to_string(f.version_) +
                            (looks_big_endian ? " (a big-endian file; only little-endian is "
                                                "supported)"
                                              : " is not supported (only 2 and 3)"));
  }
  uint64_t n_tensors = 0;
  uint64_t n_kv = 0;
  STRATA_RETURN_IF_ERROR(cur.read(&n_tensors, "header tensor count"));
  STRATA_RETURN_IF_ERROR(cur.read(&n_kv, "header metadata count"));
  // Counts the rest of the file could not possibly hold are rejected before
  // anything is allocated from them.
  if (n_tensors > cur.remaining() / kMinTensorInfoBytes) {
    return invalid_argument("gguf: header tensor count: " + std::to_string(n_tensors) +
                            " tensors cannot fit in a file of " + std::to_string(size) + " bytes");
  }
  if (n_kv > cur.remaining() / kMinKvBytes) {
    return invalid_argument("gguf: header metadata count: " + std::to_string(n_kv) +
                            " key-value pairs cannot fit in a file of " + std::to_string(size) +
                            " bytes");
  }
  if (n_tensors * kMinTensorInfoBytes + n_kv * kMinKvBytes > cur.remaining()) {
    return invalid_argument("gguf: header counts: " + std::to_string(n_tensors) + " tensors and " +
                            std::to_string(n_kv) + " key-value pairs cannot fit in a file of " +
                            std::to_string(size) + " bytes");
  }

  // --- Metadata.
  for (uint64_t i = 0; i < n_kv; ++i) {
    const std::string where = "metadata " + std::to_string(i);
    std::string_view key;
    STRATA_RETURN_IF_ERROR(cur.read_string(&key, where + " key"));
    if (key.empty()) return invalid_argument("gguf: " + where + " key: empty key");
    if (key.size() > kMaxKeyBytes) {
      return invalid_argument("gguf: " + where + " key: length " + std::to_string(key.size()) +
                              " exceeds " + std::to_string(kMaxKeyBytes));
    }
    const std::string what = "metadata key " + quoted(key);
    if (f.kv_index_.count(std::string(key)) != 0) {
      return invalid_argument("gguf: " + what + ": duplicate key");
    }
    uint32_t raw_type = 0;
    STRATA_RETURN_IF_ERROR(cur.read(&raw_type, what + " value type"));
    if (!is_known_value_type(raw_type)) {
      return invalid_argument("gguf: " + what + ": unknown value type " + std::to_string(raw_type));
    }
    GgufValue value;
    STRATA_RETURN_IF_ERROR(read_value(cur, static_cast<GgufValueType>(raw_type), what, &value));
    if (key == "general.alignment") {
      STRATA_RETURN_IF_ERROR(alignment_from_value(value, &f.alignment_));
    }
    f.kv_index_.emplace(std::string(key), f.kv_.size());
    f.kv_.emplace_back(std::string(key), std::move(value));
  }

  // --- Tensor infos.
  for (uint64_t i = 0; i < n_tensors; ++i) {
    std::string_view name;
    STRATA_RETURN_IF_ERROR(cur.read_string(&name, "tensor " + std::to_string(i) + " name"));
    if (name.empty()) {
      return invalid_argument("gguf: tensor " + std::to_string(i) + " name: empty name");
    }
    if (name.size() > kMaxTensorNameBytes) {
      return invalid_argument("gguf: tensor " + std::to_string(i) + " name: length " +
                              std::to_string(name.size()) + " exceeds " +
                              std::to_string(kMaxTensorNameBytes));
    }
    const std::string what = "tensor " + quoted(name);
    if (f.tensor_index_.count(std::string(name)) != 0) {
      return invalid_argument("gguf: " + what + ": duplicate tensor name");
    }
    GgufTensor t;
    t.name = std::string(name);
    STRATA_RETURN_IF_ERROR(cur.read(&t.n_dims, what + " n_dims"));
    if (t.n_dims < 1 || t.n_dims > kMaxDims) {
      return invalid_argument("gguf: " + what + ": n_dims " + std::to_string(t.n_dims) +
                              " is not in [1, 4]");
    }
    uint64_t n_elements = 1;
    for (uint32_t d = 0; d < t.n_dims; ++d) {
      uint64_t dim = 0;
      STRATA_RETURN_IF_ERROR(cur.read(&dim, what + " ne[" + std::to_string(d) + "]"));
      if (dim == 0 || dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return invalid_argument("gguf: " + what + ": ne[" + std::to_string(d) +
                                "] = " + std::to_string(dim) + " is not a positive int64");
      }
      if (!checked_mul(n_elements, dim, &n_elements) ||
          n_elements > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return invalid_argument("gguf: " + what +
                                ": element count (product of dims) overflows int64");
      }
      t.ne[d] = static_cast<int64_t>(dim);
    }
    uint32_t raw_type = 0;
    STRATA_RETURN_IF_ERROR(cur.read(&raw_type, what + " type"));
    const std::optional<DTypeTraits> traits = dtype_traits(raw_type);
    if (!traits) {
      return invalid_argument("gguf: " + what + ": unknown tensor type " +
                              std::to_string(raw_type));
    }
    t.type = traits->type;
    if (static_cast<uint64_t>(t.ne[0]) % traits->block_elems != 0) {
      return invalid_argument("gguf: " + what + ": ne[0] = " + std::to_string(t.ne[0]) +
                              " is not a multiple of the " + std::string(traits->name) +
                              " block size " + std::to_string(traits->block_elems));
    }
    const uint64_t rows = n_elements / static_cast<uint64_t>(t.ne[0]);
    const uint64_t blocks_per_row = static_cast<uint64_t>(t.ne[0]) / traits->block_elems;
    uint64_t row_bytes = 0;
    if (!checked_mul(blocks_per_row, traits->block_bytes, &row_bytes) ||
        !checked_mul(row_bytes, rows, &t.nbytes)) {
      return invalid_argument("gguf: " + what + ": byte size overflows uint64");
    }
    STRATA_RETURN_IF_ERROR(cur.read(&t.offset, what + " offset"));
    if (t.offset % f.alignment_ != 0) {
      return invalid_argument("gguf: " + what + ": offset " + std::to_string(t.offset) +
                              " is not a multiple of the alignment " +
                              std::to_string(f.alignment_));
    }
    f.tensor_index_.emplace(t.name, f.tensors_.size());
    f.tensors_.push_back(std::move(t));
  }

  // --- Data section: starts at the next multiple of the alignment.
  uint64_t data_offset = 0;
  const uint64_t pad = (f.alignment_ - cur.pos() % f.alignment_) % f.alignment_;
  if (!checked_add(cur.pos(), pad, &data_offset)) {
    return invalid_argument("gguf: data section offset overflows");  // unreachable in practice
  }
  f.data_offset_ = data_offset;
  if (f.tensors_.empty()) return f;  // a metadata-only file needs no data section
  if (data_offset > size) {
    return invalid_argument("gguf: data section: starts at " + std::to_string(data_offset) +
                            ", past the end of the file (size " + std::to_string(size) + ")");
  }
  const uint64_t data_bytes = size - data_offset;

  // Every range lies inside the data section, and no two overlap.
  std::vector<size_t> order(f.tensors_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  for (GgufTensor& t : f.tensors_) {
    uint64_t end = 0;
    if (!checked_add(t.offset, t.nbytes, &end) || end > data_bytes) {
      return invalid_argument("gguf: tensor " + quoted(t.name) + ": data range [" +
                              std::to_string(t.offset) + ", " + std::to_string(t.offset) + "+" +
                              std::to_string(t.nbytes) + ") exceeds the data section size " +
                              std::to_string(data_bytes) + " (file size " + std::to_string(size) +
                              ")");
    }
    t.data = data + data_offset + t.offset;
  }
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return f.tensors_[a].offset < f.tensors_[b].offset; });
  for (size_t k = 1; k < order.size(); ++k) {
    const GgufTensor& prev = f.tensors_[order[k - 1]];
    const GgufTensor& cur_t = f.tensors_[order[k]];
    if (prev.offset + prev.nbytes > cur_t.offset) {  // no overflow: end <= data_bytes
      return invalid_argument("gguf: tensor " + quoted(cur_t.name) + ": data range starting at " +
                              std::to_string(cur_t.offset) + " overlaps tensor " +
                              quoted(prev.name) + " [" + std::to_string(prev.offset) + ", " +
                              std::to_string(prev.offset + prev.nbytes) + ")");
    }
  }
  return f;
}

const GgufValue* GgufFile::find(std::string_view key) const {
  auto it = kv_index_.find(std::string(key));
  return it == kv_index_.end() ? nullptr : &kv_[it->second].second;
}

std::optional<uint64_t> GgufFile::get_uint(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return std::nullopt;
  if (is_unsigned_type(v->type)) return v->u64;
  if (is_signed_type(v->type) && v->i64 >= 0) return static_cast<uint64_t>(v->i64);
  return std::nullopt;
}

std::optional<int64_t> GgufFile::get_int(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return std::nullopt;
  if (is_signed_type(v->type)) return v->i64;
  if (is_unsigned_type(v->type) &&
      v->u64 <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return static_cast<int64_t>(v->u64);
  }
  return std::nullopt;
}

std::optional<double> GgufFile::get_float(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return std::nullopt;
  if (is_float_type(v->type)) return v->f64;
  if (is_unsigned_type(v->type)) return static_cast<double>(v->u64);
  if (is_signed_type(v->type)) return static_cast<double>(v->i64);
  return std::nullopt;
}

std::optional<bool> GgufFile::get_bool(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr || v->type != GgufValueType::kBool) return std::nullopt;
  return v->b;
}

std::optional<std::string_view> GgufFile::get_string(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr || v->type != GgufValueType::kString) return std::nullopt;
  return v->str;
}

const GgufValue* GgufFile::get_array(std::string_view key) const {
  const GgufValue* v = find(key);
  return (v == nullptr || v->type != GgufValueType::kArray) ? nullptr : v;
}

const GgufTensor* GgufFile::tensor(std::string_view name) const {
  auto it = tensor_index_.find(std::string(name));
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

}  // namespace strata
