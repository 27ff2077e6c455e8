#include "grammar/pda_stepper.h"

#include <algorithm>

namespace strata {

void PdaStepper::begin(StackSet* out) {
  out->clear();
  if (++epoch_ == 0) {  // wrapped: forget every mark
    std::fill(mark_.begin(), mark_.end(), 0);
    epoch_ = 1;
  }
}

void PdaStepper::close(int32_t stack, StackSet* out) {
  work_.clear();
  work_.push_back(stack);
  while (!work_.empty()) {
    const int32_t s = work_.back();
    work_.pop_back();
    if (static_cast<size_t>(s) >= mark_.size()) mark_.resize(s + 1 + s / 2, 0);
    if (mark_[s] == epoch_) continue;
    mark_[s] = epoch_;
    const StackPool::Frame f = pool_->frame(s);
    if (g_.has_byte_edges(f.pos)) out->stacks.push_back(s);
    for (const auto* c = g_.call_begin(f.pos); c != g_.call_end(f.pos); ++c) {
      const int32_t ret = pool_->make(c->to, f.parent);
      work_.push_back(pool_->make(g_.rule_start(c->rule), ret));
    }
    if (g_.node(f.pos).is_final) {
      if (f.parent < 0) {
        out->bottom_popped = true;
      } else {
        work_.push_back(f.parent);
      }
    }
  }
}

void PdaStepper::start(int32_t pos, int32_t parent, StackSet* out) {
  begin(out);
  close(pool_->make(pos, parent), out);
}

void PdaStepper::step_stack(int32_t stack, uint8_t b, StackSet* out) {
  const StackPool::Frame f = pool_->frame(stack);
  for (const auto* e = g_.byte_begin(f.pos); e != g_.byte_end(f.pos); ++e) {
    if (e->lo > b) break;  // sorted by lo
    if (b <= e->hi) close(pool_->make(e->to, f.parent), out);
  }
}

void PdaStepper::advance(const StackSet& in, uint8_t b, StackSet* out) {
  begin(out);
  for (int32_t s : in.stacks) step_stack(s, b, out);
}

void PdaStepper::advance_one(int32_t stack, uint8_t b, StackSet* out) {
  begin(out);
  step_stack(stack, b, out);
}

int32_t StackSetMemo::intern(StackSet s) {
  std::sort(s.stacks.begin(), s.stacks.end());
  std::string key(reinterpret_cast<const char*>(s.stacks.data()),
                  s.stacks.size() * sizeof(int32_t));
  key.push_back(s.bottom_popped ? 1 : 0);
  auto [it, inserted] = ids_.emplace(std::move(key), static_cast<int32_t>(sets_.size()));
  if (inserted) {
    sets_.push_back(std::move(s));
    trans_.resize(sets_.size() * 256, kUnknown);
    loops_.emplace_back();
  }
  return it->second;
}

int32_t StackSetMemo::step(int32_t id, uint8_t b) {
  const StackSet from = sets_[id];  // copy: intern() may grow sets_
  stepper_->advance(from, b, &scratch_);
  const int32_t r = intern(scratch_);
  trans_[static_cast<size_t>(id) * 256 + b] = r;
  return r;
}

bool StackSetMemo::loops_on_all(int32_t id, const uint64_t* bytes) {
  for (int w = 0; w < 4; ++w)
    if (bytes[w] & loops_[id].no[w]) return false;
  for (int w = 0; w < 4; ++w) {
    for (uint64_t unknown = bytes[w] & ~loops_[id].yes[w]; unknown; unknown &= unknown - 1) {
      const int b = w * 64 + __builtin_ctzll(unknown);
      const bool loops = next(id, static_cast<uint8_t>(b)) == id;  // may grow loops_
      (loops ? loops_[id].yes : loops_[id].no)[w] |= uint64_t{1} << (b & 63);
      if (!loops) return false;
    }
  }
  return true;
}

void StackSetMemo::clear() {
  sets_.clear();
  trans_.clear();
  loops_.clear();
  ids_.clear();
}

}  // namespace strata
