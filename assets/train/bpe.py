# Byte-level BPE for the built-in models: a small trainer (digits are never merged), an encoder that matches the HF
# tokenizers pipeline (added tokens first, Qwen2 split regex, byte-to-unicode, merges by rank) and tokenizer.json export.
import json
import re
from collections import Counter

# Qwen2's pre-tokenizer regex (Split, behavior Isolated). \p{N} matches ONE digit, so digits are always their own
# pre-token and can never be merged. Written to tokenizer.json verbatim.
HF_SPLIT_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
                  r"\s*[\r\n]+|\s+(?!\S)|\s+")
# The same regex for ASCII text in Python's re module (no \p classes); every text we encode is asserted ASCII.
_ASCII_SPLIT = re.compile(r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\nA-Za-z0-9]?[A-Za-z]+|[0-9]| ?[^\sA-Za-z0-9]+[\r\n]*|"
                          r"\s*[\r\n]+|\s+(?!\S)|\s+")


def bytes_to_unicode():
    """GPT-2's reversible byte -> printable unicode character map."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\xa1"), ord("\xac") + 1)) + \
        list(range(ord("\xae"), ord("\xff") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


B2U = bytes_to_unicode()
U2B = {v: k for k, v in B2U.items()}


def pre_tokenize(text):
    assert text.isascii(), "built-in tokenizer trainer handles ASCII text only"
    return [m.group(0) for m in _ASCII_SPLIT.finditer(text)]


def to_symbols(pre_token):
    return tuple(B2U[b] for b in pre_token.encode("utf-8"))


def train_bpe(texts, n_merges):
    """Classic BPE over pre-token frequencies. Pairs containing a digit are never merged (the regex already isolates
    digits; this is a second guard)."""
    words = Counter()
    for t in texts:
        for p in pre_tokenize(t):
            words[to_symbols(p)] += 1
    words = dict(words)
    merges = []
    for _ in range(n_merges):
        pairs = Counter()
        for w, c in words.items():
            for a, b in zip(w, w[1:]):
                if any(ch.isdigit() for ch in a + b):
                    continue
                pairs[(a, b)] += c
        if not pairs:
            break
        best = max(pairs.items(), key=lambda kv: (kv[1], kv[0]))[0]
        if pairs[best] < 2:
            break
        merges.append(best)
        new_words = {}
        for w, c in words.items():
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and (w[i], w[i + 1]) == best:
                    out.append(w[i] + w[i + 1])
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            new_words[tuple(out)] = new_words.get(tuple(out), 0) + c
        words = new_words
    return merges


class Tokenizer:
    def __init__(self, merges, specials):
        self.merges = list(merges)
        self.vocab = {}
        for b in range(256):
            self.vocab[B2U[b]] = b
        for a, b in self.merges:
            self.vocab.setdefault(a + b, len(self.vocab))
        self.n_bpe = len(self.vocab)
        self.specials = list(specials)
        for s in self.specials:
            self.vocab[s] = len(self.vocab)
        self.inv = {i: s for s, i in self.vocab.items()}
        self.rank = {m: i for i, m in enumerate(self.merges)}
        self._cache = {}
        self._special_re = re.compile("(" + "|".join(re.escape(s) for s in sorted(specials, key=len, reverse=True)) + ")")

    def __len__(self):
        return len(self.vocab)

    def _bpe(self, pre_token):
        if pre_token in self._cache:
            return self._cache[pre_token]
        w = list(to_symbols(pre_token))
        while len(w) > 1:
            best, bi = None, -1
            for i in range(len(w) - 1):
                r = self.rank.get((w[i], w[i + 1]))
                if r is not None and (best is None or r < best):
                    best, bi = r, i
            if best is None:
                break
            a, b = self.merges[best]
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and w[i] == a and w[i + 1] == b:
                    out.append(a + b)
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            w = out
        ids = [self.vocab[s] for s in w]
        self._cache[pre_token] = ids
        return ids

    def encode(self, text):
        ids = []
        for part in self._special_re.split(text):
            if not part:
                continue
            if part in self.specials:
                ids.append(self.vocab[part])
                continue
            for p in pre_tokenize(part):
                ids.extend(self._bpe(p))
        return ids

    def decode(self, ids, skip_special=True):
        out = bytearray()
        for i in ids:
            s = self.inv[i]
            if s in self.specials:
                if not skip_special:
                    out.extend(s.encode())
                continue
            out.extend(U2B[c] for c in s)
        return out.decode("utf-8", errors="replace")

    def id(self, s):
        return self.vocab[s]

    def to_hf_json(self):
        added = [{"id": self.vocab[s], "content": s, "single_word": False, "lstrip": False, "rstrip": False,
                  "normalized": False, "special": True} for s in self.specials]
        bpe_vocab = {s: i for s, i in self.vocab.items() if i < self.n_bpe}
        return {
            "version": "1.0",
            "truncation": None,
            "padding": None,
            "added_tokens": added,
            "normalizer": None,
            "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
                {"type": "Split", "pattern": {"Regex": HF_SPLIT_REGEX}, "behavior": "Isolated", "invert": False},
                {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}]},
            "post_processor": None,
            "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
            "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                      "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                      "vocab": bpe_vocab, "merges": [f"{a} {b}" for a, b in self.merges]},
        }

    def save(self, path):
        with open(path, "w") as f:
            json.dump(self.to_hf_json(), f, ensure_ascii=False, indent=1)


def load_hf_json(path):
    """Rebuilds a Tokenizer from a tokenizer.json written by save(); checks the ids round-trip."""
    with open(path) as f:
        j = json.load(f)
    merges = [tuple(m.split(" ")) for m in j["model"]["merges"]]
    specials = [a["content"] for a in sorted(j["added_tokens"], key=lambda a: a["id"])]
    tok = Tokenizer(merges, specials)
    for s, i in j["model"]["vocab"].items():
        assert tok.vocab[s] == i, f"{path}: token {s!r} id {i} != rebuilt {tok.vocab[s]}"
    for a in j["added_tokens"]:
        assert tok.vocab[a["content"]] == a["id"]
    return tok
