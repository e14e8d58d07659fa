#include "tokens/merged_runs.h"

#include "json/canon.h"
#include "lexer/lexer.h"
#include "stencil/vocabulary.h"
#include "tokens/mask_cache.h"
#include "tokens/shared_cache.h"

namespace stencil {

namespace {

// A class's trie while it is built, in arrays kept from class to class: children as sibling
// lists (the root's by byte: a string's quote has a child for most bytes that may follow it),
// each node's tokens as a list.
struct Building {
  static constexpr uint32_t kNone = 0;  // (node 0 is the root, no one's child; token 0: none)
  struct Node {
    uint32_t child, sibling, first_token, parent;
    uint8_t byte;
  };
  std::vector<Node> nodes;  // (one array: a node added is one store, not five)
  uint32_t root_child[256];
  struct Token {
    int32_t id;
    uint32_t from;  // its boundary's index in the class
    uint32_t next;
  };
  std::vector<Token> tokens;
  std::vector<uint32_t> path, at, out_parent, todo;

  void clear() {
    nodes.assign(1, Node{kNone, kNone, kNone, 0, 0});
    tokens.assign(1, Token{});
    std::fill(std::begin(root_child), std::end(root_child), kNone);
  }
  uint32_t add_node(uint32_t parent, uint8_t b) {
    const auto c = static_cast<uint32_t>(nodes.size());
    nodes.push_back({kNone, nodes[parent].child, kNone, parent, b});
    nodes[parent].child = c;
    return c;
  }
  uint32_t child_of(uint32_t parent, uint8_t b) {
    if (parent == 0) {
      if (root_child[b] == kNone) root_child[b] = add_node(0, b);
      return root_child[b];
    }
    for (uint32_t c = nodes[parent].child; c != kNone; c = nodes[c].sibling)
      if (nodes[c].byte == b) return c;
    return add_node(parent, b);
  }
  void add_token(uint32_t node, int32_t id, uint32_t from) {
    tokens.push_back({id, from, nodes[node].first_token});
    nodes[node].first_token = static_cast<uint32_t>(tokens.size() - 1);
  }
  // The sub-trie below boundary node n (its byte the root's), by the bytes after that byte.
  void add(const std::vector<TrieNode>& trie, size_t n, uint32_t from) {
    if (trie[n].token_id >= 0) add_token(0, trie[n].token_id, from);
    const size_t base = trie[n].depth;
    path.assign(1, 0);
    for (size_t i = n + 1, end = n + trie[n].subtree_size; i < end; ++i) {
      path.resize(trie[i].depth - base);
      const uint32_t c = child_of(path.back(), trie[i].byte);
      path.push_back(c);
      if (trie[i].token_id >= 0) add_token(c, trie[i].token_id, from);
    }
  }
  // The trie, depth-first, into `out` (the root at depth `depth`).
  void flatten(MergedClass& out, uint16_t depth) {
    at.resize(nodes.size());
    out_parent.clear();
    out.id_begin.assign(1, 0);
    todo.assign(1, 0);
    while (!todo.empty()) {
      const uint32_t x = todo.back();
      todo.pop_back();
      const auto k = static_cast<uint32_t>(out.nodes.size());
      at[x] = k;
      const Node& node = nodes[x];
      // (a node's parent was emitted before it: its depth is the parent's plus one)
      const uint32_t parent = x == 0 ? k : at[node.parent];
      out_parent.push_back(parent);
      const auto d = static_cast<uint16_t>(x == 0 ? depth : out.nodes[parent].depth + 1);
      out.nodes.push_back({1, -1, d, node.byte, 0});
      for (uint32_t c = node.child; c != kNone; c = nodes[c].sibling) todo.push_back(c);
      if (node.first_token != kNone) {
        out.nodes.back().token_id = static_cast<int32_t>(out.id_begin.size() - 1);
        for (uint32_t t = node.first_token; t != kNone; t = tokens[t].next) {
          out.ids.push_back(tokens[t].id);
          out.from.push_back(tokens[t].from);
        }
        out.id_begin.push_back(static_cast<uint32_t>(out.ids.size()));
      }
    }
    // subtree sizes: children come after their parent, so sum from the back
    for (size_t k = out.nodes.size(); k-- > 1;) out.nodes[out_parent[k]].subtree_size += out.nodes[k].subtree_size;
  }
};

// The trie of the class boundaries[first, end).
std::shared_ptr<MergedClass> build_class(const Vocabulary& vocab, const std::vector<Boundary>& boundaries, size_t first,
                                         size_t end) {
  thread_local Building scratch;  // (its arrays kept from class to class)
  Building& building = scratch;
  building.clear();
  auto out = std::make_shared<MergedClass>();
  size_t tokens = 0;
  for (size_t j = first; j < end; ++j) {
    const TokenTrie& trie = MaskCache::trie_of(vocab, boundaries[j].node);
    const size_t n = boundaries[j].node & ~kRestTrieBit;
    tokens += trie.tokens_before()[n + trie.nodes()[n].subtree_size] - trie.tokens_before()[n];
  }
  out->ids.reserve(tokens);
  out->from.reserve(tokens);
  out->plain_prefix.assign(end - first, 0);
  for (size_t j = first; j < end; ++j) {
    building.add(MaskCache::trie_of(vocab, boundaries[j].node).nodes(), boundaries[j].node & ~kRestTrieBit,
                 static_cast<uint32_t>(j - first));
    out->plain_prefix[j - first] = json_plain_body(MaskCache::bytes_above(vocab, boundaries[j].node));
  }
  building.flatten(*out, boundaries[first].depth);
  out->nodes.shrink_to_fit();
  out->id_begin.shrink_to_fit();
  return out;
}

}  // namespace

bool merge_runs(const Lexer& lexer, const Vocabulary& vocab, const std::vector<Boundary>& boundaries,
                SharedCache* shared, bool only_shared, MergedRuns* out) {
  out->runs.clear();
  auto same_class = [](const Boundary& a, const Boundary& b) {
    return a.lexer_state == b.lexer_state && (a.node & kRestTrieBit) == (b.node & kRestTrieBit) && a.byte == b.byte;
  };
  std::string key;
  for (size_t k = 0; k < boundaries.size();) {
    const Boundary& b = boundaries[k];
    size_t end = k + 1;
    while (end < boundaries.size() && same_class(b, boundaries[end])) ++end;
    const uint32_t t = lexer.next(b.lexer_state, b.byte);
    if (end - k >= 2 && t != Lexer::kDead && lexer.state(t).end_now) {
      // (keyed by the class's nodes, tagged, in its order: they fix the trie)
      key.assign("m");
      for (size_t j = k; j < end; ++j) key.append(reinterpret_cast<const char*>(&boundaries[j].node), 4);
      std::shared_ptr<const MergedClass> trie = shared ? shared->find_class(key) : nullptr;
      if (!trie) {
        if (only_shared) return false;
        trie = build_class(vocab, boundaries, k, end);
        if (shared) shared->insert_class(key, trie);
      }
      out->runs.push_back({static_cast<uint32_t>(k), static_cast<uint32_t>(end), std::move(trie)});
    }
    k = end;
  }
  return true;
}

}  // namespace stencil
