"""atheris target: compile_gbnf on arbitrary text, then a random walk of its matcher."""
import sys

import atheris

from common import COMPILER, EXPECTED, walk


def test_one_input(data: bytes) -> None:
    seed = data[0] if data else 0
    try:
        compiled = COMPILER.compile_gbnf(data[1:].decode("utf-8", "replace"), unused="ignore")
    except EXPECTED:
        return
    walk(compiled, seed)


if __name__ == "__main__":
    # stencil's modules come through the editable install's finder, which instrument_imports()
    # does not see: instrument every loaded function instead
    atheris.instrument_all()
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
