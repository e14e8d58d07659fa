#include "matcher/item_guard.h"

#include <algorithm>
#include <functional>
#include <string_view>
#include <utility>

#include "json/canon.h"
#include "matcher/parse_state.h"
#include "stencil/vocabulary.h"
#include "support/token_bits.h"
#include "tokens/trie.h"

namespace stencil {

namespace {
// The search's budget in nodes (each pushes a byte per lexer class). A witness is nearly always a
// byte or two away (a different character, digit or bracket); an object item with one value left
// takes some tens.
constexpr int kNodes = 192;
constexpr int kNumberNodes = 128;  // the second pass, where numbers go on
constexpr int kMaxDepth = 512;
constexpr size_t kMaxVerdicts = 4096;

bool allowed(const uint32_t* words, int32_t t) { return token_bits::has(words, t); }
}  // namespace

bool ItemGuard::needed(const Grammar& g) {
  return std::any_of(g.checks.begin(), g.checks.end(),
                     [](const CompletionCheck& c) { return c.kind == CheckKind::UniqueItem; });
}

void ItemGuard::ListMemo::reset() {
  row_serial = 0;
  done_end = 0;
  version = 0;
  earlier = std::make_shared<std::deque<JsonTree>>();
  has_danger = false;
  danger_tail.clear();
  danger.clear();
}

bool ItemGuard::read_list_at(ParseState& ps, uint32_t row, List& out) {
  const EarleyRow& r = ps.parser().row(row);
  const uint32_t end = ps.bytes_consumed();
  ListMemo* m = nullptr;
  for (ListMemo& x : memos_)
    if (x.row_serial == r.serial) m = &x;
  if (!m || m->version == 0 || m->done_end > end || ps.version_at(m->done_end) != m->version) {
    if (!m) m = &memos_[next_memo_++ % kMemos];
    m->reset();
    m->row_serial = r.serial;
    m->done_end = r.offset;
  }
  const std::string text = ps.bytes(size_t{m->done_end} + 1, ps.frames().size());
  ListProgress p;
  if (!read_list(text, p) || p.closed) return false;
  const uint32_t item_at = m->done_end + static_cast<uint32_t>(p.last_from);
  const bool keep = item_at <= stable_end_;  // the bytes before the item are no token being tried
  out.own.clear();
  for (const std::string& canon : p.done) {
    JsonTree& t = keep ? m->earlier->emplace_back() : out.own.emplace_back();
    if (!tree_of_canonical(canon, t)) return false;
    t.canon = canon;
    t.id = std::hash<std::string>{}(canon);
  }
  if (keep && (m->done_end != item_at || m->version == 0)) {
    m->done_end = item_at;
    m->version = ps.version_at(item_at);
    m->has_danger = false;
  }
  out.memo = m;
  out.kept = m->earlier;
  out.earlier.clear();
  for (const JsonTree& t : *m->earlier) out.earlier.push_back(&t);
  for (const JsonTree& t : out.own) out.earlier.push_back(&t);
  out.tail = text.substr(p.last_from);
  out.item_at = item_at;
  out.start.clear();
  return true;
}

// Keeps the spellers still alive after `bytes`.
ItemGuard::Danger ItemGuard::narrowed(const Danger& from, std::string_view bytes) {
  Danger out;
  for (const Speller& s : from) {
    if (!bytes.empty() && s.peek(bytes[0]) == 0) continue;  // most bytes leave at once: no copy
    Speller t = s;
    if (t.feed(bytes)) out.push_back(std::move(t));
  }
  return out;
}

// The earlier items the item being written may still spell: from a shorter stable text of it
// when there is one (the item only narrows them as it goes on, and only its new bytes are read).
ItemGuard::Danger ItemGuard::danger_of(const List& list) {
  ListMemo& m = *list.memo;
  Danger danger;
  if (list.own.empty() && m.has_danger && list.tail.compare(0, m.danger_tail.size(), m.danger_tail) == 0) {
    danger = narrowed(m.danger, std::string_view(list.tail).substr(m.danger_tail.size()));
  } else {
    for (const JsonTree* t : list.earlier) {
      Speller s(*t);
      if (s.feed(list.tail)) danger.push_back(std::move(s));
    }
  }
  if (list.own.empty() && m.done_end + list.tail.size() <= stable_end_) {
    m.has_danger = true;
    m.danger_tail = list.tail;
    m.danger = danger;
  }
  return danger;
}

std::string ItemGuard::verdict_key(ParseState& ps, List& list, std::string_view more, const Danger& danger) {
  if (list.start.empty()) {
    // the row where the item began: the last one before its first byte
    const EarleyParser& parser = ps.parser();
    size_t lo = 0, hi = parser.num_rows();
    while (hi - lo > 1) {
      const size_t mid = (lo + hi) / 2;
      (parser.row(mid).offset <= list.item_at ? lo : hi) = mid;
    }
    const EarleyRow& r = parser.row(lo);
    std::vector<uint64_t> items;
    for (uint32_t j = r.begin; j < r.end; ++j)
      items.push_back(uint64_t(parser.item(j).pos) << 1 | (parser.item(j).origin == lo));
    std::sort(items.begin(), items.end());
    list.start = std::to_string(r.lexer_start) + ":";
    for (uint64_t x : items) list.start += std::to_string(x) + ",";
  }
  // the text without white space outside strings, and the lexer state it ends in: white space
  // that decides where an item goes on (an indentation's) is the same in every spelling of the
  // text but the end's, which the state holds; elsewhere it is free and says nothing
  std::string key = list.start + ":" + std::to_string(ps.frames().back().state) + ":";
  ListLex lex;
  for (std::string_view part : {std::string_view(list.tail), more})
    for (char c : part) {
      if (!lex.in_string && (c == ' ' || c == '\t' || c == '\n' || c == '\r')) continue;
      key.push_back(c);
      lex.read_to_comma(std::string_view(&c, 1));
    }
  std::vector<uint64_t> ids;  // the earlier items, by their canonical form's hash
  for (const Speller& t : danger) ids.push_back(t.value()->id);
  std::sort(ids.begin(), ids.end());
  for (uint64_t id : ids) key += ":" + std::to_string(id);
  return key;
}

bool ItemGuard::item_dead(ParseState& ps, List& list) {
  const Danger danger = danger_of(list);
  return !danger.empty() && item_dead(ps, list, {}, danger);
}

// `more`: bytes read after the list's tail (a token being tried).
bool ItemGuard::item_dead(ParseState& ps, List& list, std::string_view more, const Danger& danger) {
  std::string key = verdict_key(ps, list, more, danger);
  auto at = verdicts_.find(key);
  if (at != verdicts_.end()) return at->second;
  const bool dead = !witness(ps, danger);
  if (verdicts_.size() >= kMaxVerdicts) verdicts_.clear();
  verdicts_.emplace(std::move(key), dead);
  return dead;
}

bool ItemGuard::dead(ParseState& ps) {
  const std::vector<uint32_t> lists = ps.checks().unique_lists();  // a copy: the search pushes rows
  List list;
  for (uint32_t row : lists)
    if (read_list_at(ps, row, list) && item_dead(ps, list)) return true;
  return false;
}

// Depth-first under doubling depth limits: a near witness is found before the search goes deep.
bool ItemGuard::witness(ParseState& ps, const Danger& danger) {
  const ByteClasses& bc = ps.lexer().classes();
  if (classes_of_ != &bc) {
    class_bytes_.assign(static_cast<size_t>(bc.count()), {});
    for (int b = 0; b < 256; ++b) class_bytes_[bc.class_of[b]].push_back(static_cast<uint8_t>(b));
    classes_of_ = &bc;
  }
  Search search;
  struct Nest {  // put back however the search ends (a time limit throws)
    Search*& at;
    Search* outer;
    ~Nest() { at = outer; }
  } nest{search_, search_};
  search_ = &search;
  // First along the item's structure alone (no byte that goes on with a number: a number member's
  // spellings would take the budget before the members after it are tried), then everywhere.
  for (bool numbers : {false, true}) {
    nodes_ = numbers ? kNumberNodes : kNodes;
    numbers_ = numbers;
    for (int depth = 1; depth <= kMaxDepth; depth *= 2) {
      const Probe r = probe(ps, danger, depth);
      if (r == Probe::Found) return true;
      if (r == Probe::Exhausted || nodes_ <= 0) break;
    }
  }
  return false;
}

// Below the state ps is in, `danger` the earlier items the item's text so far may still spell:
// Found a byte the grammar takes that leaves them all, Exhausted none at any depth,
// Cut the depth or the budget ended the look. One push per lexer class finds the bytes the
// grammar takes; those that keep some earlier item are the children.
ItemGuard::Probe ItemGuard::probe(ParseState& ps, const Danger& danger, int depth) {
  if (--nodes_ < 0) return Probe::Cut;
  const size_t base = ps.frames().size();
  // (values of an unordered_map stay where they are as the recursion below adds nodes)
  auto [at, fresh] = search_->nodes.try_emplace(search_->path);
  if (fresh ? expand(ps, danger, base, at->second) : (ps.descend_unshared(base), false)) return Probe::Found;
  if (at->second.none) return Probe::Exhausted;
  if (depth <= 1) return Probe::Cut;
  const auto& keep = at->second.keep;  // bytes that keep some, that the grammar takes
  bool cut = false;
  const bool in_number = std::any_of(danger.begin(), danger.end(), [](const Speller& sp) { return sp.in_number(); });
  // where every byte goes on with a number, none costs more than another
  const bool forced =
      std::all_of(keep.begin(), keep.end(), [&](const auto& k) { return respelling_cost(in_number, k.first) > 1; });
  for (auto& [b, kept] : keep) {
    const int cost = forced ? 1 : respelling_cost(in_number, b);
    if (!numbers_ && respelling_cost(in_number, b) > 1) continue;
    if (depth - cost < 1) {
      cut = true;
      continue;
    }
    if (!ps.push_byte(b)) continue;
    search_->path.push_back(static_cast<char>(b));
    const Probe r = probe(ps, kept, depth - cost);
    search_->path.pop_back();
    ps.pop_to(base);
    if (r == Probe::Found) return r;
    cut |= r == Probe::Cut;
  }
  return cut ? Probe::Cut : Probe::Exhausted;
}

// A node met for the first time in its search: true when a byte the grammar takes leaves every
// earlier item; else its children, the bytes that keep some, nearest to leaving them all first.
bool ItemGuard::expand(ParseState& ps, const Danger& danger, size_t base, Node& node) {
  auto& keep = node.keep;
  const Lexer& lexer = ps.lexer();
  const uint32_t state = ps.frames().back().state;
  const bool can_end = !lexer.state(state).accepting.empty();
  // A byte that leaves them all, and that the grammar takes, is looked for first: most nodes end
  // there after a push or two. A class the lexer refuses is refused whole (without a push); a
  // check may read the byte itself (the item's own repeat check: `0` of `[0,0`), so a few of a
  // class are tried.
  for (const std::vector<uint8_t>& bytes : class_bytes_) {
    if (!can_end && lexer.next(state, bytes.front()) == Lexer::kDead) continue;
    int tries = 3;
    for (uint8_t b : bytes) {
      const char byte = static_cast<char>(b);
      Danger left = narrowed(danger, std::string_view(&byte, 1));
      if (!left.empty()) {
        keep.emplace_back(b, std::move(left));
        continue;
      }
      if (tries <= 0) continue;
      --tries;
      // where the lexeme ends at b, the tries share its end (one parser scan for all classes)
      const bool taken = ps.push_byte(b, true);
      ps.descend(base);
      if (!taken) continue;
      // and the item it leaves its list with must not be a dead end of another list (an inner one)
      ps.descend_unshared(base);
      const bool found = ps.push_byte(b) && !others_dead(ps);
      ps.pop_to(base);
      if (found) return true;
    }
  }
  ps.descend_unshared(base);
  keep.erase(std::remove_if(keep.begin(), keep.end(),
                            [&](const auto& k) {
                              const bool taken = ps.push_byte(k.first);
                              ps.pop_to(base);
                              return !taken;
                            }),
             keep.end());
  node.none = keep.empty();
  if (node.none) return false;
  drop_respellings(ps, danger, keep, base);
  // the bytes that keep the fewest earlier items first: nearest to leaving them all
  std::stable_sort(keep.begin(), keep.end(),
                   [](const auto& x, const auto& y) { return x.second.size() < y.second.size(); });
  return false;
}

// The depth a child byte costs: a byte that goes on with a number being written may only spell the
// same number again, so it costs more, and the iterations find a witness along the item's structure before
// they spend the budget on its spellings (a number member's 1, 1.0, 0.1E1, 10e-1 at every object).
// (White space left to search is not optional: drop_respellings.)
int ItemGuard::respelling_cost(bool in_number, uint8_t b) {
  return in_number && ((b >= '0' && b <= '9') || b == '.' || b == 'e' || b == 'E' || b == '+' || b == '-') ? 3 : 1;
}

// White space and escapes spell again what other bytes write: one white space byte is searched of
// those the grammar takes; where a byte that is neither keeps
// some earlier item, they are not searched (flexible white space would multiply the nodes at
// every gap), unless the grammar takes after the white space none of the bytes it takes now
// (indented white space decides where the item goes on).
void ItemGuard::drop_respellings(ParseState& ps, const Danger& danger, std::vector<std::pair<uint8_t, Danger>>& keep,
                                 size_t base) {
  auto ws = [](uint8_t b) { return b == ' ' || b == '\t' || b == '\n' || b == '\r'; };
  // two white space bytes the grammar both takes are one (JSON's white space is any of them)
  bool one_ws = false;
  keep.erase(std::remove_if(keep.begin(), keep.end(),
                            [&](const auto& k) { return ws(k.first) && std::exchange(one_ws, true); }),
             keep.end());
  std::vector<uint8_t> significant;  // those the grammar takes now (a check may refuse one of a class)
  const bool in_number = std::any_of(danger.begin(), danger.end(), [](const Speller& sp) { return sp.in_number(); });
  for (const auto& k : keep) {
    if (ws(k.first) || k.first == '\\' || respelling_cost(in_number, k.first) > 1) continue;
    if (ps.push_byte(k.first)) significant.push_back(k.first);
    ps.pop_to(base);
  }
  if (significant.empty()) return;
  auto optional = [&](uint8_t w) {
    if (!ps.push_byte(w)) return true;
    bool all = true;
    for (uint8_t b : significant) {
      const size_t at = ps.frames().size();
      all = all && ps.push_byte(b);
      ps.pop_to(at);
    }
    ps.pop_to(base);
    return all;
  };
  keep.erase(std::remove_if(keep.begin(), keep.end(),
                            [&](const auto& k) { return k.first == '\\' || (ws(k.first) && optional(k.first)); }),
             keep.end());
}

// Whether some unique list's item is dead at this state, when more than one list is open: the
// search for one list asks it of the others. Nested at most kNesting deep (two lists would ask
// each other on and on), and with the budget of the search in progress put back.
bool ItemGuard::others_dead(ParseState& ps) {
  constexpr int kNesting = 2;
  if (nesting_ >= kNesting || ps.checks().unique_lists().size() < 2) return false;
  ++nesting_;
  struct Back {
    ItemGuard& g;
    int nodes;
    bool numbers;
    ~Back() {
      --g.nesting_;
      g.nodes_ = nodes;
      g.numbers_ = numbers;
    }
  } back{*this, nodes_, numbers_};
  return dead(ps);
}

void ItemGuard::forget() {
  for (ListMemo& m : memos_) m.reset();
  verdicts_.clear();
}

const ItemGuard::CommaTokens& ItemGuard::comma_tokens(const Vocabulary& vocab) {
  if (comma_vocab_ != &vocab || !comma_tokens_) {
    auto tokens = std::make_shared<CommaTokens>();
    for (int32_t t : vocab.comma_tokens()) {
      const std::string_view bytes = vocab.token_bytes(t);
      tokens->all.push_back(t);
      ListLex outside, in_string;
      in_string.in_string = true;
      if (outside.read_to_comma(bytes)) tokens->from_outside.push_back(t);
      if (in_string.read_to_comma(bytes)) tokens->from_string.push_back(t);
    }
    comma_tokens_ = std::move(tokens);
    comma_vocab_ = &vocab;
  }
  return *comma_tokens_;
}

// The allowed tokens after which the list's item being written may be a repeat: those without a
// comma along the trie, while the item may still repeat (leaving every earlier item is final
// until a comma starts another item); those with a comma one by one.
void ItemGuard::add_candidates(const Vocabulary& vocab, const uint32_t* words, const List& list, bool alone,
                               std::vector<Candidate>& out) {
  ListLex at_tail;
  at_tail.read_to_comma(list.tail);  // the item's own text holds no comma of the list
  std::vector<Danger> danger{danger_of(list)};  // by trie depth
  if (!danger[0].empty()) {
    const std::vector<TrieNode>& nodes = vocab.trie().nodes();
    std::vector<ListLex> lex{at_tail};  // by trie depth: where the path's bytes stand
    for (size_t i = 1; i < nodes.size();) {
      const TrieNode& n = nodes[i];
      lex.resize(n.depth);
      lex.push_back(lex.back());
      danger.resize(n.depth + 1);
      const char byte = static_cast<char>(n.byte);
      // a comma of the list: the tokens below are the comma tokens'
      if (lex.back().read_to_comma(std::string_view(&byte, 1)))
        danger[n.depth].clear();
      else
        danger[n.depth] = narrowed(danger[n.depth - 1], std::string_view(&byte, 1));
      if (danger[n.depth].empty()) {
        i += n.subtree_size;
        continue;
      }
      if (n.token_id >= 0 && allowed(words, n.token_id)) {
        const bool known = alone && vocab.token_bytes(n.token_id).find('[') == std::string_view::npos;
        out.push_back(Candidate{n.token_id, known, known ? danger[n.depth] : Danger{}});
      }
      ++i;
    }
  }
  const CommaTokens& commas = comma_tokens(vocab);
  const bool plain = at_tail.depth == 0 && !at_tail.escape;
  const std::vector<int32_t>& tokens = !plain              ? commas.all
                                       : at_tail.in_string ? commas.from_string
                                                           : commas.from_outside;
  Crossings seen;
  for (int32_t t : tokens)
    if (allowed(words, t) && crosses_into_repeat(list, at_tail, vocab.token_bytes(t), seen))
      out.push_back(Candidate{t});
}

// Whether a token may end the list's item at a comma of the list and begin a repeat after it:
// the text after the comma against the earlier items and the item the token ends. The item's
// text is read once per fill (a 1 KB item and hundreds of tokens that begin with a comma).
bool ItemGuard::crosses_into_repeat(const List& list, const ListLex& at_tail, std::string_view bytes, Crossings& seen) {
  ListLex lex = at_tail;
  size_t k = 0;
  while (k < bytes.size() && !lex.read_to_comma(bytes.substr(k, 1))) ++k;
  if (k == bytes.size()) return false;
  const std::string_view before = bytes.substr(0, k), after = bytes.substr(k + 1);
  if (lex.read_to_comma(after)) return may_repeat(list.tail + std::string(bytes), list.earlier);  // two items
  auto known = seen.after.find(std::string(after));
  if (known == seen.after.end()) {
    bool any = false;
    for (const JsonTree* t : list.earlier) any = any || may_spell(after, *t);
    known = seen.after.emplace(std::string(after), any).first;
  }
  if (known->second) return true;
  auto ended = seen.ended.find(std::string(before));
  if (ended == seen.ended.end()) {
    std::string canon;
    JsonTree t;
    const bool ok = canonical_value(list.tail + std::string(before), canon) && tree_of_canonical(canon, t);
    ended = seen.ended.emplace(std::string(before), std::make_pair(ok, std::move(t))).first;
  }
  return !ended->second.first || may_spell(after, ended->second.second);
}

// Whether the state after a candidate's bytes (pushed) is a dead item.
bool ItemGuard::refuses(ParseState& ps, List& list, const Candidate& c, std::string_view bytes) {
  if (!c.known) return dead(ps);
  return !c.danger.empty() && item_dead(ps, list, bytes, c.danger);
}

void ItemGuard::filter(ParseState& ps, const Vocabulary& vocab, uint32_t* words) {
  const std::vector<uint32_t> lists = ps.checks().unique_lists();
  if (lists.empty()) return;
  std::vector<Candidate> candidates;
  List list;
  for (uint32_t row : lists)
    if (read_list_at(ps, row, list)) add_candidates(vocab, words, list, lists.size() == 1, candidates);
  if (candidates.empty()) return;
  // Trie order: a token after a dead one's bytes is dead too, with no search.
  const size_t base = ps.frames().size();
  struct Stable {  // put back however the loop ends (a time limit throws)
    uint32_t& end;
    ~Stable() { end = ~0u; }
  } stable{stable_end_};
  stable_end_ = ps.bytes_consumed();
  std::vector<int32_t> refused;
  std::string_view dead_bytes;
  for (const Candidate& c : candidates) {
    const std::string_view bytes = vocab.token_bytes(c.token);
    if (!dead_bytes.empty() && bytes.substr(0, dead_bytes.size()) == dead_bytes) {
      refused.push_back(c.token);
      continue;
    }
    bool pushed = true;
    for (char b : bytes)
      if (!(pushed = ps.push_byte(static_cast<uint8_t>(b)))) break;
    const bool refuse = pushed && refuses(ps, list, c, bytes);
    ps.pop_to(base);
    if (refuse) {
      refused.push_back(c.token);
      dead_bytes = bytes;
    }
  }
  std::sort(refused.begin(), refused.end());
  for (int32_t t : refused) token_bits::clear(words, t);
  if (refused.empty()) return;
  for (auto [first, other] : vocab.trie().duplicates())
    if (std::binary_search(refused.begin(), refused.end(), first)) token_bits::clear(words, other);
}

}  // namespace stencil
