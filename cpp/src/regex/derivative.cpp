#include "regex/derivative.h"

#include <algorithm>
#include <deque>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "stencil/errors.h"
#include "support/deadline.h"
#include "support/heap_size.h"
#include "support/work_limit.h"

namespace stencil {

// Witnesses are shortest strings, most of them short enough to live inside std::string.
size_t Deriver::memory_bytes() const {
  size_t scratch = 0;
  for (const auto& v : scratch_) scratch += heap::of(v);
  for (const auto& [key, ends] : item_ends_) scratch += heap::of(ends);
  return cache_.memory_bytes() + heap::nodes(empty_cache_) + heap::nodes(witness_cache_) + scratch + heap::of(reps_) +
         heap::nodes(item_counts_) + heap::nodes(no_slack_) + heap::nodes(item_ends_) + heap::nodes(explored_items_);
}

namespace {

// Nesting (not length) drives the recursions below: a bound on it keeps the stack safe.
struct Nesting {
  int& depth;
  Nesting(int& d, const char* what) : depth(d) {
    if (++depth > 20000) {
      --depth;
      throw BudgetError(std::string("regular expression nests too deeply to ") + what);
    }
  }
  ~Nesting() { --depth; }
};

}  // namespace

void Deriver::burn(uint64_t amount) {
  if ((++ticks_ & 1023) == 0) deadline::check();
  work::spend(amount);
  if (fuel_ < amount) {
    exhausted_ = true;
    throw BudgetError(
        "regular expression work limit reached while computing derivatives "
        "(the pattern is too complex; raise the lexer fuel limit to allow it)");
  }
  fuel_ -= amount;
}

ExprId Deriver::derive(ExprId e, uint8_t b) {
  if (e <= ExprStore::kEmpty) return ExprStore::kNothing;
  if (e == ExprStore::kAnyByteStar) return e;
  uint64_t key = (uint64_t(e) << 8) | b;
  if (const uint32_t* hit = cache_.find(key)) return *hit;
  burn(1);
  const Nesting nest(depth_, "compute its derivatives");
  ExprId r = derive_uncached(e, b);
  if (cache_.size() >= cache_cap_) cache_.clear();  // results are ids: callers hold no entry
  cache_.put(key, r);
  return r;
}

ExprId Deriver::derive_uncached(ExprId e, uint8_t b) {
  const ExprNode n = store_.node(e);
  switch (n.kind) {
    case ExprKind::Nothing:
    case ExprKind::Empty:
      return ExprStore::kNothing;
    case ExprKind::Bytes:
      return store_.byteset(n.a).has(b) ? ExprStore::kEmpty : ExprStore::kNothing;
    case ExprKind::Concat: {
      ExprId head = store_.concat(derive(n.a, b), n.b);
      if (!store_.nullable(n.a)) return head;
      return store_.alt({head, derive(n.b, b)});
    }
    case ExprKind::Or:
    case ExprKind::And: {
      // The children are copied first (deriving them may grow the store and move its args),
      // into a buffer kept per recursion depth: no allocation once warm.
      if (scratch_.size() <= static_cast<size_t>(depth_)) scratch_.resize(depth_ + 1);
      std::vector<ExprId>& buf = scratch_[depth_];
      buf.assign(store_.args(n), store_.args(n) + n.args_len);
      burn(buf.size());
      // Children that start with a byte set without b are left out underived: in a large
      // alternation of keys or enum values most are, and deriving (and caching) each costs more.
      for (ExprId& k : buf) k = n.kind == ExprKind::Or && !may_start(k, b) ? ExprStore::kNothing : derive(k, b);
      return n.kind == ExprKind::Or ? store_.alt(buf) : store_.conj(buf);
    }
    case ExprKind::Not:
      return store_.negate(derive(n.a, b));
    case ExprKind::Repeat: {
      uint32_t min = n.min > 0 ? n.min - 1 : 0;
      uint32_t max = n.max == kUnbounded ? kUnbounded : n.max - 1;
      return store_.concat(derive(n.a, b), store_.repeat(n.a, min, max));
    }
    case ExprKind::Number: {
      NumberState next;
      // (a copy: interning the next state may grow the store's state table)
      const NumberState cur = store_.number_state(n.a);
      return number_step(cur, b, next) ? store_.number(next) : ExprStore::kNothing;
    }
  }
  return ExprStore::kNothing;
}

bool Deriver::is_empty(ExprId e) {
  if (e == ExprStore::kNothing) return true;
  const ExprNode n = store_.node(e);
  if (n.nullable) return false;
  if (!n.boolean) return false;  // simplification leaves no structurally empty non-∅ term
  auto it = empty_cache_.find(e);
  if (it != empty_cache_.end()) return it->second;
  // Structure first: the search below is only needed at an intersection or a complement. A
  // pattern's intersection followed by a closing quote is empty exactly when the intersection
  // is, and that one is often nullable: no search at all.
  if (n.kind == ExprKind::Concat || n.kind == ExprKind::Or || n.kind == ExprKind::Repeat) {
    const Nesting nest(depth_, "decide its emptiness");
    bool empty;
    if (n.kind == ExprKind::Concat) {
      empty = is_empty(n.a) || is_empty(n.b);
    } else if (n.kind == ExprKind::Repeat) {
      empty = is_empty(n.a);  // not nullable: at least one item
    } else {
      const std::vector<ExprId> kids(store_.args(n), store_.args(n) + n.args_len);
      empty = true;
      for (ExprId k : kids)
        if (!(empty = is_empty(k))) break;
    }
    empty_cache_.emplace(e, empty);
    return empty;
  }
  // An intersection usually holds the shortest string of one of its terms (a pattern's, beside
  // a length bound): try those first, by derivatives. The search below derives by every byte
  // class level after level, which for a pattern ending `.gov.uk` builds thousands of states.
  if (n.kind == ExprKind::And) {
    // (a pattern explored already answers at once; else its shortest word is tried first: a
    // string's first state needs no exploration, and the later ones find it done)
    if (const int counted = counted_empty(e, false); counted >= 0) {
      empty_cache_.emplace(e, counted == 1);
      return counted == 1;
    }
    if (witness_cache_.size() > (1u << 16)) witness_cache_.clear();  // a cache: bounded memory
    const std::vector<ExprId> kids(store_.args(n), store_.args(n) + std::min<uint32_t>(n.args_len, 8));
    auto holds = [&](const std::string& w) {
      ExprId d = e;
      for (size_t i = 0; i < w.size() && d != ExprStore::kNothing; ++i) d = derive(d, static_cast<uint8_t>(w[i]));
      return d != ExprStore::kNothing && store_.nullable(d);
    };
    // Each operand's word, then all of them end to end, both ways: keys that match two unanchored
    // patterns (`net_[a-z]+[0-9]+` and `(count|total)$`) hold "net_a0count", which no single
    // operand's word is, where the search built the product of the patterns (a millisecond each).
    std::string w, joined, reversed;
    for (ExprId k : kids) {
      if (!witness(k, w) || w.empty()) continue;
      if (holds(w)) {
        empty_cache_.emplace(e, false);
        return false;
      }
      joined += w;
      reversed.insert(0, w);
    }
    if ((!joined.empty() && holds(joined)) || (reversed != joined && holds(reversed))) {
      empty_cache_.emplace(e, false);
      return false;
    }
    if (const int counted = counted_empty(e, true); counted >= 0) {
      empty_cache_.emplace(e, counted == 1);
      return counted == 1;
    }
  }
  return search_empty(e);
}

// is_empty where the structure and the witnesses did not decide it:
bool Deriver::search_empty(ExprId e) {
  // a search for a nullable derivative, breadth-first. Where every word is long (a count's minimum
  // beside a format: an e-mail of at least 43 characters), depth-first after the first few states:
  // level by level, every shorter state of the product was expanded first (a second and more for
  // one lexer state). Elsewhere depth-first would go down derivatives that grow at every byte (a
  // number range beside its complement) while a short word waits. Both visit every reachable
  // state where the language is empty.
  constexpr size_t kBreadthFirst = 8;
  constexpr uint32_t kDeepWords = 16;  // (the fewest bytes of a word from which to go deep)
  const size_t breadth_first = store_.fewest_bytes(e) >= kDeepWords ? kBreadthFirst : ~size_t(0);
  // What earlier searches decided ends this one at once: a derivative known to hold a word
  // makes e hold one, one known to hold none is not expanded. And each search leaves its own
  // answers behind: the states on the way to the word found hold one, and where none is found,
  // every state reached holds none. The lexer's states of a format beside a count are derivatives
  // of each other, so the next state's search meets the last one's path within a byte or two.
  std::vector<ExprId> order{e};                          // the states reached, in turn
  std::unordered_map<ExprId, uint32_t> parent{{e, ~0u}};  // state -> its parent's index in order
  std::deque<uint32_t> queue{0};
  ExprId found = ExprStore::kNothing;  // a derivative that holds a word
  for (size_t expanded = 0; !queue.empty() && found == ExprStore::kNothing; ++expanded) {
    uint32_t at;
    if (expanded < breadth_first) {
      at = queue.front();
      queue.pop_front();
    } else {
      at = queue.back();
      queue.pop_back();
    }
    const ExprId cur = order[at];
    for (uint8_t rep : reps_) {
      ExprId d = derive(cur, rep);
      if (d == ExprStore::kNothing || !parent.emplace(d, at).second) continue;
      order.push_back(d);
      // (what earlier searches left, the structure, and a count beside a pattern decided off the
      // pattern's derivatives, cheaper than its own)
      const int quick = quick_empty(d);
      if (quick == 1) continue;  // holds no word: nothing past it
      if (quick == 0) {
        found = d;
        break;
      }
      burn(1);
      queue.push_back(static_cast<uint32_t>(order.size() - 1));
    }
  }
  if (found == ExprStore::kNothing) {
    for (ExprId x : order) empty_cache_.emplace(x, true);
    return true;
  }
  empty_cache_.emplace(found, false);
  for (uint32_t i = parent[found]; i != ~0u; i = parent[order[i]]) empty_cache_.emplace(order[i], false);
  return false;
}

bool Deriver::witness(ExprId e, std::string& out) {
  constexpr size_t kMaxWitness = 512;
  if (auto it = witness_cache_.find(e); it != witness_cache_.end()) {
    out = it->second.second;
    return it->second.first;
  }
  const Nesting nest(depth_, "decide its emptiness");
  const ExprNode n = store_.node(e);
  bool ok = false;
  std::string w;
  switch (n.kind) {
    case ExprKind::Nothing:
      break;
    case ExprKind::Empty:
      ok = true;
      break;
    case ExprKind::Bytes: {
      const ByteSet& set = store_.byteset(n.a);
      for (int b = 0; b < 256 && !ok; ++b)
        if (set.has(static_cast<uint8_t>(b))) {
          w.push_back(static_cast<char>(b));
          ok = true;
        }
      break;
    }
    case ExprKind::Concat: {
      std::string tail;
      ok = witness(n.a, w) && witness(n.b, tail) && w.size() + tail.size() <= kMaxWitness;
      if (ok) w += tail;
      break;
    }
    case ExprKind::Or: {
      const std::vector<ExprId> kids(store_.args(n), store_.args(n) + n.args_len);
      std::string k;
      for (ExprId x : kids)
        if (witness(x, k) && (!ok || k.size() < w.size())) {
          w.swap(k);
          ok = true;
        }
      break;
    }
    case ExprKind::Repeat: {
      std::string item;
      if (n.min == 0) {
        ok = true;
      } else if (witness(n.a, item) && uint64_t(item.size()) * n.min <= kMaxWitness) {
        for (uint32_t i = 0; i < n.min; ++i) w += item;
        ok = true;
      }
      break;
    }
    case ExprKind::And:
    case ExprKind::Not:
    case ExprKind::Number:
      break;  // no structural answer: the caller searches
  }
  witness_cache_.emplace(e, std::make_pair(ok, w));
  out.swap(w);
  return ok;
}

bool Deriver::can_extend(ExprId e) {
  const ExprNode& n = store_.node(e);
  if (e <= ExprStore::kEmpty) return false;
  if (!n.boolean) return true;
  for (uint8_t rep : reps_)
    if (!is_empty(derive(e, rep))) return true;
  return false;
}

}  // namespace stencil
