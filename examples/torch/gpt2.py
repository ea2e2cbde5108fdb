"""A GPT-2-small-sized language model (HF GPT-2's shapes: 12 layers, width 768, 12 heads, context
1024, vocabulary 50257 unpadded, tied LM head) trained with bf16 autocast and fused AdamW, with
PyTorch's kernels and through tiletune.torch. The data is a fixed synthetic token stream (nothing
is downloaded): the loss falls as the model learns it.

    python examples/torch/gpt2.py                                  # both sides on the GPU
    python examples/torch/gpt2.py --sides tiletune --record gpt2.json --steps 2   # record the GEMMs
    tiletune tune gpt2.json --db gpt2.db && tiletune db pack gpt2.db gpt2-ship.db
    python examples/torch/gpt2.py --db gpt2-ship.db                # compare

Small on the CPU: --device cpu --layers 2 --width 64 --heads 2 --seq 32 --batch 2
"""
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train  # noqa: E402


class Block(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.fc, self.out = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, c)
        x = x + self.proj(y)
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, vocab, seq, layers, width, heads):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, width), nn.Embedding(seq, width)
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(width)
        self.lm_head = nn.Linear(width, vocab, bias=False)
        self.lm_head.weight = self.wte.weight  # tied, as GPT-2
        for name, p in self.named_parameters():
            if p.dim() == 2:
                std = 0.02 / math.sqrt(2 * layers) if name.endswith(("proj.weight", "out.weight")) else 0.02
                nn.init.normal_(p, 0.0, std)
            elif name.endswith("bias"):
                nn.init.zeros_(p)

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
        for b in self.blocks:
            x = b(x)
        return self.lm_head(self.ln_f(x))


def main():
    p = train.arguments(__doc__, {"batch": 16})
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--width", type=int, default=768)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--seq", type=int, default=1024)
    p.add_argument("--vocab", type=int, default=50257)
    args = p.parse_args()
    g = torch.Generator().manual_seed(1)
    # A stream in which each token determines the next through a fixed random table, with noise:
    # learnable, so the loss falls from ln(vocab).
    table = torch.randint(0, args.vocab, (args.vocab,), generator=g)
    n_batches = 8
    stream = torch.empty(n_batches * args.batch * (args.seq + 1), dtype=torch.long)
    stream[0] = 0
    noise = torch.rand(stream.numel(), generator=g) < 0.1
    random_tokens = torch.randint(0, args.vocab, (stream.numel(),), generator=g)
    for i in range(1, stream.numel()):
        stream[i] = random_tokens[i] if noise[i] else table[stream[i - 1]]
    data = stream.view(n_batches, args.batch, args.seq + 1).to(args.device)

    def batches(i):
        d = data[i % n_batches]
        return d[:, :-1], d[:, 1:]

    def loss_fn(logits, y):
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), y.reshape(-1))

    make_model = lambda: GPT(args.vocab, args.seq, args.layers, args.width, args.heads)
    fused = args.device.startswith("cuda")
    make_opt = lambda m: torch.optim.AdamW(m.parameters(), lr=6e-4, weight_decay=0.1, fused=fused)
    results = train.run_sides(args, make_model, make_opt, batches, loss_fn)
    train.report(args, results)


if __name__ == "__main__":
    main()
