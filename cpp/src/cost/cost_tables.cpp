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
      long_inner_(bytes_),
      sticky_(bytes_),
      held_paths_(bytes_),
      held_costs_(bytes_) {}

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
        // A state a loop's part holds: the part's path serves, no search of its own (an unanchored
        // pattern's run makes a state per count, and each one's search was cut short), with what
        // the searches memoized (their paths pass such states) and the distance in single bytes,
        // which every cost is at most (the searches' are, below): consistent all together.
        uint32_t d = held_cost(alone, pair.lexeme);
        if (d < kInf) {
          d = std::min(d, search.known_to_end(alone, pair.lexeme, ticker));
          if (d > 1 && search.all_bytes()) d = std::min(d, search.shortest_bytes(alone));
        } else {
          d = search.tokens_to_end(alone, pair.lexeme, LexemeSearch::kStateStates, LexemeSearch::kStateWork, ticker);
        }
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

namespace {
// held_cost's prefixes: the rest of a character begun (a \u escape's five bytes, UTF-8's three).
constexpr uint32_t kHeldPrefix = 8;
const std::vector<int32_t> kNoPath{-1};

// Whether `tokens` read from s stay inside the lexeme and end it.
bool reads_to_end(const LexemeSearch& search, uint32_t s, uint32_t lexeme, const int32_t* tokens, size_t n) {
  for (size_t i = 0; i < n && s != Lexer::kDead; ++i) s = search.read_token(s, tokens[i]);
  return s != Lexer::kDead && search.ends_lexeme(s, lexeme);
}
}  // namespace

const std::vector<int32_t>& CostTables::held_path(uint32_t part, uint32_t head, uint32_t lexeme) {
  if (const std::vector<int32_t>* known = held_paths_.find(part)) return *known;
  deadline::Ticker ticker;
  const uint32_t d = search.tokens_to_end(part, lexeme, LexemeSearch::kStateStates, LexemeSearch::kStateWork, ticker);
  std::vector<int32_t> path;
  if (d >= kInf || !search.memo_tokens(part, lexeme, &path) || path.size() != d) path = kNoPath;
  // Each token but the last whole words of the loop (it leads the head back to itself): the state
  // after it holds the part again, and the rest of the path serves it (held_cost's consistency).
  for (size_t i = 0; i + 1 < path.size(); ++i)
    if (search.read_token(head, path[i]) != head) {
      path = kNoPath;
      break;
    }
  path.shrink_to_fit();
  return held_paths_.put(part, std::move(path));
}

uint32_t CostTables::held_cost(uint32_t alone, uint32_t lexeme, int depth, bool* cut) {
  if (const uint32_t* known = held_costs_.find(alone)) return *known;
  if (depth > static_cast<int>(kHeldPrefix)) {
    if (cut) *cut = true;
    return kInf;
  }
  uint32_t best = kInf;
  bool cut_below = false;
  std::vector<std::pair<uint32_t, uint32_t>> begun;  // (part, rest before it) of a character begun
  for (const Lexer::HeldPart& h : lexer().held_parts(alone, kHeldPrefix)) {
    if (h.lexeme != lexeme) continue;
    if (h.prefix > 0) {
      begun.push_back({h.part, h.prefix});
      continue;
    }
    const std::vector<int32_t>& path = held_path(h.part, h.head, lexeme);
    if (path == kNoPath) continue;
    // The shortest suffix that reads to the end from here (the longer a run already written, the
    // more of the path it skips): one token of it leads to a state the next suffix serves.
    for (size_t k = path.size() + 1; k-- > 0 && path.size() - k < best;)
      if (reads_to_end(search, alone, lexeme, path.data() + k, path.size() - k)) {
        best = static_cast<uint32_t>(path.size() - k);
        break;
      }
  }
  if (best >= kInf && !begun.empty() && search.all_bytes()) {
    // In a character begun (no part held yet): one single-byte token on (a byte of each class, its
    // token), where it shortens the rest before a part, the least of those.
    const LexemeSearch::ByteSteps& steps = search.byte_steps();
    for (size_t c = 0; c < steps.rep.size(); ++c) {
      if (steps.rep[c] < 0) continue;
      const uint32_t t = lexer().next_tagged(alone, static_cast<uint8_t>(steps.rep[c]));
      if (t == Lexer::kDead || (t & Lexer::kEndNowTag)) continue;
      bool nearer = false;
      for (const Lexer::HeldPart& h : lexer().held_parts(t, kHeldPrefix))
        for (const auto& [part, rest] : begun)
          nearer = nearer || (h.lexeme == lexeme && h.part == part && h.prefix < rest);
      if (nearer) best = std::min(best, cost::add(1, held_cost(t, lexeme, depth + 1, &cut_below)));
    }
  }
  if (cut_below) {  // (not memoized: asked nearer the top, a deeper state may serve)
    if (cut) *cut = true;
    return best;
  }
  return held_costs_.put(alone, best);
}

uint64_t CostTables::sticky(uint32_t state) {
  return sticky_.get(state, [&] {
    for (const Lexer::HeldPart& h : lexer().held_parts(state, 0)) {
      if (h.completion > 0 && !search.all_bytes()) continue;  // (the completion is in single bytes)
      const std::vector<int32_t>& path = held_path(h.part, h.head, h.lexeme);
      if (path == kNoPath) continue;
      // Every state a token leads to costs at most completion + the path (held_cost); the part's
      // own cost, which the caller adds, may be below its path (a bound met elsewhere).
      uint32_t own = kInf;
      for (const auto& [l, c] : lexer_costs(h.part))
        if (l == h.lexeme) own = c;
      if (own > path.size()) continue;
      std::shared_ptr<const MaskEntry> keep, keep_head;
      const std::vector<uint32_t>& inner = search.cache().get(lexer(), search.vocab(), state, &keep)->inner();
      const std::vector<uint32_t>& loop = search.cache().get(lexer(), search.vocab(), h.head, &keep_head)->inner();
      bool within = true;
      for (size_t w = 0; w < inner.size() && within; ++w) within = (inner[w] & ~(w < loop.size() ? loop[w] : 0u)) == 0;
      if (!within) continue;
      return uint64_t{h.part} << 32 | (h.completion + static_cast<uint32_t>(path.size()) - own);
    }
    return kNoSticky;
  });
}

}  // namespace stencil
