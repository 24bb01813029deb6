# Long worked-answer tasks of the v3 model (answers of about 100-250 tokens, every step written out so a small model
# can learn them exactly): mul, sort-long, rev-long, word-long. Held out by the same hash rule as tasks.py; each query
# is written so that tasks.split_key (and app/model/task_suite.cpp split_key, unchanged) keys it by its problem.
import random

import tasks

LONG_TASKS = ["mul", "sort-long", "rev-long", "word-long"]
# Response canvas of the long tasks: the paper's gen length. Every answer + end token fits (checked in make_tasks.py
# and by train.py's batch builder).
LONG_GEN_LENGTH = 256


def gen_mul(rng, train=False):
    """Long multiplication of a 3-digit number by a 2- or 3-digit one, one partial product per digit of the second
    operand (least-significant digit first, each digit product with the carry of the one before), then the partials
    added column by column as tasks.gen_add does (every column lists one digit per partial, the carry last as +c).
    'mul 347*86' -> '347*6: 7*6=42, 4*6+4=28, 3*6+2=20, so 2082; 347*80: 7*8=56, 4*8+5=37, 3*8+3=27, so 27760;
    2082+27760: 2+0=2, 8+6=14, 0+7+1=8, 2+7=9, 0+2=2, answer 29842'. The query always puts the larger operand first
    (a >= b), so a pair has one spelling and the plain query is its split key."""
    b = rng.randint(10, 99) if rng.random() < 0.4 else rng.randint(100, 999)
    a = rng.randint(max(100, b), 999)
    parts, partials = [], []
    for i, dch in enumerate(reversed(str(b))):
        d = int(dch)
        steps, carry, digits = [], 0, []
        for xch in reversed(str(a)):
            x = int(xch)
            p = x * d + carry
            steps.append(f"{x}*{d}" + (f"+{carry}" if carry else "") + f"={p}")
            digits.append(p % 10)
            carry = p // 10
        value = a * d
        assert int((str(carry) if carry else "") + "".join(str(v) for v in reversed(digits))) == value
        shifted = value * 10 ** i
        partials.append(shifted)
        parts.append(f"{a}*{d}{'0' * i}: " + ", ".join(steps) + f", so {shifted}")
    total = a * b
    cols, carry = [], 0
    width = max(len(str(p)) for p in partials)
    rev = [str(p)[::-1] for p in partials]
    out = []
    for j in range(width):
        ds = [int(r[j]) if j < len(r) else 0 for r in rev]
        s = sum(ds) + carry
        cols.append("+".join(map(str, ds)) + (f"+{carry}" if carry else "") + f"={s}")
        out.append(s % 10)
        carry = s // 10
    assert int((str(carry) if carry else "") + "".join(str(v) for v in reversed(out))) == total
    return f"mul {a}*{b}", "; ".join(parts) + "; " + "+".join(map(str, partials)) + ": " + ", ".join(cols) + \
        f", answer {total}"


def gen_sort_long(rng, train=False):
    """Counting sort of 12-24 digits: for each value 0..9 its count in the list and that many copies, then the sorted
    list. 'sort by count: 5 2 9 2 ...' -> '0:0, 1:0, 2:2 2 2, ..., answer 2 2 5 9 ...'. The query starts with
    'sort ', so the split keys it by its digit multiset (tasks.split_key): no order of a held-out multiset is
    trained."""
    n = rng.randint(12, 24)
    xs = [rng.randint(0, 9) for _ in range(n)]
    groups = []
    for v in range(10):
        c = xs.count(v)
        groups.append(f"{v}:{c}" + "".join(f" {v}" for _ in range(c)))
    return "sort by count: " + " ".join(map(str, xs)), ", ".join(groups) + ", answer " + " ".join(map(str, sorted(xs)))


def gen_rev_long(rng, train=False):
    """tasks.gen_rev's reversal with position markers, on 24-50 letters (about 95-200 response tokens; training also
    draws 10-23, a bridge from the short task's 4-9)."""
    n = rng.randint(10, 50) if train else rng.randint(24, 50)
    xs = [rng.choice(tasks.LETTERS) for _ in range(n)]
    items = [f"{i + 1}{c}" for i, c in enumerate(xs)]
    return "reverse " + " ".join(items), " ".join(reversed(items))


def gen_word_long(rng, train=False):
    """A word problem of 8-14 events, worked line by line: each event restated, then its arithmetic on the running
    total (kept in 1..99, at most 9 moved at a time), then the answer sentence of tasks.gen_word's v2 format.
    'Tom has 13 apples, gets 5, gives away 7, ... How many apples does Tom have?' ->
    'How many apples: has 13, gets 5: 13+5=18, gives away 7: 18-7=11, ..., answer Tom has 16 apples.'"""
    name, obj = rng.choice(tasks.NAMES), rng.choice(tasks.OBJECTS)
    start = total = rng.randint(5, 40)
    q_events, steps = [], [f"has {start}"]
    for _ in range(rng.randint(8, 14)):
        if total > 1 and (total >= 91 or rng.random() < 0.5):
            b = rng.randint(1, min(9, total - 1))
            q_events.append(f"gives away {b}")
            steps.append(f"gives away {b}: {total}-{b}={total - b}")
            total -= b
        else:
            b = rng.randint(1, min(9, 99 - total))
            q_events.append(f"gets {b}")
            steps.append(f"gets {b}: {total}+{b}={total + b}")
            total += b
    q = f"{name} has {start} {obj}, " + ", ".join(q_events) + f". How many {obj} does {name} have?"
    return q, f"How many {obj}: " + ", ".join(steps) + f", answer {name} has {total} {obj}."


GENERATORS = {"mul": gen_mul, "sort-long": gen_sort_long, "rev-long": gen_rev_long, "word-long": gen_word_long}


def sample(rng, task, held_out):
    """Rejection-samples a (query, response) of the requested split (tasks.is_held_out)."""
    while True:
        q, r = GENERATORS[task](rng, not held_out)
        if tasks.is_held_out(q) == held_out:
            return q, r


def sample_example(rng, task, k, held_out=False):
    """tasks.sample_example for a long task: k solved examples (always from the training split), then the query."""
    q, r = sample(rng, task, held_out)
    shots = []
    while len(shots) < k:
        s = sample(rng, task, False)
        if s[0] != q:
            shots.append(s)
    return tasks.format_prompt(shots, q), r


if __name__ == "__main__":  # prints one example of each task
    g = random.Random(1)
    for t in LONG_TASKS:
        print(t, *sample(g, t, True), sep="\n  ")
