// The fuzzer's seed corpus (fuzz/corpus/gguf/): small valid_* files that must
// parse and invalid_* files that must be rejected. The files are generated
// here; run with STRATA_WRITE_GGUF_CORPUS=1 to (re)write them, otherwise the
// committed files are checked against what the generator produces.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>

#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"
#include "gguf_bytes.h"

namespace strata {
namespace {

std::vector<uint8_t> filled(size_t n, uint8_t v) {
  return std::vector<uint8_t>(n, v);
}

std::map<std::string, std::vector<uint8_t>> make_corpus() {
  std::map<std::string, std::vector<uint8_t>> files;
  {
    GgufWriter w;
    w.add_string("general.architecture", "llama");
    w.add_u8("a.u8", 1);
    w.add_i8("a.i8", -1);
    w.add_u16("a.u16", 2);
    w.add_i16("a.i16", -2);
    w.add_u32("llama.block_count", 2);
    w.add_i32("a.i32", -3);
    w.add_f32("llama.rope.freq_base", 10000.0f);
    w.add_bool("a.bool", true);
    w.add_u64("a.u64", 4);
    w.add_i64("a.i64", -4);
    w.add_f64("a.f64", 0.5);
    w.add_string_array("tokenizer.ggml.tokens", {"<s>", "</s>", "a", "b"});
    w.add_f32_array("tokenizer.ggml.scores", {0, 0, -1, -2});
    w.add_i32_array("tokenizer.ggml.token_type", {3, 3, 1, 1});
    w.add_array("a.bools", GgufValueType::kBool, 2, {0, 1});
    // Floats that do not fit in int64 (int_at must saturate, not hit UB).
    w.add_f32_array("a.extreme", {1e30f, -1e30f, std::numeric_limits<float>::quiet_NaN(),
                                  std::numeric_limits<float>::infinity()});
    files["valid_metadata.gguf"] = w.serialize();
  }
  {
    GgufWriter w;
    const uint32_t kRawTypes[] = {0,  1,  2,  3,  6,  7,  8,  9,  10, 11,
                                  12, 13, 14, 15, 24, 25, 26, 27, 28, 30};
    for (uint32_t raw : kRawTypes) {
      const DTypeTraits tr = *dtype_traits(raw);
      const int64_t ne0 = tr.block_elems == 1 ? 3 : tr.block_elems;
      w.add_tensor("t." + std::string(tr.name), tr.type, {ne0, 2},
                   filled(dtype_row_bytes(tr.type, ne0) * 2, static_cast<uint8_t>(raw)));
    }
    files["valid_every_dtype.gguf"] = w.serialize();
  }
  {
    GgufWriter w(64);
    w.add_string("general.name", "aligned");
    w.add_tensor("token_embd.weight", DType::kQ8_0, {32, 3}, filled(34 * 3, 7));
    w.add_tensor("output_norm.weight", DType::kF32, {5}, filled(20, 1));
    files["valid_align64.gguf"] = w.serialize();
  }
  {
    testing::GgufBytes g;
    g.header(1, 1, 2).key("general.name", 8).str("v2");
    g.tensor_info("w", {2, 2}, 1, 0).pad().zeros(8);
    files["valid_v2.gguf"] = g.bytes;
  }
  {
    testing::GgufBytes g;
    g.header(2, 0).tensor_info("a", {16}, 0, 0).tensor_info("b", {8}, 0, 32).pad().zeros(128);
    files["invalid_overlap.gguf"] = g.bytes;
  }
  {
    testing::GgufBytes g;
    g.header(1, 0).tensor_info("w", {1u << 20}, 0, 0).pad().zeros(64);
    files["invalid_range.gguf"] = g.bytes;
  }
  {
    testing::GgufBytes g;
    g.header(0, 1).key("nested", 9).u32(9).u64(1).u32(0).u64(2).u8(1).u8(2);
    files["invalid_nested_array.gguf"] = g.bytes;
  }
  {
    testing::GgufBytes g;
    g.header(0, 1).key("tokenizer.ggml.tokens", 9).u32(8).u64(uint64_t{1} << 60).zeros(32);
    files["invalid_string_count.gguf"] = g.bytes;
  }
  {
    testing::GgufBytes g;
    g.header(1, 0).tensor_info("w", {uint64_t{1} << 40, uint64_t{1} << 40}, 0, 0).pad().zeros(32);
    files["invalid_dims_overflow.gguf"] = g.bytes;
  }
  {
    std::vector<uint8_t> img = files["valid_metadata.gguf"];
    img.resize(img.size() / 2);
    files["invalid_truncated.gguf"] = img;
  }
  return files;
}

std::filesystem::path corpus_dir() {
  return std::filesystem::path(STRATA_SOURCE_DIR) / "fuzz" / "corpus" / "gguf";
}

TEST(GgufCorpus, SeedsAreSmallAndClassifiedCorrectly) {
  const auto files = make_corpus();
  for (const auto& [name, bytes] : files) {
    EXPECT_LT(bytes.size(), 16u * 1024) << name;
    const bool is_valid = name.rfind("valid_", 0) == 0;
    Result<GgufFile> f = GgufFile::parse(bytes.data(), bytes.size());
    EXPECT_EQ(f.is_ok(), is_valid) << name << ": " << f.status().message();
  }
}

TEST(GgufCorpus, CommittedSeedsMatchTheGenerator) {
  const auto files = make_corpus();
  const char* write_env = std::getenv("STRATA_WRITE_GGUF_CORPUS");
  if (write_env != nullptr && std::string(write_env) == "1") {
    std::filesystem::create_directories(corpus_dir());
    for (const auto& [name, bytes] : files) {
      std::ofstream out(corpus_dir() / name, std::ios::binary);
      out.write(reinterpret_cast<const char*>(bytes.data()),
                static_cast<std::streamsize>(bytes.size()));
    }
  }
  for (const auto& [name, bytes] : files) {
    std::ifstream in(corpus_dir() / name, std::ios::binary);
    ASSERT_TRUE(in.good()) << "missing seed " << name
                           << " (regenerate with STRATA_WRITE_GGUF_CORPUS=1 test_gguf)";
    const std::vector<uint8_t> on_disk((std::istreambuf_iterator<char>(in)),
                                       std::istreambuf_iterator<char>());
    EXPECT_EQ(on_disk, bytes) << name << " differs from the generator";
  }
}

}  // namespace
}  // namespace strata
