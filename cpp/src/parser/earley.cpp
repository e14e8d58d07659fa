#include "parser/earley.h"

#include <algorithm>
#include <iterator>

namespace stencil {

EarleyParser::EarleyParser(const Grammar& g, const Lexer& lexer) : g_(&g), lexer_(&lexer) {
  predicted_.assign(g.nonterminal_names.size(), 0);
  lex_stamp_.assign(g.lexemes.size(), 0);
  set_keys_.assign(64, 0);
  set_gen_.assign(64, 0);
  bool any_unique = false;
  unique_list_pos_.assign(g.dotted.size(), 0);
  for (size_t r = 0; r < g.rules.size(); ++r) {
    bool unique = false;
    for (Symbol s : g.rules[r].rhs)
      if (!is_terminal(s) && g.nt_check[s] >= 0 && g.checks[g.nt_check[s]].kind == CheckKind::UniqueItem) unique = true;
    for (uint32_t pos = g.rule_begin[r]; unique && pos <= g.rule_begin[r] + g.rules[r].rhs.size(); ++pos)
      unique_list_pos_[pos] = 1;
    any_unique |= unique;
  }
  if (!any_unique) unique_list_pos_.clear();
  reset();
}

void EarleyParser::reset() {
  for (Verdict& v : verdicts_) v.version = 0;
  for (KeysMemo& k : keys_memo_) k.version = 0;
  for (ExhaustMemo& m : exhaust_memo_) m.serial = 0;
  for (KeyContext& k : key_contexts_) k.serial = 0;
  left_ = LeftMemo{};
  items_.clear();
  rows_.clear();
  vetoes_.clear();
  vetoed_.clear();
  sibling_memo_.clear();
  memo_top_row_ = 0;
  ++gen_;
  set_count_ = 0;
  add_offset_ = 0;
  add(g_->rule_begin[0], 0);
  close_row(0, 0, 0);
}

void EarleyParser::grow_set() {
  size_t cap = set_keys_.size() * 2;
  set_keys_.assign(cap, 0);
  set_gen_.assign(cap, 0);
  ++gen_;
  set_count_ = 0;
  // Re-insert the items of the row being built.
  uint32_t begin = rows_.empty() ? 0 : rows_.back().end;
  std::vector<EarleyItem> cur(items_.begin() + begin, items_.end());
  items_.resize(begin);
  for (const EarleyItem& it : cur) add(it.pos, it.origin);
}

void EarleyParser::add(uint32_t pos, uint32_t origin) {
  // An item before a next_key / next_item rule: its check decides at once, and the item added is
  // the one after it (one item per key or value the row expects, not two). The earlier members
  // or items start at the item's origin, or, for a rule that begins with the check, at the origin
  // of the item that predicted it: a member rule shared by every place of its object's list.
  if (!g_->guard_check.empty())
    for (int32_t gc; (gc = g_->guard_check[pos]) >= 0; ++pos)
      if (!next_key_check(g_->checks[gc], g_->guard_first[pos] ? predicting_origin_ : origin, add_offset_)) {
        note_vetoed(pos);
        return;
      }
  if ((set_count_ + 1) * 2 > set_keys_.size()) grow_set();
  uint64_t key = (uint64_t(pos) << 32) | origin;
  size_t mask = set_keys_.size() - 1;
  // The product's top bits: they depend on the whole key. (Its bits 20-31 depended on the
  // origin alone, so a row's predictions, which share one origin, all probed one chain.)
  size_t h = static_cast<size_t>((key * 0x9e3779b97f4a7c15ull) >> (64 - __builtin_ctzll(set_keys_.size())));
  while (set_gen_[h] == gen_) {
    if (set_keys_[h] == key) return;
    h = (h + 1) & mask;
  }
  set_gen_[h] = gen_;
  set_keys_[h] = key;
  ++set_count_;
  // (Written in place: a pair built on the stack was read back as one 8-byte word over its two
  // 4-byte stores, a store-forwarding stall on every item a mask's walk adds.)
  EarleyItem& item = items_.emplace_back();
  item.pos = pos;
  item.origin = origin;
}

void EarleyParser::close_row(uint32_t row, uint32_t begin, uint32_t offset) {
  const Grammar& g = *g_;
  bool accepting = false, has_special = false;
  ++lex_gen_;
  ++close_gen_;  // row indices are reused after truncation; stamps are not
  add_offset_ = offset;
  allowed_.clear();
  for (size_t i = begin; i < items_.size(); ++i) {
    const EarleyItem it = items_[i];
    Symbol sym = g.dotted[it.pos];
    if (is_terminal(sym)) {
      uint32_t lex = symbol_index(sym);
      if (lex_stamp_[lex] != lex_gen_) {
        lex_stamp_[lex] = lex_gen_;
        allowed_.push_back(lex);
        has_special |= g.lexemes[lex].special;
      }
    } else if (Grammar::is_end(sym)) {
      uint32_t rule = sym & ~Grammar::kEndOfRule;
      uint32_t lhs = g.rules[rule].lhs;
      if (rule == 0 && it.origin == 0) accepting = true;
      if (it.origin == row) continue;  // nullable completions were advanced at prediction
      const int32_t ci = g.nt_check[lhs];
      const CompletionCheck* check = ci >= 0 ? &g.checks[ci] : nullptr;
      if (!check) {
        const uint64_t top = leo_top(it.origin, lhs);
        if (top != kNoLeo) {  // a deterministic chain of last-symbol completions: add its top only
          add(static_cast<uint32_t>(top >> 32), static_cast<uint32_t>(top));
          continue;
        }
      }
      const uint32_t from = rows_[it.origin].offset;
      const bool whole = check && (check->kind == CheckKind::ObjectKeys || check->kind == CheckKind::NotIn);
      if (whole && !whole_check(*check, from, offset)) continue;
      for_each_waiting(it.origin, lhs, [&](uint32_t j) {
        const EarleyItem prev = items_[j];
        if (check && !whole && !sibling_check(*check, prev.origin, it.origin, offset)) return;
        add(prev.pos + 1, prev.origin);
      });
    } else {
      // (No item waits on a next_key / next_item rule: add() steps over them.)
      if (predicted_[sym] != close_gen_) {
        predicted_[sym] = close_gen_;
        predicting_origin_ = it.origin;
        for (uint32_t k = g.nt_rules_begin[sym]; k < g.nt_rules_begin[sym + 1]; ++k)
          add(g.rule_begin[g.nt_rules[k]], row);
      }
      if (g.nullable[sym]) add(it.pos + 1, it.origin);
    }
  }
  std::sort(allowed_.begin(), allowed_.end());
  EarleyRow r{begin, static_cast<uint32_t>(items_.size()), offset, 0, accepting, has_special, ++next_serial_};
  r.lexer_start = close_vetoes(r);
  rows_.push_back(r);
  ticker_.tick(r.end - r.begin + 1);  // with the row pushed: a limit leaves a whole parser
}

// A dropped item's lexeme: the terminal after the checks its rule begins with. (A nonterminal
// there brings lexemes of its own: none is vetoed, they are just not expected.)
void EarleyParser::note_vetoed(uint32_t pos) {
  while (g_->guard_check[pos] >= 0) ++pos;
  const Symbol sym = g_->dotted[pos];
  if (is_terminal(sym)) vetoed_.push_back(symbol_index(sym));
}

// The row's vetoes: the dropped items' lexemes that no item of the row expects. Returns the
// row's lexer start state, which holds them (see vetoed_only).
uint32_t EarleyParser::close_vetoes(EarleyRow& r) {
  r.veto_begin = r.veto_end = static_cast<uint32_t>(vetoes_.size());
  if (vetoed_.empty()) return lexer_start_for(allowed_);
  std::sort(vetoed_.begin(), vetoed_.end());
  vetoed_.erase(std::unique(vetoed_.begin(), vetoed_.end()), vetoed_.end());
  for (uint32_t l : vetoed_)
    if (!std::binary_search(allowed_.begin(), allowed_.end(), l)) {
      vetoes_.push_back(l);
      r.veto_bits |= uint64_t(1) << (l & 63);
    }
  vetoed_.clear();
  r.veto_end = static_cast<uint32_t>(vetoes_.size());
  if (r.veto_end == r.veto_begin) return lexer_start_for(allowed_);
  start_lexemes_.clear();
  std::merge(allowed_.begin(), allowed_.end(), vetoes_.begin() + r.veto_begin, vetoes_.end(),
             std::back_inserter(start_lexemes_));
  return lexer_start_for(start_lexemes_);
}

// Leo's memo for right recursion: when row `row` holds exactly one item waiting on `sym`, and
// that item waits on its rule's last symbol (and neither rule has a completion check),
// completing `sym` there completes that rule at once, which may be the same case one row
// further down. The chain's top is memoized per row, so a list written as right recursion
// (`items -> item | item , items`) completes in O(1) per item instead of O(depth).
uint64_t EarleyParser::leo_top(uint32_t row, uint32_t sym) {
  const Grammar& g = *g_;
  leo_chain_.clear();  // (memo key, completed item) of the rows the chain goes through
  uint64_t top;
  for (;;) {
    const LeoKey key{rows_[row].serial, sym};
    if (const uint64_t* known = leo_find(key)) {
      top = *known;
      break;
    }
    const EarleyItem* only = nullptr;
    bool unique = true;
    for_each_waiting(row, sym, [&](uint32_t j) {
      unique &= only == nullptr;
      only = &items_[j];
    });
    if (!only || !unique || !Grammar::is_end(g.dotted[only->pos + 1])) {
      top = kNoLeo;  // not deterministic here: the usual completion
      leo_store(key, top);
      break;
    }
    const uint32_t rule = g.dotted[only->pos + 1] & ~Grammar::kEndOfRule;
    const uint32_t lhs = g.rules[rule].lhs;
    const uint64_t done = (uint64_t(only->pos + 1) << 32) | only->origin;
    if (g.nt_check[lhs] >= 0 || rule == 0 || only->origin >= row) {
      // A checked rule, the start rule (it sets `accepting`), or a rule begun in this same row:
      // the chain stops at its completion, which the usual completion then processes.
      top = done;
      leo_store(key, top);
      break;
    }
    leo_chain_.push_back({key, done});
    row = only->origin;
    sym = lhs;
  }
  for (size_t i = leo_chain_.size(); i-- > 0;) {
    if (top == kNoLeo) top = leo_chain_[i].second;  // the row below has no chain: stop here
    leo_store(leo_chain_[i].first, top);
  }
  return top;
}

const std::vector<uint64_t>& EarleyParser::row_index(uint32_t row) {
  const uint64_t serial = rows_[row].serial;
  for (RowIndex& ix : row_index_)
    if (ix.serial == serial) return ix.entries;
  RowIndex& ix = row_index_[next_row_index_++ % kRowIndexes];
  ix.serial = serial;
  ix.entries.clear();
  const EarleyRow& r = rows_[row];
  for (uint32_t j = r.begin; j < r.end; ++j) ix.entries.push_back((uint64_t(g_->dotted[items_[j].pos]) << 32) | j);
  std::sort(ix.entries.begin(), ix.entries.end());
  return ix.entries;
}

uint32_t EarleyParser::lexer_start_for(const std::vector<uint32_t>& lexemes) {
  constexpr size_t kSlots = 64;
  if (start_slots_.empty()) start_slots_.resize(kSlots);
  uint64_t h = 1469598103934665603ull ^ lexemes.size();
  for (uint32_t x : lexemes) h = (h ^ x) * 1099511628211ull;
  h |= 1;  // 0 marks an empty slot
  StartSlot& slot = start_slots_[(h ^ (h >> 29)) & (kSlots - 1)];
  if (slot.hash != h || slot.allowed != lexemes) {
    slot.state = lexer_->start_state(lexemes);
    slot.hash = h;
    slot.allowed = lexemes;
  }
  return slot.state;
}

bool EarleyParser::scan(const uint32_t* lexemes, size_t n, uint32_t offset) {
  const Grammar& g = *g_;
  ++lex_gen_;
  for (size_t i = 0; i < n; ++i) lex_stamp_[lexemes[i]] = lex_gen_;
  const EarleyRow top = rows_.back();
  uint32_t row = static_cast<uint32_t>(rows_.size());
  uint32_t begin = static_cast<uint32_t>(items_.size());
  ++gen_;
  set_count_ = 0;
  add_offset_ = offset;
  vetoed_.clear();
  ++close_gen_;  // a new text end for the next_key memo of the row
  for (uint32_t j = top.begin; j < top.end; ++j) {
    const EarleyItem it = items_[j];
    Symbol sym = g.dotted[it.pos];
    if (is_terminal(sym) && lex_stamp_[symbol_index(sym)] == lex_gen_) add(it.pos + 1, it.origin);
  }
  if (items_.size() == begin) return false;
  close_row(row, begin, offset);
  // A row that expects nothing and accepts nothing is a dead end: completion
  // checks vetoed every way on. Failing here rejects the byte that led to it.
  if (allowed_.empty() && !rows_.back().accepting) {
    truncate(rows_.size() - 1);
    return false;
  }
  return true;
}

int EarleyParser::special_lexeme_for(int32_t token) const {
  const EarleyRow& r = rows_.back();
  if (!r.has_special) return -1;
  for (uint32_t j = r.begin; j < r.end; ++j) {
    Symbol sym = g_->dotted[items_[j].pos];
    if (!is_terminal(sym)) continue;
    const LexemeSpec& l = g_->lexemes[symbol_index(sym)];
    if (l.special && std::binary_search(l.token_ids.begin(), l.token_ids.end(), token))
      return static_cast<int>(symbol_index(sym));
  }
  return -1;
}

void EarleyParser::add_allowed_specials(std::vector<int32_t>& out) const {
  const EarleyRow& r = rows_.back();
  if (!r.has_special) return;
  for (uint32_t j = r.begin; j < r.end; ++j) {
    Symbol sym = g_->dotted[items_[j].pos];
    if (!is_terminal(sym)) continue;
    const LexemeSpec& l = g_->lexemes[symbol_index(sym)];
    if (l.special) out.insert(out.end(), l.token_ids.begin(), l.token_ids.end());
  }
}

}  // namespace stencil
