// strata-mkmodel's trained-weights input (tools/mkmodel/weights_file.h):
// a round trip to GGUF, and rejection of malformed files by Status.
#include "weights_file.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "kernels/quant.h"
#include "model/model_weights.h"

namespace strata::mkmodel {
namespace {

using json = nlohmann::json;

const std::string kTokenizerJson = std::string(STRATA_SOURCE_DIR) + "/models/demo-tokenizer.json";
constexpr int64_t kVocab = 4096;  // the demo tokenizer's
constexpr int64_t kHidden = 64, kFfn = 96, kHeads = 4, kKvHeads = 2, kLayers = 2;
constexpr int64_t kHeadDim = kHidden / kHeads;

std::string temp_path(const std::string& name) {
  const auto dir = std::filesystem::path(STRATA_BINARY_DIR) / "test_demo_tmp";
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

// A weights file under construction: tensors with deterministic values.
struct Builder {
  json header = {
      {"format", "strata-weights-v1"}, {"architecture", "llama"},     {"name", "test"},
      {"context_length", 64},          {"embedding_length", kHidden}, {"block_count", kLayers},
      {"feed_forward_length", kFfn},   {"head_count", kHeads},        {"head_count_kv", kKvHeads},
      {"rope_freq_base", 10000.0},     {"rms_norm_eps", 1e-5},        {"tensors", json::array()}};
  std::vector<float> data;

  void add(const std::string& name, std::vector<int64_t> shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    header["tensors"].push_back(
        {{"name", name}, {"shape", shape}, {"dtype", "f32"}, {"offset", data.size() * 4}});
    for (int64_t i = 0; i < n; ++i) {
      data.push_back(static_cast<float>(std::sin(0.37 * static_cast<double>(data.size() + 1))));
    }
  }

  void add_model() {
    add("token_embd.weight", {kVocab, kHidden});
    add("output_norm.weight", {kHidden});
    add("output.weight", {kVocab, kHidden});
    for (int il = 0; il < kLayers; ++il) {
      const std::string p = "blk." + std::to_string(il) + ".";
      add(p + "attn_norm.weight", {kHidden});
      add(p + "attn_q.weight", {kHeads * kHeadDim, kHidden});
      add(p + "attn_k.weight", {kKvHeads * kHeadDim, kHidden});
      add(p + "attn_v.weight", {kKvHeads * kHeadDim, kHidden});
      add(p + "attn_output.weight", {kHidden, kHeads * kHeadDim});
      add(p + "ffn_norm.weight", {kHidden});
      add(p + "ffn_gate.weight", {kFfn, kHidden});
      add(p + "ffn_up.weight", {kFfn, kHidden});
      add(p + "ffn_down.weight", {kHidden, kFfn});
    }
  }

  std::string write(const std::string& name, const std::string& header_text) const {
    const std::string path = temp_path(name);
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    const uint64_t n = header_text.size();
    f.write(reinterpret_cast<const char*>(&n), sizeof n);
    f << header_text;
    f.write(reinterpret_cast<const char*>(data.data()),
            static_cast<std::streamsize>(data.size() * sizeof(float)));
    return path;
  }
  std::string write(const std::string& name) const { return write(name, header.dump()); }
};

TEST(WeightsFile, RoundTripsToAGgufTheRunnerLoads) {
  Builder b;
  b.add_model();
  Result<WeightsFile> w = read_weights_file(b.write("ok.weights"));
  ASSERT_TRUE(w.is_ok()) << w.status().message();
  EXPECT_EQ(w->tensors.size(), 3u + 9u * kLayers);
  const std::string out = temp_path("ok.gguf");
  const Status st = write_model_from_weights(*w, "f16", kTokenizerJson, out);
  ASSERT_TRUE(st.is_ok()) << st.message();

  Result<ModelWeights> m = ModelWeights::open(out);
  ASSERT_TRUE(m.is_ok()) << m.status().message();
  EXPECT_EQ(m->config().vocab_size, kVocab);
  EXPECT_EQ(m->config().num_layers, kLayers);
  const GgufFile& g = m->file();
  // 2-D weights in F16 with GGUF's reversed dims, norms in F32, values as
  // written (F16-rounded).
  const GgufTensor* q = g.tensor("blk.1.attn_q.weight");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->type, DType::kF16);
  EXPECT_EQ(q->ne[0], kHidden);
  EXPECT_EQ(q->ne[1], kHeads * kHeadDim);
  const WeightsTensor* src = nullptr;
  for (const WeightsTensor& t : w->tensors) {
    if (t.name == "blk.1.attn_q.weight") src = &t;
  }
  ASSERT_NE(src, nullptr);
  std::vector<float> row(kHidden);
  dequantize_row(DType::kF16, q->data, row.data(), kHidden);
  for (int64_t i = 0; i < kHidden; ++i) EXPECT_NEAR(row[i], src->data[i], 1e-3);
  const GgufTensor* norm = g.tensor("output_norm.weight");
  ASSERT_NE(norm, nullptr);
  EXPECT_EQ(norm->type, DType::kF32);
}

TEST(WeightsFile, RejectsMalformedFiles) {
  Builder good;
  good.add_model();
  auto expect_rejected = [](const std::string& path, const std::string& why) {
    Result<WeightsFile> w = read_weights_file(path);
    EXPECT_FALSE(w.is_ok()) << why;
  };
  expect_rejected(temp_path("does-not-exist.weights"), "missing file");
  {
    const std::string path = temp_path("short.weights");
    std::ofstream(path, std::ios::binary) << "abc";
    expect_rejected(path, "shorter than the length field");
  }
  {
    // Header length past the end of the file.
    const std::string path = temp_path("long-header.weights");
    std::ofstream f(path, std::ios::binary);
    const uint64_t n = 1000;
    f.write(reinterpret_cast<const char*>(&n), sizeof n);
    f << "{}";
    f.close();
    expect_rejected(path, "header length");
  }
  expect_rejected(good.write("not-json.weights", "{\"format\": "), "truncated JSON");
  {
    Builder b = good;
    b.header["format"] = "something-else";
    expect_rejected(b.write("format.weights"), "format");
  }
  {
    Builder b = good;
    b.header["head_count_kv"] = 3;
    expect_rejected(b.write("kv.weights"), "heads not a multiple of kv heads");
  }
  {
    Builder b = good;
    b.header["tensors"][2]["offset"] = b.data.size() * 4;
    expect_rejected(b.write("offset.weights"), "data past the end");
  }
  {
    Builder b = good;
    b.header["tensors"][1]["shape"] = {kHidden, -1};
    expect_rejected(b.write("dims.weights"), "negative dim");
  }
  {
    Builder b = good;
    b.header["tensors"][1]["dtype"] = "f16";
    expect_rejected(b.write("dtype.weights"), "dtype");
  }
  {
    Builder b = good;
    b.data[5] = std::numeric_limits<float>::quiet_NaN();
    expect_rejected(b.write("nan.weights"), "NaN");
  }
  {
    Builder b = good;
    b.header["tensors"][1]["name"] = "token_embd.weight";
    expect_rejected(b.write("dup.weights"), "duplicate name");
  }
}

TEST(WeightsFile, WriterChecksShapesNamesAndType) {
  auto rejected = [](const Builder& b, const std::string& type, const std::string& why) {
    Result<WeightsFile> w = read_weights_file(b.write("writer.weights"));
    ASSERT_TRUE(w.is_ok()) << w.status().message();
    const Status st = write_model_from_weights(*w, type, kTokenizerJson, temp_path("w.gguf"));
    EXPECT_FALSE(st.is_ok()) << why;
  };
  Builder good;
  good.add_model();
  rejected(good, "q4_k", "unsupported type");
  {
    Builder b;
    b.add_model();
    b.header["feed_forward_length"] = kFfn + 32;
    rejected(b, "f16", "shape disagrees with the hyperparameters");
  }
  {
    Builder b;
    b.add_model();
    b.header["tensors"].erase(b.header["tensors"].size() - 1);
    rejected(b, "f16", "a required tensor missing");
  }
  {
    Builder b;
    b.add_model();
    b.add("blk.9.attn_q.weight", {kHidden, kHidden});
    rejected(b, "f16", "an unexpected tensor");
  }
  {
    Result<WeightsFile> w = read_weights_file(good.write("writer.weights"));
    ASSERT_TRUE(w.is_ok());
    EXPECT_FALSE(write_model_from_weights(*w, "f16", "", temp_path("w.gguf")).is_ok());
  }
}

}  // namespace
}  // namespace strata::mkmodel
