// The expressions' bounds read off their structure, and expressions with their repetition bounds
// moved: lifted or lowered for the walks that cannot tell (relax_bounds, lift_bounds, recount),
// and the byte counts that decide where they may (least_bytes, completion_bound, lifted_bound,
// char_count_bound).
#include <algorithm>
#include <functional>
#include <unordered_map>
#include <vector>

#include "regex/expr.h"

namespace stencil {

ByteSet ExprStore::byte_span(ExprId e, Span at, int* work) const {
  ByteSet all;
  for (auto& w : all.w) w = ~uint64_t{0};
  if (at == Span::kAll)
    if (auto it = span_memo_.find(e); it != span_memo_.end()) return it->second;
  if (--*work < 0) return all;
  const ExprNode& n = nodes_[e];
  ByteSet r;
  switch (n.kind) {
    case ExprKind::Nothing:
    case ExprKind::Empty:
      break;
    case ExprKind::Bytes:
      r = bytesets_[n.a];
      break;
    case ExprKind::Concat: {
      // (the part at that end, and the other one where that part may be empty)
      const ExprId near = at == Span::kLast ? n.b : n.a, far = at == Span::kLast ? n.a : n.b;
      r = byte_span(near, at, work);
      if (at == Span::kAll || nodes_[near].nullable) r = r | byte_span(far, at, work);
      break;
    }
    case ExprKind::Or:
    case ExprKind::And:  // (an intersection's words are each operand's)
      r = n.kind == ExprKind::Or ? ByteSet{} : all;
      for (uint32_t i = 0; i < n.args_len; ++i) {
        const ByteSet k = byte_span(args(n)[i], at, work);
        r = n.kind == ExprKind::Or ? r | k : r & k;
      }
      break;
    case ExprKind::Repeat:
      if (n.max != 0) r = byte_span(n.a, at, work);
      break;
    default:
      r = all;
  }
  if (at == Span::kAll && *work >= 0) span_memo_.emplace(e, r);  // (not cut short: the exact reading)
  return r;
}

ExprId ExprStore::relax_bounds(ExprId e, uint32_t limit, bool keep_mins) {
  std::unordered_map<ExprId, ExprId> memo;
  return relax(e, limit, keep_mins ? 3 : 0, 0, memo);
}

ExprId ExprStore::lift_bounds(ExprId e, uint32_t limit, bool lower_mins) {
  std::unordered_map<ExprId, ExprId> memo;
  return relax(e, limit, lower_mins ? 2 : 1, 0, memo);
}

ExprId ExprStore::shrink_bounds(ExprId e, uint32_t limit) {
  std::unordered_map<ExprId, ExprId> memo;
  return shrink(e, limit, true, 0, memo);
}

// shrink_bounds' walk: `subset` outside complements (and under an even number of them), a
// superset under an odd number. Every operator but the complement keeps both orders.
ExprId ExprStore::shrink(ExprId e, uint32_t limit, bool subset, int depth, std::unordered_map<ExprId, ExprId>& memo) {
  if (nodes_[e].no_bounds) return e;
  if (depth > 2000) return subset ? kNothing : kAnyByteStar;  // (each holds within or around e)
  const ExprId key = subset ? e : e | 0x80000000u;
  if (auto it = memo.find(key); it != memo.end()) return it->second;
  const ExprNode n = nodes_[e];
  ExprId r = e;
  switch (n.kind) {
    case ExprKind::Not:
      r = negate(shrink(n.a, limit, !subset, depth + 1, memo));
      break;
    case ExprKind::Concat:
      r = concat(shrink(n.a, limit, subset, depth + 1, memo), shrink(n.b, limit, subset, depth + 1, memo));
      break;
    case ExprKind::Or:
    case ExprKind::And: {
      std::vector<ExprId> kids(args(n), args(n) + n.args_len);
      for (ExprId& k : kids) k = shrink(k, limit, subset, depth + 1, memo);
      r = n.kind == ExprKind::Or ? alt(kids) : conj(kids);
      break;
    }
    case ExprKind::Repeat: {
      const ExprId a = shrink(n.a, limit, subset, depth + 1, memo);
      if (n.max == kUnbounded || n.max < limit)
        r = repeat(a, n.min, n.max);
      else
        r = subset ? repeat(a, n.min, n.min) : repeat(a, 0, kUnbounded);
      break;
    }
    default:  // (no bound inside: Nothing, Empty, Bytes, Number)
      break;
  }
  memo.emplace(key, r);
  return r;
}

// Mode 3 is relax_bounds inside an intersection: lower bounds kept (memoized apart, under the
// expression's id with the top bit set).
ExprId ExprStore::relax(ExprId e, uint32_t limit, int mode, int depth, std::unordered_map<ExprId, ExprId>& memo) {
  const bool superset = mode == 1 || mode == 2;
  if (depth > 2000) return kNothing;
  if (nodes_[e].no_bounds) return e;
  const ExprId key = mode == 3 ? e | 0x80000000u : e;
  auto it = memo.find(key);
  if (it != memo.end()) return it->second;
  const ExprNode n = nodes_[e];
  ExprId r = e;
  switch (n.kind) {
    case ExprKind::Nothing:
    case ExprKind::Empty:
    case ExprKind::Bytes:
    case ExprKind::Number:
      break;
    case ExprKind::Not:
      // (lifting a bound under it would shrink the language; where none is lifted it is unchanged)
      r = superset && relax(n.a, limit, mode, depth + 1, memo) == n.a ? e : kNothing;
      break;
    case ExprKind::Concat: {
      ExprId a = relax(n.a, limit, mode, depth + 1, memo), b = relax(n.b, limit, mode, depth + 1, memo);
      r = (a == kNothing || b == kNothing) ? kNothing : concat(a, b);
      break;
    }
    case ExprKind::Or:
    case ExprKind::And:
      r = relax_args(e, limit, mode, depth, memo);
      break;
    case ExprKind::Repeat: {
      // (an item that may consume nothing: the byte count bounds nothing; a superset may lift it)
      if (nodes_[n.a].nullable && !superset) {
        r = kNothing;
        break;
      }
      ExprId a = relax(n.a, limit, mode, depth + 1, memo);
      const bool lifted = n.max != kUnbounded && n.max >= limit;
      uint32_t min = mode == 2 && (lifted || n.max == kUnbounded) ? 0 : n.min;
      // A minimum of `limit` or more is not met on a walk of fewer bytes, whatever its value
      // (each item takes a byte): at `limit`, the states of every count from there up are one
      // (an unanchored `[a-z]{162}` inside a long string made a relaxed state per count).
      if (mode == 0 && min > limit) min = limit;
      r = a == kNothing ? kNothing : repeat(a, min, lifted ? kUnbounded : n.max);
      break;
    }
  }
  memo.emplace(key, r);
  return r;
}

// relax's alternation or intersection: its children relaxed, where that keeps it exact.
ExprId ExprStore::relax_args(ExprId e, uint32_t limit, int mode, int depth, std::unordered_map<ExprId, ExprId>& memo) {
  const ExprNode n = nodes_[e];
  const bool superset = mode == 1 || mode == 2;
  std::vector<ExprId> kids(args(n), args(n) + n.args_len);
  int changed = 0;
  // (an intersection's children keep their lower bounds: `P & C{m,}` with m lowered would
  // hold words of P shorter than m, alive where the exact state is dead)
  const int kid_mode = n.kind == ExprKind::And && mode == 0 ? 3 : mode;
  for (ExprId& k : kids) {
    const ExprId before = k;
    k = relax(k, limit, kid_mode, depth + 1, memo);
    if (k == kNothing) return kNothing;
    changed += k != before;
  }
  if (n.kind == ExprKind::Or) return alt(kids);
  // Relaxing bounds keeps each child's short prefixes alive, but an intersection lives only
  // on completions its children share, and two relaxed children can share ones the exact
  // children do not ([0-9]{16,} & [0-9]{0,14} is empty; relaxed, it is not). A length beside
  // a pattern or a format (one child relaxed) is relaxed as before.
  // (A superset needs neither check: an intersection of larger languages holds the smaller one's.)
  if (changed > 1 && !superset) return kNothing;
  // With one child relaxed, the others must still fit in what its bound leaves after a walk of
  // `limit` bytes: `a{6}|X` & .{0,5} has no word starting with `a`; relaxed, it has.
  if (changed == 1 && !superset) {
    uint64_t need = limit;
    uint64_t bound = kUnbounded;
    for (uint32_t i = 0; i < n.args_len; ++i) {
      const ExprId kid = args_[n.args_begin + i];
      if (kids[i] == kid)
        need += completion_bound(kid);
      else
        bound = lifted_bound(kid, limit);
    }
    if (need > bound) return kNothing;
  }
  return conj(kids);
}

ExprId ExprStore::recount(ExprId e, uint32_t clamp, bool lift) { return recount(e, clamp, lift, 0); }

uint32_t ExprStore::char_count_bound(ExprId e) { return char_count_bound(e, 0); }

uint32_t ExprStore::char_count_bound(ExprId e, int depth) {
  if (nodes_[e].no_bounds || nodes_[e].max_bound == 0) return 0;
  if (depth > 2000) return kUnbounded;
  if (auto it = char_count_memo_.find(e); it != char_count_memo_.end()) return it->second;
  const ExprNode n = nodes_[e];
  uint32_t r = 0;
  switch (n.kind) {
    case ExprKind::Concat:
      r = std::max(char_count_bound(n.a, depth + 1), char_count_bound(n.b, depth + 1));
      break;
    case ExprKind::Or:
    case ExprKind::And:
      for (uint32_t i = 0; i < n.args_len; ++i) r = std::max(r, char_count_bound(args_[n.args_begin + i], depth + 1));
      break;
    case ExprKind::Not:
      r = char_count_bound(n.a, depth + 1);
      break;
    case ExprKind::Repeat:
      r = char_count_bound(n.a, depth + 1);
      if (n.max != kUnbounded && least_bytes(n.a, 0) <= 1) r = std::max(r, n.max);
      break;
    default:
      break;
  }
  char_count_memo_.emplace(e, r);
  return r;
}

// The fewest bytes of a word of e (a lower bound under an intersection or a complement).
uint32_t ExprStore::least_bytes(ExprId e, int depth) {
  const ExprNode n = nodes_[e];
  if (n.nullable || depth > 2000) return 0;
  if (auto it = least_memo_.find(e); it != least_memo_.end()) return it->second;
  uint64_t r = 0;
  switch (n.kind) {
    case ExprKind::Nothing:
      r = kUnbounded;
      break;
    case ExprKind::Bytes:
    case ExprKind::Number:
      r = 1;
      break;
    case ExprKind::Concat:
      r = uint64_t(least_bytes(n.a, depth + 1)) + least_bytes(n.b, depth + 1);
      break;
    case ExprKind::Or:
      r = kUnbounded;
      for (uint32_t i = 0; i < n.args_len; ++i)
        r = std::min<uint64_t>(r, least_bytes(args_[n.args_begin + i], depth + 1));
      break;
    case ExprKind::And:
      for (uint32_t i = 0; i < n.args_len; ++i)
        r = std::max<uint64_t>(r, least_bytes(args_[n.args_begin + i], depth + 1));
      break;
    case ExprKind::Repeat:
      r = uint64_t(least_bytes(n.a, depth + 1)) * n.min;
      break;
    default:  // Empty, Not
      break;
  }
  const uint32_t v = static_cast<uint32_t>(std::min<uint64_t>(r, kUnbounded));
  least_memo_.emplace(e, v);
  return v;
}

ExprId ExprStore::recount(ExprId e, uint32_t clamp, bool lift, int depth) {
  if (depth > 2000) return kNothing;
  if (nodes_[e].no_bounds || nodes_[e].max_bound <= clamp) return e;
  const uint64_t key = uint64_t(e) << 32 | uint64_t(std::min(clamp, 0x7FFFFFFFu)) << 1 | (lift ? 1 : 0);
  if (auto it = recount_memo_.find(key); it != recount_memo_.end()) return it->second;
  const ExprNode n = nodes_[e];
  ExprId r = e;
  switch (n.kind) {
    case ExprKind::Not:
      r = kNothing;
      break;
    case ExprKind::Concat: {
      const ExprId a = recount(n.a, clamp, lift, depth + 1);
      const ExprId b = a == kNothing ? kNothing : recount(n.b, clamp, lift, depth + 1);
      r = b == kNothing ? kNothing : concat(a, b);
      break;
    }
    case ExprKind::Or:
    case ExprKind::And: {
      std::vector<ExprId> kids(args(n), args(n) + n.args_len);
      for (ExprId& k : kids)
        if ((k = recount(k, clamp, lift, depth + 1)) == kNothing) break;
      r = std::find(kids.begin(), kids.end(), kNothing) != kids.end() ? kNothing
          : n.kind == ExprKind::Or                                    ? alt(kids)
                                                                      : conj(kids);
      break;
    }
    case ExprKind::Repeat: {
      const ExprId a = recount(n.a, clamp, lift, depth + 1);
      if (a == kNothing) {
        r = kNothing;
        break;
      }
      uint32_t max = n.max;
      if (max != kUnbounded && max > clamp && least_bytes(n.a, 0) >= 2)
        max = lift ? kUnbounded : std::max(n.min, clamp);
      r = repeat(a, n.min, max);
      break;
    }
    default:  // Nothing, Empty, Bytes, Number
      break;
  }
  recount_memo_.emplace(key, r);
  return r;
}

// An upper bound on the bytes that complete any word's prefix in e (the shortest completion of
// any derivative); kUnbounded where complements or intersections make it unknown. A prefix inside
// a concatenation's first part is finished there and followed by the second's shortest word; one
// inside a repetition's item by the shortest items still required (least_bytes is exact where no
// intersection or complement is, and where one is, the bound is kUnbounded anyway).
uint64_t ExprStore::completion_bound(ExprId e) {
  std::unordered_map<ExprId, uint64_t> memo;
  std::function<uint64_t(ExprId, int)> go = [&](ExprId x, int depth) -> uint64_t {
    if (depth > 2000) return kUnbounded;
    if (auto it = memo.find(x); it != memo.end()) return it->second;
    const ExprNode& n = nodes_[x];
    uint64_t r = kUnbounded;
    switch (n.kind) {
      case ExprKind::Nothing:
      case ExprKind::Empty:
        r = 0;
        break;
      case ExprKind::Bytes:
        r = 1;
        break;
      case ExprKind::Concat: {
        const uint64_t a = go(n.a, depth + 1), b = go(n.b, depth + 1);
        r = std::min<uint64_t>(kUnbounded, std::max(a + least_bytes(n.b, 0), b));
        break;
      }
      case ExprKind::Or:
        r = 0;
        for (uint32_t i = 0; i < n.args_len; ++i) r = std::max(r, go(args_[n.args_begin + i], depth + 1));
        break;
      case ExprKind::Repeat:  // the item in progress, then the shortest items still required
        r = std::min<uint64_t>(kUnbounded,
                               go(n.a, depth + 1) + uint64_t(std::max<uint32_t>(n.min, 1) - 1) * least_bytes(n.a, 0));
        break;
      default:  // And, Not, Number
        break;
    }
    memo.emplace(x, r);
    return r;
  };
  return go(e, 0);
}

// The smallest upper bound relax(e, limit) lifts (kUnbounded when none).
uint64_t ExprStore::lifted_bound(ExprId e, uint32_t limit) const {
  std::unordered_map<ExprId, uint64_t> memo;
  std::function<uint64_t(ExprId, int)> go = [&](ExprId x, int depth) -> uint64_t {
    if (depth > 2000 || nodes_[x].no_bounds) return kUnbounded;
    if (auto it = memo.find(x); it != memo.end()) return it->second;
    const ExprNode& n = nodes_[x];
    uint64_t r = kUnbounded;
    if (n.kind == ExprKind::Concat) r = std::min(go(n.a, depth + 1), go(n.b, depth + 1));
    if (n.kind == ExprKind::Or || n.kind == ExprKind::And)
      for (uint32_t i = 0; i < n.args_len; ++i) r = std::min(r, go(args_[n.args_begin + i], depth + 1));
    if (n.kind == ExprKind::Repeat) {
      r = go(n.a, depth + 1);
      if (n.max != kUnbounded && n.max >= limit) r = std::min<uint64_t>(r, n.max);
    }
    memo.emplace(x, r);
    return r;
  };
  return go(e, 0);
}

bool ExprStore::shortest_candidate(ExprId e, std::string* out, size_t limit) const {
  int work = 4096;  // (nodes read: a DAG shared in many places is read once per place)
  out->clear();
  return shortest_candidate(e, out, limit, &work);
}

// Appends the candidate of e to *out.
bool ExprStore::shortest_candidate(ExprId e, std::string* out, size_t limit, int* work) const {
  if (--*work < 0) return false;
  const ExprNode& n = nodes_[e];
  switch (n.kind) {
    case ExprKind::Empty:
      return true;
    case ExprKind::Bytes: {
      const ByteSet& set = bytesets_[n.a];
      for (int i = 0; i < 4; ++i)
        if (set.w[i]) {
          if (out->size() >= limit) return false;
          out->push_back(static_cast<char>(64 * i + __builtin_ctzll(set.w[i])));
          return true;
        }
      return false;
    }
    case ExprKind::Concat:
      return shortest_candidate(n.a, out, limit, work) && shortest_candidate(n.b, out, limit, work);
    case ExprKind::Repeat: {
      const size_t at = out->size();
      if (n.min == 0) return true;
      if (!shortest_candidate(n.a, out, limit, work)) return false;
      const std::string item = out->substr(at);
      if (item.size() * n.min + at > limit) return false;
      for (uint32_t i = 1; i < n.min; ++i) out->append(item);
      return true;
    }
    case ExprKind::Or:
    case ExprKind::And: {
      // Or: the shortest of the alternatives' (each must have one: one without may hold a shorter
      // word); And: the longest of the operands' that have one (any operand holds e's language)
      const bool conj = n.kind == ExprKind::And;
      std::string best, mine;
      bool found = false;
      for (uint32_t i = 0; i < n.args_len; ++i) {
        mine.clear();
        if (!shortest_candidate(args_[n.args_begin + i], &mine, limit - std::min(limit, out->size()), work)) {
          if (*work < 0 || !conj) return false;
          continue;
        }
        if (!found || (conj ? mine.size() > best.size() : mine.size() < best.size())) best.swap(mine);
        found = true;
      }
      if (!found) return false;
      out->append(best);
      return true;
    }
    default:  // a complement, a number: no word read off the structure
      return false;
  }
}

}  // namespace stencil
