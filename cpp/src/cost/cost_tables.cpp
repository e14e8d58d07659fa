#include "cost/cost_tables.h"

#include <algorithm>

#include "lexer/lexer.h"
#include "stencil/vocabulary.h"
#include "support/deadline.h"
#include "support/token_bits.h"
#include "tokens/mask_cache.h"

namespace stencil {

CostTables::CostTables(const Grammar& g, const Lexer& lexer, const MaskCache& cache, const Vocabulary& vocab)
    : search(lexer, cache, vocab, g.lexemes.size(), bytes_),
      ceiling(search, bytes_),
      grammar(g, search, bytes_),
      state_costs_(bytes_),
      inner_steps_(bytes_),
      long_inner_(bytes_) {}

const cost::Costs& CostTables::lexer_costs(uint32_t state) {
  // Searched without the lock (another thread may search the same state meanwhile), one lexeme
  // at a time in the state holding it alone: a search for all of them at once would expand every
  // state of the free string beside a key until the key's last byte.
  return state_costs_.get(state, [&] {
    cost::Costs c;
    deadline::Ticker ticker;
    for (const LexemeCeiling::Pair& pair : ceiling.pairs(state)) {
      const uint32_t alone = pair.alone;
      cost::Costs found;
      if (pair.lexeme != LexemeCeiling::kNoLexeme) {
        // At most the distance in single bytes, which the ceilings take for a bound of every cost
        // inside the lexeme: read off the expressions, else searched for where the token search's
        // answer is over it (an answer that leans on a rest memoized by a search cut short). A
        // shortest distance drops by one along its path, so the least of the two stays consistent.
        uint32_t d =
            search.tokens_to_end(alone, pair.lexeme, LexemeSearch::kStateStates, LexemeSearch::kStateWork, ticker);
        d = std::min(d, pair.shortest);
        if (d > 1 && pair.shortest >= kInf && search.all_bytes()) d = std::min(d, search.shortest_bytes(alone));
        if (d < kInf) found.push_back({pair.lexeme, d});
      } else {
        search.bfs_to(alone, lexer().live_lexemes(alone), &found, LexemeSearch::kStateStates, ticker);
      }
      for (const auto& f : found) {
        auto it = std::lower_bound(c.begin(), c.end(), std::make_pair(f.first, 0u));
        if (it != c.end() && it->first == f.first)
          it->second = std::min(it->second, f.second);
        else
          c.insert(it, f);
      }
    }
    c.shrink_to_fit();
    return c;
  });
}

std::shared_ptr<const InnerSteps> CostTables::inner_steps(uint32_t state) {
  return inner_steps_.get(state, [&] {
    std::shared_ptr<const MaskEntry> keep;
    const MaskEntry* entry = search.cache().get(lexer(), search.vocab(), state, &keep);
    const size_t need = token_bits::words_for(search.vocab().vocab_size());
    return std::make_shared<const InnerSteps>(
        InnerSteps::of(lexer(), search.cache(), search.trie(), state, entry->inner().data(), need));
  });
}

const CostTables::LongTokens& CostTables::long_inner(uint32_t state, uint32_t bytes) {
  return long_inner_.get(uint64_t{state} << 32 | bytes, [&] {
    std::shared_ptr<const MaskEntry> keep;
    const MaskEntry* entry = search.cache().get(lexer(), search.vocab(), state, &keep);
    const std::vector<uint32_t>& inner = entry->inner();
    const std::vector<uint32_t>& longer = search.cache().tokens_of_at_least(search.vocab(), bytes);
    LongTokens out;
    for (size_t w = 0; w < longer.size() && w < inner.size(); ++w)
      for (uint32_t bits = longer[w] & inner[w]; bits; bits &= bits - 1) {
        const int32_t t = static_cast<int32_t>(w * 32 + static_cast<uint32_t>(__builtin_ctz(bits)));
        uint32_t s = state;
        for (char b : search.vocab().token_bytes(t)) {
          s = lexer().next(s, static_cast<uint8_t>(b));
          if (s == Lexer::kDead) break;
        }
        out.emplace_back(t, s);
      }
    out.shrink_to_fit();
    return out;
  });
}

}  // namespace stencil
