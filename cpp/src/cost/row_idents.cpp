#include "cost/row_idents.h"

#include <algorithm>

namespace stencil {

namespace {
uint64_t mix(uint64_t h, uint64_t x) {
  h ^= x + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdull;
}
}  // namespace

// The rows below first, lowest unknown first (no deep recursion over a long stack).
uint64_t RowIdents::find(const EarleyParser& p, uint32_t row) {
  if (known_.size() < p.num_rows()) known_.resize(p.num_rows() * 2);
  uint32_t low = row;
  while (low > 0 && known_[low - 1].serial != p.row(low - 1).serial) --low;
  for (uint32_t r = low; r <= row; ++r) known_[r] = {p.row(r).serial, intern(p, r, r > 0 ? known_[r - 1].id : 0)};
  return known_[row].id;
}

uint64_t RowIdents::intern(const EarleyParser& p, uint32_t row, uint64_t below) {
  const EarleyRow& r = p.row(row);
  const size_t n = r.end - r.begin, v = r.veto_end - r.veto_begin;
  if (n > kMostItems) return ++next_id_;
  const EarleyItem* items = n ? &p.item(r.begin) : nullptr;
  const uint32_t* vetoes = p.vetoes_of(row);
  uint64_t h = mix(below, n << 32 | v);
  for (size_t j = 0; j < n; ++j) h = mix(h, uint64_t(items[j].pos) << 32 | items[j].origin);
  for (size_t j = 0; j < v; ++j) h = mix(h, vetoes[j]);
  Interned& e = interned_[(h >> 32) & (kSlots - 1)];
  auto same = [](const EarleyItem& a, const EarleyItem& b) { return a.pos == b.pos && a.origin == b.origin; };
  if (e.id != 0 && e.hash == h && e.below == below && e.items.size() == n && e.vetoes.size() == v &&
      std::equal(items, items + n, e.items.begin(), same) && std::equal(vetoes, vetoes + v, e.vetoes.begin()))
    return e.id;
  e.hash = h;
  e.below = below;
  e.items.assign(items, items + n);
  e.vetoes.assign(vetoes, vetoes + v);
  e.id = ++next_id_;
  return e.id;
}

}  // namespace stencil
