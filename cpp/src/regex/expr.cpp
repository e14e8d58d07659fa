#include "regex/expr.h"

#include <algorithm>
#include <functional>
#include <tuple>

#include "stencil/errors.h"
#include "support/heap_size.h"

namespace stencil {

ExprStore::ExprStore(size_t max_nodes) : max_nodes_(max_nodes) {
  ExprNode nothing{ExprKind::Nothing, false, false, true};
  intern(nothing, nullptr);
  ExprNode empty{ExprKind::Empty, true, false, true};
  intern(empty, nullptr);
  ByteSet all;
  all.add_range(0, 255);
  ExprId any = bytes(all);
  ExprId star = repeat(any, 0, kUnbounded);
  (void)star;  // == kAnyByteStar by construction order
}

uint64_t ExprStore::node_hash(const ExprNode& n, const ExprId* args, size_t nargs) const {
  uint64_t h = 0x9e3779b97f4a7c15ull * (static_cast<uint64_t>(n.kind) + 1);
  auto mix = [&h](uint64_t x) {
    h = (h ^ x) * 0xff51afd7ed558ccdull;
    h ^= h >> 32;
  };
  if (n.kind == ExprKind::Bytes) {
    for (uint64_t w : bytesets_[n.a].w) mix(w);
  } else {
    mix((uint64_t(n.a) << 32) | n.b);
    mix((uint64_t(n.min) << 32) | n.max);
    for (size_t i = 0; i < nargs; ++i) mix(args[i]);
  }
  return h;
}

bool ExprStore::same_node(ExprId id, const ExprNode& n, const ExprId* args, size_t nargs) const {
  const ExprNode& o = nodes_[id];
  if (o.kind != n.kind) return false;
  if (n.kind == ExprKind::Bytes) {
    const ByteSet &x = bytesets_[o.a], &y = bytesets_[n.a];
    return x.w[0] == y.w[0] && x.w[1] == y.w[1] && x.w[2] == y.w[2] && x.w[3] == y.w[3];
  }
  if (o.a != n.a || o.b != n.b || o.min != n.min || o.max != n.max || o.args_len != nargs) return false;
  return std::equal(args, args + nargs, args_.begin() + o.args_begin);
}

void ExprStore::grow_table() {
  std::vector<uint32_t> old = std::move(table_);
  table_.assign(old.empty() ? 1024 : old.size() * 2, 0);
  const size_t mask = table_.size() - 1;
  for (uint32_t slot : old) {
    if (!slot) continue;
    const ExprNode& n = nodes_[slot - 1];
    size_t h = node_hash(n, args_.data() + n.args_begin, n.args_len) & mask;
    while (table_[h]) h = (h + 1) & mask;
    table_[h] = slot;
  }
}

ExprId ExprStore::intern(ExprNode n, const std::vector<ExprId>* args) {
  const ExprId* a = args ? args->data() : nullptr;
  const size_t na = args ? args->size() : 0;
  if ((table_used_ + 1) * 2 > table_.size()) grow_table();
  const size_t mask = table_.size() - 1;
  size_t h = node_hash(n, a, na) & mask;
  for (; table_[h]; h = (h + 1) & mask) {
    if (same_node(table_[h] - 1, n, a, na)) {
      if (n.kind == ExprKind::Bytes) bytesets_.pop_back();  // the tentative set is a duplicate
      return table_[h] - 1;
    }
  }
  if (nodes_.size() >= max_nodes_)
    throw BudgetError("regular expression size limit exceeded: more than " + std::to_string(max_nodes_) +
                      " distinct expressions (the pattern or grammar is too complex)");
  if (args) {
    n.args_begin = static_cast<uint32_t>(args_.size());
    n.args_len = static_cast<uint32_t>(na);
    args_.insert(args_.end(), a, a + na);
  }
  ExprId id = static_cast<ExprId>(nodes_.size());
  uint32_t bound = 0;
  switch (n.kind) {
    case ExprKind::Concat:
      bound = std::max(nodes_[n.a].max_bound, nodes_[n.b].max_bound);
      break;
    case ExprKind::Or:
    case ExprKind::And:
      for (size_t i = 0; i < na; ++i) bound = std::max<uint32_t>(bound, nodes_[a[i]].max_bound);
      break;
    case ExprKind::Not:
      bound = nodes_[n.a].max_bound;
      break;
    case ExprKind::Repeat:
      bound = std::max<uint32_t>(nodes_[n.a].max_bound, n.max == kUnbounded ? 0u : n.max);
      break;
    default:
      break;
  }
  n.max_bound = static_cast<uint16_t>(std::min<uint32_t>(bound, 0xFFFF));
  nodes_.push_back(n);
  table_[h] = id + 1;
  ++table_used_;
  return id;
}

ExprId ExprStore::bytes(const ByteSet& set) {
  if (set.empty()) return kNothing;
  bytesets_.push_back(set);
  ExprNode n{ExprKind::Bytes, false, false, true};
  n.a = static_cast<uint32_t>(bytesets_.size() - 1);
  return intern(n, nullptr);
}

ExprId ExprStore::byte(uint8_t b) {
  if (byte_ids_[b] != 0) return byte_ids_[b];  // (a literal's bytes: one hash lookup fewer a byte)
  ByteSet s;
  s.add(b);
  return byte_ids_[b] = bytes(s);
}

ExprId ExprStore::literal(const std::string& s) {
  ExprId r = kEmpty;
  for (size_t i = s.size(); i-- > 0;) r = concat(byte(static_cast<uint8_t>(s[i])), r);
  return r;
}

ExprId ExprStore::concat(ExprId a, ExprId b) {
  if (a == kNothing || b == kNothing) return kNothing;
  if (a == kEmpty) return b;
  if (b == kEmpty) return a;
  if (nodes_[a].kind != ExprKind::Concat) return concat_node(a, b);  // (a literal's bytes: no chain vector)
  // Keep concatenations right-nested: unroll a's chain, then fold from the right.
  std::vector<ExprId> heads;
  while (nodes_[a].kind == ExprKind::Concat) {
    heads.push_back(nodes_[a].a);
    a = nodes_[a].b;
  }
  heads.push_back(a);
  ExprId r = b;
  for (size_t i = heads.size(); i-- > 0;) r = concat_node(heads[i], r);
  return r;
}

ExprId ExprStore::concat_node(ExprId head, ExprId rest) {
  const ExprNode &nh = nodes_[head], &nr = nodes_[rest];
  ExprNode n{ExprKind::Concat, nh.nullable && nr.nullable, nh.boolean || nr.boolean, nh.no_bounds && nr.no_bounds};
  n.a = head;
  n.b = rest;
  return intern(n, nullptr);
}

ExprId ExprStore::concat(const std::vector<ExprId>& items) {
  ExprId r = kEmpty;
  for (size_t i = items.size(); i-- > 0;) r = concat(items[i], r);
  return r;
}

ExprId ExprStore::alt(const std::vector<ExprId>& items) {
  std::vector<ExprId>& flat = flat_;
  flat.clear();
  ByteSet merged;
  bool has_bytes = false;
  auto take = [&](ExprId p) {
    if (p == kNothing) return;
    if (nodes_[p].kind == ExprKind::Bytes) {
      merged = merged | bytesets_[nodes_[p].a];
      has_bytes = true;
    } else {
      flat.push_back(p);
    }
  };
  for (ExprId e : items) {
    if (e == kAnyByteStar) return kAnyByteStar;
    const ExprNode& n = nodes_[e];
    if (n.kind == ExprKind::Or) {
      for (uint32_t i = 0; i < n.args_len; ++i) take(args_[n.args_begin + i]);
    } else {
      take(e);
    }
  }
  if (has_bytes) flat.push_back(bytes(merged));
  std::sort(flat.begin(), flat.end());
  flat.erase(std::unique(flat.begin(), flat.end()), flat.end());
  drop_absorbed(flat);
  // ε | r where r is nullable is just r.
  if (flat.size() > 1 && flat[0] == kEmpty) {
    bool other_nullable = false;
    for (size_t i = 1; i < flat.size(); ++i) other_nullable |= nodes_[flat[i]].nullable;
    if (other_nullable) flat.erase(flat.begin());
  }
  if (flat.empty()) return kNothing;
  if (flat.size() == 1) return flat[0];
  ExprNode n{ExprKind::Or, false, false, true};
  for (ExprId e : flat) {
    n.nullable |= nodes_[e].nullable;
    n.boolean |= nodes_[e].boolean;
    n.no_bounds &= nodes_[e].no_bounds;
  }
  return intern(n, &flat);
}

// An unanchored pattern's count (`.*[a-z]{162}.*` in a string) keeps every run begun as an
// alternative of its own, `[a-z]{161} C* "`, `[a-z]{160} C* "`, ...: a state per count of every
// one, and a state's size growing with the run. Where the rest takes the item first (X·Y ⊆ Y,
// as C* Z does for X ⊆ C), X{a,b} Y = X{a} Y ⊇ X{a'} Y for a' ≥ a, and Y ⊇ them all: the
// alternation keeps the least count only (or Y), the same language.
void ExprStore::drop_absorbed(std::vector<ExprId>& flat) {
  size_t counts = 0;  // (a cheap look first: most alternations hold no count)
  for (ExprId e : flat) counts += nodes_[e].kind == ExprKind::Concat && nodes_[nodes_[e].a].kind == ExprKind::Repeat;
  if (counts == 0 || flat.size() < 2) return;
  std::vector<CountedRun>& runs = runs_;
  runs.clear();
  for (ExprId e : flat) {
    const ExprNode& n = nodes_[e];
    if (n.kind != ExprKind::Concat) continue;
    const ExprNode& h = nodes_[n.a];
    if (h.kind == ExprKind::Repeat) runs.push_back({n.b, h.a, h.min, e});
    if (h.kind == ExprKind::Bytes) runs.push_back({n.b, n.a, 1, e});  // (X{1} Y is X Y)
  }
  std::sort(runs.begin(), runs.end(), [](const CountedRun& x, const CountedRun& y) {
    return std::tie(x.rest, x.item, x.min, x.id) < std::tie(y.rest, y.item, y.min, y.id);
  });
  std::vector<ExprId> gone;  // (made only where a count is dropped)
  for (size_t i = 0; i < runs.size();) {
    size_t j = i + 1;
    while (j < runs.size() && runs[j].rest == runs[i].rest && runs[j].item == runs[i].item) ++j;
    const bool rest_too = std::binary_search(flat.begin(), flat.end(), runs[i].rest);
    if ((j - i > 1 || rest_too) && takes_first(runs[i].rest, runs[i].item))
      for (size_t k = rest_too ? i : i + 1; k < j; ++k) gone.push_back(runs[k].id);  // (i: the least)
    i = j;
  }
  if (gone.empty()) return;
  std::sort(gone.begin(), gone.end());
  flat.erase(std::remove_if(flat.begin(), flat.end(),
                            [&](ExprId e) { return std::binary_search(gone.begin(), gone.end(), e); }),
             flat.end());
}

bool ExprStore::takes_first(ExprId rest, ExprId item) const {
  const ExprNode& y = nodes_[rest];
  const ExprId star = y.kind == ExprKind::Concat ? y.a : rest;
  const ExprNode& s = nodes_[star];
  if (s.kind != ExprKind::Repeat || s.min != 0 || s.max != kUnbounded) return false;
  const ExprId c = s.a;
  if (c == item) return true;
  const ExprNode& cn = nodes_[c];
  const ExprNode& xn = nodes_[item];
  auto covers = [&](ExprId b) {  // a byte set of C holding all of item's bytes
    return nodes_[b].kind == ExprKind::Bytes && xn.kind == ExprKind::Bytes &&
           (bytesets_[nodes_[b].a] | bytesets_[xn.a]) == bytesets_[nodes_[b].a];
  };
  if (covers(c)) return true;
  if (cn.kind != ExprKind::Or) return false;
  for (uint32_t i = 0; i < cn.args_len; ++i)
    if (args_[cn.args_begin + i] == item || covers(args_[cn.args_begin + i])) return true;
  return false;
}

ExprId ExprStore::conj(const std::vector<ExprId>& items) {
  std::vector<ExprId>& flat = flat_;
  flat.clear();
  for (ExprId e : items) {
    if (e == kNothing) return kNothing;
    const ExprNode& n = nodes_[e];
    if (n.kind == ExprKind::And) {
      for (uint32_t i = 0; i < n.args_len; ++i)
        if (args_[n.args_begin + i] != kAnyByteStar) flat.push_back(args_[n.args_begin + i]);
    } else if (e != kAnyByteStar) {
      flat.push_back(e);
    }
  }
  std::sort(flat.begin(), flat.end());
  flat.erase(std::unique(flat.begin(), flat.end()), flat.end());
  if (flat.size() > 1 && merge_byte_counts(flat)) {
    if (std::find(flat.begin(), flat.end(), kNothing) != flat.end()) return kNothing;
    std::sort(flat.begin(), flat.end());
    flat.erase(std::unique(flat.begin(), flat.end()), flat.end());
  }
  if (flat.size() > 1) drop_full_counts(flat);
  if (flat.empty()) return kAnyByteStar;
  bool all_nullable = true;
  for (ExprId e : flat) all_nullable &= nodes_[e].nullable;
  if (flat[0] == kEmpty) return all_nullable ? kEmpty : kNothing;
  // Intersections of single bytes are single bytes.
  bool all_bytes = true;
  for (ExprId e : flat) all_bytes &= nodes_[e].kind == ExprKind::Bytes;
  if (all_bytes) {
    ByteSet s = bytesets_[nodes_[flat[0]].a];
    for (ExprId e : flat) s = s & bytesets_[nodes_[e].a];
    return bytes(s);
  }
  if (flat.size() == 1) return flat[0];
  // x & ~(x | ...) is empty. Derivatives reach it when a forbidden part has just matched (a key
  // that must not contain a pattern, once it does); left for the emptiness search, proving it
  // would explore every derivative of the intersection.
  for (ExprId e : flat) {
    if (nodes_[e].kind != ExprKind::Not) continue;
    for (ExprId x : flat)
      if (holds(nodes_[e].a, x)) return kNothing;
  }
  ExprNode n{ExprKind::And, all_nullable, true, true};
  for (ExprId e : flat) n.no_bounds &= nodes_[e].no_bounds;
  return intern(n, &flat);
}

// A count of single bytes beside counts of characters (`^[a-z0-9_-]{3,64}$` beside minLength
// and maxLength) is one count of the bytes all take, where each of the others' characters that
// starts with one of those bytes is that byte alone: a word of the bytes is then as many
// characters of each (every byte starts a character), and a byte none of them takes as a whole
// character is in no word of theirs. The intersection's states were each a new walk of the
// trie; one count of a byte class is what the masks' counted paths read.
bool ExprStore::merge_byte_counts(std::vector<ExprId>& flat) {
  auto counts_bytes = [&](ExprId e) {
    return nodes_[e].kind == ExprKind::Repeat && nodes_[nodes_[e].a].kind == ExprKind::Bytes;
  };
  ByteSet set;
  uint32_t lo = 0, hi = kUnbounded;
  int merged = 0;
  for (ExprId e : flat)
    if (counts_bytes(e)) {
      const ExprNode n = nodes_[e];
      set = merged++ ? set & bytesets_[nodes_[n.a].a] : bytesets_[nodes_[n.a].a];
      lo = std::max(lo, n.min);
      hi = std::min(hi, n.max);
    }
  if (merged == 0) return false;
  std::vector<ExprId> kept;
  for (ExprId e : flat) {
    if (counts_bytes(e)) continue;
    const ExprNode n = nodes_[e];
    ByteSet whole, starts;  // characters of one byte; first bytes of longer ones
    bool known = n.kind == ExprKind::Repeat && nodes_[n.a].kind == ExprKind::Or;
    for (uint32_t i = 0; known && i < nodes_[n.a].args_len; ++i) {
      const ExprNode& c = nodes_[args_[nodes_[n.a].args_begin + i]];
      if (c.kind == ExprKind::Bytes)
        whole = whole | bytesets_[c.a];
      else if (c.kind == ExprKind::Concat && nodes_[c.a].kind == ExprKind::Bytes)
        starts = starts | bytesets_[nodes_[c.a].a];
      else
        known = false;
    }
    if (!known || !(set & starts).empty()) {
      kept.push_back(e);
      continue;
    }
    set = set & whole;
    lo = std::max(lo, n.min);
    hi = std::min(hi, n.max);
    ++merged;
  }
  if (merged < 2) return false;
  kept.push_back(repeat(bytes(set), lo, hi));
  flat.swap(kept);
  return true;
}

// A full count of characters C* beside an operand whose words are strings of C's one-byte
// characters (every byte of them one: a minLength met, `C{6,}` now `C*`, beside a pattern or a
// format of ASCII words) holds that operand's language, and so the intersection's: it is
// dropped. The state is then the pattern's alone, its derivatives a conjunct fewer (or none:
// its ceilings and slices are a plain expression's).
void ExprStore::drop_full_counts(std::vector<ExprId>& flat) {
  for (size_t i = 0; i < flat.size() && flat.size() > 1;) {
    const ExprNode n = nodes_[flat[i]];
    ByteSet ones;  // the one-byte words of the item
    if (n.kind == ExprKind::Repeat && n.min == 0 && n.max == kUnbounded) {
      const ExprNode item = nodes_[n.a];
      if (item.kind == ExprKind::Bytes) ones = bytesets_[item.a];
      for (uint32_t k = 0; item.kind == ExprKind::Or && k < item.args_len; ++k)
        if (nodes_[args(item)[k]].kind == ExprKind::Bytes) ones = ones | bytesets_[nodes_[args(item)[k]].a];
    }
    const bool held = !ones.empty() && std::any_of(flat.begin(), flat.end(), [&](ExprId x) {
      int work = 4096;
      return x != flat[i] && (byte_span(x, Span::kAll, &work) | ones) == ones;
    });
    if (held)
      flat.erase(flat.begin() + static_cast<std::ptrdiff_t>(i));
    else
      ++i;
  }
}

bool ExprStore::word(ExprId e, std::string* out, size_t limit) const {
  for (;;) {  // (concatenations are right-nested: a head, then the rest)
    const ExprNode& n = nodes_[e];
    const ExprId head = n.kind == ExprKind::Concat ? n.a : e;
    const ExprNode& h = nodes_[head];
    if (h.kind == ExprKind::Bytes) {
      const ByteSet& set = bytesets_[h.a];
      int count = 0, at = 0;
      for (int i = 0; i < 4; ++i) {
        count += __builtin_popcountll(set.w[i]);
        if (set.w[i]) at = 64 * i + __builtin_ctzll(set.w[i]);
      }
      if (count != 1 || out->size() >= limit) return false;
      out->push_back(static_cast<char>(at));
    } else if (h.kind != ExprKind::Empty) {
      return false;
    }
    if (n.kind != ExprKind::Concat) return true;
    e = n.b;
  }
}

bool ExprStore::holds(ExprId e, ExprId f) const {
  if (e == f) return true;
  const ExprNode& n = nodes_[e];
  return n.kind == ExprKind::Or &&
         std::binary_search(args_.data() + n.args_begin, args_.data() + n.args_begin + n.args_len, f);
}

bool ExprStore::within(ExprId x, ExprId y) const {
  int work = 512;  // (nodes compared: past it, no proof)
  return within(x, y, &work);
}

bool ExprStore::within(ExprId x, ExprId y, int* work) const {
  if (x == y || x == kNothing || y == kAnyByteStar) return true;
  if (--*work < 0) return false;
  const ExprNode &a = nodes_[x], &b = nodes_[y];
  auto any_of = [&](const ExprNode& n, auto&& test) { return std::any_of(args(n), args(n) + n.args_len, test); };
  if (a.kind == ExprKind::Empty) return b.nullable;
  // Either side's alternatives and intersections first: x's alternatives must each lie within
  // y; an intersection lies within any operand's language; y's alternatives hold x if one does.
  if (a.kind == ExprKind::Or)
    return std::all_of(args(a), args(a) + a.args_len, [&](ExprId e) { return within(e, y, work); });
  if (a.kind == ExprKind::And && any_of(a, [&](ExprId e) { return within(e, y, work); })) return true;
  if (b.kind == ExprKind::Or) return any_of(b, [&](ExprId e) { return within(x, e, work); });
  if (b.kind == ExprKind::And)
    return std::all_of(args(b), args(b) + b.args_len, [&](ExprId e) { return within(x, e, work); });
  if (a.kind == ExprKind::Not && b.kind == ExprKind::Not) return within(b.a, a.a, work);
  if (a.kind == ExprKind::Bytes && b.kind == ExprKind::Bytes)
    return (bytesets_[a.a] | bytesets_[b.a]) == bytesets_[b.a];
  if (a.kind == ExprKind::Concat && b.kind == ExprKind::Concat) return within(a.a, b.a, work) && within(a.b, b.b, work);
  if (b.kind == ExprKind::Repeat) {
    if (a.kind == ExprKind::Repeat)
      return b.min <= a.min && (b.max == kUnbounded || (a.max != kUnbounded && a.max <= b.max)) &&
             within(a.a, b.a, work);
    return b.min <= 1 && b.max >= 1 && within(x, b.a, work);  // (one item)
  }
  return false;
}

ExprId ExprStore::negate(ExprId a) {
  const ExprNode& na = nodes_[a];
  if (na.kind == ExprKind::Not) return na.a;
  if (a == kNothing) return kAnyByteStar;
  if (a == kAnyByteStar) return kNothing;
  ExprNode n{ExprKind::Not, !na.nullable, true, false};
  n.a = a;
  return intern(n, nullptr);
}

ExprId ExprStore::repeat(ExprId a, uint32_t min, uint32_t max) {
  if (max != kUnbounded && min > max) return kNothing;
  if (max == 0) return kEmpty;
  if (a == kNothing) return min == 0 ? kEmpty : kNothing;
  if (a == kEmpty) return kEmpty;
  if (min == 1 && max == 1) return a;
  const ExprNode na = nodes_[a];
  // (r*)* = r*, and a nullable item makes the lower bound moot.
  if (na.kind == ExprKind::Repeat && na.min == 0 && na.max == kUnbounded && max == kUnbounded) return a;
  if (na.nullable) min = 0;
  ExprNode n{ExprKind::Repeat, min == 0 || na.nullable, na.boolean,
             na.no_bounds && !na.nullable && (max == kUnbounded || max <= 1)};
  n.a = a;
  n.min = min;
  n.max = max;
  return intern(n, nullptr);
}

ExprId ExprStore::number(const NumberState& s) {
  if (!number_live(s)) return kNothing;
  if (num_states_.empty()) {
    // Each byte a number reads must be a byte class of its own (every digit moves the value):
    // the lexer partitions bytes by the byte sets in the store.
    for (const char* c = "0123456789.+-"; *c; ++c) byte(static_cast<uint8_t>(*c));
    ByteSet e;
    e.add('e');
    e.add('E');
    bytes(e);
  }
  std::string key = number_key(s);
  auto [it, fresh] = num_index_.emplace(std::move(key), static_cast<uint32_t>(num_states_.size()));
  if (fresh) {
    num_states_.push_back(s);
    num_bytes_ += 2 * it->first.size() + sizeof(NumberState) + 64;
  }
  ExprNode n{ExprKind::Number, number_nullable(s), false, true};
  n.a = it->second;
  return intern(n, nullptr);
}

size_t ExprStore::memory_bytes() const {
  return heap::of(nodes_) + heap::of(args_) + heap::of(bytesets_) + heap::of(table_) + heap::of(flat_) +
         heap::of(num_states_) + num_bytes_ + heap::nodes(recount_memo_) + heap::nodes(least_memo_) +
         heap::nodes(char_count_memo_) + heap::nodes(span_memo_) + heap::of(runs_);
}

static std::string byteset_to_string(const ByteSet& s) {
  std::string out = "[";
  for (int lo = 0; lo < 256;) {
    if (!s.has(static_cast<uint8_t>(lo))) {
      ++lo;
      continue;
    }
    int hi = lo;
    while (hi + 1 < 256 && s.has(static_cast<uint8_t>(hi + 1))) ++hi;
    auto show = [](int b) {
      if (b >= 0x21 && b < 0x7f && b != '\\' && b != ']' && b != '-') return std::string(1, static_cast<char>(b));
      char buf[8];
      snprintf(buf, sizeof buf, "\\x%02x", b);
      return std::string(buf);
    };
    out += show(lo);
    if (hi > lo) out += "-" + show(hi);
    lo = hi + 1;
  }
  return out + "]";
}

std::string ExprStore::to_string(ExprId e) const { return to_string(e, 0); }

// Bounded depth: expressions can nest far deeper than a readable (or stack-safe) printout.
std::string ExprStore::to_string(ExprId e, int depth) const {
  if (depth > 64) return "…";
  const ExprNode& n = nodes_[e];
  switch (n.kind) {
    case ExprKind::Nothing:
      return "∅";
    case ExprKind::Empty:
      return "ε";
    case ExprKind::Bytes:
      return byteset_to_string(bytesets_[n.a]);
    case ExprKind::Concat:
      return "(" + to_string(n.a, depth + 1) + to_string(n.b, depth + 1) + ")";
    case ExprKind::Or:
    case ExprKind::And: {
      std::string out = "(";
      for (uint32_t i = 0; i < n.args_len; ++i) {
        if (i) out += n.kind == ExprKind::Or ? "|" : "&";
        out += to_string(args_[n.args_begin + i], depth + 1);
      }
      return out + ")";
    }
    case ExprKind::Not:
      return "~(" + to_string(n.a, depth + 1) + ")";
    case ExprKind::Repeat:
      return to_string(n.a, depth + 1) + "{" + std::to_string(n.min) + "," +
             (n.max == kUnbounded ? std::string() : std::to_string(n.max)) + "}";
    case ExprKind::Number:
      return number_to_string(num_states_[n.a]);
  }
  return "?";
}

namespace {

bool canonical_rec(const ExprStore& st, ExprId e, std::string& out, size_t limit, uint32_t clamp, int depth) {
  if (depth > 200 || out.size() > limit) return false;
  const ExprNode& n = st.node(e);
  out.push_back(static_cast<char>('0' + static_cast<int>(n.kind)));
  switch (n.kind) {
    case ExprKind::Nothing:
    case ExprKind::Empty:
      return true;
    case ExprKind::Bytes:
      out.append(reinterpret_cast<const char*>(st.byteset(n.a).w), sizeof(ByteSet));
      return true;
    case ExprKind::Concat:
      out.push_back('(');
      if (!canonical_rec(st, n.a, out, limit, clamp, depth + 1)) return false;
      // Concatenations are right-nested chains: walk the chain without recursion.
      for (ExprId rest = n.b;;) {
        const ExprNode& r = st.node(rest);
        if (r.kind != ExprKind::Concat) {
          if (!canonical_rec(st, rest, out, limit, clamp, depth + 1)) return false;
          break;
        }
        if (!canonical_rec(st, r.a, out, limit, clamp, depth + 1)) return false;
        if (out.size() > limit) return false;
        rest = r.b;
      }
      out.push_back(')');
      return true;
    case ExprKind::Or:
    case ExprKind::And: {
      // Under an intersection (or a complement, below) a bound far past the walk still decides
      // whether a step leaves a non-empty language (`.{0,5} & \d*\.\d` after "9714"): no clamp.
      const uint32_t kid_clamp = n.kind == ExprKind::And ? kUnbounded : clamp;
      // (the children together within the limit: each alone within it built args_len times the
      // limit before giving up, a state of 160 counts of an unanchored pattern 56% of its mask)
      std::vector<std::string> kids(n.args_len);
      size_t room = out.size() < limit ? limit - out.size() : 0;
      for (uint32_t i = 0; i < n.args_len; ++i) {
        if (!canonical_rec(st, st.args(n)[i], kids[i], room, kid_clamp, depth + 1) || kids[i].size() > room)
          return false;
        room -= kids[i].size();
      }
      std::sort(kids.begin(), kids.end());
      out.push_back('(');
      for (auto& k : kids) {
        out += std::to_string(k.size());
        out.push_back(':');
        out += k;
        if (out.size() > limit) return false;
      }
      out.push_back(')');
      return true;
    }
    case ExprKind::Not:
      return canonical_rec(st, n.a, out, limit, kUnbounded, depth + 1);
    case ExprKind::Repeat:
      out += std::to_string(std::min(n.min, clamp)) + "," + std::to_string(std::min(n.max, clamp)) + "{";
      if (!canonical_rec(st, n.a, out, limit, clamp, depth + 1)) return false;
      out.push_back('}');
      return true;
    case ExprKind::Number: {
      const std::string s = number_encode(st.number_state(n.a));
      out += std::to_string(s.size());
      out.push_back(':');
      out += s;
      return true;
    }
  }
  return false;
}

}  // namespace

bool ExprStore::canonical(ExprId e, std::string& out, size_t limit, uint32_t clamp) const {
  return canonical_rec(*this, e, out, limit, clamp, 0) && out.size() <= limit;
}

}  // namespace stencil
