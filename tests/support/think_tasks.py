"""The task set of ``python -m benchmarks.think_then_constrain``, shared with ``test_think.py``:
arithmetic word problems and extraction texts, generated seeded with their answers known by
construction, and the judge of an output (valid for the schema, every field right).

Example::

    t = task_set(arithmetic=2, extraction=1, seed=0)[0]
    judge(t, json.dumps(t.answer)) == (True, True)
"""
from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

__all__ = ["ANSWER", "PERSON", "Task", "task_set", "schema_of", "judge"]

ANSWER = {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"],
          "additionalProperties": False}
PERSON = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
                                           "city": {"type": "string"}},
          "required": ["name", "age", "city"], "additionalProperties": False}

NAMES = [("Tom", "he"), ("Anna", "she"), ("Ravi", "he"), ("Lena", "she"), ("Omar", "he"), ("Sofia", "she"),
         ("Ken", "he"), ("Maria", "she"), ("Paul", "he"), ("Julia", "she")]
ITEMS = ["apples", "pencils", "marbles", "stickers", "cookies", "books", "stamps", "shells"]
SURNAMES = ["Lopez", "Novak", "Schmidt", "Okafor", "Tanaka", "Rossi", "Dubois", "Kowalski", "Silva", "Berg"]
CITIES = ["Porto", "Oslo", "Dublin", "Krakow", "Lyon", "Nairobi", "Osaka", "Quito", "Tallinn", "Seville", "Perth",
          "Denver"]
JOBS = ["nurse", "teacher", "baker", "pilot", "chemist", "carpenter", "librarian", "designer"]


@dataclass(frozen=True)
class Task:
    kind: str            # "arithmetic" or "extraction"
    question: str
    answer: dict         # the expected JSON value


def _arithmetic(rng: random.Random) -> tuple[str, int]:
    """One word problem and its answer: one step (add, take away, multiply) or two (then add or take away)."""
    name, he = rng.choice(NAMES)
    item = rng.choice(ITEMS)
    He = he.capitalize()
    shape = rng.choice(["add", "sub", "mul", "add_sub", "mul_sub", "mul_add"])
    if shape.startswith("mul"):
        a, b = rng.randint(2, 9), rng.randint(2, 12)
        start, total = f"{name} buys {a} boxes of {item}. Each box holds {b} {item}.", a * b
    else:
        a = rng.randint(5, 60)
        start, total = f"{name} has {a} {item}.", a
    if shape in ("add", "add_sub", "mul_add"):
        c = rng.randint(2, 40)
        start, total = start + f" {He} buys {c} more {item}.", total + c
    if shape in ("sub", "add_sub", "mul_sub"):
        c = rng.randint(1, total - 1)
        start, total = start + f" {He} gives {c} {item} to a friend.", total - c
    return f"{start} How many {item} does {name} have now?", total


def _extraction(rng: random.Random) -> tuple[str, dict]:
    """A short text about a person (with a distractor city and number) and the fields it states."""
    (first, he), last = rng.choice(NAMES), rng.choice(SURNAMES)
    home, born = rng.sample(CITIES, 2)
    age = rng.randint(19, 79)
    years = rng.randint(1, max(1, age - 18))
    job = rng.choice(JOBS)
    text = (f"{first} {last} was born in {born} and now lives in {home}. {he.capitalize()} is {age} years old "
            f"and has worked as a {job} for {years} years.")
    question = f"{text}\nExtract the person's full name, age and the city where they live now."
    return question, {"name": f"{first} {last}", "age": age, "city": home}


def task_set(arithmetic: int = 40, extraction: int = 20, seed: int = 0) -> list[Task]:
    """The seeded task set: ``arithmetic`` word problems, then ``extraction`` texts."""
    rng = random.Random(seed)
    tasks = []
    for _ in range(arithmetic):
        q, n = _arithmetic(rng)
        tasks.append(Task("arithmetic", q, {"answer": n}))
    for _ in range(extraction):
        q, fields = _extraction(rng)
        tasks.append(Task("extraction", q, fields))
    return tasks


def schema_of(task: Task) -> dict:
    return ANSWER if task.kind == "arithmetic" else PERSON


def judge(task: Task, text: str) -> tuple[bool, bool]:
    """(valid: JSON valid for the task's schema, correct: every field as expected; names and
    cities compared without case or surrounding white space)."""
    try:
        value = json.loads(text)
    except ValueError:
        return False, False
    schema = schema_of(task)
    valid = (isinstance(value, dict) and set(value) == set(schema["required"])
             and all(_typed(value[k], schema["properties"][k]["type"]) for k in value))
    if not valid:
        return False, False
    same = all(_norm(value[k]) == _norm(v) for k, v in task.answer.items())
    return True, same


def _typed(v: Any, kind: str) -> bool:
    if kind == "string":
        return isinstance(v, str)
    # JSON Schema's integer is a number without a fraction: 2.0 and 25e1 are integers too
    return not isinstance(v, bool) and (isinstance(v, int) or isinstance(v, float) and v.is_integer())


def _norm(v: Any) -> Any:
    return v.strip().casefold() if isinstance(v, str) else v
