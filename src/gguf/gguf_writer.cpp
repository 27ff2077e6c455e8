#include "gguf/gguf_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace strata {
namespace {

template <typename T>
void put(std::vector<uint8_t>& out, T v) {
  uint8_t bytes[sizeof(T)];
  std::memcpy(bytes, &v, sizeof(T));  // x86-64 only: host order is little-endian
  out.insert(out.end(), bytes, bytes + sizeof(T));
}

void put_string(std::vector<uint8_t>& out, std::string_view s) {
  put<uint64_t>(out, s.size());
  out.insert(out.end(), s.begin(), s.end());
}

void pad_to(std::vector<uint8_t>& out, uint64_t alignment) {
  while (out.size() % alignment != 0) out.push_back(0);
}

uint64_t align_up(uint64_t n, uint64_t alignment) {
  return (n + alignment - 1) / alignment * alignment;
}

}  // namespace

GgufWriter::GgufWriter(uint64_t alignment) : alignment_(alignment == 0 ? 1 : alignment) {}

void GgufWriter::add_key(std::string_view key, GgufValueType type) {
  put_string(kv_bytes_, key);
  put<uint32_t>(kv_bytes_, static_cast<uint32_t>(type));
  ++kv_count_;
}

void GgufWriter::add_u8(std::string_view key, uint8_t v) {
  add_key(key, GgufValueType::kUint8);
  put(kv_bytes_, v);
}
void GgufWriter::add_i8(std::string_view key, int8_t v) {
  add_key(key, GgufValueType::kInt8);
  put(kv_bytes_, v);
}
void GgufWriter::add_u16(std::string_view key, uint16_t v) {
  add_key(key, GgufValueType::kUint16);
  put(kv_bytes_, v);
}
void GgufWriter::add_i16(std::string_view key, int16_t v) {
  add_key(key, GgufValueType::kInt16);
  put(kv_bytes_, v);
}
void GgufWriter::add_u32(std::string_view key, uint32_t v) {
  add_key(key, GgufValueType::kUint32);
  put(kv_bytes_, v);
}
void GgufWriter::add_i32(std::string_view key, int32_t v) {
  add_key(key, GgufValueType::kInt32);
  put(kv_bytes_, v);
}
void GgufWriter::add_u64(std::string_view key, uint64_t v) {
  add_key(key, GgufValueType::kUint64);
  put(kv_bytes_, v);
}
void GgufWriter::add_i64(std::string_view key, int64_t v) {
  add_key(key, GgufValueType::kInt64);
  put(kv_bytes_, v);
}
void GgufWriter::add_f32(std::string_view key, float v) {
  add_key(key, GgufValueType::kFloat32);
  put(kv_bytes_, v);
}
void GgufWriter::add_f64(std::string_view key, double v) {
  add_key(key, GgufValueType::kFloat64);
  put(kv_bytes_, v);
}
void GgufWriter::add_bool(std::string_view key, bool v) {
  add_key(key, GgufValueType::kBool);
  put<uint8_t>(kv_bytes_, v ? 1 : 0);
}
void GgufWriter::add_string(std::string_view key, std::string_view v) {
  add_key(key, GgufValueType::kString);
  put_string(kv_bytes_, v);
}

void GgufWriter::add_string_array(std::string_view key, const std::vector<std::string>& v) {
  add_key(key, GgufValueType::kArray);
  put<uint32_t>(kv_bytes_, static_cast<uint32_t>(GgufValueType::kString));
  put<uint64_t>(kv_bytes_, v.size());
  for (const std::string& s : v) put_string(kv_bytes_, s);
}

void GgufWriter::add_f32_array(std::string_view key, const std::vector<float>& v) {
  add_key(key, GgufValueType::kArray);
  put<uint32_t>(kv_bytes_, static_cast<uint32_t>(GgufValueType::kFloat32));
  put<uint64_t>(kv_bytes_, v.size());
  for (float x : v) put(kv_bytes_, x);
}

void GgufWriter::add_i32_array(std::string_view key, const std::vector<int32_t>& v) {
  add_key(key, GgufValueType::kArray);
  put<uint32_t>(kv_bytes_, static_cast<uint32_t>(GgufValueType::kInt32));
  put<uint64_t>(kv_bytes_, v.size());
  for (int32_t x : v) put(kv_bytes_, x);
}

void GgufWriter::add_array(std::string_view key, GgufValueType elem_type, uint64_t count,
                           const std::vector<uint8_t>& packed) {
  add_key(key, GgufValueType::kArray);
  put<uint32_t>(kv_bytes_, static_cast<uint32_t>(elem_type));
  put<uint64_t>(kv_bytes_, count);
  kv_bytes_.insert(kv_bytes_.end(), packed.begin(), packed.end());
}

void GgufWriter::add_tensor(std::string_view name, DType type, const std::vector<int64_t>& ne,
                            std::vector<uint8_t> data) {
  tensors_.push_back(Tensor{std::string(name), type, ne, std::move(data)});
}

std::vector<uint8_t> GgufWriter::serialize() const {
  const bool emit_alignment = alignment_ != 32;
  std::vector<uint8_t> out;
  put<uint32_t>(out, 0x46554747);  // "GGUF"
  put<uint32_t>(out, 3);
  put<uint64_t>(out, tensors_.size());
  put<uint64_t>(out, kv_count_ + (emit_alignment ? 1 : 0));
  if (emit_alignment) {
    put_string(out, "general.alignment");
    put<uint32_t>(out, static_cast<uint32_t>(GgufValueType::kUint32));
    put<uint32_t>(out, static_cast<uint32_t>(alignment_));
  }
  out.insert(out.end(), kv_bytes_.begin(), kv_bytes_.end());

  uint64_t offset = 0;
  for (const Tensor& t : tensors_) {
    put_string(out, t.name);
    put<uint32_t>(out, static_cast<uint32_t>(t.ne.size()));
    for (int64_t d : t.ne) put<uint64_t>(out, static_cast<uint64_t>(d));
    put<uint32_t>(out, static_cast<uint32_t>(t.type));
    put<uint64_t>(out, offset);
    offset = align_up(offset + t.data.size(), alignment_);
  }
  pad_to(out, alignment_);
  const size_t data_start = out.size();
  for (const Tensor& t : tensors_) {
    out.insert(out.end(), t.data.begin(), t.data.end());
    while ((out.size() - data_start) % alignment_ != 0) out.push_back(0);
  }
  return out;
}

Status GgufWriter::write(const std::string& path) const {
  const std::vector<uint8_t> bytes = serialize();
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return io_error("gguf: cannot create '" + tmp + "': " + std::strerror(errno));
  }
  size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return io_error("gguf: cannot write '" + tmp + "': " + std::strerror(err));
    }
    written += static_cast<size_t>(n);
  }
  const bool is_synced = ::fsync(fd) == 0;
  const int sync_err = errno;
  const bool is_closed = ::close(fd) == 0;
  if (!is_synced || !is_closed) {
    const int err = is_synced ? errno : sync_err;
    ::unlink(tmp.c_str());
    return io_error("gguf: cannot flush '" + tmp + "': " + std::strerror(err));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return io_error("gguf: cannot rename '" + tmp + "' to '" + path + "': " + std::strerror(err));
  }
  return Status::ok();
}

}  // namespace strata
