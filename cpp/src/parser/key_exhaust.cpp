// Keys that can only end as duplicates. The unique_key check vetoes a repeated key as it ends (or
// as its member ends); where a key's language is finite from some byte on (an enum of names, a
// length bound, an anchored pattern), a key prefix may have nothing left but keys written before
// it, and the mask must refuse it at once. EarleyParser::exhausted_only decides that for a lexer
// state; the lexer flags the states where it may hold (LexState::key_finite).
#include <algorithm>
#include <iterator>
#include <set>

#include "json/canon.h"
#include "parser/earley.h"

namespace stencil {

namespace {

// Whether some string of `sorted` begins with p (those that do follow p in sorted order).
bool prefix_of_any(const std::vector<std::string>& sorted, std::string_view p) {
  auto at = std::lower_bound(sorted.begin(), sorted.end(), p,
                             [](const std::string& a, std::string_view b) { return std::string_view(a) < b; });
  return at != sorted.end() && at->compare(0, p.size(), p) == 0;
}

}  // namespace

// Records what a memoized verdict reads (note_read), passing it on to an outer recording.
struct EarleyParser::Recorder {
  EarleyParser& p;
  Verdict rec;
  Verdict* outer;
  explicit Recorder(EarleyParser& parser) : p(parser), outer(parser.recording_) { p.recording_ = &rec; }
  ~Recorder() {
    p.recording_ = outer;
    if (outer) outer->reads.insert(outer->reads.end(), rec.reads.begin(), rec.reads.end());
  }
};

// Each lexeme of s other than whitespace and those vetoed at the row: a key of an object with
// keys to forbid (memoized by row), with no look at the key's bytes.
bool EarleyParser::may_exhaust(uint32_t row, uint32_t s) {
  if (!text_) return false;
  bool any = false;
  for (uint32_t lex : lexer_->state(s).live) {
    if (g_->lexemes[lex].ignore || vetoed_at(rows_[row], lex)) continue;
    if (g_->lexemes[lex].unique_key == LexemeSpec::kNoKey || !key_forbidden(row, lex)) return false;
    any = true;
  }
  return any;
}

bool EarleyParser::some_key_forbidden(uint32_t row, uint32_t s) {
  if (!text_) return false;
  for (uint32_t lex : lexer_->state(s).live) {
    if (g_->lexemes[lex].ignore || vetoed_at(rows_[row], lex)) continue;
    if (g_->lexemes[lex].unique_key != LexemeSpec::kNoKey && key_forbidden(row, lex)) return true;
  }
  return false;
}

bool EarleyParser::exhausted_only(uint32_t row, uint32_t s, std::string_view prefix, uint32_t from, uint32_t to) {
  if (!text_) return false;
  const uint64_t serial = rows_[row].serial;
  for (const ExhaustMemo& m : exhaust_memo_) {
    if (m.serial != serial || m.state != s || m.from != from || m.prefix != prefix) continue;
    for (auto [a, b] : m.reads) note_read(a, b);
    if (m.to_end) note_read(from, to);
    exhaust_left_ = m.left;
    return m.ok;
  }
  ExhaustMemo& m = exhaust_memo_[next_exhaust_++ % kExhaustMemos];
  m.serial = 0;  // not valid until computed (the lexer may throw on a work limit)
  {
    Recorder r(*this);
    exhaust_left_ = exhaust_to_end_ = false;
    m.ok = exhausted_now(row, s, prefix, from, to);
    m.reads = r.rec.reads;
  }
  m.left = exhaust_left_;
  m.to_end = exhaust_to_end_;
  if (m.to_end) note_read(from, to);  // after the recording: each caller's own `to`
  m.state = s;
  m.from = from;
  m.prefix.assign(prefix);
  m.serial = serial;
  return m.ok;
}

const std::vector<std::string>* EarleyParser::first_key_forbidden(uint32_t row, uint32_t s, bool& found) {
  for (uint32_t lex : lexer_->state(s).live) {
    if (g_->lexemes[lex].ignore || vetoed_at(rows_[row], lex)) continue;
    found = true;
    return key_forbidden(row, lex);
  }
  found = false;
  return nullptr;
}

bool EarleyParser::closes_written_key(uint32_t row, uint32_t s, std::string_view raw, uint32_t from, uint32_t to) {
  if (!text_) return false;
  std::string_view key;
  if (json_whole_string(raw, key_scratch_, &key)) {
    bool found = false;
    const std::vector<std::string>* forbidden = first_key_forbidden(row, s, found);
    if (new_key(key, found, forbidden)) {
      note_read(from, to);  // the lexeme takes the key as new: not exhausted
      return false;
    }
  }
  return exhausted_only(row, s, raw, from, to);
}

bool EarleyParser::new_key(std::string_view key, bool found, const std::vector<std::string>* forbidden) {
  return found && !(forbidden && std::binary_search(forbidden->begin(), forbidden->end(), key));
}

bool EarleyParser::key_may_close_written(uint32_t row, uint32_t s, std::string_view prefix) {
  if (!text_ || !may_exhaust(row, s)) return false;
  bool found = false;
  const std::vector<std::string>* forbidden = first_key_forbidden(row, s, found);
  return found && (!forbidden || prefix_of_any(*forbidden, prefix));
}

// Each (lexeme, expression) pair of s alone (one per lexeme): vetoed at the row, or a key whose
// completions are all forbidden. A key lexeme whose bytes left the forbidden keys makes the answer
// no; when every key lexeme of s has left them, no continuation is exhausted either
// (exhaust_left), whatever lexemes s holds: a walk may then skip the sub-trie below.
bool EarleyParser::exhausted_now(uint32_t row, uint32_t s, std::string_view prefix, uint32_t from, uint32_t to) {
  const bool single = lexer_->state(s).live.size() == 1;
  bool any = false, all_left = true;
  uint32_t left_at = 0;  // the furthest byte where a key lexeme left its forbidden keys (0: none did)
  for (size_t i = 0;; ++i) {
    const uint32_t p = single ? (i == 0 ? s : Lexer::kDead) : lexer_->probe_state(s, i);
    if (p == Lexer::kDead) break;
    const uint32_t lex = lexer_->state(p).live.front();
    // Ignored lexemes (whitespace) lead back to the row's lexemes: they decide alone.
    if (g_->lexemes[lex].ignore || vetoed_at(rows_[row], lex)) continue;
    any = true;
    if (g_->lexemes[lex].unique_key == LexemeSpec::kNoKey) return false;
    const std::vector<std::string>* forbidden = key_forbidden(row, lex);
    if (!forbidden) return false;
    // A prefix already off the forbidden keys is new whatever follows: the verdict read only
    // the bytes up to where it left them (so a token's bytes after that do not count as read).
    const size_t off = leaves_at(prefix, *forbidden);
    if (off > 0) {
      const uint32_t at = from + static_cast<uint32_t>(off);
      note_read(from, at);
      left_at = std::max(left_at, at);
      continue;
    }
    all_left = false;
    if (left_at > 0) continue;  // the answer is no already: only whether all left is open
    exhaust_to_end_ = true;     // read the whole prefix: exhausted_only notes [from, to)
    if (!completions_all_in(p, prefix, *forbidden)) return false;
  }
  if (left_at == 0) return any;
  exhaust_left_ = all_left;
  if (all_left && left_at <= to) left_ = {rows_[row].serial, text_->text_version(left_at), from, left_at};
  return false;
}

bool EarleyParser::keys_left(uint32_t row, uint32_t s, std::string_view prefix, uint32_t from, uint32_t to) {
  if (!text_) return true;  // no text, nothing exhausted
  uint32_t left_at = 0;
  for (uint32_t lex : lexer_->state(s).live) {
    const LexemeSpec& spec = g_->lexemes[lex];
    if (spec.ignore || spec.unique_key == LexemeSpec::kNoKey || vetoed_at(rows_[row], lex)) continue;
    const std::vector<std::string>* forbidden = key_forbidden(row, lex);
    if (!forbidden) continue;
    const size_t off = leaves_at(prefix, *forbidden);
    if (off == 0) {
      note_read(from, to);  // read the whole prefix
      return false;
    }
    left_at = std::max(left_at, from + static_cast<uint32_t>(off));
  }
  if (left_at > 0) {
    note_read(from, left_at);
    if (left_at <= to) left_ = {rows_[row].serial, text_->text_version(left_at), from, left_at};
  }
  return true;
}

// The shortest start of `prefix` (a key's raw bytes) whose decoded text begins no key of
// `forbidden`, or 0 when the whole prefix still does (the decoded starts only grow).
size_t EarleyParser::leaves_at(std::string_view prefix, const std::vector<std::string>& forbidden) {
  std::string decoded;
  auto leaves = [&](size_t k) {
    decoded.clear();
    size_t used = 0;
    bool closed = false;
    return !json_string_prefix(prefix.substr(0, k), decoded, &used, &closed) || !prefix_of_any(forbidden, decoded);
  };
  if (prefix.empty() || !leaves(prefix.size())) return 0;
  size_t lo = 1, hi = prefix.size();  // leaves(hi)
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    if (leaves(mid))
      hi = mid;
    else
      lo = mid + 1;
  }
  return hi;
}

uint32_t EarleyParser::rule_of(uint32_t pos) const {
  while (!Grammar::is_end(g_->dotted[pos])) ++pos;
  return g_->dotted[pos] & ~Grammar::kEndOfRule;
}

// key_forbidden_now, memoized by (row serial, lexeme): every prefix of a key asks it again.
const std::vector<std::string>* EarleyParser::key_forbidden(uint32_t row, uint32_t lex) {
  const uint64_t serial = rows_[row].serial;
  for (const KeyContext& k : key_contexts_) {
    if (k.serial != serial || k.lex != lex) continue;
    for (auto [a, b] : k.reads) note_read(a, b);
    return k.ok ? &k.forbidden : nullptr;
  }
  KeyContext& k = key_contexts_[next_key_context_++ % kKeyContexts];
  k.serial = 0;  // not valid until computed
  Recorder r(*this);
  k.forbidden.clear();
  k.ok = key_forbidden_now(row, lex, k.forbidden);
  k.lex = lex;
  k.reads = r.rec.reads;
  k.serial = serial;
  return k.ok ? &k.forbidden : nullptr;
}

// The keys lexeme `lex` begun at `row` may not end as (sorted): for each item of the row that
// expects it, the keys of the members before it in its object and the names of its not_in
// check, intersected over the items. False when some item is not at the start of a key that a
// unique_key check covers, or when nothing is forbidden.
bool EarleyParser::key_forbidden_now(uint32_t row, uint32_t lex, std::vector<std::string>& out) {
  const Symbol sym = kTerminalBit | lex;
  bool first = true, ok = true;
  std::vector<std::string> names;
  for_each_waiting(row, sym, [&](uint32_t j) {
    if (ok) ok = key_item_context(row, items_[j], names, out, first);
  });
  return ok && !first && !out.empty();
}

// One item of `row` expecting a key lexeme: its unique_key rule's contexts, into out.
bool EarleyParser::key_item_context(uint32_t row, EarleyItem it, std::vector<std::string>& names,
                                    std::vector<std::string>& out, bool& first) {
  const Grammar& g = *g_;
  if (it.origin != row) return false;
  const uint32_t lhs = g.rules[rule_of(it.pos)].lhs;
  const int32_t ci = g.nt_check[lhs];
  if (ci < 0) return false;
  if (g.checks[ci].kind == CheckKind::UniqueKey) {
    names.clear();
    return add_key_context(row, lhs, names, out, first);
  }
  if (g.checks[ci].kind != CheckKind::NotIn) return false;
  // a key less the named properties: the unique_key rule is the one around it
  names = g.checks[ci].names;
  std::sort(names.begin(), names.end());
  bool ok = true;
  for_each_waiting(row, lhs, [&](uint32_t k) {
    const EarleyItem up = items_[k];
    const uint32_t parent = g.rules[rule_of(up.pos)].lhs;
    const int32_t pc = g.nt_check[parent];
    ok = ok && up.origin == row && pc >= 0 && g.checks[pc].kind == CheckKind::UniqueKey &&
         add_key_context(row, parent, names, out, first);
  });
  return ok;
}

// One unique_key rule `lhs` begun at `row`: for each list item waiting on it, the keys of the
// members from the list's start to the row, with `names`, intersected into out.
bool EarleyParser::add_key_context(uint32_t row, uint32_t lhs, const std::vector<std::string>& names,
                                   std::vector<std::string>& out, bool& first) {
  bool ok = true;
  std::vector<std::string> mine, both;
  for_each_waiting(row, lhs, [&](uint32_t k) {
    if (!ok) return;
    const uint32_t siblings = items_[k].origin;
    mine = names;
    if (siblings < row && rows_[siblings].offset < rows_[row].offset) {
      const std::vector<std::string>* earlier = earlier_siblings(CheckKind::UniqueKey, siblings, row);
      if (!earlier) {
        ok = false;
        return;
      }
      both.clear();
      std::set_union(mine.begin(), mine.end(), earlier->begin(), earlier->end(), std::back_inserter(both));
      mine.swap(both);
    }
    if (first) {
      out = mine;
      first = false;
    } else {
      both.clear();
      std::set_intersection(out.begin(), out.end(), mine.begin(), mine.end(), std::back_inserter(both));
      out.swap(both);
    }
  });
  return ok;
}

// Whether every completion of the JSON string begun with `prefix`, from the lexer state s of one
// key lexeme, decodes to a string of `forbidden` (sorted). A search over the continuations that
// stay on the forbidden keys (decoded, so that `\u0061` is `a`): it stops at the first one that
// leaves them or ends on a new key. Past a bound it answers no (the key may be new), which is
// what the mask allowed without this check.
bool EarleyParser::completions_all_in(uint32_t s, std::string_view prefix,
                                      const std::vector<std::string>& forbidden) const {
  constexpr size_t kMaxSteps = 4096;
  struct Node {
    uint32_t state;
    std::string raw;
  };
  std::vector<Node> todo{{s, std::string(prefix)}};
  std::set<std::pair<uint32_t, std::string>> seen;  // (state, decoded + '\xff' + pending bytes)
  std::string decoded;
  size_t steps = 0;
  while (!todo.empty()) {
    Node n = std::move(todo.back());
    todo.pop_back();
    decoded.clear();
    size_t used = 0;
    bool closed = false;
    if (!n.raw.empty()) {  // (empty: at the key's start, from a row's start state)
      if (!json_string_prefix(n.raw, decoded, &used, &closed) || !prefix_of_any(forbidden, decoded)) return false;
      if (closed) {
        const LexState& st = lexer_->state(n.state);
        if (!st.accepting.empty() && !std::binary_search(forbidden.begin(), forbidden.end(), decoded)) return false;
        if (!st.end_now) return false;  // goes on past its closing quote: not a plain key
        continue;
      }
    }
    if (!seen.emplace(n.state, decoded + '\xff' + n.raw.substr(used)).second) continue;
    for (int b = 0; b < 256; ++b) {
      const uint32_t t = lexer_->next(n.state, static_cast<uint8_t>(b));
      if (t == Lexer::kDead) continue;
      if (++steps > kMaxSteps) return false;
      todo.push_back({t, n.raw + static_cast<char>(b)});
    }
  }
  return true;
}

}  // namespace stencil
