// tokens/trie.h: the flat depth-first trie of a vocabulary. Its layout (depths, bytes, subtree
// sizes, token ranges, heights) against the tokens it was built from, the skip-subtree walk its
// header describes against brute force, the character summaries that let a walk take a whole
// sub-trie at once, and tokens cut inside a character.
#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "check.h"
#include "stencil/errors.h"
#include "tokens/trie.h"

using stencil::ByteSet;
using stencil::CharSummary;
using stencil::TokenTrie;

namespace {

TokenTrie build(const std::vector<std::string>& tokens, std::vector<uint8_t> excluded = {}) {
  std::vector<std::string_view> views(tokens.begin(), tokens.end());
  excluded.resize(tokens.size(), 0);
  TokenTrie t;
  t.build(views, excluded);
  return t;
}

// The bytes from the root to each node, rebuilt from depths and bytes alone.
std::vector<std::string> node_paths(const TokenTrie& t) {
  std::vector<std::string> paths{""};
  std::string path;
  for (size_t i = 1; i < t.nodes().size(); ++i) {
    path.resize(t.nodes()[i].depth - 1);
    path.push_back(static_cast<char>(t.nodes()[i].byte));
    paths.push_back(path);
  }
  return paths;
}

// The tokens of node i's sub-trie, as its token range gives them.
std::set<int32_t> range_tokens(const TokenTrie& t, size_t i) {
  const uint32_t end_node = static_cast<uint32_t>(i) + t.nodes()[i].subtree_size;
  return {t.ordered_tokens().begin() + t.tokens_before()[i], t.ordered_tokens().begin() + t.tokens_before()[end_node]};
}

// The header's walk: descend while `accept(path)` holds, jump over a refused node's sub-trie.
template <class Accept>
std::set<int32_t> walk(const TokenTrie& t, Accept accept) {
  std::set<int32_t> out;
  std::string path;
  const auto& nodes = t.nodes();
  for (size_t i = 1; i < nodes.size();) {
    path.resize(nodes[i].depth - 1);
    path.push_back(static_cast<char>(nodes[i].byte));
    if (!accept(path)) {
      i += nodes[i].subtree_size;
      continue;
    }
    if (nodes[i].token_id >= 0) out.insert(nodes[i].token_id);
    ++i;
  }
  return out;
}

std::vector<std::string> random_vocabulary(std::mt19937& rng, size_t n) {
  const std::string alphabet = "abc \xc3\xa9";
  std::vector<std::string> tokens;
  for (size_t i = 0; i < n; ++i) {
    std::string s(1 + rng() % 6, ' ');
    for (char& c : s) c = alphabet[rng() % alphabet.size()];
    tokens.push_back(i % 17 == 5 ? tokens[i / 2] : s);  // some duplicates
  }
  return tokens;
}

}  // namespace

TEST_CASE(trie_layout_of_a_small_vocabulary) {
  // ids:                                0     1    2      3    4   5     6     7     8
  const TokenTrie t = build({"ab", "a", "abc", "b", "", "ab", "zz", "ba", "abd"}, {0, 0, 0, 0, 0, 0, 1, 0, 0});
  const auto& n = t.nodes();
  REQUIRE_EQ(n.size(), size_t(7));  // root, a, ab, abc, abd, b, ba
  CHECK_EQ(n[0].subtree_size, 7u);
  CHECK_EQ(n[0].token_id, -1);
  const std::vector<std::string> paths = node_paths(t);
  CHECK(paths == std::vector<std::string>({"", "a", "ab", "abc", "abd", "b", "ba"}));
  std::vector<int32_t> ids;
  std::vector<uint32_t> sizes;
  std::vector<int> heights;
  for (const auto& node : n) {
    ids.push_back(node.token_id);
    sizes.push_back(node.subtree_size);
    heights.push_back(node.height);
  }
  CHECK(ids == std::vector<int32_t>({-1, 1, 0, 2, 8, 3, 7}));
  CHECK(sizes == std::vector<uint32_t>({7, 4, 3, 1, 1, 2, 1}));
  CHECK(std::vector<int>(heights.begin() + 1, heights.end()) == std::vector<int>({3, 2, 1, 1, 2, 1}));
  CHECK(t.ordered_tokens() == std::vector<int32_t>({1, 0, 2, 8, 3, 7}));
  CHECK(t.tokens_before() == std::vector<uint32_t>({0, 0, 1, 2, 3, 4, 5, 6}));
  REQUIRE_EQ(t.duplicates().size(), size_t(1));
  CHECK_EQ(t.duplicates()[0].first, 0);
  CHECK_EQ(t.duplicates()[0].second, 5);
  CHECK_EQ(t.max_depth(), 3);
  CHECK(t.memory_bytes() >= n.size() * sizeof(stencil::TrieNode));
}

TEST_CASE(trie_layout_matches_its_tokens) {
  std::mt19937 rng(29);
  const std::vector<std::string> tokens = random_vocabulary(rng, 400);
  std::vector<uint8_t> excluded(tokens.size());
  for (size_t i = 0; i < tokens.size(); i += 11) excluded[i] = 1;
  const TokenTrie t = build(tokens, excluded);
  const std::vector<std::string> paths = node_paths(t);
  size_t bad_order = 0, bad_token = 0, bad_range = 0, bad_height = 0;
  for (size_t i = 1; i < paths.size(); ++i) bad_order += !(paths[i - 1] < paths[i]);  // depth-first, no repeats
  for (size_t i = 0; i < paths.size(); ++i) {
    const int32_t id = t.nodes()[i].token_id;
    bad_token += id >= 0 && (excluded[id] || tokens[id] != paths[i]);
    std::set<int32_t> below;  // by brute force: listed tokens that start with the node's bytes
    size_t deepest = 0;
    for (int32_t k : t.ordered_tokens())
      if (std::string_view(tokens[k]).substr(0, paths[i].size()) == paths[i]) {
        below.insert(k);
        deepest = std::max(deepest, tokens[k].size());
      }
    bad_range += below != range_tokens(t, i);
    bad_height += i > 0 && t.nodes()[i].height != deepest - paths[i].size() + 1;
  }
  CHECK_EQ(bad_order, size_t(0));
  CHECK_EQ(bad_token, size_t(0));
  CHECK_EQ(bad_range, size_t(0));
  CHECK_EQ(bad_height, size_t(0));
  // Every kept token is listed once, or named as a duplicate of the first with its bytes.
  std::map<std::string, int32_t> first;
  size_t max_len = 0, bad_listing = 0;
  for (size_t id = 0; id < tokens.size(); ++id)
    if (!excluded[id]) {
      first.emplace(tokens[id], static_cast<int32_t>(id));
      max_len = std::max(max_len, tokens[id].size());
    }
  std::set<int32_t> listed(t.ordered_tokens().begin(), t.ordered_tokens().end());
  for (const auto& [bytes, id] : first) bad_listing += !listed.count(id);
  for (const auto& [a, b] : t.duplicates()) bad_listing += first.at(tokens[b]) != a || listed.count(b);
  CHECK_EQ(bad_listing, size_t(0));
  CHECK_EQ(listed.size() + t.duplicates().size(), size_t(std::count(excluded.begin(), excluded.end(), 0)));
  CHECK_EQ(size_t(t.max_depth()), max_len);
}

TEST_CASE(trie_walk_finds_prefixes_of_a_text) {
  std::mt19937 rng(7);
  const std::vector<std::string> tokens = random_vocabulary(rng, 300);
  const TokenTrie t = build(tokens);
  for (const std::string text : {"abc a", "ba\xc3\xa9", "", "cccccc", "a"}) {
    std::set<int32_t> expected;
    for (int32_t k : t.ordered_tokens())
      if (text.compare(0, tokens[k].size(), tokens[k]) == 0) expected.insert(k);
    const auto got = walk(t, [&](const std::string& p) { return text.compare(0, p.size(), p) == 0; });
    CHECK(got == expected);
  }
}

TEST_CASE(trie_summaries_let_a_walk_take_whole_subtries) {
  // Tokens made only of [a-f] and spaces, taken with a whole sub-trie where its summary says it
  // holds nothing else: the same tokens as a byte-by-byte walk.
  std::mt19937 rng(3);
  std::vector<std::string> tokens = random_vocabulary(rng, 500);
  tokens.push_back("abcabc");
  const TokenTrie t = build(tokens);
  auto loops = [](uint8_t b) { return (b >= 'a' && b <= 'f') || b == ' '; };
  ByteSet loop_bytes;
  for (int b = 0; b < 0x80; ++b)
    if (loops(static_cast<uint8_t>(b))) loop_bytes.add(static_cast<uint8_t>(b));
  const CharSummary loop_set = CharSummary::of_ascii_loops(loop_bytes);
  auto plain = walk(t, [&](const std::string& p) { return loops(static_cast<uint8_t>(p.back())); });
  std::set<int32_t> fast;
  size_t taken_whole = 0;
  for (size_t i = 1; i < t.nodes().size();) {
    const auto& node = t.nodes()[i];
    if (t.summaries()[i].within(loop_set)) {
      const auto range = range_tokens(t, i);
      fast.insert(range.begin(), range.end());
      taken_whole += node.subtree_size > 1;
      i += node.subtree_size;
    } else if (!loops(node.byte)) {
      i += node.subtree_size;
    } else {
      if (node.token_id >= 0) fast.insert(node.token_id);
      ++i;
    }
  }
  CHECK(fast == plain);
  CHECK(taken_whole > 0);
  CHECK(plain.count(static_cast<int32_t>(tokens.size() - 1)));
  CHECK(t.summaries()[0].has(CharSummary::kGroupBase + CharSummary::group_of_lead(0xC3)));
}

TEST_CASE(trie_cut_tokens_and_character_starts) {
  // ids:               0 (é)        1 (lead)  2 (a + 2 of 3)  3 (continuation)  4
  const TokenTrie t = build({"\xc3\xa9", "\xc3", "a\xe2\x82", "\xa9", "xyz"});
  std::map<int32_t, uint8_t> starts;
  for (size_t k = 0; k < t.ordered_tokens().size(); ++k) starts[t.ordered_tokens()[k]] = t.token_starts()[k];
  CHECK(starts == std::map<int32_t, uint8_t>({{0, 1}, {1, 1}, {2, 2}, {3, 0}, {4, 3}}));
  std::map<int32_t, std::string> cut;
  for (const auto& c : t.cut_tokens())
    cut[t.ordered_tokens()[c.index]] = std::string(reinterpret_cast<const char*>(c.bytes), c.count);
  CHECK(cut == std::map<int32_t, std::string>({{1, "\xc3"}, {2, "\xe2\x82"}}));
}

TEST_CASE(trie_refuses_a_token_longer_than_its_depth_field) {
  CHECK_THROWS_AS(build({"a", std::string(70000, 'x')}), stencil::UsageError);
  const TokenTrie t = build({std::string(65535, 'x')});
  CHECK_EQ(t.max_depth(), 65535);
  CHECK_EQ(t.nodes().back().height, 1);
  CHECK_EQ(t.nodes()[1].height, 255);  // capped
}
