// SuffixDrafter: suffix decoding (Arctic Inference's SuffixDecoding, vLLM's
// "suffix" method). Two suffix tries of bounded depth D: one per live
// request over its prompt and output (updated as tokens arrive), and one
// over the outputs of recently finished requests (agentic and repeated
// workloads regenerate earlier outputs). Each node counts how often its
// path occurred. A proposal takes the longest suffix of the request's
// tokens (at most D - 1) found in a trie with a continuation, then walks the
// most frequent child while the product of the children's frequencies
// (count / parent's continuations) stays >= min_token_prob, for at most
// max_drafts and max_spec_factor x match length tokens; the trie whose walk
// is longer wins.
//
// Memory: a trie holds at most D nodes (24 bytes each, and a hash entry for each child of a node
// with more than 8) per token inserted, fewer where paths repeat; the global trie keeps
// max_cached_requests outputs and is rebuilt from those still remembered when it would exceed them.
// Not thread-safe (engine thread).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "spec/drafter.h"

namespace strata {

struct SuffixDrafterOptions {
  int32_t max_tree_depth = 24;         // D: longest path stored
  int32_t max_cached_requests = 1000;  // finished outputs in the global trie
  double max_spec_factor = 1.0;        // drafts <= factor x match length
  double min_token_prob = 0.1;         // stop the walk below this path probability
};

class SuffixDrafter : public Drafter {
 public:
  explicit SuffixDrafter(const SuffixDrafterOptions& options);
  ~SuffixDrafter() override;

  int32_t propose(uint64_t request_id, std::span<const int32_t> tokens, int64_t num_prompt_tokens,
                  int32_t max_drafts, std::vector<int32_t>* out) override;
  void finish(uint64_t request_id, std::span<const int32_t> tokens,
              int64_t num_prompt_tokens) override;

  size_t num_live_requests() const { return requests_.size(); }

  // A suffix trie over appended token sequences; public for tests.
  class Trie {
   public:
    explicit Trie(int32_t max_depth);
    // Starts a new sequence (the suffixes of different sequences do not join).
    void begin_sequence();
    // Appends one token to the current sequence.
    void append(int32_t token);
    // The drafts after the longest suffix of `context` with a continuation;
    // returns the match length (0: none).
    int32_t propose(std::span<const int32_t> context, int32_t max_drafts,
                    const SuffixDrafterOptions& options, std::vector<int32_t>* out) const;
    // The same for the context that is the current sequence itself (what a
    // request's own trie is asked for): its suffixes' nodes are the live
    // ones append() keeps, so no path is walked from the root.
    int32_t propose_current(int32_t max_drafts, const SuffixDrafterOptions& options,
                            std::vector<int32_t>* out) const;
    size_t num_nodes() const { return nodes_.size(); }

   private:
    // Nodes in one array, children as a linked list (first child, next
    // sibling), newest first: most nodes have one child, and no node owns
    // a heap allocation, so appending a token allocates nothing but the
    // array's amortised growth.
    struct Node {
      int32_t token = -1;  // the edge from the parent
      int32_t first_child = -1;
      int32_t next_sibling = -1;
      int32_t count = 0;          // occurrences of this path
      int32_t continuations = 0;  // sum of the children's counts
      int32_t num_children = 0;
    };
    // A node with more children than this finds them by hash, not by list.
    static constexpr int32_t kListChildren = 8;
    static uint64_t edge_key(int32_t node, int32_t token) {
      return (static_cast<uint64_t>(static_cast<uint32_t>(node)) << 32) |
             static_cast<uint32_t>(token);
    }
    int32_t child(int32_t node, int32_t token) const;
    // The longest suffix length m <= longest whose node (node_of(m), -1:
    // none) has a continuation, and that node in *node.
    template <typename NodeOf>
    int32_t longest_continued(int32_t longest, NodeOf node_of, int32_t* node) const;
    // The drafts from `node`, the end of a match of length `match`.
    void walk(int32_t node, int32_t match, int32_t max_drafts, const SuffixDrafterOptions& options,
              std::vector<int32_t>* out) const;
    // The node of `path` from the root (-1: no such path).
    int32_t find(std::span<const int32_t> path) const;
    int32_t max_depth_;
    std::vector<Node> nodes_;  // [0] is the root
    // The children of wide nodes by (node, token): the root has a child per
    // distinct token seen, and in a trie over many outputs the nodes near
    // it have hundreds, too many to scan on every lookup (their lists keep
    // them too, for the walk).
    std::unordered_map<uint64_t, int32_t> wide_children_;
    // The nodes of the current sequence's suffixes: active_[j] is the one of
    // length j + 1 (at most max_depth).
    std::vector<int32_t> active_;
  };

 private:
  struct RequestTrie {
    Trie trie;
    int64_t num_inserted = 0;  // tokens of the request in the trie
  };

  SuffixDrafterOptions options_;
  std::unordered_map<uint64_t, std::unique_ptr<RequestTrie>> requests_;
  Trie global_;
  std::deque<std::vector<int32_t>> cached_outputs_;  // what global_ holds, oldest first
  std::vector<int32_t> mine_, theirs_;               // scratch: the two tries' drafts
};

}  // namespace strata
