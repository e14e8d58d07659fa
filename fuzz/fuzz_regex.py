"""atheris target: compile_regex on arbitrary text, then a random walk of its matcher."""
import sys

import atheris

from common import COMPILER, EXPECTED, walk


def test_one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    seed = fdp.ConsumeIntInRange(0, 1 << 16)
    pattern = fdp.ConsumeUnicodeNoSurrogates(400)
    try:
        compiled = COMPILER.compile_regex(pattern)
    except EXPECTED:
        return
    walk(compiled, seed)


if __name__ == "__main__":
    # stencil's modules come through the editable install's finder, which instrument_imports()
    # does not see: instrument every loaded function instead
    atheris.instrument_all()
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
