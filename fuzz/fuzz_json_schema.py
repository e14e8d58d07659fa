"""atheris target: compile_json_schema on arbitrary JSON text (schemas from ../shared as seeds),
then a random walk of its matcher."""
import sys

import atheris

from common import COMPILER, EXPECTED, walk


def test_one_input(data: bytes) -> None:
    seed = data[0] if data else 0
    text = data[1:].decode("utf-8", "replace")
    try:
        compiled = COMPILER.compile_json_schema(text, property_order="any" if seed & 1 else "definition")
    except EXPECTED:
        return
    walk(compiled, seed)


if __name__ == "__main__":
    # stencil's modules come through the editable install's finder, which instrument_imports()
    # does not see: instrument every loaded function instead
    atheris.instrument_all()
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
