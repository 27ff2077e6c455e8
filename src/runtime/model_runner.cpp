#include "runtime/model_runner.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "kernels/attention.h"
#include "kernels/matmul.h"
#include "kernels/matmul_unit.h"
#include "kernels/ops.h"
#include "parallel/process_group.h"
#include "runtime/forward_batch_codec.h"

namespace strata {

ModelRunner::ModelRunner(const ModelWeights& weights, KvStorage& kv, ThreadPool& pool,
                         int64_t max_batch_tokens)
    : weights_(weights), kv_(kv), pool_(pool), max_batch_tokens_(max_batch_tokens) {
  const ModelConfig& c = weights.local_config();
  const size_t n = static_cast<size_t>(max_batch_tokens);
  x_.resize(n * c.hidden_dim);
  xn_.resize(n * c.hidden_dim);
  q_.resize(n * c.q_dim());
  k_.resize(n * c.kv_dim());
  v_.resize(n * c.kv_dim());
  attn_.resize(n * c.q_dim());
  gate_.resize(n * c.ffn_dim);
  up_.resize(n * c.ffn_dim);
  tables_.resize(n);
  seq_context_.reserve(n);
  if (ProcessGroup* group = weights.group(); group != nullptr) {
    const size_t vocab_shard = static_cast<size_t>(weights.vocab_end() - weights.vocab_begin());
    if (weights.layout().is_last_stage()) logits_local_.resize(n * vocab_shard);
    if (weights.layout().is_driver()) {
      logits_part_.resize(n * vocab_shard);
      const int64_t hello[3] = {kv.num_blocks(), kv.block_size(), max_batch_tokens};
      std::vector<uint8_t> bytes(sizeof(hello));
      std::memcpy(bytes.data(), hello, sizeof(hello));
      try {
        group->broadcast_control(ControlKind::kHello, bytes);
        // Every rank has its pool and runner before the first step (a step
        // would otherwise wait for a peer still repacking its weights).
        for (int r = 1; r < group->size(); ++r) {
          int32_t ready = 0;
          group->recv(r, &ready, sizeof(ready), "the workers' start-up");
        }
      } catch (const GroupFailure&) {
        // The process is exiting; forward() will say so.
      }
    }
  }
  // Which int8 unit (AMX or VNNI) runs each matmul shape, per token count,
  // measured once per process and (type, shape) (a no-op without AMX). Any
  // choice gives the same bits; this only picks the faster. Every layer is
  // offered: a mix such as Q4_K_M has Q4_K and Q6_K variants of the same
  // shape in different layers (each distinct one is timed once).
  if (!weights.layers().empty()) {
    std::vector<int64_t> counts;
    for (int64_t t : scheduler_token_counts()) {
      if (t <= max_batch_tokens) counts.push_back(t);
    }
    std::vector<WeightView> views;
    for (const LayerWeights& l : weights.layers()) {
      views.insert(views.end(),
                   {l.attn_q, l.attn_k, l.attn_v, l.attn_output, l.ffn_gate, l.ffn_up, l.ffn_down});
    }
    calibrate_matmul_units(views, counts);
  }
}

Status ModelRunner::validate(const ForwardBatch& b) const {
  const int64_t n = b.num_tokens();
  if (n == 0) return invalid_argument("runner: empty batch");
  if (n > max_batch_tokens_) {
    return invalid_argument("runner: batch of " + std::to_string(n) + " tokens exceeds " +
                            "max_batch_tokens = " + std::to_string(max_batch_tokens_));
  }
  if (static_cast<int64_t>(b.positions.size()) != n ||
      static_cast<int64_t>(b.seq_index.size()) != n ||
      static_cast<int64_t>(b.slot_mapping.size()) != n) {
    return invalid_argument("runner: tokens, positions, seq_index and slot_mapping differ in size");
  }
  if (b.block_tables.empty() || static_cast<int64_t>(b.block_tables.size()) > max_batch_tokens_) {
    return invalid_argument("runner: block_tables must hold 1.." +
                            std::to_string(max_batch_tokens_) + " sequences");
  }
  const int64_t vocab = weights_.config().vocab_size;
  const int block_size = kv_.block_size();
  const int64_t num_slots = kv_.num_blocks() * block_size;
  for (const std::vector<int32_t>& table : b.block_tables) {
    for (int32_t block : table) {
      if (block < 0 || block >= kv_.num_blocks()) {
        return invalid_argument("runner: block id " + std::to_string(block) + " out of range [0, " +
                                std::to_string(kv_.num_blocks()) + ")");
      }
    }
  }
  for (int64_t t = 0; t < n; ++t) {
    const std::string at = " at batch row " + std::to_string(t);
    if (b.tokens[t] < 0 || b.tokens[t] >= vocab) {
      return invalid_argument("runner: token id " + std::to_string(b.tokens[t]) +
                              " out of range [0, " + std::to_string(vocab) + ")" + at);
    }
    const int32_t seq = b.seq_index[t];
    if (seq < 0 || seq >= static_cast<int32_t>(b.block_tables.size())) {
      return invalid_argument("runner: seq_index " + std::to_string(seq) + " out of range" + at);
    }
    const int32_t pos = b.positions[t];
    if (pos < 0 || pos / block_size >= static_cast<int64_t>(b.block_tables[seq].size())) {
      return invalid_argument("runner: position " + std::to_string(pos) +
                              " is not covered by the block table of sequence " +
                              std::to_string(seq) + at);
    }
    if (b.slot_mapping[t] < 0 || b.slot_mapping[t] >= num_slots) {
      return invalid_argument("runner: slot " + std::to_string(b.slot_mapping[t]) +
                              " out of range" + at);
    }
  }
  if (static_cast<int64_t>(b.logits_indices.size()) > n) {
    return invalid_argument("runner: more logits indices than batch rows");
  }
  for (int32_t row : b.logits_indices) {
    if (row < 0 || row >= n) {
      return invalid_argument("runner: logits index " + std::to_string(row) + " out of range");
    }
  }
  return Status::ok();
}

Status ModelRunner::forward(const ForwardBatch& b, float* logits_out) {
  STRATA_RETURN_IF_ERROR(validate(b));
  ProcessGroup* group = weights_.group();
  if (group == nullptr) {
    forward_local(b, logits_out);
    return Status::ok();
  }
  try {
    if (group->layout().is_driver()) {
      // A launched batch's activations may still be on their way.
      group->wait_sends();
      group->broadcast_control(ControlKind::kForward, encode_forward_batch(b));
    }
    forward_local(b, logits_out);
  } catch (const GroupFailure& e) {
    // The process is about to exit; the step's requests get a 503.
    return Status(StatusCode::kResourceExhausted,
                  std::string("the model-parallel group failed (") + e.what() + ")");
  }
  return Status::ok();
}

bool ModelRunner::can_pipeline() const {
  const ProcessGroup* group = weights_.group();
  return group != nullptr && weights_.layout().is_driver() &&
         weights_.layout().pipeline_parallel_size > 1;
}

Status ModelRunner::launch(const ForwardBatch& b) {
  STRATA_RETURN_IF_ERROR(validate(b));
  ProcessGroup* group = weights_.group();
  try {
    // The previous batch's activations leave from x_, which this one
    // overwrites.
    group->wait_sends();
    group->broadcast_control(ControlKind::kForward, encode_forward_batch(b));
    forward_local(b, nullptr, /*gathers=*/false);
  } catch (const GroupFailure& e) {
    return Status(StatusCode::kResourceExhausted,
                  std::string("the model-parallel group failed (") + e.what() + ")");
  }
  in_flight_logits_.push_back(static_cast<int64_t>(b.logits_indices.size()));
  return Status::ok();
}

Status ModelRunner::collect(float* logits_out) {
  const int64_t n_logits = in_flight_logits_.front();
  in_flight_logits_.pop_front();
  if (n_logits == 0) return Status::ok();
  try {
    const auto t = ForwardProfile::Clock::now();
    gather_logits(n_logits, logits_out);
    profile_.lap(t, ForwardPhase::kExchange, 0,
                 static_cast<double>(n_logits) * static_cast<double>(vocab_size()) * sizeof(float),
                 Arithmetic::kNone);
  } catch (const GroupFailure& e) {
    return Status(StatusCode::kResourceExhausted,
                  std::string("the model-parallel group failed (") + e.what() + ")");
  }
  return Status::ok();
}

namespace {

// From this many rows on, the row-wise elementwise ops (norms, bias, rope,
// SiLU x up, residual adds) run on the pool's threads; below, one thread
// (a decode step's few rows cost less than waking the pool).
constexpr int64_t kParallelElementwiseRows = 16;

}  // namespace

template <class Fn>
void ModelRunner::for_rows(int64_t n, Fn&& fn) {
  if (n < kParallelElementwiseRows || pool_.num_threads() == 1) {
    fn(int64_t{0}, n);
    return;
  }
  pool_.run([&](int ith, int nth) {
    int64_t begin, end;
    split_range(n, ith, nth, &begin, &end);
    if (begin < end) fn(begin, end);
  });
}

void ModelRunner::forward_local(const ForwardBatch& b, float* logits_out, bool gathers) {
  const ModelConfig& c = weights_.local_config();
  ProcessGroup* group = weights_.group();
  const ParallelLayout& layout = weights_.layout();
  const bool is_tp = layout.tensor_parallel_size > 1;
  const int64_t n = b.num_tokens();
  const int64_t hidden = c.hidden_dim;
  const float eps = c.rms_norm_eps;
  const RopeParams rope_params = c.rope_params();
  const float attn_scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));

  float* x = x_.data();
  float* xn = xn_.data();
  float* q = q_.data();
  float* k = k_.data();
  float* v = v_.data();
  float* attn = attn_.data();
  float* gate = gate_.data();
  float* up = up_.data();

  // Every step below is timed lap to lap into profile_ (forward_profile.h)
  // with the work it did, so the phases add up to the whole pass.
  using Phase = ForwardPhase;
  const double f = sizeof(float);
  const double nd = static_cast<double>(n);
  auto t = ForwardProfile::Clock::now();
  if (layout.is_first_stage()) {
    pool_.run([&](int ith, int nth) {
      int64_t begin, end;
      split_range(n, ith, nth, &begin, &end);
      for (int64_t t = begin; t < end; ++t) weights_.embed(b.tokens[t], x + t * hidden);
    });
    t = profile_.lap(t, Phase::kElementwise, 0, nd * hidden * f * 2, Arithmetic::kNone);
  } else {
    group->recv(layout.rank_of(layout.pp_rank() - 1, layout.tp_rank()), x,
                static_cast<size_t>(n * hidden) * sizeof(float), "the pipeline's activations");
    t = profile_.lap(t, Phase::kExchange, 0, nd * hidden * f, Arithmetic::kNone);
  }

  for (size_t s = 0; s < b.block_tables.size(); ++s) tables_[s] = b.block_tables[s].data();
  AttentionBatch ab;
  ab.n_tokens = n;
  ab.pos = b.positions.data();
  ab.seq = b.seq_index.data();
  ab.block_tables = tables_.data();

  // One layer's attention work: QK and PV over each token's causal context
  // (4 ops per head dim and position), each sequence's KV read once, the new
  // K and V written, q in and the output out.
  double attn_ops = 0, attn_bytes = 0;
  {
    const double kv_bytes_per_pos = 2.0 * static_cast<double>(c.kv_dim()) * sizeof(uint16_t);
    seq_context_.assign(b.block_tables.size(), 0);  // reserved: allocates nothing
    for (int64_t i = 0; i < n; ++i) {
      attn_ops += 4.0 * c.num_heads * c.head_dim * (static_cast<double>(b.positions[i]) + 1.0);
      int64_t& ctx = seq_context_[static_cast<size_t>(b.seq_index[i])];
      ctx = std::max<int64_t>(ctx, b.positions[i] + 1);
    }
    for (int64_t ctx : seq_context_) attn_bytes += static_cast<double>(ctx) * kv_bytes_per_pos;
    attn_bytes += nd * (2.0 * c.q_dim() * f + 2.0 * c.kv_dim() * f);
  }
  // Under tensor parallelism O and down give partial sums that the stage's
  // shards add up.
  auto all_reduce_partial_sums = [&](float* y) {
    if (!is_tp) return;
    group->all_reduce_sum(y, n * hidden);
    t = profile_.lap(t, Phase::kExchange, 0, nd * hidden * f, Arithmetic::kNone);
  };
  const double norm_bytes = nd * hidden * f * 2;
  const double residual_bytes = nd * hidden * f * 3;

  for (int il = 0; il < c.num_layers; ++il) {
    const LayerWeights& l = weights_.layers()[il];
    // Row-wise ops split by token rows: each row is computed the same way
    // whichever thread and split it falls in (a SiLU row's vector body and
    // scalar tail start at the row).
    for_rows(n, [&](int64_t r0, int64_t r1) {
      rms_norm(x + r0 * hidden, l.attn_norm, xn + r0 * hidden, r1 - r0, hidden, eps);
    });
    t = profile_.lap(t, Phase::kElementwise, 0, norm_bytes, Arithmetic::kNone);
    matmul_group({{&l.attn_q, q}, {&l.attn_k, k}, {&l.attn_v, v}}, xn, n, pool_);
    t = profile_.lap_matmuls(t, Phase::kQkvProj, {&l.attn_q, &l.attn_k, &l.attn_v}, n);
    for_rows(n, [&](int64_t r0, int64_t r1) {
      const int64_t rows = r1 - r0;
      float* qr = q + r0 * c.q_dim();
      float* kr = k + r0 * c.kv_dim();
      if (l.bias_q != nullptr) {
        add_bias(qr, l.bias_q, rows, c.q_dim());
        add_bias(kr, l.bias_k, rows, c.kv_dim());
        add_bias(v + r0 * c.kv_dim(), l.bias_v, rows, c.kv_dim());
      }
      if (l.q_norm != nullptr) {
        rms_norm(qr, l.q_norm, qr, rows * c.num_heads, c.head_dim, eps);
        rms_norm(kr, l.k_norm, kr, rows * c.num_kv_heads, c.head_dim, eps);
      }
      rope(qr, b.positions.data() + r0, rows, c.num_heads, rope_params);
      rope(kr, b.positions.data() + r0, rows, c.num_kv_heads, rope_params);
    });
    t = profile_.lap(t, Phase::kElementwise, 0, nd * (c.q_dim() + c.kv_dim()) * f * 2,
                     Arithmetic::kNone);

    const KvLayerView kv = kv_.layer(il);
    write_kv(kv, k, v, b.slot_mapping.data(), n);
    paged_attention(q, kv, ab, c.num_heads, attn_scale, attn, pool_);
    t = profile_.lap(t, Phase::kAttention, attn_ops, attn_bytes, Arithmetic::kFp32);

    matmul(l.attn_output, attn, n, xn, pool_);
    t = profile_.lap_matmuls(t, Phase::kOProj, {&l.attn_output}, n);
    all_reduce_partial_sums(xn);
    for_rows(n, [&](int64_t r0, int64_t r1) {
      add_inplace(x + r0 * hidden, xn + r0 * hidden, (r1 - r0) * hidden);
      rms_norm(x + r0 * hidden, l.ffn_norm, xn + r0 * hidden, r1 - r0, hidden, eps);
    });
    t = profile_.lap(t, Phase::kElementwise, 0, residual_bytes + norm_bytes, Arithmetic::kNone);
    matmul_group({{&l.ffn_gate, gate}, {&l.ffn_up, up}}, xn, n, pool_);
    t = profile_.lap_matmuls(t, Phase::kGateUpProj, {&l.ffn_gate, &l.ffn_up}, n);
    for_rows(n, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        silu_mul(gate + r * c.ffn_dim, up + r * c.ffn_dim, gate + r * c.ffn_dim, c.ffn_dim);
      }
    });
    t = profile_.lap(t, Phase::kElementwise, 0, nd * c.ffn_dim * f * 3, Arithmetic::kNone);
    matmul(l.ffn_down, gate, n, xn, pool_);
    t = profile_.lap_matmuls(t, Phase::kDownProj, {&l.ffn_down}, n);
    all_reduce_partial_sums(xn);
    for_rows(n, [&](int64_t r0, int64_t r1) {
      add_inplace(x + r0 * hidden, xn + r0 * hidden, (r1 - r0) * hidden);
    });
    t = profile_.lap(t, Phase::kElementwise, 0, residual_bytes, Arithmetic::kNone);
  }

  const int64_t n_logits = static_cast<int64_t>(b.logits_indices.size());
  if (!layout.is_last_stage()) {
    // Shard t of the next stage continues from this residual stream.
    group->isend(layout.rank_of(layout.pp_rank() + 1, layout.tp_rank()), x,
                 static_cast<size_t>(n * hidden) * sizeof(float), "the pipeline's activations");
    if (!gathers) {
      // launch(): collect() gathers, the next launch waits for the send
      profile_.lap(t, Phase::kExchange, 0, nd * hidden * f, Arithmetic::kNone);
      return;
    }
    if (layout.is_driver() && n_logits > 0) gather_logits(n_logits, logits_out);
    group->wait_sends();
    profile_.lap(t, Phase::kExchange, 0, nd * hidden * f, Arithmetic::kNone);
    return;
  }
  // Only the rows that sample go through the head: gather them into xn.
  if (n_logits == 0) return;
  for (int64_t i = 0; i < n_logits; ++i) {
    const float* src = x + static_cast<int64_t>(b.logits_indices[i]) * hidden;
    std::copy(src, src + hidden, xn + i * hidden);
  }
  rms_norm(xn, weights_.output_norm(), xn, n_logits, hidden, eps);
  t = profile_.lap(t, Phase::kElementwise, 0, static_cast<double>(n_logits) * hidden * f * 3,
                   Arithmetic::kNone);
  if (group == nullptr) {
    matmul(weights_.output(), xn, n_logits, logits_out, pool_);
    profile_.lap_matmuls(t, Phase::kLmHead, {&weights_.output()}, n_logits);
    return;
  }
  matmul(weights_.output(), xn, n_logits, logits_local_.data(), pool_);
  t = profile_.lap_matmuls(t, Phase::kLmHead, {&weights_.output()}, n_logits);
  gather_logits(n_logits, logits_out);
  profile_.lap(
      t, Phase::kExchange, 0,
      static_cast<double>(n_logits) * static_cast<double>(weights_.config().vocab_size) * f,
      Arithmetic::kNone);
}

void ModelRunner::gather_logits(int64_t n_logits, float* logits_out) {
  ProcessGroup& group = *weights_.group();
  const ParallelLayout& layout = weights_.layout();
  const int64_t vocab = weights_.config().vocab_size;
  if (!layout.is_driver()) {
    const size_t bytes =
        static_cast<size_t>(n_logits * (weights_.vocab_end() - weights_.vocab_begin())) *
        sizeof(float);
    group.send(0, logits_local_.data(), bytes, "the logits gather");
    return;
  }
  // Rank 0 places every last-stage shard's columns, shard order.
  const int last = layout.pipeline_parallel_size - 1;
  for (int shard = 0; shard < layout.tensor_parallel_size; ++shard) {
    ParallelLayout of = layout;
    of.rank = layout.rank_of(last, shard);
    int64_t v0 = 0, v1 = 0;
    of.shard_range(vocab, &v0, &v1);
    const float* part = logits_local_.data();
    if (of.rank != 0) {
      group.recv(of.rank, logits_part_.data(),
                 static_cast<size_t>(n_logits * (v1 - v0)) * sizeof(float), "the logits gather");
      part = logits_part_.data();
    }
    for (int64_t i = 0; i < n_logits; ++i) {
      std::copy(part + i * (v1 - v0), part + (i + 1) * (v1 - v0), logits_out + i * vocab + v0);
    }
  }
}

}  // namespace strata
