// The lexer: a DFA built lazily, one transition at a time. A state is the set
// of (lexeme, derivative) pairs still alive; transitions live in a flat table
// indexed by (state, byte class) and are computed on first use under a lock.
// Reads of known transitions are lock-free, so one Lexer serves every matcher
// of a compiled grammar in every thread.
#pragma once
#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "grammar/ir.h"
#include "regex/byte_classes.h"
#include "regex/derivative.h"
#include "regex/expr.h"
#include "regex/finite.h"
#include "stencil/limits.h"
#include "support/byteset.h"
#include "support/char_summary.h"

namespace stencil {

struct LexState {
  std::vector<uint32_t> accepting;  // lexemes that may end here (sorted)
  bool end_now = false;             // must end before any further byte
  bool any_ignore_only = false;     // every accepting lexeme is ignored
  bool bounded = false;             // some expression has a bound relaxed_state may lift
  // The lexemes still alive (sorted, each once) and a one-word summary of them (bit l % 64):
  // the parser's vetoes (EarleyParser::vetoed_only) ask per byte, without the lexer's lock.
  std::vector<uint32_t> live;
  uint64_t live_bits = 0;
  // Keys that written keys may exhaust (LexemeSpec::unique_key): key_finite, some key lexeme is
  // left with a finite language here (the empty rest, a key just closed, counts only for a key
  // checked after its member, of a lexeme with finite states); key_may_finite, such a state is
  // reachable before the key closes (Lexer::key_may_finite: asked of few states, and costly for
  // a key of a large pattern, it is found on the first question).
  // Only there does the parser ask EarleyParser::exhausted_only. key_closed: a key of any
  // string checked after its member just closed here (a repeat is then a dead end; the parser
  // asks EarleyParser::closes_written_key per token, which keeps the mask's shared runs).
  // key_end_checked: a key of any string whose checks (unique_key, not_in) run as it ends just
  // closed here (LexemeSpec::kKeyEnd): a mask walk's run of tokens closing it shares one push,
  // each token's key looked up in the sets of names those checks read.
  bool key_finite = false;
  bool key_closed = false;
  bool key_end_checked = false;
  // key_may_finite once known (kMayFiniteUnknown until asked; a state with no key lexeme: false)
  struct LazyFlag {
    mutable std::atomic<uint8_t> v{0};
    LazyFlag() = default;
    LazyFlag(const LazyFlag& o) : v(o.v.load(std::memory_order_relaxed)) {}
    LazyFlag& operator=(const LazyFlag& o) {
      v.store(o.v.load(std::memory_order_relaxed), std::memory_order_relaxed);
      return *this;
    }
  } may_finite;
  static constexpr uint8_t kMayFiniteUnknown = 2;
  // Lexer::cover_state's: words all in the state's (the derivative of a LexemeCover along a path
  // here), as lexeme cover_lexeme; set under the lexer's lock after the state is made.
  ExprId cover = ExprStore::kNothing;
  uint32_t cover_lexeme = 0;
};

class Lexer {
 public:
  static constexpr uint32_t kDead = 0;
  static constexpr uint32_t kUnknown = 0xFFFFFFFFu;

  Lexer(ExprStore store, std::vector<LexemeSpec> lexemes, LexerLimits limits, std::vector<LexemeCover> covers = {});
  ~Lexer();

  uint32_t next(uint32_t state, uint8_t byte) const { return next_tagged(state, byte) & ~kEndNowTag; }
  // next, with kEndNowTag set when the state reached must end at once: a token walk reads it
  // from the transition it loads anyway, not from the state.
  static constexpr uint32_t kEndNowTag = 0x80000000u;
  uint32_t next_tagged(uint32_t state, uint8_t byte) const {
    const Block* blk = blocks_[state >> kBlockBits].get();
    uint32_t t =
        blk->trans[(state & kBlockMask) * num_classes_ + classes_.class_of[byte]].load(std::memory_order_acquire);
    if (t != kUnknown) return t;
    return compute_transition(state, byte);
  }
  const LexState& state(uint32_t s) const { return blocks_[s >> kBlockBits]->states[s & kBlockMask]; }
  // LexState::key_may_finite's answer for state s.
  bool key_may_finite(uint32_t s) const {
    const uint8_t v = state(s).may_finite.v.load(std::memory_order_acquire);
    return v == LexState::kMayFiniteUnknown ? find_key_may_finite(s) : v != 0;
  }
  // The state that starts a new lexeme when the parser allows `allowed`
  // (sorted lexeme ids); ignored lexemes are always added.
  uint32_t start_state(const std::vector<uint32_t>& allowed) const;
  // `start` without the lexemes that accept in state `ended`: where the next lexeme starts
  // after ignored lexemes ended. An ignored lexeme never follows itself, so a bounded one
  // (whitespace up to N bytes) bounds the whole run, as a longest-match lexer would.
  uint32_t start_after_ignored(uint32_t start, uint32_t ended) const;
  // Lexemes with a token limit (max_tokens): whether there are any, and s without the lexemes
  // whose limit `tokens` reached (s itself when none is; kDead when nothing is left).
  bool has_token_limits() const { return has_token_limits_; }
  uint32_t drop_spent(uint32_t s, uint32_t tokens) const;
  // `start` for the first lexeme of the output: without the ignored lexemes marked not_initial.
  uint32_t initial_state(uint32_t start) const;

  const std::vector<LexemeSpec>& lexemes() const { return lexemes_; }
  const ByteClasses& classes() const { return classes_; }
  uint32_t num_states() const { return num_states_.load(std::memory_order_acquire); }
  size_t memory_bytes() const;
  // A lock-free estimate of memory_bytes, moved as the lexer grows (states, expressions,
  // cached derivatives): the memory limit measures the lexer when it has grown enough.
  size_t growth() const { return growth_.load(std::memory_order_relaxed); }
  // Caps the derivative cache at about `bytes` (it starts afresh past it).
  void set_cache_cap(size_t bytes);
  // Whether a work limit over the lexer's life (states, expressions, derivative fuel) is reached:
  // any generation that needs new states would fail from now on.
  bool work_limit_reached() const;
  size_t num_exprs() const;   // expressions in the lexer's store (the max_exprs limit)
  uint64_t fuel_used() const;
  std::string describe_state(uint32_t s) const;
  // The lexemes still alive in state s (sorted, each once): those some continuation may end.
  std::vector<uint32_t> live_lexemes(uint32_t s) const;
  // A key equal for lexer states of any grammar that match alike within
  // walks of fewer than `clamp` bytes (canonical expressions, repetition
  // bounds clamped, lexeme flags); empty when the state is too big to key.
  std::string signature(uint32_t s, uint32_t clamp) const;
  // The state holding only the i-th (lexeme, expression) pair of s, to
  // reason about one lexeme of a state alone; kDead when i is out of range.
  uint32_t probe_state(uint32_t s, size_t i) const;
  // Whether the i-th pair's words lie within the j-th's, both of lexemes that are not lazy
  // (ExprStore::within): then every walk from s that keeps pair i alive keeps pair j alive too.
  bool pair_within(uint32_t s, size_t i, size_t j) const;
  // Whether every expression of s is a JSON number range (ExprKind::Number, or alternatives of
  // them): their states never repeat (the digits read are kept), so no search over them ends.
  bool numbers_only(uint32_t s) const;
  // s with its repetition bounds of `limit` or more lifted (ExprStore::relax_bounds): the same
  // on every walk of fewer than `limit` bytes. kDead when some expression cannot be relaxed.
  // `keep_mins`: lower bounds past the limit kept (ExprStore::relax_bounds'), as the cost searches
  // take them (their searches from a relaxed state replay its path in s: a minimum lowered
  // shortens the path past what s accepts).
  uint32_t relaxed_state(uint32_t s, uint32_t limit, bool keep_mins = false) const;
  // s with the same bounds lifted where its language need only hold s's (ExprStore::lift_bounds:
  // past intersections and complements that relaxed_state refuses; `lower_mins`: their lower
  // bounds lowered to 0 too): no token ends or stays in its lexeme from s that does not from the
  // lifted state. kDead where it cannot be lifted.
  uint32_t lifted_state(uint32_t s, uint32_t limit, bool lower_mins) const;
  // s with each expression shrunk to a subset with no repetition bounded at `limit` or more
  // (ExprStore::shrink_bounds; a pair left with nothing dropped): every walk that keeps the shrunk
  // state alive and short of an end keeps s so (its lexemes' words are s's), not lazy ones, which
  // end at their first word. kDead where nothing is left.
  uint32_t shrunk_state(uint32_t s, uint32_t limit) const;
  // A state holding a subset of s's words, few and small where s's are many: the derivative of a
  // LexemeCover whose lexemes all started the path to s (as one lexeme of the cover); kDead where
  // no cover came along.
  uint32_t cover_state(uint32_t s) const;
  // The largest finite bound of a count of characters in an expression of s that holds an
  // intersection (a length beside a pattern; ExprStore::char_count_bound); 0 when none.
  uint32_t char_count_bound(uint32_t s) const;
  // Whether s has a count of words or groups past `clamp` (ExprStore::recount would move it).
  bool counts_words(uint32_t s, uint32_t clamp) const;
  // s with its counts of words or groups past `clamp` lowered to it (*lo) and lifted (*hi)
  // (ExprStore::recount): every walk's language from *lo holds within s's, and s's within *hi's.
  // False when s has no such count, or a complement, or a count of characters past 16, or any
  // beside an intersection (a maxLength: one no token reaches is lifted first,
  // Lexer::relaxed_state): those move at every byte, and so would *lo and *hi.
  bool count_sandwich(uint32_t s, uint32_t clamp, uint32_t* lo, uint32_t* hi) const;
  // Whether s is one lexeme at `C{lo,k} rest`, at a character boundary, where each repetition
  // of C takes exactly one character of plain text (as a JSON string body with minLength or
  // maxLength), or at `(C{lo,k} & P...) rest` where each P holds every plain string (a pattern
  // beside the length, once only `.*` of it is left): then *k is the bound (kUnbounded for
  // none), *relaxed the state at `C* rest`, *rest the state at `rest` and (where given) *lo the
  // lower bound.
  bool bounded_text_head(uint32_t s, uint32_t* k, uint32_t* relaxed, uint32_t* rest, uint32_t* lo = nullptr) const;
  // bounded_text_head's kind for the masks, where one conjunct P beside the count need not hold
  // every plain string but keeps within *slack characters of a word whatever plain text reads it,
  // with every count from there up (Deriver::item_slack; an unanchored pattern beside a length,
  // `.*[0-9a-f]+.* & C{12,12}`: 1): a plain token of at most k - slack characters stays inside,
  // longer ones up to k may. *slack is 0 where bounded_text_head holds. Not for a maximum alone of
  // kSlackFrom or more (MaskCache::partly_relaxed lifts it: one entry for every count).
  // *filter: plain bytes that kill a conjunct beside the count which holds every plain string
  // without them (a class, `[^<>]*` or `[A-Za-z0-9_]*`: Lexer::plain_filter): a plain token with
  // one of them dies, the others count as above.
  static constexpr uint32_t kSlackFrom = 16;
  // The pairs a slack's exploration may read beside a minimum that binds nothing (head_conjuncts)
  static constexpr size_t kIdleMinPairs = 32;
  // *alive: where the conjunct with the slack is one that some plain text kills (an anchored
  // count of words: Deriver::alive_slack), the state with the count lifted and every conjunct
  // kept, whose inner plain tokens are those that leave it alive (kDead otherwise).
  bool slack_text_head(uint32_t s, uint32_t* k, uint32_t* relaxed, uint32_t* rest, uint32_t* slack, ByteSet* filter,
                       uint32_t* alive) const;
  // bounded_text_head's looser kind, for the cost searches (which check the path they take
  // past the head): the lexeme may be lazy, an optional part that plain text cannot enter may
  // come first (`\n? (C{lo,k} & ~(.*</p>.*)) \n? </p>`: raw text up to a marker), and a conjunct
  // beside the count need hold only the plain strings without a few ASCII bytes (`avoid`: the
  // marker's first byte). Plain text without them moves the count alone, and rest cannot start
  // with it. Memoized.
  struct LooseTextHead {
    uint32_t k = 0, lo = 0, rest = 0;
    ByteSet avoid;
  };
  bool loose_text_head(uint32_t s, LooseTextHead* out) const;
  bool has_lazy(uint32_t s) const;
  bool has_key(uint32_t s) const;  // a lexeme of s begins a key that unique_key checks (LexemeSpec)
  // Whether the rest of `lexeme` (not lazy, one expression) in s is one string (a key, a
  // keyword): then *word is it (ExprStore::word's `limit`). Other lexemes of s may be alive
  // beside it (the whitespace before a key): every path to its end spells the word.
  bool word_of(uint32_t s, uint32_t lexeme, std::string* word, size_t limit) const;
  // ExprStore::shortest_candidate of `lexeme`'s expression in s (one expression): a word that,
  // where s reads it to the lexeme's end, is a shortest one.
  bool shortest_candidate(uint32_t s, uint32_t lexeme, std::string* word, size_t limit) const;
  // Per (lexeme, expression) pair of s, in probe_state's order: bounds in bytes read off the
  // expression's structure (memoized per expression; no state made).
  // `shortest`: at least the fewest bytes that end the pair's lexeme; `ceiling`: at least that
  // for any state a walk of at most `reach` bytes from the pair reaches (one token: the longest
  // token's bytes). kUnknown where the structure hides them: a number range has a shortest, no
  // ceiling; an intersection no shortest, and a ceiling only where an operand's words are bounded
  // in length or one counts characters the other is made of. See byte_bounds.cpp.
  struct PairBytes {
    uint32_t lexeme = 0, shortest = kUnknown, ceiling = kUnknown;
  };
  std::vector<PairBytes> pair_bytes(uint32_t s, uint32_t reach) const;
  // An expression's bounds (pair_bytes'), with `longest`: at least the length of its longest word.
  struct ExprBytes {
    uint32_t shortest = kUnknown, ceiling = kUnknown, longest = kUnknown;
  };
  // Whether some lexeme of s holds a loop over plain text: a part F of its expression (the
  // whole, or one alternative, shaped `C* X`) such that every plain character leads from F back
  // to an expression holding F. Then no plain string ends or kills s, whatever else its
  // expressions track (a pattern searched for anywhere in a string, as JSON Schema's unanchored
  // `pattern`). Explores at most max_pairs (expression, partial character) pairs per part.
  bool loops_on_plain(uint32_t s, size_t max_pairs) const;
  // The loop-shaped parts of s (as in loops_on_plain; at most `max_parts`, none when a lexeme
  // of s is lazy). A string of characters that each lead a part back to itself keeps that part,
  // and so its lexeme, alive and extendable, whatever the rest of s does (part_loop_chars).
  std::vector<ExprId> loop_parts(uint32_t s, size_t max_parts) const;
  // The characters c (CharSummary bits) whose derivative of part f still holds f: ASCII ones,
  // and with `groups` the groups of non-ASCII characters whose every path stays alive and holds
  // f again at the character's end (up to 64 pairs per group). Memoized.
  CharSummary part_loop_chars(ExprId f, bool groups) const;
  // The parts F = `C* X` that the expressions of s hold after a short prefix: each alternative of a
  // pair (not lazy) whose right-nested concatenation ends in F after at most `max_prefix` bytes
  // (a character begun: the rest of it; none: s holds F). A string of whole C words leads F back
  // to an expression holding F, so a path from F to its lexeme's end is one from s too, after the
  // prefix: the cost room bounds a loop's states (an unanchored pattern's runs, a count each) by
  // one path. Per part: the state of F alone, of `C*` alone (`head`: its live tokens are the
  // strings of C words, the last perhaps cut short), the longest C word less one (`completion`),
  // the prefix's longest, and the lexeme.
  struct HeldPart {
    uint32_t part = kDead, head = kDead, completion = 0, prefix = 0, lexeme = 0;
  };
  std::vector<HeldPart> held_parts(uint32_t s, uint32_t max_prefix) const;

 private:
  // Small blocks: a grammar starts with one, and its transition table is filled at creation.
  static constexpr uint32_t kBlockBits = 8;
  static constexpr uint32_t kBlockMask = (1u << kBlockBits) - 1;
  struct Block {
    LexState states[1u << kBlockBits];
    std::unique_ptr<std::atomic<uint32_t>[]> trans;
  };
  using Pairs = std::vector<uint32_t>;  // lexeme, expr, lexeme, expr, ...
  // The one expression of `lexeme` (not lazy) in s; kNothing where it has none or two. (mu_ held)
  ExprId expr_of(uint32_t s, uint32_t lexeme) const;

  uint32_t compute_transition(uint32_t state, uint8_t byte) const;  // tagged, as next_tagged
  enum class PlainStep { kFail, kCovered, kExplore };
  // (`skip`: plain bytes left out of the strings explored)
  template <class Step>
  bool explore_plain_exprs(ExprId start, size_t max_pairs, Step step, const ByteSet* skip = nullptr) const;
  bool covers_plain(ExprId e) const;  // every plain string is in e (memoized); mu_ held
  // Whether an alternative of e loops on plain text (as in loops_on_plain): then no plain string
  // kills e. mu_ held.
  bool holds_plain_loop(ExprId e) const;
  // Whether every plain string without the bytes of `avoid` is in e; mu_ held.
  bool covers_plain_without(ExprId e, const ByteSet& avoid) const;
  // The ASCII bytes whose derivative of e is not e, and whether e holds every plain string
  // without them (memoized); mu_ held.
  std::pair<bool, ByteSet> covers_plain_avoiding(ExprId e) const;
  bool shuts_out_plain(ExprId e, const ByteSet& avoid) const;  // mu_ held
  // Whether plain text moves x only by killing it: *kill is the plain bytes that empty x (ASCII
  // ones, and every byte from 0x80 where no non-ASCII character keeps x alive); every plain string
  // without them keeps x nullable, and at each of its character boundaries each byte of *kill
  // empties what is left. Memoized; mu_ held.
  bool plain_filter(ExprId x, ByteSet* kill) const;
  uint32_t killed_slack(ExprId x) const;  // text_head's, beside a minimum of at most 1; mu_ held
  bool plain_chars_one_each(ExprId item) const;                 // text_head's C; mu_ held
  struct TextHead {
    bool ok = false;
    uint32_t k = 0, relaxed = 0, rest = 0, lo = 0;
    ByteSet avoid;
    uint32_t slack = 0;
    ByteSet filter;         // (with_slack)
    uint32_t alive = kDead;  // (with_slack)
  };
  // bounded_text_head (loose: loose_text_head; with_slack: slack_text_head), not memoized; mu_ held
  TextHead text_head(uint32_t s, bool loose, bool with_slack = false) const;
  // Whether `item` is a class of ASCII bytes, with *refused the plain bytes it refuses (every byte
  // from 0x80 among them); mu_ held.
  bool byte_class_filter(ExprId item, ByteSet* refused) const;
  bool head_conjuncts(const std::vector<ExprId>& others, const ExprNode& rep, bool loose, bool with_slack, TextHead& h,
                      bool* killed) const;  // text_head's; mu_ held
  // relaxed_state (mode 0, and 3 keeping the minimums), lifted_state (1, and 2 lowering them) and
  // shrunk_state (4)
  uint32_t lift_state(uint32_t s, uint32_t limit, int mode) const;

  uint32_t intern_state(Pairs pairs) const;  // caller holds mu_
  void note_growth() const;                  // mu_ held
  void mark_finite_keys(LexState& st, const Pairs& pairs) const;  // mu_ held
  // LexState::cover of a start state of `lexemes` (sorted) that hold all of a cover's; mu_ held
  void mark_cover(uint32_t s, const std::vector<uint32_t>& lexemes) const;
  bool finite_language(ExprId e) const;                         // structural, memoized; mu_ held
  ExprBytes expr_bytes(ExprId e, int depth) const;  // pair_bytes' bounds, memoized; mu_ held
  // The ceiling of a two-operand intersection `a & C{lo,hi}` where C is a character set and a's
  // words are strings of C (kUnknown otherwise); mu_ held. See byte_bounds.cpp.
  uint64_t counted_ceiling(ExprId e, int depth) const;
  // The ceiling of an intersection with complements, `C* b & ~f & ...` (kUnknown where the rule
  // does not reach); mu_ held. See byte_bounds.cpp.
  uint64_t complement_ceiling(ExprId e, int depth) const;
  // The ceiling of `p & w C*` (q, a concatenation ending in C*) by the rule there; mu_ held.
  uint64_t prefixed_ceiling(ExprId p, ExprId q, int depth) const;
  // complement_ceiling's for C* beside complements of languages closed under appending C*; mu_ held.
  uint64_t closed_ceiling(ExprId p, const std::vector<ExprId>& neg, int depth) const;
  // complement_ceiling's for several positive operands, unanchored patterns; mu_ held.
  uint64_t unanchored_ceiling(const std::vector<ExprId>& pos, const std::vector<ExprId>& neg, int depth) const;
  // The bytes after which no complement ~f of `neg` holds back a word of C* any more (0 with
  // none; kUnknown where C has no character of one byte); `ends`: the text ends there (a byte
  // that ends no word of any f will do); mu_ held.
  uint64_t complement_pad(const std::vector<ExprId>& neg, ExprId c, bool ends, int depth) const;
  // Where every state of p reaches, within `reach` bytes, one whose words hold C* t with t's
  // shortest word at most `tail` bytes (C = item: C* absorbs the text so far): complement_ceiling's
  // operand. reach kUnknown where no such bound is read off the structure; mu_ held.
  struct Absorbing {
    uint64_t reach = kUnknown, tail = 0;
    ExprId item = 0;
  };
  Absorbing absorbing(ExprId p, int depth) const;
  bool char_set(ExprId c, int depth) const;  // no word of c empty or a prefix of another; mu_ held
  bool words_of(ExprId a, ExprId c, int depth) const;  // every word of a is in c*; mu_ held
  bool finite_words_of(ExprId f, ExprId c) const;  // words_of by a search over derivatives
  // e with an intersection `P & C*` at its head (a pattern beside a maxLength that relaxed_state
  // lifted) made P where every word of P is a string of C: the same language; mu_ held.
  ExprId without_full_count(ExprId e, int depth) const;
  bool find_key_may_finite(uint32_t s) const;
  bool may_become_finite(ExprId e) const;                       // a derivative search; mu_ held
  // s without the pairs whose lexeme `drop` names (s itself when none; kDead when all); takes mu_.
  template <class Drop>
  uint32_t without(uint32_t s, Drop drop) const;
  template <class Pred>
  bool any_lexeme(uint32_t s, Pred pred) const;  // pred holds for a lexeme of s

  mutable ExprStore store_;
  mutable Deriver deriver_;
  std::vector<LexemeSpec> lexemes_;
  std::vector<LexemeCover> covers_;
  LexerLimits limits_;
  ByteClasses classes_;
  int num_classes_;
  mutable std::mutex mu_;
  static constexpr uint32_t kMaxBlocks = 4096;  // with 256-state blocks: 1M states (the default limit)
  mutable std::unique_ptr<Block> blocks_[kMaxBlocks];
  mutable std::atomic<uint32_t> num_states_{0};
  mutable std::atomic<size_t> growth_{0};
  // A deque: push_back keeps references to the pairs of earlier states valid, so code that holds
  // one across intern_state cannot read freed memory (held_parts once did, with a vector).
  mutable std::deque<Pairs> state_pairs_;
  mutable size_t state_bytes_ = 0;  // the heap the states' pairs, keys and vectors hold; mu_
  mutable std::unordered_map<std::vector<uint32_t>, uint32_t, VectorHash> state_ids_;
  mutable std::shared_mutex start_mu_;
  mutable std::unordered_map<std::vector<uint32_t>, uint32_t, VectorHash> start_states_;
  mutable size_t start_keys_bytes_ = 0;  // start_states_'s keys; start_mu_
  mutable std::unordered_map<uint64_t, uint32_t> after_ignored_;  // (start, ended) -> state; start_mu_
  mutable std::unordered_map<uint64_t, uint32_t> spent_;  // (state, tokens) -> drop_spent; start_mu_
  bool has_token_limits_ = false;
  uint32_t max_token_limit_ = 0;
  bool has_not_initial_ = false;
  mutable std::unordered_map<uint64_t, uint32_t> relaxed_;  // (state, limit) -> relaxed_state; mu_
  mutable std::unordered_map<uint64_t, uint32_t> lifted_;   // (state, limit, lower_mins) -> lifted_state; mu_
  mutable std::unordered_map<uint64_t, uint32_t> shrunk_;   // (state, limit) -> shrunk_state; mu_
  mutable std::unordered_map<uint64_t, std::pair<uint32_t, uint32_t>> sandwiches_;  // (state, clamp); mu_
  mutable std::unordered_map<uint64_t, CharSummary> part_chars_;  // (part, groups); mu_
  mutable FiniteLanguages finite_langs_;                  // finite_language, may_become_finite; mu_
  mutable std::unordered_map<ExprId, bool> may_finite_;   // may_become_finite; mu_
  mutable std::unordered_map<ExprId, ExprBytes> expr_bytes_;  // expr_bytes (for reach_); mu_
  mutable uint32_t reach_ = kUnknown;                         // pair_bytes' reach; mu_
  mutable std::unordered_map<uint32_t, std::unordered_map<ExprId, ExprBytes>> parked_bytes_;  // other reaches'; mu_
  mutable std::unordered_map<ExprId, bool> char_sets_;        // char_set; mu_
  mutable std::unordered_map<uint64_t, bool> words_of_;       // (a, c) -> words_of; mu_
  // bounded_text_head per state (asked per trie node by the budget's walks of the trie); mu_
  mutable std::unordered_map<uint32_t, TextHead> text_heads_;
  // covers_plain's answers per expression: the states of a pattern beside a length (each count a
  // state of its own) share a few pattern derivatives, each explored once.
  mutable std::unordered_map<ExprId, bool> covers_plain_;
  mutable std::unordered_map<uint32_t, TextHead> loose_heads_;  // loose_text_head per state; mu_
  mutable std::unordered_map<uint32_t, TextHead> slack_heads_;  // slack_text_head per state; mu_
  mutable std::unordered_map<ExprId, bool> plain_loops_;         // holds_plain_loop; mu_
  mutable std::unordered_map<ExprId, std::pair<bool, ByteSet>> covers_avoiding_;  // covers_plain_avoiding; mu_
  mutable std::unordered_map<ExprId, std::pair<bool, ByteSet>> plain_filters_;    // plain_filter; mu_
  bool has_unique_keys_ = false;
};

}  // namespace stencil
