# Synthetic task suite of the built-in models: generators for add / sort / word / rev, the hash split that keeps
# held-out queries out of training by construction, and the few-shot prompt format (shared with app/model/task_suite.cpp).
import random

TASKS = ["add", "sort", "word", "rev"]

# Training mix: addition is the hard "reasoning" task, so it gets half the examples (tiny-mdlm-experiment.md advice).
TASK_WEIGHTS = {"add": 0.5, "sort": 1 / 6, "word": 1 / 6, "rev": 1 / 6}

NAMES = ["Tom", "Ann", "Bob", "Eve", "Sam", "Lily"]
OBJECTS = ["apples", "pens", "books", "cards", "coins"]
LETTERS = "abcdefghijklmnopqrstuvwxyz"

# Held-out bucket: a query is held out when fnv1a32(query) % HOLDOUT_MOD == 0 (10% of every task's query space).
# app/model/task_suite.cpp computes the same hash, so the C++ test checks every shipped item is in the held-out bucket.
HOLDOUT_MOD = 10


def fnv1a32(s: str) -> int:
    h = 0x811C9DC5
    for b in s.encode("utf-8"):
        h ^= b
        h = (h * 0x01000193) & 0xFFFFFFFF
    return h


def split_key(query: str) -> str:
    """What the split hashes: the query, except that addition is keyed by its UNORDERED operand pair and sorting by
    its multiset, so a held-out item's operands (in either order) / digits (in any order) never occur in training."""
    if query.startswith("add "):
        a, b = (int(x) for x in query[4:].split("+"))
        return f"add {min(a, b)}+{max(a, b)}"
    if query.startswith("sort "):
        return "sort " + " ".join(sorted(query[5:].split()))
    return query


def is_held_out(query: str) -> bool:
    return fnv1a32(split_key(query)) % HOLDOUT_MOD == 0


# ---- the four tasks: each returns (query, response) ----

def gen_add(rng):
    """Worked addition of two 3-digit numbers, columns least-significant first, carry written as '+1'."""
    a = rng.randint(100, 999)
    b = rng.randint(100, 999)
    query = f"add {a}+{b}"
    da, db = str(a)[::-1], str(b)[::-1]
    carry = 0
    cols, out = [], []
    for i in range(3):
        x, y = int(da[i]), int(db[i])
        s = x + y + carry
        cols.append(f"{x}+{y}" + ("+1" if carry else "") + f"={s}")
        out.append(s % 10)
        carry = s // 10
    total = a + b
    assert int(("1" if carry else "") + "".join(str(d) for d in reversed(out))) == total
    return query, ", ".join(cols) + f", answer {total}"


def gen_sort(rng):
    n = rng.randint(4, 8)
    xs = [rng.randint(0, 9) for _ in range(n)]
    return "sort " + " ".join(map(str, xs)), " ".join(map(str, sorted(xs)))


def gen_word(rng):
    name, obj = rng.choice(NAMES), rng.choice(OBJECTS)
    if rng.random() < 0.5:
        a, b = rng.randint(1, 19), rng.randint(1, 9)
        q = f"{name} has {a} {obj} and gets {b} more. How many {obj} does {name} have?"
        r = a + b
    else:
        a = rng.randint(2, 19)
        b = rng.randint(1, a - 1)
        q = f"{name} has {a} {obj} and gives away {b}. How many {obj} does {name} have?"
        r = a - b
    return q, f"{name} has {r} {obj}."


def gen_rev(rng):
    """Reverse a letter list that carries explicit position markers, so the output is found by content."""
    n = rng.randint(4, 9)
    xs = [rng.choice(LETTERS) for _ in range(n)]
    items = [f"{i + 1}{c}" for i, c in enumerate(xs)]
    return "reverse " + " ".join(items), " ".join(reversed(items))


GENERATORS = {"add": gen_add, "sort": gen_sort, "word": gen_word, "rev": gen_rev}


def sample(rng, task, held_out):
    """Rejection-samples a (query, response) of the requested split."""
    while True:
        q, r = GENERATORS[task](rng)
        if is_held_out(q) == held_out:
            return q, r


def format_prompt(shots, query):
    """User message: k solved examples then the query. Must match app/model/task_suite.cpp build_prompt()."""
    return "".join(f"Q: {q}\nA: {a}\n" for q, a in shots) + f"Q: {query}"


def sample_example(rng, task, k, held_out=False):
    """One training (held_out=False) or evaluation example with k shots; shots always come from the training split."""
    q, r = sample(rng, task, held_out)
    shots = []
    while len(shots) < k:
        s = sample(rng, task, False)
        if s[0] != q:
            shots.append(s)
    return format_prompt(shots, q), r


def pick_task(rng):
    x = rng.random()
    acc = 0.0
    for t in TASKS:
        acc += TASK_WEIGHTS[t]
        if x < acc:
            return t
    return TASKS[-1]


def final_answer(text: str) -> str:
    """Scoring rule (same as app/model/task_suite.cpp): whitespace-normalise; if the text contains 'answer', keep what
    follows its last occurrence."""
    t = " ".join(text.split())
    i = t.rfind("answer")
    if i >= 0:
        t = t[i + len("answer"):].strip()
    return t
