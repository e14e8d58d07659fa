#include <chrono>

#include "stencil/errors.h"
#include "stencil/vocabulary.h"
#include "tokens/plain_slice.h"
#include "tokens/shared_cache.h"
#include "tokens/trie.h"

namespace stencil {

Vocabulary::Vocabulary(std::vector<std::string> tokens, const std::vector<int32_t>& special_ids,
                       std::vector<int32_t> eos_ids, int32_t vocab_size)
    : vocab_size_(vocab_size),
      trie_(std::make_unique<TokenTrie>()),
      shared_(std::make_unique<SharedCache>(256ull << 20)) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (vocab_size < n)
    throw UsageError("vocab_size " + std::to_string(vocab_size) + " is smaller than the " + std::to_string(n) +
                     " tokens of the tokenizer");
  size_t total = 0;
  for (auto& t : tokens) total += t.size();
  if (total > 0xFFFFFFFFull) throw UsageError("token bytes exceed 4 GiB");
  bytes_.reserve(total);
  offsets_.reserve(tokens.size() + 1);
  offsets_.push_back(0);
  for (auto& t : tokens) {
    bytes_ += t;
    offsets_.push_back(static_cast<uint32_t>(bytes_.size()));
  }
  special_.assign(tokens.size(), 0);
  for (int32_t id : special_ids) {
    if (id < 0 || id >= n)
      throw UsageError("special token id " + std::to_string(id) + " is out of range [0, " + std::to_string(n) + ")");
    if (!special_[id]) special_ids_.push_back(id);
    special_[id] = 1;
  }
  for (int32_t id : eos_ids)
    if (id < 0 || id >= vocab_size)
      throw UsageError("eos token id " + std::to_string(id) + " is out of range [0, " + std::to_string(vocab_size) +
                       ")");
  eos_ids_ = std::move(eos_ids);

  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::string_view> views(tokens.size());
  for (int64_t i = 0; i < n; ++i) views[i] = token_bytes(static_cast<int32_t>(i));
  trie_->build(views, special_);
  trie_build_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // With the tokenizer, not on a grammar's first mask: a few milliseconds for 128k tokens.
  plain_ = std::make_unique<PlainSlice>(PlainSlice::build(*this));
  for (int32_t i = 0; i < static_cast<int32_t>(n); ++i)
    if (!special_[i] && token_bytes(i).find(',') != std::string_view::npos) comma_tokens_.push_back(i);
}

std::string_view Vocabulary::token_bytes(int32_t id) const {
  if (id < 0 || id >= vocab_size_) check_id(id);
  if (id >= num_tokens()) return {};
  return std::string_view(bytes_).substr(offsets_[id], offsets_[id + 1] - offsets_[id]);
}

void Vocabulary::check_id(int64_t id) const {
  if (id < 0 || id >= vocab_size_)
    throw UsageError("token id " + std::to_string(id) + " is out of range [0, " + std::to_string(vocab_size_) + ")");
}

size_t Vocabulary::memory_bytes() const {
  return bytes_.capacity() + offsets_.capacity() * 4 + special_.capacity() + comma_tokens_.capacity() * 4 +
         trie_->memory_bytes();
}

Vocabulary::~Vocabulary() = default;

const PlainSlice& Vocabulary::plain_slice() const { return *plain_; }

size_t Vocabulary::memory_bytes_with_slice() const {
  size_t n = memory_bytes();
  if (plain_)
    n += plain_->bits.capacity() * 4 + plain_->byte_bits.capacity() * sizeof(plain_->byte_bits[0]) +
         plain_->rest.memory_bytes();
  return n;
}

}  // namespace stencil
