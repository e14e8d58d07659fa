// What the cost memos (RowCosts) key a parser row on: its content, not its serial. A row's costs
// depend on its items, its vetoes and the rows below it, and nothing else; a mask's walk pushes
// the same rows again at every token inside a lexeme (the string closing, then `,`), each with a
// new serial, so memos keyed on serials found nothing from one mask to the next. Here a row
// gets the id of an earlier row with the same items and vetoes over rows of the same id.
#pragma once
#include <cstdint>
#include <vector>

#include "parser/earley.h"

namespace stencil {

class RowIdents {
 public:
  // The id of row `row` of p (ids start at 1): equal ids, equal items and vetoes over equal rows
  // below. Memoized per row serial; a row the table cannot hold gets an id of its own.
  uint64_t at(const EarleyParser& p, uint32_t row) {
    if (row < known_.size() && known_[row].serial == p.row(row).serial) return known_[row].id;
    return find(p, row);
  }
  uint64_t top(const EarleyParser& p) { return at(p, static_cast<uint32_t>(p.num_rows() - 1)); }

 private:
  uint64_t find(const EarleyParser& p, uint32_t row);
  uint64_t intern(const EarleyParser& p, uint32_t row, uint64_t below);

  struct Known {
    uint64_t serial = 0;  // (parser serials start at 1)
    uint64_t id = 0;
  };
  std::vector<Known> known_;  // per row index
  // Rows seen lately, one per hash slot: a row's content, the id of the rows below it, its id.
  // Their vectors are reused (no allocation per row once the table has warmed).
  struct Interned {
    uint64_t hash = 0, below = 0, id = 0;  // id 0: empty
    std::vector<EarleyItem> items;
    std::vector<uint32_t> vetoes;
  };
  static constexpr size_t kSlots = 256;
  // Larger rows get ids of their own: their copies would cost more than the memos save.
  static constexpr size_t kMostItems = 512;
  std::vector<Interned> interned_ = std::vector<Interned>(kSlots);
  uint64_t next_id_ = 0;
};

}  // namespace stencil
