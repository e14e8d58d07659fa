#include "tokens/shared_cache.h"

#include "tokens/merged_runs.h"

#include <algorithm>
#include <cstring>
#include <mutex>

namespace stencil {

void SharedMaskEntry::index() {
  // (vectorized, no branch: 32-bit counts take four words a vector, where 64-bit ones took two
  // and widened each; a vocabulary's word count fits)
  uint32_t ones = 0, zeros = 0;
  for (uint32_t w : inner) {
    ones += w == ~0u;
    zeros += w == 0;
  }
  base = ones > zeros ? ~0u : 0u;
  words_count = static_cast<uint32_t>(inner.size());
  // (an eighth of the words at most: past that the stores cost about what the copy does)
  const size_t differ = inner.size() - std::max<size_t>(ones, zeros);
  sparse = differ <= inner.size() / 8;
  odd.clear();
  if (!sparse) return;
  odd.reserve(differ);
  // By blocks of 8 words, most of them all `base`: a block's test vectorizes, where a word's test
  // with the push beside it did not.
  const uint32_t b = base;
  const uint32_t* w = inner.data();
  const size_t n = inner.size();
  for (size_t at = 0; at < n; at += 8) {
    const size_t end = std::min(n, at + 8);
    uint32_t diff = 0;
    for (size_t i = at; i < end; ++i) diff |= w[i] ^ b;
    if (diff == 0) continue;
    for (size_t i = at; i < end; ++i)
      if (w[i] != b) odd.emplace_back(static_cast<uint32_t>(i), w[i]);
  }
  std::vector<uint32_t>().swap(inner);
}

void SharedMaskEntry::write(uint32_t* words, size_t need) const {
  if (!sparse) {
    std::copy(inner.begin(), inner.begin() + static_cast<std::ptrdiff_t>(need), words);
    return;
  }
  // (base is all ones or all zeros: a memset, which stores wider than the fill loop's 16 bytes)
  std::memset(words, base ? 0xFF : 0, need * sizeof(uint32_t));
  for (const auto& [i, w] : odd) {
    if (i >= need) break;
    words[i] = w;
  }
}

std::vector<uint32_t> SharedMaskEntry::dense() const {
  if (!sparse) return inner;
  std::vector<uint32_t> out(words_count);
  write(out.data(), out.size());
  return out;
}

SharedCache::SharedCache(size_t capacity_bytes) : capacity_(capacity_bytes) { MemoryLimit::get().add(this, false); }

SharedCache::~SharedCache() {
  MemoryLimit::get().remove(this);
  MemoryLimit::get().charge(kSharedMaskMemory, -static_cast<int64_t>(bytes()));
}

template <class Entry>
std::shared_ptr<const Entry> SharedCache::Table<Entry>::find(const std::string& key) const {
  const Shard& sh = shard_of(key);
  std::shared_lock<std::shared_mutex> lock(sh.mu);
  auto it = sh.entries.find(key);
  if (it == sh.entries.end()) return nullptr;
  const uint64_t now = MemoryLimit::get().now();
  if (it->second->used.load(std::memory_order_relaxed) != now) it->second->used.store(now, std::memory_order_relaxed);
  return it->second;
}

template <class Entry>
size_t SharedCache::Table<Entry>::size() const {
  size_t n = 0;
  for (const Shard& sh : shards) {
    std::shared_lock<std::shared_mutex> lock(sh.mu);
    n += sh.entries.size();
  }
  return n;
}

template <class Entry>
void SharedCache::Table<Entry>::stamps(std::vector<std::pair<uint64_t, size_t>>& out) const {
  for (const Shard& sh : shards) {
    std::shared_lock<std::shared_mutex> lock(sh.mu);
    for (const auto& [key, e] : sh.entries) out.push_back({e->used.load(std::memory_order_relaxed), cost(key, *e)});
  }
}

template <class Entry>
size_t SharedCache::Table<Entry>::drop_until(uint64_t cutoff) {
  size_t freed = 0;
  for (Shard& sh : shards) {
    std::unique_lock<std::shared_mutex> lock(sh.mu);
    for (auto it = sh.entries.begin(); it != sh.entries.end();) {
      if (it->second->used.load(std::memory_order_relaxed) > cutoff) {
        ++it;
        continue;
      }
      freed += cost(it->first, *it->second);
      it = sh.entries.erase(it);
    }
  }
  return freed;
}

template <class Entry>
void SharedCache::insert(Table<Entry>& table, std::string key, std::shared_ptr<const Entry> entry) {
  const size_t c = cost(key, *entry);
  MemoryLimit& process = MemoryLimit::get();
  if (bytes_.load(std::memory_order_relaxed) + c > std::min(capacity_, process.limit() / 4)) return;
  auto& sh = table.shard_of(key);
  std::unique_lock<std::shared_mutex> lock(sh.mu);
  if (sh.entries.count(key)) return;
  entry->used.store(process.now(), std::memory_order_relaxed);
  bytes_.fetch_add(c, std::memory_order_relaxed);
  process.charge(kSharedMaskMemory, static_cast<int64_t>(c));
  sh.entries.emplace(std::move(key), std::move(entry));
}

size_t SharedCache::trim(size_t want) {
  // The stamp at which the oldest entries add up to `want`: everything used at or before it goes.
  std::vector<std::pair<uint64_t, size_t>> stamps;
  masks_.stamps(stamps);
  paths_.stamps(stamps);
  classes_.stamps(stamps);
  verdicts_.stamps(stamps);
  if (stamps.empty() || want == 0) return 0;
  std::sort(stamps.begin(), stamps.end());
  size_t sum = 0, i = 0;
  while (i + 1 < stamps.size() && sum + stamps[i].second < want) sum += stamps[i++].second;
  const uint64_t cutoff = stamps[i].first;
  const size_t freed = masks_.drop_until(cutoff) + paths_.drop_until(cutoff) + classes_.drop_until(cutoff) +
                       verdicts_.drop_until(cutoff);
  bytes_.fetch_sub(freed, std::memory_order_relaxed);
  MemoryLimit::get().charge(kSharedMaskMemory, -static_cast<int64_t>(freed));
  return freed;
}

template struct SharedCache::Table<SharedMaskEntry>;
template struct SharedCache::Table<SharedPathEntry>;
template struct SharedCache::Table<MergedClass>;
template void SharedCache::insert(Table<SharedMaskEntry>&, std::string, std::shared_ptr<const SharedMaskEntry>);
template void SharedCache::insert(Table<SharedPathEntry>&, std::string, std::shared_ptr<const SharedPathEntry>);
template void SharedCache::insert(Table<MergedClass>&, std::string, std::shared_ptr<const MergedClass>);
template struct SharedCache::Table<SharedVerdict>;
template void SharedCache::insert(Table<SharedVerdict>&, std::string, std::shared_ptr<const SharedVerdict>);

}  // namespace stencil
