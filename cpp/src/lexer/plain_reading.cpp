// How plain text (support/plain_text.h) moves the lexer's states, read off their expressions:
// loops over plain text (a pattern searched anywhere in a string), expressions that hold every
// plain string, and counted text heads (a string body with a length: Lexer::bounded_text_head).
// The mask cache and the cost searches ask these instead of walking the trie from every count.
#include <algorithm>
#include <unordered_set>
#include <utility>

#include "lexer/lexer.h"
#include "support/plain_text.h"

namespace stencil {
namespace {

// UTF-8 length announced by a lead byte of plain text; 0 for other bytes.
int plain_char_length(int b) {
  if (plain_text_step(0, static_cast<uint8_t>(b)) < 0) return 0;
  return b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
}

}  // namespace

bool Lexer::bounded_text_head(uint32_t s, uint32_t* k, uint32_t* relaxed, uint32_t* rest, uint32_t* lo) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = text_heads_.find(s);
  if (it == text_heads_.end()) it = text_heads_.emplace(s, text_head(s, false)).first;
  *k = it->second.k;
  *relaxed = it->second.relaxed;
  *rest = it->second.rest;
  if (lo) *lo = it->second.lo;
  return it->second.ok;
}

bool Lexer::slack_text_head(uint32_t s, uint32_t* k, uint32_t* relaxed, uint32_t* rest, uint32_t* slack,
                            ByteSet* filter, uint32_t* alive) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = slack_heads_.find(s);
  if (it == slack_heads_.end()) it = slack_heads_.emplace(s, text_head(s, false, true)).first;
  *k = it->second.k;
  *relaxed = it->second.relaxed;
  *rest = it->second.rest;
  *slack = it->second.slack;
  *filter = it->second.filter;
  *alive = it->second.alive;
  return it->second.ok;
}

bool Lexer::loose_text_head(uint32_t s, LooseTextHead* out) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = loose_heads_.find(s);
  if (it == loose_heads_.end()) it = loose_heads_.emplace(s, text_head(s, true)).first;
  const TextHead& h = it->second;
  *out = {h.k, h.lo, h.rest, h.avoid};
  return h.ok;
}

// Whether plain text without the bytes of `avoid` cannot enter e (every derivative by a lead
// byte is empty): e can then be skipped (when nullable) or cannot start there. Caller holds mu_.
bool Lexer::shuts_out_plain(ExprId e, const ByteSet& avoid) const {
  for (int b = 0; b < 256; ++b) {
    if (plain_text_step(0, static_cast<uint8_t>(b)) < 0 || avoid.has(static_cast<uint8_t>(b))) continue;
    const ExprId d = deriver_.derive(e, classes_.representative[classes_.class_of[b]]);
    if (d != ExprStore::kNothing && !deriver_.is_empty(d)) return false;
  }
  return true;
}

// Where no minimum asks a word for more characters (a minLength of 0 or 1: every token has one),
// the slack of a pattern that plain text may kill need only bound its shortest completions from
// the points that leave it alive: the most bytes a completion may need (ExprStore::completion_bound,
// read off its structure: no exploration) bound the characters.
uint32_t Lexer::killed_slack(ExprId x) const {
  const uint64_t bound = store_.completion_bound(x);
  return bound < Deriver::kCountedItems ? static_cast<uint32_t>(bound) : Deriver::kNoSlack;
}

bool Lexer::plain_filter(ExprId x, ByteSet* kill) const {
  if (auto it = plain_filters_.find(x); it != plain_filters_.end()) {
    *kill = it->second.second;
    return it->second.first;
  }
  // (every plain byte of `bytes` empties e: no other plain byte enters it)
  auto kills = [&](ExprId e, const ByteSet& bytes) { return shuts_out_plain(e, ~bytes); };
  ByteSet ascii;
  for (int b = 0; b < 0x80; ++b) {
    if (plain_text_step(0, static_cast<uint8_t>(b)) < 0) continue;
    const ExprId d = deriver_.derive(x, classes_.representative[classes_.class_of[b]]);
    if (d == ExprStore::kNothing || deriver_.is_empty(d)) ascii.add(static_cast<uint8_t>(b));
  }
  // (explore_plain_exprs fails at any plain byte left that empties a derivative: a class without
  // non-ASCII characters passes only with every byte from 0x80 refused too)
  bool ok = false;
  ByteSet bytes;
  for (int wide = 0; wide < 2 && !ok; ++wide) {
    bytes = ascii;
    if (wide) bytes.add_range(0x80, 0xFF);
    ok = store_.nullable(x) && kills(x, bytes) &&
         explore_plain_exprs(
             x, 256,
             [&](ExprId d, bool boundary) {
               return boundary && (!store_.nullable(d) || !kills(d, bytes)) ? PlainStep::kFail : PlainStep::kExplore;
             },
             &bytes);
  }
  if (!ok) bytes = ByteSet();
  plain_filters_.emplace(x, std::make_pair(ok, bytes));
  *kill = bytes;
  return ok;
}

bool Lexer::byte_class_filter(ExprId item, ByteSet* refused) const {
  const ExprNode& n = store_.node(item);
  if (n.kind != ExprKind::Bytes) return false;
  const ByteSet& c = store_.byteset(n.a);
  ByteSet out;
  out.add_range(0x80, 0xFF);
  for (int b = 0; b < 0x100; ++b) {
    if (b >= 0x80 && c.has(static_cast<uint8_t>(b))) return false;  // (a byte of a wider character)
    if (b < 0x80 && plain_text_step(0, static_cast<uint8_t>(b)) >= 0 && !c.has(static_cast<uint8_t>(b)))
      out.add(static_cast<uint8_t>(b));
  }
  *refused = out;
  return true;
}

// Whether every alternative of C (`item`) that plain text can enter is one whole character: a
// chain of byte sets whose length is the UTF-8 length of its (plain) lead bytes, continuation
// bytes after. Caller holds mu_.
bool Lexer::plain_chars_one_each(ExprId item) const {
  const ExprNode& c = store_.node(item);
  const ExprId* alts = c.kind == ExprKind::Or ? store_.args(c) : &item;
  const size_t num_alts = c.kind == ExprKind::Or ? c.args_len : 1;
  for (size_t i = 0; i < num_alts; ++i) {
    std::vector<ExprId> chain;
    ExprId x = alts[i];
    while (store_.node(x).kind == ExprKind::Concat) {
      chain.push_back(store_.node(x).a);
      x = store_.node(x).b;
    }
    chain.push_back(x);
    if (store_.node(chain[0]).kind != ExprKind::Bytes) return false;
    const ByteSet& lead = store_.byteset(store_.node(chain[0]).a);
    int len = 0;
    for (int b = 0; b < 256; ++b) {
      if (!lead.has(static_cast<uint8_t>(b))) continue;
      int l = plain_char_length(b);
      if (l == 0) continue;
      if (len != 0 && l != len) return false;
      len = l;
    }
    if (len == 0) continue;  // plain text cannot enter this alternative (an escape)
    if (chain.size() != static_cast<size_t>(len)) return false;
    for (ExprId part : chain)
      if (store_.node(part).kind != ExprKind::Bytes) return false;
    for (size_t j = 1; j < chain.size(); ++j) {
      const ByteSet& cont = store_.byteset(store_.node(chain[j]).a);
      for (int b = 0; b < 256; ++b)
        if (cont.has(static_cast<uint8_t>(b)) && (b < 0x80 || b > 0xBF)) return false;
    }
  }
  return true;
}

Lexer::TextHead Lexer::text_head(uint32_t s, bool loose, bool with_slack) const {
  const Pairs& p = state_pairs_[s];
  if (p.size() != 2 || (lexemes_[p[0]].lazy && !loose)) return {};
  const uint32_t lex = p[0];
  ExprNode n = store_.node(p[1]);
  if (n.kind != ExprKind::Concat) return {};
  auto counts = [&](ExprId x) {
    const ExprNode& xn = store_.node(x);
    return xn.kind == ExprKind::Repeat && !(xn.max == kUnbounded && xn.min == 0);
  };
  // (loose: an optional part that no plain byte enters may come first, `\n?` before raw text:
  // the first plain byte skips it)
  const bool prefixed =
      loose && store_.nullable(n.a) && store_.node(n.b).kind == ExprKind::Concat && shuts_out_plain(n.a, ByteSet());
  if (prefixed) n = store_.node(n.b);
  // The head counts characters: C{lo,k}, or C{lo,k} & P & ... where every other conjunct holds
  // all plain text from here on (a pattern that has matched and ends with `.*`, beside a
  // maxLength): on plain text the intersection is then C{lo,k} alone. (loose: or all plain text
  // without a few ASCII bytes, `avoid`: text up to a marker holds every plain string without
  // the marker's first byte)
  // Of several counts (a maxLength beside a format's own length bound), the one within every
  // other heads the text where there is one; the counts it lies within hold every string the
  // head lets through, and need no look (each was explored for a class filter at every
  // character: 0.8 ms a state for a hostname beside a maxLength, every state new).
  ExprId rep_id = n.a;
  std::vector<ExprId> beside, others;  // every conjunct but the head; those the head must judge
  if (store_.node(n.a).kind == ExprKind::And) {
    const ExprNode& a = store_.node(n.a);
    std::vector<ExprId> conj(store_.args(a), store_.args(a) + a.args_len);
    rep_id = ExprStore::kNothing;
    for (ExprId x : conj)
      if (counts(x) && (rep_id == ExprStore::kNothing || store_.within(x, rep_id))) rep_id = x;
    if (rep_id == ExprStore::kNothing) return {};
    for (ExprId x : conj) {
      if (x == rep_id) continue;
      beside.push_back(x);
      if (!counts(x) || !store_.within(rep_id, x)) others.push_back(x);
    }
  }
  const ExprNode rep = store_.node(rep_id);
  const ExprId tail = n.b;
  // A lower bound alone (minLength without maxLength) counts characters too: k is then unbounded.
  if (rep.kind != ExprKind::Repeat || (rep.max == kUnbounded && rep.min == 0) || store_.nullable(tail)) return {};
  if (!plain_chars_one_each(rep.a)) return {};
  TextHead h;
  // (masks: a count of a byte class, `[A-Za-z ,.'-]{1,128}` as ExprStore::conj makes a class
  // beside a length, takes the plain tokens of at most k characters without the plain bytes it
  // refuses, every byte from 0x80 among them, as a class beside a count does; its relaxed state
  // then goes unexplored, C* holding every string of C's bytes)
  const bool byte_class = with_slack && byte_class_filter(rep.a, &h.filter);
  bool killed = false;
  if (!head_conjuncts(others, rep, loose, with_slack, h, &killed)) return {};
  // Rest cannot start with plain text, so plain text stays in the repetition whatever its lower
  // bound: C* rest admits it exactly when C{lo,k} rest admits its first k characters. (loose:
  // every plain character outside `avoid` is one C, the mask cache's check of the strict kind)
  if (loose && (!shuts_out_plain(tail, h.avoid) || !covers_plain_without(store_.repeat(rep.a, 0, kUnbounded), h.avoid)))
    return {};
  // (the loose kind has no relaxed state: its readers replay the rest instead)
  const uint32_t relaxed =
      loose || byte_class ? kDead : intern_state({lex, store_.concat(store_.repeat(rep.a, 0, kUnbounded), tail)});
  if (killed) {
    std::vector<ExprId> kept{store_.repeat(rep.a, 0, kUnbounded)};
    kept.insert(kept.end(), beside.begin(), beside.end());
    h.alive = intern_state({lex, store_.concat(store_.conj(kept), tail)});
  }
  h.ok = true;
  h.k = rep.max;
  h.relaxed = relaxed;
  h.rest = intern_state({lex, tail});
  h.lo = rep.min;
  return h;
}

// text_head's conjuncts beside the count `rep`: each holds every plain string, or (masks) refuses
// some plain bytes only (h.filter), or (masks, one of them) keeps within h.slack characters of a
// word (*killed: where some plain text kills it), or (loose) holds every plain string without a
// few ASCII bytes (h.avoid). False where one is none of these. Caller holds mu_.
bool Lexer::head_conjuncts(const std::vector<ExprId>& others, const ExprNode& rep, bool loose, bool with_slack,
                           TextHead& h, bool* killed) const {
  bool slacked = false;
  for (ExprId x : others) {
    if (covers_plain(x)) continue;
    // (masks: a class of characters beside the count, `[^<>]*`, takes the plain tokens without
    // the bytes it refuses, at every count: each character otherwise a state of its own, walked)
    if (ByteSet kill; with_slack && plain_filter(x, &kill)) {
      h.filter = h.filter | kill;
      continue;
    }
    if (with_slack && !slacked) {
      // (the counts past Deriver::kCountedItems are not known one by one; and a pattern that
      // some plain text kills has none, which a loop over plain text in it rules out cheaply
      // before the slack's exploration: an anchored count of words explores hundreds of pairs
      // to find the word too many)
      // (a maximum alone of kSlackFrom or more is lifted instead: MaskCache::partly_relaxed's
      // one entry serves every count)
      // (one that some plain text kills, an anchored count of words, has the slack of the strings
      // that leave it alive: the masks take those tokens off the state with the count lifted)
      // (kept at every count: lifting a length beside a count of words often fails, the word's
      // completion past what the bound leaves)
      *killed = !holds_plain_loop(x);
      if (!*killed && rep.min == 0 && rep.max != kUnbounded && rep.max >= kSlackFrom) return false;
      // (a minimum that every word of x meets binds nothing: the slack saves one entry's walk
      // then, and is not worth a long exploration, an e-mail's IPv6 literal's 350 pairs, 6 ms)
      const bool idle_min = *killed && rep.min > 1 && rep.max == kUnbounded && [&] {
        const uint32_t fewest = deriver_.fewest_items(x, rep.a, kUnbounded);
        return fewest != Deriver::kUnknownItems && fewest != Deriver::kNoItems && fewest >= rep.min;
      }();
      h.slack = !*killed       ? deriver_.item_slack(x, rep.a)
                : rep.min <= 1 ? killed_slack(x)
                               : deriver_.alive_slack(x, rep.a, idle_min ? kIdleMinPairs : Deriver::kSlackPairs);
      if (h.slack == Deriver::kNoSlack || (rep.max == kUnbounded ? rep.min : rep.max) >= Deriver::kCountedItems)
        return false;
      slacked = true;
      continue;
    }
    if (!loose) return false;
    const auto [covers, bytes] = covers_plain_avoiding(x);
    if (!covers) return false;
    h.avoid = h.avoid | bytes;
  }
  // (a class beside a pattern with a slack: the pattern's shortest completions may be what the
  // class refuses, and its longer ones not fit)
  return !(slacked && !h.filter.empty());
}

namespace {

// `C* X` (or `C*`): the shape of a part that can loop on plain text.
bool loop_shaped(const ExprStore& store, ExprId e) {
  const ExprNode& n = store.node(e);
  const ExprNode& head = n.kind == ExprKind::Concat ? store.node(n.a) : n;
  return head.kind == ExprKind::Repeat && head.max == kUnbounded;
}

}  // namespace

// Explores the derivatives of `start` over plain text, (expression, partial character) pairs,
// deriving once per (byte class, plain-text step). `step(d, boundary)` judges each derivative:
// kFail stops with false, kCovered needs no further look, kExplore queues it. True when every
// pair was judged without a failure within max_pairs. Caller holds mu_.
template <class Step>
bool Lexer::explore_plain_exprs(ExprId start, size_t max_pairs, Step step, const ByteSet* skip) const {
  std::vector<std::pair<ExprId, int>> todo{{start, 0}};
  std::unordered_set<uint64_t> seen{uint64_t(start) << 8};
  std::vector<uint8_t> done;
  while (!todo.empty()) {
    auto [e, ps] = todo.back();
    todo.pop_back();
    done.assign(static_cast<size_t>(num_classes_) * kPlainTextStates, 0);
    for (int b = 0; b < 256; ++b) {
      const int ps2 = plain_text_step(ps, static_cast<uint8_t>(b));
      if (ps2 < 0 || (skip && skip->has(static_cast<uint8_t>(b)))) continue;
      const uint16_t cls = classes_.class_of[b];
      if (done[cls * kPlainTextStates + ps2]) continue;
      done[cls * kPlainTextStates + ps2] = 1;
      const ExprId d = deriver_.derive(e, classes_.representative[cls]);
      if (d == ExprStore::kNothing || deriver_.is_empty(d)) return false;
      const PlainStep verdict = step(d, ps2 == 0);
      if (verdict == PlainStep::kFail) return false;
      if (verdict == PlainStep::kCovered) continue;
      if (!seen.insert(uint64_t(d) << 8 | static_cast<uint64_t>(ps2)).second) continue;
      if (seen.size() > max_pairs) return false;
      todo.push_back({d, ps2});
    }
  }
  return true;
}

bool Lexer::holds_plain_loop(ExprId e) const {
  if (auto it = plain_loops_.find(e); it != plain_loops_.end()) return it->second;
  bool& out = plain_loops_[e];
  const ExprNode& n = store_.node(e);
  const std::vector<ExprId> alts = n.kind == ExprKind::Or
                                       ? std::vector<ExprId>(store_.args(n), store_.args(n) + n.args_len)
                                       : std::vector<ExprId>{e};
  for (ExprId f : alts)
    if (loop_shaped(store_, f) && !deriver_.is_empty(f) && explore_plain_exprs(f, 64, [&](ExprId d, bool boundary) {
          return boundary && store_.holds(d, f) ? PlainStep::kCovered : PlainStep::kExplore;
        }))
      return out = true;
  return out = false;
}

bool Lexer::loops_on_plain(uint32_t s, size_t max_pairs) const {
  const std::vector<ExprId> parts = loop_parts(s, SIZE_MAX);  // none with a lazy lexeme
  std::lock_guard<std::mutex> lock(mu_);
  for (ExprId f : parts) {
    if (deriver_.is_empty(f)) continue;
    // Every plain byte from every explored pair leads to a live expression, and at a character
    // boundary either back to one holding f (whose language then contains f's: by induction no
    // plain string leaves f's language behind) or to a pair explored in turn.
    if (explore_plain_exprs(f, max_pairs, [&](ExprId d, bool boundary) {
          return boundary && store_.holds(d, f) ? PlainStep::kCovered : PlainStep::kExplore;
        }))
      return true;
  }
  return false;
}

std::vector<ExprId> Lexer::loop_parts(uint32_t s, size_t max_parts) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ExprId> out;
  const Pairs& p = state_pairs_[s];
  for (size_t i = 0; i < p.size(); i += 2)
    if (lexemes_[p[i]].lazy) return out;  // a lazy lexeme ends the state as soon as it matches
  for (size_t i = 1; i < p.size() && out.size() < max_parts; i += 2) {
    const ExprNode n = store_.node(p[i]);
    // An alternation before the rest (a string's unanchored pattern of alternatives, `(^a|b|c$)`
    // then the closing quote) gives a part per alternative with the rest behind it.
    const bool head_or = n.kind == ExprKind::Concat && store_.node(n.a).kind == ExprKind::Or;
    const ExprNode& alt_node = head_or ? store_.node(n.a) : n;
    std::vector<ExprId> loops;  // (a concatenation's head is its alternative's)
    if (alt_node.kind == ExprKind::Or) {
      for (uint32_t j = 0; j < alt_node.args_len; ++j)
        if (loop_shaped(store_, store_.args(alt_node)[j])) loops.push_back(store_.args(alt_node)[j]);
    } else if (loop_shaped(store_, p[i])) {
      loops.push_back(p[i]);
    }
    // (a few: each part is explored at every state of the string, and a pattern of many
    // alternatives, each a loop, explored them all at every byte)
    constexpr size_t kMaxHeadParts = 4;
    if (head_or && loops.size() > kMaxHeadParts) continue;
    for (size_t j = 0; j < loops.size() && out.size() < max_parts; ++j)
      out.push_back(head_or ? store_.concat(loops[j], n.b) : loops[j]);
  }
  return out;
}

std::vector<Lexer::HeldPart> Lexer::held_parts(uint32_t s, uint32_t max_prefix) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<HeldPart> out;
  // The expression store's nodes are copied, not referred to: intern_state below grows the store,
  // and a reference into it dangles once it reallocates (AddressSanitizer caught it with the
  // pairs, before state_pairs_ was a deque, whose elements stay put).
  const Pairs& p = state_pairs_[s];
  for (size_t i = 0; i < p.size(); i += 2) {
    if (lexemes_[p[i]].lazy) continue;  // (a lazy lexeme ends as soon as it matches)
    const ExprNode e = store_.node(p[i + 1]);
    const std::vector<ExprId> alts = e.kind == ExprKind::Or
                                         ? std::vector<ExprId>(store_.args(e), store_.args(e) + e.args_len)
                                         : std::vector<ExprId>{p[i + 1]};
    for (const ExprId alt : alts) {
      // Down the chain to the first loop-shaped suffix whose head has no lower bound (C{m,} with m
      // > 0 derives to C{m-1,}: not F again), the heads before it bounded in length.
      uint64_t prefix = 0;
      for (ExprId f = alt; prefix <= max_prefix;) {
        const ExprNode n = store_.node(f);
        const ExprNode head = n.kind == ExprKind::Concat ? store_.node(n.a) : n;
        if (head.kind == ExprKind::Repeat && head.max == kUnbounded) {
          const uint32_t longest = expr_bytes(head.a, 0).longest;
          if (head.min == 0 && longest > 0 && longest < kUnknown && !deriver_.is_empty(f)) {
            HeldPart part{intern_state({p[i], f}), intern_state({p[i], n.kind == ExprKind::Concat ? n.a : f}),
                          longest - 1, static_cast<uint32_t>(prefix), p[i]};
            if (std::none_of(out.begin(), out.end(), [&](const HeldPart& h) { return h.part == part.part; }))
              out.push_back(part);
          }
          break;
        }
        if (n.kind != ExprKind::Concat) break;
        prefix += expr_bytes(n.a, 0).longest;
        f = n.b;
      }
    }
  }
  return out;
}

CharSummary Lexer::part_loop_chars(ExprId f, bool groups) const {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t key = uint64_t(f) << 1 | groups;
  if (auto it = part_chars_.find(key); it != part_chars_.end()) return it->second;
  CharSummary out;
  if (!deriver_.is_empty(f)) {
    // ASCII: one derivative per byte class.
    std::vector<int8_t> by_class(num_classes_, -1);
    ByteSet back;  // the ASCII text bytes after which f holds again (no derivative for the others)
    for (int b = 0; b < 0x80; ++b) {
      if (!CharSummary::ascii_text(static_cast<uint8_t>(b))) continue;
      const uint16_t c = classes_.class_of[b];
      if (by_class[c] < 0) by_class[c] = store_.holds(deriver_.derive(f, classes_.representative[c]), f);
      if (by_class[c] == 1) back.add(static_cast<uint8_t>(b));
    }
    out = CharSummary::of_ascii_loops(back);
  }
  // Each group of non-ASCII characters: every path from its lead bytes stays alive and, at the
  // character's end, holds f again.
  for (int group = 0; groups && !out.empty() && group < CharSummary::kGroups; ++group) {
    std::vector<std::pair<ExprId, int>> todo;
    std::unordered_set<uint64_t> seen;
    bool loops = true;
    for (int lead = 0xC2; lead <= 0xF4 && loops; ++lead) {
      if (CharSummary::group_of_lead(static_cast<uint8_t>(lead)) != group) continue;
      const int ps = plain_text_step(0, static_cast<uint8_t>(lead));
      if (ps < 0) continue;
      const ExprId d = deriver_.derive(f, classes_.representative[classes_.class_of[lead]]);
      if (d == ExprStore::kNothing || deriver_.is_empty(d))
        loops = false;
      else if (seen.insert(uint64_t(d) << 8 | static_cast<uint64_t>(ps)).second)
        todo.push_back({d, ps});
    }
    while (!todo.empty() && loops) {
      auto [e, ps] = todo.back();
      todo.pop_back();
      for (int b = 0x80; b <= 0xBF && loops; ++b) {
        const int ps2 = plain_text_step(ps, static_cast<uint8_t>(b));
        if (ps2 < 0) continue;
        const ExprId d = deriver_.derive(e, classes_.representative[classes_.class_of[b]]);
        if (d == ExprStore::kNothing || deriver_.is_empty(d))
          loops = false;
        else if (ps2 == 0)
          loops = store_.holds(d, f);
        else if (seen.insert(uint64_t(d) << 8 | static_cast<uint64_t>(ps2)).second) {
          loops = seen.size() <= 64;
          todo.push_back({d, ps2});
        }
      }
    }
    if (loops) out.add(CharSummary::kGroupBase + group);
  }
  part_chars_.emplace(key, out);
  return out;
}

bool Lexer::covers_plain(ExprId e) const {
  if (!store_.nullable(e)) return false;
  auto it = covers_plain_.find(e);
  if (it != covers_plain_.end()) return it->second;
  const bool covers = covers_plain_without(e, ByteSet());
  covers_plain_.emplace(e, covers);
  return covers;
}

std::pair<bool, ByteSet> Lexer::covers_plain_avoiding(ExprId e) const {
  constexpr int kMaxAvoided = 8;  // (past a few bytes, too few tokens are left to count with)
  if (auto it = covers_avoiding_.find(e); it != covers_avoiding_.end()) return it->second;
  // The ASCII bytes that move e: `~(.*</p>.*)` stays itself on every character but '<'.
  ByteSet avoid;
  int avoided = 0;
  bool covers = store_.nullable(e);
  for (int b = 0; b < 0x80 && covers; ++b) {
    if (plain_text_step(0, static_cast<uint8_t>(b)) < 0 || avoid.has(static_cast<uint8_t>(b))) continue;
    const uint16_t cls = classes_.class_of[b];
    if (deriver_.derive(e, classes_.representative[cls]) == e) continue;
    for (int c = 0; c < 0x80; ++c)  // (the class's bytes alike)
      if (classes_.class_of[c] == cls) avoid.add(static_cast<uint8_t>(c));
    covers = ++avoided <= kMaxAvoided;
  }
  covers = covers && covers_plain_without(e, avoid);
  return covers_avoiding_.emplace(e, std::make_pair(covers, avoid)).first->second;
}

// Every plain string (without `avoid`'s bytes) is in e exactly when every one leads to a nullable
// derivative (up to 256 pairs explored).
bool Lexer::covers_plain_without(ExprId e, const ByteSet& avoid) const {
  return store_.nullable(e) && explore_plain_exprs(
                                   e, 256,
                                   [&](ExprId d, bool boundary) {
                                     return boundary && !store_.nullable(d) ? PlainStep::kFail : PlainStep::kExplore;
                                   },
                                   &avoid);
}

}  // namespace stencil
