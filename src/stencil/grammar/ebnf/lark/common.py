"""The terminals of Lark's ``common`` library, for ``%import common.NAME``.

Written here as regexes in stencil's dialect, with the same languages as Lark's definitions.
Two are stated differently so that greedy lexing keeps them right: ``C_COMMENT`` (Lark uses a
lazy ``.*?``, which as a language would let a comment run on past its first ``*/``) and the
string terminals (no look-behind: "any character but a quote, backslash or newline, or a
backslash and any character but a newline").

Example::

    COMMON["SIGNED_NUMBER"]   # '[+-]?(?:...)'
"""
from __future__ import annotations

__all__ = ["COMMON"]

_INT = r"[0-9]+"
_DECIMAL = rf"(?:{_INT}\.(?:[0-9]+)?|\.{_INT})"
_EXP = r"[eE][+-]?[0-9]+"
_FLOAT = rf"(?:{_INT}{_EXP}|{_DECIMAL}(?:{_EXP})?)"
_NUMBER = rf"(?:{_FLOAT}|{_INT})"
_STRING_INNER = r'(?:[^"\\\n]|\\[^\n])*'

COMMON: dict[str, str] = {
    "DIGIT": r"[0-9]",
    "HEXDIGIT": r"[a-fA-F0-9]",
    "INT": _INT,
    "SIGNED_INT": rf"[+-]?{_INT}",
    "DECIMAL": _DECIMAL,
    "_EXP": _EXP,
    "FLOAT": _FLOAT,
    "SIGNED_FLOAT": rf"[+-]?{_FLOAT}",
    "NUMBER": _NUMBER,
    "SIGNED_NUMBER": rf"[+-]?{_NUMBER}",
    "_STRING_INNER": r"[^\n]*",
    "_STRING_ESC_INNER": _STRING_INNER,
    "ESCAPED_STRING": rf'"{_STRING_INNER}"',
    "LCASE_LETTER": r"[a-z]",
    "UCASE_LETTER": r"[A-Z]",
    "LETTER": r"[a-zA-Z]",
    "WORD": r"[a-zA-Z]+",
    "CNAME": r"[_a-zA-Z][_a-zA-Z0-9]*",
    "WS_INLINE": r"[ \t]+",
    "WS": r"[ \t\f\r\n]+",
    "CR": r"\r",
    "LF": r"\n",
    "NEWLINE": r"(?:\r?\n)+",
    "SH_COMMENT": r"#[^\n]*",
    "CPP_COMMENT": r"//[^\n]*",
    "C_COMMENT": r"/\*(?:[^*]|\*+[^*/])*\*+/",
    "SQL_COMMENT": r"--[^\n]*",
}
