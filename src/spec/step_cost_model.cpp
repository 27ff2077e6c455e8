#include "spec/step_cost_model.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <utility>

namespace strata {

namespace {
constexpr int32_t kExact = 32;  // one bucket per count up to this
}  // namespace

int32_t StepCostModel::bucket_of(int32_t num_tokens) {
  const int32_t n = std::max(1, num_tokens);
  if (n <= kExact) return n - 1;
  // Eight per octave: [32, 64) by 4s, [64, 128) by 8s, ...
  const int32_t octave = std::bit_width(static_cast<uint32_t>(n)) - 6;
  const int32_t sub = (n >> (octave + 2)) & 7;
  return kExact + 8 * octave + sub;
}

int32_t StepCostModel::bucket_start(int32_t bucket) {
  if (bucket < kExact) return bucket + 1;
  const int32_t octave = (bucket - kExact) / 8;
  const int32_t sub = (bucket - kExact) % 8;
  return std::max(kExact + 1, (8 + sub) << (octave + 2));
}

void StepCostModel::record(int32_t num_tokens, double seconds) {
  assert(num_tokens >= 1);
  const auto b = static_cast<size_t>(bucket_of(num_tokens));
  if (buckets_.size() <= b) buckets_.resize(b + 1);
  Bucket& bucket = buckets_[b];
  // The machine's speed: this step against the typical one of its size.
  const bool is_typical_size = bucket.typical > 0.0 && num_tokens == bucket.typical_tokens;
  if (is_typical_size && seconds > 0.0) {
    const double r =
        std::clamp(seconds / (speed_ * bucket.typical), 1.0 / kMaxSpeedStep, kMaxSpeedStep);
    speed_ *= std::pow(r, kSpeedGain);
  }
  const double normalised = seconds / speed_;
  bucket.samples[static_cast<size_t>(bucket.next)] = {normalised, num_recorded_, num_tokens};
  if (is_typical_size) {
    bucket.typical *= std::pow(normalised / bucket.typical, kTypicalGain);
  } else if (bucket.typical <= 0.0) {
    if (const Sample* m = median_of(static_cast<int32_t>(b)); m != nullptr) {
      bucket.typical = m->seconds;
      bucket.typical_tokens = m->num_tokens;
    }
  }
  bucket.next = (bucket.next + 1) % kWindow;
  ++num_recorded_;
  points_valid_ = false;
}

const StepCostModel::Sample* StepCostModel::median_of(int32_t bucket) const {
  if (bucket < 0 || static_cast<size_t>(bucket) >= buckets_.size()) return nullptr;
  std::array<const Sample*, kWindow> live{};
  size_t count = 0;
  for (const Sample& s : buckets_[static_cast<size_t>(bucket)].samples) {
    if (is_live(s)) live[count++] = &s;
  }
  if (count < static_cast<size_t>(kMinSamples)) return nullptr;
  for (size_t i = 1; i < count; ++i) {  // insertion sort: at most kWindow
    for (size_t j = i; j > 0 && live[j - 1]->seconds > live[j]->seconds; --j) {
      std::swap(live[j - 1], live[j]);
    }
  }
  return live[count / 2];  // the upper median: a sample, with its size
}

int64_t StepCostModel::newest_sample(int32_t num_tokens) const {
  const auto b = static_cast<size_t>(bucket_of(num_tokens));
  if (b >= buckets_.size()) return -1;
  int64_t newest = -1;
  int32_t count = 0;
  for (const Sample& s : buckets_[b].samples) {
    if (!is_live(s)) continue;
    newest = std::max(newest, s.step);
    ++count;
  }
  return count >= kMinSamples ? newest : -1;
}

bool StepCostModel::point_of(int32_t bucket, Point* out) const {
  if (bucket < 0 || static_cast<size_t>(bucket) >= buckets_.size()) return false;
  int32_t count = 0;
  const Sample* best = nullptr;
  for (const Sample& s : buckets_[static_cast<size_t>(bucket)].samples) {
    if (!is_live(s)) continue;
    if (best == nullptr || s.seconds < best->seconds) best = &s;
    ++count;
  }
  if (count < kMinSamples) return false;
  *out = {static_cast<double>(best->num_tokens), best->seconds};
  return true;
}

int32_t StepCostModel::largest_measured() const {
  const std::vector<Point>& ps = points();
  return ps.empty() ? 0 : static_cast<int32_t>(ps.back().num_tokens);
}

double StepCostModel::estimate(int32_t num_tokens) const {
  return speed_ * estimate_at_reference_speed(num_tokens);
}

const std::vector<StepCostModel::Point>& StepCostModel::points() const {
  if (points_valid_) return points_;
  points_.clear();
  for (size_t b = 0; b < buckets_.size(); ++b) {
    Point p;
    if (point_of(static_cast<int32_t>(b), &p)) points_.push_back(p);
  }
  // Least-squares slope of the points, never negative; 0 with one point.
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const Point& q : points_) {
    sx += q.num_tokens;
    sy += q.seconds;
    sxx += q.num_tokens * q.num_tokens;
    sxy += q.num_tokens * q.seconds;
  }
  const auto count = static_cast<double>(points_.size());
  const double denom = count * sxx - sx * sx;
  slope_ =
      points_.size() >= 2 && denom > 1e-12 ? std::max(0.0, (count * sxy - sx * sy) / denom) : 0.0;
  points_valid_ = true;
  return points_;
}

double StepCostModel::estimate_at_reference_speed(int32_t num_tokens) const {
  // Piecewise linear through the measured points (each at its bucket's
  // mean token count, so a size inside a wide bucket is interpolated too).
  const double n = std::max(1, num_tokens);
  const std::vector<Point>& ps = points();
  if (ps.empty()) return 0.0;
  const auto hi = std::lower_bound(ps.begin(), ps.end(), n,
                                   [](const Point& p, double x) { return p.num_tokens < x; });
  if (hi == ps.end()) return ps.back().seconds + slope_ * (n - ps.back().num_tokens);
  if (hi->num_tokens == n) return hi->seconds;
  if (hi == ps.begin()) {
    // Below the smallest point: its first segment's slope carried down, but
    // never below the cost per token of the smallest point (a smaller step
    // never costs less per token).
    const Point& p0 = ps.front();
    if (ps.size() < 2) return p0.seconds;
    const double per_token = p0.seconds / p0.num_tokens;
    const double first_slope = std::max(
        0.0, (ps[1].seconds - p0.seconds) / std::max(1e-9, ps[1].num_tokens - p0.num_tokens));
    return std::max(per_token * n, p0.seconds - first_slope * (p0.num_tokens - n));
  }
  const Point& lo = *(hi - 1);
  const double t = (n - lo.num_tokens) / std::max(1e-9, hi->num_tokens - lo.num_tokens);
  return lo.seconds + t * (hi->seconds - lo.seconds);
}

}  // namespace strata
