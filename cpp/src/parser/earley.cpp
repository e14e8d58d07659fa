#include "parser/earley.h"

#include <algorithm>

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
  close_row(0, 0);
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

void EarleyParser::close_row(uint32_t row, uint32_t begin) {
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
      const EarleyRow& o = rows_[it.origin];
      for (uint32_t j = o.begin; j < o.end; ++j) {
        const EarleyItem prev = items_[j];
        if (g.dotted[prev.pos] == lhs) add(prev.pos + 1, prev.origin);
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
  EarleyRow r{begin, static_cast<uint32_t>(items_.size()), 0, accepting, has_special};
  r.lexer_start = lexer_->start_state(allowed_);
  rows_.push_back(r);
}

bool EarleyParser::scan(const uint32_t* lexemes, size_t n) {
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
  close_row(row, begin);
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
