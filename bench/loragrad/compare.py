#!/usr/bin/env python3
"""Check engine/train's LoRA gradients against PyTorch autograd.

Reads a GGUF llama model (F32/F16 tensors) with a small reader of its own,
builds the same forward pass in PyTorch (RMSNorm, rotary embeddings in the
llama layout, grouped-query causal attention, SwiGLU, LoRA on every
projection), the same objective (cross-entropy on answer tokens,
unlikelihood on negative examples and avoid terms, divided by the number of
answer positions), and compares autograd's gradients of every LoRA matrix
with the ones bench/loragrad wrote. Prints the relative error
||g_go - g_torch|| / ||g_torch|| per matrix and fails above --tol.

    python3 bench/loragrad/compare.py MODEL.gguf grads.json [--dtype float64]
"""
import argparse
import json
import struct
import sys

import numpy as np
import torch


def read_gguf(path):
    data = open(path, "rb").read()
    pos = 0

    def take(fmt):
        nonlocal pos
        v = struct.unpack_from("<" + fmt, data, pos)
        pos += struct.calcsize("<" + fmt)
        return v[0]

    def string():
        nonlocal pos
        n = take("Q")
        s = data[pos:pos + n].decode()
        pos += n
        return s

    scalar = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}

    def value(t):
        if t in scalar:
            return take(scalar[t])
        if t == 8:
            return string()
        if t == 9:
            et, n = take("I"), take("Q")
            return [value(et) for _ in range(n)]
        raise ValueError(f"gguf value type {t}")

    if data[:4] != b"GGUF":
        raise ValueError("not a GGUF file")
    pos = 4
    version, n_tensors, n_kv = take("I"), take("Q"), take("Q")
    if version < 2:
        raise ValueError(f"GGUF version {version}")
    kv = {}
    for _ in range(n_kv):
        k = string()
        kv[k] = value(take("I"))
    infos = []
    for _ in range(n_tensors):
        name = string()
        dims = [take("Q") for _ in range(take("I"))]
        infos.append((name, dims, take("I"), take("Q")))
    align = kv.get("general.alignment", 32)
    start = (pos + align - 1) // align * align
    tensors = {}
    for name, dims, typ, off in infos:
        n = int(np.prod(dims))
        if typ == 0:
            arr = np.frombuffer(data, np.float32, n, start + off)
        elif typ == 1:
            arr = np.frombuffer(data, np.float16, n, start + off).astype(np.float32)
        else:
            continue  # quantized tensors: not needed for an F16 model's check
        tensors[name] = arr.reshape(list(reversed(dims)))
    return kv, tensors


def forward_loss(kv, W, lora, scale, examples, dtype):
    arch = kv["general.architecture"]
    g = lambda k, d=None: kv.get(f"{arch}.{k}", d)
    L, D = g("block_count"), g("embedding_length")
    H, KVH = g("attention.head_count"), g("attention.head_count_kv", g("attention.head_count"))
    HD = D // H
    eps = g("attention.layer_norm_rms_epsilon", 1e-5)
    base = g("rope.freq_base", 10000.0)
    rot = g("rope.dimension_count", HD)
    t = lambda name: torch.tensor(W[name], dtype=dtype)

    def rms(x, w):
        return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * w

    def rope(x, n, heads):
        pos = torch.arange(n, dtype=torch.float64)[:, None]
        inv = base ** (-2 * torch.arange(rot // 2, dtype=torch.float64) / rot)
        ang = pos * inv
        cos, sin = torch.cos(ang).to(dtype), torch.sin(ang).to(dtype)
        x = x.view(n, heads, HD)
        x0, x1 = x[..., 0:rot:2], x[..., 1:rot:2]
        r0 = x0 * cos[:, None, :] - x1 * sin[:, None, :]
        r1 = x0 * sin[:, None, :] + x1 * cos[:, None, :]
        out = x.clone()
        out[..., 0:rot:2], out[..., 1:rot:2] = r0, r1
        return out.view(n, heads * HD)

    def linear(x, layer, kind):
        y = x @ t(f"blk.{layer}.{kind}.weight").T
        key = f"blk.{layer}.{kind}"
        if key in lora:
            A, B = lora[key]
            y = y + scale * (x @ A.T) @ B.T
        return y

    total = sum(len(e["Tokens"]) - e["Start"] for e in examples)
    objective = 0
    for e in examples:
        tok = torch.tensor(e["Tokens"])
        n = len(tok)
        x = t("token_embd.weight")[tok]
        mask = torch.triu(torch.ones(n, n, dtype=torch.bool), 1)
        for l in range(L):
            h = rms(x, t(f"blk.{l}.attn_norm.weight"))
            q = rope(linear(h, l, "attn_q"), n, H).view(n, H, HD)
            k = rope(linear(h, l, "attn_k"), n, KVH).view(n, KVH, HD)
            v = linear(h, l, "attn_v").view(n, KVH, HD)
            rep = H // KVH
            k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
            s = torch.einsum("ihd,jhd->hij", q, k) / HD ** 0.5
            p = torch.softmax(s.masked_fill(mask, float("-inf")), -1)
            att = torch.einsum("hij,jhd->ihd", p, v).reshape(n, H * HD)
            x = x + linear(att, l, "attn_output")
            h = rms(x, t(f"blk.{l}.ffn_norm.weight"))
            x = x + linear(torch.nn.functional.silu(linear(h, l, "ffn_gate")) * linear(h, l, "ffn_up"), l, "ffn_down")
        out = W.get("output.weight", W["token_embd.weight"])
        logits = rms(x, t("output_norm.weight")) @ torch.tensor(out, dtype=dtype).T
        logp = torch.log_softmax(logits, -1)
        w = e.get("Weight") or 1.0
        for pos in range(e["Start"], n):
            lp = logp[pos - 1, tok[pos]]
            if w > 0:
                objective = objective - w * lp
            else:
                objective = objective + w * torch.log1p(-torch.exp(lp))
        for a in e.get("Avoid") or []:
            aw = a.get("Weight") or 1.0
            objective = objective - aw * torch.log1p(-torch.exp(logp[a["Pos"] - 1, a["Token"]]))
    return objective / total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("grads")
    ap.add_argument("--dtype", default="float64", choices=["float32", "float64"])
    ap.add_argument("--tol", type=float, default=1e-3)
    args = ap.parse_args()
    dtype = getattr(torch, args.dtype)
    kv, W = read_gguf(args.model)
    g = json.load(open(args.grads))
    lora = {}
    for p in g["pairs"]:
        A = torch.tensor(np.array(p["a"], np.float32).reshape(g["rank"], p["in"]), dtype=dtype, requires_grad=True)
        B = torch.tensor(np.array(p["b"], np.float32).reshape(p["out"], g["rank"]), dtype=dtype, requires_grad=True)
        lora[p["name"]] = (A, B)
    scale = g["alpha"] / g["rank"]
    obj = forward_loss(kv, W, lora, scale, g["examples"], dtype)
    obj.backward()
    worst, worst_name = 0.0, ""
    rows = []
    for p in g["pairs"]:
        A, B = lora[p["name"]]
        for which, ours, ref in (("A", p["grad_a"], A.grad), ("B", p["grad_b"], B.grad)):
            ref = ref.detach().double().numpy().ravel()
            ours = np.array(ours, np.float64)
            rel = np.linalg.norm(ours - ref) / max(np.linalg.norm(ref), 1e-30)
            rows.append((p["name"] + "." + which, rel, np.linalg.norm(ref)))
            if rel > worst:
                worst, worst_name = rel, p["name"] + "." + which
    print(f"objective: ruvllm {g['objective']:.9f}, torch {obj.item():.9f} "
          f"(relative difference {abs(g['objective'] - obj.item()) / abs(obj.item()):.2e})")
    print(f"{len(rows)} LoRA matrices; relative gradient error ||g_ruvllm - g_torch|| / ||g_torch||:")
    errs = np.array([r[1] for r in rows])
    print(f"  median {np.median(errs):.2e}, mean {errs.mean():.2e}, worst {worst:.2e} ({worst_name}); torch in {args.dtype}")
    if worst > args.tol:
        print(f"FAIL: worst relative error {worst:.2e} > {args.tol}")
        sys.exit(1)
    print(f"PASS: every matrix within {args.tol}")


if __name__ == "__main__":
    main()
