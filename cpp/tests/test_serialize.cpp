// grammar/serialize.cpp: a built grammar (every expression kind, lexeme flag and check kind)
// survives serialize -> deserialize unchanged; truncated or corrupted bytes are refused with a
// GrammarError or read as some valid grammar, never anything else (a crash fails the run).
#include <memory>
#include <string>
#include <typeinfo>
#include <vector>

#include "check.h"
#include "grammar/ir.h"
#include "stencil/errors.h"
#include "stencil/grammar.h"

using stencil::Grammar;
using stencil::GrammarBuilder;
using stencil::GrammarError;
using stencil::Symbol;

namespace {

// A JSON-like object or array grammar using every expression kind, lexeme flag and check kind.
std::shared_ptr<Grammar> sample_grammar() {
  GrammarBuilder b;
  const auto letters = b.re_repeat(b.re_char_ranges({{'a', 'z'}, {0xE9, 0xE9}}, false), 1, -1);
  b.ignore(b.re_repeat(b.re_byte_ranges({{' ', ' '}, {'\n', '\n'}}), 1, -1), "ws", true, false);
  const Symbol key = b.lexeme(b.re_concat({b.re_literal("\""), letters, b.re_literal("\"")}), "key", false);
  const Symbol num = b.lexeme(b.re_number_range("-10", false, "1e3", true, false), "num", false);
  const Symbol mult = b.lexeme(b.re_multiple_of("0.25"), "mult", false, 4);
  const Symbol word = b.lexeme(b.re_and({letters, b.re_not(b.re_bytes("bad"))}), "word", true);
  const Symbol eos = b.special_token({7, 9}, "<eos>");
  const Symbol value = b.choice({num, mult, word, b.lexeme(b.re_any_string(), "any", true, 2)});
  const Symbol key_rule = b.rule("key_rule");
  b.add_alternative(key_rule, {key});
  b.add_check(key_rule, stencil::CheckKind::NotIn, {"forbidden"}, 0, -1);
  const Symbol next_key = b.rule("next_key");
  b.add_alternative(next_key, {});
  const std::string a = "a";
  b.add_check(next_key, stencil::CheckKind::NextKey, {"a", "b"}, 0, 3, &a);
  const Symbol member = b.rule("member");
  b.add_alternative(member, {next_key, key_rule, b.literal(":", "colon"), value});
  b.add_check(member, stencil::CheckKind::UniqueKey, {}, 0, -1);
  const Symbol comma = b.rule("comma");
  b.add_alternative(comma, {b.literal(",", "comma_lit")});
  b.add_check(comma, stencil::CheckKind::MoreMembers, {"a"}, 0, 3);
  const Symbol object = b.rule("object");
  const Symbol members = b.seq({member, b.repeat(b.seq({comma, member}), 0, 2)});
  b.add_alternative(object, {b.literal("{", "lbrace"), b.optional(members), b.literal("}", "rbrace")});
  b.add_check(object, stencil::CheckKind::ObjectKeys, {"a", "b"}, 1, 3);
  const Symbol next_item = b.rule("next_item");
  b.add_alternative(next_item, {});
  const std::string one = "1";
  b.add_check(next_item, stencil::CheckKind::NextItem, {}, 0, -1, &one);
  const Symbol item = b.rule("item");
  b.add_alternative(item, {next_item, value});
  b.add_check(item, stencil::CheckKind::UniqueItem, {}, 0, -1);
  const Symbol array = b.seq({b.literal("[", "lbracket"), b.repeat(item, 1, 3), b.literal("]", "rbracket")});
  const Symbol start = b.rule("start");
  b.add_alternative(start, {object, eos});
  b.add_alternative(start, {array});
  return b.build(start);
}

// What deserialize made of some bytes: "refused" (a GrammarError), "ok", or the stray exception.
std::string read_outcome(const std::string& bytes) {
  try {
    const auto g = Grammar::deserialize(bytes);
    // What was read must itself round-trip (a grammar that reads but cannot be written back is a
    // bug in the reader's checks).
    const std::string again = g->serialize();
    return Grammar::deserialize(again)->serialize() == again ? "ok" : "unstable round trip";
  } catch (const GrammarError&) {
    return "refused";
  } catch (const std::exception& e) {
    return std::string("threw ") + typeid(e).name() + ": " + e.what();
  }
}

std::string error_of(const std::string& bytes) {
  try {
    Grammar::deserialize(bytes);
  } catch (const GrammarError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE(serialize_round_trip_keeps_everything) {
  const auto g = sample_grammar();
  const std::string bytes = g->serialize();
  const auto back = Grammar::deserialize(bytes);
  CHECK(back->serialize() == bytes);
  CHECK_EQ(back->hash(), g->hash());
  CHECK_EQ(back->to_string(), g->to_string());
  CHECK_EQ(back->exprs.size(), g->exprs.size());
  REQUIRE_EQ(back->lexemes.size(), g->lexemes.size());
  size_t lexeme_diffs = 0;
  for (size_t i = 0; i < g->lexemes.size(); ++i) {
    const auto &x = g->lexemes[i], &y = back->lexemes[i];
    lexeme_diffs += x.name != y.name || x.ignore != y.ignore || x.lazy != y.lazy || x.special != y.special ||
                    x.max_tokens != y.max_tokens || x.not_initial != y.not_initial || x.not_final != y.not_final ||
                    x.token_ids != y.token_ids || x.unique_key != y.unique_key ||
                    back->exprs.to_string(y.expr) != g->exprs.to_string(x.expr);
  }
  CHECK_EQ(lexeme_diffs, size_t(0));
  REQUIRE_EQ(back->checks.size(), size_t(7));
  size_t check_diffs = 0;
  for (size_t i = 0; i < g->checks.size(); ++i) {
    const auto &x = g->checks[i], &y = back->checks[i];
    check_diffs += x.rule != y.rule || x.kind != y.kind || x.names != y.names || x.min != y.min || x.max != y.max ||
                   x.has_key != y.has_key || x.key != y.key;
  }
  CHECK_EQ(check_diffs, size_t(0));
  // The parser tables finalize() derives.
  CHECK(back->dotted == g->dotted);
  CHECK(back->nullable == g->nullable);
  CHECK(back->nt_check == g->nt_check);
  CHECK(back->guard_check == g->guard_check);
  CHECK_EQ(back->nonterminal_names.size(), g->nonterminal_names.size());
}

TEST_CASE(serialize_refuses_truncated_bytes) {
  const std::string bytes = sample_grammar()->serialize();
  size_t not_refused = 0;
  for (size_t len = 0; len < bytes.size(); ++len) {
    const std::string got = read_outcome(bytes.substr(0, len));
    if (got != "refused" && not_refused++ < 10)
      CHECK_MSG(got == "refused", "truncated to " + std::to_string(len) + " bytes: " + got);
  }
  CHECK_EQ(not_refused, size_t(0));
  CHECK(error_of(bytes + "x").find("trailing bytes") != std::string::npos);
}

TEST_CASE(serialize_corrupted_bytes_are_refused_or_read_safely) {
  const std::string bytes = sample_grammar()->serialize();
  size_t stray = 0, refused = 0;
  for (size_t pos = 0; pos < bytes.size(); ++pos)
    for (int change : {0x01, 0x80, 0x100, 0x1FF}) {  // flip low bit, flip high bit, zero, 0xFF
      std::string bad = bytes;
      const auto old = static_cast<uint8_t>(bad[pos]);
      bad[pos] = static_cast<char>(change == 0x100 ? 0 : change == 0x1FF ? 0xFF : old ^ change);
      if (bad == bytes) continue;
      const std::string got = read_outcome(bad);
      refused += got == "refused";
      if (got != "ok" && got != "refused" && stray++ < 10)
        CHECK_MSG(got == "ok" || got == "refused", "byte " + std::to_string(pos) + " changed: " + got);
    }
  CHECK_EQ(stray, size_t(0));
  CHECK(refused > bytes.size());  // most changes are caught: counts, ids and kinds are checked
}

TEST_CASE(serialize_names_what_is_wrong) {
  const std::string bytes = sample_grammar()->serialize();
  std::string bad_magic = bytes;
  bad_magic[0] ^= 1;
  CHECK(error_of(bad_magic).find("bad magic") != std::string::npos);
  std::string other_version = bytes;
  other_version[4] = static_cast<char>(Grammar::kFormatVersion + 1);
  CHECK(error_of(other_version).find("format version") != std::string::npos);
  CHECK(error_of("").find("unexpected end of data") != std::string::npos);
  CHECK(error_of(bytes.substr(0, 10)).find("at byte 8") != std::string::npos);
}
