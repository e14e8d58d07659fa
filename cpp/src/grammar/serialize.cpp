// Versioned binary form of a grammar, for caching; its bytes define the hash.
#include <cstring>

#include "grammar/ir.h"
#include "stencil/errors.h"
#include "stencil/grammar.h"
#include "support/hash.h"

namespace stencil {

namespace {

constexpr uint32_t kMagic = 0x474e5453;  // "STNG"

struct Writer {
  std::string out;
  void u8(uint8_t v) { out.push_back(static_cast<char>(v)); }
  void u32(uint32_t v) { out.append(reinterpret_cast<const char*>(&v), 4); }
  void u64(uint64_t v) { out.append(reinterpret_cast<const char*>(&v), 8); }
  void str(const std::string& s) {
    u32(static_cast<uint32_t>(s.size()));
    out += s;
  }
};

struct Reader {
  const std::string& in;
  size_t pos = 0;
  [[noreturn]] void fail(const std::string& what) const {
    throw GrammarError("malformed serialized grammar at byte " + std::to_string(pos) + ": " + what);
  }
  void need(size_t n) const {
    if (in.size() - pos < n) fail("unexpected end of data");
  }
  uint8_t u8() {
    need(1);
    return static_cast<uint8_t>(in[pos++]);
  }
  uint32_t u32() {
    need(4);
    uint32_t v;
    std::memcpy(&v, in.data() + pos, 4);
    pos += 4;
    return v;
  }
  uint64_t u64() {
    need(8);
    uint64_t v;
    std::memcpy(&v, in.data() + pos, 8);
    pos += 8;
    return v;
  }
  std::string str() {
    uint32_t n = u32();
    need(n);
    std::string s = in.substr(pos, n);
    pos += n;
    return s;
  }
  uint32_t count(size_t max, const char* what) {
    uint32_t n = u32();
    if (n > max) fail(std::string("too many ") + what);
    return n;
  }
};

}  // namespace

std::string Grammar::serialize() const {
  Writer w;
  w.u32(kMagic);
  w.u32(kFormatVersion);
  w.u32(static_cast<uint32_t>(exprs.size()));
  for (ExprId e = 0; e < exprs.size(); ++e) {
    const ExprNode& n = exprs.node(e);
    w.u8(static_cast<uint8_t>(n.kind));
    switch (n.kind) {
      case ExprKind::Nothing:
      case ExprKind::Empty:
        break;
      case ExprKind::Bytes:
        for (uint64_t x : exprs.byteset(n.a).w) w.u64(x);
        break;
      case ExprKind::Concat:
        w.u32(n.a);
        w.u32(n.b);
        break;
      case ExprKind::Or:
      case ExprKind::And:
        w.u32(n.args_len);
        for (uint32_t i = 0; i < n.args_len; ++i) w.u32(exprs.args(n)[i]);
        break;
      case ExprKind::Not:
        w.u32(n.a);
        break;
      case ExprKind::Repeat:
        w.u32(n.a);
        w.u32(n.min);
        w.u32(n.max);
        break;
      case ExprKind::Number:
        w.str(number_encode(exprs.number_state(n.a)));
        break;
    }
  }
  w.u32(static_cast<uint32_t>(lexemes.size()));
  for (const LexemeSpec& l : lexemes) {
    w.u32(l.expr);
    w.u8(static_cast<uint8_t>(l.ignore | (l.lazy << 1) | (l.special << 2) | ((l.max_tokens > 0) << 3) |
                              (l.not_initial << 4) | (l.not_final << 5)));
    if (l.max_tokens > 0) w.u32(l.max_tokens);  // only then: grammars without token limits read as before
    w.str(l.name);
    w.u32(static_cast<uint32_t>(l.token_ids.size()));
    for (int32_t t : l.token_ids) w.u32(static_cast<uint32_t>(t));
  }
  w.u32(static_cast<uint32_t>(nonterminal_names.size()));
  for (const auto& n : nonterminal_names) w.str(n);
  w.u32(static_cast<uint32_t>(rules.size()));
  for (const Rule& r : rules) {
    w.u32(r.lhs);
    w.u32(static_cast<uint32_t>(r.rhs.size()));
    for (Symbol s : r.rhs) w.u32(s);
  }
  w.u32(static_cast<uint32_t>(checks.size()));
  for (const CompletionCheck& c : checks) {
    w.u32(c.rule);
    w.u8(static_cast<uint8_t>(c.kind));
    w.u32(static_cast<uint32_t>(c.names.size()));
    for (const auto& n : c.names) w.str(n);
    w.u64(static_cast<uint64_t>(c.min));
    w.u64(static_cast<uint64_t>(c.max));
    w.u8(c.has_key ? 1 : 0);
    w.str(c.key);
  }
  w.u32(static_cast<uint32_t>(covers.size()));
  for (const LexemeCover& c : covers) {
    w.u32(c.expr);
    w.u32(static_cast<uint32_t>(c.lexemes.size()));
    for (uint32_t lex : c.lexemes) w.u32(lex);
  }
  w.u32(start);
  return w.out;
}

namespace {

// Expression e of the serialized store (its operands come before it: map holds their new ids).
ExprId read_expr(Reader& r, ExprStore& store, const std::vector<ExprId>& map, uint32_t e) {
  auto ref = [&](uint32_t x) {
    if (x >= e) r.fail("expression refers forward");
    return map[x];
  };
  const uint8_t kind = r.u8();
  switch (static_cast<ExprKind>(kind)) {
    case ExprKind::Nothing:
      return ExprStore::kNothing;
    case ExprKind::Empty:
      return ExprStore::kEmpty;
    case ExprKind::Bytes: {
      ByteSet s;
      for (auto& x : s.w) x = r.u64();
      return store.bytes(s);
    }
    case ExprKind::Concat: {
      uint32_t a = r.u32(), b = r.u32();
      return store.concat(ref(a), ref(b));
    }
    case ExprKind::Or:
    case ExprKind::And: {
      uint32_t n = r.count(map.size(), "alternatives");
      std::vector<ExprId> kids;
      for (uint32_t i = 0; i < n; ++i) kids.push_back(ref(r.u32()));
      return static_cast<ExprKind>(kind) == ExprKind::Or ? store.alt(kids) : store.conj(kids);
    }
    case ExprKind::Not:
      return store.negate(ref(r.u32()));
    case ExprKind::Repeat: {
      uint32_t a = r.u32(), mn = r.u32(), mx = r.u32();
      if (mx != kUnbounded && mn > mx) r.fail("repetition with min > max");
      return store.repeat(ref(a), mn, mx);
    }
    case ExprKind::Number: {
      NumberState s;
      if (!number_decode(r.str(), s)) r.fail("malformed number range state");
      return store.number(s);
    }
  }
  r.fail("unknown expression kind " + std::to_string(kind));
}

LexemeSpec read_lexeme(Reader& r, const std::vector<ExprId>& map) {
  LexemeSpec l;
  uint32_t e = r.u32();
  if (e >= map.size()) r.fail("lexeme refers to an unknown expression");
  l.expr = map[e];
  uint8_t flags = r.u8();
  l.ignore = flags & 1;
  l.lazy = flags & 2;
  l.special = flags & 4;
  if (flags & 8) l.max_tokens = r.u32();
  l.not_initial = flags & 16;
  l.not_final = flags & 32;
  l.name = r.str();
  uint32_t n_ids = r.count(r.in.size(), "token ids");
  for (uint32_t k = 0; k < n_ids; ++k) l.token_ids.push_back(static_cast<int32_t>(r.u32()));
  return l;
}

LexemeCover read_cover(Reader& r, const std::vector<ExprId>& map, size_t n_lex) {
  LexemeCover c;
  uint32_t e = r.u32();
  if (e >= map.size()) r.fail("cover refers to an unknown expression");
  c.expr = map[e];
  uint32_t n = r.count(r.in.size(), "cover lexemes");
  for (uint32_t k = 0; k < n; ++k) {
    uint32_t lex = r.u32();
    if (lex >= n_lex) r.fail("cover refers to an unknown lexeme");
    if (!c.lexemes.empty() && lex <= c.lexemes.back()) r.fail("cover lexemes out of order");
    c.lexemes.push_back(lex);
  }
  return c;
}

Rule read_rule(Reader& r, size_t n_nt, size_t n_lex) {
  Rule rule;
  rule.lhs = r.u32();
  if (rule.lhs >= n_nt) r.fail("rule with unknown left-hand side");
  uint32_t n = r.count(r.in.size(), "symbols");
  for (uint32_t k = 0; k < n; ++k) {
    Symbol s = r.u32();
    bool ok = is_terminal(s) ? symbol_index(s) < n_lex : s < n_nt;
    if (!ok) r.fail("rule refers to an unknown symbol");
    rule.rhs.push_back(s);
  }
  return rule;
}

CompletionCheck read_check(Reader& r, const Grammar& g) {
  CompletionCheck c;
  c.rule = r.u32();
  if (c.rule >= g.nonterminal_names.size()) r.fail("check on an unknown rule");
  uint8_t kind = r.u8();
  if (!is_check_kind(kind)) r.fail("unknown check kind " + std::to_string(kind));
  c.kind = static_cast<CheckKind>(kind);
  uint32_t n_names = r.count(r.in.size(), "names");
  for (uint32_t k = 0; k < n_names; ++k) c.names.push_back(r.str());
  c.min = static_cast<int64_t>(r.u64());
  c.max = static_cast<int64_t>(r.u64());
  c.has_key = r.u8() != 0;
  c.key = r.str();
  for (const CompletionCheck& other : g.checks)
    if (other.rule == c.rule) r.fail("two checks on one rule");
  return c;
}

}  // namespace

std::shared_ptr<Grammar> Grammar::deserialize(const std::string& data) {
  Reader r{data};
  if (r.u32() != kMagic) r.fail("not a stencil grammar (bad magic)");
  uint32_t version = r.u32();
  if (version != kFormatVersion)
    r.fail("format version " + std::to_string(version) + " is not supported (expected " +
           std::to_string(kFormatVersion) + ")");
  auto g = std::make_shared<Grammar>();
  std::vector<ExprId> map(r.count(data.size(), "expressions"));
  for (uint32_t e = 0; e < map.size(); ++e) map[e] = read_expr(r, g->exprs, map, e);
  uint32_t n_lex = r.count(data.size(), "lexemes");
  for (uint32_t i = 0; i < n_lex; ++i) g->lexemes.push_back(read_lexeme(r, map));
  uint32_t n_nt = r.count(data.size(), "rules");
  for (uint32_t i = 0; i < n_nt; ++i) g->nonterminal_names.push_back(r.str());
  uint32_t n_rules = r.count(data.size(), "alternatives");
  for (uint32_t i = 0; i < n_rules; ++i) g->rules.push_back(read_rule(r, n_nt, n_lex));
  uint32_t n_checks = r.count(data.size(), "checks");
  for (uint32_t i = 0; i < n_checks; ++i) g->checks.push_back(read_check(r, *g));
  uint32_t n_covers = r.count(data.size(), "covers");
  for (uint32_t i = 0; i < n_covers; ++i) g->covers.push_back(read_cover(r, map, n_lex));
  g->start = r.u32();
  if (g->rules.empty() || g->start != 0 || g->rules[0].lhs != 0) r.fail("missing start rule");
  if (r.pos != data.size()) r.fail("trailing bytes");
  g->finalize();
  return g;
}

// The compiler's cache key: the serialized form, eight bytes at a time (a byte at a time was a
// sixth of a small grammar's native compile work), each word mixed in full (murmur3's finalizer)
// so that equal words at different places differ.
uint64_t Grammar::hash() const {
  const std::string s = serialize();
  uint64_t h = 0xcbf29ce484222325ull ^ s.size();
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    h = (h ^ fmix64(w)) * 0x9E3779B97F4A7C15ull + i;
  }
  uint64_t tail = 0;
  std::memcpy(&tail, s.data() + i, s.size() - i);
  return fmix64(h ^ fmix64(tail ^ 0x5bd1e995ull));
}

}  // namespace stencil
