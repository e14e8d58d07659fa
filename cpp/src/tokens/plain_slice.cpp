#include "tokens/plain_slice.h"

#include <cstring>
#include <unordered_set>

#include "lexer/lexer.h"
#include "support/token_bits.h"

namespace stencil {

PlainSlice PlainSlice::build(const Vocabulary& vocab) {
  PlainSlice s;
  const int32_t n = vocab.num_tokens();
  s.bits.assign(token_bits::words_for(vocab.vocab_size()), 0);
  std::vector<std::string_view> views(n);
  std::vector<uint8_t> excluded(n, 1);
  s.by_count.assign(256, {});
  s.byte_bits.assign(s.bits.size() * 32, {0, 0});
  std::vector<uint8_t> whole(256, 0), quoted(256, 0);
  for (int32_t id = 0; id < n; ++id) {
    if (vocab.is_special(id)) continue;
    std::string_view t = vocab.token_bytes(id);
    views[id] = t;
    int st = 0, leads = 0;
    size_t i = 0;
    for (; i < t.size(); ++i) {
      leads += st == 0;
      const int before = st;
      if ((st = plain_text_step(st, static_cast<unsigned char>(t[i]))) < 0) {
        if (before == 0 && t[i] == '"' && i + 1 == t.size() && i > 0 && leads <= 255) quoted[leads - 1] = 1;
        break;
      }
    }
    if (st >= 0 && !t.empty()) {
      for (const char ch : t) {
        const uint8_t c = static_cast<uint8_t>(ch) < 0x80 ? static_cast<uint8_t>(ch) : 0x7F;
        s.byte_bits[id][c >> 6] |= uint64_t(1) << (c & 63);
      }
      s.by_count[leads > 255 ? 255 : leads].push_back(id);
      if (st == 0 && leads < 255) whole[leads] = 1;
      token_bits::set(s.bits.data(), id);
    } else {
      excluded[id] = 0;  // goes into the trie of the rest
    }
  }
  for (uint32_t c = 1; c < 255; ++c)
    if (whole[c]) s.whole_counts.push_back(c);
  for (uint32_t c = 1; c < 255; ++c)
    if (quoted[c]) s.quoted_counts.push_back(c);
  s.rest.build(views, excluded);
  return s;
}

const std::vector<uint32_t>& PlainSlice::at_most_chars(uint32_t k) const {
  if (k > 255) k = 255;
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = by_chars_[k];
  if (slot) return *slot;
  // From the nearest mask already built (strings count down one character per step), adding
  // or removing the tokens of the counts in between.
  auto it = by_chars_.find(k);  // the empty slot just made; every other slot is built
  auto above = std::next(it);
  auto below = it == by_chars_.begin() ? by_chars_.end() : std::prev(it);
  const bool use_below = below != by_chars_.end() && (above == by_chars_.end() || k - below->first <= above->first - k);
  auto out = std::make_unique<std::vector<uint32_t>>();
  if (use_below) {
    *out = *below->second;
    for (uint32_t c = below->first + 1; c <= k; ++c)
      for (int32_t id : by_count[c]) token_bits::set(out->data(), id);
  } else if (above != by_chars_.end()) {
    *out = *above->second;
    for (uint32_t c = k + 1; c <= above->first; ++c)
      for (int32_t id : by_count[c]) token_bits::clear(out->data(), id);
  } else {
    out->assign(bits.size(), 0);
    for (uint32_t c = 0; c <= k; ++c)
      for (int32_t id : by_count[c]) token_bits::set(out->data(), id);
  }
  slot = std::move(out);
  return *slot;
}

std::shared_ptr<const std::vector<uint32_t>> PlainSlice::avoiding(const ByteSet& bytes) const {
  constexpr size_t kKept = 32;  // sets (a grammar has a few classes; a server sees many grammars)
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [set, bits_of] : avoiding_)
      if (set == bytes) return bits_of;
  }
  // (a set holds every byte from 0x80 or none: Lexer::plain_filter's)
  const bool high = (bytes.w[2] | bytes.w[3]) != 0;
  const uint64_t k0 = bytes.w[0], k1 = (bytes.w[1] & ~(uint64_t(1) << 63)) | (uint64_t(high) << 63);
  auto out = std::make_shared<std::vector<uint32_t>>(bits.size(), 0);
  for (size_t w = 0; w < bits.size(); ++w) {
    uint32_t word = 0;
    for (uint32_t b = 0; b < 32; ++b) {
      const auto& t = byte_bits[w * 32 + b];
      word |= uint32_t(!(t[0] & k0) && !(t[1] & k1)) << b;
    }
    (*out)[w] = word & bits[w];
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (avoiding_.size() >= kKept) avoiding_.erase(avoiding_.begin());
  avoiding_.emplace_back(bytes, out);
  return out;
}

bool plain_probe_leaves(const Lexer& lexer, uint32_t state, uint32_t max_bytes) {
  for (const char* unit : {"a", " ", "a ", "a-", "a.", "a/"}) {
    uint32_t s = state;
    for (uint32_t n = 0; n < max_bytes; ++n) {
      s = lexer.next_tagged(s, static_cast<uint8_t>(unit[n % std::strlen(unit)]));
      if (s == Lexer::kDead || (s & Lexer::kEndNowTag)) return true;
    }
  }
  return false;
}

bool admits_plain_text(const Lexer& lexer, uint32_t state, size_t max_pairs, uint32_t max_states, bool* gave_up) {
  std::unordered_set<uint64_t> seen{uint64_t(state) << 8};
  std::vector<std::pair<uint32_t, int>> todo{{state, 0}};
  while (!todo.empty()) {
    auto [s, p] = todo.back();
    todo.pop_back();
    for (int b = 0; b < 256; ++b) {
      int p2 = plain_text_step(p, static_cast<uint8_t>(b));
      if (p2 < 0) continue;
      uint32_t t = lexer.next(s, static_cast<uint8_t>(b));
      if (t == Lexer::kDead || lexer.state(t).end_now) return false;
      if (!seen.insert((uint64_t(t) << 8) | static_cast<uint64_t>(p2)).second) continue;
      if (seen.size() > max_pairs) return false;
      if (lexer.num_states() >= max_states) {
        if (gave_up) *gave_up = true;
        return false;
      }
      todo.push_back({t, p2});
    }
  }
  return true;
}

CharSummary loop_chars(const Lexer& lexer, uint32_t s, bool groups, size_t max_pairs) {
  CharSummary out;
  if (s == Lexer::kDead || lexer.state(s).end_now) return out;
  ByteSet back;  // the ASCII text bytes that lead s back to itself (no lexer step for the others)
  for (int b = 0; b < 0x80; ++b)
    if (CharSummary::ascii_text(static_cast<uint8_t>(b)) && lexer.next(s, static_cast<uint8_t>(b)) == s)
      back.add(static_cast<uint8_t>(b));
  out = CharSummary::of_ascii_loops(back);
  if (!groups) return out;
  // Each group of non-ASCII characters: every path from one of its lead bytes through the
  // continuations stays alive and comes back to s. Pairs explored for a group that loops are
  // known good for the next groups (the states after different lead bytes often agree).
  std::unordered_set<uint64_t> good, seen;
  std::vector<std::pair<uint32_t, int>> todo;
  for (int group = 0; group < CharSummary::kGroups; ++group) {
    bool loops = true;
    todo.clear();
    seen.clear();
    for (int lead = 0xC2; lead <= 0xF4 && loops; ++lead)
      if (CharSummary::group_of_lead(static_cast<uint8_t>(lead)) == group) todo.push_back({s, -lead});
    while (!todo.empty() && loops) {
      auto [t, p] = todo.back();
      todo.pop_back();
      // p < 0: at s, to read the lead byte -p only; otherwise every continuation byte.
      const int lo = p < 0 ? -p : 0x80, hi = p < 0 ? -p : 0xBF;
      for (int b = lo; b <= hi && loops; ++b) {
        const int p2 = plain_text_step(p < 0 ? 0 : p, static_cast<uint8_t>(b));
        if (p2 < 0) continue;
        const uint32_t u = lexer.next(t, static_cast<uint8_t>(b));
        if (p2 == 0) {
          loops = u == s;
        } else if (u == Lexer::kDead || lexer.state(u).end_now) {
          loops = false;
        } else if (const uint64_t pair = uint64_t(u) << 8 | static_cast<uint64_t>(p2);
                   !good.count(pair) && seen.insert(pair).second) {
          loops = seen.size() <= max_pairs;
          todo.push_back({u, p2});
        }
      }
    }
    if (!loops) continue;
    out.add(CharSummary::kGroupBase + group);
    good.insert(seen.begin(), seen.end());
  }
  return out;
}

}  // namespace stencil
