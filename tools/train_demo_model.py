#!/usr/bin/python3
"""Trains strata's bundled demo model: a small Llama on the King James Bible.

What it does, in order (seeded throughout; see Usage for what the time budget varies):
  1. Corpus. Dumps the King James Version with Debian's `bible` tool
     (packages bible-kjv + bible-kjv-text; installed with apt-get when
     missing). The KJV text is in the public domain (Debian's copyright file:
     "The copyright for the King James Version text of the Bible is expired").
     One verse per line, verse numbers and chapter headings dropped. Every
     40th chapter (chapter index % 40 == 20, 30 chapters spread over the whole
     book) is held out: it is never trained on, the held-out loss is measured
     on it, and the tokenizer parity test encodes it.
  2. Tokenizer. A byte-level BPE trained here on the training split: 256
     byte tokens (GPT-2's byte-to-character map), merges until 4,095 tokens,
     then <|endoftext|> (id 4095, special, EOS; never trained on). Exported as
     a Hugging Face tokenizer.json: BPE model, ByteLevel pre-tokenizer with the
     GPT-2 split regex, ByteLevel decoder. The corpus is ASCII, so the regex
     below (ASCII classes for \\p{L} and \\p{N}) splits it exactly as GPT-2's.
  3. Model. Llama architecture as llama.cpp runs it: RMSNorm (eps 1e-5),
     grouped-query attention with RoPE on adjacent pairs (2i, 2i+1: llama.cpp's
     "normal" rope for arch "llama"), SiLU-gated FFN, no biases, untied output.
     Because the rope pairs are adjacent, q/k weights are written as trained
     (no NeoX permutation).
  4. Training. AdamW, warmup + cosine decay, random windows of the training
     token stream, float32 on the CPU.
  5. Export. Writes the weights as a strata weights file (see
     tools/mkmodel/weights_file.h: u64 header length, JSON header, raw f32
     data) and runs `strata-mkmodel --weights ... --type f16` to write the GGUF
     through the project's writer.
  6. References for tests/demo: logits of the PyTorch model run with the
     F16-rounded weights (what the GGUF holds) for a few prompts, and greedy
     continuations.

Usage (2 shared cores: about 55 minutes), as models/default.gguf was made:
  nice -n 10 /usr/bin/python3 tools/train_demo_model.py --mkmodel build/strata-mkmodel
  (defaults: --steps 1000 --time-budget-min 48; the committed run used
  --work-dir build-demo/train)
  (cmake --build build --target strata-mkmodel first). With a time budget the
  learning-rate schedule follows wall time on a busy machine, so the step count
  (in the log) and the weights vary between runs; without one (--steps N
  --time-budget-min 0) the run is a pure function of the seed up to
  floating-point threading order. PyTorch from Debian (python3-torch) uses the system BLAS: install
  libopenblas0-pthread, or Debian's reference BLAS makes training ~10x slower.
The committed models/default.gguf (run log: models/default.train.log): 503
steps of 8 x 256 tokens (1.03M tokens, about one epoch) in 48.0 minutes on 2
cores shared with other jobs; loss: train 3.85, held-out 4.06 (perplexity 58).
Only redo the export and references from a saved checkpoint:
  /usr/bin/python3 tools/train_demo_model.py --export-only --mkmodel build/strata-mkmodel
"""
import argparse
import json
import math
import os
import re
import shutil
import struct
import subprocess
import time
from collections import Counter, defaultdict

import torch
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# ---------------------------------------------------------------- corpus ----

BIBLE_DATA = "/usr/lib/bible.data"
HELDOUT_EVERY = 40
HELDOUT_PHASE = 20


def ensure_corpus_installed():
    if os.path.exists(BIBLE_DATA) and shutil.which("bible"):
        return
    cmd = ["apt-get", "install", "-y", "bible-kjv", "bible-kjv-text"]
    if os.geteuid() != 0:
        cmd = ["sudo"] + cmd
    print("installing the corpus:", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)


def read_chapters():
    """Returns [(title, [verse text, ...])] for the whole KJV, in order."""
    ensure_corpus_installed()
    raw = subprocess.run(
        ["bible", "-p", os.path.dirname(BIBLE_DATA), "-d", os.path.basename(BIBLE_DATA),
         "gen1:1-rev22:21"], check=True, capture_output=True).stdout.decode("ascii")
    chapters = []
    verse = None
    prev_blank = True
    for line in raw.split("\n"):
        if not line.strip():
            prev_blank = True
            continue
        m = re.match(r"^ +\d+ (.*)$", line)
        if m:
            verse = [m.group(1).strip()]
            chapters[-1][1].append(verse)
        elif prev_blank and not line.startswith(" "):
            chapters.append((line.strip(), []))
            verse = None
        else:
            if verse is None:
                raise ValueError("bible output: text outside a verse: " + line)
            verse.append(line.strip())
        prev_blank = False
    out = [(title, [" ".join(v) for v in verses]) for title, verses in chapters]
    if len(out) != 1189:
        raise ValueError("expected 1189 chapters, got %d" % len(out))
    return out


def split_corpus(chapters):
    train, heldout = [], []
    for i, (_, verses) in enumerate(chapters):
        text = "".join(v + "\n" for v in verses)
        (heldout if i % HELDOUT_EVERY == HELDOUT_PHASE else train).append(text)
    return "".join(train), "".join(heldout)


# ------------------------------------------------------------- tokenizer ----

# GPT-2's split regex, 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+,
# with ASCII classes: the corpus is ASCII (read_chapters decodes it as such).
SPLIT_RE = re.compile(
    r"""'s|'t|'re|'ve|'m|'ll|'d| ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]+|\s+(?!\S)|\s+""")
EOT = "<|endoftext|>"


def byte_to_char():
    """GPT-2's byte-level alphabet: printable bytes map to themselves, the
    rest to U+0100 onwards in byte order."""
    keep = set(range(ord("!"), ord("~") + 1)) | set(range(0xA1, 0xAD)) | set(range(0xAE, 0x100))
    table, extra = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


class Bpe:
    def __init__(self, pieces, merges):
        self.pieces = pieces  # id -> byte-level string
        self.merges = merges  # [(left id, right id)] in rank order
        self.ids = {p: i for i, p in enumerate(pieces)}
        self.ranks = {}
        for r, (a, b) in enumerate(merges):
            self.ranks.setdefault((a, b), (r, self.ids[pieces[a] + pieces[b]]))
        self.b2c = byte_to_char()
        self.cache = {}

    @staticmethod
    def train(text, vocab_size):
        """Merges the most frequent adjacent pair (ties: smallest ids) until
        the vocabulary holds vocab_size - 1 pieces (the last id is EOT)."""
        b2c = byte_to_char()
        pieces = [b2c[b] for b in range(256)]
        ids = {p: i for i, p in enumerate(pieces)}
        word_counts = Counter(SPLIT_RE.findall(text))
        words = [list(w.encode("ascii")) for w in word_counts]
        counts = list(word_counts.values())
        pair_counts = Counter()
        where = defaultdict(set)
        for wi, w in enumerate(words):
            for p in zip(w, w[1:]):
                pair_counts[p] += counts[wi]
                where[p].add(wi)
        merges = []
        while len(pieces) < vocab_size - 1 and pair_counts:
            best = max(pair_counts, key=lambda p: (pair_counts[p], -p[0], -p[1]))
            if pair_counts[best] < 2:
                break
            a, b = best
            merged = pieces[a] + pieces[b]
            new_id = ids.get(merged)
            if new_id is None:
                new_id = len(pieces)
                pieces.append(merged)
                ids[merged] = new_id
            merges.append(best)
            for wi in list(where[best]):
                w = words[wi]
                c = counts[wi]
                out, i, changed = [], 0, False
                while i < len(w):
                    if i + 1 < len(w) and w[i] == a and w[i + 1] == b:
                        out.append(new_id)
                        i += 2
                        changed = True
                    else:
                        out.append(w[i])
                        i += 1
                if not changed:
                    continue
                for p in zip(w, w[1:]):
                    pair_counts[p] -= c
                    if pair_counts[p] <= 0:
                        del pair_counts[p]
                for p in zip(out, out[1:]):
                    pair_counts[p] += c
                    where[p].add(wi)
                words[wi] = out
            where.pop(best, None)
            pair_counts.pop(best, None)
        pieces.append(EOT)
        return Bpe(pieces, merges)

    def encode_word(self, word):
        ids = self.cache.get(word)
        if ids is not None:
            return ids
        w = [self.ids[self.b2c[b]] for b in word.encode("utf-8")]
        while len(w) > 1:
            best = min(((self.ranks.get(p, (1 << 30, 0)), i) for i, p in enumerate(zip(w, w[1:]))))
            (rank, new_id), _ = best
            if rank == 1 << 30:
                break
            a, b = self.merges[rank]
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and w[i] == a and w[i + 1] == b:
                    out.append(new_id)
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            w = out
        self.cache[word] = w
        return w

    def encode(self, text):
        out = []
        for word in SPLIT_RE.findall(text):
            out.extend(self.encode_word(word))
        return out

    def decode(self, ids):
        c2b = {c: b for b, c in self.b2c.items()}
        return bytes(c2b[ch] for i in ids if self.pieces[i] != EOT
                     for ch in self.pieces[i]).decode("utf-8", errors="replace")

    def to_hf_json(self):
        eot_id = len(self.pieces) - 1
        vocab = {p: i for i, p in enumerate(self.pieces[:-1]) if self.ids[p] == i}
        return {
            "version": "1.0",
            "truncation": None,
            "padding": None,
            "added_tokens": [{"id": eot_id, "content": EOT, "single_word": False, "lstrip": False,
                              "rstrip": False, "normalized": False, "special": True}],
            "normalizer": None,
            "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                              "use_regex": True},
            "post_processor": None,
            "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                        "use_regex": True},
            "model": {"type": "BPE", "dropout": None, "unk_token": None,
                      "continuing_subword_prefix": None, "end_of_word_suffix": None,
                      "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                      "vocab": vocab,
                      "merges": [[self.pieces[a], self.pieces[b]] for a, b in self.merges]},
        }


# ----------------------------------------------------------------- model ----

class Config:
    def __init__(self, **kw):
        self.vocab_size = 4096
        self.hidden = 256
        self.num_layers = 6
        self.num_heads = 8
        self.num_kv_heads = 2
        self.ffn = 704
        self.context_length = 256
        self.rope_base = 10000.0
        self.rms_eps = 1e-5
        self.__dict__.update(kw)

    @property
    def head_dim(self):
        return self.hidden // self.num_heads


def rms_norm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def rope_tables(cfg, n, dtype):
    """cos, sin of [n, head_dim / 2]: pair i of position p turns by
    p * base^(-2i / head_dim)."""
    inv = cfg.rope_base ** (-torch.arange(0, cfg.head_dim, 2, dtype=torch.float64) / cfg.head_dim)
    ang = torch.arange(n, dtype=torch.float64)[:, None] * inv[None, :]
    return ang.cos().to(dtype), ang.sin().to(dtype)


def apply_rope(x, cos, sin):
    # x: [batch, heads, n, head_dim]; rotates adjacent pairs (2i, 2i + 1).
    x2 = x.reshape(*x.shape[:-1], -1, 2)
    x0, x1 = x2[..., 0], x2[..., 1]
    return torch.stack((x0 * cos - x1 * sin, x0 * sin + x1 * cos), dim=-1).flatten(-2)


class DemoLlama(torch.nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        d, hd = cfg.hidden, cfg.head_dim
        P = torch.nn.Parameter
        self.token_embd = P(torch.empty(cfg.vocab_size, d))
        self.layers = torch.nn.ModuleList()
        for _ in range(cfg.num_layers):
            layer = torch.nn.ParameterDict({
                "attn_norm": P(torch.ones(d)),
                "attn_q": P(torch.empty(cfg.num_heads * hd, d)),
                "attn_k": P(torch.empty(cfg.num_kv_heads * hd, d)),
                "attn_v": P(torch.empty(cfg.num_kv_heads * hd, d)),
                "attn_output": P(torch.empty(d, cfg.num_heads * hd)),
                "ffn_norm": P(torch.ones(d)),
                "ffn_gate": P(torch.empty(cfg.ffn, d)),
                "ffn_up": P(torch.empty(cfg.ffn, d)),
                "ffn_down": P(torch.empty(d, cfg.ffn)),
            })
            self.layers.append(layer)
        self.output_norm = P(torch.ones(d))
        self.output = P(torch.empty(cfg.vocab_size, d))
        std = 0.02
        for name, p in self.named_parameters():
            if p.dim() == 2:
                scale = 1.0 / math.sqrt(2 * cfg.num_layers) if name.endswith(
                    ("attn_output", "ffn_down")) else 1.0
                torch.nn.init.normal_(p, 0.0, std * scale)

    def forward(self, ids):
        # ids: [batch, n] -> logits [batch, n, vocab]
        cfg = self.cfg
        bsz, n = ids.shape
        hd, nh, nkv = cfg.head_dim, cfg.num_heads, cfg.num_kv_heads
        cos, sin = rope_tables(cfg, n, self.token_embd.dtype)
        mask = torch.full((n, n), float("-inf"), dtype=self.token_embd.dtype).triu(1)
        x = self.token_embd[ids]
        for L in self.layers:
            h = rms_norm(x, L["attn_norm"], cfg.rms_eps)
            q = (h @ L["attn_q"].t()).view(bsz, n, nh, hd).transpose(1, 2)
            k = (h @ L["attn_k"].t()).view(bsz, n, nkv, hd).transpose(1, 2)
            v = (h @ L["attn_v"].t()).view(bsz, n, nkv, hd).transpose(1, 2)
            q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
            # Query head j reads kv head j // (nh / nkv), as llama.cpp does.
            k = k.repeat_interleave(nh // nkv, dim=1)
            v = v.repeat_interleave(nh // nkv, dim=1)
            att = (q @ k.transpose(-1, -2)) / math.sqrt(hd) + mask
            o = (att.softmax(-1) @ v).transpose(1, 2).reshape(bsz, n, nh * hd)
            x = x + o @ L["attn_output"].t()
            h = rms_norm(x, L["ffn_norm"], cfg.rms_eps)
            x = x + (F.silu(h @ L["ffn_gate"].t()) * (h @ L["ffn_up"].t())) @ L["ffn_down"].t()
        return rms_norm(x, self.output_norm, cfg.rms_eps) @ self.output.t()

    def gguf_tensors(self):
        """(GGUF name, tensor) in file order."""
        out = [("token_embd.weight", self.token_embd), ("output_norm.weight", self.output_norm),
               ("output.weight", self.output)]
        for i, L in enumerate(self.layers):
            for key in ["attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm",
                        "ffn_gate", "ffn_up", "ffn_down"]:
                out.append(("blk.%d.%s.weight" % (i, key), L[key]))
        return out


# -------------------------------------------------------------- training ----

def lr_at(step, progress, peak, warmup):
    """Linear warmup over `warmup` steps, then cosine decay to peak / 10 as
    progress (fraction of the run done) goes to 1."""
    if step < warmup:
        return peak * (step + 1) / warmup
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, progress))))


@torch.no_grad()
def eval_loss(model, tokens, seq_len, max_windows=None):
    n = (len(tokens) - 1) // seq_len
    if max_windows:
        n = min(n, max_windows)
    total, count = 0.0, 0
    for s in range(0, n, 8):
        rows = range(s, min(n, s + 8))
        x = torch.stack([tokens[r * seq_len:(r + 1) * seq_len] for r in rows])
        y = torch.stack([tokens[r * seq_len + 1:(r + 1) * seq_len + 1] for r in rows])
        logits = model(x)
        total += F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1),
                                 reduction="sum").item()
        count += y.numel()
    return total / count


def train(model, train_tokens, heldout_tokens, args, log):
    gen = torch.Generator().manual_seed(args.seed + 1)
    decay = [p for p in model.parameters() if p.dim() == 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), eps=1e-8)
    t0 = time.time()
    running = None
    budget_s = args.time_budget_min * 60
    steps_done = 0
    for step in range(args.steps):
        # With a time budget the schedule follows whichever runs out first,
        # steps or time (on a shared machine the step count then varies; the
        # log records it).
        progress = step / args.steps
        if budget_s > 0:
            progress = max(progress, (time.time() - t0) / budget_s)
            if progress >= 1.0:
                log("time budget reached after %d steps" % step)
                break
        for g in opt.param_groups:
            g["lr"] = lr_at(step, progress, args.lr, args.warmup)
        starts = torch.randint(0, len(train_tokens) - args.seq_len - 1, (args.batch,),
                               generator=gen)
        x = torch.stack([train_tokens[s:s + args.seq_len] for s in starts.tolist()])
        y = torch.stack([train_tokens[s + 1:s + args.seq_len + 1] for s in starts.tolist()])
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        steps_done += 1
        running = loss.item() if running is None else 0.98 * running + 0.02 * loss.item()
        if step % 10 == 0 or step == args.steps - 1:
            msg = "step %5d/%d  loss %.4f (avg %.4f)  lr %.2e  %.1fs" % (
                step, args.steps, loss.item(), running, opt.param_groups[0]["lr"],
                time.time() - t0)
            if step % 50 == 0 and step > 0:
                msg += "  held-out %.4f" % eval_loss(model, heldout_tokens, args.seq_len, 16)
            log(msg)
    return time.time() - t0, steps_done


# ---------------------------------------------------------------- export ----

def write_weights_file(path, cfg, tensors, name):
    """strata weights file v1 (tools/mkmodel/weights_file.h): u64 LE header
    length, the JSON header, then each tensor's f32 LE data at its offset
    (relative to the data start, 32-byte aligned)."""
    entries, offset = [], 0
    for tname, t in tensors:
        nbytes = t.numel() * 4
        entries.append({"name": tname, "shape": list(t.shape), "dtype": "f32", "offset": offset})
        offset += (nbytes + 31) // 32 * 32
    header = {
        "format": "strata-weights-v1",
        "architecture": "llama",
        "name": name,
        "context_length": cfg.context_length,
        "embedding_length": cfg.hidden,
        "block_count": cfg.num_layers,
        "feed_forward_length": cfg.ffn,
        "head_count": cfg.num_heads,
        "head_count_kv": cfg.num_kv_heads,
        "rope_freq_base": cfg.rope_base,
        "rms_norm_eps": cfg.rms_eps,
        "tensors": entries,
    }
    hbytes = json.dumps(header, indent=1).encode("utf-8")
    with open(path + ".tmp", "wb") as f:
        f.write(struct.pack("<Q", len(hbytes)))
        f.write(hbytes)
        for (tname, t), e in zip(tensors, entries):
            data = t.detach().to(torch.float32).contiguous().numpy().astype("<f4").tobytes()
            f.write(data)
            f.write(b"\0" * ((len(data) + 31) // 32 * 32 - len(data)))
    os.replace(path + ".tmp", path)


def f16_rounded_copy(model):
    """The model as the F16 GGUF holds it: 2-D weights rounded to binary16,
    norm weights kept in f32."""
    import copy
    m = copy.deepcopy(model)
    with torch.no_grad():
        for p in m.parameters():
            if p.dim() == 2:
                p.copy_(p.half().float())
    return m


REF_PROMPTS = ["And God said", "In the beginning", "The LORD is my shepherd; I shall not"]


def write_references(model, bpe, heldout_text, out_dir, num_greedy, log):
    """tests/data/demo/reference.json + reference.logits.f32 ([rows][vocab],
    float32 LE). Each case: token ids fed from position 0 (no BOS), the rows
    whose logits are stored (position i = logits after ids[0..i]), and for
    prompts the greedy continuation with its top-2 logit margins."""
    model = model.double()  # references in f64: the stored values are exact to f32
    vocab = model.cfg.vocab_size
    cases, blobs, row = [], [], 0
    for prompt in REF_PROMPTS:
        ids = bpe.encode(prompt)
        cont, margins = [], []
        seq = list(ids)
        with torch.no_grad():
            for _ in range(num_greedy):
                logits = model(torch.tensor([seq]))[0, -1]
                top = torch.topk(logits, 2)
                cont.append(int(top.indices[0]))
                margins.append(round(float(top.values[0] - top.values[1]), 6))
                seq.append(cont[-1])
            full = model(torch.tensor([seq]))[0]
        positions = list(range(len(ids))) + [len(seq) - 2]
        blobs.append(full[positions].float())
        cases.append({"prompt": prompt, "ids": seq, "prompt_tokens": len(ids),
                      "positions": positions, "first_row": row,
                      "greedy_continuation": cont, "greedy_margins": margins,
                      "greedy_text": bpe.decode(cont)})
        row += len(positions)
        log("reference %r -> %r" % (prompt, bpe.decode(cont)))
    # A long held-out passage: RoPE and attention at later positions.
    ids = bpe.encode(heldout_text)[1000:1000 + model.cfg.context_length]
    with torch.no_grad():
        full = model(torch.tensor([ids]))[0]
    positions = [0, 1, 63, 127, 200, len(ids) - 2, len(ids) - 1]
    blobs.append(full[positions].float())
    cases.append({"prompt": None, "ids": ids, "prompt_tokens": len(ids), "positions": positions,
                  "first_row": row})
    row += len(positions)
    logits = torch.cat(blobs)
    assert logits.shape == (row, vocab)
    with open(os.path.join(out_dir, "reference.logits.f32"), "wb") as f:
        f.write(logits.contiguous().numpy().astype("<f4").tobytes())
    with open(os.path.join(out_dir, "reference.json"), "w") as f:
        json.dump({"generator": "tools/train_demo_model.py (PyTorch %s, F16-rounded weights, f64)"
                   % torch.__version__, "vocab": vocab, "num_rows": row,
                   "logits_file": "reference.logits.f32", "cases": cases}, f, indent=1)
        f.write("\n")


# ------------------------------------------------------------------ main ----

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--vocab", type=int, default=4096)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq-len", type=int, default=256)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--time-budget-min", type=float, default=48,
                    help="stop training (and finish the lr decay) after this many minutes; 0: off")
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--ffn", type=int, default=704)
    ap.add_argument("--greedy", type=int, default=24, help="greedy tokens per reference prompt")
    ap.add_argument("--work-dir", default=os.path.join(ROOT, "build", "demo-train"),
                    help="checkpoint, weights file and log")
    ap.add_argument("--models-dir", default=os.path.join(ROOT, "models"))
    ap.add_argument("--data-dir", default=os.path.join(ROOT, "tests", "data", "demo"))
    ap.add_argument("--mkmodel", default=os.path.join(ROOT, "build", "strata-mkmodel"))
    ap.add_argument("--export-only", action="store_true",
                    help="skip training: export from the checkpoint in --work-dir")
    ap.add_argument("--tokenizer-only", action="store_true")
    args = ap.parse_args()

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    for d in (args.work_dir, args.models_dir, args.data_dir):
        os.makedirs(d, exist_ok=True)
    log_file = open(os.path.join(args.work_dir, "train.log"), "a")

    def log(msg):
        print(msg, flush=True)
        log_file.write(msg + "\n")
        log_file.flush()

    t_start = time.time()
    train_text, heldout_text = split_corpus(read_chapters())
    log("corpus: train %d bytes, held-out %d bytes" % (len(train_text), len(heldout_text)))
    with open(os.path.join(args.data_dir, "heldout.txt"), "w") as f:
        f.write(heldout_text)

    tok_path = os.path.join(args.models_dir, "demo-tokenizer.json")
    t0 = time.time()
    bpe = Bpe.train(train_text, args.vocab)
    with open(tok_path, "w", encoding="utf-8") as f:
        json.dump(bpe.to_hf_json(), f, ensure_ascii=False, indent=1)
        f.write("\n")
    log("tokenizer: %d tokens, %d merges, %.1fs -> %s" % (len(bpe.pieces), len(bpe.merges),
                                                          time.time() - t0, tok_path))
    train_tokens = torch.tensor(bpe.encode(train_text), dtype=torch.long)
    heldout_tokens = torch.tensor(bpe.encode(heldout_text), dtype=torch.long)
    log("tokens: train %d (%.2f bytes/token), held-out %d" % (
        len(train_tokens), len(train_text) / len(train_tokens), len(heldout_tokens)))
    if args.tokenizer_only:
        return

    cfg = Config(vocab_size=len(bpe.pieces), num_layers=args.layers, hidden=args.hidden,
                 ffn=args.ffn, context_length=args.seq_len)
    model = DemoLlama(cfg)
    num_params = sum(p.numel() for p in model.parameters())
    log("model: %d layers, hidden %d, %d heads / %d kv heads, ffn %d, vocab %d: %.2fM params" % (
        cfg.num_layers, cfg.hidden, cfg.num_heads, cfg.num_kv_heads, cfg.ffn, cfg.vocab_size,
        num_params / 1e6))
    ckpt = os.path.join(args.work_dir, "checkpoint.pt")
    if args.export_only:
        model.load_state_dict(torch.load(ckpt))
    else:
        log("training: %d steps x %d x %d tokens, lr %.1e, seed %d" % (
            args.steps, args.batch, args.seq_len, args.lr, args.seed))
        wall, steps_done = train(model, train_tokens, heldout_tokens, args, log)
        torch.save(model.state_dict(), ckpt)
        model.eval()
        tl = eval_loss(model, train_tokens, args.seq_len, 64)
        hl = eval_loss(model, heldout_tokens, args.seq_len)
        log("done: %d steps, %.2fM tokens, training wall time %.1f min" % (
            steps_done, steps_done * args.batch * args.seq_len / 1e6, wall / 60))
        log("loss: train %.4f (64 windows), held-out %.4f (all %d windows, ppl %.1f)" % (
            tl, hl, (len(heldout_tokens) - 1) // args.seq_len, math.exp(hl)))
    model.eval()

    weights_path = os.path.join(args.work_dir, "demo.weights")
    write_weights_file(weights_path, cfg, model.gguf_tensors(), "strata-demo-kjv")
    write_references(f16_rounded_copy(model), bpe, heldout_text, args.data_dir, args.greedy, log)
    gguf_path = os.path.join(args.models_dir, "default.gguf")
    cmd = [args.mkmodel, "--weights", weights_path, "--type", "f16", "--tokenizer-json",
           tok_path, "-o", gguf_path]
    log("export: " + " ".join(cmd))
    subprocess.run(cmd, check=True)
    log("wrote %s (%d bytes)" % (gguf_path, os.path.getsize(gguf_path)))

    log("total wall time %.1f min" % ((time.time() - t_start) / 60))


if __name__ == "__main__":
    main()
