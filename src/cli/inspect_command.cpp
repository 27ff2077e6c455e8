// `strata inspect MODEL.gguf`: metadata and tensor table of a GGUF file.
#include <cstdio>
#include <filesystem>
#include <string>

#include "cli/commands.h"
#include "gguf/gguf.h"
#include "util/status.h"

namespace strata::cli {

std::string default_model_path() {
  const std::filesystem::path committed =
      std::filesystem::path(STRATA_SOURCE_DIR) / "models" / "default.gguf";
  if (std::filesystem::exists(committed)) return committed.string();
  return (std::filesystem::path(STRATA_BINARY_DIR) / "models" / "default.gguf").string();
}

int fail(const Status& s) {
  std::fprintf(stderr, "error: %s\n", s.message().c_str());
  return 1;
}

namespace {

// Printable form of a string: control bytes escaped, long strings cut.
std::string printable(std::string_view s, size_t max_chars) {
  std::string out;
  for (unsigned char c : s.substr(0, max_chars)) {
    if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (s.size() > max_chars) out += "...";
  return out;
}

std::string scalar_to_string(const GgufValue& v) {
  switch (v.type) {
    case GgufValueType::kUint8:
    case GgufValueType::kUint16:
    case GgufValueType::kUint32:
    case GgufValueType::kUint64:
      return std::to_string(v.u64);
    case GgufValueType::kInt8:
    case GgufValueType::kInt16:
    case GgufValueType::kInt32:
    case GgufValueType::kInt64:
      return std::to_string(v.i64);
    case GgufValueType::kFloat32:
    case GgufValueType::kFloat64: {
      char buf[64];
      std::snprintf(buf, sizeof(buf), "%g", v.f64);
      return buf;
    }
    case GgufValueType::kBool:
      return v.b ? "true" : "false";
    case GgufValueType::kString:
      return "\"" + printable(v.str, 120) + "\"";
    case GgufValueType::kArray:
      break;
  }
  return "?";
}

std::string value_to_string(const GgufValue& v, bool all) {
  if (v.type != GgufValueType::kArray) return scalar_to_string(v);
  const uint64_t shown = all ? v.count : std::min<uint64_t>(v.count, 8);
  std::string out = "[" + std::string(gguf_value_type_name(v.elem_type)) + " x " +
                    std::to_string(v.count) + "] [";
  for (uint64_t i = 0; i < shown; ++i) {
    if (i) out += ", ";
    if (v.elem_type == GgufValueType::kString) {
      out += "\"" + printable(v.strings[i], 40) + "\"";
    } else if (v.elem_type == GgufValueType::kFloat32 || v.elem_type == GgufValueType::kFloat64) {
      char buf[64];
      std::snprintf(buf, sizeof(buf), "%g", v.float_at(i));
      out += buf;
    } else {
      out += std::to_string(v.int_at(i));
    }
  }
  if (shown < v.count) out += ", ...";
  return out + "]";
}

}  // namespace

int run_inspect(const InspectOptions& opt) {
  Result<GgufFile> file = GgufFile::open(opt.model_path);
  if (!file) {
    std::fprintf(stderr, "error: %s\n", file.status().message().c_str());
    return 1;
  }
  const GgufFile& f = *file;
  std::printf("file: %s\nGGUF version %u, %zu bytes, alignment %llu, data at offset %llu\n",
              opt.model_path.c_str(), f.version(), f.file_size(),
              static_cast<unsigned long long>(f.alignment()),
              static_cast<unsigned long long>(f.data_offset()));
  std::printf("\nmetadata (%zu keys):\n", f.metadata().size());
  for (const auto& [key, value] : f.metadata()) {
    std::printf("  %-44s %s\n", key.c_str(),
                value_to_string(value, opt.show_all_array_elements).c_str());
  }
  uint64_t total_bytes = 0;
  int64_t total_params = 0;
  std::printf("\ntensors (%zu):\n", f.tensors().size());
  std::printf("  %-36s %-6s %-28s %14s %12s\n", "name", "type", "shape", "offset", "bytes");
  for (const GgufTensor& t : f.tensors()) {
    std::string shape = "[";
    for (uint32_t d = 0; d < t.n_dims; ++d) {
      if (d) shape += ", ";
      shape += std::to_string(t.ne[d]);
    }
    shape += "]";
    std::printf("  %-36s %-6s %-28s %14llu %12llu\n", t.name.c_str(),
                std::string(dtype_name(t.type)).c_str(), shape.c_str(),
                static_cast<unsigned long long>(t.offset),
                static_cast<unsigned long long>(t.nbytes));
    total_bytes += t.nbytes;
    total_params += t.n_elements();
  }
  std::printf("\n%lld parameters, %.2f MiB of tensor data\n", static_cast<long long>(total_params),
              total_bytes / (1024.0 * 1024.0));
  return 0;
}

}  // namespace strata::cli
