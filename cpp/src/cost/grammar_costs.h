// The grammar's costs, found once per lexer epoch: the fewest tokens of each lexeme (a token
// search from its start state) and of each nonterminal (the least fixpoint over its rules), and
// per dotted rule position the tokens the rule's rest needs. RowCosts adds them up along the
// parser's rows.
#pragma once
#include <atomic>
#include <cstdint>
#include <vector>

#include "cost/lexeme_search.h"
#include "parser/earley.h"

namespace stencil {

struct GrammarCosts {
  GrammarCosts(const Grammar& g, LexemeSearch& search, std::atomic<size_t>& bytes);
  std::vector<uint32_t> lexeme_min;  // per lexeme (kInf: unknown, or past its search's work limit)
  std::vector<uint32_t> rest;        // per dotted position: tokens for the rule's symbols from there
  std::vector<uint32_t> rule_at;     // per dotted position: its rule
};

}  // namespace stencil
