#include <algorithm>
#include <numeric>

#include "stencil/errors.h"
#include "stencil/vocabulary.h"
#include "tokens/plain_slice.h"

namespace stencil {

void TokenTrie::build(const std::vector<std::string_view>& token_bytes, const std::vector<uint8_t>& excluded) {
  std::vector<int32_t> order;
  order.reserve(token_bytes.size());
  for (size_t i = 0; i < token_bytes.size(); ++i)
    if (!excluded[i] && !token_bytes[i].empty()) order.push_back(static_cast<int32_t>(i));
  // Sorting by bytes (ties by id) puts tokens in depth-first order. An 8-byte
  // big-endian prefix key settles most comparisons without touching the bytes.
  std::vector<uint64_t> key(token_bytes.size(), 0);
  for (int32_t id : order) {
    std::string_view t = token_bytes[id];
    uint64_t k = 0;
    for (size_t i = 0; i < 8; ++i) k = (k << 8) | (i < t.size() ? static_cast<uint8_t>(t[i]) : 0);
    key[id] = k;
  }
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    if (key[a] != key[b]) return key[a] < key[b];
    int c = token_bytes[a].compare(token_bytes[b]);
    return c < 0 || (c == 0 && a < b);
  });

  nodes_.clear();
  duplicates_.clear();
  nodes_.reserve(order.size() * 3 + 1);
  nodes_.push_back({0, -1, 0, 0});
  // path[d] = index of the node at depth d on the current root-to-node path.
  std::vector<uint32_t> path{0};
  std::string_view prev;
  int32_t prev_id = -1;
  max_depth_ = 0;
  auto close_to = [&](size_t depth) {
    while (path.size() > depth + 1) {
      uint32_t n = path.back();
      path.pop_back();
      nodes_[n].subtree_size = static_cast<uint32_t>(nodes_.size() - n);
    }
  };
  for (int32_t id : order) {
    std::string_view t = token_bytes[id];
    if (t.size() > 0xFFFF) throw UsageError("token " + std::to_string(id) + " is longer than 65535 bytes");
    if (prev_id >= 0 && t == prev) {
      duplicates_.emplace_back(prev_id, id);
      continue;
    }
    size_t common = 0;
    while (common < prev.size() && common < t.size() && prev[common] == t[common]) ++common;
    close_to(common);
    for (size_t d = common; d < t.size(); ++d) {
      path.push_back(static_cast<uint32_t>(nodes_.size()));
      nodes_.push_back({1, -1, static_cast<uint16_t>(d + 1), static_cast<uint8_t>(t[d])});
    }
    nodes_[path.back()].token_id = id;
    max_depth_ = std::max<int>(max_depth_, static_cast<int>(t.size()));
    prev = t;
    prev_id = id;
  }
  close_to(0);
  nodes_[0].subtree_size = static_cast<uint32_t>(nodes_.size());
  nodes_.shrink_to_fit();
  summarize();
}

// Each node's own character (read from the root, where every token starts at a character
// boundary), then children into parents, last node first.
void TokenTrie::summarize() {
  const size_t n = nodes_.size();
  summaries_.assign(n, CharSummary{});
  std::vector<uint32_t> parent(n, 0);
  std::vector<uint32_t> path{0};
  // After the path's d bytes: plain_text_step's state (-1 once not plain) and the bit of the
  // character being read.
  std::vector<int> text{0}, bits{CharSummary::kPoison};
  std::vector<uint8_t> cut(n, 0);     // per node: bytes of a character its byte leaves unfinished
  std::vector<uint8_t> starts(n, 0);  // per node: characters started from the root
  for (size_t i = 1; i < n; ++i) {
    const TrieNode& node = nodes_[i];
    path.resize(node.depth);
    text.resize(node.depth);
    bits.resize(node.depth);
    parent[i] = path.back();
    const int before = text.back();
    int after = -1, bit = CharSummary::kPoison;
    if (before == 0 && node.byte < 0x80) {
      after = 0;
      bit = CharSummary::bucket_of(node.byte);
    } else if (before >= 0 && (after = plain_text_step(before, node.byte)) >= 0) {
      bit = before == 0 ? CharSummary::kGroupBase + CharSummary::group_of_lead(node.byte) : bits.back();
    }
    summaries_[i].add(bit);
    if (after > 0) cut[i] = static_cast<uint8_t>(before == 0 ? 1 : cut[path.back()] + 1);
    starts[i] = static_cast<uint8_t>(std::min(255, starts[path.back()] + ((node.byte & 0xC0) != 0x80 ? 1 : 0)));
    path.push_back(static_cast<uint32_t>(i));
    text.push_back(after);
    bits.push_back(bit);
  }
  for (size_t i = n - 1; i > 0; --i) {
    summaries_[parent[i]].merge(summaries_[i]);
    if (nodes_[i].height == 0) nodes_[i].height = 1;  // a leaf: its own byte
    uint8_t& up = nodes_[parent[i]].height;
    if (nodes_[i].height + 1 > up) up = static_cast<uint8_t>(std::min(255, nodes_[i].height + 1));
  }
  ordered_tokens_.clear();
  cut_tokens_.clear();
  token_starts_.clear();
  tokens_before_.assign(n + 1, 0);
  for (size_t i = 0; i < n; ++i) {
    tokens_before_[i] = static_cast<uint32_t>(ordered_tokens_.size());
    if (nodes_[i].token_id < 0) continue;
    if (cut[i] > 0 && cut[i] <= 3) {
      CutToken c{static_cast<uint32_t>(ordered_tokens_.size()), cut[i], {0, 0, 0}};
      for (size_t k = cut[i], j = i; k-- > 0; j = parent[j]) c.bytes[k] = nodes_[j].byte;
      cut_tokens_.push_back(c);
    }
    ordered_tokens_.push_back(nodes_[i].token_id);
    token_starts_.push_back(starts[i]);
  }
  cut_tokens_.shrink_to_fit();
  token_starts_.shrink_to_fit();
  tokens_before_[n] = static_cast<uint32_t>(ordered_tokens_.size());
  ordered_tokens_.shrink_to_fit();
}

size_t TokenTrie::memory_bytes() const {
  return nodes_.capacity() * sizeof(TrieNode) + summaries_.capacity() * sizeof(CharSummary) +
         ordered_tokens_.capacity() * 4 + tokens_before_.capacity() * 4 +
         duplicates_.capacity() * sizeof(duplicates_[0]) + cut_tokens_.capacity() * sizeof(CutToken) +
         token_starts_.capacity();
}

}  // namespace stencil
