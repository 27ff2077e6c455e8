// Logits parity of a model-parallel group with one process, run under
// mpirun (tests/parallel/run_parallel_tests.sh):
//   mpirun -np T*P parallel_parity --tp T --pp P MODEL.gguf
// Rank 0 runs the same batches through its shard's runner (the group) and
// through a whole model of its own, and compares: a mixed batch (two prompts
// as prefill chunks), a decode step of both, and one prompt alone in other
// blocks (batch invariance within the layout: bit for bit). Pipeline
// parallelism alone does not change one operation, so there the logits must
// be equal bit for bit; tensor parallelism adds the shards' partial sums of
// O and down in another order, so there they must agree within a tolerance
// per weight type. Exit 0 on success; every other rank runs the worker loop.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "group_test_main.h"
#include "model/model_weights.h"
#include "parallel/process_group.h"
#include "runtime/forward_batch.h"
#include "runtime/kv_storage.h"
#include "runtime/model_runner.h"
#include "runtime/model_worker.h"
#include "util/thread_pool.h"

namespace strata {
namespace {

constexpr int kBlockSize = 4;
constexpr int64_t kNumBlocks = 64;

int fail(const std::string& what) {
  std::fprintf(stderr, "parallel_parity: FAIL: %s\n", what.c_str());
  return 1;
}

// Prompt a (13 tokens, blocks 0..3) and b (7 tokens, blocks 8..9) as one
// batch; then one decode token each; then b again alone in blocks 20..21.
std::vector<ForwardBatch> batches(int64_t vocab) {
  const auto tok = [vocab](int i) { return static_cast<int32_t>((i * 37 + 11) % vocab); };
  const std::vector<int32_t> table_a = {0, 1, 2, 3}, table_b = {8, 9}, table_c = {20, 21};
  std::vector<ForwardBatch> out(3);
  out[0].block_tables = {table_a, table_b};
  for (int i = 0; i < 13; ++i) out[0].add_token(tok(i), i, 0, kBlockSize, i == 12);
  for (int i = 0; i < 7; ++i) out[0].add_token(tok(100 + i), i, 1, kBlockSize, i == 6);
  out[1].block_tables = {table_a, table_b};
  out[1].add_token(tok(13), 13, 0, kBlockSize, true);
  out[1].add_token(tok(107), 7, 1, kBlockSize, true);
  out[2].block_tables = {table_c};
  for (int i = 0; i < 7; ++i) out[2].add_token(tok(100 + i), i, 0, kBlockSize, i == 6);
  return out;
}

// The tolerance of a layout's logits against one process's, as a fraction of
// the largest |logit|. The shards' fp32 partial sums differ from one
// process's in their last bits, and K, V, q and the softmax weights are
// rounded to fp16 on the way into attention, where a last-bit change can
// flip a rounding (2^-11 = 4.9e-4 relative); measured up to 4.5e-4 on the
// random float models. Quantized models also re-round activations to 8 bits
// (1/127 of a block's largest value) when they moved by that much.
double tolerance(DType type) {
  switch (type) {
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16:
      return 2e-3;
    default:
      return 2e-2;
  }
}

int run(int argc, char** argv) {
  const test::GroupArgs args = test::parse_group_args(argc, argv);
  if (args.paths.size() != 1) return fail("usage: parallel_parity --tp T --pp P MODEL");
  const std::string& model = args.paths[0];
  Result<test::StartedGroup> started = test::start_group(args.options, model);
  if (!started) return fail(started.status().message());
  ProcessGroup& g = *started->group;
  ModelWeights* shard = &started->shard;
  if (!g.layout().is_driver()) {
    Status s = run_model_worker(*shard, 1);
    return s ? 0 : fail(s.message());
  }

  Result<ModelWeights> whole = ModelWeights::open(model);
  if (!whole) return fail(whole.status().message());
  ThreadPool pool(1);
  Result<KvStorage> kv_whole = KvStorage::create(whole->config(), kBlockSize, kNumBlocks);
  Result<KvStorage> kv_shard = KvStorage::create(shard->local_config(), kBlockSize, kNumBlocks);
  if (!kv_whole || !kv_shard) return fail("KV pool");
  ModelRunner reference(*whole, *kv_whole, pool, 32);
  ModelRunner runner(*shard, *kv_shard, pool, 32);

  const int64_t vocab = whole->config().vocab_size;
  const bool is_exact = args.options.tensor_parallel_size == 1;
  const double tol = tolerance(whole->layers()[0].attn_q.type);
  std::vector<std::vector<float>> got;
  double worst = 0.0;
  for (const ForwardBatch& b : batches(vocab)) {
    std::vector<float> want(b.logits_indices.size() * vocab), have(want.size(), NAN);
    if (Status s = reference.forward(b, want.data()); !s) return fail(s.message());
    if (Status s = runner.forward(b, have.data()); !s) return fail(s.message());
    float scale = 0.0f;
    for (float v : want) scale = std::max(scale, std::fabs(v));
    for (size_t i = 0; i < want.size(); ++i) {
      if (!std::isfinite(have[i])) return fail("logit " + std::to_string(i) + " is not finite");
      const double d = std::fabs(static_cast<double>(have[i]) - want[i]) / scale;
      worst = std::max(worst, d);
      if (is_exact ? have[i] != want[i] : d > tol) {
        return fail(model + ": logit " + std::to_string(i) + " is " + std::to_string(have[i]) +
                    ", one process gives " + std::to_string(want[i]));
      }
    }
    got.push_back(std::move(have));
  }
  // Prompt b's last logits row: batch 0's second row against batch 2's row.
  if (std::memcmp(got[0].data() + vocab, got[2].data(), vocab * sizeof(float)) != 0) {
    return fail(model + ": a prompt's logits depend on the batch it runs in");
  }
  const std::string bound = is_exact ? "bit-exact required" : "tolerance " + std::to_string(tol);
  std::printf("parallel_parity: %s under %s: largest difference %.3g of max |logit| (%s)\n",
              model.c_str(), g.layout().describe().c_str(), worst, bound.c_str());
  return 0;
}

}  // namespace
}  // namespace strata

int main(int argc, char** argv) {
  return strata::run(argc, argv);
}
