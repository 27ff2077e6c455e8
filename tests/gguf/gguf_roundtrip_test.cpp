// Valid files: writer -> parse round trips, every value type and dtype, open().
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>

#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"
#include "gguf_bytes.h"

namespace strata {
namespace {

std::vector<uint8_t> pattern_bytes(size_t n, uint8_t seed) {
  std::vector<uint8_t> b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(seed + i * 7);
  return b;
}

std::string temp_path(const std::string& stem) {
  return (std::filesystem::temp_directory_path() /
          (stem + "." + std::to_string(getpid()) + ".gguf"))
      .string();
}

TEST(GgufRoundTrip, AllScalarValueTypes) {
  GgufWriter w;
  w.add_u8("k.u8", 200);
  w.add_i8("k.i8", -100);
  w.add_u16("k.u16", 65000);
  w.add_i16("k.i16", -32000);
  w.add_u32("k.u32", 4000000000u);
  w.add_i32("k.i32", -2000000000);
  w.add_f32("k.f32", 1.5f);
  w.add_bool("k.bool", true);
  w.add_string("k.str", "héllo");
  w.add_u64("k.u64", std::numeric_limits<uint64_t>::max());
  w.add_i64("k.i64", std::numeric_limits<int64_t>::min());
  w.add_f64("k.f64", -2.25);
  const std::vector<uint8_t> img = w.serialize();
  Result<GgufFile> f = GgufFile::parse(img.data(), img.size());
  ASSERT_TRUE(f.is_ok()) << f.status().message();
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->alignment(), 32u);
  ASSERT_EQ(f->metadata().size(), 12u);
  EXPECT_EQ(f->metadata()[0].first, "k.u8");
  EXPECT_EQ(f->metadata()[11].first, "k.f64");

  EXPECT_EQ(f->get_uint("k.u8"), 200u);
  EXPECT_EQ(f->get_int("k.i8"), -100);
  EXPECT_EQ(f->get_uint("k.u16"), 65000u);
  EXPECT_EQ(f->get_int("k.i16"), -32000);
  EXPECT_EQ(f->get_uint("k.u32"), 4000000000u);
  EXPECT_EQ(f->get_int("k.u32"), 4000000000);  // unsigned that fits
  EXPECT_EQ(f->get_int("k.i32"), -2000000000);
  EXPECT_EQ(f->get_uint("k.i32"), std::nullopt);  // negative: does not fit
  EXPECT_EQ(f->get_float("k.f32"), 1.5);
  EXPECT_EQ(f->get_float("k.i32"), -2000000000.0);  // integers convert
  EXPECT_EQ(f->get_bool("k.bool"), true);
  EXPECT_EQ(f->get_string("k.str"), "héllo");
  EXPECT_EQ(f->get_uint("k.u64"), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(f->get_int("k.u64"), std::nullopt);  // too large for int64
  EXPECT_EQ(f->get_int("k.i64"), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(f->get_float("k.f64"), -2.25);
  EXPECT_EQ(f->find("k.f64")->type, GgufValueType::kFloat64);

  // Wrong-type and missing lookups.
  EXPECT_EQ(f->get_string("k.u8"), std::nullopt);
  EXPECT_EQ(f->get_bool("k.u8"), std::nullopt);
  EXPECT_EQ(f->get_uint("k.str"), std::nullopt);
  EXPECT_EQ(f->get_float("k.str"), std::nullopt);
  EXPECT_EQ(f->get_uint("missing"), std::nullopt);
  EXPECT_EQ(f->find("missing"), nullptr);
  EXPECT_EQ(f->get_array("k.u8"), nullptr);
  EXPECT_TRUE(f->tensors().empty());
}

TEST(GgufRoundTrip, Arrays) {
  GgufWriter w;
  w.add_string_array("tok.tokens", {"a", "", "long token with spaces", std::string("\0z", 2)});
  w.add_f32_array("tok.scores", {0.5f, -1.0f, 3.25f});
  w.add_i32_array("tok.types", {1, -2, 3, 2147483647});
  w.add_array("arr.u16", GgufValueType::kUint16, 3, {1, 0, 0xff, 0xff, 0x34, 0x12});
  w.add_array("arr.bool", GgufValueType::kBool, 3, {1, 0, 1});
  w.add_array("arr.empty", GgufValueType::kInt64, 0, {});
  w.add_string_array("arr.nostrings", {});
  const std::vector<uint8_t> img = w.serialize();
  Result<GgufFile> f = GgufFile::parse(img.data(), img.size());
  ASSERT_TRUE(f.is_ok()) << f.status().message();

  const GgufValue* tokens = f->get_array("tok.tokens");
  ASSERT_NE(tokens, nullptr);
  EXPECT_EQ(tokens->elem_type, GgufValueType::kString);
  ASSERT_EQ(tokens->count, 4u);
  ASSERT_EQ(tokens->strings.size(), 4u);
  EXPECT_EQ(tokens->strings[0], "a");
  EXPECT_EQ(tokens->strings[1], "");
  EXPECT_EQ(tokens->strings[2], "long token with spaces");
  EXPECT_EQ(tokens->strings[3], std::string_view("\0z", 2));

  const GgufValue* scores = f->get_array("tok.scores");
  ASSERT_NE(scores, nullptr);
  ASSERT_EQ(scores->count, 3u);
  EXPECT_EQ(scores->float_at(0), 0.5);
  EXPECT_EQ(scores->float_at(1), -1.0);
  EXPECT_EQ(scores->float_at(2), 3.25);

  const GgufValue* types = f->get_array("tok.types");
  ASSERT_NE(types, nullptr);
  EXPECT_EQ(types->int_at(1), -2);
  EXPECT_EQ(types->int_at(3), 2147483647);
  EXPECT_EQ(types->float_at(1), -2.0);

  const GgufValue* u16 = f->get_array("arr.u16");
  ASSERT_NE(u16, nullptr);
  EXPECT_EQ(u16->int_at(0), 1);
  EXPECT_EQ(u16->int_at(1), 65535);
  EXPECT_EQ(u16->int_at(2), 0x1234);

  const GgufValue* bools = f->get_array("arr.bool");
  ASSERT_NE(bools, nullptr);
  EXPECT_EQ(bools->int_at(0), 1);
  EXPECT_EQ(bools->int_at(1), 0);

  EXPECT_EQ(f->get_array("arr.empty")->count, 0u);
  EXPECT_EQ(f->get_array("arr.nostrings")->count, 0u);
}

TEST(GgufRoundTrip, IntAtSaturatesFloatsOutsideInt64) {
  GgufWriter w;
  w.add_f32_array("f", {1e30f, -1e30f, std::numeric_limits<float>::quiet_NaN(), -2.75f, 2.75f});
  w.add_array("d", GgufValueType::kFloat64, 1, {0, 0, 0, 0, 0, 0, 0xe0, 0x43});  // 2^63 exactly
  const std::vector<uint8_t> img = w.serialize();
  Result<GgufFile> f = GgufFile::parse(img.data(), img.size());
  ASSERT_TRUE(f.is_ok()) << f.status().message();
  const GgufValue* a = f->get_array("f");
  EXPECT_EQ(a->int_at(0), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(a->int_at(1), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(a->int_at(2), 0);
  EXPECT_EQ(a->int_at(3), -2);
  EXPECT_EQ(a->int_at(4), 2);
  EXPECT_TRUE(std::isnan(a->float_at(2)));
  EXPECT_EQ(f->get_array("d")->int_at(0), std::numeric_limits<int64_t>::max());
}

// One small tensor of each dtype, with odd shapes, every byte checked.
TEST(GgufRoundTrip, TensorOfEveryDtype) {
  const uint32_t kRawTypes[] = {0,  1,  2,  3,  6,  7,  8,  9,  10, 11,
                                12, 13, 14, 15, 24, 25, 26, 27, 28, 30};
  GgufWriter w;
  w.add_string("general.architecture", "llama");
  std::vector<std::vector<uint8_t>> datas;
  for (uint32_t raw : kRawTypes) {
    const std::optional<DTypeTraits> tr = dtype_traits(raw);
    ASSERT_TRUE(tr.has_value()) << raw;
    const int64_t ne0 = 3 * static_cast<int64_t>(tr->block_elems);
    const std::vector<int64_t> ne = {ne0, 5, 1};
    const size_t nbytes = dtype_row_bytes(tr->type, ne0) * 5;
    datas.push_back(pattern_bytes(nbytes, static_cast<uint8_t>(raw)));
    w.add_tensor("t." + std::string(tr->name), tr->type, ne, datas.back());
  }
  const std::vector<uint8_t> img = w.serialize();
  Result<GgufFile> f = GgufFile::parse(img.data(), img.size());
  ASSERT_TRUE(f.is_ok()) << f.status().message();
  ASSERT_EQ(f->tensors().size(), std::size(kRawTypes));
  EXPECT_EQ(f->data_offset() % 32, 0u);
  for (size_t i = 0; i < std::size(kRawTypes); ++i) {
    const GgufTensor& t = f->tensors()[i];
    const DTypeTraits tr = *dtype_traits(kRawTypes[i]);
    EXPECT_EQ(t.name, "t." + std::string(tr.name));
    EXPECT_EQ(f->tensor(t.name), &t);
    EXPECT_EQ(t.type, tr.type);
    EXPECT_EQ(t.n_dims, 3u);
    EXPECT_EQ(t.ne[0], 3 * static_cast<int64_t>(tr.block_elems));
    EXPECT_EQ(t.ne[1], 5);
    EXPECT_EQ(t.ne[2], 1);
    EXPECT_EQ(t.ne[3], 1);
    EXPECT_EQ(t.n_elements(), 15 * static_cast<int64_t>(tr.block_elems));
    EXPECT_EQ(t.nbytes, datas[i].size());
    EXPECT_EQ(t.offset % 32, 0u);
    ASSERT_EQ(t.data, img.data() + f->data_offset() + t.offset);
    EXPECT_EQ(std::vector<uint8_t>(t.data, t.data + t.nbytes), datas[i]) << t.name;
  }
  EXPECT_EQ(f->tensor("absent"), nullptr);
}

TEST(GgufRoundTrip, CustomAlignmentIsEmittedAndHonoured) {
  for (uint64_t alignment : {1u, 8u, 64u, 4096u}) {
    GgufWriter w(alignment);
    w.add_tensor("a", DType::kF32, {3}, pattern_bytes(12, 1));
    w.add_tensor("b", DType::kF16, {7, 3}, pattern_bytes(42, 2));
    const std::vector<uint8_t> img = w.serialize();
    Result<GgufFile> f = GgufFile::parse(img.data(), img.size());
    ASSERT_TRUE(f.is_ok()) << f.status().message();
    EXPECT_EQ(f->alignment(), alignment);
    EXPECT_EQ(f->get_uint("general.alignment"), alignment);
    EXPECT_EQ(f->data_offset() % alignment, 0u);
    for (const GgufTensor& t : f->tensors()) EXPECT_EQ(t.offset % alignment, 0u);
    EXPECT_EQ(f->tensor("b")->data[0], pattern_bytes(42, 2)[0]);
  }
}

TEST(GgufRoundTrip, Version2IsAccepted) {
  testing::GgufBytes g;
  g.header(1, 1, /*version=*/2).key("general.name", 8).str("v2");
  g.tensor_info("w", {4}, 0, 0).pad().zeros(16);
  Result<GgufFile> f = GgufFile::parse(g.bytes.data(), g.bytes.size());
  ASSERT_TRUE(f.is_ok()) << f.status().message();
  EXPECT_EQ(f->version(), 2u);
  EXPECT_EQ(f->get_string("general.name"), "v2");
  EXPECT_EQ(f->tensor("w")->nbytes, 16u);
}

TEST(GgufRoundTrip, MetadataOnlyFileNeedsNoPadding) {
  testing::GgufBytes g;
  g.header(0, 1).key("a", 4).u32(7);  // 33 bytes: not a multiple of 32
  Result<GgufFile> f = GgufFile::parse(g.bytes.data(), g.bytes.size());
  ASSERT_TRUE(f.is_ok()) << f.status().message();
  EXPECT_EQ(f->get_uint("a"), 7u);
}

TEST(GgufRoundTrip, TensorsMayAppearInAnyOffsetOrderWithGaps) {
  testing::GgufBytes g;
  g.header(2, 0);
  g.tensor_info("late", {8}, 0, 64).tensor_info("early", {4}, 0, 0);
  g.pad().zeros(96);
  Result<GgufFile> f = GgufFile::parse(g.bytes.data(), g.bytes.size());
  ASSERT_TRUE(f.is_ok()) << f.status().message();
  EXPECT_EQ(f->tensors()[0].name, "late");
  EXPECT_EQ(f->tensor("late")->offset, 64u);
}

TEST(GgufRoundTrip, WriteThenOpenMapsTheFile) {
  GgufWriter w;
  w.add_string("general.architecture", "qwen2");
  w.add_u32("qwen2.block_count", 2);
  w.add_tensor("token_embd.weight", DType::kQ8_0, {64, 3}, pattern_bytes(34 * 2 * 3, 9));
  const std::string path = temp_path("strata_gguf_roundtrip");
  ASSERT_TRUE(w.write(path).is_ok());
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp." + std::to_string(getpid())));
  {
    Result<GgufFile> f = GgufFile::open(path);
    ASSERT_TRUE(f.is_ok()) << f.status().message();
    EXPECT_EQ(f->file_size(), std::filesystem::file_size(path));
    EXPECT_EQ(f->get_string("general.architecture"), "qwen2");
    const GgufTensor* t = f->tensor("token_embd.weight");
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(std::vector<uint8_t>(t->data, t->data + t->nbytes), pattern_bytes(204, 9));
    // Moving keeps the mapping and the views valid.
    GgufFile moved = std::move(f.value());
    EXPECT_EQ(moved.get_string("general.architecture"), "qwen2");
    EXPECT_EQ(moved.tensor("token_embd.weight")->data[5], pattern_bytes(204, 9)[5]);
  }
  std::filesystem::remove(path);
}

TEST(GgufOpen, MissingFileFailsCleanly) {
  Result<GgufFile> f = GgufFile::open("/nonexistent/dir/model.gguf");
  ASSERT_FALSE(f.is_ok());
  EXPECT_EQ(f.status().code(), StatusCode::kNotFound);
  EXPECT_NE(f.status().message().find("/nonexistent/dir/model.gguf"), std::string::npos);
}

TEST(GgufOpen, EmptyFileFailsCleanly) {
  const std::string path = temp_path("strata_gguf_empty");
  { std::ofstream(path, std::ios::binary); }
  Result<GgufFile> f = GgufFile::open(path);
  ASSERT_FALSE(f.is_ok());
  EXPECT_NE(f.status().message().find("empty"), std::string::npos) << f.status().message();
  std::filesystem::remove(path);
}

TEST(GgufOpen, DirectoryFailsCleanly) {
  Result<GgufFile> f = GgufFile::open(std::filesystem::temp_directory_path().string());
  ASSERT_FALSE(f.is_ok());
  EXPECT_NE(f.status().message().find("not a regular file"), std::string::npos)
      << f.status().message();
}

TEST(GgufOpen, InvalidFileNamesThePath) {
  const std::string path = temp_path("strata_gguf_garbage");
  { std::ofstream(path, std::ios::binary) << "this is not a gguf file at all"; }
  Result<GgufFile> f = GgufFile::open(path);
  ASSERT_FALSE(f.is_ok());
  EXPECT_NE(f.status().message().find("magic"), std::string::npos) << f.status().message();
  EXPECT_NE(f.status().message().find(path), std::string::npos) << f.status().message();
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace strata
