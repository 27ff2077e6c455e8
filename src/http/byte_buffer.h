// ByteBuffer: a connection's receive buffer: bytes received and not yet
// consumed, contiguous, with room to read more at the end.
//
// Storage is allocated on the first prepare() and can be released when the
// buffer is empty, so an idle connection holds none. prepare() moves the
// unconsumed bytes to the front before growing. Not thread-safe.
#pragma once

#include <cassert>
#include <cstddef>
#include <cstring>
#include <memory>
#include <string_view>

namespace strata::http::detail {

class ByteBuffer {
 public:
  std::string_view view() const { return {data_.get() + begin_, end_ - begin_}; }
  size_t size() const { return end_ - begin_; }
  bool empty() const { return begin_ == end_; }
  size_t capacity() const { return capacity_; }

  // At least `n` writable bytes after the data; commit() what was written.
  char* prepare(size_t n) {
    if (capacity_ - end_ < n) {
      const size_t size = end_ - begin_;
      if (capacity_ - size >= n && begin_ > 0) {
        std::memmove(data_.get(), data_.get() + begin_, size);
      } else {
        size_t cap = capacity_ == 0 ? n : capacity_;
        while (cap - size < n) cap *= 2;
        std::unique_ptr<char[]> grown(new char[cap]);
        if (size > 0) std::memcpy(grown.get(), data_.get() + begin_, size);
        data_ = std::move(grown);
        capacity_ = cap;
      }
      begin_ = 0;
      end_ = size;
    }
    return data_.get() + end_;
  }
  void commit(size_t n) {
    assert(end_ + n <= capacity_);
    end_ += n;
  }
  void consume(size_t n) {
    assert(n <= size());
    begin_ += n;
    if (begin_ == end_) begin_ = end_ = 0;
  }
  // Frees the storage; only when empty.
  void release() {
    assert(empty());
    data_.reset();
    capacity_ = begin_ = end_ = 0;
  }

 private:
  std::unique_ptr<char[]> data_;
  size_t capacity_ = 0;
  size_t begin_ = 0;
  size_t end_ = 0;
};

}  // namespace strata::http::detail
