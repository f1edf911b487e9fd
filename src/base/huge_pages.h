// Large buffers that are written once per use, in memory the kernel may back with transparent huge
// pages (2 MB). On the VMs this runs on, every first write of a fresh 4 KB page traps to the
// hypervisor: ~12 us each here, so a reader that keeps ~25 MB of buffers spent ~0.07 s of CPU in
// 6,500 page faults whatever the trace's length (a 0.37 M-event perf.data took 0.09 s, most of it
// that). A huge page is one fault: 64 MB written first took 0.18-0.23 s in 4 KB pages, 0.004-0.12 s
// in huge ones (madvise(MADV_HUGEPAGE) is what Debian's default "madvise" mode asks for).
// The price is memory: a huge page is resident whole once any byte of it is written, so only
// buffers that are mostly filled belong here. Where the kernel gives no huge page, this is plain
// anonymous memory, resident as it is written.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace exitscope {

inline constexpr size_t kHugePageBytes = size_t{2} << 20;
// Smaller buffers are not worth a huge page: most of it would be resident and unused.
inline constexpr size_t kHugeAllocationMin = size_t{1} << 20;

// `bytes` rounded up to whole huge pages, mapped at a huge page boundary (each can then be one);
// under kHugeAllocationMin, whole 4 KB pages (a huge page mostly unused would still be resident
// whole). Throws std::bad_alloc when nothing is mapped. UnmapHugePages takes the same `bytes`.
void* MapHugePages(size_t bytes);
void UnmapHugePages(void* p, size_t bytes);
// What MapHugePages(bytes) maps: `bytes` rounded up to whole huge pages, or under
// kHugeAllocationMin to whole 4 KB pages (room a buffer may use without mapping again).
size_t MappedHugePagesBytes(size_t bytes);

// A buffer of huge pages, owned (moves, does not copy). Not zero-filled by this class (fresh
// mappings read as zero; a reused buffer holds what was written before).
class HugePages {
 public:
  HugePages() = default;
  explicit HugePages(size_t bytes) : data_(static_cast<uint8_t*>(MapHugePages(bytes))), size_(bytes) {}
  HugePages(HugePages&& o) noexcept : data_(o.data_), size_(o.size_) { o.data_ = nullptr, o.size_ = 0; }
  HugePages& operator=(HugePages&& o) noexcept {
    if (this != &o) {
      Release();
      data_ = o.data_, size_ = o.size_;
      o.data_ = nullptr, o.size_ = 0;
    }
    return *this;
  }
  HugePages(const HugePages&) = delete;
  HugePages& operator=(const HugePages&) = delete;
  ~HugePages() { Release(); }

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void Release() {
    if (data_) UnmapHugePages(data_, size_);
  }
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// A std::vector allocator: allocations of kHugeAllocationMin bytes or more in huge pages, smaller
// ones from the heap (a vector that stays small costs no 2 MB page).
template <typename T>
struct HugePageAllocator {
  using value_type = T;
  HugePageAllocator() = default;
  template <typename U>
  HugePageAllocator(const HugePageAllocator<U>&) {}  // NOLINT(google-explicit-constructor): rebinding
  T* allocate(size_t n) {
    const size_t bytes = n * sizeof(T);
    return static_cast<T*>(bytes < kHugeAllocationMin ? ::operator new(bytes) : MapHugePages(bytes));
  }
  void deallocate(T* p, size_t n) {
    const size_t bytes = n * sizeof(T);
    if (bytes < kHugeAllocationMin) {
      ::operator delete(p);
    } else {
      UnmapHugePages(p, bytes);
    }
  }
  template <typename U>
  bool operator==(const HugePageAllocator<U>&) const {
    return true;
  }
};

template <typename T>
using HugeVector = std::vector<T, HugePageAllocator<T>>;

// An array appended to in place inside memory it is given (one part of a buffer shared with
// others), never reallocated while it fits. Past its room it moves to huge pages of its own, twice
// as large (a rare path: a buffer is sized for what its input likely holds, not for every input).
template <typename T>
class HugeArray {
  static_assert(std::is_trivially_copyable_v<T>, "moved with memcpy");

 public:
  // Empty, its elements to go at `data`, room for `capacity` (what it owned is given back).
  void Reset(T* data, size_t capacity) {
    data_ = data, capacity_ = capacity, size_ = 0;
    own_ = HugePages();
  }
  template <typename... Args>
  T& emplace_back(Args&&... args) {
    if (size_ == capacity_) Grow();
    return *new (data_ + size_++) T{std::forward<Args>(args)...};
  }
  void push_back(const T& v) { emplace_back(v); }
  // Room for one more, not initialized: for a caller that writes every field (a trivially copyable
  // T's bytes from a mapping are a T).
  T* append_uninitialized() {
    if (size_ == capacity_) Grow();
    return data_ + size_++;
  }
  void pop_back() { --size_; }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* data() const { return data_; }
  T* begin() const { return data_; }
  T* end() const { return data_ + size_; }
  T& operator[](size_t i) const { return data_[i]; }
  T& back() const { return data_[size_ - 1]; }
  bool outgrown() const { return own_.data() != nullptr; }  // no longer in the memory it was given

 private:
  void Grow() {
    const size_t capacity = capacity_ ? capacity_ * 2 : kHugePageBytes / sizeof(T);
    HugePages bigger(capacity * sizeof(T));
    if (size_) std::memcpy(bigger.data(), data_, size_ * sizeof(T));
    own_ = std::move(bigger);
    data_ = reinterpret_cast<T*>(own_.data());
    capacity_ = capacity;
  }

  T* data_ = nullptr;
  size_t size_ = 0, capacity_ = 0;
  HugePages own_;
};

}  // namespace exitscope
