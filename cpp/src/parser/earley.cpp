#include "parser/earley.h"

#include <algorithm>

#include "support/json_canon.h"

namespace stencil {

EarleyParser::EarleyParser(const Grammar& g, const Lexer& lexer) : g_(&g), lexer_(&lexer) {
  predicted_.assign(g.nonterminal_names.size(), 0);
  lex_stamp_.assign(g.lexemes.size(), 0);
  set_keys_.assign(64, 0);
  set_gen_.assign(64, 0);
  reset();
}

void EarleyParser::reset() {
  items_.clear();
  rows_.clear();
  ++gen_;
  set_count_ = 0;
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
  if ((set_count_ + 1) * 2 > set_keys_.size()) grow_set();
  uint64_t key = (uint64_t(pos) << 32) | origin;
  size_t mask = set_keys_.size() - 1;
  size_t h = static_cast<size_t>((key * 0x9e3779b97f4a7c15ull) >> 20) & mask;
  while (set_gen_[h] == gen_) {
    if (set_keys_[h] == key) return;
    h = (h + 1) & mask;
  }
  set_gen_[h] = gen_;
  set_keys_[h] = key;
  ++set_count_;
  items_.push_back({pos, origin});
}

void EarleyParser::close_row(uint32_t row, uint32_t begin, uint32_t offset) {
  const Grammar& g = *g_;
  bool accepting = false, has_special = false;
  ++lex_gen_;
  ++close_gen_;  // row indices are reused after truncation; stamps are not
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
      const uint32_t from = rows_[it.origin].offset;
      const bool whole = check && (check->kind == CheckKind::ObjectKeys || check->kind == CheckKind::NotIn);
      if (whole && !whole_check(*check, from, offset)) continue;
      const uint32_t o_begin = rows_[it.origin].begin, o_end = rows_[it.origin].end;
      for (uint32_t j = o_begin; j < o_end; ++j) {
        const EarleyItem prev = items_[j];
        if (g.dotted[prev.pos] != lhs) continue;
        if (check && !whole &&
            !sibling_check(*check, rows_[prev.origin].offset, from, offset))
          continue;
        add(prev.pos + 1, prev.origin);
      }
    } else {
      if (predicted_[sym] != close_gen_) {
        predicted_[sym] = close_gen_;
        for (uint32_t k = g.nt_rules_begin[sym]; k < g.nt_rules_begin[sym + 1]; ++k)
          add(g.rule_begin[g.nt_rules[k]], row);
      }
      if (g.nullable[sym]) add(it.pos + 1, it.origin);
    }
  }
  std::sort(allowed_.begin(), allowed_.end());
  EarleyRow r{begin, static_cast<uint32_t>(items_.size()), offset, 0, accepting, has_special};
  r.lexer_start = lexer_->start_state(allowed_);
  rows_.push_back(r);
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

// Checks on the completed text alone. An object (`{...}`): every required
// name present, the member count within bounds. A string: none of the names.
// Unreadable text vetoes (it cannot be checked).
bool EarleyParser::whole_check(const CompletionCheck& c, uint32_t from, uint32_t to) {
  if (!text_) return true;
  scratch_text_.clear();
  text_->text(from, to, scratch_text_);
  if (c.kind == CheckKind::NotIn) {
    std::string value;
    if (!canonical_value(scratch_text_, value) || value.empty() || value[0] != 's') return false;
    return !std::binary_search(c.names.begin(), c.names.end(), value.substr(1));
  }
  std::vector<std::string> keys;
  if (!object_keys(scratch_text_, keys)) return false;
  const int64_t n = static_cast<int64_t>(keys.size());
  if (n < c.min || (c.max >= 0 && n > c.max)) return false;
  std::sort(keys.begin(), keys.end());
  for (const std::string& name : c.names)
    if (!std::binary_search(keys.begin(), keys.end(), name)) return false;
  return true;
}

// The completed item [from, to) against its earlier siblings [siblings_from, from).
bool EarleyParser::sibling_check(const CompletionCheck& c, uint32_t siblings_from, uint32_t from, uint32_t to) {
  if (!text_ || siblings_from >= from) return true;
  scratch_text_.clear();
  text_->text(siblings_from, to, scratch_text_);
  std::string_view all(scratch_text_);
  std::string_view before = all.substr(0, from - siblings_from), item = all.substr(from - siblings_from);
  if (c.kind == CheckKind::UniqueItem) {
    std::string mine;
    std::vector<std::string> earlier;
    if (!canonical_value(item, mine) || !canonical_values(before, earlier)) return false;
    return std::find(earlier.begin(), earlier.end(), mine) == earlier.end();
  }
  std::vector<std::string> mine, earlier;
  if (!member_keys(item, mine) || mine.size() != 1 || !member_keys(before, earlier)) return false;
  return std::find(earlier.begin(), earlier.end(), mine[0]) == earlier.end();
}

}  // namespace stencil
