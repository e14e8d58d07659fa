// uniqueItems without dead ends. The unique_item check refuses an item equal to an earlier item
// of its array only as the item ends; by then the item may have nothing else left to be
// (`[true,tru`, `[0,0` over integers, `[{"a":1,"b":true},{"a":1,"b":tru`), and the mask would be
// empty. The guard refuses a token after which an item of a unique list can only end as a repeat,
// so every token a mask allows leads somewhere valid.
//
// How: json/spelling.h says whether the item's text so far can still be written on into some
// earlier item (any spelling). Where it can, a search over bytes (the grammar's own pushes) looks
// for a continuation that leaves every such earlier item: the item is alive as soon as one byte
// the grammar accepts takes it off them all, or completes it unlike them. A search that runs out
// of its budget finds the item dead: the budget goes only where every byte the grammar allows
// keeps the item a possible repeat, which is what number spellings of a used value do without
// end (`0`, `0.0`, `0e5`, `-0`, ...). Long forced runs (an enum's shared prefix) cost one node a
// byte and no budget.
#pragma once
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "grammar/ir.h"
#include "json/spelling.h"

namespace stencil {

class ParseState;
class Vocabulary;

class ItemGuard {
 public:
  // Whether grammar g has unique_item checks (else the matcher holds no guard).
  static bool needed(const Grammar& g);

  // Whether the output so far is inside an item of a unique list that can only end equal to an
  // earlier item of its list (a token that led here must be refused). Leaves ps as it was.
  bool dead(ParseState& ps);
  // In a mask row just filled at this state, clears the tokens that lead to a dead item.
  void filter(ParseState& ps, const Vocabulary& vocab, uint32_t* words);
  // Drops what it memoized of a parse state that is replaced (serials mean nothing in another).
  void forget();

 private:
  // One list being written: its earlier items and the text of the item being written.
  struct ListMemo;
  struct List {
    std::vector<const JsonTree*> earlier;
    // The memo's items `earlier` points into, held: a search nested inside this list's (another
    // list's item judged at a byte it tries) may take the memo's slot over, and this list's
    // dangers still read them.
    std::shared_ptr<const std::deque<JsonTree>> kept;
    std::deque<JsonTree> own;  // earlier items past the memo (a token being tried wrote them)
    std::string tail;
    uint32_t item_at = 0;  // byte offset of the item being written
    ListMemo* memo = nullptr;
    // For the verdicts' keys: the row where the item began, as its lexer state and dotted
    // positions (made once).
    std::string start;
  };
  // The parsed complete items of a list, by the list's first row, up to an item start whose text
  // version says the bytes before it are unchanged: a long list is parsed once, not per token.
  // With the earlier items the item being written may still spell, for a stable text of it: the
  // tokens tried after it only narrow them.
  struct ListMemo {
    ListMemo() = default;
    // A copy (a copied matcher's guard) starts empty: a memo's dangers point into its own items.
    ListMemo(const ListMemo&) {}
    ListMemo& operator=(const ListMemo&) = delete;
    void reset();
    uint64_t row_serial = 0;  // 0: empty
    uint32_t done_end = 0;    // byte offset of the item after the parsed ones
    uint64_t version = 0;
    // (made afresh when the memo starts again: lists read before still hold the old items)
    std::shared_ptr<std::deque<JsonTree>> earlier = std::make_shared<std::deque<JsonTree>>();
    bool has_danger = false;
    std::string danger_tail;
    std::vector<Speller> danger;
  };
  // The earlier items the item being written may still spell, each as a Speller fed its text.
  using Danger = std::vector<Speller>;
  Danger danger_of(const List& list);
  static Danger narrowed(const Danger& from, std::string_view bytes);
  bool read_list_at(ParseState& ps, uint32_t row, List& out);
  bool item_dead(ParseState& ps, List& list);
  bool witness(ParseState& ps, const Danger& danger);
  enum class Probe : uint8_t { Found, Cut, Exhausted };
  Probe probe(ParseState& ps, const Danger& danger, int depth);
  struct Node;
  bool expand(ParseState& ps, const Danger& danger, size_t base, Node& node);
  void drop_respellings(ParseState& ps, const Danger& danger, std::vector<std::pair<uint8_t, Danger>>& keep,
                        size_t base);
  static int respelling_cost(bool in_number, uint8_t b);
  bool others_dead(ParseState& ps);
  // A token to try: the earlier items its item may still spell after it, where that is all there
  // is to know (one list, no list opened inside the token); else the whole state is judged.
  struct Candidate {
    int32_t token;
    bool known = false;
    Danger danger{};
  };
  void add_candidates(const Vocabulary& vocab, const uint32_t* words, const List& list, bool alone,
                      std::vector<Candidate>& out);
  bool refuses(ParseState& ps, List& list, const Candidate& c, std::string_view bytes);
  // What tokens that end an item at a comma of its list were found to do, in one fill: by the
  // text after their comma (may it spell an earlier item), by the text before it (the item it
  // ends, if readable).
  struct Crossings {
    std::unordered_map<std::string, bool> after;
    std::unordered_map<std::string, std::pair<bool, JsonTree>> ended;
  };
  bool crosses_into_repeat(const List& list, const ListLex& at_tail, std::string_view bytes, Crossings& seen);
  // The vocabulary's tokens that hold a comma (they may end one item and begin another): all, and
  // those that end an item at a comma of its list when they start outside any string or bracket
  // of the item, or inside a string of it.
  struct CommaTokens {
    std::vector<int32_t> all, from_outside, from_string;
  };
  const CommaTokens& comma_tokens(const Vocabulary& vocab);

  // A search's nodes by the bytes from its root: the children a node was found to have (none
  // takes the item off every earlier one), so that the next, deeper pass of the search goes down
  // without asking its bytes again. One per witness call (a search of another list nests).
  struct Node {
    std::vector<std::pair<uint8_t, Danger>> keep;
    bool none = false;  // no byte the grammar takes keeps any (before white space is dropped)
  };
  struct Search {
    std::unordered_map<std::string, Node> nodes;
    std::string path;
  };
  Search* search_ = nullptr;
  int nodes_ = 0;    // what the search in progress may still spend
  int nesting_ = 0;  // searches of other lists asked from within a search
  bool numbers_ = true;  // the search goes on with numbers (its second pass)
  std::vector<std::vector<uint8_t>> class_bytes_;  // the bytes of each lexer class
  const void* classes_of_ = nullptr;               // the classes they were read from
  static constexpr size_t kMemos = 4;
  ListMemo memos_[kMemos];
  size_t next_memo_ = 0;
  uint32_t stable_end_ = ~0u;  // bytes past it are a token being tried: not memoized
  // Verdicts of item_dead by what decides them: the parser's row where the item began (its lexer
  // state and dotted positions, not its place), the item's text without white space outside
  // strings, and the earlier items it may spell. The same item written again later in the list,
  // or in another list of the same array schema, is not searched again.
  std::unordered_map<std::string, bool> verdicts_;
  std::string verdict_key(ParseState& ps, List& list, std::string_view more, const Danger& danger);
  bool item_dead(ParseState& ps, List& list, std::string_view more, const Danger& danger);
  std::shared_ptr<const CommaTokens> comma_tokens_;  // shared with copies of the matcher
  const Vocabulary* comma_vocab_ = nullptr;
};

}  // namespace stencil
