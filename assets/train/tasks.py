# Synthetic task suite of the built-in models: generators for add / sort / word / rev, the hash split that keeps
# held-out queries out of training by construction, and the few-shot prompt format (shared with app/model/task_suite.cpp).
# Two data formats: v1 (the first 4-layer models) and v2 (worked word problems, rebalanced mix: the shipped models and
# assets/tasks; TRAINING.md).
import random

TASKS = ["add", "sort", "word", "rev"]
# v3: the long worked-answer tasks of tasks_long.py beside the v2 short tasks (train.py; its held-out suite holds the
# long tasks only, assets/tasks/long).
FORMATS = ["v1", "v2", "v3"]
# Training-only stages of v2, the data the v2 runs saw before it took its final form (train.py data_format, so a run
# from scratch reproduces the shipped models): "v2-plain", word answers without the question's object restated
# (gen_word) and the first mix; "v2-echo", restated answers with the first mix. Not suite formats: every held-out
# suite is v1 or v2.
# "v2-word": the v2 data with word problems at 0.7 of the mix, a stretch of tiny-llada's run (train.py V2_WORD_FOCUS).
DATA_FORMATS = FORMATS + ["v2-plain", "v2-echo", "v2-word"]

# Training mix per format. v1: addition is the hard "reasoning" task, so it gets half the examples
# (tiny-mdlm-experiment.md advice). v2: the shipped v1 model scores add 0.98 / sort 0.92 but word 0.32 / rev 0.56,
# so the weak tasks get the examples addition no longer needs.
# The v2 runs then learned rev first (1.0 on both models by step 9,500) and word problems not at all (gen_word); from
# the step in train.py's V2_MIX_FROM_STEP word problems take half of rev's share (the object of a word problem is
# learned at a rate that grows with the examples; rev needs only to be kept).
TASK_WEIGHTS = {"v1": {"add": 0.5, "sort": 1 / 6, "word": 1 / 6, "rev": 1 / 6},
                "v2-plain": {"add": 0.3, "sort": 0.15, "word": 0.25, "rev": 0.3},
                "v2": {"add": 0.3, "sort": 0.15, "word": 0.4, "rev": 0.15}}
TASK_WEIGHTS["v2-echo"] = TASK_WEIGHTS["v2-plain"]
# Still no object copied by tiny-llada 2,300 steps into the v2 mix (object_probe.py 8/40, chance), where three
# 100-step fine-tunes on word problems alone at 2e-3 had taught it (13, 19, 24 /40): more of the examples for a while.
TASK_WEIGHTS["v2-word"] = {"add": 0.15, "sort": 0.1, "word": 0.7, "rev": 0.05}
# v2 training draws rev lists of 4..9 letters with these weights (the held-out suite keeps uniform lengths): the v1
# model's rev misses are all lists of 7-9 letters, at the last output items (markers 1-3), whose letters sit farthest
# from the response; uniform lengths give those lookups a ninth of the rev examples.
REV_TRAIN_LENGTH_WEIGHTS = {4: 1, 5: 1, 6: 1.5, 7: 2, 8: 2.5, 9: 3}

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

def gen_add(rng, fmt="v1", train=False):
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


def gen_sort(rng, fmt="v1", train=False):
    n = rng.randint(4, 8)
    xs = [rng.randint(0, 9) for _ in range(n)]
    return "sort " + " ".join(map(str, xs)), " ".join(map(str, sorted(xs)))


def gen_word(rng, fmt="v1", train=False):
    """v1: 'Tom has 6 apples.'; v2 restates the question's object, then writes the arithmetic, as addition does:
    'How many apples: 13-7=6, answer Tom has 6 apples.' (the v1 model's misses are mostly the sum or difference,
    computed in one token). The restatement: the 8-layer v2 models trained on '13-7=6, answer Tom has 6 apples.'
    (v2-plain) never learned to carry the object from the question to the answer (with every other answer token given,
    their object is uniform over the five, whatever the question says; TRAINING.md "Worked word problems"):
    the object follows a freshly computed number, so no neighbouring token ties it to the question. ' many apples'
    after ' many' repeats the question's own bigram, which a copy head finds; the answer's object then has a copy in
    the response. Same random draws in every format, so the v1 and v2 suites hold the same queries."""
    name, obj = rng.choice(NAMES), rng.choice(OBJECTS)
    if rng.random() < 0.5:
        a, b = rng.randint(1, 19), rng.randint(1, 9)
        q = f"{name} has {a} {obj} and gets {b} more. How many {obj} does {name} have?"
        r, work = a + b, f"{a}+{b}={a + b}"
    else:
        a = rng.randint(2, 19)
        b = rng.randint(1, a - 1)
        q = f"{name} has {a} {obj} and gives away {b}. How many {obj} does {name} have?"
        r, work = a - b, f"{a}-{b}={a - b}"
    sentence = f"{name} has {r} {obj}."
    if fmt in ("v2", "v2-echo", "v2-word"):
        return q, f"How many {obj}: {work}, answer {sentence}"
    return q, (f"{work}, answer {sentence}" if fmt == "v2-plain" else sentence)


def gen_rev(rng, fmt="v1", train=False):
    """Reverse a letter list that carries explicit position markers, so the output is found by content."""
    if fmt.startswith("v2") and train:
        n = rng.choices(list(REV_TRAIN_LENGTH_WEIGHTS), list(REV_TRAIN_LENGTH_WEIGHTS.values()))[0]
    else:
        n = rng.randint(4, 9)
    xs = [rng.choice(LETTERS) for _ in range(n)]
    items = [f"{i + 1}{c}" for i, c in enumerate(xs)]
    return "reverse " + " ".join(items), " ".join(reversed(items))


GENERATORS = {"add": gen_add, "sort": gen_sort, "word": gen_word, "rev": gen_rev}


def sample(rng, task, held_out, fmt="v1"):
    """Rejection-samples a (query, response) of the requested split; training draws (held_out=False) may use the
    format's training distribution (v2 rev lengths)."""
    if fmt not in DATA_FORMATS:
        raise ValueError(f"unknown task format {fmt!r} (expected one of {', '.join(DATA_FORMATS)})")
    while True:
        q, r = GENERATORS[task](rng, fmt, not held_out)
        if is_held_out(q) == held_out:
            return q, r


def format_prompt(shots, query):
    """User message: k solved examples then the query. Must match app/model/task_suite.cpp build_prompt()."""
    return "".join(f"Q: {q}\nA: {a}\n" for q, a in shots) + f"Q: {query}"


def sample_example(rng, task, k, held_out=False, fmt="v1"):
    """One training (held_out=False) or evaluation example with k shots; shots always come from the training split."""
    q, r = sample(rng, task, held_out, fmt)
    shots = []
    while len(shots) < k:
        s = sample(rng, task, False, fmt)
        if s[0] != q:
            shots.append(s)
    return format_prompt(shots, q), r


def pick_task(rng, fmt="v1"):
    x = rng.random()
    acc = 0.0
    for t in TASKS:
        acc += TASK_WEIGHTS[fmt][t]
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
