"""The drafts' metaschemas ship with stencil: a ``$ref`` to one resolves with no registry, its
``$dynamicRef``/``$recursiveRef`` reach the whole metaschema (so a nested subschema is checked by
every vocabulary), its own ``format: regex`` is an annotation as the metaschema declares, and a
user's registry still takes precedence. Instances are fed as text to compiled grammars (DeepSeek)."""
from __future__ import annotations

import pytest

import stencil
from stencil.grammar.json.schema.core.metaschemas import BUNDLED_URIS, referenced_metaschemas

D2020 = "https://json-schema.org/draft/2020-12/schema"
D2019 = "https://json-schema.org/draft/2019-09/schema"
D7 = "http://json-schema.org/draft-07/schema#"
D4 = "http://json-schema.org/draft-04/schema#"


def accepts(g, text: str) -> bool:
    m = stencil.Matcher(g)
    return m.accept_string(text) and m.is_accepting()


@pytest.mark.parametrize("meta", [D2020, D7, D4])
def test_a_schema_that_must_be_a_schema(compiler, meta):
    g = compiler.compile_json_schema({"$ref": meta}, property_order="any")
    assert accepts(g, '{"type": "string", "maxLength": 12}')
    assert accepts(g, '{"properties": {"when": {"type": "string", "pattern": "^[0-9]+$"}}}')
    assert not accepts(g, '{"maxLength": -4}')              # a non-negative integer
    assert not accepts(g, '{"type": "text"}')                # not one of the simple types
    assert not accepts(g, '{"required": "name"}')            # an array of strings


def test_dynamic_references_reach_every_vocabulary_of_a_nested_subschema(compiler):
    # the applicator vocabulary reaches subschemas through "$dynamicRef": "#meta": resolved
    # statically, a nested subschema would only be checked by the applicator vocabulary and a
    # negative length inside it would pass
    g = compiler.compile_json_schema({"$ref": D2020}, property_order="any")
    assert accepts(g, '{"items": {"properties": {"b": {"minItems": 2}}}}')
    assert not accepts(g, '{"items": {"properties": {"b": {"minItems": -2}}}}')
    assert not accepts(g, '{"anyOf": [{"enum": 3}]}')        # enum is an array


def test_2019_09_resolves_but_its_recursive_references_are_a_clear_error(compiler):
    with pytest.raises(stencil.GrammarError, match=r"\$recursiveRef at https://json-schema.org/draft/2019-09"):
        compiler.compile_json_schema({"$ref": D2019})


def test_the_metaschemas_own_format_is_an_annotation_but_a_users_is_not(compiler):
    g = compiler.compile_json_schema({"$ref": D2020}, property_order="any")
    assert accepts(g, '{"pattern": "(unclosed"}')            # format "regex" in the metaschema: annotation
    with pytest.raises(stencil.GrammarError, match="format 'regex'"):
        compiler.compile_json_schema({"type": "string", "format": "regex"})


def test_the_users_registry_takes_precedence(compiler):
    g = compiler.compile_json_schema({"$ref": D7}, registry={D7: {"type": "integer", "maximum": 9}})
    assert accepts(g, "7") and not accepts(g, "12") and not accepts(g, "{}")


def test_a_relative_reference_inside_the_drafts_namespace(compiler):
    schema = {"$id": "https://json-schema.org/draft/2020-12/mine", "$ref": "meta/validation"}
    g = compiler.compile_json_schema(schema, property_order="any")
    assert accepts(g, '{"minLength": 3}') and not accepts(g, '{"minLength": "3"}')


def test_only_referenced_drafts_are_loaded():
    # $schema alone names a draft without referencing its metaschema: nothing is loaded for it
    assert referenced_metaschemas(repr({"$schema": D2020, "type": "string"})) == {}
    docs = referenced_metaschemas(repr({"properties": {"a": {"$ref": D7}}}))
    assert set(docs) == {D7.rstrip("#")}
    docs = referenced_metaschemas(repr({"$ref": D2020}))
    assert len(docs) == 9 and set(docs) <= BUNDLED_URIS       # the metaschema and its 8 vocabularies
