// The tokenizer as the core sees it: the exact bytes of every token, which
// tokens are special (never matched by text) and which end the sequence, and
// the token trie built once from them.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <memory>
#include <mutex>
#include <vector>

#include "tokens/char_summary.h"
#include "tokens/shared_mask_cache.h"

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

class TokenTrie {
 public:
  void build(const std::vector<std::string_view>& token_bytes,
             const std::vector<uint8_t>& excluded);
  const std::vector<TrieNode>& nodes() const { return nodes_; }
  // Per node, the characters of its sub-trie, its own byte included.
  const std::vector<CharSummary>& summaries() const { return summaries_; }
  // The tokens of node i's sub-trie: ordered_tokens()[tokens_before()[i]] up to
  // ordered_tokens()[tokens_before()[i + subtree_size]] (trie order; one entry past the last node).
  const std::vector<int32_t>& ordered_tokens() const { return ordered_tokens_; }
  const std::vector<uint32_t>& tokens_before() const { return tokens_before_; }
  // (first id, other id) for tokens whose bytes equal an earlier token's.
  const std::vector<std::pair<int32_t, int32_t>>& duplicates() const { return duplicates_; }
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
  int max_depth_ = 0;
};

struct PlainSlice;

class Vocabulary {
 public:
  // `tokens[i]` are the bytes of token i; ids in [tokens.size(), vocab_size)
  // are padding (the model's logits are wider than the tokenizer).
  Vocabulary(std::vector<std::string> tokens, const std::vector<int32_t>& special_ids,
             std::vector<int32_t> eos_ids, int32_t vocab_size);

  int32_t vocab_size() const { return vocab_size_; }
  int32_t num_tokens() const { return static_cast<int32_t>(offsets_.size()) - 1; }
  std::string_view token_bytes(int32_t id) const;
  bool is_special(int32_t id) const { return id >= 0 && id < num_tokens() && special_[id]; }
  const std::vector<int32_t>& eos_ids() const { return eos_ids_; }
  const std::vector<int32_t>& special_ids() const { return special_ids_; }
  const TokenTrie& trie() const { return trie_; }
  double trie_build_seconds() const { return trie_build_seconds_; }
  size_t memory_bytes() const;
  size_t memory_bytes_with_slice() const;
  // Raises UsageError naming the id when it is outside [0, vocab_size).
  void check_id(int64_t id) const;
  // The plain-text slice and the trie of the other tokens, built with the vocabulary.
  const PlainSlice& plain_slice() const;
  ~Vocabulary();
  // Inner masks shared by all grammars compiled for this vocabulary.
  SharedMaskCache& shared_masks() const { return *shared_masks_; }

 private:
  std::string bytes_;
  std::vector<uint32_t> offsets_;
  std::vector<uint8_t> special_;
  std::vector<int32_t> special_ids_;
  std::vector<int32_t> eos_ids_;
  int32_t vocab_size_;
  TokenTrie trie_;
  double trie_build_seconds_ = 0;
  std::unique_ptr<SharedMaskCache> shared_masks_ = std::make_unique<SharedMaskCache>(256ull << 20);
  std::unique_ptr<PlainSlice> plain_;
};

}  // namespace stencil
