// strata-mkmodel: writes a GGUF model with seeded random weights.
//   strata-mkmodel --arch qwen3 --type q8_0 --layers 2 --hidden 256 -o m.gguf
#include <CLI/CLI.hpp>
#include <cstdio>

#include "random_model.h"
#include "weights_file.h"

int main(int argc, char** argv) {
  strata::mkmodel::RandomModelSpec s;
  std::string out;
  bool is_peaky = false;
  CLI::App app{"strata-mkmodel: write a random-weight GGUF model"};
  app.add_option("--arch", s.arch, "llama | qwen2 | qwen3")->capture_default_str();
  app.add_option("--type", s.type, "f32 f16 bf16 q8_0 q4_0 q4_k q6_k q4_k_m")
      ->capture_default_str();
  app.add_option("--layers", s.num_layers)->capture_default_str();
  app.add_option("--hidden", s.hidden_dim)->capture_default_str();
  app.add_option("--heads", s.num_heads)->capture_default_str();
  app.add_option("--kv-heads", s.num_kv_heads)->capture_default_str();
  app.add_option("--head-dim", s.head_dim, "0: hidden / heads")->capture_default_str();
  app.add_option("--ffn", s.ffn_dim)->capture_default_str();
  app.add_option("--vocab", s.vocab_size)->capture_default_str();
  app.add_option("--ctx", s.context_length)->capture_default_str();
  app.add_option("--rope-base", s.rope_freq_base)->capture_default_str();
  app.add_option("--seed", s.seed)->capture_default_str();
  app.add_flag("--tied", s.is_tied, "no output.weight: tie the head to token_embd");
  app.add_flag("--peaky", is_peaky,
               "sharp next-token distributions driven mostly by the current token (head x4, layer "
               "outputs x1/8)");
  app.add_option("--tokenizer-json", s.tokenizer_json, "import a Hugging Face tokenizer.json");
  app.add_option("--threads", s.num_threads, "0: all cores")->capture_default_str();
  std::string weights;
  app.add_option("--weights", weights,
                 "write trained weights from this file (tools/mkmodel/weights_file.h) instead of "
                 "random ones: takes --type (f32 f16 bf16 q8_0) and --tokenizer-json only");
  app.add_option("-o,--output", out, "output .gguf path")->required();
  CLI11_PARSE(app, argc, argv);
  if (is_peaky) s.peaky_scale = 4.0f;
  const strata::Status st = weights.empty() ? strata::mkmodel::write_random_model(s, out)
                                            : strata::mkmodel::convert_weights_file(
                                                  weights, s.type, s.tokenizer_json, out);
  if (!st.is_ok()) {
    std::fprintf(stderr, "%s\n", st.message().c_str());
    return 1;
  }
  return 0;
}
