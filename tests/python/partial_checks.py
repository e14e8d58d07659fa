"""Checks of partial results against the final value (issue 45): every snapshot of a generation must
say nothing the final value contradicts. Shared by the tests of ``stencil.partial``.

``contradictions(snaps, final)`` lists each way a sequence of snapshots (one per accepted token)
disagrees with the final JSON value:

- ``value``: every object holds only keys of the final object, with consistent values; an array is
  no longer than the final one; the open string is a prefix of the final string; any other scalar
  and every string off the open path equals the final one;
- ``complete_paths``: each path's value equals the final value's there, and each snapshot's list
  starts with the one before (settled paths never change, and stay settled);
- ``open_path``: it is a place of the final value (the value being written is there);
- ``missing_required``: each path is in the final value and not started in the snapshot's value;
  a path that left the list never comes back, and a path that joins it lies under a value that
  started since the snapshot before (an optional object or an array item that opened).
"""
from __future__ import annotations

_ABSENT = object()


def at(value, path):
    """The value at ``path``, or _ABSENT."""
    for k in path:
        if isinstance(value, dict) and isinstance(k, str) and k in value:
            value = value[k]
        elif isinstance(value, list) and isinstance(k, int) and 0 <= k < len(value):
            value = value[k]
        else:
            return _ABSENT
    return value


def _value_problems(part, final, path, open_path, out):
    if isinstance(part, dict):
        if not isinstance(final, dict):
            out.append(f"{list(path)}: an object, final {final!r}")
            return
        for k, v in part.items():
            if k not in final:
                out.append(f"{list(path)}: key {k!r} not in the final object")
            else:
                _value_problems(v, final[k], path + (k,), open_path, out)
    elif isinstance(part, list):
        if not isinstance(final, list) or len(part) > len(final):
            out.append(f"{list(path)}: {len(part)} items, final {final!r}")
            return
        for i, v in enumerate(part):
            _value_problems(v, final[i], path + (i,), open_path, out)
    elif isinstance(part, str) and path == open_path:
        if not (isinstance(final, str) and final.startswith(part)):
            out.append(f"{list(path)}: open string {part!r} is no prefix of {final!r}")
    elif type(part) is not type(final) or part != final:
        out.append(f"{list(path)}: {part!r}, final {final!r}")


def snapshot_problems(snap, final) -> list[str]:
    """How one snapshot contradicts the final value."""
    out: list[str] = []
    if snap.value is not None or () in snap.complete_paths:
        _value_problems(snap.value, final, (), snap.open_path, out)
    for p in snap.complete_paths:
        got, want = at(snap.value, p), at(final, p)
        if got is _ABSENT or want is _ABSENT or type(got) is not type(want) or got != want:
            out.append(f"complete {list(p)}: {got!r}, final {want!r}")
    if snap.open_path is not None and at(final, snap.open_path) is _ABSENT:
        out.append(f"open path {list(snap.open_path)} not in the final value")
    for p in snap.missing_required:
        if at(final, p) is _ABSENT:
            out.append(f"missing required {list(p)} never came")
        if at(snap.value, p) is not _ABSENT:
            out.append(f"missing required {list(p)} is already in the value")
    return out


def step_problems(before, after) -> list[str]:
    """How two consecutive snapshots contradict each other."""
    out: list[str] = []
    n = len(before.complete_paths)
    if after.complete_paths[:n] != before.complete_paths:
        out.append("complete_paths did not keep the earlier ones")
    old, new = set(before.missing_required), set(after.missing_required)
    for p in new - old:
        # (a path that left never returns: once started, a key stays in the value)
        if not any(at(before.value, p[:k]) is _ABSENT and at(after.value, p[:k]) is not _ABSENT
                   for k in range(1, len(p))):
            out.append(f"missing required {list(p)} joined, under no value that started")
    return out


def contradictions(snaps, final) -> list[str]:
    """Every problem of a generation's snapshots against its final value, tagged with the step."""
    out: list[str] = []
    for i, s in enumerate(snaps):
        out += [f"step {i}: {m}" for m in snapshot_problems(s, final)]
        if i:
            out += [f"step {i}: {m}" for m in step_problems(snaps[i - 1], s)]
    return out
