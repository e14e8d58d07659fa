"""An incremental, exact reader of a JSON output as it is generated: :class:`PartialTracker`.

It is fed the bytes of each accepted token, once (``feed``), and keeps its state across calls: a
stack of the objects and arrays being written with their live contents, and the scalar being
written (a string's decoded text so far, a number's characters, a literal's letters). A feed costs
time in the new bytes only (runs of string text are taken a slice at a time); ``snapshot()``
copies the objects and arrays still open, one level each, and shares what is finished.

It is exact, not a best-effort repair of broken JSON: under a JSON Schema grammar every prefix the
matcher accepts is a prefix of a valid output, so each byte means one thing, and what is settled
is settled for good. Text that is not a prefix of JSON is a ``ValueError``. What a snapshot holds
is in :class:`~stencil.partial.result.PartialResult`; ``missing_required`` comes from the schema
given (:mod:`stencil.partial.schema`).

Example::

    t = PartialTracker({"type": "object", "required": ["a", "b"]})
    t.feed(b'{"a": 12')
    t.snapshot()            # value {}, open_path ("a",): 12 may go on; missing_required (("b",),)
    t.feed(b', "b": "x\\\\u00')
    t.snapshot().value      # {"a": 12, "b": "x"}: the cut escape is left out
    t.feed(b'e9"}')
    t.finish()
    t.snapshot().value      # {"a": 12, "b": "xé"}, open_path None
"""
from __future__ import annotations

import codecs
import re
from typing import Any, Optional, Union

from stencil.partial.result import PartialResult, Path
from stencil.partial.schema import SchemaView

__all__ = ["PartialTracker"]

_WS = frozenset(" \t\n\r")
_STRING_RUN = re.compile(r'[^"\\]+')
_NUMBER_RUN = re.compile(r"[0-9eE.+\-]+")
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_LITERALS = {"t": ("true", True), "f": ("false", False), "n": ("null", None)}

# what a container expects next
_FIRST = 0   # after "{" or "[": a key (an item) or the end
_NEXT = 1    # after ",": a key (an item)
_KEY = 2     # objects: the key is being written
_COLON = 3   # objects: after the key
_VALUE = 4   # objects: after ":"
_CHILD = 5   # a member's or item's value is being written
_AFTER = 6   # after a value: "," or the end


class _Frame:
    """An object or array being written: its path, its live contents, what comes next, the key of
    its current member (objects) and its schema node (None: unknown)."""
    __slots__ = ("path", "value", "is_object", "state", "key", "schema", "child_schema")

    def __init__(self, path: Path, is_object: bool, schema):
        self.path, self.is_object, self.schema = path, is_object, schema
        self.value: Any = {} if is_object else []
        self.state = _FIRST
        self.key: Any = None            # (a str once the first key is read)
        self.child_schema: Any = None


class _String:
    """A string being written (a value, or an object's key): its decoded text so far, the escape
    being read after its backslash (None: none), a high surrogate waiting for its low half."""
    __slots__ = ("path", "parts", "escape", "high", "is_key")

    def __init__(self, path: Path, is_key: bool):
        self.path, self.is_key = path, is_key
        self.parts: list[str] = []
        self.escape: Optional[str] = None
        self.high: Optional[int] = None

    def text(self) -> str:
        if len(self.parts) > 1:
            self.parts = ["".join(self.parts)]
        return self.parts[0] if self.parts else ""

    def put(self, ch: str) -> None:
        if self.high is not None:   # not followed by its low half: a lone surrogate, as json.loads reads it
            self.parts.append(chr(self.high))
            self.high = None
        self.parts.append(ch)

    def put_code(self, cp: int) -> None:
        if self.high is not None and 0xDC00 <= cp <= 0xDFFF:
            self.parts.append(chr(0x10000 + ((self.high - 0xD800) << 10) + (cp - 0xDC00)))
            self.high = None
        elif 0xD800 <= cp <= 0xDBFF:
            self.put("")
            self.high = cp
        else:
            self.put(chr(cp))


class _Number:
    __slots__ = ("path", "chars")

    def __init__(self, path: Path, first: str):
        self.path, self.chars = path, [first]


class _Literal:
    __slots__ = ("path", "word", "value", "pos")

    def __init__(self, path: Path, first: str):
        self.path = path
        self.word, self.value = _LITERALS[first]
        self.pos = 1


_Scalar = Union[_String, _Number, _Literal]


class PartialTracker:
    """Reads a JSON output as its bytes come and says what is settled (:meth:`snapshot`).

    ``schema`` (a dict, bool or JSON text; ``registry`` for the documents its ``$ref`` names) gives
    ``missing_required``; without it that field stays empty. :meth:`feed` takes the new bytes (or
    text), :meth:`finish` marks the end of the output (a number at the very end is settled only
    then), :meth:`snapshot` returns a :class:`PartialResult`.

    Example::

        t = PartialTracker()
        t.feed(b'[1, "ab')
        t.snapshot()            # PartialResult(value=[1, 'ab'], complete_paths=((0,),), open_path=(1,), ...)
    """

    def __init__(self, schema: Any = None, *, registry: Optional[dict] = None):
        self._view = None if schema is None else SchemaView(schema, registry)
        self._decoder = codecs.getincrementaldecoder("utf-8")()
        self._stack: list[_Frame] = []
        self._scalar: Optional[_Scalar] = None
        self._started = False          # the root value has started
        self._done = False             # the root value is complete
        self._root: Any = None         # the root value once complete
        self._complete: list[Path] = []
        self._complete_tuple: tuple[Path, ...] = ()

    @property
    def done(self) -> bool:
        """Whether the whole value is complete."""
        return self._done

    # -- input ---------------------------------------------------------------------------------
    def feed(self, data: Union[bytes, str]) -> None:
        """Read the output's next bytes (or text). A UTF-8 character cut between two calls is read
        when its last byte comes. ValueError where the text cannot continue a JSON value."""
        if isinstance(data, str):
            data = data.encode("utf-8", "surrogatepass")
        try:
            text = self._decoder.decode(data)
        except UnicodeDecodeError as e:
            raise ValueError(f"the output is not UTF-8: {e}") from None
        i, n = 0, len(text)
        while i < n:
            s = self._scalar
            if s is not None:
                i = self._scan_scalar(s, text, i)
            elif text[i] in _WS:
                i += 1
            else:
                self._punctuation(text[i])
                i += 1

    def finish(self) -> None:
        """The output has ended: a number at its very end is complete. ValueError if the value is not."""
        try:
            self._decoder.decode(b"", final=True)
        except UnicodeDecodeError as e:
            raise ValueError(f"the output ends inside a UTF-8 character: {e}") from None
        if isinstance(self._scalar, _Number):
            self._end_number(self._scalar)
        if not self._done:
            raise ValueError("the output ended before its JSON value was complete")

    # -- structure -----------------------------------------------------------------------------
    def _punctuation(self, c: str) -> None:
        if not self._stack:
            if self._started:
                raise ValueError(f"unexpected {c!r} after the JSON value")
            self._started = True
            return self._start_value(c, (), None if self._view is None else self._view.root)
        top = self._stack[-1]
        st = top.state
        if c == "," and st == _AFTER:
            top.state = _NEXT
        elif c == ("}" if top.is_object else "]") and st in (_FIRST, _AFTER):
            self._close()
        elif top.is_object:
            if c == '"' and st in (_FIRST, _NEXT):
                top.state = _KEY
                self._scalar = _String(top.path, True)
            elif c == ":" and st == _COLON:
                top.state = _VALUE
            elif st == _VALUE:
                self._start_value(c, top.path + (top.key,), top.child_schema)
            else:
                raise ValueError(f"unexpected {c!r} in the object at {list(top.path)}")
        elif st in (_FIRST, _NEXT):
            schema = None if self._view is None else self._view.child(top.schema, len(top.value))
            self._start_value(c, top.path + (len(top.value),), schema)
        else:
            raise ValueError(f"unexpected {c!r} in the array at {list(top.path)}")

    def _start_value(self, c: str, path: Path, schema) -> None:
        if self._stack:
            self._stack[-1].state = _CHILD
        if c == "{" or c == "[":
            frame = _Frame(path, c == "{", schema)
            self._attach(frame.value)
            self._stack.append(frame)
        elif c == '"':
            self._scalar = _String(path, False)
        elif c == "-" or "0" <= c <= "9":
            self._scalar = _Number(path, c)
        elif c in _LITERALS:
            self._scalar = _Literal(path, c)
        else:
            raise ValueError(f"unexpected {c!r} where a JSON value starts (at {list(path)})")

    def _attach(self, value: Any) -> None:
        """Put a value that has started (a container) or ended (a scalar) into its parent."""
        if not self._stack:
            self._root = value
            return
        top = self._stack[-1]
        if top.is_object:
            top.value[top.key] = value
        else:
            top.value.append(value)

    def _completed(self, path: Path) -> None:
        self._complete.append(path)
        if self._stack:
            self._stack[-1].state = _AFTER
        else:
            self._done = True

    def _close(self) -> None:
        frame = self._stack.pop()
        self._completed(frame.path)

    # -- scalars -------------------------------------------------------------------------------
    def _scan_scalar(self, s: _Scalar, text: str, i: int) -> int:
        """Read ``s`` from ``text[i:]``; the index after what it took."""
        if isinstance(s, _String):
            return self._scan_string(s, text, i)
        if isinstance(s, _Number):
            m = _NUMBER_RUN.match(text, i)
            if m is not None:
                s.chars.append(m.group())
                i = m.end()
            if i < len(text):   # the character after the number ends it (read again by the caller)
                self._end_number(s)
            return i
        take = text[i:i + len(s.word) - s.pos]
        if not s.word.startswith(take, s.pos):
            raise ValueError(f"{s.word[:s.pos] + take!r} is not {s.word!r} (at {list(s.path)})")
        s.pos += len(take)
        if s.pos == len(s.word):
            self._end_scalar(s.value, s.path)
        return i + len(take)

    def _scan_string(self, s: _String, text: str, i: int) -> int:
        n = len(text)
        while i < n:
            if s.escape is not None:
                i = self._scan_escape(s, text, i)
                continue
            c = text[i]
            if c == '"':
                s.put("")
                self._end_string(s)
                return i + 1
            if c == "\\":
                s.escape = ""
                i += 1
                continue
            m = _STRING_RUN.match(text, i)
            assert m is not None
            s.put(m.group())
            i = m.end()
        return i

    def _scan_escape(self, s: _String, text: str, i: int) -> int:
        if s.escape == "":
            c = text[i]
            if c == "u":
                s.escape = "u"
            elif c in _ESCAPES:
                s.escape = None
                s.put(_ESCAPES[c])
            else:
                raise ValueError(f"bad escape \\{c} in the string at {list(s.path)}")
            return i + 1
        assert s.escape is not None
        take = text[i:i + 5 - len(s.escape)]
        s.escape += take
        if len(s.escape) == 5:
            try:
                cp = int(s.escape[1:], 16)
            except ValueError:
                raise ValueError(f"bad escape \\{s.escape} in the string at {list(s.path)}") from None
            s.escape = None
            s.put_code(cp)
        return i + len(take)

    def _end_string(self, s: _String) -> None:
        self._scalar = None
        if not s.is_key:
            return self._end_scalar(s.text(), s.path)
        top = self._stack[-1]
        top.key, top.state = s.text(), _COLON
        top.child_schema = None if self._view is None else self._view.child(top.schema, top.key)

    def _end_number(self, s: _Number) -> None:
        t = "".join(s.chars)
        try:
            v: Any = float(t) if any(c in t for c in ".eE") else int(t)
        except ValueError:
            raise ValueError(f"{t!r} is not a JSON number (at {list(s.path)})") from None
        self._end_scalar(v, s.path)

    def _end_scalar(self, value: Any, path: Path) -> None:
        self._scalar = None
        self._attach(value)
        self._completed(path)

    # -- snapshots -----------------------------------------------------------------------------
    def snapshot(self) -> PartialResult:
        """What is settled now (see :class:`PartialResult`)."""
        if len(self._complete_tuple) != len(self._complete):
            self._complete_tuple = tuple(self._complete)
        return PartialResult(self._value(), self._complete_tuple, self._open_path(), self._missing())

    def _value(self) -> Any:
        if self._done:
            return self._root
        s = self._scalar
        has, child = False, None
        if isinstance(s, _String) and not s.is_key:   # the open string: not in its parent yet
            has, child = True, s.text()
        inner = True
        for f in reversed(self._stack):
            copy: Any = dict(f.value) if f.is_object else list(f.value)
            if has and f.is_object:
                copy[f.key] = child
            elif has:
                if inner:
                    copy.append(child)
                else:
                    copy[-1] = child
            child, has, inner = copy, True, False
        return child

    def _open_path(self) -> Optional[Path]:
        if self._done:
            return None
        s = self._scalar
        if s is not None and not (isinstance(s, _String) and s.is_key):
            return s.path
        if not self._stack:
            return ()
        top = self._stack[-1]
        if top.is_object and top.state in (_COLON, _VALUE):
            return top.path + (top.key,)
        if not top.is_object and top.state == _NEXT:
            return top.path + (len(top.value),)
        return top.path

    def _missing(self) -> tuple[Path, ...]:
        view = self._view
        if view is None or self._done:
            return ()
        out: list[Path] = []
        if not self._started and view.certainly_object(view.root):
            out += _paths((), view.requirements(view.root), lambda _k: False, lambda _k: False)
        for f in self._stack:
            if f.is_object and f.schema is not None:
                def started(k, f=f):
                    return k in f.value or (k == f.key and f.state in (_COLON, _VALUE, _CHILD))

                def waiting(k, f=f):   # the key is written, its value has not started
                    return k == f.key and f.state in (_COLON, _VALUE)
                out += _paths(f.path, view.requirements(f.schema), started, waiting)
        return tuple(out)


def _paths(at: Path, requirements: tuple, started, waiting) -> list[Path]:
    """The missing paths of an object at ``at``: each required key not started, with what its
    object must hold; only what its object must hold where the key is written but not its value."""
    out: list[Path] = []
    for key, below in requirements:
        if not started(key):
            out.append(at + (key,))
        elif not waiting(key):
            continue
        out += [at + (key,) + q for q in below]
    return out
