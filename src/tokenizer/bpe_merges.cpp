// The BPE merge loop: a doubly linked list of symbols and a min-heap of
// candidate pairs keyed by (rank, left position); stale heap entries are
// skipped when popped.
#include "tokenizer/bpe_merges.h"

#include <queue>

namespace strata {

void BpeMerges::add(int32_t left_id, int32_t right_id, int32_t rank, int32_t result_id) {
  table_[key(left_id, right_id)] = Entry{rank, result_id};
}

void BpeMerges::apply(std::vector<int32_t>* symbols) const {
  std::vector<int32_t>& ids = *symbols;
  const int32_t n = static_cast<int32_t>(ids.size());
  if (n < 2) return;
  std::vector<int32_t> next(n), prev(n);
  std::vector<bool> is_alive(n, true);
  for (int32_t i = 0; i < n; ++i) {
    next[i] = i + 1 < n ? i + 1 : -1;
    prev[i] = i - 1;
  }
  struct Candidate {
    int32_t rank, pos, left_id, right_id;
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> heap;
  auto push = [&](int32_t pos) {
    if (pos < 0 || next[pos] < 0) return;
    if (const Entry* e = find(ids[pos], ids[next[pos]])) {
      heap.push(Candidate{e->rank, pos, ids[pos], ids[next[pos]]});
    }
  };
  for (int32_t i = 0; i + 1 < n; ++i) push(i);
  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    const int32_t right = next[c.pos];
    if (!is_alive[c.pos] || right < 0 || ids[c.pos] != c.left_id || ids[right] != c.right_id) {
      continue;  // stale: one side has merged since
    }
    ids[c.pos] = find(c.left_id, c.right_id)->result_id;
    is_alive[right] = false;
    next[c.pos] = next[right];
    if (next[right] >= 0) prev[next[right]] = c.pos;
    push(prev[c.pos]);
    push(c.pos);
  }
  int32_t out = 0;
  for (int32_t i = 0; i >= 0 && i < n; i = next[i]) ids[out++] = ids[i];
  ids.resize(out);
}

}  // namespace strata
