// WeightsFile: a trained model handed to strata-mkmodel (`--weights FILE`) by
// a training script (tools/train_demo_model.py), and the writer that turns it
// into a GGUF through the project's GgufWriter.
//
// Format "strata-weights-v1", little-endian:
//   u64 header_bytes | header_bytes of UTF-8 JSON | tensor data
// The JSON header holds the llama hyperparameters and the tensor list:
//   {"format": "strata-weights-v1", "architecture": "llama", "name": "...",
//    "context_length": 256, "embedding_length": 256, "block_count": 6,
//    "feed_forward_length": 704, "head_count": 8, "head_count_kv": 2,
//    "rope_freq_base": 10000.0, "rms_norm_eps": 1e-5,
//    "tensors": [{"name": "token_embd.weight", "shape": [4096, 256],
//                 "dtype": "f32", "offset": 0}, ...]}
// Tensor names are GGUF's (token_embd.weight, blk.N.attn_q.weight, ...);
// "shape" lists dims outermost first (PyTorch order: [rows, cols] with cols
// contiguous, so GGUF's ne is the reverse); data is f32 row-major at
// `offset` bytes after the end of the header. q/k rows are in llama.cpp's
// order (rope on adjacent pairs): the writer copies them unpermuted.
//
// Every field comes from a file, so every check returns a Status: sizes,
// offsets and shapes in bounds, finite values, known names. A WeightsFile
// owns its data; it is a plain value, not shared between threads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "util/status.h"

namespace strata::mkmodel {

struct WeightsTensor {
  std::string name;
  std::vector<int64_t> shape;  // outermost first; at most 2 dims
  std::vector<float> data;     // product(shape) values, row-major
};

struct WeightsFile {
  std::string architecture;  // "llama" (the only one supported)
  std::string name;          // general.name
  int64_t context_length = 0;
  int64_t embedding_length = 0;
  int64_t block_count = 0;
  int64_t feed_forward_length = 0;
  int64_t head_count = 0;
  int64_t head_count_kv = 0;
  float rope_freq_base = 10000.0f;
  float rms_norm_eps = 1e-5f;
  std::vector<WeightsTensor> tensors;  // in file order
};

// Reads and validates `path`.
Result<WeightsFile> read_weights_file(const std::string& path);

// Writes `weights` as a llama GGUF to `out_path` (atomically): 2-D tensors in
// `type` (f32 f16 bf16 q8_0), 1-D tensors in F32, tokenizer metadata from the
// Hugging Face `tokenizer_json` (required: its vocabulary must match the
// embedding rows). Checks that every tensor a llama layer needs is present
// with the shape the hyperparameters imply.
Status write_model_from_weights(const WeightsFile& weights, const std::string& type,
                                const std::string& tokenizer_json, const std::string& out_path);

// read_weights_file + write_model_from_weights: strata-mkmodel --weights.
Status convert_weights_file(const std::string& weights_path, const std::string& type,
                            const std::string& tokenizer_json, const std::string& out_path);

}  // namespace strata::mkmodel
