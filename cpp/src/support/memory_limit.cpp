#include "support/memory_limit.h"

#include <unistd.h>

#include <algorithm>
#include <string>
#include <utility>

#include "stencil/errors.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace stencil {

MemoryLimit& MemoryLimit::get() {
  // Never destroyed: grammars and vocabularies may outlive static destructors at exit.
  static MemoryLimit* limit = new MemoryLimit();
  return *limit;
}

size_t MemoryLimit::default_limit() {
  constexpr size_t kCap = size_t(2) << 30, kFloor = size_t(256) << 20;
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return kCap;
  const size_t quarter = static_cast<size_t>(pages) / 4 * static_cast<size_t>(page);
  return std::max(kFloor, std::min(kCap, quarter));
}

MemoryLimit::MemoryLimit() : limit_(default_limit()) {}

size_t MemoryLimit::set_limit(size_t bytes) {
  const size_t old = limit_.exchange(bytes ? bytes : default_limit(), std::memory_order_relaxed);
  retry_above_.store(0, std::memory_order_relaxed);
  enforce();
  return old;
}

void MemoryLimit::charge(MemoryKind kind, int64_t delta) {
  if (delta == 0) return;
  const size_t d = static_cast<size_t>(delta);  // modular: a negative delta subtracts
  bytes_[kind].fetch_add(d, std::memory_order_relaxed);
  total_.fetch_add(d, std::memory_order_relaxed);
  if (delta > 0) {
    clock_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const size_t mark = retry_above_.load(std::memory_order_relaxed);
  if (mark && total() + limit() / 16 < mark) retry_above_.store(total() + limit() / 16, std::memory_order_relaxed);
  give_back_to_os(static_cast<size_t>(-delta));
}

// Freed blocks stay in malloc's free lists (RSS unchanged) until trimmed; a trim walks the heap,
// so it waits until an eighth of the limit (at most 64 MiB) has been freed since the last one.
void MemoryLimit::give_back_to_os(size_t freed) {
  const size_t every = std::min(limit() / 8, size_t(64) << 20);
  const size_t sum = freed_since_trim_.fetch_add(freed, std::memory_order_relaxed) + freed;
  if (sum < every) return;
  if (freed_since_trim_.exchange(0, std::memory_order_relaxed) < every) return;  // another thread trims
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

void MemoryLimit::add(EvictableCache* c, bool grammar) {
  std::lock_guard<std::mutex> lock(mu_);
  (grammar ? grammars_ : shared_).push_back(c);
}

void MemoryLimit::remove(EvictableCache* c) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto* list : {&grammars_, &shared_}) {
    auto it = std::find(list->begin(), list->end(), c);
    if (it != list->end()) {
      *it = list->back();
      list->pop_back();
    }
  }
}

size_t MemoryLimit::live_bytes() const {
  size_t live = 0;
  for (const auto* list : {&grammars_, &shared_})
    for (const EvictableCache* c : *list) live += c->releasable_bytes();
  return live;
}

// Brings what a pass can drop (the grammars' current epochs and the shared caches) down to
// `target`; dropped epochs that matchers still hold go at their next call. Least recently used grammars first, but the
// one used last (the one in use now) only after the shared caches' least recently used masks. A grammar holding less
// than a small floor is left alone: dropping it frees little and makes its matchers replay their tokens.
size_t MemoryLimit::release_in_order(size_t target, std::vector<std::shared_ptr<const void>>& later) {
  const size_t floor = std::min(size_t(1) << 20, limit() / 64);
  std::vector<std::pair<uint64_t, EvictableCache*>> order;
  size_t live = 0;
  for (EvictableCache* g : grammars_) {
    const size_t bytes = g->releasable_bytes();
    live += bytes;
    if (bytes >= floor) order.push_back({g->last_used(), g});
  }
  for (const EvictableCache* s : shared_) live += s->releasable_bytes();
  if (live <= target) return 0;
  const size_t need = live - target;
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  size_t freed = 0;
  auto take = [&](EvictableCache* c, uint64_t& count) {
    if (freed >= need) return;
    const size_t got = c->release(need - freed, later);
    freed += got;
    count += got > 0;
  };
  for (size_t i = 0; i + 1 < order.size(); ++i) take(order[i].second, evictions_);
  for (EvictableCache* s : shared_) take(s, trims_);
  if (!order.empty()) take(order.back().second, evictions_);
  return freed;
}

void MemoryLimit::evict() {
  std::vector<std::shared_ptr<const void>> later;  // old epochs, destroyed outside the lock
  {
    std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
    if (!lock.owns_lock()) return;  // another thread is evicting
    const size_t limit = this->limit(), total = this->total();
    if (total <= limit) return;
    // The grammars themselves are never evicted: the lazy state makes room for them, up to half
    // the limit (past it the compilers' caches let grammars go; squeezing would only thrash).
    const size_t grammars = std::min(bytes_[kGrammarMemory].load(std::memory_order_relaxed), limit / 2);
    const size_t freed = release_in_order(limit - limit / 4 - grammars, later);
    // Still over (idle matchers hold dropped epochs): no new pass until the total grows further.
    const size_t left = total - std::min(total, freed);
    retry_above_.store(left > limit ? left + limit / 16 : 0, std::memory_order_relaxed);
  }
  // An epoch no matcher holds is freed here (its destructor gives its bytes back); one that a
  // matcher holds goes with that matcher's next call.
  later.clear();
}

MemoryUsage MemoryLimit::usage() const {
  std::lock_guard<std::mutex> lock(mu_);
  for (EvictableCache* g : grammars_) g->measure();
  MemoryUsage u;
  for (int k = 0; k < kMemoryKinds; ++k) {
    u.bytes[k] = bytes_[k].load(std::memory_order_relaxed);
    u.total += u.bytes[k];
  }
  u.limit = limit();
  const size_t lazy = u.total - u.bytes[kGrammarMemory];
  u.retired = lazy - std::min(lazy, live_bytes());
  u.grammars = grammars_.size();
  u.vocabularies = shared_.size();
  u.evictions = evictions_;
  u.trims = trims_;
  return u;
}

namespace {
thread_local CallMemory* watching = nullptr;

std::string megabytes(size_t bytes) { return std::to_string((bytes + (1 << 19)) >> 20) + " MB"; }
}  // namespace

CallMemory::CallMemory(const CallMemorySource* source, const char* call)
    : outer_(watching), source_(source), call_(call) {
  start_ = counted_ = source->built_bytes();
  watching = this;
}

CallMemory::~CallMemory() { watching = outer_; }

void CallMemory::check() {
  CallMemory* w = watching;
  if (!w) return;
  const size_t now = w->source_->built_bytes();
  MemoryLimit& memory = MemoryLimit::get();
  const size_t limit = memory.limit();
  // Charged in steps (an eviction pass is not free), both ways: a cache that starts afresh
  // inside the call gives its bytes back.
  const int64_t delta = static_cast<int64_t>(now) - static_cast<int64_t>(w->counted_);
  if (static_cast<size_t>(delta < 0 ? -delta : delta) < limit / 64) return;
  w->source_->count_built(delta);
  w->counted_ = now;
  if (delta < 0) return;
  const size_t grown = now > w->start_ ? now - w->start_ : 0;
  const char* why = nullptr;
  if (grown > limit / 2) {
    why = ", more than half the process memory limit of ";
  } else {
    memory.enforce();
    if (grown > limit / 8 && memory.total() > limit + limit / 2)
      why = " while the process stays over its memory limit of ";
  }
  if (!why) return;
  w->tripped_ = true;
  throw BudgetError(std::string(w->call_) + " built " + megabytes(grown) + " of grammar state" + why +
                    megabytes(limit) + " (stencil.set_memory_limit; stencil serve --memory-limit)");
}

}  // namespace stencil
