#include "runtime/model_worker.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <thread>

#include "parallel/process_group.h"
#include "runtime/forward_batch_codec.h"
#include "runtime/kv_storage.h"
#include "runtime/model_runner.h"
#include "util/thread_pool.h"

namespace strata {

Status run_model_worker(const ModelWeights& weights, int num_threads,
                        const KvTierMessageHandler& on_kv_tier) {
  ProcessGroup* group = weights.group();
  if (group == nullptr || group->layout().is_driver()) {
    return internal_error("model worker: needs a shard of a rank other than 0");
  }
  ThreadPool pool(num_threads > 0
                      ? num_threads
                      : static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  std::unique_ptr<KvStorage> kv;
  std::unique_ptr<ModelRunner> runner;
  for (;;) {
    ControlMessage m = group->receive_control();
    switch (m.kind) {
      case ControlKind::kStop:
        return Status::ok();
      case ControlKind::kHello: {
        int64_t hello[3] = {0, 0, 0};
        if (m.payload.size() != sizeof(hello)) group->fail("a hello from rank 0 is malformed");
        std::memcpy(hello, m.payload.data(), sizeof(hello));
        runner.reset();
        kv.reset();
        Result<KvStorage> storage =
            KvStorage::create(weights.local_config(), static_cast<int>(hello[1]), hello[0]);
        if (!storage)
          group->fail("this rank cannot allocate its KV pool: " + storage.status().message());
        kv = std::make_unique<KvStorage>(std::move(*storage));
        runner = std::make_unique<ModelRunner>(weights, *kv, pool, hello[2]);
        const int32_t ready = 1;
        group->send(0, &ready, sizeof(ready), "the start-up");
        break;
      }
      case ControlKind::kForward: {
        if (runner == nullptr) group->fail("rank 0 sent a step before its hello");
        Result<ForwardBatch> batch = decode_forward_batch(m.payload);
        if (!batch) group->fail("a step from rank 0 does not decode: " + batch.status().message());
        if (Status s = runner->forward(*batch, nullptr); !s) {
          group->fail("a step from rank 0 does not fit this rank: " + s.message());
        }
        break;
      }
      case ControlKind::kKvTier:
        if (kv == nullptr || !on_kv_tier) group->fail("rank 0 sent a KV tier message out of turn");
        on_kv_tier(m.payload, *kv);
        break;
      default:
        group->fail("unknown control message " + std::to_string(static_cast<int>(m.kind)) +
                    " from rank 0");
    }
  }
}

}  // namespace strata
