#include "weights_file.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"
#include "hparams_metadata.h"
#include "kernels/quant.h"
#include "tokenizer/tokenizer_export.h"
#include "util/dtype.h"

namespace strata::mkmodel {
namespace {

using json = nlohmann::json;
constexpr std::string_view kFormat = "strata-weights-v1";
constexpr uint64_t kMaxHeaderBytes = 64ull << 20;
constexpr int64_t kMaxDim = int64_t{1} << 31;

Status bad(const std::string& path, const std::string& what) {
  return invalid_argument("weights file " + path + ": " + what);
}

// A positive integer field of the header.
Result<int64_t> positive_int(const json& h, const char* key, const std::string& path) {
  if (!h.contains(key) || !h[key].is_number_integer() || h[key].get<int64_t>() < 1 ||
      h[key].get<int64_t>() > kMaxDim) {
    return bad(path, std::string("\"") + key + "\" must be a positive integer");
  }
  return h[key].get<int64_t>();
}

Result<float> positive_float(const json& h, const char* key, const std::string& path) {
  if (!h.contains(key) || !h[key].is_number() || !(h[key].get<double>() > 0) ||
      !std::isfinite(h[key].get<double>())) {
    return bad(path, std::string("\"") + key + "\" must be a positive number");
  }
  return static_cast<float>(h[key].get<double>());
}

struct WeightsTypeChoice {
  const char* name;
  DType dtype;
  uint32_t file_type;  // llama.cpp's llama_ftype
};
constexpr WeightsTypeChoice kWeightsTypes[] = {{"f32", DType::kF32, 0},
                                               {"f16", DType::kF16, 1},
                                               {"bf16", DType::kBF16, 32},
                                               {"q8_0", DType::kQ8_0, 7}};

}  // namespace

Result<WeightsFile> read_weights_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return io_error("weights file: cannot open " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (!in.good() && !in.eof()) return io_error("weights file: read failed: " + path);
  const std::string bytes = ss.str();

  uint64_t header_bytes = 0;
  if (bytes.size() < sizeof header_bytes) return bad(path, "shorter than its 8-byte length");
  std::memcpy(&header_bytes, bytes.data(), sizeof header_bytes);  // little-endian host
  if (header_bytes > kMaxHeaderBytes || header_bytes > bytes.size() - sizeof header_bytes) {
    return bad(path, "header length " + std::to_string(header_bytes) + " exceeds the file");
  }
  const size_t data_start = sizeof header_bytes + header_bytes;
  const size_t data_bytes = bytes.size() - data_start;

  json h;
  try {
    h = json::parse(bytes.begin() + sizeof header_bytes, bytes.begin() + data_start);
  } catch (const json::exception& e) {
    return bad(path, std::string("header is not JSON: ") + e.what());
  }
  if (!h.is_object() || h.value("format", "") != kFormat) {
    return bad(path, "\"format\" is not \"" + std::string(kFormat) + "\"");
  }
  WeightsFile w;
  w.architecture = h.value("architecture", "");
  if (w.architecture != "llama") {
    return bad(path, "architecture '" + w.architecture + "' unsupported (llama)");
  }
  w.name = h.contains("name") && h["name"].is_string() ? h["name"].get<std::string>()
                                                       : std::string("strata-trained");
  STRATA_ASSIGN_OR_RETURN(w.context_length, positive_int(h, "context_length", path));
  STRATA_ASSIGN_OR_RETURN(w.embedding_length, positive_int(h, "embedding_length", path));
  STRATA_ASSIGN_OR_RETURN(w.block_count, positive_int(h, "block_count", path));
  STRATA_ASSIGN_OR_RETURN(w.feed_forward_length, positive_int(h, "feed_forward_length", path));
  STRATA_ASSIGN_OR_RETURN(w.head_count, positive_int(h, "head_count", path));
  STRATA_ASSIGN_OR_RETURN(w.head_count_kv, positive_int(h, "head_count_kv", path));
  STRATA_ASSIGN_OR_RETURN(w.rope_freq_base, positive_float(h, "rope_freq_base", path));
  STRATA_ASSIGN_OR_RETURN(w.rms_norm_eps, positive_float(h, "rms_norm_eps", path));
  if (w.block_count > 4096 || w.head_count > 4096 || w.head_count_kv > w.head_count ||
      w.head_count % w.head_count_kv != 0 || w.embedding_length % w.head_count != 0 ||
      (w.embedding_length / w.head_count) % 2 != 0) {
    return bad(path,
               "heads must divide embedding_length into an even head_dim and be a multiple "
               "of head_count_kv");
  }

  if (!h.contains("tensors") || !h["tensors"].is_array()) return bad(path, "no \"tensors\" array");
  for (const json& t : h["tensors"]) {
    WeightsTensor tensor;
    if (!t.is_object() || !t.contains("name") || !t["name"].is_string() ||
        t["name"].get<std::string>().empty()) {
      return bad(path, "a tensor without a name");
    }
    tensor.name = t["name"].get<std::string>();
    const std::string where = "tensor " + tensor.name + ": ";
    if (t.value("dtype", "") != "f32") return bad(path, where + "dtype must be \"f32\"");
    if (!t.contains("shape") || !t["shape"].is_array() || t["shape"].empty() ||
        t["shape"].size() > 2) {
      return bad(path, where + "shape must list 1 or 2 dims");
    }
    uint64_t count = 1;
    for (const json& d : t["shape"]) {
      if (!d.is_number_integer() || d.get<int64_t>() < 1 || d.get<int64_t>() > kMaxDim) {
        return bad(path, where + "dims must be positive integers");
      }
      tensor.shape.push_back(d.get<int64_t>());
      count *= static_cast<uint64_t>(d.get<int64_t>());  // <= 2^62: no overflow
    }
    if (!t.contains("offset") || !t["offset"].is_number_unsigned()) {
      return bad(path, where + "offset must be a non-negative integer");
    }
    const uint64_t offset = t["offset"].get<uint64_t>();
    if (count > data_bytes / sizeof(float) || offset > data_bytes - count * sizeof(float)) {
      return bad(path, where + "data runs past the end of the file");
    }
    tensor.data.resize(count);
    std::memcpy(tensor.data.data(), bytes.data() + data_start + offset, count * sizeof(float));
    for (float v : tensor.data) {
      if (!std::isfinite(v)) return bad(path, where + "holds a non-finite value");
    }
    for (const WeightsTensor& other : w.tensors) {
      if (other.name == tensor.name) return bad(path, where + "appears twice");
    }
    w.tensors.push_back(std::move(tensor));
  }
  return w;
}

Status write_model_from_weights(const WeightsFile& w, const std::string& type,
                                const std::string& tokenizer_json, const std::string& out_path) {
  const WeightsTypeChoice* choice = nullptr;
  for (const WeightsTypeChoice& t : kWeightsTypes) {
    if (type == t.name) choice = &t;
  }
  if (choice == nullptr) {
    return invalid_argument("mkmodel --weights: --type '" + type + "' unknown (f32 f16 bf16 q8_0)");
  }
  if (tokenizer_json.empty()) {
    return invalid_argument("mkmodel --weights: --tokenizer-json is required");
  }
  const std::string& a = w.architecture;
  const int64_t head_dim = w.embedding_length / w.head_count;

  GgufWriter g;
  write_hparams_metadata({a, w.name, choice->file_type, w.context_length, w.embedding_length,
                          w.block_count, w.feed_forward_length, w.head_count, w.head_count_kv,
                          head_dim, w.rms_norm_eps, w.rope_freq_base},
                         g);
  STRATA_RETURN_IF_ERROR(export_hf_tokenizer_to_gguf(tokenizer_json, g));
  const std::vector<uint8_t> head = g.serialize();
  STRATA_ASSIGN_OR_RETURN(GgufFile parsed, GgufFile::parse(head.data(), head.size()));
  const GgufValue* tokens = parsed.get_array("tokenizer.ggml.tokens");
  if (tokens == nullptr || tokens->count == 0) {
    return invalid_argument("mkmodel: " + tokenizer_json + " exported no tokens");
  }
  const auto vocab = static_cast<int64_t>(tokens->count);

  // The shape each tensor must have ([rows, cols] or [n]).
  const int64_t d = w.embedding_length, ffn = w.feed_forward_length;
  const int64_t q_dim = w.head_count * head_dim, kv_dim = w.head_count_kv * head_dim;
  std::map<std::string, std::vector<int64_t>> want = {{"token_embd.weight", {vocab, d}},
                                                      {"output_norm.weight", {d}}};
  for (int64_t il = 0; il < w.block_count; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    want[p + "attn_norm.weight"] = {d};
    want[p + "attn_q.weight"] = {q_dim, d};
    want[p + "attn_k.weight"] = {kv_dim, d};
    want[p + "attn_v.weight"] = {kv_dim, d};
    want[p + "attn_output.weight"] = {d, q_dim};
    want[p + "ffn_norm.weight"] = {d};
    want[p + "ffn_gate.weight"] = {ffn, d};
    want[p + "ffn_up.weight"] = {ffn, d};
    want[p + "ffn_down.weight"] = {d, ffn};
  }
  size_t num_required_seen = 0;
  for (const WeightsTensor& t : w.tensors) {
    std::vector<int64_t> expected;
    if (t.name == "output.weight") {  // optional: absent means a tied head
      expected = {vocab, d};
    } else if (auto it = want.find(t.name); it != want.end()) {
      expected = it->second;
      ++num_required_seen;
    } else {
      return invalid_argument("mkmodel --weights: unexpected tensor " + t.name);
    }
    if (t.shape != expected) {
      return invalid_argument("mkmodel --weights: tensor " + t.name +
                              " has a shape other than the hyperparameters (and the "
                              "tokenizer's vocabulary of " +
                              std::to_string(vocab) + ") imply");
    }
  }
  if (num_required_seen != want.size()) {
    return invalid_argument(
        "mkmodel --weights: " + std::to_string(want.size() - num_required_seen) +
        " required tensors missing");
  }

  for (const WeightsTensor& t : w.tensors) {
    const int64_t cols = t.shape.back();
    const int64_t rows = t.shape.size() == 2 ? t.shape[0] : 1;
    DType dt = t.shape.size() == 2 ? choice->dtype : DType::kF32;
    if (cols % dtype_traits(dt).block_elems != 0) dt = DType::kF16;
    std::vector<int64_t> ne(t.shape.rbegin(), t.shape.rend());
    g.add_tensor(t.name, dt, ne, quantize_rows(dt, t.data.data(), rows, cols));
  }
  return g.write(out_path);
}

Status convert_weights_file(const std::string& weights_path, const std::string& type,
                            const std::string& tokenizer_json, const std::string& out_path) {
  STRATA_ASSIGN_OR_RETURN(WeightsFile weights, read_weights_file(weights_path));
  return write_model_from_weights(weights, type, tokenizer_json, out_path);
}

}  // namespace strata::mkmodel
