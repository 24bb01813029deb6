# Trains one built-in model (tiny-llada or tiny-dream) on the synthetic task suite with the LLaDA SFT objective and
# exports it in the family's real checkpoint format. Reproduce: see assets/train/TRAINING.md (one command per model).
import argparse
import fcntl
import json
import math
import os
import random
import signal
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bpe  # noqa: E402
import tasks  # noqa: E402
import tasks_long  # noqa: E402
from family import Family  # noqa: E402
from model import TinyMDLM, export_names, write_safetensors  # noqa: E402

# The shipped v2 runs trained on "v2-plain" data up to V2_WORD_ECHO_FROM_STEP, on "v2-echo" (the word answers restate
# the question's object, tasks.gen_word) up to V2_MIX_FROM_STEP and on v2 (more word problems, less rev) from then
# on (tiny-llada with a stretch of "v2-word", V2_WORD_FOCUS); a run from scratch follows the same stages, so it
# reproduces the shipped models.
V2_WORD_ECHO_FROM_STEP = {"llada": 15950, "dream": 15262}
V2_MIX_FROM_STEP = {"llada": 17185, "dream": 16464}
# tiny-llada then trained on "v2-word" data (word problems at 0.7 of the mix) over these steps [first, last).
V2_WORD_FOCUS = {"llada": (19518, 21018)}
# The shipped models ran on a 24,000-step budget up to the first of V2_LATE_BUDGETS, on 30,000 from then on (tiny-llada
# had not yet learned the word problems' object: TRAINING.md "Data"), then on the lower budgets that ended both runs.
# Segments (first step, budget), a later one replacing an earlier one from its first step on. A run from scratch with
# the shipped budgets (`run_all.sh 24400,23500`) schedules its LR the same way, so it reproduces them; any other budget
# runs a plain schedule over itself.
V2_FIRST_BUDGET_STEPS = 24000
V2_SHIPPED_BUDGET_STEPS = {"llada": 24400, "dream": 23500}
V2_LATE_BUDGETS = {"llada": [(18988, 30000), (23175, 25000), (23523, 24400)],
                   "dream": [(18180, 30000), (22292, 25000), (22513, 24100), (22622, 23500)]}
GEN_LENGTH = 64  # response canvas: the engine's default gen_length (every answer + end token must fit)
# v3 (tasks_long.py): a batch is "long" with this probability, else a v1/v2-style short batch (canvas GEN_LENGTH, batch
# --batch). A long batch has the 256-token canvas and --long-batch examples, of which V3_SHORT_IN_LONG are short tasks
# (so short answers stay right on a 256 canvas) and the rest the four long tasks, uniformly.
V3_LONG_SHARE = 0.6
V3_SHORT_IN_LONG = 0.2
# Shot counts of long batches: a 4-shot long prompt is about 1,000 tokens (4x the response), so it gets a tenth of the
# long batches; 0-1 shots teach the procedures at a third of the cost per example. A k-shot long batch holds
# long_batch_size(k) examples, fewer as the prompt grows (one core of a loaded machine, d 192 x 8 layers: a 16-example
# batch costs 2.2 s at 0 shots and 21 s at 4), so no batch costs more than about three 0-shot ones.
LONG_SHOT_WEIGHTS = [0.45, 0.25, 0.12, 0.08, 0.1]
# Shot-count mix: cheaper short prompts most often (they teach the tasks), but 4-shot prompts, the shape the goals are
# measured on (prompt about 4x the response), get a fifth of the batches so the model learns to find the last query.
SHOT_WEIGHTS = [0.45, 0.15, 0.1, 0.1, 0.2]
# The BPE corpus keeps its own mix so the tokenizer does not change when the training mix is tuned.
TOKENIZER_SHOT_WEIGHTS = [0.55, 0.2, 0.1, 0.1, 0.05]
N_MERGES = 200  # BPE merges at most: 256 bytes + merges + specials stay within a 300-600 token vocabulary


def build_tokenizer(fam, seed):
    rng = random.Random(seed)
    texts = ["system\nYou are a helpful assistant.\nuser\n", "assistant\n\n", "user\n\n"] * 200
    for _ in range(6000):
        t = tasks.pick_task(rng)
        k = rng.choices(range(5), TOKENIZER_SHOT_WEIGHTS)[0]
        p, r = tasks.sample_example(rng, t, k)
        texts += [p, r]
    merges = bpe.train_bpe(texts, N_MERGES)
    return bpe.Tokenizer(merges, fam.specials)


def long_batch_size(long_batch, k):
    return max(4, round(long_batch * 2 / (k + 2)))


def make_batch(rng, fam, tok, batch, fmt="v1", long_batch=16):
    """Returns ids [B, Lp+R], key_valid, targets [B, R], prompt length Lp, shot count k. Prompts are left-padded (RoPE
    is relative, padded keys are masked out, so this equals running each prompt unpadded). R is GEN_LENGTH, or
    tasks_long.LONG_GEN_LENGTH for a v3 long batch."""
    gen, draws = GEN_LENGTH, None
    if fmt == "v3":
        fmt = "v2"  # the short tasks of v3 are v2's
        if rng.random() < V3_LONG_SHARE:
            gen = tasks_long.LONG_GEN_LENGTH
            k = rng.choices(range(5), LONG_SHOT_WEIGHTS)[0]
            batch = long_batch_size(long_batch, k)
            draws = [rng.random() < V3_SHORT_IN_LONG for _ in range(batch)]
    if draws is None:
        k = rng.choices(range(5), SHOT_WEIGHTS)[0]
    eos, end = tok.id(fam.eos), tok.id(fam.end)
    prompts, resps = [], []
    for i in range(batch):
        if draws is None or draws[i]:
            t = tasks.pick_task(rng, fmt)
            p, r = tasks.sample_example(rng, t, k, fmt=fmt)
        else:
            t = rng.choice(tasks_long.LONG_TASKS)
            p, r = tasks_long.sample_example(rng, t, k)
        prompts.append(tok.encode(fam.chat(p)))
        rid = tok.encode(r) + [end]
        assert len(rid) <= gen, f"response too long ({len(rid)} tokens): {r!r}"
        resps.append(rid + [eos] * (gen - len(rid)))
    lp = max(len(p) for p in prompts)
    ids = torch.full((batch, lp + gen), eos, dtype=torch.long)
    valid = torch.ones(batch, lp + gen, dtype=torch.bool)
    for i, p in enumerate(prompts):
        ids[i, lp - len(p):lp] = torch.tensor(p)
        valid[i, :lp - len(p)] = False
    tgt = torch.tensor(resps)
    return ids, valid, tgt, lp, k


def data_format(fmt, family, step):
    """The task format of the training data at this step (V2_WORD_ECHO_FROM_STEP, V2_MIX_FROM_STEP, V2_WORD_FOCUS)."""
    if fmt != "v2":
        return fmt
    if step < V2_WORD_ECHO_FROM_STEP[family]:
        return "v2-plain"
    if step < V2_MIX_FROM_STEP[family]:
        return "v2-echo"
    first, last = V2_WORD_FOCUS.get(family, (0, 0))
    return "v2-word" if first <= step < last else "v2"


def response_logits(model, fam, h, lp, gen=GEN_LENGTH):
    # Dream predicts position i from hidden row i-1 (engine/README.md §c.2 logit shift); LLaDA from row i.
    rows = h[:, lp - 1:lp - 1 + gen] if fam.shift else h[:, lp:lp + gen]
    return model.head(rows)


def atomic_write(path, write):
    """write(tmp_path) then rename over path: a reader (or a crash) sees the old file or the new one, never half."""
    tmp = path + ".tmp"
    write(tmp)
    with open(tmp, "rb") as f:
        os.fsync(f.fileno())
    os.replace(tmp, path)


def write_json(path, obj):
    def w(p):
        with open(p, "w") as f:
            json.dump(obj, f, indent=2)
    atomic_write(path, w)


def export(model, fam, tok, mc, out_dir, meta):
    """The family's checkpoint directory; each file is replaced atomically so the engine never reads a torn file."""
    os.makedirs(out_dir, exist_ok=True)
    atomic_write(os.path.join(out_dir, "model.safetensors"),
                 lambda p: write_safetensors(p, export_names(model, fam.name)))
    write_json(os.path.join(out_dir, "config.json"), fam.config_json(mc, tok, 4096))
    atomic_write(os.path.join(out_dir, "tokenizer.json"), tok.save)
    write_json(os.path.join(out_dir, "tokenizer_config.json"), fam.tokenizer_config(tok))
    write_json(os.path.join(out_dir, "train_meta.json"), meta)


# What a resumed run must share with the run that wrote the state (shape, data, optimiser, seed); the budget may change.
RECIPE_KEYS = ["family", "format", "seed", "batch", "lr", "warmup", "d", "layers", "heads", "kv_heads", "ffn",
               "long_batch"]
# Keys added after states were written: an older state counts as having the default.
RECIPE_DEFAULTS = {"long_batch": 16}


def lr_at(args, step, progress):
    """Linear warmup over args.warmup steps, then cosine from lr to 0.1 lr over the budget (progress in [0, 1])."""
    return args.lr * min(1.0, (step + 1) / args.warmup) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


def schedule_budget_steps(args, step):
    """The step budget the LR schedule runs on at this step (V2_FIRST_BUDGET_STEPS, V2_LATE_BUDGETS); 0 without a
    step budget."""
    if args.format != "v2" or args.budget_steps != V2_SHIPPED_BUDGET_STEPS[args.family]:
        return args.budget_steps
    budget = V2_FIRST_BUDGET_STEPS
    for first, b in V2_LATE_BUDGETS[args.family]:
        if step >= first:
            budget = b
    return budget


def budget_progress(args, step, train_s):
    """Fraction of the budget used: the larger of the step fraction and the training-time fraction."""
    p = 0.0
    if args.budget_steps:
        p = max(p, step / schedule_budget_steps(args, step))
    if args.budget_hours:
        p = max(p, train_s / (args.budget_hours * 3600))
    return p


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description="train (or resume) one built-in model; see TRAINING.md")
    ap.add_argument("--family", required=True, choices=["llada", "dream"])
    ap.add_argument("--out", required=True, help="model directory to export into")
    ap.add_argument("--work", required=True, help="state directory: state.pt (resumed when present) and the log")
    ap.add_argument("--state", default=None,
                    help="state file (default WORK/state.pt): resumed when present, replaced in place at each save")
    ap.add_argument("--moments", choices=["fp32", "bf16"], default=None,
                    help="dtype of the AdamW moments in the state file (default: bf16 for --format v3, else fp32; "
                         "bf16 halves the file, and a resume continues from the rounded moments)")
    ap.add_argument("--format", default="v1", choices=tasks.FORMATS, help="training data format (tasks.py)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--budget-steps", type=int, default=0, help="optimizer steps; the cosine LR runs over it")
    ap.add_argument("--budget-hours", type=float, default=0.0,
                    help="training time (CPU hours of this process, summed over resumes); the cosine LR runs over it")
    ap.add_argument("--stop-after", type=int, default=0,
                    help="stop after N more steps, saving the state (the schedule is not changed)")
    ap.add_argument("--device", default="cpu",
                    help="torch device to train on (cpu, cuda): not part of the recipe, a resume may move; the data "
                         "and the masks are drawn on the CPU either way, so the same state continues the same run")
    ap.add_argument("--pgid-file", default=None,
                    help="write this process's process-group id there (what SIGSTOP/SIGCONT/SIGTERM go to)")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--long-batch", type=int, default=16, help="examples per long batch (--format v3)")
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=0, help="0: llada = heads, dream = heads / 2 (GQA)")
    ap.add_argument("--ffn", type=int, default=344)
    ap.add_argument("--warmup", type=int, default=100, help="linear warmup steps (experiment run B: 100)")
    ap.add_argument("--save-every-min", type=float, default=5.0, help="wall minutes between state saves")
    ap.add_argument("--export-every-min", type=float, default=15.0, help="wall minutes between exports to --out")
    ap.add_argument("--log-every", type=int, default=50)
    args = ap.parse_args(argv)
    if args.budget_steps <= 0 and args.budget_hours <= 0:
        ap.error("give a budget: --budget-steps N and/or --budget-hours H")
    if args.d % args.heads:
        ap.error(f"--d {args.d} is not a multiple of --heads {args.heads}")
    if args.moments is None:
        args.moments = "bf16" if args.format == "v3" else "fp32"
    if not args.kv_heads:
        args.kv_heads = args.heads if args.family == "llada" else max(1, args.heads // 2)
    if args.heads % args.kv_heads:
        ap.error(f"--heads {args.heads} is not a multiple of --kv-heads {args.kv_heads}")
    return args


class StopFlag:
    """SIGTERM/SIGINT end the run at the next step boundary, after saving the state (no half-applied step)."""
    def __init__(self):
        self.signal = None
        for s in (signal.SIGTERM, signal.SIGINT):
            signal.signal(s, self._handle)

    def _handle(self, signum, frame):
        self.signal = signum


def yield_to_other_sessions():
    """A trainer started with setsid leads its own scheduler autogroup, and with autogroups on, nice orders processes
    only within a group: measured here, two setsid trainers at nice 19 took 65% of a core each beside builds at
    nice 10. Lowering the autogroup's own priority (only this process's group) makes them take idle time only."""
    if os.getsid(0) != os.getpid():
        return
    try:
        with open("/proc/self/autogroup", "w") as f:
            f.write("19")
    except OSError:
        pass  # no autogroups (kernel without them, or not permitted): nice alone applies


def main(argv=None):
    args = parse_args(argv)
    yield_to_other_sessions()
    stop = StopFlag()
    if args.pgid_file:
        write_json(args.pgid_file, os.getpgid(0))
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    fam = Family(args.family)
    os.makedirs(args.work, exist_ok=True)
    # One trainer per state directory: two would both resume from state.pt and overwrite each other's saves.
    lock = open(os.path.join(args.work, "train.lock"), "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        sys.exit(f"train.py: another trainer holds {args.work}/train.lock (stop it first: kill -TERM <its pid>)")
    if args.state:
        os.makedirs(os.path.dirname(os.path.abspath(args.state)), exist_ok=True)
        # A --state file outside WORK could be shared by trainers with different WORK dirs: lock its directory too
        # (the file itself is replaced by a rename at each save, so a lock on it would not last).
        state_dir = os.open(os.path.dirname(os.path.abspath(args.state)) or ".", os.O_RDONLY)
        try:
            fcntl.flock(state_dir, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            sys.exit(f"train.py: another trainer holds the directory of {args.state} (stop it first)")
    # The tokenizer corpus is always v1 data with its own seed: every format and family gets the shipped vocabulary.
    tok = build_tokenizer(fam, seed=1000 + 0)
    mc = {"d": args.d, "n_layers": args.layers, "n_heads": args.heads, "n_kv_heads": args.kv_heads,
          "head_dim": args.d // args.heads, "ffn": args.ffn, "vocab": len(tok),
          "eps": 1e-5 if fam.name == "llada" else 1e-6, "rope_theta": 10000.0, "qkv_bias": fam.name == "dream"}
    dev = torch.device(args.device)
    model = TinyMDLM(mc).to(dev)  # initialised on the CPU (seeded), then moved
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), eps=1e-8)
    rng = random.Random(args.seed)
    recipe = {k: getattr(args, k) for k in RECIPE_KEYS}
    state_path = args.state or os.path.join(args.work, "state.pt")
    # Loss EMA per response canvas: a long batch's loss is averaged over a 256-token canvas of mostly padding, so its
    # scale differs from a short batch's; the overall loss_ema mixes both.
    ema_by_gen = {}
    step, train_s, wall_s, ema, log, runs = 0, 0.0, 0.0, None, [], 0
    if os.path.exists(state_path):
        try:
            st = torch.load(state_path, map_location="cpu")
            st["recipe"], st["model"], st["optimizer"]  # noqa: B018 (a state from another tool fails here, not later)
        except Exception as e:  # one line, not a traceback: the file is the user's to move away or delete
            sys.exit(f"train.py: cannot resume from {state_path}: {type(e).__name__}: {e}")
        for k in RECIPE_KEYS:
            if st["recipe"].get(k, RECIPE_DEFAULTS.get(k)) != recipe[k]:
                sys.exit(f"train.py: {state_path} was trained with --{k.replace('_', '-')} {st['recipe'].get(k)}, the "
                         f"command line says {recipe[k]} (resuming needs the same recipe; use another --work to "
                         f"start over)")
        model.load_state_dict(st["model"])
        opt.load_state_dict(st["optimizer"])
        rng.setstate(st["py_rng"])
        torch.set_rng_state(st["torch_rng"])
        step, train_s, wall_s, ema, log = st["step"], st["train_s"], st["wall_s"], st["loss_ema"], st["log"]
        runs = st.get("runs", 0)
        ema_by_gen = st.get("loss_ema_by_gen", {})
        if (st["budget_steps"], st["budget_hours"]) != (args.budget_steps, args.budget_hours):
            print(f"note: budget changed from steps {st['budget_steps']} / hours {st['budget_hours']} to steps "
                  f"{args.budget_steps} / hours {args.budget_hours}; the LR schedule follows the new budget",
                  flush=True)
        print(f"resumed {state_path}: step {step}, {train_s / 3600:.2f} h of training, run {runs + 1}",
              flush=True)
    runs += 1
    print(f"family={fam.name} format={args.format} vocab={len(tok)} params={model.n_params()} cfg={mc}", flush=True)

    def meta(final):
        return {"step": step, "train_hours": round(train_s / 3600, 4), "wall_hours": round(wall_s / 3600, 4),
                "runs": runs, "final": final, "loss_ema": ema, "budget_steps": args.budget_steps,
                "budget_hours": args.budget_hours, "args": vars(args), "log": log}

    def save_state():
        # Everything on the CPU, so that a state written on any device resumes on any other. bf16 moments:
        # load_state_dict casts them back to the parameters' fp32.
        moment = torch.bfloat16 if args.moments == "bf16" else torch.float32
        osd = opt.state_dict()
        osd = {"state": {i: {n: (v.to("cpu", moment) if n in ("exp_avg", "exp_avg_sq") else
                                 v.cpu() if torch.is_tensor(v) else v)
                             for n, v in s.items()} for i, s in osd["state"].items()},
               "param_groups": osd["param_groups"]}
        weights = {n: v.cpu() for n, v in model.state_dict().items()}
        st = {"recipe": recipe, "model": weights, "optimizer": osd, "py_rng": rng.getstate(),
              "torch_rng": torch.get_rng_state(), "step": step, "train_s": train_s, "wall_s": wall_s,
              "loss_ema": ema, "loss_ema_by_gen": ema_by_gen, "log": log, "runs": runs,
              "budget_steps": args.budget_steps,
              "budget_hours": args.budget_hours, "mc": mc}
        atomic_write(state_path, lambda p: torch.save(st, p))
        print(f"state saved at step {step}", flush=True)

    mask_id = tok.id(fam.mask)
    last_save = last_export = time.time()
    steps_this_run = 0
    while True:
        progress = budget_progress(args, step, train_s)
        if progress >= 1.0 or stop.signal is not None:
            break
        if args.stop_after and steps_this_run >= args.stop_after:
            break
        c0, w0 = time.process_time(), time.time()
        lr = lr_at(args, step, progress)
        for g in opt.param_groups:
            g["lr"] = lr
        ids, valid, tgt, lp, k = make_batch(rng, fam, tok, args.batch, data_format(args.format, fam.name, step),
                                            args.long_batch)
        B, R = tgt.shape
        t = torch.rand(B, 1) * (1 - 1e-3) + 1e-3  # t ~ U(1e-3, 1]
        masked = torch.rand(B, R) < t
        ids, valid, tgt, t, masked = (v.to(dev) for v in (ids, valid, tgt, t, masked))
        x = ids.clone()
        x[:, lp:] = torch.where(masked, torch.full_like(tgt, mask_id), tgt)
        h = model.hidden(x, valid)
        logits = response_logits(model, fam, h, lp, R)
        ce = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt.reshape(-1), reduction="none").view(B, -1)
        loss = (ce * masked / t).sum() / (B * R)  # LLaDA SFT: CE/t over masked response tokens
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        steps_this_run += 1
        # Training time is this process's CPU time: on a shared machine at nice 19, wall time mostly measures others.
        train_s += time.process_time() - c0
        wall_s += time.time() - w0
        ema = loss.item() if ema is None else 0.98 * ema + 0.02 * loss.item()
        ema_by_gen[R] = loss.item() if R not in ema_by_gen else 0.98 * ema_by_gen[R] + 0.02 * loss.item()
        if step % args.log_every == 0:
            rec = {"step": step, "train_h": round(train_s / 3600, 4), "wall_h": round(wall_s / 3600, 4), "lr": lr,
                   "loss_ema": round(ema, 4), "k": k, "lp": lp, "gen": R}
            if args.format == "v3":
                rec["loss_ema_by_gen"] = {g: round(v, 4) for g, v in sorted(ema_by_gen.items())}
            log.append(rec)
            print(json.dumps(rec), flush=True)
        now = time.time()
        if now - last_save > args.save_every_min * 60:
            last_save = now
            save_state()
        if now - last_export > args.export_every_min * 60:
            last_export = now
            export(model, fam, tok, mc, args.out, meta(False))
            print(f"exported at step {step}", flush=True)
    done = budget_progress(args, step, train_s) >= 1.0
    save_state()
    export(model, fam, tok, mc, args.out, meta(done))
    why = "budget reached" if done else (f"signal {stop.signal}" if stop.signal is not None else "--stop-after")
    ema_s = "n/a" if ema is None else f"{ema:.4f}"
    print(f"saved at step {step} ({why}): {train_s / 3600:.3f} h training time, loss_ema {ema_s}", flush=True)


if __name__ == "__main__":
    main()
