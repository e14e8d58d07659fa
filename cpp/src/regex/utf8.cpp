#include "regex/utf8.h"

#include <algorithm>

namespace stencil {

CodepointRanges normalize_ranges(CodepointRanges ranges) {
  CodepointRanges clipped;
  for (auto [lo, hi] : ranges) {
    if (lo > hi) std::swap(lo, hi);
    if (lo > 0x10FFFF) continue;
    hi = std::min<uint32_t>(hi, 0x10FFFF);
    // Remove the surrogate block.
    if (lo < 0xD800 && hi >= 0xD800) {
      clipped.push_back({lo, 0xD7FF});
      if (hi > 0xDFFF) clipped.push_back({0xE000, hi});
    } else if (lo >= 0xD800 && lo <= 0xDFFF) {
      if (hi > 0xDFFF) clipped.push_back({0xE000, hi});
    } else {
      clipped.push_back({lo, hi});
    }
  }
  std::sort(clipped.begin(), clipped.end());
  CodepointRanges out;
  for (auto r : clipped) {
    if (!out.empty() && r.first <= out.back().second + 1) {
      out.back().second = std::max(out.back().second, r.second);
    } else {
      out.push_back(r);
    }
  }
  return out;
}

CodepointRanges complement_ranges(const CodepointRanges& normalized) {
  CodepointRanges out;
  uint32_t next = 0;
  for (auto [lo, hi] : normalized) {
    if (lo > next) out.push_back({next, lo - 1});
    next = hi + 1;
  }
  if (next <= 0x10FFFF) out.push_back({next, 0x10FFFF});
  return normalize_ranges(out);
}

std::string utf8_encode(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (cp >> 18));
    s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

namespace {

// Split [lo, hi] (same encoded length) into ranges whose UTF-8 forms are
// byte-wise rectangles, then emit each rectangle as a sequence of byte ranges.
void emit_same_length(ExprStore& store, uint32_t lo, uint32_t hi, std::vector<ExprId>& out) {
  static const uint32_t kMaxForLen[] = {0x7F, 0x7FF, 0xFFFF, 0x10FFFF};
  (void)kMaxForLen;
  std::string a = utf8_encode(lo), b = utf8_encode(hi);
  size_t n = a.size();
  if (n == 1) {
    ByteSet s;
    s.add_range(static_cast<uint8_t>(a[0]), static_cast<uint8_t>(b[0]));
    out.push_back(store.bytes(s));
    return;
  }
  // Find the first position i where a and b differ; the suffix after i must
  // span the full continuation range for a single rectangle.
  for (size_t i = 1; i < n; ++i) {
    uint32_t mask = (1u << (6 * (n - i))) - 1;  // bits of the trailing n-i continuation bytes
    if ((lo & ~mask) != (hi & ~mask)) {
      if ((lo & mask) != 0) {
        emit_same_length(store, lo, lo | mask, out);
        emit_same_length(store, (lo | mask) + 1, hi, out);
        return;
      }
      if ((hi & mask) != mask) {
        emit_same_length(store, lo, (hi & ~mask) - 1, out);
        emit_same_length(store, hi & ~mask, hi, out);
        return;
      }
    }
  }
  std::vector<ExprId> seq;
  for (size_t i = 0; i < n; ++i) {
    ByteSet s;
    s.add_range(static_cast<uint8_t>(a[i]), static_cast<uint8_t>(b[i]));
    seq.push_back(store.bytes(s));
  }
  out.push_back(store.concat(seq));
}

}  // namespace

ExprId utf8_class(ExprStore& store, const CodepointRanges& ranges, bool negate) {
  CodepointRanges norm = normalize_ranges(ranges);
  if (negate) norm = complement_ranges(norm);
  static const uint32_t kBounds[] = {0x7F, 0x7FF, 0xFFFF, 0x10FFFF};
  std::vector<ExprId> alts;
  for (auto [lo, hi] : norm) {
    uint32_t start = lo;
    for (uint32_t bound : kBounds) {
      if (start > hi) break;
      if (start > bound) continue;
      uint32_t end = std::min(hi, bound);
      emit_same_length(store, start, end, alts);
      start = end + 1;
    }
  }
  return store.alt(std::move(alts));
}

}  // namespace stencil
