"""``format`` as regular languages over the decoded string, from the RFCs' grammars.

Supported (asserted, not just annotated: a generation engine enforces them on purpose):
date-time, date, time (RFC 3339, with real month lengths and leap years; a leap second only as
23:59:60 in UTC), duration (RFC 3339 appendix A), email (RFC 5321 dot-atom or quoted local part,
host name or address literal), hostname (RFC 1123 labels, at most 253 characters), ipv4, ipv6
(RFC 3986), uri, uri-reference, iri, iri-reference (RFC 3986/3987), uri-template (RFC 6570),
uuid, json-pointer, relative-json-pointer.

Known formats that are not regular or not implemented (``regex``: a regex's own syntax has
nested groups; ``idn-email``, ``idn-hostname``: IDNA rules) are errors unless the compiler is
lenient. Any other format name is an annotation, as the specification says for unknown formats.

Example::

    node, max_len = format_spec("date")     # an anchor-free regex node over code points
"""
from __future__ import annotations

from functools import lru_cache

from stencil.grammar.json.schema.core.patterns import node_matches, pattern_node
from stencil.grammar.regex.ast import alt

__all__ = ["format_spec", "format_matches", "SUPPORTED_FORMATS", "UNSUPPORTED_FORMATS"]

# --- building blocks (ECMA-262 regex syntax) -----------------------------------------------------
# leap years (RFC 3339 Appendix C): a multiple of 4 not ending 00, or a multiple of 400 (0000 too)
_LEAP = r"(?:\d\d(?:0[48]|[2468][048]|[13579][26])|(?:0[048]|[2468][048]|[13579][26])00)"
_MONTH_DAY = (r"(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\d|30)"
              r"|02-(?:0[1-9]|1\d|2[0-8]))")
_DATE = rf"(?:\d{{4}}-{_MONTH_DAY}|{_LEAP}-02-29)"
_OFFSET = r"(?:[Zz]|[+-](?:[01]\d|2[0-3]):[0-5]\d)"
_TIME = (rf"(?:(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d+)?{_OFFSET}"
         r"|23:59:60(?:\.\d+)?(?:[Zz]|[+-]00:00))")
_DUR_TIME = r"T(?:\d+H(?:\d+M(?:\d+S)?)?|\d+M(?:\d+S)?|\d+S)"
_DURATION = rf"P(?:(?:\d+D|\d+M(?:\d+D)?|\d+Y(?:\d+M(?:\d+D)?)?)(?:{_DUR_TIME})?|{_DUR_TIME}|\d+W)"
_HEX = "[0-9A-Fa-f]"
_UUID = rf"{_HEX}{{8}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{12}}"
_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
_IPV4 = rf"{_OCTET}(?:\.{_OCTET}){{3}}"
_H16 = rf"{_HEX}{{1,4}}"
_LS32 = rf"(?:{_H16}:{_H16}|{_IPV4})"
_IPV6 = ("(?:" + "|".join([
    rf"(?:{_H16}:){{6}}{_LS32}",
    rf"::(?:{_H16}:){{5}}{_LS32}",
    rf"(?:{_H16})?::(?:{_H16}:){{4}}{_LS32}",
    rf"(?:(?:{_H16}:){{0,1}}{_H16})?::(?:{_H16}:){{3}}{_LS32}",
    rf"(?:(?:{_H16}:){{0,2}}{_H16})?::(?:{_H16}:){{2}}{_LS32}",
    rf"(?:(?:{_H16}:){{0,3}}{_H16})?::{_H16}:{_LS32}",
    rf"(?:(?:{_H16}:){{0,4}}{_H16})?::{_LS32}",
    rf"(?:(?:{_H16}:){{0,5}}{_H16})?::{_H16}",
    rf"(?:(?:{_H16}:){{0,6}}{_H16})?::",
]) + ")")
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOSTNAME = rf"{_LABEL}(?:\.{_LABEL})*"
_ATEXT = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]"
_QTEXT = r'(?:[\x20\x21\x23-\x5B\x5D-\x7E]|\\[\x20-\x7E])'
_EMAIL = (rf'(?:{_ATEXT}+(?:\.{_ATEXT}+)*|"{_QTEXT}*")'
          rf"@(?:{_HOSTNAME}|\[{_IPV4}\]|\[IPv6:{_IPV6}\])")

# RFC 3986 / 3987: {U} is the extra unreserved class of IRIs, {P} the private-use class of queries
_PCT = rf"%{_HEX}{_HEX}"
_SUB = r"!$&'()*+,;="


def _uri_parts(u: str, p: str) -> dict:
    unres = rf"A-Za-z0-9\-._~{u}"
    pchar = rf"(?:[{unres}{_SUB}:@]|{_PCT})"
    seg_nz_nc = rf"(?:[{unres}{_SUB}@]|{_PCT})+"
    userinfo = rf"(?:[{unres}{_SUB}:]|{_PCT})*"
    ip_literal = rf"\[(?:{_IPV6}|v{_HEX}+\.[A-Za-z0-9\-._~{_SUB}:]+)\]"
    reg_name = rf"(?:[{unres}{_SUB}]|{_PCT})*"
    authority = rf"(?:{userinfo}@)?(?:{ip_literal}|{reg_name})(?::\d*)?"
    abempty = rf"(?:/{pchar}*)*"
    absolute = rf"/(?:{pchar}+(?:/{pchar}*)*)?"
    rootless = rf"{pchar}+(?:/{pchar}*)*"
    noscheme = rf"{seg_nz_nc}(?:/{pchar}*)*"
    query = rf"(?:\?(?:{pchar}|[/?{p}])*)?"
    fragment = rf"(?:#(?:{pchar}|[/?])*)?"
    scheme = r"[A-Za-z][A-Za-z0-9+\-.]*"
    absolute_uri = rf"{scheme}:(?://{authority}{abempty}|{absolute}|{rootless}|){query}{fragment}"
    relative = rf"(?://{authority}{abempty}|{absolute}|{noscheme}|){query}{fragment}"
    return {"uri": absolute_uri, "relative": relative}


def _cls(*ranges) -> str:
    return "".join(f"{chr(a)}-{chr(b)}" for a, b in ranges)


_UCSCHAR = _cls((0xA0, 0xD7FF), (0xF900, 0xFDCF), (0xFDF0, 0xFFEF)) + "".join(
    _cls((0x10000 * k, 0x10000 * k + 0xFFFD)) for k in range(1, 15)) + _cls((0xE1000, 0xEFFFD))
_IPRIVATE = _cls((0xE000, 0xF8FF), (0xF0000, 0xFFFFD), (0x100000, 0x10FFFD))
_URI = _uri_parts("", "")
_IRI = _uri_parts(_UCSCHAR, _IPRIVATE)

_VARCHAR = rf"(?:[A-Za-z0-9_]|{_PCT})"
_VARSPEC = rf"{_VARCHAR}(?:\.?{_VARCHAR})*(?::[1-9]\d{{0,3}}|\*)?"
_TEMPLATE_LITERAL = (r"(?:[\x21\x23\x24\x26\x28-\x3B\x3D\x3F-\x5B\x5D\x5F\x61-\x7A\x7E"
                     + _UCSCHAR + _IPRIVATE + rf"]|{_PCT})")
_URI_TEMPLATE = rf"(?:{_TEMPLATE_LITERAL}|\{{[+#./;?&=,!@|]?{_VARSPEC}(?:,{_VARSPEC})*\}})*"
_JSON_POINTER = r"(?:/(?:[^~/]|~[01])*)*"
_B64 = "[A-Za-z0-9+/]"
_BASE64 = rf"(?:{_B64}{{4}})*(?:{_B64}{{2}}==|{_B64}{{3}}=)?"
_REL_JSON_POINTER = rf"(?:0|[1-9]\d*)(?:#|{_JSON_POINTER})"

#: format name -> (regex source(s) matched against the whole string, maximum length or None)
_FORMATS = {
    "date-time": (rf"{_DATE}[Tt]{_TIME}", None),
    "date": (_DATE, None),
    "time": (_TIME, None),
    "duration": (_DURATION, None),
    "email": (_EMAIL, None),
    "hostname": (_HOSTNAME, 253),
    "ipv4": (_IPV4, None),
    "ipv6": (_IPV6, None),
    "uri": (_URI["uri"], None),
    "uri-reference": ((_URI["uri"], _URI["relative"]), None),
    "iri": (_IRI["uri"], None),
    "iri-reference": ((_IRI["uri"], _IRI["relative"]), None),
    "uri-template": (_URI_TEMPLATE, None),
    "uuid": (_UUID, None),
    "json-pointer": (_JSON_POINTER, None),
    "relative-json-pointer": (_REL_JSON_POINTER, None),
}
SUPPORTED_FORMATS = frozenset(_FORMATS)
#: contentEncoding: base64 (RFC 4648 section 4, padded), asserted on request; not a format name
_FORMATS["$contentEncoding:base64"] = (_BASE64, None)

#: formats with a definite meaning that this compiler cannot enforce exactly
UNSUPPORTED_FORMATS = {
    "regex": "a regular expression's syntax (nested groups) is not a regular language",
    "idn-email": "internationalized e-mail addresses (IDNA) are not implemented",
    "idn-hostname": "internationalized host names (IDNA) are not implemented",
}


@lru_cache(maxsize=None)
def format_spec(name: str):
    """(anchor-free node, maximum length or None) for a supported format, None for an unknown one
    (an annotation); raises KeyError for a known format that cannot be enforced."""
    if name in UNSUPPORTED_FORMATS:
        raise KeyError(name)
    spec = _FORMATS.get(name)
    if spec is None:
        return None
    sources, max_len = spec
    if isinstance(sources, str):
        return pattern_node(sources, True), max_len
    return alt([pattern_node(x, True) for x in sources], flatten=False), max_len


def format_matches(name: str, text: str) -> bool:
    """Whether ``text`` is valid for a supported format."""
    node, max_len = format_spec(name)
    return (max_len is None or len(text) <= max_len) and node_matches(node, text)
