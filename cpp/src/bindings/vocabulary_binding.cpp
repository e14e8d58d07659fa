#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings/bindings.h"
#include "stencil/vocabulary.h"
#include "tokens/shared_cache.h"
#include "tokens/trie.h"

namespace nb = nanobind;
using namespace stencil;

void bind_vocabulary(nb::module_& m) {
  nb::class_<Vocabulary>(m, "Vocabulary")
      .def(
          "__init__",
          [](Vocabulary* self, const std::vector<nb::bytes>& tokens, const std::vector<int32_t>& special_ids,
             const std::vector<int32_t>& eos_ids, int32_t vocab_size) {
            std::vector<std::string> t;
            t.reserve(tokens.size());
            for (auto& b : tokens) t.emplace_back(b.c_str(), b.size());
            nb::gil_scoped_release release;
            new (self) Vocabulary(std::move(t), special_ids, eos_ids, vocab_size);
          },
          nb::arg("tokens"), nb::arg("special_ids"), nb::arg("eos_ids"), nb::arg("vocab_size"))
      .def_prop_ro("vocab_size", &Vocabulary::vocab_size)
      .def_prop_ro("num_tokens", &Vocabulary::num_tokens)
      .def(
          "token_bytes",
          [](const Vocabulary& v, int64_t id) {
            v.check_id(id);
            auto s = v.token_bytes(static_cast<int32_t>(id));
            return nb::bytes(s.data(), s.size());
          },
          nb::arg("token_id"))
      .def(
          "decode_bytes",
          [](const Vocabulary& v, const std::vector<int64_t>& ids) {
            std::string out;
            for (int64_t id : ids) {
              v.check_id(id);
              out += v.token_bytes(static_cast<int32_t>(id));
            }
            return nb::bytes(out.data(), out.size());
          },
          nb::arg("token_ids"))
      .def("is_special", &Vocabulary::is_special, nb::arg("token_id"))
      .def_prop_ro("trie_nodes", [](const Vocabulary& v) { return v.trie().nodes().size(); })
      .def_prop_ro("trie_build_seconds", &Vocabulary::trie_build_seconds)
      .def_prop_ro("memory_bytes", &Vocabulary::memory_bytes)
      .def_prop_ro("trie_memory_bytes", [](const Vocabulary& v) { return v.trie().memory_bytes(); })
      .def_prop_ro("shared_mask_entries", [](const Vocabulary& v) { return v.shared().mask_entries(); })
      .def_prop_ro("shared_path_entries", [](const Vocabulary& v) { return v.shared().path_entries(); })
      .def_prop_ro("shared_path_hits", [](const Vocabulary& v) { return v.shared().path_hits(); })
      .def_prop_ro("shared_class_entries", [](const Vocabulary& v) { return v.shared().class_entries(); })
      .def_prop_ro("shared_class_hits", [](const Vocabulary& v) { return v.shared().class_hits(); })
      .def_prop_ro("shared_verdict_entries", [](const Vocabulary& v) { return v.shared().verdict_entries(); })
      .def_prop_ro("shared_verdict_hits", [](const Vocabulary& v) { return v.shared().verdict_hits(); })
      // (the bytes of everything the vocabulary's grammars share: masks, token paths, class tries and
      // the count sandwiches' verdicts)
      .def_prop_ro("shared_mask_bytes", [](const Vocabulary& v) { return v.shared().bytes(); });
}
