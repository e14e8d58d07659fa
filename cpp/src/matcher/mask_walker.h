// A matcher's token mask: the inner tokens the mask cache holds for the lexer state, plus the
// sub-tries below its boundaries (where a lexeme ends inside a token), walked over the parse
// state with the lexer and parser; runs of boundaries that end one lexeme alike share the
// parser's work. The last mask is kept while nothing it depends on changes (the repeat memo).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "matcher/lexer_epoch.h"
#include "matcher/parse_state.h"
#include "support/deadline.h"
#include "support/flat_map.h"
#include "support/token_bits.h"
#include "tokens/mask_cache.h"
#include "tokens/trie.h"

namespace stencil {

class MaskWalker {
 public:
  // Told about each token a walk allows below a boundary, with ps right after that token (its
  // lexer state in the top frame, the parser's top row its rows): a budget-aware mask reads the
  // cost after those tokens there instead of walking the trie again (TokenBudget).
  class CostSink {
   public:
    virtual void token_reached(int32_t token, ParseState& ps) = 0;
    // The cost the last token_reached noted, and a token noted with a cost known to be that of
    // another (a leaf of the same byte in the same run: MaskWalker::walk_leaf).
    virtual uint32_t last_noted() const = 0;
    virtual void token_noted(int32_t token, uint32_t cost) = 0;
    // How many tokens it was told about, and forgetting those told after the first n of them.
    virtual size_t noted() const = 0;
    virtual void forget_after(size_t n) = 0;
    // Keeps, of the tokens told from the n-th on, those whose flag in `keep` is set.
    virtual void keep_noted(size_t n, const std::vector<uint8_t>& keep) = 0;

   protected:
    ~CostSink() = default;
  };

  explicit MaskWalker(const CompiledGrammar& g);
  MaskWalker(const MaskWalker& o) : MaskWalker(*o.g_) {}  // a copy starts without a memo
  MaskWalker& operator=(const MaskWalker&) = delete;

  // Writes the first `need` words of the mask of `ps` (history: its accepted steps), computed in
  // `epoch`, the lexer epoch ps lives in. Leaves ps as it was. With a sink, the boundaries are
  // walked (no replay of the last mask) and each token they allow is reported to it.
  void fill(ParseState& ps, const LexerEpoch& epoch, const std::vector<Step>& history, uint32_t* words, size_t need,
            CostSink* sink = nullptr);
  // Whether the next fill of ps replays the last mask (nothing it depends on changed): the tokens
  // it reached past a lexeme's end are then the same too.
  bool replays(const ParseState& ps) const {
    return memo_on(ps) && memo_holds(ps.frames().back(), ps.parser().top().serial);
  }
  // Forgets the memos: their entries and lexer states belong to an epoch that is gone.
  void forget() {
    memo_ = MaskMemo{};
    walks_ = BoundaryWalks{};
    for (LiveRoots& e : live_roots_) e.last_use = 0;  // states of the old epoch
  }

 private:
  // The last mask and what it depended on: the lexer state, the parser's row stack (its top
  // row's serial) and whether a lexeme had just ended. Inside a long string the next step
  // usually matches all three, and then the mask is a copy. A mask that a completion check
  // computed from the bytes of the current lexeme is not kept (those bytes change).
  struct MaskMemo {
    uint32_t state = 0, rows = 0;
    uint64_t serial = 0;
    bool fresh = false, valid = false;
    const MaskEntry* entry = nullptr;       // its inner bits
    std::shared_ptr<const MaskEntry> keep;  // owns the entry when the cache could not
    std::vector<int32_t> extra;             // tokens the boundary walks, specials and EOS added
    std::vector<int32_t> dropped;           // inner tokens that enter vetoed lexemes only
  };
  // Whether a mask of ps may be kept and replayed at all. Token budgets make the mask depend on
  // the tokens a lexeme spans, which the memo does not key on.
  bool memo_on(const ParseState& ps) const {
    return g_->limits().repeat_memo && ps.parser().num_rows() == ps.frames().back().rows &&
           !ps.lexer().has_token_limits();
  }
  bool memo_holds(const Frame& top, uint64_t serial) const {
    return memo_.valid && memo_.state == top.state && memo_.rows == top.rows && memo_.serial == serial &&
           memo_.fresh == top.fresh;
  }
  void replay_memo(uint32_t* words, size_t need) const;
  // Boundary walks kept across fills over one row stack (the top row's serial, the rows, fresh):
  // bytes read inside a lexeme change its lexer state, not the rows, and a string under a
  // maxLength has a state per count, every one of which its closing quote leaves alike. Per
  // boundary node and the lexer state after its byte (from a state that accepts nothing, so the
  // byte cannot end the lexeme before it), the tokens its walk allowed, kept where no check read
  // the current lexeme's bytes: the node holds the token's own bytes above the root, and the
  // rows the bytes before the lexeme.
  // The map outlives row stacks (no allocation per walk kept, nor per new row): an entry is this
  // row stack's only where the walk it points to bears its key.
  struct BoundaryWalks {
    uint64_t serial = 0;  // 0: empty (serials start at 1)
    uint32_t rows = 0;
    bool fresh = false;
    struct Walk {
      uint64_t key;
      uint32_t begin, end;  // of ids
    };
    FlatMap64 at;  // walk_key -> index in walks
    std::vector<Walk> walks;
    std::vector<int32_t> ids;
  };
  static uint64_t walk_key(size_t node, uint32_t after) { return uint64_t(node) << 32 | after; }
  // Whether a boundary from lexer state `before` may keep or reuse its walk: its byte cannot end
  // the lexeme before it (a state that accepts nothing), so the state after the byte says all.
  bool walks_from(uint32_t before) const { return walks_on_ && ps_->lexer().state(before).accepting.empty(); }
  void begin_walks(const Frame& top, uint64_t serial);
  bool walk_known(size_t node, uint32_t after, uint32_t* words);
  void keep_walk(size_t node, uint32_t after, size_t mark, uint64_t text_reads);
  void keep_memo(const Frame& top, uint64_t serial, const MaskEntry* entry, std::shared_ptr<const MaskEntry> keep);

  void set(uint32_t* words, int32_t t) {
    token_bits::set(words, t);
    walk_ids_.push_back(t);
  }
  void add_duplicates(uint32_t* words) const;
  void drop_vetoed(size_t root, uint32_t* words);
  bool refused_inside(uint32_t row, uint32_t t, bool keys, uint32_t lex_from, uint32_t root, bool* left);
  struct LiveRoots {
    struct Root {
      uint32_t node;
      uint64_t live_bits;  // LexState::live_bits after the node's byte
    };
    uint32_t state = 0;
    uint64_t last_use = 0;  // 0: empty
    std::vector<Root> nodes;
  };
  const std::vector<LiveRoots::Root>& live_roots(uint32_t state);
  void drop_subtree(const TokenTrie& trie, size_t node, uint32_t* words);
  void add_specials(uint32_t* words);
  void walk_whole_trie(size_t root, uint32_t* words);
  void walk(const std::vector<TrieNode>& nodes, size_t first, size_t root, uint32_t* words);
  void walk_boundaries(const MaskEntry& entry, const MergedRuns* merged, size_t root, uint32_t* words);
  bool merged_run(const std::vector<Boundary>& bounds, const MergedRuns::Run& run, size_t root, uint32_t* words);
  void merged_tokens(const MergedClass& m, const TrieNode& node, uint32_t* words);
  void merged_keys(const std::vector<Boundary>& bounds, const MergedRuns::Run& run, uint32_t closing, bool keys,
                   bool by_key, size_t mark, size_t noted, size_t root, uint32_t* words);
  static constexpr size_t kHeadUnknown = ~size_t(0), kHeadNot = ~size_t(0) - 1;
  size_t plain_key_head(bool fresh) const;
  bool key_by_length(size_t head, size_t d, bool by_key, bool keys, size_t root);
  void enter_boundary(const Boundary& b, size_t d, size_t root);
  void place_prefix(const Boundary& b, size_t d);
  void place_prefix(const Boundary& b, size_t d, std::string_view prefix);
  bool in_run(const Boundary& first, const Boundary& b, bool any_prefix) const;
  size_t end_now_run(const std::vector<Boundary>& bounds, size_t k, size_t root, uint32_t* words, bool* shared);
  void run_token(int32_t token, uint32_t* words);
  void run_keys(uint32_t closing, size_t root, size_t d, bool keys);
  void key_raw(std::string_view prefix, size_t root, uint8_t closing);
  bool key_in_sets();
  bool closes_written(uint32_t closing, uint8_t byte, size_t root, size_t d, const Boundary& b,
                      std::string_view prefix);
  bool key_known_new(size_t root, size_t d);
  bool children_known(const std::vector<TrieNode>& nodes, size_t n2, bool starts_only, uint32_t pushed,
                      bool leaves) const;
  void walk_children(const std::vector<TrieNode>& nodes, size_t n2, size_t root, size_t d, uint32_t* words,
                     bool starts_only, uint32_t pushed, bool leaves);
  void walk_leaf(const std::vector<TrieNode>& nodes, size_t c, size_t root, size_t d, uint32_t* words);
  size_t ended_run(const std::vector<Boundary>& bounds, size_t k, size_t d, uint32_t q, size_t root, uint32_t* words);

  const CompiledGrammar* g_;
  const Vocabulary* vocab_;
  bool needs_text_;  // the grammar has completion checks: they read the bytes above a boundary
  // This fill's parse state and history (set by fill).
  ParseState* ps_ = nullptr;
  const std::vector<Step>* history_ = nullptr;
  CostSink* sink_ = nullptr;
  MaskMemo memo_;
  BoundaryWalks walks_;
  bool walks_on_ = false;          // this fill reads and keeps boundary walks (no sink, memo_on)
  std::vector<int32_t> walk_ids_;  // this fill's extra tokens
  std::vector<int32_t> dropped_;   // this fill's inner tokens taken out (drop_vetoed)
  std::string drop_bytes_;         // drop_vetoed's scratch: the key's bytes up to the node walked
  // end_now_run's scratch: the sets of names its push looked the key up in, and the boundaries
  // whose own key is in one
  std::vector<std::vector<std::string>> key_sets_;
  std::vector<size_t> alone_;
  // merged_run's scratch: whether it judges keys, the boundary (in its run) of each token it
  // allowed, and each boundary's verdict
  bool judge_keys_ = false;
  std::vector<uint32_t> merged_from_;
  std::vector<uint8_t> verdicts_, kept_;
  uint32_t key_from_ = 0;  // where the run's key lexeme begins; key_head_: its bytes before the token
  std::string key_head_, key_raw_, key_decoded_;
  std::string_view key_;  // key_raw_'s key, decoded (of key_raw_ or key_decoded_), where key_readable_
  bool key_readable_ = false;
  // The lengths of a run's key names (bit length % 64): a key of no such length is none of them.
  struct KeyLengths {
    uint64_t bits = 0;
    bool may_hold(size_t n) const { return (bits >> (n & 63)) & 1; }
    void add(const std::vector<std::string>& names) {
      for (const std::string& name : names) bits |= uint64_t(1) << (name.size() & 63);
    }
  };
  KeyLengths sets_lengths_;  // of key_sets_
  // run_keys: what closes_written reads once for a run
  struct WrittenKeys {
    bool never = true;  // no token of the run closes a written key
    bool slow = false;  // ask ParseState::closes_written_key for each token
    bool found = false, any = false;
    std::vector<std::string> keys;  // the forbidden keys (sorted), where `any`
    KeyLengths lengths;             // of keys
  } written_;
  // walk_leaf's verdicts, by byte, of the current run (leaf_run_: see leaf_class)
  struct LeafVerdict {
    uint64_t run = 0;
    bool allowed = false;
    uint32_t cost = 0;  // what the cost sink noted for it
  };
  LeafVerdict leaf_verdicts_[256];
  uint64_t leaf_run_ = 0, leaf_clock_ = 0;
  struct LeafClass {
    uint32_t state;
    uint8_t byte;
    bool ended;
    uint64_t run;
  };
  std::vector<LeafClass> leaf_classes_;  // this fill's runs whose leaf verdicts carry over
  uint64_t leaf_class(uint32_t state, uint8_t byte, bool ended, bool shared);
  bool leaf_known(const TrieNode& leaf, uint32_t* words);
  uint32_t placed_parent_ = ~0u;   // see place_prefix
  // drop_vetoed's scratch: per trie depth, the lexer state and the node on the walk's path.
  std::vector<uint32_t> drop_states_, drop_path_;
  LiveRoots live_roots_[16];
  uint64_t live_roots_clock_ = 0;
  deadline::Ticker ticker_;  // trie nodes walked, for the time limits
};

}  // namespace stencil
