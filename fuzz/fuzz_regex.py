"""atheris target: compile_regex on arbitrary text, then a random walk of its matcher."""
from common import COMPILER, compile_and_walk, fuzz


def test_one_input(data: bytes) -> None:
    compile_and_walk(lambda text, seed: COMPILER.compile_regex(text), data)


if __name__ == "__main__":
    fuzz(test_one_input)
