"""atheris target: the Matcher API driven by the fuzzer's bytes (tokens in and out of range,
rollbacks, forks, resets, drafts, batch fills with wrong arguments) over a few grammars. Misuse
must raise a documented error; the state must stay consistent."""
import atheris
import numpy as np

import stencil
from common import COMPILER, EXPECTED, TOKENIZER, fuzz

GRAMMARS = [
    COMPILER.compile_json_schema({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer"}},
                                                                   "b": {"type": "string", "maxLength": 5}}}),
    COMPILER.compile_regex(r"(ab|c[a-z]{0,3})+\d?"),
    COMPILER.compile_lark('start: "x" y* "z"\ny: "a" | "b" y\n'),
    COMPILER.compile_json(),
]


def test_one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    m = stencil.Matcher(GRAMMARS[fdp.ConsumeIntInRange(0, len(GRAMMARS) - 1)], max_rollback=fdp.ConsumeIntInRange(-1, 8))
    others = [m]
    V = TOKENIZER.vocab_size
    bm = stencil.allocate_token_bitmask(2, V)
    for _ in range(fdp.ConsumeIntInRange(0, 60)):
        op = fdp.ConsumeIntInRange(0, 9)
        try:
            before = m.num_accepted_tokens
            if op <= 3:
                ok = m.accept_token(fdp.ConsumeIntInRange(-2, V + 2))
                assert m.num_accepted_tokens == before + (1 if ok else 0)
            elif op == 4:
                m.rollback(fdp.ConsumeIntInRange(-1, 10))
            elif op == 5:
                m.fill_next_token_bitmask(bm, fdp.ConsumeIntInRange(-1, 2))
            elif op == 6:
                n = m.validate_tokens([fdp.ConsumeIntInRange(-1, V) for _ in range(fdp.ConsumeIntInRange(0, 5))])
                assert m.num_accepted_tokens == before and n >= 0
            elif op == 7:
                others.append(m.fork())
                m = others[fdp.ConsumeIntInRange(0, len(others) - 1)]
            elif op == 8:
                batch = [others[fdp.ConsumeIntInRange(0, len(others) - 1)] for _ in range(fdp.ConsumeIntInRange(0, 3))]
                if fdp.ConsumeBool():
                    batch.append(None)
                arr = bm if fdp.ConsumeBool() else np.zeros((2, (V + 31) // 32), np.int64)
                stencil.fill_next_token_bitmasks(batch, arr)
            else:
                m.forced_tokens() if fdp.ConsumeBool() else m.reset()
        except EXPECTED:
            pass


if __name__ == "__main__":
    fuzz(test_one_input)
