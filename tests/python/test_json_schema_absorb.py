"""Alternatives of one JSON type that another alternative covers are dropped (X or (X and Y) =
X) by core.model.absorb, which compares only the pairs a cheap signature allows (a schema with
hundreds of object alternatives compared every pair in Python: seconds). Random lists of object
and array specs are absorbed the same as by comparing every pair with the covering relation."""
from __future__ import annotations

import itertools
import random

import pytest

from stencil.grammar.json.schema.core.formulas import FALSE, TRUE
from stencil.grammar.json.schema.core.model import (ArrSpec, ObjSpec, Typed, absorb, cover_profile, covers,
                                                    sub_and)

ATOMS = [Typed(num=TRUE), Typed(str=TRUE), Typed(null=True), Typed(bools=frozenset([True]))]
SUBS = [frozenset(), *(frozenset([a]) for a in ATOMS), frozenset(ATOMS[:2]), frozenset(ATOMS[1:3])]


def random_obj(rng: random.Random) -> ObjSpec:
    keys = rng.sample("abcd", rng.randrange(4))
    props = tuple((k, rng.choice(SUBS)) for k in keys)
    required = tuple(rng.sample(keys, rng.randrange(len(keys) + 1)))
    lo = rng.randrange(3)
    return ObjSpec(props=props, required=required, min=lo, max=rng.choice([None, lo + rng.randrange(3)]),
                   evaluated=rng.choice([FALSE, FALSE, TRUE]))


def random_arr(rng: random.Random) -> ArrSpec:
    prefix = tuple(rng.choice(SUBS) for _ in range(rng.randrange(3)))
    lo = rng.randrange(3)
    return ArrSpec(prefix=prefix, items=rng.choice(SUBS), min=lo, max=rng.choice([None, lo + rng.randrange(3)]),
                   unique=rng.random() < 0.3, eval_upto=rng.choice([0, 0, 1]))


def every_pair(specs: tuple) -> tuple:
    """The definition: a spec goes where another one of its group covers it (of two that cover
    each other, the first stays)."""
    prof = [cover_profile(s) for s in specs]

    def covering(a, b):
        return prof[a][0] == prof[b][0] and covers(prof[a], prof[b])
    return tuple(s for i, s in enumerate(specs)
                 if not any(j != i and covering(j, i) and not (j > i and covering(i, j)) for j in range(len(specs))))


@pytest.mark.parametrize("kind", ["object", "array"])
def test_absorb_drops_exactly_the_covered_alternatives(kind):
    rng = random.Random(kind)
    make = random_obj if kind == "object" else random_arr
    dropped = 0
    for _ in range(300):
        specs = tuple(dict.fromkeys(make(rng) for _ in range(rng.randrange(2, 30))))
        got = absorb(specs)
        assert got == every_pair(specs)
        assert absorb(got) == got  # what stays covers nothing else that stays
        dropped += len(specs) - len(got)
    assert dropped > 300


def test_a_spec_with_more_constraints_goes_and_equal_ones_keep_the_first():
    loose = ObjSpec(props=(("a", SUBS[1]),))
    tight = ObjSpec(props=(("a", sub_and(SUBS[1], SUBS[2])), ("b", SUBS[0])), required=("a",))
    other = ObjSpec(props=(("a", SUBS[1]),), evaluated=TRUE)  # another group: never compared
    assert absorb((tight, loose, other)) == (loose, other)
    twin = ObjSpec(props=(("a", SUBS[1]),))
    assert [id(s) for s in absorb((loose, twin))] == [id(loose)]
    assert all(covers(cover_profile(s), cover_profile(s)) for s in itertools.chain([loose, tight, other]))
