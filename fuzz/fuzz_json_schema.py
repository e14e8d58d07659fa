"""atheris target: compile_json_schema on arbitrary JSON text (schemas from ../shared as seeds), then a random walk of its matcher."""
from common import COMPILER, compile_and_walk, fuzz


def test_one_input(data: bytes) -> None:
    compile_and_walk(lambda text, seed: COMPILER.compile_json_schema(text, property_order="any" if seed & 1 else "definition"), data)


if __name__ == "__main__":
    fuzz(test_one_input)
