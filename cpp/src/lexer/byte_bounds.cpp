// Lexer::pair_bytes: bounds on the bytes a lexeme still needs, read off its expression's structure.
// Budget-aware masks bound the cost after a token by them (LexemeCeiling::pairs), where a
// search over the lazy automaton would make lexer states (a uri format has about 200 of them).
//
// For an expression e: shortest(e) >= the length of its shortest word, ceiling(e) >= the
// shortest word of every derivative of e by at most `reach` bytes whose language is not empty
// (every state one token reaches from e, e itself included), longest(e) >= the length of its
// longest word. A derivative's words are no longer than e's, so ceiling(e) <= longest(e) always,
// and where a language is not empty its shortest word is at most its longest, and at most its
// ceiling (e is its own derivative by no bytes): fit(e) = min(shortest, longest, ceiling) below,
// usable only where the language is known not to be empty, inside a ceiling. (An intersection
// has no shortest: `" (P & C{2,250}) "` took its longest, 1,502 bytes, where its ceiling is 21.)
//   bytes:        shortest 1, ceiling 1, longest 1
//   a b:          shortest(a) + shortest(b); max(ceiling(a) + fit(b), ceiling(b)): a derivative
//                 is d(a) b, or a derivative of b once a word of a is read; longest(a) + longest(b)
//   a | b:        min of the shortest, max of the ceilings and of the longest
//   a{lo,hi}:     lo * shortest(a); ceiling(a) + (lo - 1) * fit(a): the item in progress, then
//                 at most lo - 1 items still required; hi * longest(a)
//   a & b:        shortest unknown (the languages' interplay decides, the intersection may be
//                 empty); longest and ceiling: the least longest of the operands (a pattern
//                 beside a maxLength: the length's)
//   a & C{lo,hi}: where C is a character set (no word empty, none a prefix of another, each
//                 at most K bytes) and every word of a is a string of C (a pattern beside a
//                 length, as a JSON string body; checked, see words_of): K * lo + K - 1 where lo
//                 > 0, plus ceiling(a), times K where hi leaves no room past the reach. After u
//                 (at most reach bytes), with w a word of the intersection after u: p, w's prefix
//                 that ends u's character and reaches lo characters, then the shortest word s of
//                 a after u p. s has at most ceiling(a) bytes, so at most as many characters, and
//                 u p s is whole characters: where hi >= lo + reach + 1 + ceiling(a) it fits. Else
//                 the word of a after u p with the fewest characters fits (it has no more than
//                 w's rest, nor than s), in at most K bytes each. (With lo > 0, s lies past the
//                 reach: a must hold no intersection, whose ceiling would hold within it only.)
//                 Of more operands (a maxLength beside a format's own length), a is the others'
//                 intersection, each count in turn, the least bound kept.
//   P & ~f1 & ... & ~fk (a free key beside pattern keys, a pattern beside an enum's values):
//                 first, an operand C* beside another whose words are strings of C goes (it
//                 removes nothing), and so does a complement ~f where no byte starts both a word
//                 of f and one of another operand (and not both hold the empty word). One
//                 operand P left alone: ceiling(P). Else, where P is C* or C* b (b's words
//                 strings of C) beside complements only: after u, finish C's item in progress
//                 (at most ceiling(C) bytes: the word so far is then in C*, which absorbs it, so
//                 every word of P still follows), then a character of one byte that occurs in no
//                 word of any f (every f is then dead, its complement everything; where b's
//                 shortest word is empty, one that ends no word of any f: the text ends on it),
//                 else longest(f) + 1 of them (no word of any f is that long); then b's shortest:
//                 ceiling(C) + 1 (or max longest(f) + 1) + shortest(b)
//   P & w C*:     (a pattern `^https?://` beside a uri format) where P's and w's words are
//                 strings of C (a character set) and w's longest fits the reach: longest(w) +
//                 ceiling(P). After u, a proper prefix of a word of w, the rest of that word then P's
//                 shortest after it; past w, the intersection's words are P's (P's words that
//                 start with w go on in C*, C's words being no prefix of one another)
//   C* t1 & ... & C* tn (& ~f...): unanchored patterns (overlapping pattern keys), each ti's words
//                 strings of C, all but one ending in C*: finish the item in progress, the pad of
//                 the complements (one unused character, or past their longest word), then a
//                 shortest word of each ti in turn (the anchored one last): every C* head absorbs
//                 the text before its ti, every C* tail the text after: ceiling(C) + pad +
//                 shortest(t1) + ... + shortest(tn)
//   C* & ~(g1 C*) & ... (a free key beside unanchored pattern keys, each gi's words strings of C):
//                 longest(C). A word in some gi C* has all its continuations there too, so a state
//                 that lives is in none yet, and some way to finish the item in progress keeps it so
//   ~a:           longest unknown; shortest and ceiling: longest(a) + 1 (a derivative ~d(a)
//                 holds every word longer than d(a)'s longest)
//   number range: the number search's shortest when it ends within a few hundred states; no
//                 ceiling (its states never repeat)
#include <algorithm>
#include <unordered_map>
#include <utility>
#include <vector>

#include "lexer/lexer.h"
#include "stencil/errors.h"
#include "support/work_limit.h"

namespace stencil {

namespace {
constexpr uint64_t kNone = Lexer::kUnknown;  // no bound known
constexpr int kMaxDepth = 2000;
// words_of: the parts a character cut across a concatenation may span (a \\u escape: six bytes).
constexpr int kMaxCutParts = 6;
constexpr size_t kNumberStates = 256;
uint64_t sum(uint64_t a, uint64_t b) { return std::min(a + b, kNone); }
uint64_t times(uint64_t a, uint64_t n) { return a == 0 || n == 0 ? 0 : (a >= kNone / n ? kNone : a * n); }
// A bound on the shortest word where the language is known not to be empty.
uint64_t fit(const Lexer::ExprBytes& x) { return std::min({x.shortest, x.longest, x.ceiling}); }

// `C*` with no empty word in C: a string body's loop over its characters.
bool full_count(const ExprStore& st, ExprId x) {
  const ExprNode& r = st.node(x);
  return r.kind == ExprKind::Repeat && r.min == 0 && r.max == kUnbounded && !st.nullable(r.a);
}

// The last part of e's (right-nested) concatenation; e itself where it is none.
ExprId last_part(const ExprStore& st, ExprId e) {
  while (st.node(e).kind == ExprKind::Concat) e = st.node(e).b;
  return e;
}

}  // namespace

std::vector<Lexer::PairBytes> Lexer::pair_bytes(uint32_t s, uint32_t reach) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (reach != reach_) {  // (the vocabulary's longest token, and the short reaches of InnerCosts)
    if (reach_ != kUnknown) expr_bytes_.swap(parked_bytes_[reach_]);
    auto it = parked_bytes_.find(reach);
    expr_bytes_.clear();
    if (it != parked_bytes_.end()) expr_bytes_.swap(it->second);
    reach_ = reach;
  }
  const Pairs& p = state_pairs_[s];
  std::vector<PairBytes> out;
  for (size_t i = 0; i + 1 < p.size(); i += 2) {
    const ExprBytes b = expr_bytes(p[i + 1], 0);
    out.push_back({p[i], b.shortest, b.ceiling});
  }
  return out;
}

Lexer::ExprBytes Lexer::expr_bytes(ExprId e, int depth) const {
  if (depth > kMaxDepth) return {};
  if (auto it = expr_bytes_.find(e); it != expr_bytes_.end()) return it->second;
  const ExprNode n = store_.node(e);  // (a copy: counted_ceiling's derivatives grow the store)
  uint64_t shortest = kNone, ceiling = kNone, longest = kNone;
  auto of = [&](ExprId x) { return expr_bytes(x, depth + 1); };
  switch (n.kind) {
    case ExprKind::Nothing:  // no word: nothing to bound
    case ExprKind::Empty:
      shortest = n.kind == ExprKind::Empty ? 0 : kNone;
      ceiling = longest = 0;
      break;
    case ExprKind::Bytes:
      shortest = ceiling = longest = 1;
      break;
    case ExprKind::Concat: {
      const ExprBytes a = of(n.a), b = of(n.b);
      shortest = sum(a.shortest, b.shortest);
      ceiling = std::max<uint64_t>(sum(a.ceiling, fit(b)), b.ceiling);
      longest = sum(a.longest, b.longest);
      break;
    }
    case ExprKind::Or:
    case ExprKind::And: {
      const bool both = n.kind == ExprKind::And;
      ceiling = longest = both ? kNone : 0;
      for (uint32_t i = 0; i < n.args_len; ++i) {
        const ExprBytes k = of(store_.args(n)[i]);
        if (both) {
          longest = std::min<uint64_t>(longest, k.longest);
        } else {
          shortest = std::min<uint64_t>(shortest, k.shortest);
          ceiling = std::max<uint64_t>(ceiling, k.ceiling);
          longest = std::max<uint64_t>(longest, k.longest);
        }
      }
      if (both) ceiling = std::min(counted_ceiling(e, depth), complement_ceiling(e, depth));
      break;
    }
    case ExprKind::Not: {
      const ExprBytes a = of(n.a);
      shortest = ceiling = sum(a.longest, 1);
      break;
    }
    case ExprKind::Repeat: {
      const ExprBytes a = of(n.a);
      const uint64_t lo = n.min == 0 ? 0 : n.min - 1;  // items still required after the first
      shortest = n.min == 0 ? 0 : sum(a.shortest, times(a.shortest, lo));
      ceiling = sum(a.ceiling, times(fit(a), lo));
      longest = n.max == kUnbounded ? (a.longest == 0 ? 0 : kNone) : times(a.longest, n.max);
      break;
    }
    case ExprKind::Number: {
      bool exact = false;
      const int d = number_min_accept_bytes(store_.number_state(n.a), kNumberStates, &exact);
      if (exact && d >= 0) shortest = static_cast<uint64_t>(d);
      break;
    }
  }
  // Every non-empty derivative's shortest word is at most its longest, at most e's longest.
  ceiling = std::min(ceiling, longest);
  const ExprBytes b{static_cast<uint32_t>(std::min(shortest, kNone)), static_cast<uint32_t>(ceiling),
                    static_cast<uint32_t>(std::min(longest, kNone))};
  expr_bytes_.emplace(e, b);
  return b;
}

uint64_t Lexer::counted_ceiling(ExprId e, int depth) const {
  const ExprNode n = store_.node(e);
  // Each count against the intersection of the other operands, `a`: of one, or of a few (a
  // maxLength beside a format's own length, `P & C{0,253} & C{0,128}`; each subset of them an
  // expression of its own, so only a few).
  constexpr uint32_t kMostOperands = 4;
  if (n.args_len > kMostOperands) return kNone;
  const std::vector<ExprId> ops(store_.args(n), store_.args(n) + n.args_len);
  uint64_t best = kNone;
  for (size_t i = 0; i < ops.size(); ++i) {
    const ExprNode r = store_.node(ops[i]);
    if (r.kind != ExprKind::Repeat || !char_set(r.a, depth + 1)) continue;  // (before the others' conj is made)
    std::vector<ExprId> rest(ops);
    rest.erase(rest.begin() + static_cast<std::ptrdiff_t>(i));
    const ExprId a = rest.size() == 1 ? rest[0] : store_.conj(rest);
    // (with characters still required, the word s comes after them, past the reach: a's
    // ceiling must hold for every derivative, as it does without an intersection inside)
    if ((r.min != 0 && store_.node(a).boolean) || !words_of(a, r.a, depth + 1)) continue;
    const uint64_t k = expr_bytes(r.a, depth + 1).longest, c = expr_bytes(a, depth + 1).ceiling;
    if (k >= kNone || c >= kNone) continue;
    const uint64_t head = r.min == 0 ? 0 : sum(times(k, r.min), k - 1);
    const bool room = r.max == kUnbounded || uint64_t{r.max} >= uint64_t{r.min} + reach_ + 1 + c;
    best = std::min(best, sum(head, room ? c : times(k, c)));
  }
  return best;
}

uint64_t Lexer::complement_ceiling(ExprId e, int depth) const {
  std::vector<ExprId> pos, neg;
  {
    const ExprNode& n = store_.node(e);
    for (uint32_t i = 0; i < n.args_len; ++i) {
      const ExprId x = store_.args(n)[i];
      if (store_.node(x).kind == ExprKind::Not)
        neg.push_back(store_.node(x).a);
      else
        pos.push_back(x);
    }
  }
  for (size_t i = 0; i < pos.size() && pos.size() > 1;) {
    bool held = false;
    for (size_t j = 0; j < pos.size() && !held; ++j)
      held = j != i && full_count(store_, pos[i]) && words_of(pos[j], store_.node(pos[i]).a, depth + 1);
    if (held)
      pos.erase(pos.begin() + static_cast<std::ptrdiff_t>(i));
    else
      ++i;
  }
  int work = 4096;
  auto apart = [&](ExprId p, ExprId f) {
    return !(store_.nullable(p) && store_.nullable(f)) &&
           (store_.byte_span(p, ExprStore::Span::kFirst, &work) & store_.byte_span(f, ExprStore::Span::kFirst, &work))
               .empty();
  };
  neg.erase(std::remove_if(
                neg.begin(), neg.end(),
                [&](ExprId f) { return std::any_of(pos.begin(), pos.end(), [&](ExprId p) { return apart(p, f); }); }),
            neg.end());
  if (pos.size() == 2 && neg.empty()) {  // a pattern beside a format
    const uint64_t b =
        std::min(prefixed_ceiling(pos[0], pos[1], depth + 1), prefixed_ceiling(pos[1], pos[0], depth + 1));
    if (b < kNone) return b;
  }
  if (pos.empty()) return kNone;
  if (pos.size() > 1) return unanchored_ceiling(pos, neg, depth + 1);
  if (neg.empty()) return expr_bytes(pos[0], depth + 1).ceiling;
  if (const uint64_t b = closed_ceiling(pos[0], neg, depth + 1); b < kNone) return b;
  const Absorbing a = absorbing(pos[0], depth + 1);
  return a.reach >= kNone ? kNone : sum(sum(a.reach, complement_pad(neg, a.item, a.tail == 0, depth + 1)), a.tail);
}

uint64_t Lexer::closed_ceiling(ExprId p, const std::vector<ExprId>& neg, int depth) const {
  if (!full_count(store_, p)) return kNone;
  const ExprId c = store_.node(p).a;
  for (ExprId f : neg)
    if (last_part(store_, f) != p || !words_of(f, c, depth + 1)) return kNone;
  return expr_bytes(c, depth + 1).longest;
}

uint64_t Lexer::unanchored_ceiling(const std::vector<ExprId>& pos, const std::vector<ExprId>& neg, int depth) const {
  ExprId item = 0;
  uint64_t tails = 0;
  int anchored = 0;
  for (ExprId p : pos) {
    const ExprNode n = store_.node(p);
    if (n.kind != ExprKind::Concat) return kNone;
    const ExprId c = store_.node(n.a).a;
    if (!full_count(store_, n.a) || (item != 0 && c != item) || !words_of(n.b, c, depth + 1)) return kNone;
    item = c;
    anchored += last_part(store_, n.b) != n.a;  // (does the rest end in C*: do its words go on in C*?)
    tails = sum(tails, expr_bytes(n.b, depth + 1).shortest);
  }
  if (anchored > 1) return kNone;
  return sum(sum(expr_bytes(item, depth + 1).ceiling, complement_pad(neg, item, tails == 0, depth + 1)), tails);
}

uint64_t Lexer::complement_pad(const std::vector<ExprId>& neg, ExprId c, bool ends, int depth) const {
  if (neg.empty()) return 0;
  int work = 4096;
  ByteSet held;  // (ends: the bytes that end a word of some f; else that occur in one)
  uint64_t longest = 0;
  for (ExprId f : neg) {
    held = held | store_.byte_span(f, ends ? ExprStore::Span::kLast : ExprStore::Span::kAll, &work);
    longest = std::max<uint64_t>(longest, expr_bytes(f, depth + 1).longest);
  }
  bool one = false, free = false;  // a character of one byte; one outside `held`
  try {
    for (uint8_t rep : classes_.representative) {
      if (!store_.nullable(deriver_.derive(c, rep))) continue;
      one = true;
      free = free || !held.has(rep);
    }
  } catch (const WorkSpent&) {
    throw;
  } catch (const BudgetError&) {
    return kNone;
  }
  return !one ? kNone : free ? 1 : sum(longest, 1);
}

uint64_t Lexer::prefixed_ceiling(ExprId p, ExprId q, int depth) const {
  uint64_t head = 0;  // the longest word of w
  std::vector<ExprId> parts;
  for (ExprNode n = store_.node(q); n.kind == ExprKind::Concat; n = store_.node(q)) {
    parts.push_back(n.a);
    q = n.b;
  }
  const ExprNode star = store_.node(q);
  if (parts.empty() || !full_count(store_, q) || !char_set(star.a, depth + 1) || !words_of(p, star.a, depth + 1))
    return kNone;
  for (ExprId part : parts) {
    if (!words_of(part, star.a, depth + 1)) return kNone;
    head = sum(head, expr_bytes(part, depth + 1).longest);
  }
  return head <= reach_ ? sum(head, expr_bytes(p, depth + 1).ceiling) : kNone;
}

Lexer::Absorbing Lexer::absorbing(ExprId p, int depth) const {
  if (depth > kMaxDepth) return {};
  const ExprNode n = store_.node(p);
  if (full_count(store_, p)) return {expr_bytes(n.a, depth + 1).ceiling, 0, n.a};
  Absorbing out;
  if (n.kind == ExprKind::Concat) {
    const ExprId c = store_.node(n.a).a;
    if (full_count(store_, n.a) && words_of(n.b, c, depth + 1))  // C* b, b's words strings of C
      out = {expr_bytes(c, depth + 1).ceiling, expr_bytes(n.b, depth + 1).shortest, c};
    const Absorbing b = absorbing(n.b, depth + 1);  // a b: a's word finished, then b's
    const uint64_t reach = sum(expr_bytes(n.a, depth + 1).ceiling, b.reach);
    if (b.reach < kNone && (out.reach >= kNone || sum(reach, b.tail) < sum(out.reach, out.tail)))
      out = {reach, b.tail, b.item};
  } else if (n.kind == ExprKind::Or) {
    for (uint32_t i = 0; i < n.args_len; ++i) {
      const Absorbing k = absorbing(store_.args(store_.node(p))[i], depth + 1);
      if (k.reach >= kNone || (i > 0 && k.item != out.item)) return {};
      out = {i == 0 ? k.reach : std::max(out.reach, k.reach), i == 0 ? k.tail : std::max(out.tail, k.tail), k.item};
    }
  }
  return out;
}

bool Lexer::char_set(ExprId c, int depth) const {
  if (auto it = char_sets_.find(c); it != char_sets_.end()) return it->second;
  constexpr size_t kMaxExprs = 256;
  bool out = !store_.nullable(c) && expr_bytes(c, depth).longest < kNone;
  try {
    std::vector<ExprId> todo{c};
    std::unordered_map<ExprId, bool> seen{{c, true}};
    while (out && !todo.empty()) {
      const ExprId x = todo.back();
      todo.pop_back();
      // A word of c that another extends: x is c after it, holding the empty word and more.
      if (x != c && store_.nullable(x) && deriver_.can_extend(x)) out = false;
      for (uint8_t rep : classes_.representative) {
        if (!out || !deriver_.may_start(x, rep)) continue;
        const ExprId d = deriver_.derive(x, rep);
        if (d == ExprStore::kNothing || !seen.emplace(d, true).second) continue;
        if (seen.size() > kMaxExprs) out = false;
        todo.push_back(d);
      }
    }
  } catch (const WorkSpent&) {  // a search's limit, not this lexer's: nothing to remember
    throw;
  } catch (const BudgetError&) {  // (the bound is optional: the lexer's own work decides; a time
                                  // limit, the call's clock, is no BudgetError and goes up)
    out = false;
  }
  char_sets_.emplace(c, out);
  return out;
}

// (A relaxed state is then the pattern's own: the count sandwich takes its count of words, which
// the intersection kept from it, and its derivatives need no emptiness search.)
ExprId Lexer::without_full_count(ExprId e, int depth) const {
  const ExprNode n = store_.node(e);
  if (depth > kMaxDepth || !n.boolean) return e;
  if (n.kind == ExprKind::Concat) {
    const ExprId a = without_full_count(n.a, depth + 1);
    return a == n.a ? e : store_.concat(a, n.b);
  }
  if (n.kind == ExprKind::Or) {
    std::vector<ExprId> kids(store_.args(n), store_.args(n) + n.args_len);
    bool changed = false;
    for (ExprId& k : kids) {
      const ExprId before = k;
      k = without_full_count(k, depth + 1);
      changed |= k != before;
    }
    return changed ? store_.alt(kids) : e;
  }
  if (n.kind != ExprKind::And || n.args_len != 2) return e;
  for (int side = 0; side < 2; ++side) {
    const ExprId star = store_.args(n)[side], p = store_.args(n)[1 - side];  // (n a copy: args read afresh)
    if (full_count(store_, star) && words_of(p, store_.node(star).a, 0)) return p;
  }
  return e;
}

// Read off the structure, down to finite parts (a character's bytes) searched over derivatives.
bool Lexer::words_of(ExprId a, ExprId c, int depth) const {
  const uint64_t key = (uint64_t{a} << 32) | c;
  if (auto it = words_of_.find(key); it != words_of_.end()) return it->second;
  if (depth > kMaxDepth) return false;
  const ExprNode n = store_.node(a);
  bool out = false;
  switch (n.kind) {
    case ExprKind::Nothing:
    case ExprKind::Empty:
      out = true;
      break;
    case ExprKind::Or:
    case ExprKind::And: {  // every alternative, or one conjunct
      const bool all = n.kind == ExprKind::Or;
      out = all;
      for (uint32_t i = 0; i < n.args_len && out == all; ++i) out = words_of(store_.args(n)[i], c, depth + 1);
      break;
    }
    case ExprKind::Concat: {
      out = words_of(n.a, c, depth + 1) && words_of(n.b, c, depth + 1);
      // A character cut across the parts (an escape, `\\` then `"`, in a JSON string body): the
      // head grown by the next part while it stays finite, until its words are strings of c.
      ExprId head = n.a, rest = n.b;
      for (int k = 0; !out && k < kMaxCutParts && finite_language(head); ++k) {
        const ExprNode r = store_.node(rest);
        const bool last = r.kind != ExprKind::Concat;
        head = store_.concat(head, last ? rest : r.a);
        if (!finite_language(head) || !finite_words_of(head, c)) {
          if (last) break;
          rest = r.b;
          continue;
        }
        out = last || words_of(r.b, c, depth + 1);
        break;
      }
      break;
    }
    case ExprKind::Repeat:
      out = n.max == 0 || words_of(n.a, c, depth + 1);
      break;
    default:  // Bytes (part of a character, maybe), Not, Number
      break;
  }
  if (!out && finite_language(a)) out = finite_words_of(a, c);
  words_of_.emplace(key, out);
  return out;
}

// Over pairs (f after u, c* after u): f's words are in c* when no u ends f where c* cannot end.
bool Lexer::finite_words_of(ExprId f, ExprId c) const {
  constexpr size_t kMaxPairs = 512;
  try {
    const ExprId star = store_.repeat(c, 0, kUnbounded);
    std::vector<std::pair<ExprId, ExprId>> todo{{f, star}};
    std::unordered_map<uint64_t, bool> seen{{(uint64_t{f} << 32) | star, true}};
    while (!todo.empty()) {
      const auto [x, s] = todo.back();
      todo.pop_back();
      if (store_.nullable(x) && !store_.nullable(s)) return false;
      for (uint8_t rep : classes_.representative) {
        if (!deriver_.may_start(x, rep)) continue;
        const ExprId dx = deriver_.derive(x, rep);
        if (dx == ExprStore::kNothing) continue;
        const ExprId ds = deriver_.derive(s, rep);
        if (ds == ExprStore::kNothing) return false;
        if (!seen.emplace((uint64_t{dx} << 32) | ds, true).second) continue;
        if (seen.size() > kMaxPairs) return false;
        todo.push_back({dx, ds});
      }
    }
  } catch (const WorkSpent&) {
    throw;
  } catch (const BudgetError&) {
    return false;
  }
  return true;
}

}  // namespace stencil
