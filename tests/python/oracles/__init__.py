"""Brute-force oracles for the token-mask tests (test_mask_oracle.py).

Nothing here uses stencil's engine: the oracles decide, from first principles, whether a byte
string is a viable prefix of a language (some string of the language starts with it) and whether
it is complete (in the language). A token mask is then "try every token": token t is allowed iff
accepted bytes + bytes(t) is viable; EOS iff the accepted bytes are complete.

* UTF-8: the languages are over Unicode code points. A byte string is viable iff it is valid
  UTF-8 except possibly for an incomplete last character, and some completion of that character
  gives a viable code-point string. The completions of a partial character form a code-point
  interval (computed arithmetically, minus surrogates and overlongs); within an interval, all
  code points between two consecutive "boundaries" of the grammar (the ends of every class range
  and every literal character) behave identically, so trying one representative per
  boundary-delimited sub-interval is exact.
* Regexes: the third-party ``regex`` module, ``fullmatch(text, partial=True)``. Patterns are given
  in ECMA-262 syntax for stencil and rewritten for Python (``\\d`` -> ``[0-9]``, ``.`` ->
  ``[^\\n\\r\\u2028\\u2029]``, named groups, lazy quantifiers made greedy: same language, and
  the ``regex`` module's partial matching gets lazy ones wrong, e.g.
  ``regex.fullmatch("a??9", "az", partial=True)`` matches); ``\\s`` is refused (Unicode white
  space differs between the two). Random regexes (``random_regex``) come as an AST that renders
  both spellings, samples strings of the language, and converts to a CFG (``regex_to_cfg``) so
  that the Earley oracle gives a second, independent verdict. Nested unbounded repetition is
  kept out of random regexes (the ``regex`` module backtracks exponentially on it).
* Context-free grammars: a tiny description (``CFG`` with the lexemes ``Lit``, ``Cls``, ``Plus``,
  ``StarCls`` (nullable), ``Delim`` (greedy or lazy), ``Word`` (re_and/re_not: a class run minus
  keywords), ``RegexLex`` (a random regex between delimiters), ``Special``, ``Ref`` and the
  composite ``Opt/Star/Many/Rep/Seq/Choice``) that is built once with ``stencil.GrammarBuilder``
  and, independently, desugared into a character-level CFG recognized by a Python Earley parser.
  Each lexeme becomes a character-level rule; ignored white space becomes ``W -> eps | W ws``
  after every lexeme and at the start. stencil lexes greedily; the oracle does NOT model greedy
  lexing. Instead ``greedy_safe`` checks that greedy lexing cannot change the language: whenever
  a complete lexeme string u could be extended by a character c (uc a prefix of some lexeme), c
  must not start any lexeme that can follow (FOLLOW sets at the lexeme level) nor be ignored
  white space; a lazy lexeme must have no such extension at all; and ignored white space must not
  start any lexeme. Under that condition the greedy lexer cuts exactly where every
  character-level parse cuts, so both define the same language and the same viable prefixes.
  Every test grammar (hand-written or random) is checked with it.
* Masks over a vocabulary are computed either token by token (``regex_mask_direct``,
  ``mask_direct_states``) or by walking the
  tokens in sorted byte order and reusing the oracle state of the shared prefix
  (``mask_prefix_walk``); the latter skips a token only when one of its prefixes is not viable,
  which is sound because viable prefixes are closed under taking prefixes. Tokens with empty
  bytes (padding ids) are never allowed (they cannot make progress).
"""
from .text import *  # noqa: F401,F403
from .regex_language import *  # noqa: F401,F403
from .cfg import *  # noqa: F401,F403
from .earley import *  # noqa: F401,F403
