#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <type_traits>
#include <utility>

#include "bindings/bindings.h"
#include "bindings/grammar_view.h"
#include "stencil/grammar.h"

namespace nb = nanobind;
using namespace stencil;

// The builder's ids (stencil/ids.h: both uint32_t) reach Python as plain ints, but the stub names
// them apart, ExprId and Symbol (typing.NewType over int, defined in bind_grammar), so that mypy
// refuses a regex where a symbol belongs. A Handle carries an id under its stub name.
template <class Tag>
struct Handle {
  uint32_t id;
};
struct ExprTag {
  static constexpr auto name = nb::detail::const_name("ExprId");
};
struct SymbolTag {
  static constexpr auto name = nb::detail::const_name("Symbol");
};
using Expr = Handle<ExprTag>;
using Sym = Handle<SymbolTag>;

namespace nanobind::detail {
template <class Tag>
struct type_caster<Handle<Tag>> {
  NB_TYPE_CASTER(Handle<Tag>, Tag::name)
  bool from_python(handle src, uint32_t flags, cleanup_list* cleanup) noexcept {
    make_caster<uint32_t> id;
    if (!id.from_python(src, flags, cleanup)) return false;
    value.id = id.value;
    return true;
  }
  static handle from_cpp(Handle<Tag> h, rv_policy policy, cleanup_list* cleanup) noexcept {
    return make_caster<uint32_t>::from_cpp(h.id, policy, cleanup);
  }
};
}  // namespace nanobind::detail

namespace {

// An argument as the builder takes it: a handle's id, a list of handles' ids, anything else as is.
template <class T>
T&& raw(T&& v) {
  return std::forward<T>(v);
}
template <class Tag>
uint32_t raw(Handle<Tag> h) {
  return h.id;
}
template <class Tag>
std::vector<uint32_t> raw(const std::vector<Handle<Tag>>& hs) {
  std::vector<uint32_t> ids;
  ids.reserve(hs.size());
  for (Handle<Tag> h : hs) ids.push_back(h.id);
  return ids;
}

// GrammarBuilder's `method` bound under the Python signature Sig (R(Args...)), where the handles
// stand for the builder's ids: typed<&GrammarBuilder::re_not, Expr(Expr)>.
template <auto method, class Sig>
struct Typed;
template <auto method, class R, class... Args>
struct Typed<method, R(Args...)> {
  static R call(GrammarBuilder& b, Args... args) {
    if constexpr (std::is_void_v<R>) {
      (b.*method)(raw(args)...);
    } else {
      return R{(b.*method)(raw(args)...)};
    }
  }
};
template <auto method, class Sig>
constexpr auto typed = &Typed<method, Sig>::call;

}  // namespace

void bind_grammar(nb::module_& m) {
  // The handles' names at run time, plain ints there (the stub's declarations: stubgen_patterns.txt).
  nb::object new_type = nb::module_::import_("typing").attr("NewType");
  for (const char* name : {"ExprId", "Symbol"}) {
    nb::object handle_type = new_type(name, nb::handle(reinterpret_cast<PyObject*>(&PyLong_Type)));
    handle_type.attr("__module__") = m.attr("__name__");
    m.attr(name) = handle_type;
  }
  nb::class_<Grammar> grammar(m, "Grammar");
  grammar.def("hash", &Grammar::hash)
      .def("serialize",
           [](const Grammar& g) {
             std::string s = g.serialize();
             return nb::bytes(s.data(), s.size());
           })
      .def_static(
          "deserialize",
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
      .def("re_nothing", typed<&GrammarBuilder::re_nothing, Expr()>)
      .def("re_empty", typed<&GrammarBuilder::re_empty, Expr()>)
      .def("re_any_string", typed<&GrammarBuilder::re_any_string, Expr()>)
      .def("re_any_byte_string", typed<&GrammarBuilder::re_any_byte_string, Expr()>)
      .def("re_literal", typed<&GrammarBuilder::re_literal, Expr(const std::string&)>, nb::arg("text"))
      .def(
          "re_bytes",
          [](GrammarBuilder& b, nb::bytes data) { return Expr{b.re_bytes(std::string(data.c_str(), data.size()))}; },
          nb::arg("data"))
      .def("re_byte_ranges", typed<&GrammarBuilder::re_byte_ranges, Expr(const CodepointRanges&)>, nb::arg("ranges"))
      .def("re_char_ranges", typed<&GrammarBuilder::re_char_ranges, Expr(const CodepointRanges&, bool)>,
           nb::arg("ranges"), nb::arg("negate") = false)
      .def("re_concat", typed<&GrammarBuilder::re_concat, Expr(const std::vector<Expr>&)>, nb::arg("items"))
      .def("re_or", typed<&GrammarBuilder::re_or, Expr(const std::vector<Expr>&)>, nb::arg("items"))
      .def("re_and", typed<&GrammarBuilder::re_and, Expr(const std::vector<Expr>&)>, nb::arg("items"))
      .def("re_not", typed<&GrammarBuilder::re_not, Expr(Expr)>, nb::arg("item"))
      .def("re_repeat", typed<&GrammarBuilder::re_repeat, Expr(Expr, int64_t, int64_t)>, nb::arg("item"),
           nb::arg("min"), nb::arg("max"))
      .def(
          "re_number_range",
          [](GrammarBuilder& b, std::optional<std::string> lo, bool lo_exclusive, std::optional<std::string> hi,
             bool hi_exclusive, bool integer) {
            return Expr{b.re_number_range(lo.value_or(""), lo_exclusive, hi.value_or(""), hi_exclusive, integer)};
          },
          nb::arg("lo").none(), nb::arg("lo_exclusive") = false, nb::arg("hi").none() = nb::none(),
          nb::arg("hi_exclusive") = false, nb::arg("integer") = false,
          "JSON numbers whose exact value is within [lo, hi] (decimal strings, None: unbounded); "
          "integral values only with integer=True (inclusive integer bounds).")
      .def("re_multiple_of", typed<&GrammarBuilder::re_multiple_of, Expr(const std::string&)>, nb::arg("multiple"),
           "JSON numbers written without exponent whose exact value is an integer multiple of `multiple` "
           "(a positive decimal string with at most 19 significant digits, e.g. '0.25' or '1e-8').")
      .def("re_number_set", typed<&GrammarBuilder::re_number_set, Expr(const std::vector<std::string>&, bool)>,
           nb::arg("values"), nb::arg("minus_zero") = true,
           "JSON numbers whose exact value is one of `values` (decimal strings), in every spelling "
           "(2e2 and 200.0 for 200), as one expression; minus_zero: 0 may be written -0.")
      .def("re_to_string", typed<&GrammarBuilder::re_to_string, std::string(Expr)>, nb::arg("expr"))
      .def("re_nullable", typed<&GrammarBuilder::re_nullable, bool(Expr)>, nb::arg("expr"))
      .def("lexeme", typed<&GrammarBuilder::lexeme, Sym(Expr, const std::string&, bool, uint32_t)>, nb::arg("expr"),
           nb::arg("name") = "", nb::arg("lazy") = false, nb::arg("max_tokens") = 0)
      .def("literal", typed<&GrammarBuilder::literal, Sym(const std::string&, const std::string&)>, nb::arg("text"),
           nb::arg("name") = "")
      .def("special_token", typed<&GrammarBuilder::special_token, Sym(const std::vector<int32_t>&, const std::string&)>,
           nb::arg("token_ids"), nb::arg("name") = "")
      .def("ignore", typed<&GrammarBuilder::ignore, void(Expr, const std::string&, bool, bool)>, nb::arg("expr"),
           nb::arg("name") = "", nb::arg("initial") = true, nb::arg("final") = true)
      .def("cover", typed<&GrammarBuilder::cover, void(const std::vector<Sym>&, Expr)>, nb::arg("lexemes"),
           nb::arg("expr"))
      .def("rule", typed<&GrammarBuilder::rule, Sym(const std::string&)>, nb::arg("name") = "")
      .def("add_alternative", typed<&GrammarBuilder::add_alternative, void(Sym, const std::vector<Sym>&)>,
           nb::arg("rule"), nb::arg("symbols"))
      .def("seq", typed<&GrammarBuilder::seq, Sym(const std::vector<Sym>&)>, nb::arg("items"))
      .def("choice", typed<&GrammarBuilder::choice, Sym(const std::vector<Sym>&)>, nb::arg("items"))
      .def("optional", typed<&GrammarBuilder::optional, Sym(Sym)>, nb::arg("item"))
      .def("repeat", typed<&GrammarBuilder::repeat, Sym(Sym, int64_t, int64_t)>, nb::arg("item"), nb::arg("min"),
           nb::arg("max"))
      .def(
          "star", [](GrammarBuilder& b, Sym s) { return Sym{b.repeat(s.id, 0, -1)}; }, nb::arg("item"))
      .def(
          "plus", [](GrammarBuilder& b, Sym s) { return Sym{b.repeat(s.id, 1, -1)}; }, nb::arg("item"))
      .def("empty", typed<&GrammarBuilder::empty, Sym()>)
      .def(
          "add_check",
          [](GrammarBuilder& b, Sym rule, CheckKind kind, const std::vector<nb::str>& names, int64_t min, int64_t max,
             std::optional<nb::str> key) {
            // Names are compared with decoded JSON strings, where a lone surrogate escape
            // decodes to its 3-byte form: encode them the same way ("surrogatepass").
            auto decoded_form = [](const nb::str& n) {
              PyObject* enc = PyUnicode_AsEncodedString(n.ptr(), "utf-8", "surrogatepass");
              if (!enc) throw nb::python_error();
              nb::bytes bytes = nb::steal<nb::bytes>(enc);
              return std::string(bytes.c_str(), bytes.size());
            };
            std::vector<std::string> texts;
            texts.reserve(names.size());
            for (const nb::str& n : names) texts.push_back(decoded_form(n));
            std::string k = key ? decoded_form(*key) : std::string();
            b.add_check(rule.id, kind, texts, min, max, key ? &k : nullptr);
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
          [](const GrammarBuilder& b, Sym start) {
            nb::gil_scoped_release release;
            return b.build(start.id);
          },
          nb::arg("start"));
}
