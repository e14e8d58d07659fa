"""Token healing (``stencil.runtime.healing``, ``generate(heal=True)``): the plan (which prompt tokens are
removed) and the first token's mask, each against a brute force over the whole vocabulary, with
the five tokenizer families (byte-level BPE, two tiktoken files, SentencePiece, GGUF); budgeted
random walks that must end valid; the default model, greedy, where healing changes the output."""
from __future__ import annotations

import re

import numpy as np
import pytest

import stencil
from stencil.kernels.numpy import bitmask_to_bool
from stencil.runtime.healing import MAX_HEAL_BYTES, MAX_HEAL_TOKENS, Healer, PrefixIndex, plan_healing, start_healing
from tokenizers_zoo import get

FAMILIES = ("deepseek", "qwen", "cl100k", "mistral-sp-v3", "smollm2-gguf")

#: raw prompts cut inside what would be one token: URLs, numbers, words, a trailing space
PROMPTS = {
    "url": 'The link: {"url": "https:',
    "url-www": "Visit https://www.wikip",
    "number": "The total is 12",
    "number-long": "It happened in 19",
    "word": "The theory of relativity is due to Albert Einst",
    "word-short": 'print("Hello, wor',
    "space": "The answer is ",
}

#: for the masks: a regex for what follows the prompt, and Python's regex for the prefixes of its
#: language (the oracle: a token that runs past the healed text must leave a prefix of it)
GRAMMARS = {
    "url": (r"//[a-z0-9./-]*", r"|/|//[a-z0-9./-]*"),
    "url-www": (r"[a-z]*\.org/", r"[a-z]*(\.(o(rg?)?)?)?|[a-z]*\.org/"),
    "number": (r"[0-9]* [a-z]+", r"[0-9]*( [a-z]*)?"),
    "word": (r"[a-z]*[.!]", r"[a-z]*[.!]?"),
    "word-short": (r'[a-z]*!"\)', r'[a-z]*(!("\)?)?)?'),
    "space": (r"[0-9]+", r"[0-9]*"),
}


@pytest.fixture(scope="module", params=FAMILIES)
def family(request):
    entry = get(request.param)
    info = entry.info
    vocab = [b"" if info.is_special(i) else info.token_bytes(i) for i in range(info.num_tokens)]
    return entry, vocab


def encode(entry, text: str) -> list[int]:
    return list(entry.encode_batch([text])[0])


def brute_plan(info, vocab: list[bytes], ids: list[int]) -> int:
    """How many tokens healing must remove, by scanning the vocabulary for each suffix."""
    text, best = b"", 0
    for k in range(1, min(MAX_HEAL_TOKENS, len(ids) - 1) + 1):
        if info.is_special(ids[-k]):
            break
        text = info.token_bytes(ids[-k]) + text
        if len(text) > MAX_HEAL_BYTES:
            break
        if text and not 0x80 <= text[0] < 0xC0 and any(len(b) > len(text) and b.startswith(text) for b in vocab):
            best = k
    return best


def brute_allowed(vocab: list[bytes], rest: bytes, prefix_re: str | None = None) -> set[int]:
    """Every token whose bytes are a prefix of ``rest`` or run past it, the part past it a prefix
    of the grammar's language (``prefix_re``, None: free)."""
    out = set()
    for i, b in enumerate(vocab):
        if not b:
            continue
        if rest.startswith(b):
            out.add(i)
        elif len(b) > len(rest) and b.startswith(rest):
            tail = b[len(rest):]
            if prefix_re is None or re.fullmatch(prefix_re.encode(), tail):
                out.add(i)
    return out


def allowed_ids(healer: Healer, vocab_size: int, remaining: int | None = None) -> set[int]:
    bm = stencil.allocate_token_bitmask(1, vocab_size)
    healer.fill(bm, 0, remaining)
    return set(np.flatnonzero(bitmask_to_bool(bm, vocab_size)[0]).tolist())


def test_plans_match_the_brute_force(family):
    """The tokens removed are the longest run (3 tokens, 16 bytes) whose text some longer token
    extends; URLs and words cut mid-way heal in every family, and the first token may then be
    one the prompt's tokenization could not have (``://`` after ``https:``)."""
    entry, vocab = family
    info = entry.info
    for name, text in PROMPTS.items():
        ids = encode(entry, text)
        plan = plan_healing(info, ids)
        k = brute_plan(info, vocab, ids)
        assert len(plan.removed_ids) == k, (entry.name, name, [info.token_bytes(t) for t in ids[-4:]])
        assert plan.prompt_ids + plan.removed_ids == ids
        assert plan.prefix == info.decode_bytes(ids[len(ids) - k:])
        if name.startswith(("url", "word")) or name == "space":
            assert plan.healed, (entry.name, name)
        if plan.healed:   # healing changes the first token: a longer one than the prompt's is allowed
            longer = [b for b in vocab if len(b) > len(plan.prefix) and b.startswith(plan.prefix)]
            assert longer
    url = plan_healing(info, encode(entry, PROMPTS["url"]))
    assert any(b.startswith(url.prefix + b"//") for b in vocab), entry.name


def test_free_masks_match_the_brute_force(family):
    """Without a grammar the first token is any token that is a prefix of the healed text or runs
    past it, and at each later step the same over what is left; never EOS, never a special."""
    entry, vocab = family
    info = entry.info
    for name, text in PROMPTS.items():
        plan = plan_healing(info, encode(entry, text))
        if not plan.healed:
            continue
        healer = Healer(info, plan.prefix)
        for t in plan.removed_ids:   # each step of the prompt's own tokenization
            got = allowed_ids(healer, info.vocab_size)
            assert got == brute_allowed(vocab, healer.rest), (entry.name, name, healer.rest)
            assert t in got and not got & set(info.eos_token_ids)
            assert healer.accept_token(t)
        assert healer.done


def test_grammar_masks_match_the_brute_force(family):
    """With a grammar, a token that runs past the healed text is allowed exactly when its remainder
    is a prefix of the grammar's language; the healed text's own tokens always are."""
    entry, vocab = family
    info = entry.info
    compiler = stencil.GrammarCompiler(info)
    checked = 0
    for name, (regex, prefix_re) in GRAMMARS.items():
        plan = plan_healing(info, encode(entry, PROMPTS[name]))
        if not plan.healed:
            continue
        healer = Healer(info, plan.prefix, stencil.Matcher(compiler.compile_regex(regex)))
        got = allowed_ids(healer, info.vocab_size)
        want = brute_allowed(vocab, plan.prefix, prefix_re)
        assert got == want, (entry.name, name, sorted(vocab[i] for i in got ^ want)[:10])
        assert plan.removed_ids[0] in got
        checked += 1
    assert checked >= 4


def test_a_crossing_token_hands_its_remainder_to_the_grammar(family):
    """After ``://`` (healed text ``:``) the grammar has seen ``//``: a refused remainder leaves the
    healer and the matcher as they were."""
    entry, vocab = family
    info = entry.info
    plan = plan_healing(info, encode(entry, PROMPTS["url"]))
    g = stencil.GrammarCompiler(info).compile_regex(GRAMMARS["url"][0])
    wrong = next(i for i, b in enumerate(vocab) if b.startswith(plan.prefix + b":"))
    right = next(i for i, b in enumerate(vocab) if b.startswith(plan.prefix + b"//"))
    m = stencil.Matcher(g)
    healer = Healer(info, plan.prefix, m)
    assert not healer.accept_token(wrong) and healer.rest == plan.prefix
    assert healer.accept_token(right) and healer.done
    after = vocab[right][len(plan.prefix):]
    assert m.accept_bytes(b"example.org") and m.is_accepting()
    check = stencil.Matcher(g)
    assert check.accept_bytes(after + b"example.org") and check.is_accepting()


@pytest.mark.parametrize("name", ["url", "word", "space"])
def test_budgeted_random_walks_end_valid(name):
    """With the budget exactly the removed tokens plus the grammar's shortest output, random walks
    under the healing masks then the grammar's budgeted masks always end complete, the output
    starting with the healed text."""
    entry = get("smollm2-gguf")
    info = entry.info
    regex = GRAMMARS[name][0]
    g = stencil.GrammarCompiler(info).compile_regex(regex)
    ids = encode(entry, PROMPTS[name])
    rng = np.random.default_rng(0)
    bm = stencil.allocate_token_bitmask(1, info.vocab_size)
    for _ in range(20):
        m = stencil.Matcher(g)
        limit = len(plan_healing(info, ids).removed_ids) + (m.min_completion_tokens() or 0)
        plan, healer = start_healing(info, ids, m, limit)
        assert healer is not None
        out: list[int] = []
        while len(out) < limit:
            if healer.done:
                m.fill_next_token_bitmask(bm, 0, limit - len(out))
            else:
                healer.fill(bm, 0, limit - len(out))
            allowed = np.flatnonzero(bitmask_to_bool(bm, info.vocab_size)[0])
            allowed = [t for t in allowed.tolist() if t not in info.eos_token_ids]
            if not allowed:
                break
            t = int(rng.choice(allowed))
            assert healer.accept_token(t) if not healer.done else m.accept_token(t)
            out.append(t)
        raw = info.decode_bytes(out)
        assert healer.done and raw.startswith(plan.prefix) and m.is_accepting(), raw
        assert re.fullmatch(regex.encode(), raw[len(plan.prefix):])


def test_index_is_built_once_per_tokenizer():
    info = get("cl100k").info
    assert PrefixIndex.of(info) is PrefixIndex.of(info)
    idx = PrefixIndex.of(info)
    assert idx.spell_cost(b"https:") is not None and idx.spell_cost(b"https:") <= 2
    assert not idx.extends(b"https://www.wikipedia.org/wiki/xyz")


def test_nothing_to_heal():
    """A prompt whose last token no longer token extends, a one-token prompt and a prompt ending
    with a special token are left as they are."""
    tok = stencil.TokenizerInfo.from_vocab([b"a", b"b", b"ab", b"c", b"</s>"], eos_token_ids=[4])
    assert plan_healing(tok, [0, 3]) == plan_healing(tok, [0, 3], max_tokens=0)
    assert not plan_healing(tok, [0, 3]).healed
    assert not plan_healing(tok, [0]).healed
    assert not plan_healing(tok, [0, 4]).healed
    assert plan_healing(tok, [3, 0]).removed_ids == [0]
    assert plan_healing(tok, [3, 0]).prefix == b"a"


# ------------------------------------------------------------------------------ the real model

#: (raw prompt, regex after it or None): greedy SmolLM2 writes something else once healed
MODEL_CASES = (
    ('person = {"name": "Marie Cu', r'[A-Za-z ]+", "born": [0-9]{4}\}'),
    ("Links:\n- GitHub: https://github.com/\n- Google: https:", r"//[a-z./]+\n"),
    ("The theory of relativity was developed by Albert Einst", None),
    ('print("Hello, wor', None),
    ('{"name": "Example Domain", "url": "https:', None),
)


@pytest.fixture(scope="module")
def model(lm):
    import torch
    torch.set_num_threads(1)
    return lm


@pytest.mark.parametrize("prompt,regex", MODEL_CASES)
def test_healing_changes_greedy_output(model, prompt, regex):
    """Greedy, with and without healing: the outputs differ, the healed one starts with the removed
    text (``healed_prefix``, left out of ``text``), and both are valid under the grammar."""
    compiler = stencil.GrammarCompiler(model.tokenizer_info)
    grammar = compiler.compile_regex(regex) if regex else None
    ids = model.encode_prompt(prompt, chat=False)
    plain = stencil.runtime.generate(model, grammar, input_ids=ids, max_tokens=16)
    pieces: list[str] = []
    healed = stencil.runtime.generate(model, grammar, input_ids=ids, max_tokens=16, heal=True, on_text=pieces.append)
    info = model.tokenizer_info
    prefix = healed.healed_prefix.encode()
    assert prefix and prompt.encode().endswith(prefix)
    raw = info.decode_bytes(healed.token_ids)
    assert raw.startswith(prefix) and raw[len(prefix):].decode() == healed.text == "".join(pieces)
    assert healed.text != plain.text
    assert plain.healed_prefix == ""
    for r in (plain, healed):
        if grammar is not None:
            m = stencil.Matcher(grammar)
            assert m.accept_bytes(r.text.encode()) and m.is_accepting() and r.complete


def test_healing_with_speculation_is_the_same_greedy_output(model):
    prompt, regex = MODEL_CASES[0]
    g = stencil.GrammarCompiler(model.tokenizer_info).compile_regex(regex)
    ids = model.encode_prompt(prompt, chat=False)
    one = stencil.runtime.generate(model, g, input_ids=ids, max_tokens=12, heal=True, speculate=False)
    two = stencil.runtime.generate(model, g, input_ids=ids, max_tokens=12, heal=True)   # speculating (the default)
    assert one.token_ids == two.token_ids and one.text == two.text and one.healed_prefix == two.healed_prefix


def test_cli_heals_a_raw_prompt(model, capsys, monkeypatch):
    """``stencil generate --prompt-only --heal``: standard output is the text after the prompt (the
    healed prefix left out, as ``generate`` leaves it out), standard error names the prefix."""
    import stencil.runtime.models
    from stencil import cli

    monkeypatch.setattr(stencil.runtime.models, "load_model", lambda *a, **k: model)
    prompt, regex = MODEL_CASES[0]
    argv = ["generate", "--regex", regex, "--prompt", prompt, "--prompt-only", "--max-tokens", "16",
            "--repetition-penalty", "1"]
    assert cli.main(argv + ["--heal"]) == 0
    out, err = capsys.readouterr()
    g = stencil.GrammarCompiler(model.tokenizer_info).compile_regex(regex)
    want = stencil.runtime.generate(model, g, input_ids=model.encode_prompt(prompt, chat=False), max_tokens=16, heal=True)
    assert out == want.text + "\n" and "token healing" in err and repr(want.healed_prefix) in err
    assert cli.main(argv) == 0
    out, err = capsys.readouterr()
    assert out != want.text + "\n" and "token healing" not in err
    assert cli.main(["generate", "--regex", regex, "--prompt", prompt, "--heal"]) == cli.EXIT_BAD_INPUT
    assert "--heal needs --prompt-only" in capsys.readouterr().err
    assert cli.main(["generate", "--regex", regex, "--prompt-only"]) == cli.EXIT_BAD_INPUT
