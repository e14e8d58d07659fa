// Every string over a small alphabet up to a length: the brute-force universe of the randomized
// expression tests (their expressions are over the same bytes), and whether an expression holds one.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "regex/derivative.h"
#include "regex/expr.h"

namespace stencil_test {

// Every string over `alphabet` of at most `longest` bytes, shortest first.
inline std::vector<std::string> strings_up_to(size_t longest, const std::string& alphabet = "ab ") {
  std::vector<std::string> out{""};
  for (size_t i = 0; i < out.size() && out[i].size() < longest; ++i)
    for (char c : alphabet) out.push_back(out[i] + c);
  return out;
}

// Whether e's language holds s, by derivatives.
inline bool matches(stencil::ExprStore& st, stencil::Deriver& d, stencil::ExprId e, const std::string& s) {
  for (char c : s) {
    e = d.derive(e, static_cast<uint8_t>(c));
    if (e == stencil::ExprStore::kNothing) return false;
  }
  return st.nullable(e);
}

}  // namespace stencil_test
