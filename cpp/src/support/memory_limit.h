// One memory limit for the whole process. Each compiled grammar's lazy lexer and mask cache and
// each vocabulary's shared mask cache report the bytes they hold (what they already measure, not
// every allocation); when the total passes the limit, an eviction pass drops the least recently
// used grammars' lazy state (a fresh epoch: matchers move over at their next call, as on a
// renewal) and trims the shared caches, until what they hold is back under three quarters of the
// limit (so that passes are rare). A dropped epoch still counts until the last matcher holding it
// moves. Freed memory is handed back to the OS (malloc_trim).
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace stencil {

// kGrammarMemory: the compiled grammars themselves (rules, lexemes, expressions), freed only with
// them: counted, never evicted (a compiler's cache lets them go when the process is over).
enum MemoryKind : int {
  kLexerMemory = 0,
  kMaskMemory = 1,
  kSharedMaskMemory = 2,
  kGrammarMemory = 3,
  kMemoryKinds = 4
};

// A cache the memory limit may shrink (a grammar's lazy state, a vocabulary's shared masks).
class EvictableCache {
 public:
  virtual ~EvictableCache() = default;
  // What release() would free, and when the cache was last used (MemoryLimit::now()).
  virtual size_t releasable_bytes() const = 0;
  virtual uint64_t last_used() const = 0;
  // Frees up to about `want` bytes and returns what it let go. What must be destroyed outside the
  // limit's lock (an old epoch) is moved into `later`.
  virtual size_t release(size_t want, std::vector<std::shared_ptr<const void>>& later) = 0;
  // Brings the counted bytes up to date (a lexer is measured every so many new states).
  virtual void measure() {}
};

struct MemoryUsage {
  size_t bytes[kMemoryKinds] = {};
  size_t total = 0, limit = 0;
  size_t retired = 0;  // dropped epochs that matchers still hold (part of the total)
  size_t grammars = 0, vocabularies = 0;
  uint64_t evictions = 0;  // grammars' lazy states dropped by the limit
  uint64_t trims = 0;      // shared mask caches trimmed by the limit
};

// What one matcher call builds (a grammar's lazy lexer and tables), read without locks.
class CallMemorySource {
 public:
  virtual ~CallMemorySource() = default;
  // A running estimate of the bytes built so far (it may shrink when a cache starts afresh).
  virtual size_t built_bytes() const = 0;
  // Charges the limit's count with bytes built (or freed, < 0) and not counted yet (the next
  // measurement corrects them).
  virtual void count_built(int64_t bytes) const = 0;
};

// The memory the current thread's matcher call builds, watched from inside the call: the long
// loops' deadline::Ticker calls check() every 1,024 units of work. What the call builds is charged
// to the limit's count as it grows (so that other grammars are evicted at once, not after the call), and
// the call fails with BudgetError when it alone has built more than half the process limit, or
// more than an eighth while the process stays over its limit after an eviction pass (calls in
// flight together). One per thread: the outermost call's.
class CallMemory {
 public:
  CallMemory(const CallMemorySource* source, const char* call);
  ~CallMemory();
  CallMemory(const CallMemory&) = delete;
  CallMemory& operator=(const CallMemory&) = delete;
  static void check();
  // Whether this call failed on its memory (its epoch is then worth renewing).
  bool tripped() const { return tripped_; }

 private:
  CallMemory* outer_;
  const CallMemorySource* source_;
  const char* call_;
  size_t start_ = 0, counted_ = 0;
  bool tripped_ = false;
};

class MemoryLimit {
 public:
  static MemoryLimit& get();
  // min(2 GiB, a quarter of physical memory), at least 256 MiB.
  static size_t default_limit();

  size_t limit() const { return limit_.load(std::memory_order_relaxed); }
  // Sets the limit (0: the default) and enforces it at once; returns the previous limit.
  size_t set_limit(size_t bytes);
  size_t total() const { return total_.load(std::memory_order_relaxed); }
  // A logical clock: it moves when a cache grows, and stamps what was used.
  uint64_t now() const { return clock_.load(std::memory_order_relaxed); }

  // A cache grew (delta > 0) or freed memory (delta < 0). Never blocks: an eviction, if due,
  // happens at the next enforce().
  void charge(MemoryKind kind, int64_t delta);
  // Cheap unless the total is over the limit; then one thread at a time runs an eviction pass.
  // When a pass could not get under the limit (dropped epochs that idle matchers still hold), the
  // next waits until the total has grown by a sixteenth of the limit or shrunk below it.
  void enforce() {
    const size_t t = total();
    if (t > limit() && t > retry_above_.load(std::memory_order_relaxed)) evict();
  }

  // Clients register for their whole life (the destructor must remove before its state goes).
  void add(EvictableCache* c, bool grammar);
  void remove(EvictableCache* c);
  // The counters, each grammar's lexer measured afresh first.
  MemoryUsage usage() const;

 private:
  MemoryLimit();
  void evict();
  size_t live_bytes() const;  // mu_
  size_t release_in_order(size_t target, std::vector<std::shared_ptr<const void>>& later);  // mu_
  void give_back_to_os(size_t freed);

  std::atomic<size_t> limit_;
  std::atomic<size_t> total_{0};
  std::atomic<size_t> bytes_[kMemoryKinds] = {};
  std::atomic<uint64_t> clock_{1};
  std::atomic<size_t> freed_since_trim_{0};
  std::atomic<size_t> retry_above_{0};
  mutable std::mutex mu_;  // the clients and the counters below; one eviction pass at a time
  std::vector<EvictableCache*> grammars_, shared_;
  uint64_t evictions_ = 0, trims_ = 0;
};

}  // namespace stencil
