// Per lexer state, the part of the token mask that the lexer alone decides:
// tokens whose bytes stay inside the current lexeme ("inner" tokens), and the
// trie nodes where a lexeme ends inside a token ("boundaries"), below which
// the parser must be asked. A lexer state fixes both, so the cache key is
// sound; entries are shared by all matchers of a compiled grammar.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "support/byteset.h"
#include "support/char_summary.h"
#include "tokens/merged_runs.h"
#include "tokens/shared_cache.h"

namespace stencil {

class Lexer;
class Vocabulary;
class TokenTrie;

// Boundary nodes in the trie of the non-plain tokens carry this bit.
constexpr uint32_t kRestTrieBit = 0x80000000u;

struct Boundary {
  uint32_t node;         // trie node whose byte ends a lexeme (or follows one); kRestTrieBit: rest trie
  uint32_t lexer_state;  // the state before that byte
  uint32_t parent;       // its parent node, tagged alike: boundaries with one parent share the bytes above
  // Set by MaskCache::order_for_runs, so that a mask's walk over a run of boundaries reads them
  // in order instead of each one's trie node: the node's depth and byte, and whether the
  // boundary is in the previous one's group (the same lexer state, trie and depth, and the same
  // byte completing the lexeme, or a byte that ends it before it).
  uint16_t depth = 0;
  uint8_t byte = 0;
  bool joins = false;
};

struct MaskEntry : std::enable_shared_from_this<MaskEntry> {
  std::shared_ptr<const SharedMaskEntry> shared;  // inner tokens (also used by other grammars)
  std::vector<Boundary> boundaries;               // with this grammar's lexer states
  // Over boundaries, built at the kMergeAt-th walk of them (MaskCache::merged_runs): most
  // entries are walked a few times, and merging costs a few walks; at the first where the
  // vocabulary's other grammars built every class's trie already.
  mutable std::atomic<const MergedRuns*> merged{nullptr};
  mutable std::atomic<uint32_t> walks{0};
  MaskEntry() = default;
  MaskEntry(const MaskEntry&) = delete;
  MaskEntry& operator=(const MaskEntry&) = delete;
  ~MaskEntry() { delete merged.load(std::memory_order_relaxed); }
  // A copy of the inner mask's words (SharedMaskEntry::dense): for per-state tables, not masks.
  std::vector<uint32_t> inner() const { return shared->dense(); }
  void write_inner(uint32_t* words, size_t need) const { shared->write(words, need); }
  // Counts the shared inner mask too: whatever a grammar keeps alive counts against its cache's capacity.
  size_t bytes() const { return boundaries.capacity() * sizeof(Boundary) + shared->bytes() + 64; }
};

class MaskCache {
 public:
  MaskCache(size_t capacity_bytes, bool plain_slice, bool shared_masks, bool loop_skip)
      : capacity_(capacity_bytes), plain_slice_(plain_slice), shared_masks_(shared_masks), loop_skip_(loop_skip) {}
  ~MaskCache();  // gives its bytes back to the process memory limit
  MaskCache(const MaskCache&) = delete;
  MaskCache& operator=(const MaskCache&) = delete;
  // The entry of `state`. Cached entries live as long as the cache and are found without a
  // lock or a reference-count update (matchers on many threads read the same entries); an
  // entry past the cache's capacity (or the process limit if smaller) is not cached, and
  // *keep then owns it.
  const MaskEntry* get(const Lexer& lexer, const Vocabulary& vocab, uint32_t state,
                       std::shared_ptr<const MaskEntry>* keep) const;
  size_t size() const;
  size_t bytes() const;
  // The merged runs of a cached entry of this cache (counted in its bytes once built), or null
  // until its kMergeAt-th call (or its first, where every class's trie is shared already).
  static constexpr uint32_t kMergeAt = 2;
  const MergedRuns* merged_runs(const Lexer& lexer, const Vocabulary& vocab, const MaskEntry& e) const;
  // Whether this grammar shares with the vocabulary's other grammars (CompileLimits::shared_masks):
  // inner masks here, lexemes' token paths in cost/lexeme_search.
  bool shares() const { return shared_masks_; }

  // Whether `state` is `C{lo,k} rest` (Lexer::bounded_text_head) where C* rest admits plain text
  // and rest cannot start with it: exactly the plain tokens of at most *k characters stay inside.
  bool admits_bounded_plain(const Lexer& lexer, uint32_t state, uint32_t* k) const;
  // (their common part: C* rest admits plain text and rest cannot start with it)
  bool plain_stays_in_head(const Lexer& lexer, uint32_t relaxed, uint32_t rest) const;
  // The characters that lead `state` back to itself (loop_chars in plain_slice.h), memoized.
  CharSummary loop_chars(const Lexer& lexer, uint32_t state, bool groups) const;

  static const TokenTrie& trie_of(const Vocabulary& vocab, uint32_t tagged_node);
  // The bytes above a (tagged) trie node: the prefix its whole sub-trie shares, read from the
  // first token below it.
  static std::string_view bytes_above(const Vocabulary& vocab, uint32_t tagged_node);
  // Bitmask words of the tokens of at least `bytes` bytes, made once per length.
  const std::vector<uint32_t>& tokens_of_at_least(const Vocabulary& vocab, uint32_t bytes) const;

 private:
  // With min_depth, only the sub-tries holding a token of that many bytes or more are walked, and
  // only the boundaries at that depth or deeper kept (inner bits are set for shorter tokens too).
  void inner_walk(const Lexer& lexer, const TokenTrie& trie, uint32_t tag, uint32_t state, std::vector<uint32_t>& inner,
                  std::vector<Boundary>& boundaries, uint32_t min_depth = 0) const;
  // kCount: returns the trie nodes found alive (descended, or in a sub-trie skipped as all inner).
  template <bool kDeepOnly, bool kCount>
  uint64_t walk_from(const Lexer& lexer, const TokenTrie& trie, uint32_t tag, uint32_t state,
                     std::vector<uint32_t>& inner, std::vector<Boundary>& boundaries, uint32_t min_depth) const;
  std::shared_ptr<const MaskEntry> partly_relaxed(const Lexer& lexer, const Vocabulary& vocab, uint32_t state) const;
  // The entry of the state with the bounds no token reaches lifted (nullptr: none to lift).
  std::shared_ptr<const MaskEntry> relaxed_entry(const Lexer& lexer, const Vocabulary& vocab, uint32_t state) const;
  // A counted string head for the masks (Lexer::slack_text_head): the plain tokens of at most
  // k - slack characters stay inside, and those of up to k may (an unanchored pattern beside a
  // length); of those, only the tokens without a byte of `filter` (a class beside the length),
  // and (where `alive` is a state) those of at most k - slack characters that are inner tokens of
  // `alive`.
  struct SlackHead {
    uint32_t k = 0, slack = 0;
    ByteSet filter;
    uint32_t alive = 0;
  };
  bool admits_slack_plain(const Lexer& lexer, uint32_t state, SlackHead* h) const;
  // Its entry: plain tokens off the slice.
  void counted_slice(const Lexer& lexer, const Vocabulary& vocab, uint32_t state, const SlackHead& h, MaskEntry& e,
                     SharedMaskEntry& shared) const;
  // The entry of `lo` where it serves each state between (lo ⊆ state ⊆ hi, Lexer::count_sandwich):
  // when whole walks from lo and from hi agree on every trie node (alike); else null.
  std::shared_ptr<const MaskEntry> sandwiched(const Lexer& lexer, const Vocabulary& vocab, uint32_t lo,
                                              uint32_t hi) const;
  // What the sandwich compares of a whole walk: the nodes it found alive, inner tokens and
  // boundaries (node, lexer state) by node.
  struct WalkFacts {
    uint64_t alive;
    std::vector<uint32_t> inner;
    std::vector<std::pair<uint32_t, uint32_t>> bounds;
  };
  WalkFacts walked(const Lexer& lexer, const Vocabulary& vocab, uint32_t state) const;
  static bool alike(const Lexer& lexer, const Vocabulary& vocab, const WalkFacts& x, const WalkFacts& y);
  static void order_for_runs(const Lexer& lexer, const Vocabulary& vocab, std::vector<Boundary>& boundaries);
  static std::shared_ptr<MaskEntry> finish(const Lexer& lexer, const Vocabulary& vocab, std::shared_ptr<MaskEntry> e,
                                           std::shared_ptr<SharedMaskEntry> shared);
  // A new entry for `state`, or (*borrowed set) the cached entry of its relaxed state as it is.
  std::shared_ptr<const MaskEntry> compute(const Lexer& lexer, const Vocabulary& vocab, uint32_t state,
                                           bool* borrowed) const;
  static std::shared_ptr<MaskEntry> resolve(const Lexer& lexer, const Vocabulary& vocab, uint32_t state,
                                            std::shared_ptr<const SharedMaskEntry> shared);
  bool admits_plain(const Lexer& lexer, uint32_t state, uint32_t max_token_bytes) const;
  bool explore_plain(const Lexer& lexer, uint32_t state, size_t max_pairs, uint32_t max_states) const;
  bool loops_on_plain(const Lexer& lexer, uint32_t state) const;

  mutable std::mutex admit_mu_;
  mutable std::unordered_map<uint64_t, bool> admit_memo_;  // (state, bound) -> admits
  mutable std::unordered_map<uint64_t, CharSummary> loop_memo_;  // (state, groups); admit_mu_
  mutable std::unordered_map<uint64_t, bool> sandwich_memo_;  // (lo, hi) -> their entries agree; admit_mu_
  mutable std::unordered_map<uint32_t, std::vector<uint32_t>> long_tokens_;  // admit_mu_
  static constexpr uint32_t kSlotBits = 8;
  static constexpr uint32_t kSlotBlocks = 4096;  // lexer states up to 1M, as the lexer
  struct SlotBlock {
    std::atomic<const MaskEntry*> slot[1u << kSlotBits];
    SlotBlock() {
      for (auto& x : slot) x.store(nullptr, std::memory_order_relaxed);
    }
  };
  mutable std::mutex mu_;  // guards owned_, bytes_ and block creation
  mutable std::atomic<SlotBlock*> slots_[kSlotBlocks] = {};
  mutable std::vector<std::unique_ptr<SlotBlock>> blocks_;
  mutable std::vector<std::shared_ptr<const MaskEntry>> owned_;
  mutable size_t bytes_ = 0;
  size_t capacity_;
  bool plain_slice_, shared_masks_, loop_skip_;
};

}  // namespace stencil
