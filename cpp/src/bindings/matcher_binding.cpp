#include <algorithm>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings/bindings.h"
#include "matcher/batch.h"
#include "stencil/errors.h"
#include "stencil/matcher.h"

namespace nb = nanobind;
using namespace stencil;

using Bitmask = nb::ndarray<int32_t, nb::ndim<2>, nb::c_contig, nb::device::cpu>;

static uint32_t* bitmask_row(Bitmask& bm, int64_t index, size_t* words) {
  if (index < 0 || static_cast<size_t>(index) >= bm.shape(0))
    throw UsageError("bitmask row index " + std::to_string(index) + " is out of range for a bitmask of " +
                     std::to_string(bm.shape(0)) + " rows");
  *words = bm.shape(1);
  return reinterpret_cast<uint32_t*>(bm.data()) + static_cast<size_t>(index) * bm.shape(1);
}

void bind_matcher(nb::module_& m) {
  nb::class_<CompiledGrammar>(m, "CompiledGrammar")
      .def("__init__",
           [](CompiledGrammar* self, std::shared_ptr<const Grammar> g, std::shared_ptr<const Vocabulary> v,
              uint32_t max_lexer_states, uint64_t lexer_fuel, size_t mask_cache_bytes, bool plain_slice,
              bool shared_masks, bool boundary_runs, bool repeat_memo, bool loop_skip) {
             CompileLimits limits;
             limits.plain_slice = plain_slice;
             limits.shared_masks = shared_masks;
             limits.boundary_runs = boundary_runs;
             limits.repeat_memo = repeat_memo;
             limits.loop_skip = loop_skip;
             limits.lexer.max_states = max_lexer_states;
             limits.lexer.fuel = lexer_fuel;
             limits.mask_cache_bytes = mask_cache_bytes;
             nb::gil_scoped_release release;
             new (self) CompiledGrammar(std::move(g), std::move(v), limits);
           },
           nb::arg("grammar"), nb::arg("vocabulary"), nb::arg("max_lexer_states") = 1u << 20,
           nb::arg("lexer_fuel") = 100'000'000ull, nb::arg("mask_cache_bytes") = 512ull << 20,
           nb::arg("plain_slice") = true, nb::arg("shared_masks") = true, nb::arg("boundary_runs") = true,
           nb::arg("repeat_memo") = true, nb::arg("loop_skip") = true)
      .def_prop_ro("grammar", &CompiledGrammar::grammar_ptr)
      .def_prop_ro("vocabulary", &CompiledGrammar::vocab_ptr)
      .def_prop_ro("memory_bytes", &CompiledGrammar::memory_bytes)
      .def_prop_ro("num_lexer_states", [](const CompiledGrammar& g) { return g.lexer().num_states(); })
      .def_prop_ro("num_cached_masks", [](const CompiledGrammar& g) { return g.mask_cache().size(); });

  nb::class_<Matcher>(m, "Matcher",
      "The state of one generation under a compiled grammar.\n\n"
      "Example::\n\n"
      "    m = stencil.Matcher(compiler.compile_regex('[0-9]+'), max_rollback=8)\n"
      "    bm = stencil.allocate_token_bitmask(1, tok.vocab_size)\n"
      "    m.fill_next_token_bitmask(bm, 0)\n"
      "    m.accept_token(token_id)\n")
      .def(nb::init<std::shared_ptr<const CompiledGrammar>, int>(), nb::arg("grammar"), nb::arg("max_rollback") = 0)
      .def("accept_token", &Matcher::accept_token, nb::arg("token"),
           "Accept one token: True, or False with the state unchanged when the grammar forbids it.\n"
           "Out-of-range ids raise ValueError; so does any token after termination.")
      .def("accept_tokens",
           [](Matcher& mt, const std::vector<int64_t>& tokens) {
             int64_t n = 0;
             for (int64_t t : tokens) {
               if (!mt.accept_token(t)) break;
               ++n;
             }
             return n;
           },
           nb::arg("tokens"))
      .def("accept_bytes", [](Matcher& mt, nb::bytes b) { return mt.accept_bytes(std::string(b.c_str(), b.size())); },
           "Accept raw bytes (all or nothing; one rollback step). For tests and debugging.")
      .def("accept_string", [](Matcher& mt, const std::string& text) { return mt.accept_bytes(text); },
           nb::arg("text"), "Accept the UTF-8 bytes of text (all or nothing; one rollback step).")
      .def("rollback", &Matcher::rollback, nb::arg("n") = 1)
      .def("reset", &Matcher::reset)
      .def("fork", [](const Matcher& mt) { return Matcher(mt); })
      .def("is_accepting", &Matcher::is_accepting)
      .def("is_terminated", &Matcher::is_terminated)
      .def("forced_tokens", [](Matcher& mt) { return mt.forced_tokens(); })
      .def("forced_bytes", [](Matcher& mt) {
        std::string s = mt.forced_bytes();
        return nb::bytes(s.data(), s.size());
      })
      .def("validate_tokens", &Matcher::validate_tokens, nb::arg("tokens"))
      .def("fill_next_token_bitmask",
           [](Matcher& mt, Bitmask bm, int64_t index) {
             size_t words;
             uint32_t* row = bitmask_row(bm, index, &words);
             nb::gil_scoped_release release;
             mt.fill_mask(row, words);
           },
           nb::arg("bitmask"), nb::arg("index") = 0)
      .def_prop_ro("num_accepted_tokens", &Matcher::num_accepted_tokens)
      .def_prop_ro("max_rollback", &Matcher::max_rollback)
      .def("debug_state", &Matcher::debug_state);

  m.def("fill_next_token_bitmasks",
        [](const std::vector<Matcher*>& matchers, Bitmask bm, std::vector<int64_t> indices, int num_threads) {
          if (indices.empty())
            for (size_t i = 0; i < matchers.size(); ++i) indices.push_back(static_cast<int64_t>(i));
          if (indices.size() != matchers.size())
            throw UsageError("indices has " + std::to_string(indices.size()) + " entries for " +
                             std::to_string(matchers.size()) + " matchers");
          size_t words = bm.shape(1);
          for (int64_t i : indices) bitmask_row(bm, i, &words);
          std::vector<Matcher*> sorted = matchers;
          std::sort(sorted.begin(), sorted.end());
          if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
            throw UsageError("the same matcher appears twice in one batch");
          uint32_t* base = reinterpret_cast<uint32_t*>(bm.data());
          nb::gil_scoped_release release;
          fill_masks_parallel(matchers, indices, base, words, num_threads);
        },
        nb::arg("matchers"), nb::arg("bitmask"), nb::arg("indices"), nb::arg("num_threads"));
}
