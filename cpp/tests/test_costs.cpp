// cost/: every bound of the budget's cost room against exhaustive search, on tiny random grammars
// and vocabularies (cost/README.md states the bounds). Per lexeme, LexemeSearch::tokens_to_end is
// at least the fewest tokens that end the lexeme (a breadth-first search over token sequences)
// and consistent (from d > 0 some token leads to d - 1), LexemeCeiling's ceilings hold every
// state the lexeme reaches, and Lexer::pair_bytes' bounds hold the byte distances. Per matcher
// state along the texts the vocabulary reaches, min_completion_tokens is at least the fewest
// tokens that finish the output (exact where every byte is a token and no longer token is
// there), consistent, and fill_mask_within keeps exactly the tokens whose cost after fits, also
// where a token limit has the budget walk the whole trie.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "check.h"
#include "cost/cost_tables.h"
#include "lexer/lexer.h"
#include "matcher/lexer_epoch.h"
#include "stencil/compiled_grammar.h"
#include "stencil/grammar.h"
#include "stencil/matcher.h"
#include "stencil/vocabulary.h"
#include "test_rng.h"
#include "tokens/trie.h"

using stencil::CostTables;
using stencil::ExprId;
using stencil::GrammarBuilder;
using stencil::LexemeSearch;
using stencil::Lexer;
using stencil::Symbol;

using stencil_test::Rng;

namespace {

constexpr uint32_t kInf = stencil::cost::kInf;

// A random non-empty-word expression over "ab": literals, ranges, concatenations, unions, counts.
ExprId random_expr(GrammarBuilder& b, Rng& r, int depth) {
  const uint32_t kind = depth <= 0 ? r.below(2) : r.below(5);
  if (kind == 0) {
    std::string s;
    for (uint32_t i = 0, n = 1 + r.below(2); i < n; ++i) s += static_cast<char>('a' + r.below(2));
    return b.re_literal(s);
  }
  if (kind == 1) return r.below(2) ? b.re_byte_ranges({{'a', 'b'}}) : b.re_byte_ranges({{'a', 'a'}});
  if (kind == 2) return b.re_concat({random_expr(b, r, depth - 1), random_expr(b, r, depth - 1)});
  if (kind == 3) return b.re_or({random_expr(b, r, depth - 1), random_expr(b, r, depth - 1)});
  const int64_t lo = r.below(3);
  return b.re_repeat(random_expr(b, r, depth - 1), lo, r.below(3) == 0 ? -1 : lo + 1 + r.below(3));
}

ExprId word(GrammarBuilder& b, Rng& r) {
  const ExprId e = random_expr(b, r, 3);
  return b.re_nullable(e) ? b.re_concat({e, b.re_literal("b")}) : e;
}

// Case's `escapes`: P & C{0,k}, with C a letter or `\\` and a letter and P one flat concatenation
// whose escapes are cut in two.
ExprId escaped_pattern(GrammarBuilder& b, Rng& r, bool two_lengths) {
  const ExprId letter = b.re_byte_ranges({{'a', 'b'}}), slash = b.re_literal("\\");
  const ExprId ch = b.re_or({letter, b.re_concat({slash, letter})});
  // (one flat concatenation: an escape's `\` and its letter are parts of their own, as a
  // pattern's JSON text is; runs of letters keep the whole infinite)
  std::vector<ExprId> parts;
  for (uint32_t i = 0, n = 2 + r.below(3); i < n; ++i) {
    const uint32_t kind = r.below(3);
    if (kind == 0) parts.push_back(random_expr(b, r, 1));
    if (kind == 1) parts.push_back(b.re_repeat(letter, 0, -1));
    parts.push_back(slash);
    // (a letter, a short run, or a letter or a second `\`: words outside C*, where the
    // intersection keeps only the others and P's own ceiling no longer bounds them)
    const uint32_t next = r.below(3);
    parts.push_back(next == 0 ? letter : next == 1 ? random_expr(b, r, 0) : b.re_or({letter, slash}));
  }
  const int64_t k = 2 + r.below(20);
  if (!two_lengths) return b.re_and({b.re_concat(parts), b.re_repeat(ch, 0, k)});
  // (a second length, as a format's own beside a maxLength: tighter or looser, a minimum or none)
  const int64_t lo = r.below(2) ? 0 : 2 + r.below(6), hi = std::max<int64_t>(lo + 1, k - 10 + r.below(21));
  return b.re_and({b.re_concat(parts), b.re_repeat(ch, 0, k), b.re_repeat(ch, lo, hi)});
}

// Case's `unanchored`: `C* P C*`, with C a letter or `\\` and a letter, P a run of a letter (short,
// which texts of a few bytes finish, or long, over the byte ceilings) or a random part.
ExprId unanchored_pattern(GrammarBuilder& b, Rng& r) {
  const ExprId letter = b.re_byte_ranges({{'a', 'b'}});
  const ExprId loop = b.re_repeat(b.re_or({letter, b.re_concat({b.re_literal("\\"), letter})}), 0, -1);
  const int64_t lo = r.below(2) ? 1 + r.below(4) : 6 + r.below(10);
  const ExprId run = b.re_byte_ranges({{'a', static_cast<uint32_t>('a' + r.below(2))}});
  const ExprId part = r.below(3) ? b.re_repeat(run, lo, r.below(2) ? lo : lo + 1 + r.below(3)) : random_expr(b, r, 1);
  return b.re_concat({loop, part, loop});
}

// Case's `complements`: a free key beside pattern keys or a pattern beside an enum's values,
// `(C* & ~f [& ~g]) b`, `(C* P & ~f) b`, `P & C* & ~(c Q)` (no word of P starts as one of the
// complement's), `((P C* | C* Q C* | C* R [| c a{12,14}]) & ~f) b`, `P C* & ~f`, `(C* P C* & C* Q
// C* [& C* R] [& ~f]) b`, `(C* & ~(C* P C*) [& ~(Q C*)]) b`, `(C* & ~(C* P) & ~f) b` or `P & Q R
// C*` (a pattern `^QR` beside a format), with C [ab] or
// [abc] and f, g, P, Q, R random over "ab": with C [abc], `c` kills every f
// (Lexer::complement_ceiling), with [ab] only a finite f's longest word does.
ExprId complement_pattern(GrammarBuilder& b, Rng& r) {
  const ExprId star = b.re_repeat(b.re_byte_ranges({{'a', static_cast<uint32_t>(r.below(2) ? 'c' : 'b')}}), 0, -1);
  const ExprId f = b.re_not(random_expr(b, r, 2));
  switch (r.below(9)) {
    case 0:
      return b.re_concat(
          {r.below(2) ? b.re_and({star, f}) : b.re_and({star, f, b.re_not(random_expr(b, r, 2))}), b.re_literal("b")});
    case 1:
      return b.re_concat({b.re_and({b.re_concat({star, random_expr(b, r, 1)}), f}), b.re_literal("b")});
    case 2:
      return b.re_and({word(b, r), star, b.re_not(b.re_concat({b.re_literal("c"), random_expr(b, r, 1)}))});
    case 3: {  // alternatives that each reach C* (Lexer::absorbing): `^ab|ba|b$` unanchored inside
      std::vector<ExprId> alts{b.re_concat({random_expr(b, r, 1), star}),
                               b.re_concat({star, random_expr(b, r, 1), star}),
                               b.re_concat({star, random_expr(b, r, 1)})};
      // (and one that never does, alone after a `c` outside C, beside a short finite f: no
      // bound then, where the others' would be short)
      const bool other = r.below(2);
      if (other) alts.push_back(b.re_concat({b.re_literal("c"), b.re_repeat(b.re_literal("a"), 12, 14)}));
      return b.re_concat({b.re_and({b.re_or(alts), other ? b.re_not(b.re_literal("ab")) : f}), b.re_literal("b")});
    }
    case 4:  // a word before C*: its rest first
      return b.re_and({b.re_concat({word(b, r), star}), f});
    case 5: {  // overlapping unanchored pattern keys: each pattern's shortest word in turn
      std::vector<ExprId> parts{b.re_concat({star, word(b, r), star}), b.re_concat({star, word(b, r), star})};
      if (r.below(2)) parts.push_back(b.re_concat({star, word(b, r)}));  // (one anchored at its end)
      if (r.below(2)) parts.push_back(f);
      return b.re_concat({b.re_and(parts), b.re_literal("b")});
    }
    case 6: {  // a free key beside unanchored pattern keys: what lives is in none of them yet
      std::vector<ExprId> parts{star, b.re_not(b.re_concat({star, word(b, r), star}))};
      if (r.below(2)) parts.push_back(b.re_not(b.re_concat({word(b, r), star})));
      return b.re_concat({b.re_and(parts), b.re_literal("b")});
    }
    case 7:  // a free key beside suffix patterns (`_Localised$`): what ends on a byte none ends on
      return b.re_concat({b.re_and({star, b.re_not(b.re_concat({star, word(b, r)})), f}), b.re_literal("b")});
    default:  // a pattern `^w` beside a format: w's rest, then P's ceiling
      return b.re_and({word(b, r), b.re_concat({random_expr(b, r, 0), random_expr(b, r, 0), star})});
  }
}

// Case's rules: lists of x, or two y's, between punctuation (with `free_key`, y beside x and a
// third lexeme z that holds y's words; the start symbol).
Symbol rules(GrammarBuilder& b, Rng& r, ExprId xe, bool marker, uint32_t token_limit, bool free_key) {
  const ExprId letters = b.re_repeat(b.re_byte_ranges({{'a', 'b'}}), 1, -1);
  const ExprId ye = free_key ? b.re_and({letters, b.re_not(xe)}) : word(b, r);
  const Symbol x = b.lexeme(xe, "x", marker, token_limit), y = b.lexeme(ye, "y", false);
  const Symbol comma = b.literal(",", "comma"), dot = b.literal(".", "dot");
  const Symbol list = b.rule("list"), start = b.rule("start");
  b.add_alternative(list, {x});
  b.add_alternative(list, {x, comma, list});
  b.add_alternative(start, {list, dot});
  b.add_alternative(start, {y, comma, y, dot});
  if (free_key) {
    const Symbol z = b.lexeme(letters, "z", false);
    b.add_alternative(start, {z, comma, z, comma, z, dot});
  }
  return start;
}

// One case: a grammar of two random lexemes between punctuation, optional spaces as an ignored
// lexeme, and a vocabulary of EOS (id 0), single bytes and random longer tokens.
struct Case {
  std::shared_ptr<const stencil::CompiledGrammar> grammar;
  std::vector<std::string> tokens;
  bool exact = false;      // every byte a token, no longer token: the bounds are the fewest tokens
  bool all_bytes = false;  // every byte a token
  uint64_t seed;
  size_t lexemes = 0;
  // `marker`: x is raw text up to a marker (a lazy lexeme, `\n? (C{lo,k} & ~(.*M.*)) \n? M`, as a
  // tool call's raw parameter with a length), over an alphabet with the marker's bytes and a
  // newline: answered by the coin problem of text avoiding the marker's first byte
  // (LexemeSearch::loose_text_to_end) where Lexer::loose_text_head reads it.
  // `long_bounds`: x followed by a count of a random part, 16 to 40 more than its minimum (none, 1
  // to 4, or 16 to 23) or exactly 16 to 23, as a long maxLength or a pattern's count: searched
  // from its states with the count lifted (LexemeSearch::relaxed_to_end), whose path must fit it.
  // `escapes` (1, or 2 with a second length beside: `P & C{0,k} & C{lo,h}`): x is a pattern P
  // beside a length, `P & C{0,k}`, where a character C is a letter
  // or `\` and a letter (an escape, as in a JSON string body) and P's parts cut escapes in two
  // (`a`, `\`, `b`...): the pair ceiling then reads P's words as strings of C across its parts
  // (Lexer::words_of), and must hold on the states `\` leads to.
  std::string alphabet = "ab,. ";
  std::string walk_bytes = "ab";  // the bytes the states checked are reached by
  // `token_limit`: x spans at most that many tokens (none where 0): a limit no text here reaches,
  // which makes the budget walk the whole trie (TrieCosts) instead of taking the mask walk's reports.
  // `unanchored`: x is `C* P C*` with C a letter or `\` and a letter (an unanchored pattern in a
  // JSON string body: a loop whose part every state holds, CostTables::held_cost), P a run of a
  // letter or a random part: tokens cut escapes in two, and the costs come from the part's path.
  // `free_key`: y is a free key beside x, `[ab]{1,} & ~x`, and a third lexeme z any such word
  // (`[ab]{1,}`, three of them to a text): y's words lie within z's, so z's ceiling bounds both
  // (LexemeCeiling::cover), where y alone has none (a complement).
  // `complements`: x is an intersection with complements (complement_pattern), over an alphabet
  // with `c`, which the states checked are reached by too.
  explicit Case(uint64_t seed_, bool long_bounds = false, bool marker = false, uint32_t token_limit = 0,
                int escapes = 0, bool unanchored = false, bool free_key = false, bool complements = false)
      : seed(seed_) {
    Rng r{seed * 0x9E3779B97F4A7C15ull + 1};
    GrammarBuilder b;
    b.ignore(b.re_literal(" "), "ws", true, false);
    ExprId xe = word(b, r);
    if (long_bounds) {
      // no minimum, a short one, one past the lifted bounds, an exact count (whose lifted paths
      // may overshoot it: the replay must refuse them)
      const uint32_t kind = r.below(4);
      const int64_t lo = kind == 0 ? 0 : kind == 1 ? 1 + r.below(4) : 16 + r.below(8);
      const int64_t hi = kind == 3 ? lo : lo + 16 + r.below(25);
      // (an exact count of a single byte, as `\d{20}`: of a random part its states explode)
      const ExprId part =
          kind == 3 ? b.re_byte_ranges({{'a', static_cast<uint32_t>('a' + r.below(2))}}) : random_expr(b, r, 1);
      xe = b.re_concat({xe, b.re_repeat(part, lo, hi)});
    }
    if (marker) {
      std::string m(1, r.below(3) ? '<' : 'a');  // (a marker starting with a letter: text avoids it)
      for (uint32_t i = 0, n = 1 + r.below(2); i < n; ++i) m += "ab<"[r.below(3)];
      // (a third of them with a pattern beside the length, past the bounds a search lifts:
      // LexemeSearch::relaxed_to_end through the complement, Lexer::lifted_state)
      const bool pattern = r.below(3) == 0;
      const int64_t lo = r.below(4), hi = pattern ? lo + 16 + r.below(25) : r.below(3) == 0 ? -1 : lo + r.below(6);
      const ExprId any = b.re_any_string();
      std::vector<ExprId> parts{any, b.re_not(b.re_concat({any, b.re_literal(m), any})),
                                b.re_repeat(b.re_char_ranges({{0, 0x10FFFF}}, false), lo, hi)};
      if (pattern) parts.push_back(b.re_repeat(random_expr(b, r, 1), 0, -1));
      ExprId text = b.re_and(parts);
      const ExprId nl = b.re_repeat(b.re_literal("\n"), 0, 1);
      if (r.below(4)) text = b.re_concat({nl, text, nl});
      xe = b.re_concat({text, b.re_literal(m)});
      alphabet = "ab<\n,. ";
    }
    if (escapes) {
      xe = escaped_pattern(b, r, escapes == 2);
      alphabet = "ab\\,. ";
      walk_bytes = "ab\\";
    }
    if (complements) {
      xe = complement_pattern(b, r);
      alphabet = "abc,. ";
      walk_bytes = "abc";
    }
    if (unanchored) {
      xe = unanchored_pattern(b, r);
      alphabet = "ab\\,. ";
      walk_bytes = "ab\\";
    }
    // (with a limit, x ends in a run of a-f, a bucket of CharSummary's: sub-tries of a and b then
    // stay in its state, and the walk takes them at once)
    if (token_limit) xe = b.re_concat({xe, b.re_repeat(b.re_byte_ranges({{'a', 'f'}}), 0, -1)});
    auto g = b.build(rules(b, r, xe, marker, token_limit, free_key));
    lexemes = g->lexemes.size();
    const uint32_t shape = r.below(3);  // 0: single bytes; 1: and longer tokens; 2: longer, a byte missing
    exact = shape == 0;
    all_bytes = shape != 2;
    tokens.push_back("<eos>");
    for (char c : alphabet)
      if (shape != 2 || c != 'b') tokens.push_back(std::string(1, c));
    // a byte no expression names: every byte class of the lexer then has a token of one byte,
    // which the bounds read off expressions (Lexer::pair_bytes) need
    if (shape != 2) tokens.push_back("x");
    std::set<std::string> longer;
    while (shape != 0 && longer.size() < 10) {
      std::string t;
      for (uint32_t i = 0, n = 2 + r.below(2); i < n; ++i) t += alphabet[r.below(alphabet.size() - 1)];
      longer.insert(t);
    }
    tokens.insert(tokens.end(), longer.begin(), longer.end());
    auto vocab = std::make_shared<stencil::Vocabulary>(tokens, std::vector<int32_t>{0}, std::vector<int32_t>{0},
                                                       static_cast<int32_t>(tokens.size()));
    grammar = std::make_shared<stencil::CompiledGrammar>(std::move(g), std::move(vocab));
  }
  // The tokens that are single bytes (EOS kept first, as fewest_to_end skips it).
  std::vector<std::string> single_bytes() const {
    std::vector<std::string> out{tokens[0]};
    for (size_t t = 1; t < tokens.size(); ++t)
      if (tokens[t].size() == 1) out.push_back(tokens[t]);
    return out;
  }
  std::shared_ptr<CostTables> tables() const {
    return grammar->epoch()->cost_tables(grammar->grammar(), grammar->vocab());
  }
};

// The fewest tokens from lexer state s to an end of lexeme l, each token inside the lexeme (no
// byte after one that ends it at once), by breadth-first search over states (kInf: none within
// `depth` tokens, so a bound of kInf or more than `depth` agrees with it).
uint32_t fewest_to_end(const Lexer& lx, const std::vector<std::string>& tokens, uint32_t s, uint32_t l, int depth) {
  auto ends = [&](uint32_t u) {
    const auto& acc = lx.state(u).accepting;
    return std::binary_search(acc.begin(), acc.end(), l);
  };
  std::map<uint32_t, uint32_t> dist{{s, 0}};
  std::vector<uint32_t> frontier{s};
  if (ends(s)) return 0;
  for (uint32_t d = 1; d <= static_cast<uint32_t>(depth) && !frontier.empty(); ++d) {
    std::vector<uint32_t> next;
    for (uint32_t u : frontier)
      for (size_t t = 1; t < tokens.size(); ++t) {
        uint32_t v = u;
        for (size_t i = 0; i < tokens[t].size() && v != Lexer::kDead; ++i) {
          if (lx.state(v).end_now)
            v = Lexer::kDead;
          else
            v = lx.next(v, static_cast<uint8_t>(tokens[t][i]));
        }
        if (v == Lexer::kDead || !dist.emplace(v, d).second) continue;
        if (ends(v)) return d;
        next.push_back(v);
      }
    frontier.swap(next);
  }
  return kInf;
}

// Whether a bound is at least the fewest tokens fewest_to_end found within `depth` (kInf: more).
bool at_least(uint32_t bound, uint32_t fewest, uint32_t depth = 8) {
  return fewest < kInf ? bound >= fewest : bound > depth;
}

// The lexer states byte strings (over `bytes`) of up to `depth` bytes lead s to inside its
// lexeme, s included.
std::vector<uint32_t> reached(const Lexer& lx, uint32_t s, int depth, const std::string& bytes = "ab") {
  std::vector<uint32_t> out{s};
  std::set<uint32_t> seen{s};
  for (size_t h = 0, level_end = 1; h < out.size() && depth > 0; ++h) {
    if (!lx.state(out[h]).end_now)
      for (char c : bytes) {
        const uint32_t v = lx.next(out[h], static_cast<uint8_t>(c));
        if (v != Lexer::kDead && seen.insert(v).second) out.push_back(v);
      }
    if (h + 1 == level_end) {
      level_end = out.size();
      --depth;
    }
  }
  return out;
}

}  // namespace

namespace {

struct Counts {
  size_t states = 0, ceilings = 0, pair_ceilings = 0, words = 0, short_ceilings = 0;
  size_t ceiling_bytes = 0;  // the pair ceilings' sum
};

// Whether some token inside the lexeme leads s to a state that `search` costs at most d - 1 (or
// that ends the lexeme): the consistency of a distance d > 0.
bool goes_nearer(LexemeSearch& search, const Case& c, uint32_t s, uint32_t l, uint32_t d, uint32_t work) {
  const Lexer& lx = search.lexer();
  stencil::deadline::Ticker ticker;
  for (size_t t = 1; t < c.tokens.size(); ++t) {
    uint32_t v = s;
    for (char ch : c.tokens[t])
      v = v == Lexer::kDead || lx.state(v).end_now ? Lexer::kDead : lx.next(v, static_cast<uint8_t>(ch));
    if (v == Lexer::kDead) continue;
    const auto& acc = lx.state(v).accepting;
    if (std::binary_search(acc.begin(), acc.end(), l) || search.tokens_to_end(v, l, kInf, work, ticker) <= d - 1)
      return true;
  }
  return false;
}

// One lexer state s of lexeme l: the token search's distance (and, in `cut`, the same search
// with no work allowed: the path in single bytes cut into tokens), at least the fewest tokens
// (the fewest where every token is a byte) and consistent; the ceilings above what every state
// reachable inside the lexeme costs; the expression's bounds of its pairs.
void check_state(const Case& c, CostTables& t, LexemeSearch& cut, uint32_t s, uint32_t l, Counts& n) {
  const Lexer& lx = t.lexer();
  const std::string at = "seed " + std::to_string(c.seed) + " lexeme " + std::to_string(l) + ": ";
  const uint32_t truth = fewest_to_end(lx, c.tokens, s, l, 8);
  stencil::deadline::Ticker ticker;
  ++n.states;
  // where the lexeme's rest is one string (a key), its fewest tokens whatever the vocabulary
  std::string word;
  const bool one_word = lx.word_of(s, l, &word, 64) && truth < kInf;
  n.words += one_word;
  for (auto [search, work] : {std::pair<LexemeSearch*, uint32_t>{&t.search, 1u << 20}, {&cut, 0u}}) {
    const uint32_t d = search->tokens_to_end(s, l, kInf, work, ticker);
    CHECK_MSG(at_least(d, truth), at + std::to_string(d) + " tokens, fewest " + std::to_string(truth));
    if ((c.exact || one_word) && truth < kInf)
      CHECK_MSG(d == truth,
                at + std::to_string(d) + " tokens, not " + std::to_string(truth) + (one_word ? " (" + word + ")" : ""));
    if (d > 0 && d < kInf)
      CHECK_MSG(goes_nearer(*search, c, s, l, d, work), at + "no token lowers " + std::to_string(d));
  }
  const uint32_t ceiling = t.ceiling.state_ceiling(s);
  if (ceiling < kInf) {
    ++n.ceilings;
    for (uint32_t u : reached(lx, s, 6, c.walk_bytes))
      if (lx.live_lexemes(u) == std::vector<uint32_t>{l})
        CHECK(ceiling >= t.search.tokens_to_end(u, l, kInf, 1u << 20, ticker));
  }
  const int reach = t.search.trie().max_depth();
  // A shorter reach's ceilings (InnerCosts' tokens shorter than the longest) hold over the states
  // that many bytes lead to; asked before the whole reach's (whose room for the longest tokens they must not lend it).
  for (int short_reach : {1, reach / 2}) {
    for (const auto& pair : t.ceiling.pairs_within(s, static_cast<uint32_t>(short_reach))) {
      if (pair.lexeme != l || pair.ceiling >= kInf) continue;
      ++n.short_ceilings;
      for (uint32_t u : reached(lx, pair.alone, short_reach, c.walk_bytes))
        if (lx.live_lexemes(u) == std::vector<uint32_t>{l})
          CHECK_MSG(at_least(pair.ceiling, fewest_to_end(lx, c.single_bytes(), u, l, 16), 16),
                    at + "pair ceiling within " + std::to_string(short_reach) + " bytes");
    }
  }
  for (const auto& pair : t.ceiling.pairs(s)) {
    if (pair.lexeme != l) continue;
    if (pair.shortest < kInf)
      CHECK_MSG(at_least(pair.shortest, truth),
                at + "pair shortest " + std::to_string(pair.shortest) + ", fewest " + std::to_string(truth));
    if (pair.ceiling >= kInf) continue;
    ++n.pair_ceilings;  // in single bytes, over the states `reach` bytes lead to
    n.ceiling_bytes += pair.ceiling;
    for (uint32_t u : reached(lx, pair.alone, reach, c.walk_bytes))
      if (lx.live_lexemes(u) == std::vector<uint32_t>{l})
        CHECK_MSG(at_least(pair.ceiling, fewest_to_end(lx, c.single_bytes(), u, l, 16), 16), at + "pair ceiling");
  }
}

}  // namespace

TEST_CASE(costs_lexeme_searches_and_ceilings_hold_against_exhaustive_search) {
  Counts n;
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    Case c(seed);
    auto tables = c.tables();
    const Lexer& lx = tables->lexer();
    std::atomic<size_t> bytes{0};
    LexemeSearch cut(lx, tables->search.cache(), c.grammar->vocab(), c.lexemes, bytes);
    for (uint32_t l = 0; l < c.lexemes; ++l) {
      if (c.grammar->grammar().lexemes[l].ignore) continue;
      const uint32_t start = lx.start_state({l});
      CHECK_MSG(at_least(tables->grammar.lexeme_min[l], fewest_to_end(lx, c.tokens, start, l, 8)),
                "seed " + std::to_string(seed) + " lexeme " + std::to_string(l) + ": lexeme_min " +
                    std::to_string(tables->grammar.lexeme_min[l]));
      for (uint32_t s : reached(lx, start, 5))
        if (lx.live_lexemes(s) == std::vector<uint32_t>{l}) check_state(c, *tables, cut, s, l, n);
    }
  }
  CHECK(n.states > 1000);
  CHECK(n.ceilings > 250);
  CHECK_MSG(n.pair_ceilings > 250, std::to_string(n.pair_ceilings) + " pair ceilings");
  CHECK_MSG(n.short_ceilings > 250, std::to_string(n.short_ceilings) + " ceilings within a shorter reach");
  CHECK_MSG(n.words > 100, std::to_string(n.words) + " states of one word");
}

namespace {

// check_state on every state of lexeme x within `depth` bytes (over `bytes`) of its start, and
// lexeme_min at its start, in 300 cases made with `long_bounds` and `marker`; `each` sees each
// state checked. A case whose x is gone (a length that leaves no word of it) counts in *empty.
template <class Each>
Counts check_x_states(bool long_bounds, bool marker, int depth, const std::string& bytes, size_t* empty, Each each,
                      int escapes = 0, bool complements = false) {
  Counts n;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    Case c(seed, long_bounds, marker, 0, escapes, false, false, complements);
    auto tables = c.tables();
    const Lexer& lx = tables->lexer();
    std::atomic<size_t> spent{0};
    LexemeSearch cut(lx, tables->search.cache(), c.grammar->vocab(), c.lexemes, spent);
    const auto& lexemes = c.grammar->grammar().lexemes;
    uint32_t x = 0;
    while (x < lexemes.size() && lexemes[x].name != "x") ++x;
    if (x >= lexemes.size()) {
      ++*empty;
      continue;
    }
    const uint32_t start = lx.start_state({x});
    CHECK_MSG(at_least(tables->grammar.lexeme_min[x], fewest_to_end(lx, c.tokens, start, x, 8)),
              "seed " + std::to_string(seed) + ": lexeme_min " + std::to_string(tables->grammar.lexeme_min[x]));
    for (uint32_t s : reached(lx, start, depth, bytes)) {
      if (lx.live_lexemes(s) != std::vector<uint32_t>{x}) continue;
      each(lx, s);
      check_state(c, *tables, cut, s, x, n);
    }
  }
  return n;
}

}  // namespace

TEST_CASE(costs_lexeme_searches_hold_beside_long_length_bounds) {
  size_t empty = 0;
  const Counts n = check_x_states(true, false, 5, "ab", &empty, [](const Lexer&, uint32_t) {});
  CHECK_MSG(n.states > 1000, std::to_string(n.states) + " states");
  CHECK(empty < 150);
}

TEST_CASE(costs_lexeme_searches_hold_on_raw_text_up_to_a_marker) {
  size_t loose = 0, empty = 0;
  const Counts n = check_x_states(false, true, 4, "ab<\n", &empty, [&](const Lexer& lx, uint32_t s) {
    Lexer::LooseTextHead h;
    loose += lx.loose_text_head(s, &h);
  });
  CHECK_MSG(n.states > 2500, std::to_string(n.states) + " states");
  CHECK_MSG(loose > 400, std::to_string(loose) + " states read as raw text heads");
  CHECK(empty < 60);
}

TEST_CASE(costs_ceilings_hold_where_an_escape_is_cut_across_parts) {
  size_t empty = 0;
  const Counts n = check_x_states(false, false, 5, "ab\\", &empty, [](const Lexer&, uint32_t) {}, true);
  CHECK_MSG(n.states > 1000, std::to_string(n.states) + " states");
  CHECK_MSG(n.pair_ceilings > 1000, std::to_string(n.pair_ceilings) + " pair ceilings");
  // (P's words read across the cut escapes, the ceilings are P's, not the length's: 18,825 bytes
  // in all, 20,533 where Lexer::words_of does not read across them)
  CHECK_MSG(n.ceiling_bytes < 19700, std::to_string(n.ceiling_bytes) + " bytes of pair ceilings");
  CHECK(empty < 100);
}

// Beside two lengths (a maxLength beside a format's own), each count is read against the
// intersection of the others (Lexer::counted_ceiling): the ceilings hold over every state they
// bound (P's own alone, blind to the other count's minimum, fails them), and are P's where a count
// leaves room: 16,053 bytes of them in all, 18,804 where three operands had no counted ceiling
// (only the least longest of the operands).
TEST_CASE(costs_ceilings_hold_beside_two_lengths) {
  size_t empty = 0;
  const Counts n = check_x_states(false, false, 5, "ab\\", &empty, [](const Lexer&, uint32_t) {}, 2);
  CHECK_MSG(n.states > 1000, std::to_string(n.states) + " states");
  CHECK_MSG(n.pair_ceilings > 1000, std::to_string(n.pair_ceilings) + " pair ceilings");
  CHECK_MSG(n.ceiling_bytes < 17000, std::to_string(n.ceiling_bytes) + " bytes of pair ceilings");
  CHECK(empty < 100);
}

// The ceilings of intersections with complements (read off the expression where no search of
// the states would end: a free key beside pattern keys) hold over every state they bound (914
// pairs bounded; 458 without Lexer::complement_ceiling).
TEST_CASE(costs_ceilings_hold_beside_complements) {
  size_t empty = 0;
  const Counts n = check_x_states(false, false, 5, "abc", &empty, [](const Lexer&, uint32_t) {}, false, true);
  CHECK_MSG(n.states > 1000, std::to_string(n.states) + " states");
  CHECK_MSG(n.pair_ceilings > 800, std::to_string(n.pair_ceilings) + " pair ceilings");
  CHECK(empty < 100);
}

// A key: one string, spelled by tokens of which the longest first is seldom the fewest ("abcde" in
// "abc", "ab", "cde": three tokens longest first, two at best). Every state along it, after the
// optional space, costs the fewest tokens a breadth-first search over all token sequences finds.
TEST_CASE(costs_a_word_takes_its_fewest_tokens) {
  size_t states = 0, greedy_worse = 0;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    Rng r{seed * 0xD1B54A32D192ED03ull + 7};
    std::string key;
    for (uint32_t i = 0, n = 3 + r.below(10); i < n; ++i) key += static_cast<char>('a' + r.below(3));
    GrammarBuilder b;
    b.ignore(b.re_literal(" "), "ws", true, false);
    const Symbol k = b.lexeme(b.re_literal(key), "key", false), dot = b.literal(".", "dot");
    const Symbol start = b.rule("start");
    b.add_alternative(start, {k, dot});
    std::vector<std::string> tokens{"<eos>", "a", "b", "c", ".", " "};
    std::set<std::string> longer;
    while (longer.size() < 4 + r.below(12)) {
      std::string t;
      for (uint32_t i = 0, n = 2 + r.below(3); i < n; ++i) t += static_cast<char>('a' + r.below(3));
      longer.insert(t);
    }
    for (uint32_t i = 0; i < 3; ++i) {  // pieces of the key itself, so that its spellings compete
      const uint32_t at = r.below(static_cast<uint32_t>(key.size()) - 1);
      longer.insert(key.substr(at, 2 + r.below(static_cast<uint32_t>(key.size()) - at - 1)));
    }
    tokens.insert(tokens.end(), longer.begin(), longer.end());
    auto vocab = std::make_shared<stencil::Vocabulary>(tokens, std::vector<int32_t>{0}, std::vector<int32_t>{0},
                                                       static_cast<int32_t>(tokens.size()));
    auto grammar = std::make_shared<stencil::CompiledGrammar>(b.build(start), std::move(vocab));
    auto tables = grammar->epoch()->cost_tables(grammar->grammar(), grammar->vocab());
    const Lexer& lx = tables->lexer();
    uint32_t l = 0;
    while (grammar->grammar().lexemes[l].name != "key") ++l;
    stencil::deadline::Ticker ticker;
    uint32_t s = lx.start_state({l});
    for (size_t at = 0; at < key.size(); ++at) {
      const std::string at_text = "seed " + std::to_string(seed) + " key " + key + " at " + std::to_string(at) + ": ";
      std::string word;
      CHECK_MSG(lx.word_of(s, l, &word, 64) && word == key.substr(at), at_text + "not read as one word");
      const uint32_t truth = fewest_to_end(lx, tokens, s, l, 16);
      const uint32_t d = tables->search.tokens_to_end(s, l, kInf, 1u << 20, ticker);
      CHECK_MSG(d == truth, at_text + std::to_string(d) + " tokens, fewest " + std::to_string(truth));
      // (the longest token first, as a path in single bytes is cut: more wherever it differs)
      uint32_t greedy = 0;
      for (size_t i = at; i < key.size(); ++greedy) {
        size_t longest = 1;
        for (const std::string& t : tokens)
          if (t.size() > longest && key.compare(i, t.size(), t) == 0) longest = t.size();
        i += longest;
      }
      greedy_worse += greedy > truth;
      ++states;
      s = lx.next(s, static_cast<uint8_t>(key[at]));
    }
  }
  CHECK_MSG(states > 1500, std::to_string(states) + " states");
  CHECK_MSG(greedy_worse > 20,
            std::to_string(greedy_worse) + " states where the longest token first is not the fewest");
}

namespace {

// The texts the vocabulary's tokens reach (each a prefix of a valid output, at most kLongest
// bytes), and per text the fewest tokens to a complete output among them (computed backwards
// from the longest texts).
struct Texts {
  static constexpr size_t kLongest = 7;
  std::map<std::string, bool> complete;  // text -> a complete output
  std::map<std::string, uint32_t> dist;
  size_t widest = 1;
  explicit Texts(const Case& c) {
    for (const std::string& t : c.tokens) widest = std::max(widest, t.size());
    std::vector<std::string> frontier{""};
    complete[""] = stencil::Matcher(c.grammar, 0).is_accepting();
    while (!frontier.empty()) {
      std::vector<std::string> next;
      for (const std::string& u : frontier)
        for (size_t t = 1; t < c.tokens.size(); ++t) {
          const std::string v = u + c.tokens[t];
          if (v.size() > kLongest || complete.count(v)) continue;
          stencil::Matcher m(c.grammar, 0);
          if (!m.accept_bytes(v)) continue;
          complete[v] = m.is_accepting();
          next.push_back(v);
        }
      frontier.swap(next);
    }
    std::vector<std::string> order;
    for (const auto& kv : complete) order.push_back(kv.first);
    std::sort(order.begin(), order.end(),
              [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
    for (const std::string& u : order) {
      if (complete[u]) {
        dist[u] = 0;
        continue;
      }
      uint32_t best = kInf;
      for (size_t t = 1; t < c.tokens.size(); ++t)
        if (auto it = dist.find(u + c.tokens[t]); it != dist.end()) best = std::min(best, it->second + 1);
      if (best < kInf) dist[u] = best;
    }
  }
  // Whether `budget` tokens or fewer finish u: 1 yes, 0 no, -1 where the texts' length cuts off
  // what could tell.
  int within(const std::string& u, int64_t budget) const {
    if (budget < 0) return 0;
    auto it = dist.find(u);
    if (it != dist.end() && it->second <= budget) return 1;
    return u.size() + static_cast<size_t>(budget) * widest <= kLongest ? 0 : -1;
  }
};

std::vector<int32_t> allowed(stencil::Matcher& m, int32_t vocab, int64_t remaining) {
  std::vector<uint32_t> words((vocab + 31) / 32);
  m.fill_mask_within(words.data(), words.size(), remaining);
  std::vector<int32_t> out;
  for (int32_t t = 0; t < vocab; ++t)
    if (words[t / 32] >> (t % 32) & 1) out.push_back(t);
  return out;
}

// min_completion_tokens after token t (-1: refused, or no way to finish known).
int64_t cost_after(const stencil::Matcher& m, int32_t t) {
  stencil::Matcher n(m);
  return n.accept_token(t) ? n.min_completion_tokens() : -2;
}

std::string listed(const Case& c, const std::vector<int32_t>& ids) {
  std::string out;
  for (int32_t t : ids) out += "'" + c.tokens[t] + "' ";
  return out;
}

}  // namespace

// min_completion_tokens and fill_mask_within along the texts of case c's vocabulary: the bound
// against the fewest tokens (texts), consistent, and each mask at k tokens left keeping exactly the
// tokens whose cost after fits k - 1.
void check_bounds_and_masks(const Case& c, size_t& states, size_t& exact, size_t& masks) {
  const uint64_t seed = c.seed;
  Texts texts(c);
  const int32_t vocab = static_cast<int32_t>(c.tokens.size());
  for (const auto& [u, done] : texts.complete) {
    stencil::Matcher m(c.grammar, 0);
    REQUIRE(m.accept_bytes(u));
    const int64_t bound = m.min_completion_tokens();
    if (bound < 0) {  // none known: none in this vocabulary either, where every byte is a token (a way to
      // finish may need tokens that cross a lexeme's end, which the bound leaves out)
      if (c.all_bytes) CHECK_MSG(!texts.dist.count(u), "seed " + std::to_string(seed) + " text '" + u + "'");
      continue;
    }
    ++states;
    CHECK(texts.within(u, bound) != 0);  // never below the fewest tokens
    if (c.exact) CHECK(texts.within(u, bound - 1) != 1);
    if (c.exact && texts.dist.count(u)) exact += texts.dist.at(u) == static_cast<uint32_t>(bound);
    const std::vector<int32_t> full = allowed(m, vocab, -1);
    if (bound > 0) {  // consistent: some token leads one nearer
      bool nearer = false;
      for (int32_t t : full) {
        const int64_t after = t == 0 ? -1 : cost_after(m, t);
        nearer = nearer || (after >= 0 && after <= bound - 1);
      }
      CHECK(nearer);
    }
    for (int64_t k = std::max<int64_t>(bound, 1); k <= bound + 2; ++k) {
      const std::vector<int32_t> got = allowed(m, vocab, k);
      std::vector<int32_t> want;
      for (int32_t t : full) {
        const int64_t after = t == 0 ? 0 : cost_after(m, t);
        if (after >= 0 && after <= k - 1) want.push_back(t);
      }
      ++masks;
      CHECK_MSG(got == want, "seed " + std::to_string(seed) + " text '" + u + "' k " + std::to_string(k) + ": kept " +
                                 listed(c, got) + ", fitting " + listed(c, want));
    }
  }
}

TEST_CASE(costs_finish_bounds_and_budget_masks_hold_against_exhaustive_search) {
  size_t states = 0, exact = 0, masks = 0;
  for (uint64_t seed = 1; seed <= 200; ++seed) check_bounds_and_masks(Case(seed), states, exact, masks);
  CHECK(states > 2500);
  CHECK(exact > 150);
  CHECK(masks > 7500);
}

// The same where x is an unanchored pattern (`C* P C*`): the costs inside it come from the loop
// part's path (CostTables::held_cost) and the inner tokens' bound from it at once
// (CostTables::sticky), which must agree with the costs after each token. Counts the cases where
// some state took the part's bound, so that the test sees it used.
TEST_CASE(costs_budget_masks_hold_on_unanchored_patterns) {
  size_t states = 0, exact = 0, masks = 0, sticky = 0;
  for (uint64_t seed = 1; seed <= 24; ++seed) {
    const Case c(seed, false, false, 0, false, true);
    check_bounds_and_masks(c, states, exact, masks);
    const auto tables = c.tables();
    const Lexer& lx = tables->lexer();
    uint32_t l = 0;
    while (c.grammar->grammar().lexemes[l].name != "x") ++l;
    uint32_t s = lx.start_state({l});
    for (char ch : std::string("ab")) s = lx.next(s, static_cast<uint8_t>(ch));
    sticky += s != Lexer::kDead && tables->sticky(s) != CostTables::kNoSticky;
  }
  CHECK_MSG(sticky >= 8, std::to_string(sticky) + " cases with the part's bound");
  CHECK_MSG(states > 60000, std::to_string(states) + " states, " + std::to_string(exact) + " exact, " +
                                std::to_string(masks) + " masks");
}

// The same beside a free key (`[ab]{1,} & ~x`) whose words a third lexeme holds: the ceilings
// leave the free key to that lexeme's bound (LexemeCeiling::cover), which must agree with the costs
// after each token. Counts the cases where the start state's free key was covered.
TEST_CASE(costs_budget_masks_hold_beside_a_free_key) {
  size_t states = 0, exact = 0, masks = 0, covered = 0;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const Case c(seed, false, false, 0, false, false, true);
    check_bounds_and_masks(c, states, exact, masks);
    const auto tables = c.tables();
    const Lexer& lx = tables->lexer();
    std::vector<uint32_t> all(c.grammar->grammar().lexemes.size());
    for (uint32_t l = 0; l < all.size(); ++l) all[l] = l;
    const uint32_t s = lx.start_state(all);
    for (const auto& pair : tables->ceiling.pairs(s)) covered += pair.within != stencil::LexemeCeiling::kNoPair;
  }
  CHECK_MSG(covered >= 20, std::to_string(covered) + " free keys covered");
  CHECK_MSG(states > 40000, std::to_string(states) + " states, " + std::to_string(exact) + " exact, " +
                                std::to_string(masks) + " masks");
}

// The same where a lexeme has a token limit: the mask walks the whole trie, and so do the budget's
// costs (TrieCosts: its sub-tries taken at once inside a looping lexeme, its restriction). The
// mutation check plants a fault in each of those.
TEST_CASE(costs_budget_masks_hold_where_the_whole_trie_is_walked) {
  size_t states = 0, exact = 0, masks = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed)
    check_bounds_and_masks(Case(seed, false, false, 64), states, exact, masks);
  CHECK(states > 40000);  // (40 cases: each x's run of letters makes many texts)
  CHECK(exact > 4000);
  CHECK(masks > 100000);
}
