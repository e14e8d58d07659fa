"""The generic-JSON grammar written in the IR, checked token by token with the DeepSeek tokenizer on
every instance of the MaskBench sample in tests/data (or of the folder STENCIL_MASKBENCH names, see
data_paths.py), and on malformed JSON texts made by mutating those instances (a malformed text must
be rejected at some token or not be accepting at the end)."""
from __future__ import annotations

import glob
import json
import os
import random

import pytest

import stencil
from data_paths import MASKBENCH, ON_SAMPLE
from stencil.grammar.json.value import json_value
from tokenizers_zoo import get

# On the sample (187 texts) every mask is checked and each text is mutated more often, so that
# the malformed texts are as many as from a full set's 3,000 texts.
MASK_EVERY, MIN_TEXTS, MUTATIONS = (1, 150, 48) if ON_SAMPLE else (16, 5000, 3)


def _instances():
    files = sorted(glob.glob(os.path.join(MASKBENCH, "*.json")))
    assert files, f"no MaskBench file in {MASKBENCH}"
    out = []
    for f in files:
        with open(f, encoding="utf-8") as fh:
            doc = json.load(fh)
        for t in doc["tests"]:
            text = json.dumps(t["data"], indent=None, ensure_ascii=False)
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:  # lone surrogates: not representable as UTF-8 output
                continue
            out.append((os.path.basename(f), text))
    return out


@pytest.fixture(scope="module")
def setup():
    entry = get("deepseek")
    b = stencil.GrammarBuilder()
    compiled = stencil.GrammarCompiler(entry.info).compile_grammar(b.build(json_value(b)))
    texts = sorted(set(t for _, t in _instances()))
    return entry, compiled, texts


def _strict_json(text: str) -> bool:
    def no_constants(name):
        raise ValueError(name)
    try:
        json.loads(text, parse_constant=no_constants)
    except (ValueError, RecursionError):
        return False
    return True


def test_every_maskbench_instance_is_accepted_token_by_token(setup):
    entry, compiled, texts = setup
    m = stencil.Matcher(compiled)
    bm = stencil.allocate_token_bitmask(1, entry.info.vocab_size)
    encoded = entry.hf.encode_batch(texts, add_special_tokens=False)
    failures = []
    for n, (text, enc) in enumerate(zip(texts, encoded)):
        m.reset()
        check_mask = n % MASK_EVERY == 0  # the mask (trie walk) on a sample; accept_token on all
        for t in enc.ids:
            if check_mask:
                m.fill_next_token_bitmask(bm, 0)
                if not (int(bm[0, t >> 5]) >> (t & 31)) & 1:
                    failures.append((text[:80], "masked", t))
                    break
            if not m.accept_token(t):
                failures.append((text[:80], "rejected", t))
                break
        else:
            if not m.is_accepting():
                failures.append((text[:80], "not accepting at end", None))
    assert len(texts) > MIN_TEXTS
    assert failures == []


def test_malformed_json_is_rejected(setup):
    entry, compiled, texts = setup
    rng = random.Random(7)
    m = stencil.Matcher(compiled)
    junk = list('{}[],:"\\ 0123456789.eE+-tfnaxé\u4e2d\x01\n')
    malformed = []
    for text in rng.sample(texts, min(3000, len(texts))):
        for _ in range(MUTATIONS):
            s = list(text)
            op = rng.randrange(3)
            i = rng.randrange(len(s) + (op == 1))
            if op == 0 and s:
                del s[min(i, len(s) - 1)]
            elif op == 1:
                s.insert(i, rng.choice(junk))
            elif s:
                s[min(i, len(s) - 1)] = rng.choice(junk)
            cand = "".join(s)
            if cand.strip() and not _strict_json(cand):
                malformed.append(cand)
    malformed += ['{"a" 1}', '[1,]', '{"a":1,}', '01', '1.', '.5', '"\\x"', '[1 2]', '{,}', 'nul', 'True',
                  '"a\nb"', '{"a":}', '[', ']', '"', '-', '1e', '{"a":1}}', '[]]', '"\\u12g4"']
    assert len(malformed) > 2000
    accepted = []
    for text in malformed:
        m.reset()
        ids = entry.hf.encode(text, add_special_tokens=False).ids
        if m.accept_tokens(ids) == len(ids) and m.is_accepting():
            accepted.append(text)
    assert accepted == []


def test_strict_json_oracle_agrees_on_valid_texts(setup):
    # The mutation test relies on json.loads as the judge of validity: check that it accepts what
    # the grammar accepts on a sample, so a disagreement cannot hide there.
    entry, compiled, texts = setup
    assert all(_strict_json(t) for t in texts[:2000])
