"""gpt-oss's Harmony format cross-checked with OpenAI's own ``openai-harmony`` package (issue 44):
a conversation with tools that openai-harmony renders is accepted token for token by stencil's
Harmony tool grammar and read back by ``CallReader`` to the same reasoning and calls; the calls
stencil's prompt writer writes parse in openai-harmony to the messages it renders itself; and
whatever random walks over the compiled grammar write, openai-harmony's parser reads as stencil
does (channels, ``functions.NAME`` recipients, ``<|constrain|>json``, the argument text).

Token ids are o200k-harmony's throughout: stencil's TokenizerInfo is built from the same
``o200k_base.tiktoken`` file openai-harmony loads, with openai-harmony's special tokens at their
ids. openai-harmony downloads that file; offline it reads ``$TIKTOKEN_ENCODINGS_BASE``, filled
here from the copy the ``bpe-openai`` package ships (gzipped), checked against the SHA-256 that
openai-harmony expects of a download.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import random

import pytest

import stencil
from stencil.grammar.tagged.tool_presets import call_syntax
from stencil.grammar.tagged.tool_reading import CallReader, write_calls
from stencil.testing import random_walk
from tokenizers_zoo import data_file

harmony = pytest.importorskip("openai_harmony")
from openai_harmony import Conversation, DeveloperContent, Message, Role, SystemContent, ToolDescription  # noqa: E402

#: openai-harmony's expected hash of o200k_base.tiktoken (its loader's, for the download)
O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
JSON = {"whitespace": "compact", "number_spelling": "plain"}   # as the server writes
WEATHER = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 8},
                                            "days": {"type": "integer", "minimum": 1}},
           "required": ["city"], "additionalProperties": False}
TAGS = {"type": "object", "properties": {"tags": {"type": "array", "items": {"enum": ["x", "y}", '<z>"\\']},
                                                  "maxItems": 3}, "on": {"type": "boolean"}},
        "required": ["on"], "additionalProperties": False}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
                                           "parameters": WEATHER}},
         {"type": "function", "function": {"name": "send.to", "description": "Tag items", "parameters": TAGS}},
         {"type": "custom", "custom": {"name": "date", "format": {
             "type": "grammar", "grammar": {"syntax": "regex", "definition": r"\d{4}-\d{2}-\d{2}"}}}}]


@pytest.fixture(scope="module")
def o200k(tmp_path_factory):
    """A folder holding o200k_base.tiktoken, byte for byte the file openai-harmony would download."""
    data = gzip.decompress(open(data_file("bpe_openai", "data", "o200k_base.tiktoken.gz"), "rb").read())
    assert hashlib.sha256(data).hexdigest() == O200K_SHA256
    folder = tmp_path_factory.mktemp("encodings")
    (folder / "o200k_base.tiktoken").write_bytes(data)
    return folder


@pytest.fixture(scope="module")
def enc(o200k):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TIKTOKEN_ENCODINGS_BASE", str(o200k))
        return harmony.load_harmony_encoding(harmony.HarmonyEncodingName.HARMONY_GPT_OSS)


def specials(enc) -> dict[str, int]:
    """openai-harmony's special tokens and their ids (<|start|> 200006, <|call|> 200012, ...)."""
    return {s: enc.encode(s, allowed_special="all")[0] for s in enc.special_tokens_set}


@pytest.fixture(scope="module")
def compiler(info) -> stencil.GrammarCompiler:
    return stencil.GrammarCompiler(info)


@pytest.fixture(scope="module")
def info(enc, o200k) -> stencil.TokenizerInfo:
    """stencil's view of o200k-harmony: the same file, openai-harmony's special tokens at their ids.
    <|call|> and <|return|> end the grammar's messages, so the end of sequence is <|endoftext|>."""
    ids = specials(enc)
    return stencil.TokenizerInfo.from_tiktoken(str(o200k / "o200k_base.tiktoken"), special_tokens=ids,
                                               eos_token="<|endoftext|>", vocab_size=max(ids.values()) + 1)


def read_by_harmony(enc, ids: list[int]) -> list[tuple]:
    """The messages openai-harmony parses from completion tokens (after ``<|start|>assistant``), as
    ("reasoning", text), ("content", text) and ("call", name, JSON text); adjacent texts of one kind
    joined and empty ones left out, as stencil gives them."""
    out: list[tuple] = []
    for m in enc.parse_messages_from_completion_tokens(ids, Role.ASSISTANT):
        text = "".join(c.text for c in m.content)
        if m.recipient is not None:
            assert m.channel == "commentary" and m.recipient.startswith("functions."), m
            assert m.content_type in ("<|constrain|>json", "json"), m
            out.append(("call", m.recipient[len("functions."):], json.loads(text), text))
        else:
            _text(out, {"analysis": "reasoning", "final": "content"}[m.channel], text)
    return out


def read_by_stencil(text: str) -> list[tuple]:
    """The same from stencil's CallReader (a custom call's input as the {"input": ...} it is written as)."""
    r = CallReader(call_syntax("harmony"), TOOLS)
    out: list[tuple] = []
    for e in r.feed(text, final=True):
        if e[0] in ("reasoning", "content"):
            _text(out, e[0], e[1])
        elif e[0] == "call":
            c = r.calls[len([o for o in out if o[0] == "call"])]
            value = {"input": c["input"]} if c["type"] == "custom" else json.loads(c["arguments"])
            out.append(("call", c["name"], value, None if c["type"] == "custom" else c["arguments"]))
    assert all(c["ended"] for c in r.calls), text
    return out


def _text(out: list, kind: str, text: str) -> None:
    if not text:
        return
    if out and out[-1][0] == kind:
        out[-1] = (kind, out[-1][1] + text)
    else:
        out.append((kind, text))


def same(by_harmony: list[tuple], by_stencil: list[tuple]) -> bool:
    """Equal readings: a function call's argument text exactly (a custom call's by value)."""
    return len(by_harmony) == len(by_stencil) and all(
        h[:3] == s[:3] and (s[0] != "call" or s[3] is None or h[3] == s[3]) for h, s in zip(by_harmony, by_stencil))


CALLS = [("get_weather", {"city": "Zürich", "days": 2}), ("send.to", {"tags": ["y}", '<z>"\\'], "on": True})]


def test_a_conversation_rendered_by_openai_harmony_is_read_and_written_alike(enc, info, compiler):
    tools = [ToolDescription.new(t["function"]["name"], t["function"]["description"], parameters=t["function"]["parameters"])
             for t in TOOLS if t["type"] == "function"]
    head = [Message.from_role_and_content(Role.SYSTEM, SystemContent.new()),
            Message.from_role_and_content(Role.DEVELOPER, DeveloperContent.new().with_function_tools(tools)),
            Message.from_role_and_content(Role.USER, "Weather in Zürich, and tag it?")]
    calls = [Message.from_role_and_content(Role.ASSISTANT, json.dumps(a, ensure_ascii=False)).with_channel("commentary")
             .with_recipient("functions." + n).with_content_type("<|constrain|>json") for n, a in CALLS]
    turn = [Message.from_role_and_content(Role.ASSISTANT, "Two tools.").with_channel("analysis")] + calls
    prompt = enc.render_conversation_for_completion(Conversation.from_messages(head), Role.ASSISTANT)
    whole = enc.render_conversation(Conversation.from_messages(head + turn))
    assert whole[:len(prompt)] == prompt
    ids = whole[len(prompt):]   # the assistant's turn, as gpt-oss would write it (openai-harmony's tokens)

    # stencil's grammar takes those very tokens, and its reader finds the reasoning and the calls
    g = compiler.compile_tool_calls(TOOLS, format="harmony", reasoning=True)
    m = stencil.Matcher(g)
    assert m.accept_tokens(ids) == len(ids) and m.is_accepting(), info.decode_bytes(ids)
    text = info.decode_bytes(ids).decode()
    assert text == enc.decode_utf8(ids)
    expected = [("reasoning", "Two tools.")] + [("call", n, a, json.dumps(a, ensure_ascii=False)) for n, a in CALLS]
    assert read_by_stencil(text) == expected == read_by_harmony(enc, ids)

    # what stencil writes for the same calls (the server's prompt writer: an assistant turn in the
    # Harmony form, for templates that do not write calls) parses to openai-harmony's own messages
    written = write_calls(call_syntax("harmony"), CALLS, TOOLS)
    parsed = enc.parse_messages_from_completion_tokens(enc.encode(written, allowed_special="all"), Role.ASSISTANT)
    assert [p.to_dict() for p in parsed] == [c.to_dict() for c in calls]
    pytest.importorskip("fastapi")
    from stencil.server.toolcalls import chat_prompt
    history = [{"role": "assistant", "content": "", "tool_calls": [
        {"id": f"c{i}", "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
        for i, (n, a) in enumerate(CALLS)]}]
    messages, _ = chat_prompt(history, TOOLS, "harmony", template_tools=False)
    assert messages[-1]["content"] == written


def test_random_walks_are_read_alike_by_openai_harmony(enc, info, compiler):
    """200 walks over the whole vocabulary: each output's messages, read by openai-harmony from its
    token ids and by stencil's CallReader from its text, are the same."""
    rng = random.Random(44)
    walks = calls = texts = several = 0
    for choice, reasoning in (("auto", True), ("required", True), ("auto", False), ("required", False)):
        g = compiler.compile_tool_calls(TOOLS, format="harmony", tool_choice=choice, reasoning=reasoning,
                                        json_options=JSON)
        for _ in range(50):
            m = stencil.Matcher(g)
            # (a low end chance: outputs go on to a second call, or a final answer after a call)
            ids = random_walk(m, info, rng, m.min_completion_tokens() + rng.randrange(60), end_chance=0.1)
            assert m.is_accepting()
            text = info.decode_bytes(ids).decode()
            mine, theirs = read_by_stencil(text), read_by_harmony(enc, ids)
            assert same(theirs, mine), (text, theirs, mine)
            walks += 1
            calls += sum(r[0] == "call" for r in mine)
            texts += sum(r[0] != "call" for r in mine)
            several += sum(r[0] == "call" for r in mine) > 1
    assert walks == 200 and calls >= 120 and texts >= 100 and several >= 5, (calls, texts, several)
