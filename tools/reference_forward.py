#!/usr/bin/env python3
"""Independent numpy reference of Weft's forward pass (llama, qwen2, gemma3,
qwen3moe, gpt-oss, qwen3, gemma2, phi3).

Reads a GGUF file with gguf.GGUFReader, dequantizes every weight with
gguf.quants.dequantize (MXFP4 experts included), and runs the transformer
in float64 activations (weights are dequantized and held as float64).
Written from
the model descriptions (llama.cpp's graphs and HF's modeling code), not from
Weft's C++, so the two can check each other.

Usage as a library:
    m = RefModel("model.gguf")
    cache = m.new_cache()
    logits = m.forward([1, 2, 3], start_pos=0, cache=cache)  # [3, vocab]
    toks = m.greedy(prompt_ids, 64)

Usage as a script:
    reference_forward.py MODEL.gguf ID ID ... [--greedy N]
"""

import argparse
import math
import sys

import numpy as np
from gguf import GGUFReader
from gguf.quants import dequantize


def _field(reader, key, default=None):
    f = reader.fields.get(key)
    if f is None:
        return default
    v = f.contents()
    return v


class RefConfig:
    """Hyper-parameters read from GGUF metadata, as llama.cpp reads them."""

    def __init__(self, reader):
        arch = _field(reader, "general.architecture")
        if arch not in ("llama", "qwen2", "gemma3", "qwen3moe", "gpt-oss", "qwen3", "gemma2",
                        "phi3"):
            raise ValueError(f"unsupported architecture {arch!r}")
        self.arch = arch

        def get(key, default=None, required=False):
            v = _field(reader, f"{arch}.{key}", default)
            if v is None and required:
                raise KeyError(f"missing metadata key {arch}.{key}")
            return v

        self.n_embd = int(get("embedding_length", required=True))
        self.n_layer = int(get("block_count", required=True))
        self.n_ff = int(get("feed_forward_length", required=True))
        self.n_head = int(get("attention.head_count", required=True))
        self.n_head_kv = int(get("attention.head_count_kv", self.n_head))
        self.head_dim_k = int(get("attention.key_length", self.n_embd // self.n_head))
        self.head_dim_v = int(get("attention.value_length", self.head_dim_k))
        self.eps = float(get("attention.layer_norm_rms_epsilon", required=True))
        self.n_rot = int(get("rope.dimension_count", self.head_dim_k))
        self.rope_base = float(get("rope.freq_base", 10000.0))
        self.n_ctx_train = int(get("context_length", 2048))
        # RoPE scaling: none / linear / yarn.
        stype = get("rope.scaling.type", None)
        factor = get("rope.scaling.factor", None)
        if factor is None:
            lin = get("rope.scale_linear", None)
            if lin is not None:
                factor = lin
                stype = stype or "linear"
        self.rope_scaling = stype or "none"
        self.rope_factor = float(factor) if factor else 1.0
        if self.rope_scaling == "none":
            self.rope_factor = 1.0
        self.rope_orig_ctx = int(get("rope.scaling.original_context_length",
                                     self.n_ctx_train))
        # Gemma 2 caps attention logits at 50 and final logits at 30 unless
        # the file says otherwise (HF Gemma2Config defaults).
        soft = (30.0, 50.0) if arch == "gemma2" else (0.0, 0.0)
        self.final_softcap = float(get("final_logit_softcapping", soft[0]) or 0.0)
        self.attn_softcap = float(get("attn_logit_softcapping", soft[1]) or 0.0)
        self.sliding_window = int(get("attention.sliding_window",
                                      4096 if arch == "gemma2" else 0) or 0)
        if arch == "phi3":
            self.sliding_window = 0  # llama.cpp disables Phi-3's window
        # Gemma 2: every second layer (even ones) is local; Gemma 3: 5 of 6.
        self.swa_pattern = {"gemma2": int(get("attention.sliding_window_pattern", 2)),
                            "gemma3": 6, "gpt-oss": 2}.get(arch, 0)
        # Local layers' RoPE base: Gemma 3 fixes 10000, Gemma 2 uses the
        # global one (or rope.freq_base_swa).
        self.rope_base_local = (10000.0 if arch == "gemma3" else
                                float(get("rope.freq_base_swa", self.rope_base)))
        # cos/sin multiplier (LongRoPE's attention factor).
        self.rope_attn_factor = float(get("rope.scaling.attn_factor", 1.0))
        # NeoX (rotate halves) for every family but llama (adjacent pairs).
        self.rope_neox = arch != "llama"
        # Gemma 2/3 scale embeddings by sqrt(n_embd) and use GeGLU.
        self.gemma = arch in ("gemma2", "gemma3")
        # Query scale: 1/sqrt(query_pre_attn_scalar); HF's configs give
        # n_embd / n_head for the 27B models (Gemma 2: 46 layers, Gemma 3:
        # 62), head_dim otherwise; GGUFs carry no key for it.
        big = {"gemma2": 46, "gemma3": 62}.get(arch)
        qpas = self.n_embd // self.n_head if self.n_layer == big else self.head_dim_k
        self.attn_scale = 1.0 / math.sqrt(qpas)
        if arch == "gpt-oss":  # q.k scaled by 1/sqrt(n_rot)
            self.attn_scale = 1.0 / math.sqrt(self.n_rot)
        # Mixture of experts: softmax router, top-k, weights renormalised
        # (llama.cpp's build_moe_ffn with norm_w for qwen3moe).
        self.n_expert = int(get("expert_count", 0) or 0)
        self.n_expert_used = int(get("expert_used_count", 0) or 0)
        self.n_ff_exp = int(get("expert_feed_forward_length", 0) or 0) or (
            self.n_ff // self.n_expert_used if self.n_expert_used else 0)

    def layer_is_local(self, il):
        p = self.swa_pattern
        return p > 0 and self.sliding_window > 0 and il % p != p - 1

    def layer_rope(self, il):
        """(base, freq_scale, scaling type) for layer il."""
        # gpt-oss: the same YaRN RoPE on local and global layers.
        if self.layer_is_local(il) and self.arch != "gpt-oss":
            return self.rope_base_local, 1.0, "none"
        return self.rope_base, 1.0 / self.rope_factor, self.rope_scaling


def _rope_cos_sin(cfg, il, positions, freq_factors):
    """cos/sin tables [T, n_rot/2] for layer il, following ggml's rope_yarn."""
    base, freq_scale, stype = cfg.layer_rope(il)
    n_dims = cfg.n_rot
    half = n_dims // 2
    i = np.arange(half, dtype=np.float64)
    inv = base ** (-2.0 * i / n_dims)  # theta_scale^(i0/2)
    if freq_factors is not None:
        inv = inv / freq_factors.astype(np.float64)
    theta_extrap = np.outer(np.asarray(positions, dtype=np.float64), inv)
    theta_interp = freq_scale * theta_extrap
    mscale = cfg.rope_attn_factor
    if stype == "yarn":
        beta_fast, beta_slow = 32.0, 1.0

        def corr_dim(n_rot):
            return n_dims * math.log(cfg.rope_orig_ctx / (n_rot * 2 * math.pi)) / (
                2 * math.log(base))

        low = max(0.0, math.floor(corr_dim(beta_fast)))
        high = min(n_dims - 1.0, math.ceil(corr_dim(beta_slow)))
        y = (i - low) / max(0.001, high - low)
        ramp = 1.0 - np.clip(y, 0.0, 1.0)  # ext_factor = 1
        theta = theta_interp * (1 - ramp) + theta_extrap * ramp
        mscale *= 1.0 + 0.1 * math.log(1.0 / freq_scale)
    else:
        theta = theta_interp
    return np.cos(theta) * mscale, np.sin(theta) * mscale


def _apply_rope(x, cos, sin, n_rot, neox):
    """x: [T, H, D]; rotates the first n_rot dims."""
    x = x.copy()
    c = cos[:, None, :]
    s = sin[:, None, :]
    if neox:
        half = n_rot // 2
        a = x[:, :, :half].copy()
        b = x[:, :, half:n_rot].copy()
        x[:, :, :half] = a * c - b * s
        x[:, :, half:n_rot] = a * s + b * c
    else:
        a = x[:, :, 0:n_rot:2].copy()
        b = x[:, :, 1:n_rot:2].copy()
        x[:, :, 0:n_rot:2] = a * c - b * s
        x[:, :, 1:n_rot:2] = a * s + b * c
    return x


def _rmsnorm(x, w, eps):
    ms = np.mean(x * x, axis=-1, keepdims=True)
    return x / np.sqrt(ms + eps) * w


def _gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def _silu(x):
    return x / (1.0 + np.exp(-x))


class RefModel:
    def __init__(self, path, n_ctx=0):
        """n_ctx: the context one sequence may reach; LongRoPE files use
        their long factors beyond the original context, else the short."""
        self.reader = GGUFReader(path)
        self.cfg = RefConfig(self.reader)
        self.t = {}
        for t in self.reader.tensors:
            self.t[t.name] = t
        cfg = self.cfg
        self.vocab = int(self.t["token_embd.weight"].shape[1])
        self._w = {}
        self.layers = []
        for il in range(cfg.n_layer):
            L = {k: self._get(f"blk.{il}.{k}", optional=True) for k in (
                "attn_norm.weight", "attn_q.weight", "attn_k.weight", "attn_v.weight",
                "attn_q.bias", "attn_k.bias", "attn_v.bias", "attn_output.weight",
                "attn_q_norm.weight", "attn_k_norm.weight", "post_attention_norm.weight",
                "ffn_norm.weight", "ffn_gate.weight", "ffn_up.weight", "ffn_down.weight",
                "post_ffw_norm.weight", "attn_qkv.weight", "ffn_gate_inp.weight",
                "ffn_gate_exps.weight", "ffn_up_exps.weight", "ffn_down_exps.weight",
                "attn_output.bias", "attn_sinks.weight", "ffn_gate_inp.bias",
                "ffn_gate_exps.bias", "ffn_up_exps.bias", "ffn_down_exps.bias")}
            self._split_fused(L)
            self.layers.append(L)
        self.tok_embd = self._get("token_embd.weight")  # [vocab, n_embd] f32
        out = self._get("output.weight", optional=True)
        # Gemma 2 always reads its logits through the embedding matrix.
        self.output = out if out is not None and cfg.arch != "gemma2" else self.tok_embd
        self.output_norm = self._get("output_norm.weight")
        # MoE: the relative router gaps of the forward passes (see _moe);
        # greedy() leaves each step's minimum in step_router_gaps.
        self.router_gaps = []
        self.step_router_gaps = []
        self.freq_factors = self._get("rope_freqs.weight", optional=True)
        if self.freq_factors is None:  # Phi-3 LongRoPE (su) factors
            which = "long" if n_ctx > cfg.rope_orig_ctx else "short"
            self.freq_factors = self._get(f"rope_factors_{which}.weight", optional=True)

    def _split_fused(self, L):
        """Phi-3 stores q|k|v in one matrix and gate|up in ffn_up."""
        cfg = self.cfg
        qkv = L.pop("attn_qkv.weight")
        if qkv is not None:
            nq = cfg.n_head * cfg.head_dim_k
            nk = cfg.n_head_kv * cfg.head_dim_k
            L["attn_q.weight"], L["attn_k.weight"], L["attn_v.weight"] = (
                qkv[:nq], qkv[nq:nq + nk], qkv[nq + nk:])
        up = L["ffn_up.weight"]
        if L["ffn_gate.weight"] is None and up is not None and up.shape[0] == 2 * cfg.n_ff:
            gu = L["ffn_up.weight"]
            L["ffn_gate.weight"], L["ffn_up.weight"] = gu[:cfg.n_ff], gu[cfg.n_ff:]

    def _get(self, name, optional=False):
        t = self.t.get(name)
        if t is None:
            if optional:
                return None
            raise KeyError(f"missing tensor {name}")
        d = dequantize(t.data, t.tensor_type).astype(np.float64)
        shape = tuple(int(s) for s in reversed(list(t.shape)))
        return d.reshape(shape)

    def new_cache(self):
        return [{"k": None, "v": None, "pos": []} for _ in range(self.cfg.n_layer)]

    @staticmethod
    def _mm(x, w, b=None):
        y = x @ w.T
        if b is not None:
            y = y + b
        return y

    def forward(self, tokens, start_pos, cache, all_logits=True):
        cfg = self.cfg
        T = len(tokens)
        positions = list(range(start_pos, start_pos + T))
        x = self.tok_embd[np.asarray(tokens)].copy()  # [T, n_embd]
        if cfg.gemma:
            x = x * math.sqrt(cfg.n_embd)
        hd, hdv = cfg.head_dim_k, cfg.head_dim_v
        group = cfg.n_head // cfg.n_head_kv
        for il, L in enumerate(self.layers):
            h = _rmsnorm(x, L["attn_norm.weight"], cfg.eps)
            q = self._mm(h, L["attn_q.weight"], L["attn_q.bias"]).reshape(T, cfg.n_head, hd)
            k = self._mm(h, L["attn_k.weight"], L["attn_k.bias"]).reshape(T, cfg.n_head_kv, hd)
            v = self._mm(h, L["attn_v.weight"], L["attn_v.bias"]).reshape(T, cfg.n_head_kv, hdv)
            if L["attn_q_norm.weight"] is not None:
                q = _rmsnorm(q, L["attn_q_norm.weight"], cfg.eps)
            if L["attn_k_norm.weight"] is not None:
                k = _rmsnorm(k, L["attn_k_norm.weight"], cfg.eps)
            cos, sin = _rope_cos_sin(cfg, il, positions, self.freq_factors)
            q = _apply_rope(q, cos, sin, cfg.n_rot, cfg.rope_neox)
            k = _apply_rope(k, cos, sin, cfg.n_rot, cfg.rope_neox)
            c = cache[il]
            c["k"] = k if c["k"] is None else np.concatenate([c["k"], k], axis=0)
            c["v"] = v if c["v"] is None else np.concatenate([c["v"], v], axis=0)
            c["pos"] = c["pos"] + positions
            kpos = np.asarray(c["pos"])
            scale = cfg.attn_scale
            sinks = L["attn_sinks.weight"]
            out = np.zeros((T, cfg.n_head, hdv))
            for hq in range(cfg.n_head):
                hk = hq // group
                s = (q[:, hq, :] @ c["k"][:, hk, :].T) * scale  # [T, S]
                if cfg.attn_softcap > 0:
                    s = cfg.attn_softcap * np.tanh(s / cfg.attn_softcap)
                qpos = np.asarray(positions)[:, None]
                mask = kpos[None, :] > qpos
                if cfg.layer_is_local(il):
                    mask |= (qpos - kpos[None, :]) >= cfg.sliding_window
                s = np.where(mask, -np.inf, s)
                if sinks is not None:  # an extra logit per head, with no value
                    mx = np.maximum(s.max(axis=1, keepdims=True), sinks[hq])
                    p = np.exp(s - mx)
                    p /= p.sum(axis=1, keepdims=True) + np.exp(sinks[hq] - mx)
                else:
                    s = s - s.max(axis=1, keepdims=True)
                    p = np.exp(s)
                    p /= p.sum(axis=1, keepdims=True)
                out[:, hq, :] = p @ c["v"][:, hk, :]
            a = self._mm(out.reshape(T, cfg.n_head * hdv), L["attn_output.weight"],
                         L["attn_output.bias"])
            oss = cfg.arch == "gpt-oss"  # post_attention_norm is its FFN norm
            if L["post_attention_norm.weight"] is not None and not oss:
                a = _rmsnorm(a, L["post_attention_norm.weight"], cfg.eps)
            x = x + a
            h = _rmsnorm(x, L["post_attention_norm.weight" if oss else "ffn_norm.weight"],
                         cfg.eps)
            if cfg.n_expert > 0:
                f = self._moe(h, L)
            else:
                g = self._mm(h, L["ffn_gate.weight"])
                u = self._mm(h, L["ffn_up.weight"])
                act = _gelu_tanh(g) if cfg.gemma else _silu(g)
                f = self._mm(act * u, L["ffn_down.weight"])
            if L["post_ffw_norm.weight"] is not None:
                f = _rmsnorm(f, L["post_ffw_norm.weight"], cfg.eps)
            x = x + f
        if not all_logits:
            x = x[-1:]
        x = _rmsnorm(x, self.output_norm, cfg.eps)
        logits = self._logits(x)
        if cfg.final_softcap > 0:
            logits = cfg.final_softcap * np.tanh(logits / cfg.final_softcap)
        return logits

    def _moe(self, h, L):
        """Mixture of experts: each token's top-k experts, weighted."""
        cfg = self.cfg
        logits = self._mm(h, L["ffn_gate_inp.weight"], L["ffn_gate_inp.bias"])
        # How near the routing is to a tie: per token, the gap between the
        # k-th and (k+1)-th router logit relative to the largest |logit|
        # (a perturbation of that relative size may switch an expert).
        top = np.sort(logits, axis=1)[:, ::-1]
        if top.shape[1] > cfg.n_expert_used:
            gap = (top[:, cfg.n_expert_used - 1] - top[:, cfg.n_expert_used]) / np.maximum(
                np.abs(logits).max(axis=1), 1e-30)
            self.router_gaps.append(float(gap.min()))
        p = np.exp(logits - logits.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        oss = cfg.arch == "gpt-oss"
        out = np.zeros_like(h)

        def bias(name, e):
            b = L[name]
            return 0.0 if b is None else b[e]

        for t in range(h.shape[0]):
            if oss:  # top k of the logits, softmax over those k
                sel = np.argsort(-logits[t], kind="stable")[:cfg.n_expert_used]
                w = np.exp(logits[t, sel] - logits[t, sel].max())
                w = w / w.sum()
            else:  # softmax over all, top k, renormalised
                sel = np.argsort(-p[t], kind="stable")[:cfg.n_expert_used]
                w = p[t, sel]
                w = w / max(w.sum(), 6.103515625e-5)
            for e, we in zip(sel, w):
                g = L["ffn_gate_exps.weight"][e] @ h[t] + bias("ffn_gate_exps.bias", e)
                u = L["ffn_up_exps.weight"][e] @ h[t] + bias("ffn_up_exps.bias", e)
                if oss:  # clamped SwiGLU, alpha 1.702, limit 7
                    g = np.minimum(g, 7.0)
                    act = g / (1.0 + np.exp(-1.702 * g)) * (np.clip(u, -7.0, 7.0) + 1.0)
                else:
                    act = _silu(g) * u
                d = L["ffn_down_exps.weight"][e] @ act + bias("ffn_down_exps.bias", e)
                out[t] += we * d
        return out

    def _logits(self, x):
        return x @ self.output.T

    def greedy(self, prompt, n):
        """Greedy continuation: batched prefill, then one token at a time.

        Returns (tokens, margins, last_prompt_logits) where margins[i] is the
        gap between the best and second-best logit at step i.
        """
        cache = self.new_cache()
        self.router_gaps, self.step_router_gaps = [], []
        logits = self.forward(prompt, 0, cache, all_logits=False)[-1]
        first = logits.copy()
        toks, margins = [], []
        pos = len(prompt)
        for _ in range(n):
            # MoE: the smallest relative router gap of the pass that made
            # this step's logits (step 0: the prompt's, all positions).
            self.step_router_gaps.append(min(self.router_gaps, default=float("inf")))
            self.router_gaps = []
            top2 = np.argsort(logits)[-2:]
            t = int(top2[1])
            margins.append(float(logits[top2[1]] - logits[top2[0]]))
            toks.append(t)
            logits = self.forward([t], pos, cache, all_logits=False)[-1]
            pos += 1
        return toks, margins, first


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("ids", nargs="+", type=int)
    ap.add_argument("--greedy", type=int, default=0)
    a = ap.parse_args()
    m = RefModel(a.model)
    if a.greedy:
        toks, margins, first = m.greedy(a.ids, a.greedy)
        print("greedy:", toks)
        print("min margin: %.4f" % min(margins))
    else:
        logits = m.forward(a.ids, 0, m.new_cache(), all_logits=False)[-1]
        top = np.argsort(-logits)[:10]
        for t in top:
            print(int(t), float(logits[t]))


if __name__ == "__main__":
    sys.exit(main())
