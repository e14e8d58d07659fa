"""Code point range sets and the Unicode tables the regex front-end needs.

A range set is a sorted tuple of disjoint, non-adjacent inclusive ``(lo, hi)`` pairs of Unicode
scalar values: surrogates (U+D800..U+DFFF) never appear, since they cannot occur in UTF-8 text.
Tables (general categories, case equivalence) are built from :mod:`unicodedata` on first use and
cached for the life of the process.
"""
from __future__ import annotations

import bisect
import unicodedata
from functools import lru_cache
from typing import Iterable, Optional

MAX_CP = 0x10FFFF
SURR_LO, SURR_HI = 0xD800, 0xDFFF

Ranges = tuple  # tuple[tuple[int, int], ...]


def lone_surrogate(text: str) -> Optional[int]:
    """The index of the first surrogate code point in ``text`` (a Python str may hold one alone:
    ``"\\ud800"``, or JSON's ``"\\ud800"`` decoded), or None. No UTF-8 text holds one, so a
    front-end that meets one in a literal says so instead of building a language without it."""
    for i, c in enumerate(text):
        if SURR_LO <= ord(c) <= SURR_HI:
            return i
    return None


def normalize(ranges: Iterable[tuple[int, int]]) -> Ranges:
    """Sort, merge and clip ranges; drop surrogates. Input pairs may overlap or be unordered."""
    rs = sorted((max(lo, 0), min(hi, MAX_CP)) for lo, hi in ranges if lo <= hi)
    out: list[list[int]] = []
    for lo, hi in rs:
        if lo > hi:
            continue
        if out and lo <= out[-1][1] + 1:
            if hi > out[-1][1]:
                out[-1][1] = hi
        else:
            out.append([lo, hi])
    res = []
    for lo, hi in out:  # cut the surrogate block out
        if hi < SURR_LO or lo > SURR_HI:
            res.append((lo, hi))
        else:
            if lo < SURR_LO:
                res.append((lo, SURR_LO - 1))
            if hi > SURR_HI:
                res.append((SURR_HI + 1, hi))
    return tuple(res)


def complement(ranges: Ranges) -> Ranges:
    """All scalar values not in a normalized range set."""
    out = []
    nxt = 0
    for lo, hi in ranges:
        if lo > nxt:
            out.append((nxt, lo - 1))
        nxt = hi + 1
    if nxt <= MAX_CP:
        out.append((nxt, MAX_CP))
    return normalize(out)


def union(*sets: Ranges) -> Ranges:
    return normalize(r for s in sets for r in s)


def intersect(a: Ranges, b: Ranges) -> Ranges:
    return complement(union(complement(a), complement(b)))


def difference(a: Ranges, b: Ranges) -> Ranges:
    return intersect(a, complement(b))


def symmetric_difference(a: Ranges, b: Ranges) -> Ranges:
    return union(difference(a, b), difference(b, a))


def bridge_surrogates(ranges: Ranges) -> list[tuple[int, int]]:
    """Join ranges that touch the surrogate gap (surrogates never match, so this is harmless)."""
    out: list[tuple[int, int]] = []
    for lo, hi in ranges:
        if out and out[-1][1] == SURR_LO - 1 and lo == SURR_HI + 1:
            out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
    return out


def ranges_intersect(a: Ranges, b: Ranges) -> bool:
    """Whether two range sets share a code point (a merge walk, no set built)."""
    i = j = 0
    while i < len(a) and j < len(b):
        if a[i][1] < b[j][0]:
            i += 1
        elif b[j][1] < a[i][0]:
            j += 1
        else:
            return True
    return False


def contains(ranges: Ranges, cp: int) -> bool:
    i = bisect.bisect_right(ranges, (cp, MAX_CP + 1)) - 1
    return i >= 0 and ranges[i][0] <= cp <= ranges[i][1]


# --- fixed classes -------------------------------------------------------------------------------

DIGIT: Ranges = ((0x30, 0x39),)
WORD: Ranges = ((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A))
SPACE: Ranges = normalize([(0x09, 0x0D), (0x20, 0x20), (0xA0, 0xA0), (0x1680, 0x1680),
                           (0x2000, 0x200A), (0x2028, 0x2029), (0x202F, 0x202F),
                           (0x205F, 0x205F), (0x3000, 0x3000), (0xFEFF, 0xFEFF)])
ASCII_SPACE: Ranges = ((0x09, 0x0D), (0x20, 0x20))
LINE_TERMINATORS: Ranges = ((0x0A, 0x0A), (0x0D, 0x0D), (0x2028, 0x2029))
ANY: Ranges = normalize([(0, MAX_CP)])
DOT: Ranges = complement(LINE_TERMINATORS)
# Rust's regex crate (llguidance's Lark terminals): "." stops at "\n" only
RUST_DOT: Ranges = complement(((0x0A, 0x0A),))
#: the members of Unicode's Other_Alphabetic outside L, M and Nl (PropList.txt: circled and squared
#: Latin letters, all So), which unicodedata cannot name; Rust's \w holds them through Alphabetic
_OTHER_ALPHABETIC_SYMBOLS: Ranges = ((0x24B6, 0x24E9), (0x1F130, 0x1F149), (0x1F150, 0x1F169), (0x1F170, 0x1F189))
#: the ASCII classes Rust's regex crate names inside brackets: [[:alpha:]], [[:^digit:]]
POSIX: dict[str, Ranges] = {
    "alnum": ((0x30, 0x39), (0x41, 0x5A), (0x61, 0x7A)), "alpha": ((0x41, 0x5A), (0x61, 0x7A)),
    "ascii": ((0x00, 0x7F),), "blank": ((0x09, 0x09), (0x20, 0x20)), "cntrl": ((0x00, 0x1F), (0x7F, 0x7F)),
    "digit": DIGIT, "graph": ((0x21, 0x7E),), "lower": ((0x61, 0x7A),), "print": ((0x20, 0x7E),),
    "punct": ((0x21, 0x2F), (0x3A, 0x40), (0x5B, 0x60), (0x7B, 0x7E)), "space": ASCII_SPACE,
    "upper": ((0x41, 0x5A),), "word": WORD, "xdigit": ((0x30, 0x39), (0x41, 0x46), (0x61, 0x66)),
}


# --- general categories ----------------------------------------------------------------------------

_GROUPS = {
    "L": ("Lu", "Ll", "Lt", "Lm", "Lo"), "LC": ("Lu", "Ll", "Lt"),
    "M": ("Mn", "Mc", "Me"), "N": ("Nd", "Nl", "No"),
    "P": ("Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po"), "S": ("Sm", "Sc", "Sk", "So"),
    "Z": ("Zs", "Zl", "Zp"), "C": ("Cc", "Cf", "Cs", "Co", "Cn"),
}
_LONG = {
    "Letter": "L", "Cased_Letter": "LC", "Uppercase_Letter": "Lu", "Lowercase_Letter": "Ll",
    "Titlecase_Letter": "Lt", "Modifier_Letter": "Lm", "Other_Letter": "Lo",
    "Mark": "M", "Combining_Mark": "M", "Nonspacing_Mark": "Mn", "Spacing_Mark": "Mc",
    "Enclosing_Mark": "Me", "Number": "N", "Decimal_Number": "Nd", "digit": "Nd",
    "Letter_Number": "Nl", "Other_Number": "No", "Punctuation": "P", "punct": "P",
    "Connector_Punctuation": "Pc", "Dash_Punctuation": "Pd", "Open_Punctuation": "Ps",
    "Close_Punctuation": "Pe", "Initial_Punctuation": "Pi", "Final_Punctuation": "Pf",
    "Other_Punctuation": "Po", "Symbol": "S", "Math_Symbol": "Sm", "Currency_Symbol": "Sc",
    "Modifier_Symbol": "Sk", "Other_Symbol": "So", "Separator": "Z", "Space_Separator": "Zs",
    "Line_Separator": "Zl", "Paragraph_Separator": "Zp", "Other": "C", "Control": "Cc",
    "cntrl": "Cc", "Format": "Cf", "Surrogate": "Cs", "Private_Use": "Co", "Unassigned": "Cn",
}
_LEAVES = {c for g in _GROUPS.values() for c in g}


@lru_cache(maxsize=None)
def _category_table() -> dict[str, Ranges]:
    runs: dict[str, list[tuple[int, int]]] = {c: [] for c in _LEAVES}
    category = unicodedata.category
    start, cur = 0, category("\0")
    for cp in range(1, MAX_CP + 1):
        c = category(chr(cp))
        if c != cur:
            runs[cur].append((start, cp - 1))
            start, cur = cp, c
    runs[cur].append((start, MAX_CP))
    return {k: normalize(v) for k, v in runs.items()}


@lru_cache(maxsize=None)
def property_ranges(spec: str) -> Optional[Ranges]:
    """Ranges for the body of ``\\p{...}``, or None when the property is not supported.

    Supported: general categories by short or long name (``L``, ``Lu``, ``Letter``, ...), also as
    ``gc=...`` / ``General_Category=...``, and the binary properties ``Any``, ``ASCII``,
    ``Assigned``.
    """
    name, sep, value = spec.partition("=")
    if sep:
        if name not in ("gc", "General_Category"):
            return None
        name = value
    if name == "Any":
        return ANY
    if name == "ASCII":
        return ((0, 0x7F),)
    if name == "Assigned":
        return complement(_category_table()["Cn"])
    name = _LONG.get(name, name)
    if name in _LEAVES:
        return _category_table()[name]
    if name in _GROUPS:
        t = _category_table()
        return union(*(t[c] for c in _GROUPS[name]))
    return None


# --- case folding ------------------------------------------------------------------------------------

_CASED_LIMIT = 0x20000  # no code point at or above this has a case mapping (checked: max 0x1E943)


@lru_cache(maxsize=None)
def _case_table() -> tuple[list[int], dict[int, tuple[int, ...]]]:
    """Sorted list of code points with case variants, and each one's equivalence class.

    Two code points are equivalent when connected by single-code-point lower(), upper() or
    casefold() mappings (e.g. k ~ K ~ KELVIN SIGN, s ~ S ~ LONG S).
    """
    parent: dict[int, int] = {}
    touched: set[int] = set()

    def find(x: int) -> int:
        root = x
        while parent.get(root, root) != root:
            root = parent[root]
        while parent.get(x, x) != root:
            parent[x], x = root, parent[x]
        return root

    for cp in range(_CASED_LIMIT):
        if SURR_LO <= cp <= SURR_HI:
            continue
        ch = chr(cp)
        for m in (ch.lower(), ch.upper(), ch.casefold()):
            if len(m) == 1 and m != ch:
                touched.update((cp, ord(m)))
                a, b = find(cp), find(ord(m))
                if a != b:
                    parent[max(a, b)] = min(a, b)
    classes: dict[int, list[int]] = {}
    for cp in touched:
        classes.setdefault(find(cp), []).append(cp)
    equiv: dict[int, tuple[int, ...]] = {}
    for members in classes.values():
        group = tuple(sorted(set(members)))
        for cp in group:
            equiv[cp] = group
    return sorted(equiv), equiv


def case_closure(ranges: Ranges, ascii_only: bool = False) -> Ranges:
    """Add every case variant of every code point in the set.

    Work is proportional to the number of cased code points inside the ranges (a few thousand at
    most), never to the width of the ranges.
    """
    if ascii_only:
        extra = []
        for lo, hi in ranges:
            for a, b, d in ((0x41, 0x5A, 0x20), (0x61, 0x7A, -0x20)):
                lo2, hi2 = max(lo, a), min(hi, b)
                if lo2 <= hi2:
                    extra.append((lo2 + d, hi2 + d))
        return union(ranges, tuple(extra)) if extra else ranges
    cased, equiv = _case_table()
    extra = []
    for lo, hi in ranges:
        i = bisect.bisect_left(cased, lo)
        j = bisect.bisect_right(cased, hi)
        for cp in cased[i:j]:
            extra.extend((e, e) for e in equiv[cp])
    return union(ranges, tuple(extra)) if extra else ranges


@lru_cache(maxsize=4096)
def case_variants(cp: int, ascii_only: bool = False) -> Ranges:
    return case_closure(((cp, cp),), ascii_only)


@lru_cache(maxsize=None)
def white_space() -> Ranges:
    """Unicode's White_Space (Rust's \\s): what ``str.isspace`` holds but U+001C..U+001F, which
    Python counts as space for their bidirectional class (segment and block separators) while
    White_Space leaves them out. Built from the running Python's Unicode tables."""
    return normalize((cp, cp) for cp in range(0x3001) if chr(cp).isspace() and not 0x1C <= cp <= 0x1F)


@lru_cache(maxsize=None)
def rust_class(letter: str) -> Ranges:
    """Rust's Unicode \\d (Nd), \\s (White_Space) and \\w (Alphabetic, marks, Nd, Pc and the
    joiners: Alphabetic is L, Nl and Other_Alphabetic, whose members outside L, M and Nl are the
    symbols of ``_OTHER_ALPHABETIC_SYMBOLS``), from the running Python's Unicode tables; code
    points assigned after its Unicode version are outside them."""
    if letter == "d":
        return property_ranges("Nd") or ()
    if letter == "s":
        return white_space()
    parts = [property_ranges(c) or () for c in ("L", "M", "Nd", "Nl", "Pc")]
    return union(*parts, ((0x200C, 0x200D),), _OTHER_ALPHABETIC_SYMBOLS)
