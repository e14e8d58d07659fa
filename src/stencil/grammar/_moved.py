"""Old import paths of modules that moved when grammar/ was split by syntax (regex/, ebnf/, json/).

``stencil.grammar.gbnf``, ``stencil.grammar.lark``, ``stencil.grammar.json_schema``, ... are
documented (README) and used by code outside this package, so they keep working: a finder first
in ``sys.meta_path`` answers an old name with the module at its new place (the same module object,
so ``stencil.grammar.gbnf is stencil.grammar.ebnf.gbnf``). Nothing is imported until an old name
is asked for. The old files are not kept as re-exporting stubs: a file left at its old path would
stop git from seeing the move as a rename, and edits made elsewhere to the old file would not
follow it at merge time.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

__all__ = ["MOVED", "new_name", "install"]

_G = "stencil.grammar."
_S = _G + "json.schema."

#: old module name -> new module name. An entry also covers the old name's submodules
#: (``stencil.grammar.lark.parser`` -> ``stencil.grammar.ebnf.lark.parser``) unless a longer
#: entry names them.
MOVED = {
    _G + "regex_ast": _G + "regex.ast",
    _G + "regex_parser": _G + "regex.parser",
    _G + "regex_positions": _G + "regex.positions",
    _G + "regex_unicode": _G + "regex.unicode",
    _G + "nfa": _G + "regex.decide",
    _G + "regex.nfa": _G + "regex.decide",
    _G + "gbnf": _G + "ebnf.gbnf",
    _G + "gbnf_lexemes": _G + "ebnf.gbnf_lexemes",
    _G + "greedy": _G + "ebnf.greedy",
    _G + "lark": _G + "ebnf.lark",
    _G + "formats": _G + "triggers",
    _G + "json_value": _G + "json.value",
    _G + "json_schema": _G + "json.schema",
    _G + "json_schema.model": _S + "core.model",
    _G + "json_schema.formulas": _S + "core.formulas",
    _G + "json_schema.options": _S + "core.options",
    _G + "json_schema.resolve": _S + "core.resolve",
    _G + "json_schema.formats": _S + "core.formats",
    _G + "json_schema.strings": _S + "lang.strings",
    _G + "json_schema.numbers": _S + "lang.numbers",
    _G + "json_schema.keywords": _S + "read.types",
    _G + "json_schema.compose": _S + "read.compose",
    _G + "json_schema.disjoint": _S + "read.disjoint",
    _G + "json_schema.arrays": _S + "emit.arrays",
    _G + "json_schema.objects": _S + "emit.objects",
    _G + "json_schema.emit": _S + "emit.emitter",
}


def new_name(name: str):
    """The current name of module ``name`` if it moved, else None."""
    if name in MOVED:
        return MOVED[name]
    head, _, tail = name.rpartition(".")
    while head:
        if head in MOVED:
            return MOVED[head] + "." + name[len(head) + 1:]
        head, _, _ = head.rpartition(".")
    return None


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith(_G) or new_name(fullname) is None:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        # the module at its new place; the import system then registers it under the old name
        module = importlib.import_module(new_name(spec.name))
        spec.loader_state = module.__spec__
        return module

    def exec_module(self, module):
        # the import system set module.__spec__ to the alias spec: give the module its own back
        # (reloads, pickling and tools read the real name from it)
        alias = module.__spec__
        if alias.loader is self and alias.loader_state is not None:
            module.__spec__ = alias.loader_state


def install() -> None:
    """Put the finder first in ``sys.meta_path`` (once)."""
    if not any(isinstance(f, _Alias) for f in sys.meta_path):
        sys.meta_path.insert(0, _Alias())
