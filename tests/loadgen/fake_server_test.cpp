// End to end against an in-process fake OpenAI server (cpp-httplib on port
// 0): it streams a known number of content chunks per request (no delays),
// optionally merging tokens into one chunk, and fails requests on demand.
// Checks the counts the runner measures, the JSON result fields, the
// multi-turn history, model/vocab discovery and the vocab probe.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "loadgen/benchmark_runner.h"
#include "loadgen/openai_client.h"
#include "loadgen/result_json.h"

namespace strata::loadgen {
namespace {

using nlohmann::json;

class FakeServer {
 public:
  static constexpr int32_t kVocab = 1000;

  FakeServer() {
    srv_.Get("/v1/models", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(R"({"object":"list","data":[{"id":"fake-model","meta":{"n_vocab":1000}}]})",
                      "application/json");
    });
    auto gen = [this](const httplib::Request& req, httplib::Response& res, bool is_chat) {
      json body = json::parse(req.body, nullptr, false);
      {
        std::lock_guard<std::mutex> lock(mu_);
        bodies_.push_back(body);
      }
      if (!body.is_object() || !body.contains("max_tokens")) {
        res.status = 400;
        res.set_content(R"({"error":{"message":"no max_tokens"}})", "application/json");
        return;
      }
      const int n = body["max_tokens"].get<int>();
      if (n == 13) {
        res.status = 500;
        res.set_content(R"({"error":{"message":"unlucky"}})", "application/json");
        return;
      }
      int64_t prompt_tokens = 0;
      if (!is_chat) {
        const json& p = body["prompt"];
        if (p.is_array()) {
          for (const json& id : p) {
            if (id.get<int64_t>() >= kVocab) {
              res.status = 400;
              res.set_content(R"({"error":{"message":"token id out of range"}})",
                              "application/json");
              return;
            }
          }
          prompt_tokens = static_cast<int64_t>(p.size());
        } else {
          prompt_tokens = static_cast<int64_t>(p.get<std::string>().size());
        }
      } else {
        prompt_tokens = static_cast<int64_t>(body["messages"].size());
      }
      if (!body.value("stream", false)) {
        res.set_content(R"({"choices":[{"text":"x"}]})", "application/json");
        return;
      }
      // max_tokens == 6: tokens 2..4 arrive merged in one chunk.
      const bool merge = n == 6;
      res.set_chunked_content_provider("text/event-stream", [=](size_t, httplib::DataSink& sink) {
        auto content = [&](const std::string& t) {
          json c = is_chat ? json{{"choices", {{{"index", 0}, {"delta", {{"content", t}}}}}}}
                           : json{{"choices", {{{"index", 0}, {"text", t}}}}};
          return "data: " + c.dump() + "\n\n";
        };
        if (is_chat) {
          const std::string role =
              R"(data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]})";
          sink.write(role.data(), role.size());
          sink.write("\n\n", 2);
        }
        for (int i = 0; i < n; ++i) {
          std::string s;
          if (merge && i == 2) {
            s = content("t2t3t4");
            i = 4;
          } else {
            s = content("t" + std::to_string(i));
          }
          sink.write(s.data(), s.size());
        }
        const std::string tail =
            "data: " +
            json{{"choices", json::array()},
                 {"usage", {{"prompt_tokens", prompt_tokens}, {"completion_tokens", n}}}}
                .dump() +
            "\n\ndata: [DONE]\n\n";
        sink.write(tail.data(), tail.size());
        sink.done();
        return true;
      });
    };
    srv_.Post("/v1/completions",
              [gen](const httplib::Request& q, httplib::Response& r) { gen(q, r, false); });
    srv_.Post("/v1/chat/completions",
              [gen](const httplib::Request& q, httplib::Response& r) { gen(q, r, true); });
    srv_.set_tcp_nodelay(true);
    port_ = srv_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { srv_.listen_after_bind(); });
    while (!srv_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~FakeServer() {
    srv_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<json> bodies() {
    std::lock_guard<std::mutex> lock(mu_);
    return bodies_;
  }

 private:
  httplib::Server srv_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::vector<json> bodies_;
};

ClientOptions client_for(const FakeServer& s) {
  ClientOptions c;
  c.base_url = s.url();
  c.read_timeout_s = 10;
  return c;
}

TEST(FakeServer, RandomDatasetCountsAndJsonFields) {
  FakeServer srv;
  auto ds = make_random_dataset({12, 16, 5, 0.0, FakeServer::kVocab, 1});
  ASSERT_TRUE(ds.is_ok());
  RunOptions opt;
  opt.body.model = "fake-model";
  opt.max_concurrency = 4;
  opt.num_warmups = 1;
  auto r = run_benchmark(client_for(srv), opt, *ds);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  const BenchmarkMetrics& m = r->metrics;
  EXPECT_EQ(m.num_completed, 12);
  EXPECT_EQ(m.num_failed, 0);
  EXPECT_EQ(m.total_input_tokens, 12 * 16);
  EXPECT_EQ(m.total_output_tokens, 12 * 5);
  EXPECT_EQ(m.itl.num_samples, 12 * 4);
  EXPECT_EQ(m.tpot.num_samples, 12);
  EXPECT_LE(m.max_concurrent_requests, 4);
  EXPECT_GT(m.duration_s, 0.0);
  for (const RequestOutcome& o : r->outcomes) {
    EXPECT_TRUE(o.is_success) << o.error;
    EXPECT_EQ(o.num_content_chunks, 5);
    EXPECT_LE(o.ttft_s, o.e2e_s);
  }
  // Every body: streamed with usage, EOS ignored, greedy, the model, ids.
  const auto bodies = srv.bodies();
  ASSERT_EQ(bodies.size(), 13u);  // + warm-up
  for (const json& b : bodies) {
    EXPECT_EQ(b["stream"], true);
    EXPECT_EQ(b["stream_options"]["include_usage"], true);
    EXPECT_EQ(b["ignore_eos"], true);
    EXPECT_EQ(b["temperature"], 0.0);
    EXPECT_EQ(b["model"], "fake-model");
    EXPECT_EQ(b["max_tokens"], 5);
    EXPECT_EQ(b["prompt"].size(), 16u);
  }
  const json j = make_result_json(*r, json{{"model_id", "fake-model"}}, false);
  EXPECT_EQ(j["model_id"], "fake-model");
  EXPECT_EQ(j["completed"], 12);
  EXPECT_EQ(j["failed"], 0);
  EXPECT_EQ(j["total_output_tokens"], 60);
  for (const char* k :
       {"duration", "request_throughput", "output_throughput", "total_token_throughput",
        "mean_ttft_ms", "median_ttft_ms", "std_ttft_ms", "p90_ttft_ms", "p99_ttft_ms",
        "mean_tpot_ms", "median_tpot_ms", "p99_tpot_ms", "mean_itl_ms", "median_itl_ms",
        "p99_itl_ms", "mean_e2el_ms", "p99_e2el_ms", "request_goodput"}) {
    EXPECT_TRUE(j.contains(k)) << k;
  }
  EXPECT_TRUE(j["request_goodput"].is_null());
  EXPECT_EQ(j["ttfts"].size(), 12u);
  EXPECT_EQ(j["itls"].size(), 12u);
  EXPECT_EQ(j["itls"][0].size(), 4u);
  EXPECT_EQ(j["input_lens"][3], 16);
  EXPECT_EQ(j["output_lens"][3], 5);
  EXPECT_EQ(j["errors"][0], "");
  EXPECT_FALSE(j.contains("generated_texts"));
}

TEST(FakeServer, FailuresMergedChunksAndRateLimitedArrivals) {
  FakeServer srv;
  auto ds = parse_jsonl_dataset(
      "{\"prompt\":\"abc\",\"max_tokens\":3}\n"
      "{\"prompt\":\"abcd\",\"max_tokens\":13}\n"
      "{\"prompt\":[1,2],\"max_tokens\":6}\n",
      4, 0);
  ASSERT_TRUE(ds.is_ok());
  RunOptions opt;
  opt.request_rate = 200.0;  // finite: exercises the schedule
  opt.num_warmups = 0;
  SloOptions slo;
  slo.ttft_ms = 60000.0;
  opt.slo = slo;
  auto r = run_benchmark(client_for(srv), opt, *ds);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  const BenchmarkMetrics& m = r->metrics;
  EXPECT_EQ(m.num_completed, 2);
  EXPECT_EQ(m.num_failed, 1);
  ASSERT_EQ(m.first_errors.size(), 1u);
  EXPECT_EQ(m.first_errors[0], "HTTP 500: unlucky");
  EXPECT_EQ(r->outcomes[0].num_prompt_tokens, 3);  // from usage (text prompt)
  // Merged chunk: 4 chunks for 6 tokens, spread to 5 ITL samples.
  EXPECT_EQ(r->outcomes[2].num_content_chunks, 4);
  EXPECT_EQ(r->outcomes[2].num_output_tokens, 6);
  EXPECT_EQ(r->outcomes[2].itls_s.size(), 5u);
  EXPECT_EQ(m.total_output_tokens, 9);
  EXPECT_EQ(m.num_good, 2);
  ASSERT_TRUE(m.request_goodput.has_value());
  const json j = make_result_json(*r, json::object(), false);
  EXPECT_EQ(j["errors"][1], "HTTP 500: unlucky");
  EXPECT_EQ(j["failed"], 1);
}

TEST(FakeServer, MultiTurnCarriesTheHistoryWithActualReplies) {
  FakeServer srv;
  auto sessions = make_multi_turn_sessions({2, 3, 4, 2, 8});
  ASSERT_TRUE(sessions.is_ok());
  RunOptions opt;
  opt.endpoint = "/v1/chat/completions";
  opt.num_warmups = 0;
  opt.max_concurrency = 2;
  auto r = run_multi_turn_benchmark(client_for(srv), opt, *sessions);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r->metrics.num_completed, 6);
  EXPECT_EQ(r->metrics.total_output_tokens, 12);
  // Turn t of a session carries 2t+1 messages; replies are "t0t1".
  const auto bodies = srv.bodies();
  ASSERT_EQ(bodies.size(), 6u);
  int num_third_turns = 0;
  for (const json& b : bodies) {
    const json& msgs = b["messages"];
    ASSERT_EQ(msgs.size() % 2, 1u);
    for (size_t i = 0; i < msgs.size(); ++i) {
      EXPECT_EQ(msgs[i]["role"], i % 2 == 0 ? "user" : "assistant");
      if (i % 2 == 1) {
        EXPECT_EQ(msgs[i]["content"], "t0t1");
      }
    }
    if (msgs.size() == 5) {
      ++num_third_turns;
      bool found = false;
      for (const ChatSession& s : *sessions) found |= msgs[4]["content"] == s.user_messages[2];
      EXPECT_TRUE(found);
    }
  }
  EXPECT_EQ(num_third_turns, 2);
}

TEST(FakeServer, ModelDiscoveryAndVocabProbe) {
  FakeServer srv;
  auto client = OpenAiClient::create(client_for(srv));
  ASSERT_TRUE(client.is_ok());
  auto models = (*client)->get_models();
  ASSERT_TRUE(models.is_ok()) << models.status().message();
  EXPECT_EQ(*first_model_id(*models), "fake-model");
  EXPECT_EQ(advertised_vocab_size(*models), FakeServer::kVocab);
  auto probed = probe_vocab_size(client->get(), "");
  ASSERT_TRUE(probed.is_ok()) << probed.status().message();
  EXPECT_EQ(*probed, FakeServer::kVocab);
}

TEST(FakeServer, WarmUpFailureAndUnreachableServerAreErrors) {
  FakeServer srv;
  auto ds = parse_jsonl_dataset("{\"prompt\":\"a\",\"max_tokens\":13}\n", 1, 0);
  ASSERT_TRUE(ds.is_ok());
  RunOptions opt;
  auto r = run_benchmark(client_for(srv), opt, *ds);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("unlucky"), std::string::npos);
  ClientOptions dead;
  dead.base_url = "http://127.0.0.1:1";
  dead.connect_timeout_s = 2;
  auto client = OpenAiClient::create(dead);
  ASSERT_TRUE(client.is_ok());
  EXPECT_FALSE((*client)->get_models().is_ok());
  EXPECT_FALSE(OpenAiClient::create({"127.0.0.1:8080", "", 1, 1}).is_ok());
  EXPECT_FALSE(OpenAiClient::create({"ftp://x", "", 1, 1}).is_ok());
}

}  // namespace
}  // namespace strata::loadgen
