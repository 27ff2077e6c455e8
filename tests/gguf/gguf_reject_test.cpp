// One test per rejection: each crafts a file with exactly one defect and
// checks that parse() fails with a message naming the field.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"
#include "gguf_bytes.h"

namespace strata {
namespace {

using testing::GgufBytes;

constexpr uint32_t kU8 = 0, kU32 = 4, kF32 = 6, kBool = 7, kString = 8, kArray = 9, kU64 = 10;
constexpr uint32_t kTypeF32 = 0, kTypeQ8_0 = 8, kTypeF64 = 28;

// Parses and returns the error message; fails the test if parsing succeeds.
std::string reject(const std::vector<uint8_t>& bytes) {
  Result<GgufFile> f = GgufFile::parse(bytes.data(), bytes.size());
  EXPECT_FALSE(f.is_ok()) << "a defective file was accepted";
  if (f.is_ok()) return "";
  EXPECT_EQ(f.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(f.status().message().rfind("gguf: ", 0), 0u) << f.status().message();
  EXPECT_EQ(f.status().message().find('\n'), std::string::npos);
  return f.status().message();
}

#define EXPECT_MSG(msg, needle) \
  EXPECT_NE((msg).find(needle), std::string::npos) << "message: " << (msg)

// A file with one tensor info, padded, with `data_bytes` of data.
std::vector<uint8_t> one_tensor(const std::vector<uint64_t>& ne, uint32_t type, uint64_t offset,
                                size_t data_bytes, std::string_view name = "blk.0.attn_q.weight") {
  GgufBytes g;
  g.header(1, 0).tensor_info(name, ne, type, offset).pad().zeros(data_bytes);
  return g.bytes;
}

// ---- Header.

TEST(GgufReject, TooShortForMagic) {
  const std::string m = reject({'G', 'G'});
  EXPECT_MSG(m, "header magic");
  EXPECT_MSG(m, "truncated");
}

TEST(GgufReject, EmptyImage) {
  EXPECT_MSG(reject({}), "header magic");
}

TEST(GgufReject, BadMagic) {
  GgufBytes g;
  g.header(0, 0);
  g.bytes[3] = 'X';
  EXPECT_MSG(reject(g.bytes), "header magic: not a GGUF file");
}

TEST(GgufReject, Version1) {
  GgufBytes g;
  g.header(0, 0, 1);
  EXPECT_MSG(reject(g.bytes), "header version: 1 is not supported");
}

TEST(GgufReject, Version4) {
  GgufBytes g;
  g.header(0, 0, 4);
  EXPECT_MSG(reject(g.bytes), "header version: 4");
}

TEST(GgufReject, BigEndianVersion) {
  GgufBytes g;
  g.header(0, 0, 0x03000000u);
  EXPECT_MSG(reject(g.bytes), "big-endian");
}

TEST(GgufReject, TruncatedCounts) {
  GgufBytes g;
  g.u32(0x46554747).u32(3).u64(0).u32(0);  // n_kv cut in half
  EXPECT_MSG(reject(g.bytes), "header metadata count");
}

// The class of CVE-2025-53630 / CVE-2026-27940: huge counts must be refused
// before anything is sized from them.
TEST(GgufReject, TensorCountCannotFit) {
  GgufBytes g;
  g.header(std::numeric_limits<uint64_t>::max() / 8, 0).zeros(64);
  const std::string m = reject(g.bytes);
  EXPECT_MSG(m, "header tensor count");
  EXPECT_MSG(m, "cannot fit");
}

TEST(GgufReject, MetadataCountCannotFit) {
  GgufBytes g;
  g.header(0, uint64_t{1} << 62).zeros(64);
  EXPECT_MSG(reject(g.bytes), "header metadata count");
}

TEST(GgufReject, CountsFitAloneButNotTogether) {
  // 64 bytes after the header: 1 tensor info (>= 33) and 4 KVs (>= 14 each)
  // each fit alone, not both.
  GgufBytes g;
  g.header(1, 4).zeros(64);
  EXPECT_MSG(reject(g.bytes), "header counts");
}

// ---- Metadata.

TEST(GgufReject, KeyLengthExceedsFile) {
  GgufBytes g;
  g.header(0, 1).u64(1000).zeros(20);
  const std::string m = reject(g.bytes);
  EXPECT_MSG(m, "metadata 0 key: length 1000 exceeds");
}

TEST(GgufReject, EmptyKey) {
  GgufBytes g;
  g.header(0, 1).key("", kU8).u8(1).zeros(8);
  EXPECT_MSG(reject(g.bytes), "metadata 0 key: empty key");
}

TEST(GgufReject, KeyTooLong) {
  GgufBytes g;
  g.header(0, 1).key(std::string(65536, 'k'), kU8).u8(1);
  EXPECT_MSG(reject(g.bytes), "metadata 0 key: length 65536 exceeds 65535");
}

TEST(GgufReject, DuplicateKey) {
  GgufWriter w;
  w.add_u32("llama.block_count", 2);
  w.add_string("general.name", "x");
  w.add_u32("llama.block_count", 3);
  EXPECT_MSG(reject(w.serialize()), "metadata key 'llama.block_count': duplicate key");
}

TEST(GgufReject, UnknownValueType) {
  GgufBytes g;
  g.header(0, 1).key("general.x", 13).u64(0);
  EXPECT_MSG(reject(g.bytes), "metadata key 'general.x': unknown value type 13");
}

TEST(GgufReject, TruncatedScalarValue) {
  GgufBytes g;
  g.header(0, 1).key("general.big", kU64).u32(0).u8(0).u8(0);  // 6 of 8 bytes
  const std::string m = reject(g.bytes);
  EXPECT_MSG(m, "metadata key 'general.big' value");
  EXPECT_MSG(m, "truncated");
}

TEST(GgufReject, BoolValueNotZeroOrOne) {
  GgufBytes g;
  g.header(0, 1).key("general.flag", kBool).u8(2);
  EXPECT_MSG(reject(g.bytes), "metadata key 'general.flag': bool value must be 0 or 1, got 2");
}

TEST(GgufReject, StringValueLengthExceedsFile) {
  GgufBytes g;
  g.header(0, 1).key("general.name", kString).u64(uint64_t{1} << 40).zeros(8);
  EXPECT_MSG(reject(g.bytes), "metadata key 'general.name': length 1099511627776 exceeds");
}

TEST(GgufReject, ArrayUnknownElementType) {
  GgufBytes g;
  g.header(0, 1).key("tok.x", kArray).u32(77).u64(0);
  EXPECT_MSG(reject(g.bytes), "metadata key 'tok.x': unknown array element type 77");
}

TEST(GgufReject, NestedArray) {
  GgufBytes g;
  g.header(0, 1).key("tok.nested", kArray).u32(kArray).u64(1).u32(kU8).u64(1).u8(0);
  EXPECT_MSG(reject(g.bytes), "metadata key 'tok.nested': nested arrays are not supported");
}

TEST(GgufReject, StringArrayCountCannotFit) {
  GgufBytes g;
  g.header(0, 1).key("tokenizer.ggml.tokens", kArray).u32(kString).u64(uint64_t{1} << 61);
  g.zeros(64);
  const std::string m = reject(g.bytes);
  EXPECT_MSG(m, "metadata key 'tokenizer.ggml.tokens': array count 2305843009213693952");
}

TEST(GgufReject, NumericArrayByteSizeWouldOverflow) {
  // count * 8 wraps to 0 in 64 bits: must be rejected, not read as empty.
  GgufBytes g;
  g.header(0, 1).key("tok.scores", kArray).u32(kU64).u64(uint64_t{1} << 61).zeros(16);
  EXPECT_MSG(reject(g.bytes),
             "metadata key 'tok.scores': array count 2305843009213693952 of uint64");
}

TEST(GgufReject, NumericArrayTruncated) {
  GgufBytes g;
  g.header(0, 1).key("tok.scores", kArray).u32(kF32).u64(5).zeros(16);
  EXPECT_MSG(reject(g.bytes), "metadata key 'tok.scores': array count 5 of float32");
}

TEST(GgufReject, StringArrayElementExceedsFile) {
  GgufBytes g;
  g.header(0, 1).key("tokenizer.ggml.tokens", kArray).u32(kString).u64(2);
  g.str("ok").u64(500).zeros(10);
  EXPECT_MSG(reject(g.bytes), "metadata key 'tokenizer.ggml.tokens' element 1: length 500 exceeds");
}

TEST(GgufReject, BoolArrayElementNotZeroOrOne) {
  GgufBytes g;
  g.header(0, 1).key("flags", kArray).u32(kBool).u64(3).u8(1).u8(0).u8(9);
  EXPECT_MSG(reject(g.bytes), "metadata key 'flags': bool element 2 must be 0 or 1, got 9");
}

TEST(GgufReject, AlignmentZero) {
  GgufBytes g;
  g.header(0, 1).key("general.alignment", kU32).u32(0);
  EXPECT_MSG(reject(g.bytes), "metadata key 'general.alignment': 0 is not a power of two");
}

TEST(GgufReject, AlignmentNotPowerOfTwo) {
  GgufBytes g;
  g.header(0, 1).key("general.alignment", kU32).u32(48);
  EXPECT_MSG(reject(g.bytes), "metadata key 'general.alignment': 48 is not a power of two");
}

TEST(GgufReject, AlignmentTooLarge) {
  GgufBytes g;
  g.header(0, 1).key("general.alignment", kU64).u64(uint64_t{1} << 40);
  EXPECT_MSG(reject(g.bytes), "metadata key 'general.alignment': 1099511627776");
}

TEST(GgufReject, AlignmentWrongType) {
  GgufBytes g;
  g.header(0, 1).key("general.alignment", kString).str("32");
  EXPECT_MSG(reject(g.bytes), "metadata key 'general.alignment': must be an integer, got string");
}

TEST(GgufReject, AlignmentNegative) {
  GgufWriter w;
  w.add_i32("general.alignment", -32);
  EXPECT_MSG(reject(w.serialize()), "metadata key 'general.alignment'");
}

TEST(GgufReject, ControlBytesInKeyStayOnOneLine) {
  GgufBytes g;
  g.header(0, 2).key("a\nb", kU8).u8(0).key("a\nb", kU8).u8(0);
  EXPECT_MSG(reject(g.bytes), "metadata key 'a?b': duplicate key");
}

// ---- Tensor infos.

TEST(GgufReject, TruncatedTensorInfo) {
  GgufBytes g;
  g.header(1, 0).str("w").u32(2).u64(4).u64(4).u32(0).zeros(2);  // offset cut short
  EXPECT_MSG(reject(g.bytes), "tensor 'w' offset: needs 8 bytes");
}

TEST(GgufReject, TensorNameExceedsFile) {
  GgufBytes g;
  g.header(1, 0).u64(4000).zeros(40);
  EXPECT_MSG(reject(g.bytes), "tensor 0 name: length 4000 exceeds");
}

TEST(GgufReject, EmptyTensorName) {
  EXPECT_MSG(reject(one_tensor({4}, kTypeF32, 0, 16, "")), "tensor 0 name: empty name");
}

TEST(GgufReject, TensorNameTooLong) {
  EXPECT_MSG(reject(one_tensor({4}, kTypeF32, 0, 16, std::string(4097, 'n'))),
             "tensor 0 name: length 4097 exceeds 4096");
}

TEST(GgufReject, DuplicateTensorName) {
  GgufWriter w;
  w.add_tensor("output.weight", DType::kF32, {4}, std::vector<uint8_t>(16));
  w.add_tensor("output.weight", DType::kF32, {4}, std::vector<uint8_t>(16));
  EXPECT_MSG(reject(w.serialize()), "tensor 'output.weight': duplicate tensor name");
}

TEST(GgufReject, ZeroDims) {
  EXPECT_MSG(reject(one_tensor({}, kTypeF32, 0, 32)),
             "tensor 'blk.0.attn_q.weight': n_dims 0 is not in [1, 4]");
}

TEST(GgufReject, FiveDims) {
  EXPECT_MSG(reject(one_tensor({1, 1, 1, 1, 1}, kTypeF32, 0, 32)),
             "tensor 'blk.0.attn_q.weight': n_dims 5 is not in [1, 4]");
}

TEST(GgufReject, ZeroDim) {
  EXPECT_MSG(reject(one_tensor({4, 0}, kTypeF32, 0, 32)),
             "tensor 'blk.0.attn_q.weight': ne[1] = 0 is not a positive int64");
}

TEST(GgufReject, DimAboveInt64) {
  EXPECT_MSG(reject(one_tensor({4, uint64_t{1} << 63}, kTypeF32, 0, 32)),
             "tensor 'blk.0.attn_q.weight': ne[1] = 9223372036854775808 is not a positive int64");
}

// The class of CVE-2026-33298: the element count wraps.
TEST(GgufReject, ElementCountOverflows) {
  EXPECT_MSG(reject(one_tensor({uint64_t{1} << 32, uint64_t{1} << 32}, kTypeF32, 0, 32)),
             "tensor 'blk.0.attn_q.weight': element count (product of dims) overflows int64");
}

TEST(GgufReject, ElementCountOverflowsInLaterDim) {
  EXPECT_MSG(reject(one_tensor({3, 1, uint64_t{1} << 62, 2}, kTypeF32, 0, 32)),
             "element count (product of dims) overflows int64");
}

// Element count fits in int64 but elements * 8 bytes does not fit in uint64.
TEST(GgufReject, ByteSizeOverflows) {
  EXPECT_MSG(reject(one_tensor({uint64_t{1} << 62}, kTypeF64, 0, 32)),
             "tensor 'blk.0.attn_q.weight': byte size overflows uint64");
}

TEST(GgufReject, UnknownTensorType) {
  EXPECT_MSG(reject(one_tensor({32}, 4, 0, 32)),  // 4 = ggml's removed Q4_2
             "tensor 'blk.0.attn_q.weight': unknown tensor type 4");
  EXPECT_MSG(reject(one_tensor({32}, 1000, 0, 32)), "unknown tensor type 1000");
}

TEST(GgufReject, RowNotMultipleOfBlock) {
  EXPECT_MSG(
      reject(one_tensor({33, 2}, kTypeQ8_0, 0, 128)),
      "tensor 'blk.0.attn_q.weight': ne[0] = 33 is not a multiple of the q8_0 block size 32");
}

TEST(GgufReject, OffsetNotAligned) {
  EXPECT_MSG(reject(one_tensor({4}, kTypeF32, 4, 64)),
             "tensor 'blk.0.attn_q.weight': offset 4 is not a multiple of the alignment 32");
}

TEST(GgufReject, OffsetNotAlignedToCustomAlignment) {
  GgufBytes g;
  g.header(1, 1).key("general.alignment", kU32).u32(64);
  g.tensor_info("w", {4}, kTypeF32, 32).pad(64).zeros(128);
  EXPECT_MSG(reject(g.bytes), "tensor 'w': offset 32 is not a multiple of the alignment 64");
}

TEST(GgufReject, DataRangeExceedsFile) {
  const std::string m = reject(one_tensor({4, 3}, kTypeF32, 0, 47));  // needs 48
  EXPECT_MSG(m,
             "tensor 'blk.0.attn_q.weight': data range [0, 0+48) exceeds the data section size 47");
  EXPECT_MSG(m, "file size");
}

TEST(GgufReject, DataRangeAtLargeOffsetExceedsFile) {
  EXPECT_MSG(reject(one_tensor({4}, kTypeF32, 1 << 20, 64)),
             "tensor 'blk.0.attn_q.weight': data range [1048576, 1048576+16) exceeds");
}

TEST(GgufReject, OffsetPlusSizeWraps) {
  const uint64_t offset = std::numeric_limits<uint64_t>::max() - 31;  // aligned to 32
  EXPECT_MSG(reject(one_tensor({16}, kTypeF32, offset, 64)),
             "tensor 'blk.0.attn_q.weight': data range [18446744073709551584, ");
}

TEST(GgufReject, DataSectionStartsPastEnd) {
  GgufBytes g;
  g.header(1, 0).tensor_info("w", {4}, kTypeF32, 0);  // 57 bytes, no padding, no data
  ASSERT_EQ(g.bytes.size(), 57u);
  EXPECT_MSG(reject(g.bytes), "data section: starts at 64, past the end of the file (size 57)");
}

TEST(GgufReject, OverlappingTensors) {
  GgufBytes g;
  g.header(2, 0);
  g.tensor_info("a", {16}, kTypeF32, 0).tensor_info("b", {8}, kTypeF32, 32);  // a is [0, 64)
  g.pad().zeros(128);
  EXPECT_MSG(reject(g.bytes), "tensor 'b': data range starting at 32 overlaps tensor 'a' [0, 64)");
}

TEST(GgufReject, IdenticalTensorRanges) {
  GgufBytes g;
  g.header(2, 0);
  g.tensor_info("a", {8}, kTypeF32, 0).tensor_info("b", {8}, kTypeF32, 0);
  g.pad().zeros(64);
  EXPECT_MSG(reject(g.bytes), "overlaps tensor");
}

// Writer output whose data does not match type and dims: the reader finds the
// second tensor's range overlapping or out of the file.
TEST(GgufReject, WriterDataShorterThanShapeIsCaught) {
  GgufWriter w;
  w.add_tensor("a", DType::kF32, {64}, std::vector<uint8_t>(8));  // needs 256
  w.add_tensor("b", DType::kF32, {64}, std::vector<uint8_t>(256));
  EXPECT_MSG(reject(w.serialize()), "overlaps tensor 'a'");
}

// Every strict prefix of a valid file is rejected (or, for a metadata-only
// prefix that happens to be complete, accepted) without crashing.
TEST(GgufReject, EveryTruncationOfAValidFileFailsCleanly) {
  GgufWriter w;
  w.add_string("general.architecture", "llama");
  w.add_string_array("tokenizer.ggml.tokens", {"<s>", "a", "bc"});
  w.add_f32_array("tokenizer.ggml.scores", {0, -1, -2});
  w.add_tensor("token_embd.weight", DType::kQ8_0, {32, 3}, std::vector<uint8_t>(34 * 3, 1));
  w.add_tensor("output_norm.weight", DType::kF32, {32}, std::vector<uint8_t>(128, 2));
  const std::vector<uint8_t> img = w.serialize();
  ASSERT_TRUE(GgufFile::parse(img.data(), img.size()).is_ok());
  const GgufFile full = std::move(GgufFile::parse(img.data(), img.size()).value());
  const uint64_t last_end = full.data_offset() + full.tensor("output_norm.weight")->offset + 128;
  for (size_t n = 0; n < img.size(); ++n) {
    Result<GgufFile> f = GgufFile::parse(img.data(), n);
    if (n < last_end) {
      EXPECT_FALSE(f.is_ok()) << "prefix of " << n << " bytes accepted";
    }
  }
}

}  // namespace
}  // namespace strata
