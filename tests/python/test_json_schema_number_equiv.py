"""The direct constructions of integer ranges (an interval regex, and draft-4 plain integers
built without a boolean lexeme) accept exactly the language of the intersections they replace.
Equivalence is checked by the core: the symmetric difference has an empty language."""
import random
from decimal import Decimal

import pytest

import stencil
from stencil.grammar.json.schema.lang.numbers import JsonNumbers


def _empty(b, e) -> bool:
    start = b.rule("start")
    b.add_alternative(start, [b.lexeme(e, "x")])
    try:
        b.build(start)
    except stencil.GrammarError as err:
        assert "empty" in str(err)
        return True
    return False


def _same(b, x, y) -> bool:
    return _empty(b, b.re_or([b.re_and([x, b.re_not(y)]), b.re_and([y, b.re_not(x)])]))


def _bounds():
    rng = random.Random(7)
    pairs = [(0, 0), (0, 9), (1, 9), (1, 10), (0, 100), (1, 100), (10, 99), (5, 5), (19, 91), (100, 1000),
             (123, 4567), (999, 1000), (1, 65535), (18, 120), (200, 299), (1000, 9999), (7, 70000)]
    for _ in range(25):
        a = rng.randrange(0, 10 ** rng.randrange(1, 7))
        pairs.append((a, a + rng.randrange(0, 10 ** rng.randrange(1, 7))))
    return pairs


@pytest.mark.parametrize("lo,hi", _bounds())
def test_int_interval_is_ge_and_le(lo, hi):
    b = stencil.GrammarBuilder()
    nums = JsonNumbers(b)
    both = b.re_and([nums.mag_cmp("ge", Decimal(lo), True, True), nums.mag_cmp("le", Decimal(hi), True, True)])
    assert _same(b, nums.int_interval(lo, hi), both)


def test_equivalence_check_is_not_vacuous():
    b = stencil.GrammarBuilder()
    nums = JsonNumbers(b)
    assert not _same(b, nums.int_interval(1, 100), nums.int_interval(1, 101))


_RANGES = [(None, False, None, False), (Decimal(0), False, None, False), (Decimal(1), False, Decimal(100), False),
           (Decimal(-5), False, Decimal(5), False), (Decimal("-100.5"), True, Decimal("-3.2"), False),
           (Decimal(0), True, Decimal(10), True), (None, False, Decimal(-1), False), (Decimal("0.5"), False, None, False),
           (Decimal(-10), False, Decimal(0), False), (Decimal(3), False, Decimal(3), False)]


@pytest.mark.parametrize("lo,lo_x,hi,hi_x", _RANGES)
@pytest.mark.parametrize("plain", [False, True])
def test_integer_range_matches_intersection(lo, lo_x, hi, hi_x, plain):
    b = stencil.GrammarBuilder()
    nums = JsonNumbers(b)
    new = nums.range(lo, lo_x, hi, hi_x, True, plain)
    # the reference: the range as intersections of one-sided ranges (plain: and a plain integer)
    ref = [nums.range(lo, lo_x, None, False, True), nums.range(None, False, hi, hi_x, True)]
    if plain:
        ref.append(nums.plain_integer())
    assert _same(b, new, b.re_and(ref))
