// Hash-consed regular expressions over bytes. Every expression is built
// through ExprStore, which applies simplification laws so that equal
// expressions (up to those laws) get the same id: derivatives then reach a
// finite, small set of states in practice, and state identity is id equality.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "json/number_range.h"
#include "stencil/ids.h"
#include "support/byteset.h"
#include "support/hash.h"

namespace stencil {

// Number: a JSON number whose exact value lies in a range (json/number_range.h), a = state index.
enum class ExprKind : uint8_t { Nothing, Empty, Bytes, Concat, Or, And, Not, Repeat, Number };

constexpr uint32_t kUnbounded = 0xFFFFFFFFu;

struct ExprNode {
  ExprKind kind;
  bool nullable : 1;
  bool boolean : 1;  // contains And/Not: emptiness is no longer structural
  // relax_bounds leaves it as it is, whatever the limit: no complement, no repetition bounded
  // above one, none of an item that may be empty (literals, keys, free strings)
  bool no_bounds : 1;
  // The largest finite upper bound of a repetition inside (0: none; 65535: that or more), set as
  // the node is made: the tests for counts worth lifting or lowering skip most states at once.
  // (Packed beside the flags: a node stays 28 bytes, and large grammars hold millions.)
  uint16_t max_bound = 0;
  uint32_t a = 0, b = 0;  // Concat: a, b; Repeat: a = item; Bytes: a = byteset index; Not: a
  uint32_t min = 0, max = 0;  // Repeat bounds
  uint32_t args_begin = 0, args_len = 0;  // Or/And children in args_
};
static_assert(sizeof(ExprNode) == 28, "ExprNode grew: large grammars hold millions of them");

class ExprStore {
 public:
  static constexpr ExprId kNothing = 0;
  static constexpr ExprId kEmpty = 1;
  static constexpr ExprId kAnyByte = 2;
  static constexpr ExprId kAnyByteStar = 3;  // (any byte)*: the full language

  explicit ExprStore(size_t max_nodes = 4'000'000);

  ExprId bytes(const ByteSet& set);
  ExprId byte(uint8_t b);
  ExprId literal(const std::string& s);
  ExprId concat(ExprId a, ExprId b);
  ExprId concat(const std::vector<ExprId>& items);
  ExprId alt(const std::vector<ExprId>& items);
  ExprId conj(const std::vector<ExprId>& items);
  ExprId negate(ExprId a);
  ExprId repeat(ExprId a, uint32_t min, uint32_t max);
  // The numbers that continue the state s (kNothing when none is in range). Equal states (by
  // number_key: a set's states by their set's identity) are one expression.
  ExprId number(const NumberState& s);
  const NumberState& number_state(uint32_t i) const { return num_states_[i]; }

  // e with every repetition whose upper bound is at least `limit` made unbounded, and (outside
  // intersections) lower bounds above `limit` lowered to it: equal to e on every string of fewer
  // than `limit` bytes when each repeated item consumes a byte, and a superset of e. kNothing
  // when e holds a complement (lifting a bound under it would shrink the language) or nests
  // too deeply.
  // (`keep_mins`: every lower bound as it is, as before the lowering: the cost searches' choice)
  ExprId relax_bounds(ExprId e, uint32_t limit, bool keep_mins = false);
  // e with the same bounds lifted, its language only required to hold e's (a search's necessary
  // condition: nothing e accepts is lost): an intersection lifts any of its children, and a
  // complement stays where nothing under it is lifted; `lower_mins`: the lower bounds of the
  // repetitions lifted go to 0 too (one expression for every count). kNothing where a bound
  // under a complement would be lifted, or e nests too deeply.
  ExprId lift_bounds(ExprId e, uint32_t limit, bool lower_mins);
  // A subset of e with no repetition bounded at `limit` or more (a superset inside a complement):
  // outside complements such a repetition is cut to its minimum, inside one it is made unbounded
  // with a minimum of 0. A proof that e's derivatives stay alive on some set of strings may run
  // on it instead (fewer states: a count under a complement no longer moves at every byte), since
  // a word of the subset is one of e. kNothing where nothing is left of e.
  ExprId shrink_bounds(ExprId e, uint32_t limit);

  // e with the upper bounds past `clamp` of repetitions whose item takes at least two bytes (a
  // count of words or groups, not of characters) lowered to `clamp` (`lift`: made unbounded).
  // Lowering a bound shrinks the language and lifting grows it, so recount(e, c, false) ⊆ e ⊆
  // recount(e, c, true): what holds alike at both ends holds at e (MaskCache's sandwich).
  // kNothing under a complement, which turns that order around.
  ExprId recount(ExprId e, uint32_t clamp, bool lift);
  // An upper bound on the bytes that complete any prefix of a word of e (the shortest
  // completion of any derivative): relax_bounds lifts a bound beside an intersection only where
  // this fits; kUnbounded under an intersection or a complement.
  uint64_t completion_bound(ExprId e);
  // The largest finite upper bound of a repetition of an item of one byte or less (a count of
  // characters, which moves at every byte); 0 when none.
  uint32_t char_count_bound(ExprId e);

  // The fewest bytes of a word of e: exact without intersections and complements, a lower bound
  // with them.
  uint32_t fewest_bytes(ExprId e) { return least_bytes(e, 0); }
  // Whether e's language is one string (bytes of one byte each, concatenated), appended to *out;
  // false where it is not, or past `limit` bytes.
  bool word(ExprId e, std::string* out, size_t limit) const;
  // A word of a language that holds e's, read off the structure: each intersection as its operand
  // whose word is longest (every word of e is a word of each operand, so no word of e is shorter
  // than any operand's shortest). Where the word is in e's language it is a shortest word of e.
  // False under a complement or a number, or past `limit` bytes or a work bound.
  bool shortest_candidate(ExprId e, std::string* out, size_t limit) const;
  const ExprNode& node(ExprId e) const { return nodes_[e]; }
  // Whether e is f or an alternation with f among its (sorted) children: e's language holds f's.
  bool holds(ExprId e, ExprId f) const;
  // Whether x's language lies within y's, proved from their structure alone (equal ids, an
  // intersection with an operand within y, an alternative of y, concatenations and repetitions
  // part by part, byte sets): false where no such proof is found within a few hundred nodes,
  // whatever the languages. (`body & ~P` lies within `body`: a free key beside any string.)
  bool within(ExprId x, ExprId y) const;
  // Where bytes stand in the words of an expression: first, anywhere, last.
  enum class Span { kFirst, kAll, kLast };
  // The bytes that may stand there in a word of e, read off the structure: a superset (every byte
  // under a complement or a number, or past `work` nodes). Anywhere (kAll), memoized per
  // expression where the work did not run out (the ceilings' rules and conj's full counts ask it
  // of every derivative; their states share most nodes).
  ByteSet byte_span(ExprId e, Span at, int* work) const;
  const ByteSet& byteset(uint32_t i) const { return bytesets_[i]; }
  const ExprId* args(const ExprNode& n) const { return args_.data() + n.args_begin; }
  bool nullable(ExprId e) const { return nodes_[e].nullable; }
  size_t size() const { return nodes_.size(); }
  size_t max_nodes() const { return max_nodes_; }
  size_t memory_bytes() const;
  std::string to_string(ExprId e) const;
  // A form equal for equal expressions built in any store (children of Or/And
  // sorted by form): the cross-grammar mask cache keys on it. False when the
  // form would pass `limit` bytes or nest too deeply.
  // Repetition bounds above `clamp` print as `clamp`: a walk of at most
  // clamp - 1 bytes cannot tell them apart (each step lowers a bound by one).
  bool canonical(ExprId e, std::string& out, size_t limit, uint32_t clamp = kUnbounded) const;
  std::string to_string(ExprId e, int depth) const;
  // All byte sets that occur in the store, for the byte-class partition.
  const std::vector<ByteSet>& all_bytesets() const { return bytesets_; }

 private:
  ExprId intern(ExprNode n, const std::vector<ExprId>* args);
  // (mode: 0 relax_bounds, 1 lift_bounds, 2 lift_bounds lowering the minimums, 3 relax_bounds
  // keeping the minimums)
  ExprId relax(ExprId e, uint32_t limit, int mode, int depth, std::unordered_map<ExprId, ExprId>& memo);
  ExprId relax_args(ExprId e, uint32_t limit, int mode, int depth, std::unordered_map<ExprId, ExprId>& memo);
  ExprId shrink(ExprId e, uint32_t limit, bool subset, int depth, std::unordered_map<ExprId, ExprId>& memo);
  ExprId recount(ExprId e, uint32_t clamp, bool lift, int depth);
  // The fewest bytes of a word of e: exact without intersections and complements, a lower bound
  // with them (Lexer::expr_bytes' `shortest` is the same recurrence, an upper bound there).
  uint32_t least_bytes(ExprId e, int depth);
  bool shortest_candidate(ExprId e, std::string* out, size_t limit, int* work) const;
  uint64_t lifted_bound(ExprId e, uint32_t limit) const;
  // One concatenation node head · rest, as it is (concat unrolls chains around it).
  ExprId concat_node(ExprId head, ExprId rest);
  uint64_t node_hash(const ExprNode& n, const ExprId* args, size_t nargs) const;
  bool same_node(ExprId id, const ExprNode& n, const ExprId* args, size_t nargs) const;
  void grow_table();

  uint32_t char_count_bound(ExprId e, int depth);
  void drop_full_counts(std::vector<ExprId>& flat);  // conj's: C* beside an operand within it
  bool within(ExprId x, ExprId y, int* work) const;

  // recount's answers by (expression, clamp, lift), least_bytes' and char_count_bound's by
  // expression: the states of one lexeme share most of their sub-expressions, so each new state
  // costs only its new nodes.
  std::unordered_map<uint64_t, ExprId> recount_memo_;
  std::unordered_map<ExprId, uint32_t> least_memo_;
  std::unordered_map<ExprId, uint32_t> char_count_memo_;
  mutable std::unordered_map<ExprId, ByteSet> span_memo_;  // byte_span's, anywhere
  std::vector<ExprNode> nodes_;
  std::vector<ExprId> args_;
  std::vector<ByteSet> bytesets_;
  ExprId byte_ids_[256] = {};  // byte(b) once made (0: not yet; no byte's expression is kNothing)
  // Hash-consing table: open addressing over node ids + 1 (0: empty). Lookups compare against
  // the stored nodes directly, so creating or finding a node allocates nothing.
  std::vector<uint32_t> table_;
  size_t table_used_ = 0;
  std::vector<ExprId> flat_;  // alt/conj working list (neither calls the other)
  // alt's counted children that a shared rest absorbs (drop_absorbed)
  struct CountedRun {
    ExprId rest, item;
    uint32_t min;
    ExprId id;
  };
  std::vector<CountedRun> runs_;
  void drop_absorbed(std::vector<ExprId>& flat);
  // conj's law for counts of characters beside a count of single bytes; false: flat unchanged
  bool merge_byte_counts(std::vector<ExprId>& flat);
  bool takes_first(ExprId rest, ExprId item) const;  // item·rest ⊆ rest, read off rest = C* Z
  std::vector<NumberState> num_states_;
  std::unordered_map<std::string, uint32_t> num_index_;  // number_key -> index in num_states_
  size_t num_bytes_ = 0;
  size_t max_nodes_;
};

}  // namespace stencil
