#include <algorithm>
#include <cmath>
#include <tuple>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/array.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "bindings/args.h"
#include "bindings/bindings.h"
#include "bindings/mask_args.h"
#include "matcher/lexer_epoch.h"
#include "stencil/errors.h"
#include "stencil/matcher.h"

namespace nb = nanobind;
using namespace stencil;
using stencil::bindings::bitmask_row;
using stencil::bindings::check_bitmask;
using stencil::bindings::check_remaining;
using stencil::bindings::int_arg;
using stencil::bindings::MaskRows;

static constexpr const char* kTokenRange = "an int in [0, vocab_size)";

// A list of token ids, each checked as accept_token checks one.
static std::vector<int64_t> token_list(nb::handle tokens) {
  if (!PyList_Check(tokens.ptr()) && !PyTuple_Check(tokens.ptr()) &&
      !(PySequence_Check(tokens.ptr()) && !PyUnicode_Check(tokens.ptr()) && !PyBytes_Check(tokens.ptr())))
    throw nb::type_error(
        ("tokens must be a list of token ids, got " + std::string(nb::type_name(tokens.type()).c_str())).c_str());
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(nb::len(tokens)));
  for (nb::handle t : tokens) out.push_back(int_arg(t, "tokens", kTokenRange, static_cast<int64_t>(out.size())));
  return out;
}

// Matcher(time_limit=...): seconds as a number > 0, or None (0 inside: no limit). A string is not
// read as a number, nor is a bool.
static double check_time_limit(nb::handle v) {
  if (v.is_none()) return 0;
  const std::string type = nb::type_name(v.type()).c_str();
  if (PyBool_Check(v.ptr()) || PyUnicode_Check(v.ptr()) || PyBytes_Check(v.ptr()))
    throw nb::type_error(("time_limit must be a number of seconds > 0 or None, got " + type).c_str());
  PyObject* f = PyNumber_Float(v.ptr());
  if (!f) {
    PyErr_Clear();
    throw nb::type_error(("time_limit must be a number of seconds > 0 or None, got " + type).c_str());
  }
  const double s = PyFloat_AsDouble(f);
  Py_DECREF(f);
  if (!(s > 0) || !std::isfinite(s))
    throw nb::value_error(
        ("time_limit must be a finite number of seconds > 0 (None: no limit), got " + std::string(nb::repr(v).c_str()))
            .c_str());
  return s;
}

static nb::object time_limit_of(const Matcher& mt) {
  return mt.time_limit() > 0 ? nb::object(nb::float_(mt.time_limit())) : nb::none();
}

void bind_matcher(nb::module_& m) {
  nb::class_<CompiledGrammar>(m, "CompiledGrammar")
      .def(
          "__init__",
          [](CompiledGrammar* self, std::shared_ptr<const Grammar> g, std::shared_ptr<const Vocabulary> v,
             uint32_t max_lexer_states, uint64_t lexer_fuel, size_t mask_cache_bytes, size_t lexer_memory_bytes,
             bool plain_slice, bool shared_masks, bool boundary_runs, bool repeat_memo, bool loop_skip,
             std::vector<CompiledGrammar::Note> not_enforced) {
            CompileLimits limits;
            limits.plain_slice = plain_slice;
            limits.shared_masks = shared_masks;
            limits.boundary_runs = boundary_runs;
            limits.repeat_memo = repeat_memo;
            limits.loop_skip = loop_skip;
            limits.lexer.max_states = max_lexer_states;
            limits.lexer.fuel = lexer_fuel;
            limits.mask_cache_bytes = mask_cache_bytes;
            limits.lexer_memory_bytes = lexer_memory_bytes;
            {
              nb::gil_scoped_release release;
              new (self) CompiledGrammar(std::move(g), std::move(v), limits);
            }
            self->set_not_enforced(std::move(not_enforced));
          },
          // defaults from CompileLimits, the one definition (also _core.DEFAULT_LIMITS)
          nb::arg("grammar"), nb::arg("vocabulary"), nb::arg("max_lexer_states") = CompileLimits{}.lexer.max_states,
          nb::arg("lexer_fuel") = CompileLimits{}.lexer.fuel,
          nb::arg("mask_cache_bytes") = CompileLimits{}.mask_cache_bytes,
          nb::arg("lexer_memory_bytes") = CompileLimits{}.lexer_memory_bytes, nb::arg("plain_slice") = true,
          nb::arg("shared_masks") = true, nb::arg("boundary_runs") = true, nb::arg("repeat_memo") = true,
          nb::arg("loop_skip") = true, nb::arg("not_enforced") = std::vector<CompiledGrammar::Note>{})
      .def_prop_ro("grammar", &CompiledGrammar::grammar_ptr)
      .def_prop_ro("vocabulary", &CompiledGrammar::vocab_ptr)
      .def_prop_ro("memory_bytes", &CompiledGrammar::memory_bytes)
      .def_prop_ro("grammar_bytes", &CompiledGrammar::grammar_bytes)
      .def_prop_ro("num_lexer_states", [](const CompiledGrammar& g) { return g.epoch()->lexer.num_states(); })
      .def_prop_ro(
          "work_limit_reached", [](const CompiledGrammar& g) { return g.epoch()->lexer.work_limit_reached(); },
          "Whether a work limit of the lazy lexer is reached (new matchers would fail).")
      .def_prop_ro("num_lexer_renewals", &CompiledGrammar::num_renewals,
                   "How many times the lazy lexer and its mask cache were dropped and started afresh.")
      .def_prop_ro("num_cached_masks", [](const CompiledGrammar& g) { return g.epoch()->cache.size(); })
      .def_prop_ro(
          "not_enforced",
          [](const CompiledGrammar& g) {
            std::vector<std::tuple<std::string, std::string, std::string>> out;
            for (const auto& [what, where, why] : g.not_enforced()) out.emplace_back(what, where, why);
            return out;
          },
          "What the grammar does not enforce of what it was given: (keyword, where, why) for each\n"
          "part that compile_json_schema(..., lenient=True) ignored; empty otherwise.");

  nb::class_<Matcher>(m, "Matcher",
                      "The state of one generation under a compiled grammar.\n\n"
                      "max_rollback: how many tokens rollback() may undo (-1: any number; the history then grows\n"
                      "with the output). A matcher serves one thread at a time: a call on it while another thread\n"
                      "is inside one raises ConcurrentUseError; fork() it or make one per sequence (matchers of one\n"
                      "compiled grammar run in parallel safely).\n\n"
                      "time_limit: seconds (a number > 0, or None for no limit) that each call may work on the\n"
                      "grammar: fills (also through fill_next_token_bitmasks), accepts, forced_tokens/forced_bytes,\n"
                      "validate_tokens, min_completion_tokens, is_accepting, rollback. Compilation is lazy: the\n"
                      "first mask of a state builds lexer states and mask entries, which can take seconds for a\n"
                      "hostile grammar. Past the limit the call raises TimeLimitExceeded (a LimitError) and the\n"
                      "matcher is as it was before the call; what was built stays cached, so a later call with a\n"
                      "larger limit goes on from there. A compile deadline on the same thread and the limit: the\n"
                      "earlier one wins. fork() keeps the limit; the time_limit property changes it.\n\n"
                      "Example::\n\n"
                      "    m = stencil.Matcher(compiler.compile_regex('[0-9]+'), max_rollback=8, time_limit=0.5)\n"
                      "    bm = stencil.allocate_token_bitmask(1, tok.vocab_size)\n"
                      "    try:\n"
                      "        m.fill_next_token_bitmask(bm, 0)\n"
                      "    except stencil.TimeLimitExceeded:\n"
                      "        ...  # too expensive for this request: refuse it; m is unchanged\n"
                      "    m.accept_token(token_id)\n")
      .def(
          "__init__",
          [](Matcher* self, nb::handle grammar, nb::handle max_rollback, nb::handle time_limit) {
            if (!nb::isinstance<CompiledGrammar>(grammar))
              throw nb::type_error(("Matcher needs a stencil.CompiledGrammar (GrammarCompiler.compile_*), got " +
                                    std::string(nb::type_name(grammar.type()).c_str()))
                                       .c_str());
            const int64_t n = int_arg(max_rollback, "max_rollback", "an int >= -1 (-1: unlimited)");
            if (n < -1 || n > INT32_MAX)
              throw UsageError("max_rollback must be -1 (unlimited) or a count in [0, 2**31), got " +
                               std::to_string(n));
            const double limit = check_time_limit(time_limit);
            new (self) Matcher(nb::cast<std::shared_ptr<const CompiledGrammar>>(grammar), static_cast<int>(n), limit);
          },
          nb::arg("grammar").none(), nb::arg("max_rollback").none() = 0, nb::kw_only(),
          nb::arg("time_limit").none() = nb::none(),
          nb::sig("def __init__(self, grammar: CompiledGrammar, max_rollback: int = 0, *, "
                  "time_limit: float | None = None) -> None"))
      .def_prop_rw(
          "time_limit", [](const Matcher& mt) { return time_limit_of(mt); },
          [](Matcher& mt, nb::handle v) {
            const double limit = check_time_limit(v);
            Matcher::Exclusive use(mt);
            mt.set_time_limit(limit);
          },
          nb::arg("value").none(), nb::for_getter(nb::sig("def time_limit(self) -> float | None")),
          nb::for_setter(nb::sig("def time_limit(self, value: float | None, /) -> None")),
          "Seconds each call may work (None: no limit); see the class doc.")
      .def(
          "accept_token",
          [](Matcher& mt, nb::handle token, nb::handle remaining_tokens) {
            const int64_t t = int_arg(token, "token", kTokenRange);
            const int64_t remaining = check_remaining(remaining_tokens);
            Matcher::Exclusive use(mt);
            return remaining < 0 ? mt.accept_token(t) : mt.accept_token_within(t, remaining);
          },
          nb::arg("token").none(), nb::arg("remaining_tokens").none() = nb::none(),
          nb::sig("def accept_token(self, token: int, remaining_tokens: int | None = None) -> bool"),
          "Accept one token: True, or False with the state unchanged when the grammar forbids it.\n"
          "Out-of-range ids raise ValueError; so does any token after termination.\n\n"
          "remaining_tokens (as in fill_next_token_bitmask: this token included): the token is taken\n"
          "only where the output can still be finished in the tokens left after it\n"
          "(min_completion_tokens), else False with the state unchanged. Checking the token a model\n"
          "picked this way costs about a microsecond; the mask is needed only when it is refused\n"
          "(opportunistic masking). The budgeted mask allows every token this accepts, except where its\n"
          "search ran out of work and coarser costs refused it.")
      .def(
          "accept_tokens",
          [](Matcher& mt, nb::handle token_ids) {
            const std::vector<int64_t> tokens = token_list(token_ids);
            Matcher::Exclusive use(mt);
            int64_t n = 0;
            for (int64_t t : tokens) {
              if (!mt.accept_token(t)) break;
              ++n;
            }
            return n;
          },
          nb::arg("tokens").none(), nb::sig("def accept_tokens(self, tokens: collections.abc.Sequence[int]) -> int"))
      .def(
          "accept_bytes",
          [](Matcher& mt, nb::handle data) {
            if (!PyBytes_Check(data.ptr()))
              throw nb::type_error(("data must be bytes (accept_string takes a str), got " +
                                    std::string(nb::type_name(data.type()).c_str()))
                                       .c_str());
            std::string b(PyBytes_AS_STRING(data.ptr()), static_cast<size_t>(PyBytes_GET_SIZE(data.ptr())));
            Matcher::Exclusive use(mt);
            return mt.accept_bytes(b);
          },
          nb::arg("data").none(), nb::sig("def accept_bytes(self, data: bytes) -> bool"),
          "Accept raw bytes (all or nothing; one rollback step). For tests and debugging.")
      .def(
          "accept_string",
          [](Matcher& mt, nb::handle text) {
            const std::string utf8(stencil::bindings::text_arg(text, "text", "accept_bytes takes bytes"));
            Matcher::Exclusive use(mt);
            return mt.accept_bytes(utf8, "accept_string");
          },
          nb::arg("text").none(), nb::sig("def accept_string(self, text: str) -> bool"),
          "Accept the UTF-8 bytes of text (all or nothing; one rollback step).")
      .def(
          "rollback",
          [](Matcher& mt, nb::handle n) {
            const int64_t k = int_arg(n, "n", "an int >= 0");
            Matcher::Exclusive use(mt);
            mt.rollback(k);
          },
          nb::arg("n").none() = 1, nb::sig("def rollback(self, n: int = 1) -> None"))
      .def("reset",
           [](Matcher& mt) {
             Matcher::Exclusive use(mt);
             mt.reset();
           })
      .def("fork",
           [](const Matcher& mt) {
             Matcher::Exclusive use(mt);
             return Matcher(mt);
           })
      .def("is_accepting",
           [](Matcher& mt) {
             Matcher::Exclusive use(mt);
             return mt.is_accepting();
           })
      .def("is_terminated", &Matcher::is_terminated)
      .def("forced_tokens",
           [](Matcher& mt) {
             Matcher::Exclusive use(mt);
             return mt.forced_tokens();
           })
      .def("forced_bytes",
           [](Matcher& mt) {
             Matcher::Exclusive use(mt);
             std::string s = mt.forced_bytes();
             return nb::bytes(s.data(), s.size());
           })
      .def(
          "validate_tokens",
          [](Matcher& mt, nb::handle token_ids) {
            const std::vector<int64_t> tokens = token_list(token_ids);
            Matcher::Exclusive use(mt);
            return mt.validate_tokens(tokens);
          },
          nb::arg("tokens").none(), nb::sig("def validate_tokens(self, tokens: collections.abc.Sequence[int]) -> int"))
      .def(
          "fill_next_token_bitmask",
          [](Matcher& mt, nb::handle bitmask, nb::handle index, nb::handle remaining_tokens) {
            MaskRows bm = check_bitmask(bitmask);
            uint32_t* row = bitmask_row(bm, int_arg(index, "index", "an int (a row of the bitmask)"));
            const int64_t remaining = check_remaining(remaining_tokens);
            Matcher::Exclusive use(mt);
            nb::gil_scoped_release release;
            mt.fill_mask_within(row, bm.words, remaining);
          },
          nb::arg("bitmask").none(), nb::arg("index").none() = 0, nb::arg("remaining_tokens").none() = nb::none(),
          nb::sig("def fill_next_token_bitmask(self, bitmask: numpy.typing.NDArray, index: int = 0, "
                  "remaining_tokens: int | None = None) -> None"),
          "Write the mask of allowed next tokens into row `index` of `bitmask`, a C-contiguous int32\n"
          "array [rows, ceil(vocab_size / 32)] (stencil.allocate_token_bitmask); any other array is an\n"
          "error, never a silent copy.\n\n"
          "remaining_tokens: how many tokens may still be generated, this one included (None: no\n"
          "budget). Then a token is allowed only if the output can still be finished in the tokens left\n"
          "after it, so a generation whose budget holds min_completion_tokens() at its start ends\n"
          "valid before it runs out; where the budget does not bind, the mask is the unbudgeted one.")
      .def(
          "min_completion_tokens",
          [](Matcher& mt) -> std::optional<int64_t> {
            Matcher::Exclusive use(mt);
            nb::gil_scoped_release release;
            const int64_t c = mt.min_completion_tokens();
            if (c < 0) return std::nullopt;
            return c;
          },
          "The fewest tokens that finish the output from this state: the length of a real tokenization\n"
          "of a shortest completion, each token inside one lexeme (special tokens count one), so an\n"
          "upper bound on the tokens a shortest completion needs. 0 when the output is complete;\n"
          "None when no completion is known.")
      .def_prop_ro("num_accepted_tokens", &Matcher::num_accepted_tokens)
      .def_prop_ro("grammar", &Matcher::grammar_ptr, "The CompiledGrammar this matcher follows.")
      .def_prop_ro("max_rollback", &Matcher::max_rollback)
      .def(
          "stats",
          [](const Matcher& mt) {
            Matcher::Stats s;
            {
              Matcher::Exclusive use(mt);
              s = mt.stats();
            }
            nb::dict d;
            d["lexer_state"] = s.lexer_state;
            d["parser_rows"] = s.parser_rows;
            d["parser_items"] = s.parser_items;
            d["tokens"] = s.tokens;
            d["terminated"] = s.terminated;
            return d;
          },
          nb::sig("def stats(self) -> dict[str, int | bool]"),
          "The parse state as numbers, read now: lexer_state (its id), parser_rows and parser_items\n"
          "(the Earley rows on the parser's stack and the items in them), tokens (in the history),\n"
          "terminated. debug_state() says the same in words, for messages.\n\n"
          "Example::\n\n"
          "    m.accept_string('[1, [2')\n"
          "    m.stats()['parser_items']   # Earley items the parser holds now\n")
      .def("debug_state", [](const Matcher& mt) {
        Matcher::Exclusive use(mt);
        return mt.debug_state();
      });
}
