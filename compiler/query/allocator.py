"""vLLM's KV-cache allocator as a declared convention: `allocator=vllm` on b_max and h_max.

specc's own capacity rule divides free bytes by the exact state of a request. vLLM
(v1 engine) allocates a pool of fixed-size pages and hands them out per request;
these are its rules, read from its source (vllm/v1/kv_cache_interface.py,
vllm/v1/core/kv_cache_utils.py, vllm/v1/core/block_pool.py, vllm/platforms/interface.py)
and restated here — no code of vLLM's is copied:

1. Layer specs. Each layer's cache is one of: full attention (its store grows by one
   entry per token: `entries: H`), a sliding window (`entries: min(H, W)`), or a fixed
   state (recurrent / linear attention: entries independent of H). A page holds `block`
   tokens of one layer (--block-size, default 16): AttentionSpec.page_size_bytes and
   the fixed-state spec's page_size_bytes. Attention backends may force the block
   (CudaPlatform.check_and_update_config in vllm/platforms/cuda.py: 64 for FlashMLA, 128
   for CUTLASS MLA): pass block= for them; kv=fp8_ds_mla (FlashMLA sparse) defaults to 64.
2. Hybrid page alignment (Platform._align_hybrid_block_size in vllm/platforms/interface.py):
   with fixed-state layers, the attention block grows to
   align · cdiv(state page, align · attention bytes per token) tokens (align = max(16, block)),
   and the state page is padded to exactly the attention page.
   Pages of attention-only hybrids (full + sliding) are unified by raising the block of the
   smaller pages (unify_kv_cache_spec_page_size in kv_cache_utils.py).
3. Groups (_get_kv_cache_groups_uniform_page_size): layers of one spec form a type; the
   group size is the smallest type's layer count, or the largest when it is under 1.5× the
   smallest; each type splits into cdiv(layers, group size) groups (padding the last).
   A model of one type is one group of all its layers (_get_kv_cache_groups_uniform_spec).
4. Pool size (get_num_blocks, get_kv_cache_config_from_groups): blocks =
   memory // page // group size — every block is one page in each of group-size tensors.
   A single type whose pages differ per layer (UniformTypeKVCacheSpecs) divides by the
   sum of the layers' pages.
5. The null block (BlockPool.__init__ in block_pool.py): one block of the pool is reserved
   and never holds a request, so requests share blocks − 1.
6. Blocks one request holds at context H, per group (max_memory_usage_bytes of each spec):
   full attention cdiv(H, block); a sliding window cdiv(min(W − 1 + T, H), block) + 1, where
   T is the tokens scheduled in one step (max_num_batched_tokens; SlidingWindowSpec); a
   fixed state one block (the fixed-state spec without prefix caching).

b_max(H) is then (blocks − 1) // Σ_groups blocks(H), and h_max(B) the largest H at which
B requests fit; h_max(B=1) of a full-attention model is vLLM's logged "GPU KV cache size"
less the null block's tokens.

The default T is 8192, `vllm serve`'s max_num_batched_tokens on GPUs of 70 GiB or more
other than the A100 (EngineArgs.get_batch_defaults in vllm/engine/arg_utils.py; 2048 on
smaller GPUs, 16384 for the offline LLM class): pass max_num_batched_tokens= for others."""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from ...dsl.errors import SpecError
from ...dsl.units import BYTES, NONE, TOKENS
from .query_base import Quantity
from ..deploy.sharding import Deployment, store_fraction
from ..schema.symbols import H

ALLOCATORS = ("vllm",)
DEFAULT_BLOCK = 16                  # vLLM CacheConfig.block_size default on CUDA
KERNEL_ALIGNMENT = 16               # FlashAttention's kernel block sizes: multiples of 16
DEFAULT_BATCHED_TOKENS = 8192       # `vllm serve` on a >= 70 GiB GPU (see the module doc)
_H_LIMIT = 2 ** 48


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class LayerSpec:
    """One layer's cache in vLLM's terms: kind full | sliding | state; `size` is bytes per
    token (full, sliding) or per request (state); `window` the sliding window."""
    kind: str
    size: int
    window: int = 0


@dataclass(frozen=True)
class Pool:
    """A laid-out pool: (type spec, block tokens, groups of that type), page bytes, group size."""
    types: tuple        # ((LayerSpec, block, groups), ...)
    page: int
    group_size: int
    per_layer_pages: int = 0    # >0: one group of layers with different pages (their sum)

    @property
    def block_bytes(self) -> int:
        """Memory of one block id: a page in each of the group-size tensors (rule 4)."""
        return self.per_layer_pages or self.page * self.group_size

    def blocks(self, memory: int) -> int:
        if self.per_layer_pages:
            return max(0, memory // self.per_layer_pages)
        return max(0, memory // self.page // self.group_size)

    def request_blocks(self, length: int, batched_tokens: int) -> int:
        total = 0
        for spec, block, groups in self.types:
            if spec.kind == "full":
                need = cdiv(length, block)
            elif spec.kind == "sliding":
                need = cdiv(min(spec.window - 1 + batched_tokens, length), block) + 1
            else:
                need = 1
            total += groups * need
        return total


def layer_specs(engine, model, fmt, dep, loc) -> list:
    """[(LayerSpec, layer count)] of the model on one device (tp shares of every store)."""
    by_layers: dict = {}
    for use in model.states:
        entries = use.entries
        if entries == 0:
            continue
        frac = store_fraction(engine.store_units(model, use.store), dep, use.store, loc)
        size = engine.store_bytes(model, use.store, fmt) * frac
        if entries.has(H):
            if entries == H:
                kind, window = "full", 0
            elif isinstance(entries, sp.Min) and len(entries.args) == 2 and H in entries.args:
                window = next(a for a in entries.args if a != H)
                kind = "sliding"
                if not (window.is_Integer and window > 0):
                    raise _unsupported(use, loc)
            else:
                raise _unsupported(use, loc)
        else:
            kind, window, size = "state", 0, size * entries
        if not (sp.sympify(size).is_Integer and size > 0):
            raise SpecError(f"store '{use.store}' holds {size} bytes per entry on a device; vLLM's pages are whole "
                            "bytes", loc, expected="a deployment whose tp divides the store's pieces")
        key = (use.segment, use.layers)
        prev = by_layers.get(key)
        if prev is None:
            by_layers[key] = [kind, int(size), int(window), use.mult, use.store]
        elif prev[0] == kind and prev[2] == int(window):
            prev[1] += int(size)       # two stores of one layer (K and V, conv and recurrent) share its page
        else:
            raise SpecError(f"store '{use.store}' and store '{prev[4]}' are different kinds of cache in the same "
                            "layers; vLLM gives a layer one cache spec", loc,
                            expected="layers with one kind of cache each (allocator=vllm)")
    counts: dict = {}
    for kind, size, window, mult, _ in by_layers.values():
        spec = LayerSpec(kind, size, window)
        counts[spec] = counts.get(spec, 0) + int(mult)
    return list(counts.items())


def _unsupported(use, loc):
    return SpecError(f"allocator=vllm: store '{use.store}' holds {use.entries} entries at context H; vLLM's "
                     "allocator pages full attention (H), sliding windows (min(H, W)) and fixed states", loc,
                     expected="allocator=vllm on a model with those kinds of cache, or no allocator=")


def lay_out(specs: list, block: int) -> Pool:
    """vLLM's pool for these layer specs: block sizes, padding and groups (module doc, 1-4)."""
    attention = [s for s, _ in specs if s.kind != "state"]
    states = [s for s, _ in specs if s.kind == "state"]
    blocks = {s: block for s in attention}
    page_of = {s: s.size * block for s in attention}
    if len(specs) == 1 or (not states and len({s.window for s in attention}) == 1
                           and {s.kind for s in attention} == {attention[0].kind}):
        # one type of cache (rule 3's uniform spec / uniform type): one group of every layer
        layers = sum(n for _, n in specs)
        if states:
            spec = states[0]
            return Pool(((spec, block, 1),), spec.size, layers)
        pages = {page_of[s] for s in attention}
        if len(pages) == 1:
            return Pool(((attention[0], block, 1),), pages.pop(), layers)
        return Pool(((attention[0], block, 1),), 0, layers,
                    per_layer_pages=sum(page_of[s] * n for s, n in specs))
    if states:
        # rule 2: the attention block grows until its page holds the largest state page
        per_token = {s.size for s in attention}
        if len(per_token) != 1:
            raise ValueError("attention layers with different bytes per token beside state layers")
        token_bytes = per_token.pop()
        align = max(KERNEL_ALIGNMENT, block)
        state_page = max(s.size for s in states)
        attn_block = align * cdiv(state_page, align * token_bytes)
        page = attn_block * token_bytes
        blocks = {s: attn_block for s in attention}
        page_of = {s: page for s in attention}
        for s in states:
            page_of[s] = page          # padded (page_size_padded)
            blocks[s] = 1
    else:
        # attention-only hybrid: raise the block of the smaller pages to the largest page
        page = max(page_of.values())
        for s in attention:
            if page % page_of[s]:
                raise ValueError("page sizes that do not divide")
            blocks[s] = block * (page // page_of[s])
            page_of[s] = page
    page = max(page_of.values())
    counts = dict(specs)
    smallest, largest = min(counts.values()), max(counts.values())
    group_size = largest if largest < smallest * 3 / 2 else smallest
    types = tuple((s, blocks[s], cdiv(n, group_size)) for s, n in specs)
    return Pool(types, page, group_size)


# ------------------------------------------------------------------ the queries
class VllmCapacity:
    """b_max / h_max under allocator=vllm for one engine call."""

    def __init__(self, engine, model, args, budget: bool = True):
        args.used.update({"allocator", "kv_memory", "max_num_batched_tokens", "block"})
        name = args.name("allocator")
        if name not in ALLOCATORS:
            raise SpecError(f"unknown allocator '{name}'", args.node_loc("allocator"), span=len(name),
                            expected="allocator=vllm")
        self.a = args
        dep = engine.deployment(args)
        self.dep = Deployment(dep.tp, dep.pp, dep.ep, dep.dp, per_device=True)
        if self.dep.pp > 1:
            raise SpecError("allocator=vllm with pp > 1 is not modelled (vLLM sizes each stage's pool and keeps "
                            "the smallest)", args.loc, expected="pp=1")
        fmt = engine.format_of(args)
        memory = args.quantity("kv_memory", BYTES, None) if budget else 0
        if memory is None:
            if args.raw("device") is None and args.raw("memory") is None:
                raise SpecError("allocator=vllm needs the KV cache's memory: kv_memory= (vLLM's "
                                "--kv-cache-memory-bytes) or device=", args.loc, expected="kv_memory=40 GiB")
            free, _, _ = engine.budget(model, args)
            memory = free[0]
        if not sp.sympify(memory).is_Integer:
            memory = sp.floor(memory)
        self.memory = int(memory)
        block = engine.allocator_block(args)
        scheme_block = getattr(getattr(fmt, "kv", None), "block", None)   # e.g. fp8_ds_mla's 64
        self.block = int(block) if block is not None else scheme_block or DEFAULT_BLOCK
        self.batched = int(_count(args, "max_num_batched_tokens", DEFAULT_BATCHED_TOKENS))
        specs = layer_specs(engine, model, fmt, self.dep, args.loc)
        if not specs:
            raise SpecError(f"{engine.spec.model} keeps no per-request state, so capacity has no bound", args.loc,
                            expected="a spec that declares state stores (state: in its stack)")
        try:
            self.pool = lay_out(specs, self.block)
        except ValueError as exc:
            raise SpecError(f"allocator=vllm cannot lay out this model's pages: {exc}", args.loc,
                            expected="layers whose pages vLLM can unify") from None
        # rule 5: one block is the null block
        self.usable = self.pool.blocks(self.memory) - 1

    def fits(self, batch: int, length: int) -> bool:
        return batch * self.pool.request_blocks(length, self.batched) <= self.usable


def _count(args, key, default):
    args.used.add(key)
    value = args.raw(key)
    if value is None:
        return default
    value = value.value if isinstance(value, Quantity) else value
    if not (isinstance(value, sp.Integer) and value >= 1):
        raise SpecError(f"'{key}=' takes a positive number of tokens, got {value}", args.node_loc(key),
                        expected=f"{key}={default}")
    return value


def _number(args, key, default=None):
    """A scenario argument as a number: the pool is whole blocks, so there is no closed form."""
    value = args.scenario(key, default)
    if not isinstance(value, sp.Integer):
        raise SpecError(f"allocator=vllm counts whole blocks for a given {key}, not for a symbol", args.node_loc(key),
                        expected=f"{key}=<integer>, or no allocator= for a closed form")
    return value


def b_max(engine, model, args) -> Quantity:
    cap = VllmCapacity(engine, model, args)
    length = _number(args, "H")
    ext = args.check_context(model, length)
    if length < 1:
        raise SpecError("b_max with allocator=vllm needs H >= 1", args.loc, expected="H=1 or more")
    per_request = cap.pool.request_blocks(int(length), cap.batched)
    fits = max(0, cap.usable) // per_request
    return Quantity(sp.Integer(cap.dep.dp * fits), NONE, ext)   # each dp group holds its own requests


def h_max(engine, model, args) -> Quantity:
    cap = VllmCapacity(engine, model, args)
    batch = _number(args, "B", 1)
    if batch < 1:
        raise SpecError("h_max needs B >= 1", args.loc, expected="B=1 or more")
    on_device = int(cap.dep.requests_per_device(batch))
    if not cap.fits(on_device, 1):
        return Quantity(sp.Integer(0), TOKENS)
    if cap.fits(on_device, _H_LIMIT):
        raise SpecError(f"{engine.spec.model}'s state does not bind: any context fits", args.loc,
                        expected="a model whose state grows with the context")
    lo, hi = 1, 2
    while cap.fits(on_device, hi):
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if cap.fits(on_device, mid) else (lo, mid)
    return engine.context_answer(model, args, lo)


def state_bytes(engine, model, args) -> Quantity:
    """state_bytes(H, B, allocator=vllm): the pool memory B requests at context H hold on the
    most loaded device — whole blocks of every group, each block a page in group-size tensors
    (padded state pages, sliding-window reservations and the raised hybrid block included)."""
    cap = VllmCapacity(engine, model, args, budget=False)
    length, batch = _number(args, "H"), _number(args, "B", 1)
    ext = args.check_context(model, length)
    on_device = int(cap.dep.requests_per_device(batch))
    held = cap.pool.request_blocks(int(length), cap.batched) if length >= 1 else 0
    return Quantity(sp.Integer(on_device * held * cap.pool.block_bytes), BYTES, ext)
