// The token trie: every token's bytes in one flat array in depth-first order, built once per
// vocabulary and walked without recursion by the mask computation.
#pragma once
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "support/char_summary.h"

namespace stencil {

// Depth-first flat trie. Node 0 is the root (empty prefix); node i's subtree
// is [i, i + subtree_size). Walking it needs no recursion and no allocation:
// pop the recognizer to depth - 1, push `byte`, and on failure jump over the
// subtree.
struct TrieNode {
  uint32_t subtree_size;
  int32_t token_id;  // -1 when no token ends here
  uint16_t depth;
  uint8_t byte;
  uint8_t height = 0;  // bytes from this node's byte to the deepest token end below (255: or more)
};

// A token that ends inside a character (plain UTF-8 up to a lead byte and fewer continuation
// bytes than it announces): a walk that skips a looping sub-trie finds where it ends by reading
// its last `count` bytes from the loop's state.
struct CutToken {
  uint32_t index;  // into ordered_tokens()
  uint8_t count;   // bytes of the cut character (1..3)
  uint8_t bytes[3];
};

class TokenTrie {
 public:
  void build(const std::vector<std::string_view>& token_bytes, const std::vector<uint8_t>& excluded);
  const std::vector<TrieNode>& nodes() const { return nodes_; }
  // Per node, the characters of its sub-trie, its own byte included.
  const std::vector<CharSummary>& summaries() const { return summaries_; }
  // The tokens of node i's sub-trie: ordered_tokens()[tokens_before()[i]] up to
  // ordered_tokens()[tokens_before()[i + subtree_size]] (trie order; one entry past the last node).
  const std::vector<int32_t>& ordered_tokens() const { return ordered_tokens_; }
  const std::vector<uint32_t>& tokens_before() const { return tokens_before_; }
  // (first id, other id) for tokens whose bytes equal an earlier token's.
  const std::vector<std::pair<int32_t, int32_t>>& duplicates() const { return duplicates_; }
  // The tokens that end inside a character, by index (plain UTF-8 text up to the cut only).
  const std::vector<CutToken>& cut_tokens() const { return cut_tokens_; }
  // Per ordered_tokens() index: the characters its bytes start (bytes that are no UTF-8
  // continuation byte), 255 for 255 or more.
  const std::vector<uint8_t>& token_starts() const { return token_starts_; }
  size_t memory_bytes() const;
  size_t memory_bytes_with_slice() const;
  int max_depth() const { return max_depth_; }

 private:
  void summarize();
  std::vector<TrieNode> nodes_;
  std::vector<CharSummary> summaries_;
  std::vector<int32_t> ordered_tokens_;
  std::vector<uint32_t> tokens_before_;
  std::vector<std::pair<int32_t, int32_t>> duplicates_;
  std::vector<CutToken> cut_tokens_;
  std::vector<uint8_t> token_starts_;
  int max_depth_ = 0;
};

}  // namespace stencil
