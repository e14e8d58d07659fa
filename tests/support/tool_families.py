"""The request runner of ``python -m benchmarks.tool_families`` (issue 44), shared with
``test_tool_families.py``: each family's request plan (``request_plan``), pairs of requests (one
unstreamed, its twin streamed) sent through the real server and the ``openai`` client
(``run_pairs``), and their calls checked (``Tally``). The command's docstring says what is checked.

Example::

    tally = run_family("qwen", requests=4, max_tokens=96, workers=1)
    tally.row()["valid_%"]
"""
from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction

from tests.support.schema_generator import tool_set
from tests.support.tool_models import FAMILIES, build_model, harmony_encoding, serve

CHOICES = ("required", "auto", "named", "allowed")


@dataclass
class Tally:
    family: str
    requests: int = 0
    calls: int = 0
    parsed: int = 0
    valid: int = 0
    streamed: int = 0       # streamed twins compared
    streamed_equal: int = 0
    greedy_streamed: int = 0   # of them greedy (a sampled twin batched with other requests may draw otherwise)
    greedy_equal: int = 0
    two_turn: int = 0
    two_turn_ok: int = 0
    failed: int = 0         # request pairs that raised (an error answer, a broken stream)
    refused: int = 0        # 400s: the tool set's shortest call does not fit max_tokens (the server's check)
    broken: int = 0         # answers that break the request's rules (see the module's docstring)
    first_differs: int = 0  # twins equal only to a repeat of the unstreamed request (see one_pair)
    harmony_checked: int = 0
    harmony_equal: int = 0
    errors: list = field(default_factory=list)

    def row(self) -> dict:
        def pct(a, b):
            return round(100.0 * a / b, 1) if b else None
        return {"family": self.family, "requests": self.requests, "refused": self.refused, "failed": self.failed,
                "broken": self.broken, "calls": self.calls,
                "parse_%": pct(self.parsed, self.calls), "valid_%": pct(self.valid, self.calls),
                "streamed==final_%": pct(self.streamed_equal, self.streamed),
                "greedy_streamed==final": f"{self.greedy_equal}/{self.greedy_streamed}",
                "equal_to_repeat_only": self.first_differs,
                "two_turn": f"{self.two_turn_ok}/{self.two_turn}",
                "harmony_parser": f"{self.harmony_equal}/{self.harmony_checked}" if self.harmony_checked else "-",
                "errors": self.errors[:5]}


def request_plan(i: int, family: str) -> dict:
    """The i-th request's settings: tool set, choice, parallelism, temperature."""
    tools = tool_set(1 + i % 6, seed=1000 * FAMILIES.index(family) + i % 7)
    kind = CHOICES[(i // 2) % len(CHOICES)]
    first = tools[0]["function"]["name"]
    choice = {"required": "required", "auto": "auto", "named": {"type": "function", "function": {"name": first}},
              "allowed": {"type": "allowed_tools", "allowed_tools": {
                  "mode": "required", "tools": [{"type": "function", "function": {"name": t["function"]["name"]}}
                                                for t in tools[:2]]}}}[kind]
    return {"tools": tools, "tool_choice": choice, "kind": kind, "parallel_tool_calls": (i // 8) % 2 == 0,
            "temperature": 0.0 if i % 2 == 0 else 1.0, "seed": i}


def _schemas(tools) -> dict:
    return {t["function"]["name"]: t["function"]["parameters"] for t in tools}


def exact_validator(schema):
    """jsonschema's validator of ``schema`` with ``multipleOf`` decided in fractions (jsonschema
    divides in floats: a 400-digit integer raises OverflowError, and 0.1 steps round)."""
    import jsonschema

    def multiple_of(validator, step, instance, schema):
        if validator.is_type(instance, "number") and (Fraction(str(instance)) / Fraction(str(step))).denominator != 1:
            yield jsonschema.ValidationError(f"{instance} is not a multiple of {step}")
    cls = jsonschema.validators.validator_for(schema)
    return jsonschema.validators.extend(cls, {"multipleOf": multiple_of})(schema)


def check_calls(tally: Tally, calls, plan: dict) -> list:
    """Count ``calls`` (dicts: id, name, arguments); the ones that parse, as (name, value)."""
    import jsonschema
    schemas = _schemas(plan["tools"])
    out = []
    for c in calls:
        tally.calls += 1
        try:
            value = json.loads(c["arguments"])
        except (TypeError, ValueError):
            tally.errors.append(f"arguments not JSON: {c['arguments']!r:.80}")
            continue
        if c["name"] not in schemas:
            tally.errors.append(f"unknown tool {c['name']!r}")
            continue
        tally.parsed += 1
        try:
            exact_validator(schemas[c["name"]]).validate(json.loads(c["arguments"], parse_float=Decimal))
            tally.valid += 1
        except jsonschema.ValidationError as e:
            tally.errors.append(f"{c['name']}: {e.message:.100}")
        out.append((c["name"], value))
    if plan["kind"] != "auto" and not calls:
        tally.calls += 1   # a call was due and none was read
        tally.errors.append(f"tool_choice {plan['kind']}: no call")
    return out


def _calls_of(message) -> list[dict]:
    """An openai chat message's tool calls as dicts (id, name, arguments)."""
    return [{"id": c.id, "name": c.function.name, "arguments": c.function.arguments} for c in message.tool_calls or []]


def one_pair(client, model: str, family: str, i: int, max_tokens: int, tally: Tally, ctx: dict) -> None:
    plan = request_plan(i, family)
    # (speculation as the run says: the server's speculative rows draw a seeded sample otherwise
    # than plain ones, and a request with logprobs does not speculate, so the twins would differ)
    args = dict(model=model, messages=[{"role": "user", "content": "Use the tools for my request #%d." % i}],
                tools=plan["tools"], tool_choice=plan["tool_choice"], parallel_tool_calls=plan["parallel_tool_calls"],
                temperature=plan["temperature"], seed=plan["seed"], max_tokens=max_tokens,
                extra_body={"speculate": ctx["speculate"]})
    # (harmony's output is read from its tokens: logprobs on both twins, as a request with logprobs
    # samples with the full mask, one without checks the model's pick first: other draws of a seed)
    whole = client.chat.completions.create(logprobs=family == "harmony", **args)
    chunks = list(client.chat.completions.create(stream=True, logprobs=family == "harmony", **args))
    tally.requests += 2
    msg = whole.choices[0].message
    calls = _calls_of(msg)
    made = check_calls(tally, calls, plan)
    check_rules(tally, i, calls, whole.choices[0].finish_reason, plan, family)
    # the streamed twin: deltas per index, joined
    streamed: dict[int, dict] = {}
    for ch in chunks:
        for d in (ch.choices[0].delta.tool_calls if ch.choices else None) or []:
            s = streamed.setdefault(d.index, {"name": None, "arguments": ""})
            if d.function and d.function.name:
                s["name"] = d.function.name
            if d.function and d.function.arguments:
                s["arguments"] += d.function.arguments
    twin = [{"id": None, **streamed[k]} for k in sorted(streamed)]
    check_calls(tally, twin, plan)
    tally.streamed += 1
    greedy = plan["temperature"] == 0
    tally.greedy_streamed += greedy

    def pairs(cs):
        return [(c["name"], c["arguments"]) for c in cs]
    # The first request over a tool set fills its budget-aware masks (max_tokens) with cold cost
    # memos; under a work limit a mask can come out coarser than with warm ones (the bound stays
    # sound), so its greedy tokens may differ from its twin's, filled after it. A repeat of the
    # unstreamed request is the twin's like (both warm): the streaming is judged against that.
    equal = pairs(twin) == pairs(calls)
    repeated = False
    if not equal:
        again = client.chat.completions.create(logprobs=family == "harmony", **args).choices[0].message
        tally.requests += 1
        repeated = equal = pairs(twin) == pairs(_calls_of(again))
    if equal:
        tally.streamed_equal += 1
        tally.greedy_equal += greedy
        tally.first_differs += repeated
    else:
        tally.errors.append(f"#{i} streamed {pairs(twin)!r:.160} != final {pairs(calls)!r:.160}")
    if family == "harmony":
        harmony_output(tally, ctx, whole, msg, calls)
    if calls:
        two_turn(client, model, family, tally, ctx, plan, msg, calls, made)


def check_rules(tally: Tally, i: int, calls: list, finish_reason: str, plan: dict, family: str) -> None:
    """Count an answer that breaks the request's rules: several calls where one is the most,
    a call of a tool the choice does not allow, calls without finish_reason "tool_calls"."""
    from stencil.grammar.tagged.tool_presets import FAMILIES as PRESETS
    choice = plan["tool_choice"]
    one_per_turn = family in PRESETS and not PRESETS[family].parallel   # (llama3)
    one = not plan["parallel_tool_calls"] or plan["kind"] == "named" or one_per_turn
    allowed = ([choice["function"]["name"]] if plan["kind"] == "named" else
               [t["function"]["name"] for t in choice["allowed_tools"]["tools"]] if plan["kind"] == "allowed" else
               [t["function"]["name"] for t in plan["tools"]])
    why = ("%d calls where one is the most" % len(calls) if one and len(calls) > 1 else
           "a call of a tool not allowed" if any(c["name"] not in allowed for c in calls) else
           f"finish_reason {finish_reason!r} with calls" if calls and finish_reason != "tool_calls" else None)
    if why:
        tally.broken += 1
        tally.errors.append(f"#{i}: {why}")


def harmony_output(tally: Tally, ctx: dict, whole, msg, calls) -> None:
    """The raw output (its tokens' bytes, from logprobs) parsed by openai-harmony: the analysis
    message is the reasoning, each commentary message to=functions.NAME a call with those arguments."""
    from openai_harmony import Role
    enc = ctx["harmony"]
    text = b"".join(bytes(t.bytes) for t in whole.choices[0].logprobs.content).decode("utf-8")
    tally.harmony_checked += 1
    try:
        parsed = enc.parse_messages_from_completion_tokens(enc.encode(text, allowed_special="all"), Role.ASSISTANT)
    except Exception as e:  # noqa: BLE001 - a parse failure is what is counted
        tally.errors.append(f"openai-harmony refused the output: {e} {text[:80]!r} ... {text[-80:]!r}")
        return
    got = [(m.recipient.removeprefix("functions."), m.content[0].text) for m in parsed if m.recipient]
    thought = "".join(m.content[0].text for m in parsed if m.channel == "analysis")
    if got == [(c["name"], c["arguments"]) for c in calls] and thought.strip() == (
            getattr(msg, "reasoning_content", None) or "").strip():
        tally.harmony_equal += 1
    else:
        tally.errors.append(f"openai-harmony read {got!r:.160}, the server {calls!r:.160}")


def two_turn(client, model: str, family: str, tally: Tally, ctx: dict, plan: dict, msg, calls, made) -> None:
    """Send the calls back with results; the family's template must render them (the server's
    prompt count equals the template's rendering), and the rendered assistant turn reads back to them."""
    from stencil.grammar.tagged.tool_reading import read_calls
    from stencil.server.toolcalls import call_syntax, chat_prompt
    tally.two_turn += 1
    user = {"role": "user", "content": "Use the tools."}
    assistant = {"role": "assistant", "content": msg.content or "", "tool_calls": [
        {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
        for c in calls]}
    results = [{"role": "tool", "tool_call_id": c["id"], "content": json.dumps({"ok": k})} for k, c in enumerate(calls)]
    try:
        second = client.chat.completions.create(model=model, messages=[user, assistant, *results], tools=plan["tools"],
                                                max_tokens=4, temperature=0)
    except Exception as e:  # noqa: BLE001 - counted
        tally.errors.append(f"two-turn request failed: {str(e)[:200]}")
        return
    fmt, tok = ctx["format"], ctx["lm"].tokenizer
    messages, tools = chat_prompt([user, assistant, *results], plan["tools"], fmt, ctx["template_tools"])
    ids = ctx["encode"](messages, tools)
    head = ctx["encode"](*chat_prompt([user], plan["tools"], fmt, ctx["template_tools"]))
    if second.usage.prompt_tokens != len(ids):
        tally.errors.append(f"two-turn prompt: server {second.usage.prompt_tokens} tokens, template {len(ids)}")
        return
    k = 0
    while k < min(len(ids), len(head)) and ids[k] == head[k]:
        k += 1
    turn = tok.decode(ids[k:], skip_special_tokens=False)
    _, _, back = read_calls(call_syntax(fmt), plan["tools"], turn)
    read = [(c["name"], json.loads(c["arguments"])) for c in back]
    if read != made:
        tally.errors.append(f"two-turn: read back {read!r:.160} from {turn!r:.200}, made {made!r:.160}")
        return
    if family == "harmony":
        from openai_harmony import Role
        enc = ctx["harmony"]
        # (the turn, the tool results, then the next generation prompt's header, which has no message)
        history = turn.removesuffix("<|start|>assistant")
        try:
            parsed = enc.parse_messages_from_completion_tokens(enc.encode(history, allowed_special="all"), Role.ASSISTANT)
        except Exception as e:  # noqa: BLE001 - a parse failure is what is counted
            tally.errors.append(f"two-turn: openai-harmony refused the rendered history: {e} {history!r:.160}")
            return
        got = [(m.recipient.removeprefix("functions."), json.loads(m.content[0].text)) for m in parsed
               if m.author.role == Role.ASSISTANT and m.recipient]
        if got != made:
            tally.errors.append(f"two-turn: openai-harmony read {got!r:.160} from the rendered history")
            return
    tally.two_turn_ok += 1


def family_context(lm) -> dict:
    """What the checks need of a family's model: its tokenizer's format, the template's rendering
    as the server does it, openai-harmony's encoding for harmony."""
    from stencil.runtime.models import chat_ids, renders_own_chats
    from stencil.server.toolcalls import renders_tools, tool_format_for
    tok = lm.tokenizer

    def encode(messages, tools):
        if renders_own_chats(tok):
            return chat_ids(tok, messages, tools)
        if tools is None:
            return lm.encode_prompt(messages=messages)
        text = tok.apply_chat_template(messages, tools=tools, add_generation_prompt=True, tokenize=False)
        return list(tok(text, add_special_tokens=False)["input_ids"])
    fmt = tool_format_for(tok)
    return {"lm": lm, "format": fmt, "encode": encode,
            "template_tools": renders_tools(tok),
            "harmony": harmony_encoding() if fmt == "harmony" else None}


def run_pairs(url: str, lm, family: str, pairs, max_tokens: int, workers: int = 1, speculate: bool = False) -> Tally:
    """Request pairs ``pairs`` (indices of :func:`request_plan`) to the server at ``url``, counted;
    ``speculate``: each request's (the server's speculative decoding)."""
    import openai
    ctx = {**family_context(lm), "speculate": speculate}
    tally = Tally(family)
    client = openai.OpenAI(base_url=url + "/v1", api_key="none", max_retries=0, timeout=600)
    model = client.models.list().data[0].id

    def task(i):
        try:
            one_pair(client, model, family, i, max_tokens, tally, ctx)
        except Exception as e:  # noqa: BLE001 - a failed request is counted, the run goes on
            if isinstance(e, openai.BadRequestError) and "shortest output the constraint allows" in str(e):
                tally.refused += 2
                return
            tally.failed += 1
            tally.errors.append(f"#{i}: {type(e).__name__}: {str(e)[:200]}")
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(task, pairs))
    return tally


def run_family(family: str, requests: int, max_tokens: int, workers: int, speculate: bool = False) -> Tally:
    lm = build_model(family)
    url, stop = serve(lm)
    try:
        return run_pairs(url, lm, family, range((requests + 1) // 2), max_tokens, workers, speculate)
    finally:
        stop()
