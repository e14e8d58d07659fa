#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings/bindings.h"
#include "bindings/grammar_view.h"
#include "stencil/grammar.h"

namespace nb = nanobind;
using namespace stencil;

void bind_grammar(nb::module_& m) {
  nb::class_<Grammar> grammar(m, "Grammar");
  grammar.def("hash", &Grammar::hash)
      .def("serialize",
           [](const Grammar& g) {
             std::string s = g.serialize();
             return nb::bytes(s.data(), s.size());
           })
      .def_static("deserialize",
                  [](nb::bytes data) {
                    return std::shared_ptr<Grammar>(Grammar::deserialize(std::string(data.c_str(), data.size())));
                  },
                  nb::arg("data"))
      .def_prop_ro("num_rules", [](const Grammar& g) { return g.rules.size(); })
      .def_prop_ro("num_lexemes", [](const Grammar& g) { return g.lexemes.size(); })
      .def("__str__", &Grammar::to_string);
  bind_grammar_view(grammar);

  // (the enumerators and their names come from the one list, STENCIL_CHECK_KINDS)
  nb::enum_<CheckKind>(m, "CheckKind",
                       "The kinds of completion checks GrammarBuilder.add_check puts on a rule.\n\n"
                       "Example::\n\n    b.add_check(item_rule, stencil.CheckKind.unique_item)")
#define STENCIL_CHECK_VALUE(enumerator, number, text) .value(#text, CheckKind::enumerator)
      STENCIL_CHECK_KINDS(STENCIL_CHECK_VALUE)
#undef STENCIL_CHECK_VALUE
      ;
  nb::class_<GrammarBuilder>(m, "GrammarBuilder")
      .def(nb::init<>())
      .def("re_nothing", &GrammarBuilder::re_nothing)
      .def("re_empty", &GrammarBuilder::re_empty)
      .def("re_any_string", &GrammarBuilder::re_any_string)
      .def("re_any_byte_string", &GrammarBuilder::re_any_byte_string)
      .def("re_literal", [](GrammarBuilder& b, const std::string& text) { return b.re_literal(text); }, nb::arg("text"))
      .def("re_bytes",
           [](GrammarBuilder& b, nb::bytes data) { return b.re_bytes(std::string(data.c_str(), data.size())); },
           nb::arg("data"))
      .def("re_byte_ranges", &GrammarBuilder::re_byte_ranges, nb::arg("ranges"))
      .def("re_char_ranges", &GrammarBuilder::re_char_ranges, nb::arg("ranges"), nb::arg("negate") = false)
      .def("re_concat", &GrammarBuilder::re_concat, nb::arg("items"))
      .def("re_or", &GrammarBuilder::re_or, nb::arg("items"))
      .def("re_and", &GrammarBuilder::re_and, nb::arg("items"))
      .def("re_not", &GrammarBuilder::re_not, nb::arg("item"))
      .def("re_repeat", &GrammarBuilder::re_repeat, nb::arg("item"), nb::arg("min"), nb::arg("max"))
      .def(
          "re_number_range",
          [](GrammarBuilder& b, std::optional<std::string> lo, bool lo_exclusive, std::optional<std::string> hi,
             bool hi_exclusive, bool integer) {
            return b.re_number_range(lo.value_or(""), lo_exclusive, hi.value_or(""), hi_exclusive, integer);
          },
          nb::arg("lo").none(), nb::arg("lo_exclusive") = false, nb::arg("hi").none() = nb::none(),
          nb::arg("hi_exclusive") = false, nb::arg("integer") = false,
          "JSON numbers whose exact value is within [lo, hi] (decimal strings, None: unbounded); "
          "integral values only with integer=True (inclusive integer bounds).")
      .def("re_multiple_of", &GrammarBuilder::re_multiple_of, nb::arg("multiple"),
           "JSON numbers written without exponent whose exact value is an integer multiple of `multiple` "
           "(a positive decimal string with at most 19 significant digits, e.g. '0.25' or '1e-8').")
      .def("re_to_string", &GrammarBuilder::re_to_string, nb::arg("expr"))
      .def("re_nullable", &GrammarBuilder::re_nullable, nb::arg("expr"))
      .def("lexeme", &GrammarBuilder::lexeme, nb::arg("expr"), nb::arg("name") = "", nb::arg("lazy") = false,
           nb::arg("max_tokens") = 0)
      .def("literal", &GrammarBuilder::literal, nb::arg("text"), nb::arg("name") = "")
      .def("special_token", &GrammarBuilder::special_token, nb::arg("token_ids"), nb::arg("name") = "")
      .def("ignore", &GrammarBuilder::ignore, nb::arg("expr"), nb::arg("name") = "", nb::arg("initial") = true,
           nb::arg("final") = true)
      .def("rule", &GrammarBuilder::rule, nb::arg("name") = "")
      .def("add_alternative", &GrammarBuilder::add_alternative, nb::arg("rule"), nb::arg("symbols"))
      .def("seq", &GrammarBuilder::seq, nb::arg("items"))
      .def("choice", &GrammarBuilder::choice, nb::arg("items"))
      .def("optional", &GrammarBuilder::optional, nb::arg("item"))
      .def("repeat", &GrammarBuilder::repeat, nb::arg("item"), nb::arg("min"), nb::arg("max"))
      .def("star", [](GrammarBuilder& b, Symbol s) { return b.repeat(s, 0, -1); }, nb::arg("item"))
      .def("plus", [](GrammarBuilder& b, Symbol s) { return b.repeat(s, 1, -1); }, nb::arg("item"))
      .def("empty", &GrammarBuilder::empty)
      .def(
          "add_check",
          [](GrammarBuilder& b, Symbol rule, CheckKind kind, const std::vector<nb::str>& names, int64_t min,
             int64_t max, std::optional<nb::str> key) {
            // Names are compared with decoded JSON strings, where a lone surrogate escape
            // decodes to its 3-byte form: encode them the same way ("surrogatepass").
            auto decoded_form = [](const nb::str& n) {
              PyObject* enc = PyUnicode_AsEncodedString(n.ptr(), "utf-8", "surrogatepass");
              if (!enc) throw nb::python_error();
              nb::bytes bytes = nb::steal<nb::bytes>(enc);
              return std::string(bytes.c_str(), bytes.size());
            };
            std::vector<std::string> raw;
            raw.reserve(names.size());
            for (const nb::str& n : names) raw.push_back(decoded_form(n));
            std::string k = key ? decoded_form(*key) : std::string();
            b.add_check(rule, kind, raw, min, max, key ? &k : nullptr);
          },
          nb::arg("rule"), nb::arg("kind"), nb::arg("names") = std::vector<nb::str>{}, nb::arg("min") = 0,
          nb::arg("max") = -1, nb::arg("key") = nb::none(),
          "Veto completions of `rule` that fail a check no context-free grammar expresses (`kind`, a\n"
          "stencil.CheckKind):\n"
          "'unique_item' (the completed array item equals no earlier item of its left-nested list),\n"
          "'unique_key' (the completed object member's key, or key alone, equals no earlier member's key),\n"
          "'more_members' (on a rule of the separator before a member: the members before it leave\n"
          "room within max for one more and for the missing `names`),\n"
          "'next_key' (on an empty rule right before a member's key, run as it is predicted: `key`,\n"
          "or without one a key outside `names`, is new among the earlier members and leaves room\n"
          "within max for the missing `names`; the mask then never starts a key that must fail),\n"
          "'next_item' (the same before an array item whose value `key`, JSON text, is known: no\n"
          "earlier item of the list equals it),\n"
          "'object_keys' (the completed object has every name in `names` and min..max members),\n"
          "'not_in' (the completed JSON string, escapes decoded, is none of `names`: put it on a rule\n"
          "wrapping a key lexeme to exclude known keys without a complement regex).")
      .def(
          "build",
          [](const GrammarBuilder& b, Symbol start) {
            nb::gil_scoped_release release;
            return b.build(start);
          },
          nb::arg("start"));
}
