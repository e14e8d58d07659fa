// Whether a JSON text being written can still turn out to be a given value. uniqueItems refuses an
// item equal to an earlier one as the item ends (parser/json_checks.cpp); an item whose text so far
// can only be finished as an earlier item is then a dead end the mask must not enter
// (matcher/item_guard.h). These functions judge texts against values: every spelling counts
// (white space, members in any order, escapes, 1 == 1.0 == 10e-1), so a "no" is final whatever
// the text goes on with.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace stencil {

// A JSON value read from its canonical form (json/canon.h).
struct JsonTree {
  char kind = 'n';                // 's' string, '#' number, 't' 'f' 'n', '[' array, '{' object
  std::string atom;               // a string's decoded bytes, or a number's canonical form
  std::vector<std::string> keys;  // an object's keys, sorted
  std::vector<JsonTree> items;    // an array's items, or an object's values in key order
  std::string canon;              // the canonical form (of the whole value only)
  uint64_t id = 0;                // a hash of canon (of the whole value only)
};

// The tree of a canonical form (canonical_value's output); false when it is not one.
bool tree_of_canonical(std::string_view canon, JsonTree& out);

// Whether `text`, the start of one JSON value (white space around allowed), can be continued
// into a spelling of `value`. A text that already holds a whole value is judged by that value
// (what follows it is not read).
bool may_spell(std::string_view text, const JsonTree& value);

// may_spell one byte at a time: a text fed to it, and what may still follow. Copies go on
// separately (a search tries each next byte on a copy).
class Speller {
 public:
  Speller() = default;
  explicit Speller(const JsonTree& value);
  // Reads a byte; false once the text can no longer become a spelling of the value (then for
  // good). After the whole value, bytes are not read.
  bool feed(char c);
  bool feed(std::string_view text);
  // Whether feed(c) would keep it alive, where that is plain from the state (1 or 0), else -1:
  // a search asks it of every byte before copying the few that go on.
  int peek(char c) const;
  bool alive() const { return alive_; }
  // Whether the text ends inside a number (its next digits, point or exponent go on with it).
  bool in_number() const { return alive_ && !done_ && stack_.back().phase == Phase::Number; }
  const JsonTree* value() const { return value_; }

 private:
  enum class Phase : uint8_t {
    Value,
    String,
    Number,
    Word,               // before a value, inside a scalar
    ArrayOpen,
    ArrayComma,
    ArrayAfter,         // after `[`, after a comma, after an item
    ObjectOpen,
    ObjectComma,
    ObjectAfter,      // after `{`, after a comma, after a member
    Key,
    Colon,
    ObjectValue,                   // inside a key, after it, inside its value
  };
  struct Frame {
    const JsonTree* node;
    Phase phase;
    uint32_t k = 0;             // items or members read; a word's or a string's bytes matched
    uint32_t key = 0;           // the key read (Colon, ObjectValue)
    std::vector<uint8_t> used{};  // an object's keys written
    std::string text{};         // a number's bytes, a key's bytes, a string's escape in progress
  };
  bool begin(char c);
  static int peek_begin(const JsonTree& node, char c);
  static int peek_key(const Frame& f, char c);
  static bool unused_key_begins(const Frame& f, std::string_view prefix);
  static size_t unused_key(const Frame& f, std::string_view key);
  bool string_byte(char c);
  bool key_byte(char c);
  void complete();
  bool die();
  std::vector<Frame> stack_;
  const JsonTree* value_ = nullptr;
  bool alive_ = true, done_ = false;
};

// A list being written: the text after an array's `[`.
struct ListProgress {
  bool closed = false;            // its `]` was read (nothing of the list is being written)
  std::vector<std::string> done;  // canonical forms of its complete items, in order
  size_t last_from = 0;           // where the item being written starts (after the last comma)
};
// Reads `text` as the start of a list; false when it is not one (a caller then judges nothing).
bool read_list(std::string_view text, ListProgress& out);

// Where the bytes of a list's text stand, from the start of an item on: brackets open, inside a
// string (after a backslash). Enough to tell whether later bytes end the item at a comma.
struct ListLex {
  int depth = 0;
  bool in_string = false, escape = false;
  // Reads `bytes`; true when they hold a comma of the list itself (then no byte is read after it),
  // false when they do not (or close the list first).
  bool read_to_comma(std::string_view bytes);
};

// Whether the item being written at the end of `tail` (the text of a list from the start of one
// of its items on) may still end equal to one of `earlier` (the items before the tail) or to an
// item the tail completes before it. False once the tail closes the list.
bool may_repeat(std::string_view tail, const std::vector<const JsonTree*>& earlier);

}  // namespace stencil
