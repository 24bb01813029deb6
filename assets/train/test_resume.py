# Checks that train.py resumes exactly: a tiny model trained N steps straight, N/2 + resume (--stop-after), and
# stopped by SIGTERM mid-run + resumed, must end with bit-identical weights, optimizer state and loss log. Then the v3
# recipe (long tasks, one --state file with bf16 moments): a resume continues the step count, the data and the LR
# schedule exactly and the loss curve within bf16 rounding of the moments.
# Run: /usr/bin/python3 assets/train/test_resume.py   (about 20 s on one core; not part of CI: CI has no torch)
import os
import signal
import subprocess
import sys
import tempfile
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
N = 40
TINY = ["--family", "dream", "--format", "v2", "--d", "32", "--layers", "2", "--heads", "2", "--ffn", "48",
        "--batch", "4", "--warmup", "5", "--budget-steps", str(N), "--log-every", "1", "--save-every-min", "100",
        "--export-every-min", "100"]


def env():
    e = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    e.pop("OPENBLAS_CORETYPE", None)
    return e


def train(work, *extra, check=True, recipe=TINY):
    cmd = [sys.executable, os.path.join(HERE, "train.py"), *recipe, "--work", work, "--out", work + "/export", *extra]
    r = subprocess.run(cmd, env=env(), capture_output=True, text=True)
    if check and r.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)} exited {r.returncode}:\n{r.stdout}\n{r.stderr}")
    return r


def train_until_sigterm(work, at_step):
    """Starts a run and sends SIGTERM once it has logged at_step steps; returns the step it saved at."""
    cmd = [sys.executable, os.path.join(HERE, "train.py"), *TINY, "--work", work, "--out", work + "/export"]
    p = subprocess.Popen(cmd, env=env(), stdout=subprocess.PIPE, text=True)
    for line in p.stdout:
        if line.startswith("{") and f'"step": {at_step},' in line:
            p.send_signal(signal.SIGTERM)
            break
    out = p.stdout.read()
    if p.wait() != 0 or "(signal" not in out:
        sys.exit(f"FAIL: SIGTERM run did not save on the signal (exit {p.returncode}):\n{out}")
    return int(out.split("saved at step ")[1].split()[0])


def load(work):
    return torch.load(os.path.join(work, "state.pt"))


def same(a, b, what):
    """Bitwise equality: one torch thread, same ops in the same order, so a resumed run has no excuse to differ."""
    if isinstance(a, dict):
        assert a.keys() == b.keys(), what
        for k in a:
            same(a[k], b[k], f"{what}.{k}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), what
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, f"{what}[{i}]")
    elif torch.is_tensor(a):
        if not torch.equal(a, b):
            sys.exit(f"FAIL: {what} differs (max abs diff {(a - b).abs().max().item():.3e})")
    elif a != b:
        sys.exit(f"FAIL: {what}: {a!r} != {b!r}")


N3 = 16
TINY_V3 = ["--family", "llada", "--format", "v3", "--d", "32", "--layers", "2", "--heads", "2", "--ffn", "48",
           "--batch", "4", "--long-batch", "4", "--warmup", "5", "--budget-steps", str(N3), "--log-every", "1",
           "--save-every-min", "100", "--export-every-min", "100"]


def check_v3(tmp):
    """v3: N3 steps straight vs N3/2 + resume, each with its state in one --state file."""
    a, b = os.path.join(tmp, "v3a"), os.path.join(tmp, "v3b")
    fa, fb = os.path.join(tmp, "v3a.pt"), os.path.join(tmp, "v3b.pt")
    train(a, "--state", fa, recipe=TINY_V3)
    train(b, "--state", fb, "--stop-after", str(N3 // 2), recipe=TINY_V3)
    half = torch.load(fb)
    assert half["step"] == N3 // 2, f"v3 --stop-after saved at step {half['step']}"
    moments = [v for s in half["optimizer"]["state"].values() for n, v in s.items() if n.startswith("exp_avg")]
    assert moments and all(m.dtype == torch.bfloat16 for m in moments), "v3 state: moments are not bf16"
    assert all(t.dtype == torch.float32 for t in half["model"].values()), "v3 state: weights are not fp32"
    assert not os.path.exists(os.path.join(b, "state.pt")), "v3 state written beside --state"
    train(b, "--state", fb, recipe=TINY_V3)
    sa, sb = torch.load(fa), torch.load(fb)
    assert sb["step"] == N3 and sb["runs"] == 2, f"v3 resume: step {sb['step']}, runs {sb['runs']}"
    assert [r["step"] for r in sb["log"]] == list(range(1, N3 + 1)), "v3 resume: step counter not continuous"
    same([r["lr"] for r in sa["log"]], [r["lr"] for r in sb["log"]], "v3: LR schedule")
    # The batches (shot count, prompt length, canvas) are the same draws: the data position resumed exactly.
    same([(r["k"], r["lp"], r["gen"]) for r in sa["log"]], [(r["k"], r["lp"], r["gen"]) for r in sb["log"]],
         "v3: batch shapes")
    la, lb = [r["loss_ema"] for r in sa["log"]], [r["loss_ema"] for r in sb["log"]]
    same(la[:N3 // 2], lb[:N3 // 2], "v3: loss curve before the stop")
    # After the stop the moments were rounded to bf16 (relative error 2^-9): the steps' updates differ by about that
    # much, so the loss differs in the third significant digit at most over N3/2 steps of a tiny model; a resume that
    # lost the weights or the optimizer would jump by far more (the loss at step 1 is ~4x the loss at N3).
    worst = max(abs(x - y) / x for x, y in zip(la, lb))
    assert worst < 1e-2, f"v3: loss curve after the resume differs by {worst:.2e} relative"
    # The weights likewise: close to the straight run's (a lost optimizer state would move them by the size of a few
    # updates, ~1e-2 relative at this LR), not necessarily equal.
    wa = torch.cat([v.flatten() for v in sa["model"].values()])
    wb = torch.cat([v.flatten() for v in sb["model"].values()])
    wdiff = ((wa - wb).norm() / wa.norm()).item()
    assert wdiff < 1e-3, f"v3: weights after the resume differ by {wdiff:.2e} relative"
    # Two trainers with different WORK dirs on one --state file: the second is refused.
    sd = os.path.join(tmp, "v3state")
    p = subprocess.Popen([sys.executable, os.path.join(HERE, "train.py"), *TINY_V3, "--work", a + "x", "--out",
                          a + "x/export", "--state", os.path.join(sd, "s.pt"), "--budget-steps", "100000"], env=env(),
                         stdout=subprocess.PIPE, text=True)
    for line in p.stdout:
        if line.startswith("{"):
            break
    r = train(b + "x", "--state", os.path.join(sd, "s.pt"), check=False, recipe=TINY_V3)
    p.send_signal(signal.SIGTERM)
    p.wait()
    assert r.returncode != 0 and "holds the directory" in r.stderr, f"second trainer on one --state: {r.stderr}"
    return worst, wdiff, len(sb["log"]), gen_kinds(sb)


def gen_kinds(st):
    return sorted({r["gen"] for r in st["log"]})


def main():
    t0 = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        a, b, c = (os.path.join(tmp, x) for x in "abc")
        train(a)
        train(b, "--stop-after", str(N // 2))
        half = load(b)
        assert half["step"] == N // 2, f"--stop-after {N // 2} saved at step {half['step']}"
        train(b)
        stopped = train_until_sigterm(c, 7)
        assert 7 <= stopped < N, f"SIGTERM saved at step {stopped}"
        train(c)
        sa, sb, sc = load(a), load(b), load(c)
        for s, name in ((sb, "stop-after + resume"), (sc, "SIGTERM + resume")):
            assert s["step"] == N and s["runs"] == 2, f"{name}: step {s['step']}, runs {s['runs']}"
            same(sa["model"], s["model"], f"{name}: model")
            same(sa["optimizer"], s["optimizer"], f"{name}: optimizer")
            same([r["loss_ema"] for r in sa["log"]], [r["loss_ema"] for r in s["log"]], f"{name}: loss curve")
            same([r["lr"] for r in sa["log"]], [r["lr"] for r in s["log"]], f"{name}: LR schedule")
        # A finished run resumed again trains no further step.
        train(a)
        assert load(a)["step"] == N, "a finished run took more steps"
        # A second trainer on a state directory in use is refused.
        p = subprocess.Popen([sys.executable, os.path.join(HERE, "train.py"), *TINY, "--work", a, "--out", a + "/x",
                              "--budget-steps", "100000"], env=env(), stdout=subprocess.PIPE, text=True)
        for line in p.stdout:
            if line.startswith("{"):
                break
        r = train(a, check=False)
        p.send_signal(signal.SIGTERM)
        p.wait()
        assert r.returncode != 0 and "train.lock" in r.stderr, f"second trainer on one state dir: {r.stderr}"
        # Resuming with another recipe is refused with one line naming the knob.
        r = train(a, "--layers", "3", check=False)
        assert r.returncode != 0 and "--layers" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
        worst, wdiff, n3, gens = check_v3(tmp)
    print(f"PASS: {N} steps straight == {N // 2} + resume == SIGTERM at step {stopped} + resume "
          f"(weights, optimizer, loss curve, LR); v3 {n3} steps (canvases {gens}) straight vs resumed: same steps, "
          f"data and LR, loss within {worst:.1e}, weights within {wdiff:.1e} relative, {time.time() - t0:.0f}s")


if __name__ == "__main__":
    main()
