// paged_attention (every ISA) and its reference against a naive dense
// softmax(q·Kᵀ·scale)·V in double over K/V kept in plain per-sequence arrays,
// with non-contiguous random block tables, GQA and several sequences per
// batch. The dense version rounds q and the normalized softmax weights to
// fp16 as the kernels do (llama.cpp's numerics), and a second check shows
// that rounding is really there.
//
// Batch invariance: every token's output of a mixed batch (decodes, a
// prefill chunk, tokens that break a chunk) is bit for bit what the same
// token gives alone, for any thread count.
#include "kernels/attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <utility>

#include "kernels/attention_block.h"
#include "kernels/fp16.h"
#include "test_support.h"

namespace strata {
namespace {

using testing::isas_to_test;
using testing::random_floats;
using testing::ScopedIsa;

struct Case {
  int n_heads, n_kv_heads, head_dim, block_size;
  std::vector<int> seq_lens;  // tokens already in the cache (incl. the query tokens)
  std::vector<int> n_query;   // trailing tokens of each sequence that are queries
};

void run_case(const Case& c, uint32_t seed) {
  std::mt19937 rng(seed);
  const int n_seqs = static_cast<int>(c.seq_lens.size());
  const int hd = c.head_dim, row = c.n_kv_heads * hd;
  // Physical blocks handed out in a shuffled order, so tables are not contiguous.
  int total_blocks = 1;  // block 0 stays unused
  for (int len : c.seq_lens) total_blocks += (len + c.block_size - 1) / c.block_size;
  std::vector<int32_t> physical(total_blocks - 1);
  std::iota(physical.begin(), physical.end(), 1);
  std::shuffle(physical.begin(), physical.end(), rng);
  std::vector<std::vector<int32_t>> tables(n_seqs);
  size_t next = 0;
  for (int s = 0; s < n_seqs; ++s) {
    for (int b = 0; b < (c.seq_lens[s] + c.block_size - 1) / c.block_size; ++b)
      tables[s].push_back(physical[next++]);
  }
  std::vector<uint16_t> k_cache(size_t(total_blocks) * c.block_size * row, 0x7e00);  // NaN
  std::vector<uint16_t> v_cache(k_cache.size(), 0x7e00);
  KvLayerView kv{k_cache.data(), v_cache.data(), total_blocks, c.block_size, c.n_kv_heads, hd};

  // Per sequence dense K/V (fp16-rounded), written through write_kv.
  std::vector<std::vector<float>> dense_k(n_seqs), dense_v(n_seqs);
  for (int s = 0; s < n_seqs; ++s) {
    const int len = c.seq_lens[s];
    dense_k[s] = random_floats(size_t(len) * row, seed * 7 + s);
    dense_v[s] = random_floats(size_t(len) * row, seed * 13 + s);
    std::vector<int32_t> slots(len);
    for (int p = 0; p < len; ++p)
      slots[p] = tables[s][p / c.block_size] * c.block_size + p % c.block_size;
    write_kv(kv, dense_k[s].data(), dense_v[s].data(), slots.data(), len);
    for (auto& x : dense_k[s]) x = fp16_to_fp32(fp32_to_fp16(x));
    for (auto& x : dense_v[s]) x = fp16_to_fp32(fp32_to_fp16(x));
  }

  // Flat batch, sequences interleaved in reverse order.
  std::vector<int32_t> pos, seq;
  for (int s = n_seqs - 1; s >= 0; --s) {
    for (int i = 0; i < c.n_query[s]; ++i) {
      pos.push_back(c.seq_lens[s] - c.n_query[s] + i);
      seq.push_back(s);
    }
  }
  const int64_t n_tokens = static_cast<int64_t>(pos.size());
  std::vector<const int32_t*> table_ptrs(n_seqs);
  for (int s = 0; s < n_seqs; ++s) table_ptrs[s] = tables[s].data();
  AttentionBatch batch{n_tokens, pos.data(), seq.data(), table_ptrs.data()};
  const auto q = random_floats(size_t(n_tokens) * c.n_heads * hd, seed + 99);
  const float scale = 1.0f / std::sqrt(float(hd));

  // Naive dense reference in double; is_fp16 rounds q and the weights.
  const int group = c.n_heads / c.n_kv_heads;
  auto dense = [&](bool is_fp16) {
    auto round16 = [&](double x) { return is_fp16 ? fp16_to_fp32(fp32_to_fp16(float(x))) : x; };
    std::vector<double> out(q.size());
    for (int64_t t = 0; t < n_tokens; ++t) {
      const int s = seq[t];
      for (int h = 0; h < c.n_heads; ++h) {
        const int g = h / group;
        std::vector<double> sc(pos[t] + 1);
        for (int p = 0; p <= pos[t]; ++p) {
          double d = 0;
          for (int i = 0; i < hd; ++i) {
            d +=
                round16(q[(t * c.n_heads + h) * hd + i]) * dense_k[s][size_t(p) * row + g * hd + i];
          }
          sc[p] = d * scale;
        }
        const double mx = *std::max_element(sc.begin(), sc.end());
        double sum = 0;
        for (auto& x : sc) sum += (x = std::exp(x - mx));
        for (auto& x : sc) x = round16(x / sum);
        for (int i = 0; i < hd; ++i) {
          double o = 0;
          for (int p = 0; p <= pos[t]; ++p) o += sc[p] * dense_v[s][size_t(p) * row + g * hd + i];
          out[(t * c.n_heads + h) * hd + i] = o;
        }
      }
    }
    return out;
  };
  const std::vector<double> want = dense(true);
  // The fp16 rounding shows: some output differs from exact fp32 softmax
  // attention by more than the tolerance below (unless one position only).
  const std::vector<double> exact = dense(false);
  double max_rounding_effect = 0;
  for (size_t i = 0; i < q.size(); ++i)
    max_rounding_effect = std::max(max_rounding_effect, std::abs(exact[i] - want[i]));
  if (*std::max_element(pos.begin(), pos.end()) >= 4) {
    EXPECT_GT(max_rounding_effect, 1e-4);
  }

  std::vector<float> got_ref(q.size(), NAN);
  ref::paged_attention(q.data(), kv, batch, c.n_heads, scale, got_ref.data());
  for (size_t i = 0; i < q.size(); ++i) ASSERT_NEAR(got_ref[i], want[i], 1e-4) << "ref " << i;
  for (KernelIsa isa : isas_to_test()) {
    ScopedIsa scoped(isa);
    for (int threads : {1, 3}) {
      ThreadPool pool(threads);
      std::vector<float> got(q.size(), NAN);
      paged_attention(q.data(), kv, batch, c.n_heads, scale, got.data(), pool);
      for (size_t i = 0; i < q.size(); ++i) {
        ASSERT_NEAR(got[i], want[i], 1e-4)
            << kernel_isa_name(isa) << " threads=" << threads << " i=" << i;
      }
    }
  }
}

TEST(PagedAttention, SingleTokenDecode) {
  run_case({4, 4, 8, 16, {1}, {1}}, 1);
}

TEST(PagedAttention, Gqa4To1MixedBatch) {
  // Decodes and a prefill chunk crossing block boundaries, in one batch.
  run_case({8, 2, 64, 16, {1, 17, 40, 33}, {1, 1, 9, 33}}, 2);
}

TEST(PagedAttention, Gqa7To1OddHeadsAndDims) {
  run_case({7, 1, 24, 4, {13, 5}, {3, 5}}, 3);
}

TEST(PagedAttention, OddHeadCountsSmallBlocks) {
  run_case({3, 3, 7, 1, {6, 2, 9}, {2, 1, 4}}, 4);
}

TEST(PagedAttention, WideBlocksAndHeadGroupTails) {
  // Blocks of 32 positions (two 16-position tiles of the AVX-512 step), a
  // group of 5 heads (a 4-head tile plus one), head_dim 48.
  run_case({10, 2, 48, 32, {70, 33}, {9, 2}}, 6);
}

TEST(PagedAttention, SmallBlocksHeadDim16) {
  run_case({6, 3, 16, 8, {21, 8, 1}, {4, 8, 1}}, 7);
}

TEST(PagedAttention, LongSequenceLargeScores) {
  // 14:2 heads, head_dim 128, a long context so online-softmax rescaling kicks in.
  run_case({14, 2, 128, 16, {300}, {2}}, 5);
}

// A KV cache holding sequences of the given lengths (random fp16 K/V,
// shuffled physical blocks; unused slots hold NaN).
struct Cache {
  int n_kv_heads, head_dim, block_size;
  std::vector<uint16_t> k, v;
  std::vector<std::vector<int32_t>> tables;
  std::vector<const int32_t*> table_ptrs;
  KvLayerView view;

  Cache(int n_kv, int hd, int bs, const std::vector<int>& seq_lens, uint32_t seed)
      : n_kv_heads(n_kv), head_dim(hd), block_size(bs) {
    std::mt19937 rng(seed);
    int total_blocks = 1;
    for (int len : seq_lens) total_blocks += (len + bs - 1) / bs;
    std::vector<int32_t> physical(total_blocks - 1);
    std::iota(physical.begin(), physical.end(), 1);
    std::shuffle(physical.begin(), physical.end(), rng);
    const int row = n_kv * hd;
    k.assign(size_t(total_blocks) * bs * row, 0x7e00);  // NaN
    v.assign(k.size(), 0x7e00);
    view = KvLayerView{k.data(), v.data(), total_blocks, bs, n_kv, hd};
    size_t next = 0;
    for (size_t s = 0; s < seq_lens.size(); ++s) {
      const int len = seq_lens[s];
      tables.emplace_back();
      for (int b = 0; b < (len + bs - 1) / bs; ++b) tables.back().push_back(physical[next++]);
      std::vector<int32_t> slots(len);
      for (int p = 0; p < len; ++p) slots[p] = tables.back()[p / bs] * bs + p % bs;
      const auto kk = random_floats(size_t(len) * row, seed * 31 + uint32_t(s));
      const auto vv = random_floats(size_t(len) * row, seed * 37 + uint32_t(s));
      write_kv(view, kk.data(), vv.data(), slots.data(), len);
    }
    for (auto& t : tables) table_ptrs.push_back(t.data());
  }
};

// Runs the batch once per thread count and each token alone, and requires
// the same bits.
void expect_batch_invariant(const Cache& cache, int n_heads, const std::vector<int32_t>& pos,
                            const std::vector<int32_t>& seq, uint32_t seed) {
  const int hd = cache.head_dim;
  const int64_t n_tokens = static_cast<int64_t>(pos.size());
  const size_t token_floats = size_t(n_heads) * hd;
  const auto q = random_floats(n_tokens * token_floats, seed);
  const float scale = 1.0f / std::sqrt(float(hd));
  std::vector<float> alone(q.size(), NAN);
  ThreadPool one(1);
  for (int64_t t = 0; t < n_tokens; ++t) {
    AttentionBatch b{1, &pos[t], &seq[t], cache.table_ptrs.data()};
    paged_attention(q.data() + t * token_floats, cache.view, b, n_heads, scale,
                    alone.data() + t * token_floats, one);
  }
  AttentionBatch batch{n_tokens, pos.data(), seq.data(), cache.table_ptrs.data()};
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    std::vector<float> got(q.size(), NAN);
    paged_attention(q.data(), cache.view, batch, n_heads, scale, got.data(), pool);
    for (int64_t t = 0; t < n_tokens; ++t) {
      ASSERT_EQ(0, std::memcmp(got.data() + t * token_floats, alone.data() + t * token_floats,
                               token_floats * sizeof(float)))
          << kernel_isa_name(kernel_isa()) << " threads=" << threads << " token " << t << " (seq "
          << seq[t] << ", pos " << pos[t] << ")";
    }
  }
}

// Decodes of three sequences, a prefill chunk of `chunk` consecutive tokens
// of a fourth (ending at position chunk_ctx - 1), then tokens that do not
// continue it: an earlier position of the chunk's sequence, another
// sequence in the middle, a repeated position.
void run_mixed_batch(int n_kv, int group, int hd, int bs, int chunk, uint32_t seed) {
  const int chunk_ctx = 70 + chunk;
  const Cache cache(n_kv, hd, bs, {1, 19, 50, chunk_ctx}, seed);
  std::vector<int32_t> pos = {0, 18, 49}, seq = {0, 1, 2};
  for (int i = 0; i < chunk; ++i) {
    pos.push_back(chunk_ctx - chunk + i);
    seq.push_back(3);
  }
  for (auto [p, s] : std::vector<std::pair<int, int>>{
           {33, 3}, {34, 3}, {20, 2}, {35, 3}, {35, 3}, {chunk_ctx - 1, 3}, {5, 1}}) {
    pos.push_back(p);
    seq.push_back(s);
  }
  expect_batch_invariant(cache, n_kv * group, pos, seq, seed + 1);
}

TEST(PagedAttentionBatchInvariance, MixedBatchesBestIsa) {
  // Every group size, head size and block size on the fastest path (the
  // AVX-512 tiles where the CPU has them; head_dim 40 takes the AVX2 steps).
  uint32_t seed = 100;
  for (int hd : {64, 128, 40}) {
    for (int group : {1, 2, 4, 8}) {
      for (int bs : {16, 32, 7}) {
        for (int chunk : {1, 5, 16, 37}) {
          SCOPED_TRACE(::testing::Message()
                       << "hd=" << hd << " group=" << group << " bs=" << bs << " chunk=" << chunk);
          run_mixed_batch(2, group, hd, bs, chunk, ++seed);
          if (HasFatalFailure()) return;
        }
      }
    }
  }
}

TEST(PagedAttentionBatchInvariance, MixedBatchesEveryIsa) {
  for (KernelIsa isa : isas_to_test()) {
    ScopedIsa scoped(isa);
    run_mixed_batch(2, 4, 64, 16, 13, 7);
    run_mixed_batch(1, 8, 48, 7, 6, 8);
    if (HasFatalFailure()) return;
  }
}

TEST(PagedAttentionBatchInvariance, LongContextChunk) {
  // A 32-token chunk at a context of ~1000 (many blocks, several tiles),
  // beside two decodes, TinyLlama's head shape.
  const Cache cache(2, 64, 16, {1000, 300, 9}, 77);
  std::vector<int32_t> pos = {299, 8}, seq = {1, 2};
  for (int i = 0; i < 32; ++i) {
    pos.push_back(968 + i);
    seq.push_back(0);
  }
  expect_batch_invariant(cache, 16, pos, seq, 78);
}

TEST(PagedAttentionSoftmax, Avx512RowsMatchAvx2Bits) {
  if (detected_kernel_isa() != KernelIsa::kAvx512Vnni) GTEST_SKIP() << "no AVX-512";
  for (int64_t n : {1, 7, 8, 9, 15, 16, 17, 24, 31, 33, 100, 257}) {
    const int rows = 7;
    const int64_t stride = n + 5;
    auto scores = random_floats(size_t(rows) * stride, uint32_t(n), 4.0f);
    auto want = scores;
    for (int r = 0; r < rows; ++r) avx2::softmax_weights(want.data() + r * stride, n);
    avx512::softmax_weights_rows(scores.data(), stride, rows, n);
    for (int r = 0; r < rows; ++r) {
      ASSERT_EQ(
          0, std::memcmp(scores.data() + r * stride, want.data() + r * stride, n * sizeof(float)))
          << "n=" << n << " row " << r;
    }
  }
}

TEST(WriteKv, NegativeSlotIsSkipped) {
  std::vector<uint16_t> k(2 * 4, 0), v(2 * 4, 0);
  KvLayerView kv{k.data(), v.data(), 2, 1, 2, 2};
  const std::vector<float> kk = {1, 2, 3, 4, 5, 6, 7, 8}, vv = kk;
  const int32_t slots[2] = {-1, 1};
  write_kv(kv, kk.data(), vv.data(), slots, 2);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(k[i], 0);
  EXPECT_EQ(fp16_to_fp32(k[4]), 5.0f);
  EXPECT_EQ(fp16_to_fp32(v[7]), 8.0f);
}

// The pool layout every reader assumes (attention.h): block-major, then KV
// head, then slot within the block, then head_dim. Pinned with the formula
// written out, for every ISA's write_kv.
TEST(WriteKv, StoresEachHeadsSlotsContiguouslyWithinABlock) {
  constexpr int bs = 4, n_kv = 3, hd = 5, blocks = 3;
  const int32_t slots[3] = {6, 1, 11};  // blocks 1, 0, 2
  std::vector<float> kk(3 * n_kv * hd), vv(kk.size());
  for (size_t i = 0; i < kk.size(); ++i) {
    kk[i] = static_cast<float>(i + 1);
    vv[i] = -static_cast<float>(i + 1);
  }
  for (KernelIsa isa : isas_to_test()) {
    ScopedIsa scoped(isa);
    std::vector<uint16_t> k(blocks * bs * n_kv * hd, 0), v(k.size(), 0);
    KvLayerView kv{k.data(), v.data(), blocks, bs, n_kv, hd};
    write_kv(kv, kk.data(), vv.data(), slots, 3);
    std::vector<uint16_t> want_k(k.size(), 0), want_v(v.size(), 0);
    for (int t = 0; t < 3; ++t) {
      const int block = slots[t] / bs, offset = slots[t] % bs;
      for (int g = 0; g < n_kv; ++g) {
        for (int i = 0; i < hd; ++i) {
          const int dst = ((block * n_kv + g) * bs + offset) * hd + i;
          want_k[dst] = fp32_to_fp16(kk[(t * n_kv + g) * hd + i]);
          want_v[dst] = fp32_to_fp16(vv[(t * n_kv + g) * hd + i]);
          EXPECT_EQ(kv_row_offset(kv, slots[t], g) + i, dst);
        }
      }
    }
    EXPECT_EQ(k, want_k) << kernel_isa_name(scoped.actual());
    EXPECT_EQ(v, want_v) << kernel_isa_name(scoped.actual());
  }
}

float float_from_bits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// write_kv stores exactly fp32_to_fp16's bits under every ISA (the AVX2
// path converts 16 at a time with F16C, with a scalar tail).
void expect_write_kv_bits(const std::vector<float>& values) {
  const int n_kv = 1, hd = 45;  // rows of 45: two 16-wide steps and a tail of 13
  const int64_t n_tokens = (static_cast<int64_t>(values.size()) + hd - 1) / hd;
  std::vector<float> kk(values), vv(values.rbegin(), values.rend());
  kk.resize(n_tokens * hd, 0.0f);
  vv.resize(kk.size(), 0.0f);
  std::vector<int32_t> slots(n_tokens);
  std::iota(slots.begin(), slots.end(), 0);
  std::reverse(slots.begin(), slots.end());
  for (KernelIsa isa : isas_to_test()) {
    ScopedIsa scoped(isa);
    std::vector<uint16_t> k(kk.size(), 0x1234), v(kk.size(), 0x1234);
    KvLayerView kv{k.data(), v.data(), n_tokens, 1, n_kv, hd};
    write_kv(kv, kk.data(), vv.data(), slots.data(), n_tokens);
    int mismatches = 0;
    for (int64_t t = 0; t < n_tokens; ++t) {
      for (int i = 0; i < hd; ++i) {
        const int64_t src = t * hd + i, dst = static_cast<int64_t>(slots[t]) * hd + i;
        for (const auto& [in, got] : {std::pair(kk[src], k[dst]), std::pair(vv[src], v[dst])}) {
          const uint16_t want = fp32_to_fp16(in);
          if (got != want && ++mismatches <= 5) {
            uint32_t in_bits;
            std::memcpy(&in_bits, &in, 4);
            ADD_FAILURE() << kernel_isa_name(scoped.actual()) << ": fp32 0x" << std::hex << in_bits
                          << " -> 0x" << got << ", want 0x" << want;
          }
        }
      }
    }
    EXPECT_EQ(mismatches, 0) << kernel_isa_name(scoped.actual());
  }
}

TEST(WriteKv, EdgeValuesMatchScalarBits) {
  std::vector<uint32_t> bits = {
      0x00000000, 0x80000000,              // +-0
      0x00000001, 0x807fffff, 0x00400000,  // fp32 denormals
      0x33000000, 0xb3000000,              // 2^-25: half the smallest half denormal -> 0
      0x33000001, 0x33400000,              // just above -> the smallest denormal
      0x33c00000, 0x34200000,              // 1.5 and 2.5 denormal units (halfway, to even)
      0x387fc000, 0x387fe000, 0x387ff000,  // below 2^-14: largest denormal, halfway to normal
      0x38800000, 0xb8800000,              // 2^-14, the smallest normal half
      0x3f800000, 0x3f801000, 0x3f803000,  // 1, 1 + 2^-11 (-> 1), 1 + 3 * 2^-11 (-> up)
      0x3f801001, 0x3f800fff,              // one fp32 ulp either side of halfway
      0x477fe000, 0x477fefff, 0x477ff000,  // 65504 (max), just below 65520, 65520 (-> inf)
      0xc77ff000, 0x7f7fffff, 0xff7fffff,  // -65520, +-FLT_MAX
      0x7f800000, 0xff800000,              // +-inf
      0x7fc00000, 0xffc00000, 0x7fc02000,  // quiet NaNs, with payload
      0x7f800001, 0xff800001, 0x7fa00000,  // signaling NaNs
      0x7fbfffff, 0x7fffffff, 0xffffe000,
  };
  // Every half value, the midpoints to its neighbour and an fp32 ulp
  // either side of them (all the rounding boundaries).
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00u) == 0x7c00u) continue;  // inf / NaN
    const float x = fp16_to_fp32(static_cast<uint16_t>(h));
    uint32_t xb;
    std::memcpy(&xb, &x, 4);
    bits.push_back(xb);
    if ((h & 0x7fffu) == 0x7bffu) continue;  // max: no next half
    const float next = fp16_to_fp32(static_cast<uint16_t>(h + 1));
    const float mid = (x + next) / 2;  // exact: one bit more than a half holds
    uint32_t mb;
    std::memcpy(&mb, &mid, 4);
    for (uint32_t d : {mb - 1, mb, mb + 1}) bits.push_back(d);
  }
  std::vector<float> values;
  for (uint32_t b : bits) values.push_back(float_from_bits(b));
  expect_write_kv_bits(values);
}

TEST(WriteKv, RandomValuesMatchScalarBits) {
  std::mt19937 rng(91);
  std::vector<float> values;
  for (int i = 0; i < 200000; ++i) values.push_back(float_from_bits(static_cast<uint32_t>(rng())));
  const auto typical = random_floats(100000, 92, 3.0f);
  values.insert(values.end(), typical.begin(), typical.end());
  expect_write_kv_bits(values);
}

}  // namespace
}  // namespace strata
