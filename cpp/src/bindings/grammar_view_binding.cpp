// Grammar.nonterminals / start / rules / lexemes / checks / covers: plain Python values built on each call
// (the Grammar itself stays immutable and shared).
#include "bindings/grammar_view.h"

#include <nanobind/stl/vector.h>

#include <algorithm>

namespace nb = nanobind;
using namespace stencil;

namespace {

// Names and printed regexes come from Python text, but a view must not fail on any grammar
// (a deserialized one included): invalid UTF-8 is shown with replacement characters.
nb::object text(const std::string& s) {
  return nb::steal(PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "replace"));
}

nb::list rules_view(const Grammar& g) {
  nb::list out;
  for (const Rule& r : g.rules) {
    nb::list rhs;
    for (Symbol s : r.rhs) rhs.append(nb::make_tuple(is_terminal(s) ? "lexeme" : "rule", symbol_index(s)));
    out.append(nb::make_tuple(r.lhs, rhs));
  }
  return out;
}

nb::list lexemes_view(const Grammar& g) {
  nb::list out;
  for (uint32_t i = 0; i < g.lexemes.size(); ++i) {
    const LexemeSpec& l = g.lexemes[i];
    nb::dict d;
    d["name"] = text(g.lexeme_name(i));
    d["regex"] = l.special ? nb::none() : text(g.exprs.to_string(l.expr));
    d["ignore"] = l.ignore;
    d["lazy"] = l.lazy;
    d["special"] = l.special;
    nb::list ids;
    for (int32_t t : l.token_ids) ids.append(t);
    d["token_ids"] = ids;
    out.append(d);
  }
  return out;
}

nb::list checks_view(const Grammar& g) {
  nb::list out;
  for (const CompletionCheck& c : g.checks) {
    nb::dict d;
    d["rule"] = c.rule;
    d["kind"] = check_kind_name(c.kind);
    nb::list names;  // bytes: names hold decoded JSON strings, lone surrogates included
    for (const std::string& n : c.names) names.append(nb::bytes(n.data(), n.size()));
    d["names"] = names;
    d["min"] = c.min;
    d["max"] = c.max;
    d["key"] = c.has_key ? nb::object(nb::bytes(c.key.data(), c.key.size())) : nb::none();
    out.append(d);
  }
  return out;
}

}  // namespace

void bind_grammar_view(nb::class_<Grammar>& cls) {
  cls.def_prop_ro(
         "nonterminals",
         [](const Grammar& g) {
           nb::list out;
           for (const std::string& n : g.nonterminal_names) out.append(text(n));
           return out;
         },
         "Nonterminal names; a rule's left side and a ('rule', i) symbol index this list.")
      .def_prop_ro(
          "start", [](const Grammar& g) { return g.start; },
          "The augmented start nonterminal (its one rule: __start -> the grammar's start).")
      .def_prop_ro("rules", &rules_view,
                   "Rules as (lhs, rhs): rhs a list of ('rule', nonterminal) or ('lexeme', lexeme) symbols.")
      .def_prop_ro(
          "special_token_ids",
          [](const Grammar& g) {
            std::vector<int32_t> ids;
            for (const LexemeSpec& l : g.lexemes)
              if (l.special) ids.insert(ids.end(), l.token_ids.begin(), l.token_ids.end());
            std::sort(ids.begin(), ids.end());
            ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
            return ids;
          },
          "The special tokens the grammar writes as part of its text, sorted: an end-of-sequence id\n"
          "among them (gpt-oss's <|call|>) is then the grammar's text, which a generation loop must give\n"
          "to the matcher rather than stop at.")
      .def_prop_ro("lexemes", &lexemes_view,
                   "Lexemes as dicts: name, regex (None for special tokens), ignore, lazy, special, token_ids.")
      .def_prop_ro("checks", &checks_view,
                   "Completion checks as dicts: rule (nonterminal), kind, names (bytes), min, max.")
      .def_prop_ro(
          "covers",
          [](const Grammar& g) {
            nb::list out;
            for (const LexemeCover& c : g.covers)
              out.append(nb::make_tuple(c.lexemes, text(g.exprs.to_string(c.expr))));
            return out;
          },
          "Lexeme covers as (lexemes, regex): the lexemes' languages together hold every word of regex\n"
          "(the key classes of an object, split by patternProperties, hold the string of any key).");
}
