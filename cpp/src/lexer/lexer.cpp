#include "lexer/lexer.h"

#include "support/plain_text.h"

#include <algorithm>
#include <cstring>
#include <unordered_set>

#include "stencil/errors.h"
#include "support/heap_size.h"

namespace stencil {

Lexer::Lexer(ExprStore store, std::vector<LexemeSpec> lexemes, LexerLimits limits, std::vector<LexemeCover> covers)
    : store_(std::move(store)),
      deriver_(store_, limits.fuel),
      lexemes_(std::move(lexemes)),
      covers_(std::move(covers)),
      limits_(limits) {
  if (limits_.max_states > (kMaxBlocks << kBlockBits)) limits_.max_states = kMaxBlocks << kBlockBits;
  classes_ = ByteClasses::from_sets(store_.all_bytesets());
  num_classes_ = classes_.count();
  deriver_.set_class_representatives(classes_.representative);
  for (const LexemeSpec& l : lexemes_) {
    has_token_limits_ = has_token_limits_ || l.max_tokens > 0;
    max_token_limit_ = std::max(max_token_limit_, l.max_tokens);
    has_not_initial_ = has_not_initial_ || l.not_initial;
    has_unique_keys_ = has_unique_keys_ || l.unique_key != LexemeSpec::kNoKey;
  }
  std::lock_guard<std::mutex> lock(mu_);
  intern_state({});  // state 0: dead
}

Lexer::~Lexer() = default;

uint32_t Lexer::intern_state(Pairs pairs) const {
  auto it = state_ids_.find(pairs);
  if (it != state_ids_.end()) return it->second;
  uint32_t id = num_states_.load(std::memory_order_relaxed);
  if (id >= limits_.max_states)
    throw BudgetError("lexer state limit exceeded: more than " + std::to_string(limits_.max_states) +
                      " lexer states (raise max_lexer_states to allow it)");
  uint32_t blk = id >> kBlockBits;
  if (!blocks_[blk]) {
    auto b = std::make_unique<Block>();
    size_t n = size_t(num_classes_) << kBlockBits;
    b->trans.reset(new std::atomic<uint32_t>[n]);
    // (every word kUnknown, all bits set, before the block is published: one memset, not a store
    // per entry, which was a quarter of a small grammar's compile)
    static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) && kUnknown == 0xFFFFFFFFu);
    std::memset(static_cast<void*>(b->trans.get()), 0xFF, n * sizeof(uint32_t));
    blocks_[blk] = std::move(b);
  }
  LexState& st = blocks_[blk]->states[id & kBlockMask];
  st = LexState{};  // an earlier try at this id may have stopped half-way (a time limit)
  bool lazy_accept = false, all_ignored = true;
  for (size_t i = 0; i < pairs.size(); i += 2) {
    uint32_t lex = pairs[i];
    if (store_.nullable(pairs[i + 1])) {
      st.accepting.push_back(lex);
      lazy_accept |= lexemes_[lex].lazy;
      all_ignored &= lexemes_[lex].ignore;
    }
  }
  // Whether some lexeme can go on matters only where one may end here; it costs derivatives and
  // emptiness searches for expressions with a complement, so states inside a lexeme skip it.
  bool any_extend = false;
  if (!st.accepting.empty() && !lazy_accept)
    for (size_t i = 1; i < pairs.size() && !any_extend; i += 2) any_extend = deriver_.can_extend(pairs[i]);
  st.end_now = !st.accepting.empty() && (lazy_accept || !any_extend);
  for (size_t i = 1; i < pairs.size(); i += 2) st.bounded |= !store_.node(pairs[i]).no_bounds;
  st.any_ignore_only = !st.accepting.empty() && all_ignored;
  for (size_t i = 0; i < pairs.size(); i += 2) {
    st.live.push_back(pairs[i]);
    st.live_bits |= uint64_t(1) << (pairs[i] & 63);
  }
  std::sort(st.live.begin(), st.live.end());
  st.live.erase(std::unique(st.live.begin(), st.live.end()), st.live.end());
  if (has_unique_keys_) mark_finite_keys(st, pairs);
  // The pairs twice (state_pairs_ and state_ids_'s key), and the state's vectors.
  state_bytes_ += heap::block(pairs.size() * 4) + heap::of(pairs) + heap::of(st.live) + heap::of(st.accepting);
  state_pairs_.push_back(pairs);
  state_ids_.emplace(std::move(pairs), id);
  num_states_.store(id + 1, std::memory_order_release);
  note_growth();
  return id;
}

void Lexer::mark_finite_keys(LexState& st, const Pairs& pairs) const {
  for (size_t i = 0; i < pairs.size(); i += 2) {
    const uint8_t key = lexemes_[pairs[i]].unique_key;
    if (key == LexemeSpec::kNoKey) continue;
    const ExprId e = pairs[i + 1];
    // A key just closed is checked as it ends unless its check waits for the member's value; then
    // here for keys some of whose states are finite; a key of any string closed as a repeat is
    // flagged key_closed instead (asking exhausted_only at every closing quote of such keys
    // would cost the mask walk its shared boundary runs).
    const bool closed_member_key = e == ExprStore::kEmpty && key == LexemeSpec::kMemberEnd;
    const bool finite_states = closed_member_key && may_become_finite(lexemes_[pairs[i]].expr);
    const bool rest = e != ExprStore::kEmpty || finite_states;
    st.key_finite |= rest && finite_language(e);
    st.key_closed |= closed_member_key && !finite_states;
    st.key_end_checked |= e == ExprStore::kEmpty && key == LexemeSpec::kKeyEnd;
    st.may_finite.v.store(LexState::kMayFiniteUnknown, std::memory_order_relaxed);
  }
}

bool Lexer::find_key_may_finite(uint32_t s) const {
  std::lock_guard<std::mutex> lock(mu_);
  const Pairs& pairs = state_pairs_[s];
  bool may = false;
  for (size_t i = 0; i < pairs.size() && !may; i += 2)
    may = lexemes_[pairs[i]].unique_key != LexemeSpec::kNoKey && may_become_finite(pairs[i + 1]);
  state(s).may_finite.v.store(may ? 1 : 0, std::memory_order_release);
  return may;
}

bool Lexer::finite_language(ExprId e) const { return finite_langs_.finite(store_, e); }

// Whether some derivative of e (e included) other than the empty string has a finite language:
// a key of e could then be exhausted by the keys written before it. A search over at most 16 of
// e's derivatives; past them, assume it may (a yes too many costs a mask walk a look at the key's
// prefixes, which leave the forbidden keys at once; 512 cost a large pattern's key milliseconds
// per lexer state).
bool Lexer::may_become_finite(ExprId e) const {
  auto known = may_finite_.find(e);
  if (known != may_finite_.end()) return known->second;
  if (!finite_langs_.may_reach_finite(store_, e)) return may_finite_[e] = false;  // proved off its structure
  constexpr size_t kMaxExprs = 16;
  std::vector<ExprId> todo{e};
  std::unordered_set<ExprId> seen{e};
  bool out = false;
  while (!todo.empty() && !out) {
    const ExprId x = todo.back();
    todo.pop_back();
    auto k = may_finite_.find(x);
    if (k != may_finite_.end()) {
      out = k->second;
      continue;
    }
    if (x != ExprStore::kEmpty && finite_language(x)) {
      out = true;
      break;
    }
    for (uint8_t rep : classes_.representative) {
      if (!deriver_.may_start(x, rep)) continue;
      const ExprId d = deriver_.derive(x, rep);
      if (d == ExprStore::kNothing || !seen.insert(d).second) continue;
      if (seen.size() > kMaxExprs) return may_finite_[e] = true;
      todo.push_back(d);
    }
  }
  // With no finite derivative, none of those seen has one either.
  if (!out)
    for (ExprId x : seen) may_finite_[x] = false;
  may_finite_[e] = out;
  return out;
}

uint32_t Lexer::compute_transition(uint32_t state, uint8_t byte) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = blocks_[state >> kBlockBits]->trans[(state & kBlockMask) * num_classes_ + classes_.class_of[byte]];
  uint32_t known = slot.load(std::memory_order_acquire);
  if (known != kUnknown) return known;
  const Pairs& src = state_pairs_[state];
  Pairs next;
  // Bytes of one class have the same derivatives: derive by the class's representative, so that
  // the derivative cache serves every byte of the class in every state.
  const uint8_t rep = classes_.representative[classes_.class_of[byte]];
  for (size_t i = 0; i < src.size(); i += 2) {
    // A state of many literal lexemes (keys, keywords) drops most of them at each byte.
    if (!deriver_.may_start(src[i + 1], rep)) continue;
    ExprId d = deriver_.derive(src[i + 1], rep);
    if (d == ExprStore::kNothing || deriver_.is_empty(d)) continue;
    next.push_back(src[i]);
    next.push_back(d);
  }
  uint32_t t = next.empty() ? kDead : intern_state(std::move(next));
  if (const LexState& from = this->state(state); t != kDead && from.cover != ExprStore::kNothing) {
    // (t's words hold the cover's derivative whichever path made t first: a fact of its words)
    LexState& to = blocks_[t >> kBlockBits]->states[t & kBlockMask];
    if (to.cover == ExprStore::kNothing && deriver_.may_start(from.cover, rep)) {
      const ExprId d = deriver_.derive(from.cover, rep);
      if (d != ExprStore::kNothing) to.cover = d, to.cover_lexeme = from.cover_lexeme;
    }
  }
  if (t != kDead && this->state(t).end_now) t |= kEndNowTag;
  slot.store(t, std::memory_order_release);
  note_growth();
  return t;
}

uint32_t Lexer::start_state(const std::vector<uint32_t>& allowed) const {
  {
    std::shared_lock<std::shared_mutex> lock(start_mu_);
    auto it = start_states_.find(allowed);
    if (it != start_states_.end()) return it->second;
  }
  std::vector<uint32_t> lexemes = allowed;
  // with no lexeme left to come, an ignored one would trail the output: not_final ones may not
  for (uint32_t i = 0; i < lexemes_.size(); ++i)
    if (lexemes_[i].ignore && !(lexemes_[i].not_final && allowed.empty())) lexemes.push_back(i);
  std::sort(lexemes.begin(), lexemes.end());
  lexemes.erase(std::unique(lexemes.begin(), lexemes.end()), lexemes.end());
  uint32_t s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Pairs pairs;
    for (uint32_t lex : lexemes) {
      const LexemeSpec& spec = lexemes_[lex];
      if (spec.special || (!spec.nonempty && deriver_.is_empty(spec.expr))) continue;
      pairs.push_back(lex);
      pairs.push_back(spec.expr);
    }
    s = pairs.empty() ? kDead : intern_state(std::move(pairs));
    if (s != kDead) mark_cover(s, lexemes);
  }
  std::unique_lock<std::shared_mutex> lock(start_mu_);
  if (start_states_.emplace(allowed, s).second) start_keys_bytes_ += heap::block(allowed.size() * 4);
  return s;
}

void Lexer::mark_cover(uint32_t s, const std::vector<uint32_t>& lexemes) const {
  LexState& st = blocks_[s >> kBlockBits]->states[s & kBlockMask];
  if (st.cover != ExprStore::kNothing) return;
  for (const LexemeCover& c : covers_)
    if (std::includes(lexemes.begin(), lexemes.end(), c.lexemes.begin(), c.lexemes.end())) {
      st.cover = c.expr;
      st.cover_lexeme = c.lexemes.front();
      return;
    }
}

uint32_t Lexer::cover_state(uint32_t s) const {
  std::lock_guard<std::mutex> lock(mu_);
  const LexState& st = state(s);
  if (st.cover == ExprStore::kNothing || lexemes_[st.cover_lexeme].lazy || deriver_.is_empty(st.cover)) return kDead;
  return intern_state({st.cover_lexeme, st.cover});
}

uint32_t Lexer::start_after_ignored(uint32_t start, uint32_t ended) const {
  const uint64_t key = (uint64_t(start) << 32) | ended;
  {
    std::shared_lock<std::shared_mutex> lock(start_mu_);
    auto it = after_ignored_.find(key);
    if (it != after_ignored_.end()) return it->second;
  }
  uint32_t s = kDead;
  if (start != kDead) {
    const std::vector<uint32_t>& drop = state(ended).accepting;
    std::lock_guard<std::mutex> lock(mu_);
    Pairs pairs;
    const Pairs& from = state_pairs_[start];
    for (size_t i = 0; i < from.size(); i += 2)
      if (!std::binary_search(drop.begin(), drop.end(), from[i])) {
        pairs.push_back(from[i]);
        pairs.push_back(from[i + 1]);
      }
    s = pairs.empty() ? kDead : intern_state(std::move(pairs));
  }
  std::unique_lock<std::shared_mutex> lock(start_mu_);
  after_ignored_.emplace(key, s);
  return s;
}

template <class Drop>
uint32_t Lexer::without(uint32_t s, Drop drop) const {
  std::lock_guard<std::mutex> lock(mu_);
  Pairs pairs;
  const Pairs& from = state_pairs_[s];
  for (size_t i = 0; i < from.size(); i += 2)
    if (!drop(from[i])) {
      pairs.push_back(from[i]);
      pairs.push_back(from[i + 1]);
    }
  if (pairs.size() == from.size()) return s;
  return pairs.empty() ? kDead : intern_state(std::move(pairs));
}

uint32_t Lexer::drop_spent(uint32_t s, uint32_t tokens) const {
  if (!has_token_limits_ || s == kDead) return s;
  tokens = std::min(tokens, max_token_limit_);  // past every limit, all are spent alike: a bounded key
  const uint64_t key = (uint64_t(s) << 32) | tokens;
  {
    std::shared_lock<std::shared_mutex> lock(start_mu_);
    auto it = spent_.find(key);
    if (it != spent_.end()) return it->second;
  }
  const uint32_t out = without(s, [&](uint32_t lex) {
    const uint32_t limit = lexemes_[lex].max_tokens;
    return limit != 0 && limit <= tokens;
  });
  std::unique_lock<std::shared_mutex> lock(start_mu_);
  spent_.emplace(key, out);
  return out;
}

uint32_t Lexer::initial_state(uint32_t start) const {
  if (!has_not_initial_ || start == kDead) return start;
  return without(start, [&](uint32_t lex) { return lexemes_[lex].ignore && lexemes_[lex].not_initial; });
}

bool Lexer::work_limit_reached() const {
  std::lock_guard<std::mutex> lock(mu_);
  return num_states_.load(std::memory_order_relaxed) >= limits_.max_states || store_.size() >= store_.max_nodes() ||
         deriver_.exhausted();
}

size_t Lexer::num_exprs() const {
  std::lock_guard<std::mutex> lock(mu_);
  return store_.size();
}

uint64_t Lexer::fuel_used() const {
  std::lock_guard<std::mutex> lock(mu_);
  return limits_.fuel - deriver_.fuel_left();
}

// Bytes per state, expression and cached derivative, about as memory_bytes counts them.
void Lexer::note_growth() const {
  growth_.store(state_bytes_ + num_states_.load(std::memory_order_relaxed) * 96 + store_.size() * 48 +
                    deriver_.cache_entries() * 24,
                std::memory_order_relaxed);
}

void Lexer::set_cache_cap(size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  deriver_.set_cache_cap(std::max<size_t>(bytes / 24, 4096));  // a FlatMap64 entry: 12 bytes at half load
}

// Read off sizes and capacities (support/heap_size.h), the states' own vectors summed as they
// are made (state_bytes_): cheap enough for the memory limit to measure every so many new states.
size_t Lexer::memory_bytes() const {
  size_t starts = 0;
  {
    std::shared_lock<std::shared_mutex> lock(start_mu_);
    starts = heap::nodes(start_states_) + start_keys_bytes_ + heap::nodes(after_ignored_) + heap::nodes(spent_);
  }
  std::lock_guard<std::mutex> lock(mu_);
  const uint32_t num_blocks = (num_states_.load(std::memory_order_relaxed) + kBlockMask) >> kBlockBits;
  const size_t blocks =
      num_blocks * (heap::block(sizeof(Block)) + heap::block((size_t(num_classes_) << kBlockBits) * 4));
  size_t parked = heap::nodes(parked_bytes_);
  for (const auto& [reach, memo] : parked_bytes_) parked += heap::nodes(memo);
  const size_t maps = heap::of(state_pairs_) + heap::nodes(state_ids_) + heap::nodes(relaxed_) + heap::nodes(lifted_) +
                      heap::nodes(sandwiches_) + heap::nodes(part_chars_) + finite_langs_.memory_bytes() +
                      heap::nodes(may_finite_) + heap::nodes(expr_bytes_) + parked + heap::nodes(text_heads_) +
                      heap::nodes(loose_heads_) + heap::nodes(slack_heads_) + heap::nodes(plain_loops_) +
                      heap::nodes(covers_avoiding_) + heap::nodes(covers_plain_);
  return blocks + state_bytes_ + maps + starts + store_.memory_bytes() + deriver_.memory_bytes();
}

std::string Lexer::describe_state(uint32_t s) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (s == kDead) return "<dead>";
  std::string out;
  const Pairs& p = state_pairs_[s];
  for (size_t i = 0; i < p.size(); i += 2) {
    if (!out.empty()) out += "; ";
    const LexemeSpec& spec = lexemes_[p[i]];
    out += (spec.name.empty() ? "#" + std::to_string(p[i]) : spec.name) + ": " + store_.to_string(p[i + 1]);
  }
  return out;
}

std::vector<uint32_t> Lexer::live_lexemes(uint32_t s) const {
  return s == kDead ? std::vector<uint32_t>{} : state(s).live;
}

std::string Lexer::signature(uint32_t s, uint32_t clamp) const {
  constexpr size_t kLimit = 64 << 10;
  std::lock_guard<std::mutex> lock(mu_);
  const Pairs& p = state_pairs_[s];
  std::vector<std::string> parts;
  for (size_t i = 0; i < p.size(); i += 2) {
    const LexemeSpec& spec = lexemes_[p[i]];
    std::string part(1, static_cast<char>('a' + (spec.lazy ? 1 : 0) + (spec.ignore ? 2 : 0)));
    if (!store_.canonical(p[i + 1], part, kLimit, clamp)) return {};
    parts.push_back(std::move(part));
  }
  std::sort(parts.begin(), parts.end());
  std::string key;
  for (auto& part : parts) {
    key += std::to_string(part.size());
    key.push_back(':');
    key += part;
    if (key.size() > kLimit) return {};
  }
  return key;
}

uint32_t Lexer::probe_state(uint32_t s, size_t i) const {
  std::lock_guard<std::mutex> lock(mu_);
  const Pairs& p = state_pairs_[s];
  if (2 * i + 1 >= p.size()) return kDead;
  return intern_state({p[2 * i], p[2 * i + 1]});
}

bool Lexer::pair_within(uint32_t s, size_t i, size_t j) const {
  std::lock_guard<std::mutex> lock(mu_);
  const Pairs& p = state_pairs_[s];
  if (2 * std::max(i, j) + 1 >= p.size() || lexemes_[p[2 * i]].lazy || lexemes_[p[2 * j]].lazy) return false;
  return store_.within(p[2 * i + 1], p[2 * j + 1]);
}

bool Lexer::numbers_only(uint32_t s) const {
  std::lock_guard<std::mutex> lock(mu_);
  const Pairs& p = state_pairs_[s];
  auto number = [&](ExprId e) { return store_.node(e).kind == ExprKind::Number; };
  for (size_t i = 1; i < p.size(); i += 2) {
    const ExprNode& n = store_.node(p[i]);
    if (n.kind == ExprKind::Or ? !std::all_of(store_.args(n), store_.args(n) + n.args_len, number) : !number(p[i]))
      return false;
  }
  return !p.empty();
}

uint32_t Lexer::relaxed_state(uint32_t s, uint32_t limit, bool keep_mins) const {
  return lift_state(s, limit, keep_mins ? 3 : 0);
}

uint32_t Lexer::lifted_state(uint32_t s, uint32_t limit, bool lower_mins) const {
  return lift_state(s, std::min(limit, 1u << 30), lower_mins ? 2 : 1);
}

uint32_t Lexer::shrunk_state(uint32_t s, uint32_t limit) const { return lift_state(s, std::min(limit, 1u << 30), 4); }

uint32_t Lexer::lift_state(uint32_t s, uint32_t limit, int mode) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto& memo = mode == 4 ? shrunk_ : mode == 1 || mode == 2 ? lifted_ : relaxed_;
  const uint64_t key = uint64_t(s) << 32 | limit | (mode == 2 || mode == 3 ? 1u << 31 : 0u);
  if (auto it = memo.find(key); it != memo.end()) return it->second;
  Pairs pairs = state_pairs_[s];
  uint32_t r = pairs.empty() ? kDead : kUnknown;
  if (mode == 4) {  // (a pair shrunk to nothing leaves: its lexeme's subset is empty)
    Pairs kept;
    for (size_t i = 0; i + 1 < pairs.size(); i += 2)
      if (const ExprId e = store_.shrink_bounds(pairs[i + 1], limit); e != ExprStore::kNothing)
        kept.insert(kept.end(), {pairs[i], e});
    pairs.swap(kept);
    if (pairs.empty()) r = kDead;
  } else {
    for (size_t i = 1; i < pairs.size() && r != kDead; i += 2) {
      pairs[i] = mode == 1 || mode == 2 ? store_.lift_bounds(pairs[i], limit, mode == 2)
                                        : store_.relax_bounds(pairs[i], limit, mode == 3);
      if (pairs[i] == ExprStore::kNothing) r = kDead;
      if (mode == 0 && r != kDead) pairs[i] = without_full_count(pairs[i], 0);
    }
  }
  if (r != kDead) r = intern_state(std::move(pairs));
  memo.emplace(key, r);
  return r;
}

uint32_t Lexer::char_count_bound(uint32_t s) const {
  std::lock_guard<std::mutex> lock(mu_);
  const Pairs& p = state_pairs_[s];
  uint32_t r = 0;
  for (size_t i = 1; i < p.size(); i += 2)
    if (store_.node(p[i]).boolean && store_.node(p[i]).max_bound > r) r = std::max(r, store_.char_count_bound(p[i]));
  return r;
}

bool Lexer::counts_words(uint32_t s, uint32_t clamp) const {
  std::lock_guard<std::mutex> lock(mu_);
  const Pairs& p = state_pairs_[s];
  for (size_t i = 1; i < p.size(); i += 2)
    if (store_.recount(p[i], clamp, false) != p[i]) return true;
  return false;
}

bool Lexer::count_sandwich(uint32_t s, uint32_t clamp, uint32_t* lo, uint32_t* hi) const {
  constexpr uint32_t kCharCounts = 16;
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t key = uint64_t(s) << 32 | clamp;
  auto it = sandwiches_.find(key);
  if (it == sandwiches_.end()) {
    std::pair<uint32_t, uint32_t> r{kDead, kDead};
    Pairs low = state_pairs_[s], high = low;
    bool ok = !low.empty();
    for (size_t i = 1; ok && i < low.size(); i += 2) {
      low[i] = store_.recount(low[i], clamp, false);
      high[i] = store_.recount(high[i], clamp, true);
      // (a length beside the pattern, an intersection, counts down to the string's end)
      ok = low[i] != ExprStore::kNothing && high[i] != ExprStore::kNothing &&
           store_.char_count_bound(high[i]) <= (store_.node(high[i]).boolean ? 0 : kCharCounts);
    }
    if (ok && low != state_pairs_[s]) r = {intern_state(std::move(low)), intern_state(std::move(high))};
    it = sandwiches_.emplace(key, r).first;
  }
  *lo = it->second.first;
  *hi = it->second.second;
  return *lo != kDead && *hi != kDead && *lo != s && *hi != s;
}

template <class Pred>
bool Lexer::any_lexeme(uint32_t s, Pred pred) const {
  std::lock_guard<std::mutex> lock(mu_);
  const Pairs& p = state_pairs_[s];
  for (size_t i = 0; i < p.size(); i += 2)
    if (pred(lexemes_[p[i]])) return true;
  return false;
}

bool Lexer::has_lazy(uint32_t s) const {
  return any_lexeme(s, [](const LexemeSpec& l) { return l.lazy; });
}

bool Lexer::has_key(uint32_t s) const {
  return any_lexeme(s, [](const LexemeSpec& l) { return l.unique_key != LexemeSpec::kNoKey; });
}

ExprId Lexer::expr_of(uint32_t s, uint32_t lexeme) const {
  const Pairs& p = state_pairs_[s];
  ExprId e = ExprStore::kNothing;
  for (size_t i = 0; i < p.size(); i += 2) {
    if (p[i] != lexeme) continue;
    if (e != ExprStore::kNothing) return ExprStore::kNothing;  // (two: the union of their languages)
    e = p[i + 1];
  }
  return lexeme < lexemes_.size() && !lexemes_[lexeme].lazy ? e : ExprStore::kNothing;
}

bool Lexer::word_of(uint32_t s, uint32_t lexeme, std::string* word, size_t limit) const {
  std::lock_guard<std::mutex> lock(mu_);
  const ExprId e = expr_of(s, lexeme);
  word->clear();
  return e != ExprStore::kNothing && store_.word(e, word, limit);
}

bool Lexer::shortest_candidate(uint32_t s, uint32_t lexeme, std::string* word, size_t limit) const {
  std::lock_guard<std::mutex> lock(mu_);
  const ExprId e = expr_of(s, lexeme);
  word->clear();
  return e != ExprStore::kNothing && store_.shortest_candidate(e, word, limit);
}

}  // namespace stencil
