// What a token walk asks about looping states (MaskCache::inner_walk): which characters lead a
// state, or one loop-shaped part of it, back to itself, and a state with its bounds lifted. Kept
// per walk in small direct-mapped slots in front of the locked memos of the mask cache and the
// lexer: a walk asks at most nodes of a looping state.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "lexer/lexer.h"
#include "support/char_summary.h"
#include "tokens/mask_cache.h"

namespace stencil {

class WalkLoops {
 public:
  WalkLoops(const MaskCache& cache, const Lexer& lexer) : cache_(cache), lexer_(lexer) {}
  // Whether every character in `chars` leads s back to itself. With `ask` false, only for a
  // state already asked about: a lead byte is no sign that s loops (trie order puts ASCII bytes,
  // where a looping state shows itself, first). The non-ASCII groups cost an exploration each:
  // they are found only for a state whose ASCII characters passed.
  bool loops_over(uint32_t s, const CharSummary& chars, bool ask) {
    Slot& slot = slots_[s & (kSlots - 1)];
    if (slot.state != s) {
      if (!ask) return false;
      slot = {s, cache_.loop_chars(lexer_, s, false), false};
    }
    return covers(chars, slot.chars, slot.groups, [&] { return cache_.loop_chars(lexer_, s, true); });
  }
  // Whether the characters of `chars` all lead one loop-shaped part of s back to itself (a free
  // string beside key names, one alternative of a pattern): each of its tokens keeps that part
  // alive. Non-ASCII groups are found only for a part whose ASCII characters passed.
  bool part_loops_over(uint32_t s, const CharSummary& chars) {
    Parts& slot = parts_[s & (kSlots - 1)];
    if (slot.state != s) {
      const std::vector<ExprId> found = lexer_.loop_parts(s, kMaxParts);
      slot.state = s;
      slot.count = found.size();
      for (size_t k = 0; k < slot.count; ++k) {
        slot.part[k] = found[k];
        slot.chars[k] = lexer_.part_loop_chars(found[k], false);
        slot.groups[k] = false;
      }
    }
    for (size_t k = 0; k < slot.count; ++k)
      if (covers(chars, slot.chars[k], slot.groups[k], [&] { return lexer_.part_loop_chars(slot.part[k], true); }))
        return true;
    return false;
  }
  // lexer.relaxed_state(s, limit), remembered for the walk.
  uint32_t relaxed(uint32_t s, uint32_t limit) {
    Relaxed& r = relaxed_[(s * 31 + limit) & (kSlots - 1)];
    if (r.state != s || r.limit != limit) r = {s, limit, lexer_.relaxed_state(s, limit)};
    return r.relaxed;
  }

 private:
  // Whether `known` (ASCII loop characters, and the non-ASCII groups once `groups`) covers
  // `chars`; the groups are found (`with_groups()`) only when the ASCII characters pass.
  template <class Full>
  static bool covers(const CharSummary& chars, CharSummary& known, bool& groups, Full with_groups) {
    if (!groups) {
      CharSummary assumed = known;
      assumed.bits |= CharSummary::kGroupBits;
      if (!chars.within(assumed)) return false;
      if (!chars.has_groups()) return true;
      known = with_groups();
      groups = true;
    }
    return chars.within(known);
  }

  static constexpr size_t kSlots = 16;
  struct Slot {
    uint32_t state = Lexer::kUnknown;
    CharSummary chars;
    bool groups = false;  // chars holds the groups too
  };
  struct Relaxed {
    uint32_t state = Lexer::kUnknown, limit = 0, relaxed = Lexer::kDead;
  };
  static constexpr size_t kMaxParts = 4;
  struct Parts {
    uint32_t state = Lexer::kUnknown;
    size_t count = 0;
    ExprId part[kMaxParts];
    CharSummary chars[kMaxParts];
    bool groups[kMaxParts];  // chars holds the groups too
  };
  const MaskCache& cache_;
  const Lexer& lexer_;
  Slot slots_[kSlots];
  Relaxed relaxed_[kSlots];
  Parts parts_[kSlots];
};

}  // namespace stencil
