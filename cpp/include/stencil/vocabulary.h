// The tokenizer as the core sees it: the exact bytes of every token, which
// tokens are special (never matched by text) and which end the sequence, and
// the token trie built once from them.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace stencil {

class TokenTrie;
class SharedCache;
struct PlainSlice;

class Vocabulary {
 public:
  // `tokens[i]` are the bytes of token i; ids in [tokens.size(), vocab_size)
  // are padding (the model's logits are wider than the tokenizer).
  Vocabulary(std::vector<std::string> tokens, const std::vector<int32_t>& special_ids, std::vector<int32_t> eos_ids,
             int32_t vocab_size);

  int32_t vocab_size() const { return vocab_size_; }
  int32_t num_tokens() const { return static_cast<int32_t>(offsets_.size()) - 1; }
  std::string_view token_bytes(int32_t id) const;
  bool is_special(int32_t id) const { return id >= 0 && id < num_tokens() && special_[id]; }
  const std::vector<int32_t>& eos_ids() const { return eos_ids_; }
  const std::vector<int32_t>& special_ids() const { return special_ids_; }
  // The token trie (tokens/trie.h), built once with the vocabulary.
  const TokenTrie& trie() const { return *trie_; }
  double trie_build_seconds() const { return trie_build_seconds_; }
  size_t memory_bytes() const;
  size_t memory_bytes_with_slice() const;
  // Raises UsageError naming the id when it is outside [0, vocab_size).
  void check_id(int64_t id) const;
  // The plain-text slice and the trie of the other tokens, built with the vocabulary.
  const PlainSlice& plain_slice() const;
  ~Vocabulary();
  // What all grammars compiled for this vocabulary share: inner masks, lexemes' token paths.
  SharedCache& shared() const { return *shared_; }
  // The tokens (not special) whose bytes hold a comma, by id: those that may end one item of a
  // list and begin the next (the uniqueItems guard looks at each).
  const std::vector<int32_t>& comma_tokens() const { return comma_tokens_; }

 private:
  std::string bytes_;
  std::vector<uint32_t> offsets_;
  std::vector<uint8_t> special_;
  std::vector<int32_t> special_ids_;
  std::vector<int32_t> eos_ids_;
  int32_t vocab_size_;
  std::unique_ptr<TokenTrie> trie_;
  double trie_build_seconds_ = 0;
  std::unique_ptr<SharedCache> shared_;
  std::unique_ptr<PlainSlice> plain_;
  std::vector<int32_t> comma_tokens_;
};

}  // namespace stencil
