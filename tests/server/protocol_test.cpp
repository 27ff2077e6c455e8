// Protocol unit tests: JSON bodies to request structs, every validation rule
// and its error status, code and param.
#include "server/protocol.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>

#include "server/api_error.h"

namespace strata::server {
namespace {

using nlohmann::json;

ProtocolLimits protocol_limits() {
  ProtocolLimits l;
  l.vocab_size = 500;
  l.max_model_len = 100;
  l.max_n = 4;
  return l;
}

std::optional<ApiError> completion(const std::string& body, CompletionRequest* out = nullptr) {
  CompletionRequest tmp;
  json j;
  if (auto e = parse_json_body(body, protocol_limits(), &j)) return e;
  return parse_completion_request(j, protocol_limits(), out != nullptr ? out : &tmp);
}

std::optional<ApiError> chat(const std::string& body, ChatRequest* out = nullptr) {
  ChatRequest tmp;
  nlohmann::ordered_json j;
  if (auto e = parse_json_body(body, protocol_limits(), &j)) return e;
  return parse_chat_request(j, protocol_limits(), out != nullptr ? out : &tmp);
}

void expect_400(const std::optional<ApiError>& e, const std::string& param) {
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->http_status, 400);
  EXPECT_EQ(e->param, param);
  EXPECT_EQ(e->type, "invalid_request_error");
}

TEST(ProtocolTest, ParsesAFullCompletionRequest) {
  CompletionRequest r;
  ASSERT_FALSE(completion(R"({"model":"m","prompt":"hi","max_tokens":7,"temperature":0.5,
      "top_p":0.9,"top_k":5,"min_p":0.1,"repetition_penalty":1.1,"presence_penalty":0.5,
      "frequency_penalty":-0.5,"n":3,"stop":["a","bb"],"seed":42,"logit_bias":{"7":-100,"3":5.5},
      "min_tokens":2,"ignore_eos":true,"priority":-3,"cache_salt":"s","user":"u","stream":true,
      "stream_options":{"include_usage":true},"logprobs":3,"stop_token_ids":[5,9],
      "include_stop_str_in_output":true,"skip_special_tokens":false,"add_special_tokens":false})",
                          &r));
  ASSERT_EQ(r.prompts.size(), 1u);
  EXPECT_EQ(r.prompts[0].text, "hi");
  EXPECT_EQ(r.params.model, "m");
  EXPECT_EQ(r.params.stop_token_ids, (std::vector<int32_t>{5, 9}));
  EXPECT_TRUE(r.params.include_stop_str_in_output);
  EXPECT_FALSE(r.params.skip_special_tokens);
  EXPECT_FALSE(r.add_special_tokens);
  EXPECT_EQ(r.params.max_tokens, 7);
  EXPECT_FLOAT_EQ(r.params.temperature, 0.5f);
  EXPECT_EQ(r.params.top_k, 5);
  EXPECT_EQ(r.params.n, 3);
  EXPECT_EQ(r.params.stop, (std::vector<std::string>{"a", "bb"}));
  EXPECT_EQ(r.params.seed, 42u);
  ASSERT_EQ(r.params.logit_bias.size(), 2u);
  EXPECT_EQ(r.params.min_tokens, 2);
  EXPECT_TRUE(r.params.ignore_eos);
  EXPECT_EQ(r.params.priority, -3);
  EXPECT_EQ(r.params.cache_salt, "s");
  EXPECT_TRUE(r.params.stream);
  EXPECT_TRUE(r.params.include_usage);
  EXPECT_EQ(r.logprobs, 3);
}

TEST(ProtocolTest, PromptForms) {
  CompletionRequest r;
  ASSERT_FALSE(completion(R"({"prompt":[1,2,499]})", &r));
  EXPECT_EQ(r.prompts.at(0).ids, (std::vector<int32_t>{1, 2, 499}));
  CompletionRequest r2;
  ASSERT_FALSE(completion(R"({"prompt":[[4,5]]})", &r2));
  EXPECT_EQ(r2.prompts.at(0).ids, (std::vector<int32_t>{4, 5}));
  CompletionRequest r3;
  ASSERT_FALSE(completion(R"({"prompt":["x"]})", &r3));
  EXPECT_EQ(r3.prompts.at(0).text, "x");
  // A list of prompts, text or ids, each served as its own choices.
  CompletionRequest r4;
  ASSERT_FALSE(completion(R"({"prompt":["a","b",[7,8]]})", &r4));
  ASSERT_EQ(r4.prompts.size(), 3u);
  EXPECT_EQ(r4.prompts[1].text, "b");
  EXPECT_EQ(r4.prompts[2].ids, (std::vector<int32_t>{7, 8}));
  expect_400(completion(R"({"prompt":["a",""]})"), "prompt");
  expect_400(completion(R"({"prompt":["a",7]})"), "prompt");
  expect_400(completion(R"({"prompt":[1,500]})"), "prompt");
  expect_400(completion(R"({"prompt":[-1]})"), "prompt");
  expect_400(completion(R"({"prompt":[1.5]})"), "prompt");
  expect_400(completion(R"({"prompt":[]})"), "prompt");
  expect_400(completion(R"({"prompt":""})"), "prompt");
  expect_400(completion(R"({"prompt":7})"), "prompt");
  expect_400(completion(R"({})"), "prompt");
}

TEST(ProtocolTest, MalformedBodies) {
  expect_400(completion(""), "");
  expect_400(completion("{\"prompt\":"), "");
  expect_400(completion("[1,2]"), "");
  expect_400(completion("\"str\""), "");
  expect_400(completion("{\"prompt\":\"\xff\xfe\"}"), "");
  expect_400(completion("{\"prompt\":\"a\",\"temperature\":NaN}"), "");
  expect_400(completion(std::string(100000, '[') + std::string(100000, ']')), "");
  // Brackets inside strings do not count as nesting.
  EXPECT_FALSE(completion("{\"prompt\":\"" + std::string(1000, '[') + "\"}"));
}

// Found by fuzz/fuzz_protocol: the JSON parser stops at a NUL byte, so a
// body with one was accepted as its prefix and the rest ignored.
TEST(ProtocolTest, NulByteAnywhereIsInvalidJson) {
  using namespace std::string_literals;
  expect_400(completion("{\"prompt\":\"a\"}\0{\"prompt\":\"b\"}"s), "");
  expect_400(completion("{}\0\"prompt\": [[5, 6, 7%]], \"logprobs\": 0}"s), "");
  expect_400(completion("{\"prompt\":\"a\0b\"}"s), "");  // raw, not \u0000
  expect_400(completion("{\"prompt\":\"a\"}\0"s), "");
  CompletionRequest r;
  ASSERT_FALSE(completion(R"({"prompt":"a\u0000b"})", &r));  // the escaped form is fine
  EXPECT_EQ(r.prompts.at(0).text, "a\0b"s);
}

TEST(ProtocolTest, NestingDepth) {
  EXPECT_EQ(json_nesting_depth("{\"a\":[[1]]}", 100), 3);
  EXPECT_EQ(json_nesting_depth("\"[[[\"", 100), 0);
  EXPECT_EQ(json_nesting_depth("\"\\\"[\"", 100), 0);
  EXPECT_EQ(json_nesting_depth(std::string(1000, '['), 10), 11);
}

TEST(ProtocolTest, TypedLimits) {
  expect_400(completion(R"({"prompt":"a","max_tokens":0})"), "max_tokens");
  expect_400(completion(R"({"prompt":"a","max_tokens":"5"})"), "max_tokens");
  expect_400(completion(R"({"prompt":"a","max_tokens":5.0})"), "max_tokens");
  expect_400(completion(R"({"prompt":"a","max_tokens":1e300})"), "max_tokens");
  expect_400(completion(R"({"prompt":"a","max_tokens":99999999999999999999999})"), "max_tokens");
  expect_400(completion(R"({"prompt":"a","max_completion_tokens":-1})"), "max_completion_tokens");
  expect_400(completion(R"({"prompt":"a","temperature":2.5})"), "temperature");
  expect_400(completion(R"({"prompt":"a","temperature":1e999})"), "");  // overflow: not JSON
  expect_400(completion(R"({"prompt":"a","temperature":true})"), "temperature");
  expect_400(completion(R"({"prompt":"a","top_p":0})"), "top_p");
  expect_400(completion(R"({"prompt":"a","top_p":1.01})"), "top_p");
  expect_400(completion(R"({"prompt":"a","top_k":-2})"), "top_k");
  expect_400(completion(R"({"prompt":"a","min_p":-0.1})"), "min_p");
  expect_400(completion(R"({"prompt":"a","repetition_penalty":0})"), "repetition_penalty");
  expect_400(completion(R"({"prompt":"a","presence_penalty":2.1})"), "presence_penalty");
  expect_400(completion(R"({"prompt":"a","frequency_penalty":-3})"), "frequency_penalty");
  expect_400(completion(R"({"prompt":"a","n":0})"), "n");
  expect_400(completion(R"({"prompt":"a","n":5})"), "n");
  expect_400(completion(R"({"prompt":"a","stop":["1","2","3","4","5"]})"), "stop");
  expect_400(completion(R"({"prompt":"a","stop":[1]})"), "stop");
  expect_400(completion(R"({"prompt":"a","stop":{}})"), "stop");
  expect_400(completion(R"({"prompt":"a","stop":")" + std::string(300, 'x') + R"("})"), "stop");
  expect_400(completion(R"({"prompt":"a","seed":1.5})"), "seed");
  expect_400(completion(R"({"prompt":"a","logit_bias":{"500":1}})"), "logit_bias");
  expect_400(completion(R"({"prompt":"a","logit_bias":{"-1":1}})"), "logit_bias");
  expect_400(completion(R"({"prompt":"a","logit_bias":{"abc":1}})"), "logit_bias");
  expect_400(completion(R"({"prompt":"a","logit_bias":{"1":101}})"), "logit_bias");
  expect_400(completion(R"({"prompt":"a","logit_bias":{"1":"x"}})"), "logit_bias");
  expect_400(completion(R"({"prompt":"a","logit_bias":[1]})"), "logit_bias");
  // One token named twice ("7" and "007") would add both biases, past 100.
  expect_400(completion(R"({"prompt":"a","logit_bias":{"7":100,"007":100}})"), "logit_bias");
  expect_400(completion(R"({"prompt":"a","logit_bias":{"0":-100,"00":-100}})"), "logit_bias");
  CompletionRequest lb;
  ASSERT_FALSE(completion(R"({"prompt":"a","logit_bias":{"007":1,"8":2}})", &lb));
  EXPECT_EQ(lb.params.logit_bias, (std::vector<std::pair<int32_t, float>>{{7, 1.0f}, {8, 2.0f}}));
  expect_400(completion(R"({"prompt":"a","max_tokens":3,"min_tokens":4})"), "min_tokens");
  expect_400(completion(R"({"prompt":"a","ignore_eos":1})"), "ignore_eos");
  expect_400(completion(R"({"prompt":"a","cache_salt":""})"), "cache_salt");
  expect_400(completion(R"({"prompt":"a","stream":"yes"})"), "stream");
  expect_400(completion(R"({"prompt":"a","stream_options":{"include_usage":true}})"),
             "stream_options");
  expect_400(completion(R"({"prompt":"a","logprobs":21})"), "logprobs");
  expect_400(completion(R"({"prompt":"a","logprobs":true})"), "logprobs");
  expect_400(completion(R"({"prompt":"a","echo":true,"logprobs":1})"), "echo");
  expect_400(completion(R"({"prompt":"a","model":5})"), "model");
}

TEST(ProtocolTest, ChatMessages) {
  ChatRequest r;
  ASSERT_FALSE(chat(R"({"messages":[{"role":"system","content":"s"},
      {"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},
      {"role":"assistant","content":null}],"logprobs":true,"top_logprobs":2,
      "max_completion_tokens":9})",
                    &r));
  ASSERT_EQ(r.messages.size(), 3u);
  EXPECT_EQ(r.messages[1].content, "a\nb");
  EXPECT_EQ(r.chat.messages[1]["content"], "a\nb");
  EXPECT_TRUE(r.logprobs);
  EXPECT_EQ(r.top_logprobs, 2);
  EXPECT_EQ(r.params.max_tokens, 9);
  expect_400(chat(R"({})"), "messages");
  expect_400(chat(R"({"messages":[]})"), "messages");
  expect_400(chat(R"({"messages":"hi"})"), "messages");
  expect_400(chat(R"({"messages":[{"role":"king","content":"x"}]})"), "messages");
  expect_400(chat(R"({"messages":[{"content":"x"}]})"), "messages");
  expect_400(chat(R"({"messages":[{"role":"user"}]})"), "messages");
  expect_400(chat(R"({"messages":[{"role":"user","content":5}]})"), "messages");
  expect_400(chat(R"({"messages":[{"role":"user","content":[{"type":"image_url"}]}]})"),
             "messages");
  expect_400(chat(R"({"messages":[{"role":"user","content":"x"}],"top_logprobs":2})"),
             "top_logprobs");
  expect_400(chat(R"({"messages":[{"role":"user","content":"x"}],"logprobs":true,
      "top_logprobs":21})"),
             "top_logprobs");
  expect_400(chat(R"({"messages":[{"role":"user","content":"x"}],"chat_template":"{{x}}"})"),
             "chat_template");
}

TEST(ProtocolTest, ChatTemplateFields) {
  ChatRequest r;
  ASSERT_FALSE(chat(R"({"messages":[{"role":"user","content":"x"}],
      "chat_template_kwargs":{"enable_thinking":false},"documents":[{"text":"d"}],
      "add_generation_prompt":false,"continue_final_message":true,"add_special_tokens":false})",
                    &r));
  EXPECT_TRUE(r.chat.is_thinking_disabled());
  EXPECT_TRUE(r.chat.continue_final_message);
  EXPECT_FALSE(r.chat.add_generation_prompt);
  EXPECT_FALSE(r.add_special_tokens);
  EXPECT_EQ(r.chat.documents.size(), 1u);
  const char* kMsg = R"("messages":[{"role":"user","content":"x"}])";
  // continue_final_message needs add_generation_prompt off (as transformers).
  expect_400(chat("{" + std::string(kMsg) + R"(,"continue_final_message":true})"),
             "continue_final_message");
  expect_400(chat("{" + std::string(kMsg) + R"(,"chat_template_kwargs":[1]})"),
             "chat_template_kwargs");
  expect_400(chat("{" + std::string(kMsg) + R"(,"chat_template_kwargs":{"messages":[]}})"),
             "chat_template_kwargs");
  expect_400(chat("{" + std::string(kMsg) + R"(,"documents":["d"]})"), "documents");
  // Tools reach the template (tool_call_parser.h validates their fields).
  ChatRequest with_tools;
  ASSERT_FALSE(chat("{" + std::string(kMsg) + R"(,"tools":[{"type":"function"}]})", &with_tools));
  EXPECT_EQ(with_tools.chat.tools.size(), 1u);
  expect_400(chat("{" + std::string(kMsg) + R"(,"tools":[1]})"), "tools");
  expect_400(chat(R"({"messages":[{"role":"assistant","content":null,"tool_calls":[
      {"type":"function","function":{"name":"f","arguments":"{bad"}}]}]})"),
             "messages");
  // /tokenize's chat form takes vLLM's fields, tools included.
  TokenizeRequest t;
  ASSERT_FALSE(
      parse_tokenize_request(json::parse("{" + std::string(kMsg) +
                                         R"(,"tools":[{"type":"function","function":{"name":"f"}}],
      "add_generation_prompt":false,"chat_template_kwargs":{"k":1},"add_special_tokens":false})"),
                             protocol_limits(), &t));
  EXPECT_EQ(t.chat.tools.size(), 1u);
  EXPECT_FALSE(t.add_special_tokens);
  EXPECT_FALSE(t.chat.add_generation_prompt);
  TokenizeRequest u;
  expect_400(parse_tokenize_request(json::parse("{" + std::string(kMsg) + R"(,"tools":5})"),
                                    protocol_limits(), &u),
             "tools");
  expect_400(parse_tokenize_request(json::parse("{" + std::string(kMsg) + R"(,"bogus":1})"),
                                    protocol_limits(), &u),
             "bogus");
  expect_400(
      parse_tokenize_request(json::parse(R"({"prompt":"x","tools":[]})"), protocol_limits(), &u),
      "tools");
}

TEST(ProtocolTest, ResolveMaxTokens) {
  GenerationParams p;
  ASSERT_FALSE(resolve_max_tokens(90, 16, "prompt", protocol_limits(), &p));
  EXPECT_EQ(p.max_tokens, 10);  // the default is clipped to the room left
  GenerationParams q;
  ASSERT_FALSE(resolve_max_tokens(10, 0, "messages", protocol_limits(), &q));
  EXPECT_EQ(q.max_tokens, 90);
  GenerationParams r;
  r.max_tokens = 11;
  auto e = resolve_max_tokens(90, 16, "prompt", protocol_limits(), &r);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, "context_length_exceeded");
  EXPECT_EQ(e->param, "max_tokens");
  GenerationParams s;
  e = resolve_max_tokens(100, 16, "prompt", protocol_limits(), &s);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, "context_length_exceeded");
  EXPECT_EQ(e->param, "prompt");
}

TEST(ProtocolTest, TokenizeAndDetokenize) {
  json j = json::parse(R"({"prompt":"x","add_special_tokens":false})");
  TokenizeRequest t;
  ASSERT_FALSE(parse_tokenize_request(j, protocol_limits(), &t));
  EXPECT_EQ(t.prompt, "x");
  EXPECT_FALSE(t.add_special_tokens);
  DetokenizeRequest d;
  ASSERT_FALSE(parse_detokenize_request(json::parse(R"({"tokens":[1,2]})"), protocol_limits(), &d));
  EXPECT_EQ(d.tokens.size(), 2u);
  expect_400(parse_detokenize_request(json::parse(R"({"tokens":[600]})"), protocol_limits(), &d),
             "tokens");
  expect_400(parse_detokenize_request(json::parse(R"({})"), protocol_limits(), &d), "tokens");
}

// The seed corpus of fuzz/fuzz_protocol.cpp (fuzz/corpus/protocol/): each
// seed named <route>_<valid|invalid>_<what>.json is a body that the route
// (completions, chat, tokenize, detokenize; body = parse_json_body alone)
// accepts or rejects as its name says, under the fuzzer's default limits.
// Keeps the seeds meaningful as the validation changes; files with other
// names (inputs the fuzzer found) are not checked.
TEST(ProtocolTest, FuzzSeedCorpusSaysWhatEachRouteDoes) {
  namespace fs = std::filesystem;
  ProtocolLimits l;
  l.vocab_size = 32000;
  l.max_model_len = 4096;
  const std::set<std::string> routes = {"completions", "chat", "tokenize", "detokenize", "body"};
  std::map<std::string, int> num_seeds;
  for (const auto& e :
       fs::directory_iterator(std::string(STRATA_SOURCE_DIR) + "/fuzz/corpus/protocol")) {
    const std::string name = e.path().filename().string();
    const size_t u1 = name.find('_');
    const size_t u2 = u1 == std::string::npos ? u1 : name.find('_', u1 + 1);
    if (u2 == std::string::npos || !routes.count(name.substr(0, u1))) continue;
    const std::string route = name.substr(0, u1);
    const std::string outcome = name.substr(u1 + 1, u2 - u1 - 1);
    ASSERT_TRUE(outcome == "valid" || outcome == "invalid") << name;
    std::ifstream f(e.path(), std::ios::binary);
    const std::string body{std::istreambuf_iterator<char>(f), {}};
    json j;
    std::optional<ApiError> err = parse_json_body(body, l, &j);
    if (!err && route == "completions") {
      CompletionRequest r;
      err = parse_completion_request(j, l, &r);
    } else if (!err && route == "chat") {
      ChatRequest r;
      err = parse_chat_request(j, l, &r);
    } else if (!err && route == "tokenize") {
      TokenizeRequest r;
      err = parse_tokenize_request(j, l, &r);
    } else if (!err && route == "detokenize") {
      DetokenizeRequest r;
      err = parse_detokenize_request(j, l, &r);
    }
    EXPECT_EQ(!err.has_value(), outcome == "valid")
        << name << (err ? ": " + err->param + ": " + err->message : "");
    ++num_seeds[route + "_" + outcome];
  }
  for (const std::string& route : routes) {  // each route has both kinds
    EXPECT_GT(num_seeds[route + "_valid"], 0) << route;
    EXPECT_GT(num_seeds[route + "_invalid"], 0) << route;
  }
}

TEST(ApiErrorTest, BodiesAndStatuses) {
  const json body = json::parse(invalid_param("n", "Integer out of range.").body());
  EXPECT_EQ(body["error"]["param"], "n");
  EXPECT_EQ(body["error"]["type"], "invalid_request_error");
  EXPECT_TRUE(body["error"].contains("code"));
  EXPECT_EQ(unauthorized().http_status, 401);
  EXPECT_TRUE(json::parse(unauthorized().body())["error"]["param"].is_null());
  EXPECT_EQ(model_not_found().http_status, 404);
  EXPECT_EQ(route_not_found().http_status, 404);
  EXPECT_EQ(method_not_allowed().http_status, 405);
  EXPECT_EQ(body_too_large().http_status, 413);
  EXPECT_EQ(queue_full().http_status, 429);
  EXPECT_EQ(headers_too_large().http_status, 431);
  EXPECT_EQ(server_draining().http_status, 503);
}

}  // namespace
// Nothing a client sends is silently ignored: a field strata does not
// implement, or does not know, is a 400 naming it.
TEST(ProtocolTest, UnimplementedAndUnknownFieldsAreRefusedByName) {
  for (const char* field : {"functions", "function_call", "suffix", "best_of", "prompt_logprobs"}) {
    SCOPED_TRACE(field);
    const std::string body = std::string(R"({"prompt":"a",")") + field + R"(":1})";
    expect_400(completion(body), field);
    const std::string chat_body =
        std::string(R"({"messages":[{"role":"user","content":"a"}],")") + field + R"(":1})";
    expect_400(chat(chat_body), field);
  }
  expect_400(completion(R"({"prompt":"a","unknown_field":[1,2]})"), "unknown_field");
  expect_400(completion(R"({"prompt":"a","temprature":0.5})"), "temprature");
  expect_400(chat(R"({"messages":[{"role":"user","content":"a"}],"echo":true})"), "echo");
  expect_400(completion(R"({"prompt":"a","messages":[]})"), "messages");
  // Tools exist on chat only; structured outputs on both (their values are
  // checked by structured_output.h / tool_call_parser.h, tested there).
  for (const char* field : {"tools", "tool_choice", "parallel_tool_calls"}) {
    expect_400(completion(std::string(R"({"prompt":"a",")") + field + R"(":1})"), field);
  }
  EXPECT_FALSE(
      chat(R"({"messages":[{"role":"user","content":"a"}],"tools":[],"tool_choice":"none"})"));
  for (const char* field : {"response_format", "guided_json", "guided_regex", "guided_choice",
                            "guided_grammar", "structured_outputs"}) {
    EXPECT_FALSE(completion(std::string(R"({"prompt":"a",")") + field + R"(":{}})")) << field;
  }
  expect_400(completion(R"({"prompt":"a","stream":true,"stream_options":{"x":1}})"),
             "stream_options");
  expect_400(completion(R"({"prompt":"a","echo":true,"logprobs":1})"), "echo");
}

TEST(ProtocolTest, StopTokenIdsAreCheckedAgainstTheVocabulary) {
  expect_400(completion(R"({"prompt":"a","stop_token_ids":[500]})"), "stop_token_ids");
  expect_400(completion(R"({"prompt":"a","stop_token_ids":7})"), "stop_token_ids");
  expect_400(completion(R"({"prompt":"a","include_stop_str_in_output":1})"),
             "include_stop_str_in_output");
}

}  // namespace strata::server
