// LexemeSearch's coin problems: a string body counted in characters (a minLength or maxLength)
// and raw text up to a marker with a length, answered from the vocabulary's character counts
// instead of a search that expands each count with a walk of the trie.
#include <algorithm>
#include <string>

#include "cost/lexeme_search.h"
#include "lexer/lexer.h"
#include "stencil/vocabulary.h"
#include "support/heap_size.h"
#include "support/plain_text.h"
#include "tokens/mask_cache.h"
#include "tokens/plain_slice.h"

namespace stencil {

// A string body counted in characters (a minLength or maxLength): each count is a state of its
// own, and the search expands each with a walk of the trie (a 50-character string at its
// opening quote: 50 walks, 0.2 s). Every plain token of whole characters leads a count to the
// count past its characters, the same for every count, so the fewest tokens to any count is a coin
// problem over the vocabulary's character counts, solved once; then the tokens that end `rest`,
// or one token of characters and the closing quote at once (`abc"`, where a quote ends `rest`).
// A real tokenization (tokens that end inside a character are left out), and consistent: a plain
// token leads to a count one token nearer.
uint32_t LexemeSearch::text_to_end(uint32_t state, uint32_t lexeme, deadline::Ticker& ticker) {
  uint32_t k = 0, lo = 0, relaxed = Lexer::kDead, rest = Lexer::kDead;
  if (!lexer_.bounded_text_head(state, &k, &relaxed, &rest, &lo)) return loose_text_to_end(state, lexeme, ticker);
  if (lo > kMaxCount || !cache_.admits_bounded_plain(lexer_, state, &k)) return kInf;
  const uint32_t after = tokens_to_end(rest, lexeme, kStateStates, kStateWork, ticker);
  if (after >= kInf) return kInf;
  uint32_t best = cost::add(fewest_plain_tokens(lo, k, ByteSet()), after);
  const uint32_t closed = lexer_.next_tagged(rest, static_cast<uint8_t>('"'));
  if (closed != Lexer::kDead && ends_lexeme(closed & ~Lexer::kEndNowTag, lexeme)) {
    for (uint32_t m : vocab_.plain_slice().quoted_counts) {  // n characters, then m and the quote in one token
      if (m > k) break;
      best = std::min(best, cost::add(fewest_plain_tokens(lo > m ? lo - m : 0, k - m, ByteSet()), 1));
    }
  }
  return best;
}

// Raw text up to a marker, with a length (`\n? (C{lo,k} & ~(.*</p>.*)) \n? </p>`, a lazy lexeme:
// Lexer::loose_text_head). Plain tokens without the avoided bytes (the marker's first) move the
// count alone, so the coin problem over their character counts holds as above; then the path of
// `rest`, replayed where the count may stop (lo = 0), every byte checked. That replay succeeds
// from every such state (rest_path's check), so each count's answer is a real path and one
// token lowers it by one: consistent as above.
uint32_t LexemeSearch::loose_text_to_end(uint32_t state, uint32_t lexeme, deadline::Ticker& ticker) {
  Lexer::LooseTextHead h;
  if (!lexer_.loose_text_head(state, &h) || h.lo > kMaxCount) return kInf;
  const std::vector<int32_t>& tail = rest_paths_.get(h.rest, [&] { return rest_path(h.rest, lexeme, ticker); });
  if (tail.empty()) return kInf;
  if (h.lo == 0) return replay(state, lexeme, tail);
  return cost::add(fewest_plain_tokens(h.lo, h.k, h.avoid), static_cast<uint32_t>(tail.size()));
}

// The fewest tokens from `rest` to the lexeme's end as a path (empty: none known), where it can
// follow any head before it: for a lazy lexeme, no stretch of its text short of the last byte
// is a word of rest (else a head before it could end the lexeme inside the path).
std::vector<int32_t> LexemeSearch::rest_path(uint32_t rest, uint32_t lexeme, deadline::Ticker& ticker) {
  const uint32_t d = tokens_to_end(rest, lexeme, kStateStates, kStateWork, ticker);
  std::vector<int32_t> tokens = d < kInf ? memo_path(rest, lexeme, d) : std::vector<int32_t>();
  if (tokens.size() != d) return {};
  std::string text;
  for (int32_t t : tokens) text.append(vocab_.token_bytes(t));
  if (lexer_.has_lazy(rest))
    for (size_t i = 0; i + 1 < text.size(); ++i)
      for (uint32_t s = rest, j = static_cast<uint32_t>(i); j + 1 < text.size(); ++j) {
        if ((s = lexer_.next(s, static_cast<uint8_t>(text[j]))) == Lexer::kDead) break;
        if (ends_lexeme(s, lexeme)) return {};
      }
  return tokens;
}

// The character counts of plain tokens of whole characters without a byte of `avoid`, and the
// fewest of them for each sum found so far (PlainSlice::whole_counts where nothing is avoided).
LexemeSearch::Coins& LexemeSearch::coins(const ByteSet& avoid) {
  {
    std::shared_lock<std::shared_mutex> lock(plain_mu_);
    for (const auto& c : coins_)
      if (c->avoid == avoid) return *c;
  }
  auto made = std::make_unique<Coins>();
  made->avoid = avoid;
  const PlainSlice& slice = vocab_.plain_slice();
  if (avoid.empty()) {
    made->counts = slice.whole_counts;
  } else {
    for (uint32_t c = 1; c < 255 && c < slice.by_count.size(); ++c)
      for (int32_t id : slice.by_count[c]) {
        const std::string_view t = vocab_.token_bytes(id);
        int st = 0;
        for (size_t i = 0; i < t.size() && st >= 0; ++i)
          st = avoid.has(static_cast<uint8_t>(t[i])) ? -1 : plain_text_step(st, static_cast<uint8_t>(t[i]));
        if (st != 0) continue;  // (a byte avoided, or a character cut)
        made->counts.push_back(c);
        break;
      }
  }
  made->fewest.push_back(0);
  std::unique_lock<std::shared_mutex> lock(plain_mu_);
  for (const auto& c : coins_)
    if (c->avoid == avoid) return *c;
  bytes_.fetch_add(heap::of(made->counts) + heap::of(made->fewest) + sizeof(Coins), std::memory_order_relaxed);
  coins_.push_back(std::move(made));
  return *coins_.back();
}

// The fewest plain tokens (none with a byte of `avoid`) for lo to k characters: the best count
// lies within the longest token's characters past lo (a sum past that, less its last token, is
// still at least lo).
uint32_t LexemeSearch::fewest_plain_tokens(uint32_t lo, uint32_t k, const ByteSet& avoid) {
  Coins& c = coins(avoid);
  const uint32_t longest = c.counts.empty() ? 0 : c.counts.back();
  uint32_t best = kInf;
  for (uint32_t n = lo; n <= lo + longest && n <= k; ++n) best = std::min(best, plain_tokens_for(n, c));
  return best;
}

// With j characters still needed and the slack w = k - lo fixed (each character written lowers
// both bounds), the fewest for the count left is fewest_plain_tokens(j, j + w); the answer is
// their maximum over j <= lo, kept as prefix maxima per slack (the counts of one string share it).
uint32_t LexemeSearch::most_plain_tokens(uint32_t lo, uint32_t k) {
  if (lo == 0) return 0;
  if (lo > kMaxCeilingCount || k < lo) return kInf;
  const uint32_t slack = k == kUnbounded ? kUnbounded : k - lo;
  std::vector<uint32_t> most;  // (the maxima kept so far, grown below where lo is past them)
  {
    std::shared_lock<std::shared_mutex> lock(plain_mu_);
    auto it = most_by_slack_.find(slack);
    if (it != most_by_slack_.end()) {
      if (lo < it->second.size()) return it->second[lo];
      most = it->second;
    }
  }
  if (most.empty()) most.push_back(0);  // j = 0: nothing needed
  while (most.size() <= lo) {
    const uint32_t j = static_cast<uint32_t>(most.size());
    const uint32_t upto = slack == kUnbounded ? kUnbounded : j + slack;
    most.push_back(std::max(most.back(), fewest_plain_tokens(j, upto, ByteSet())));
  }
  const uint32_t r = most[lo];
  std::unique_lock<std::shared_mutex> lock(plain_mu_);
  std::vector<uint32_t>& kept = most_by_slack_[slack];
  if (kept.size() < most.size()) {
    bytes_ += (most.capacity() - kept.capacity()) * sizeof(uint32_t);
    kept = std::move(most);
  }
  return r;
}

uint32_t LexemeSearch::plain_tokens_for(uint32_t n, Coins& c) {
  {
    std::shared_lock<std::shared_mutex> lock(plain_mu_);
    if (n < c.fewest.size()) return c.fewest[n];
  }
  std::unique_lock<std::shared_mutex> lock(plain_mu_);
  const size_t before = c.fewest.capacity();
  while (c.fewest.size() <= n) {
    const uint32_t m = static_cast<uint32_t>(c.fewest.size());
    uint32_t best = kInf;
    for (uint32_t k : c.counts) {
      if (k > m) break;
      best = std::min(best, cost::add(c.fewest[m - k], 1));
    }
    c.fewest.push_back(best);
  }
  bytes_.fetch_add((c.fewest.capacity() - before) * 4, std::memory_order_relaxed);
  return c.fewest[n];
}

}  // namespace stencil
