// Every string over a small alphabet up to a length: the brute-force universe of the randomized
// expression tests (their expressions are over the same bytes).
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace stencil_test {

// Every string over `alphabet` of at most `longest` bytes, shortest first.
inline std::vector<std::string> strings_up_to(size_t longest, const std::string& alphabet = "ab ") {
  std::vector<std::string> out{""};
  for (size_t i = 0; i < out.size() && out[i].size() < longest; ++i)
    for (char c : alphabet) out.push_back(out[i] + c);
  return out;
}

}  // namespace stencil_test
