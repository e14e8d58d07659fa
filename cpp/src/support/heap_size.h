// What standard containers hold on the heap, as glibc's malloc lays it out (a chunk is the
// request plus an 8-byte header, rounded up to 16, at least 32), for the memory limit's counts.
// Estimates read off sizes and capacities, with no walk over elements: cheap enough to run at
// each growth point a cache is measured at.
#pragma once
#include <cstddef>
#include <deque>
#include <string>
#include <vector>

namespace stencil::heap {

inline size_t block(size_t bytes) {
  if (bytes == 0) return 0;
  const size_t chunk = (bytes + 8 + 15) & ~size_t(15);
  return chunk < 32 ? 32 : chunk;
}

template <class T>
size_t of(const std::vector<T>& v) {
  return block(v.capacity() * sizeof(T));
}

// libstdc++'s deque: 512-byte blocks (one element a block for larger ones), a block beyond the
// last element's, and a map of block pointers (at least 8).
template <class T>
size_t of(const std::deque<T>& d) {
  const size_t per_block = sizeof(T) < 512 ? 512 / sizeof(T) : 1;
  const size_t blocks = d.size() / per_block + 1;
  return blocks * block(per_block * sizeof(T)) + block((blocks + 2 < 8 ? 8 : blocks + 2) * sizeof(void*));
}

inline size_t of(const std::string& s) { return s.capacity() > 15 ? block(s.capacity() + 1) : 0; }

// A node-based hash map or set (std::unordered_*): one node per element (a next pointer, the
// element, a cached hash) and the bucket array. What elements own elsewhere is the caller's.
template <class Map>
size_t nodes(const Map& m) {
  return m.size() * block(sizeof(void*) + sizeof(typename Map::value_type) + sizeof(size_t)) +
         m.bucket_count() * sizeof(void*);
}

}  // namespace stencil::heap
