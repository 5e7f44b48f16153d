"""allocator=vllm (compiler/query/allocator.py): vLLM's paged KV pool, its published numbers
and brute-force checks of each rule on small sizes."""

from __future__ import annotations

import itertools
import random

import pytest

import specc
from specc.compiler.query import allocator
from specc.compiler.query.allocator import LayerSpec, Pool, cdiv, lay_out

GIB = 2 ** 30


def _value(model, text):
    return model.eval(text).value


# ------------------------------------------------------------------ vLLM's own numbers
def test_llama_40_gib_null_block():
    """40 GiB of KV: vLLM logs 327,680 tokens (20,480 blocks of 16) and 80.00x concurrency at
    4,096 tokens, but one block is its null block: 79 requests, 327,664 tokens."""
    m = specc.load("llama31_8b")
    budget = "kv_memory=40 GiB, allocator=vllm"
    assert 40 * GIB // (16 * 2 * 8 * 128 * 2) // 32 == 20_480
    assert _value(m, f"b_max(H=4096, {budget})") == 79
    # the pool holds more than Llama-3.1's 131,072-token maximum context: beyond it needs extrapolate=true
    assert _value(m, f"h_max(B=1, {budget})") == 131_072
    assert _value(m, f"h_max(B=1, {budget}, extrapolate=true)") == 327_664
    assert _value(m, f"b_max(H=4096, {budget}, kv=fp8)") == 159
    assert _value(m, f"h_max(B=1, {budget}, kv=fp8, extrapolate=true)") == 655_344


def test_gpt_oss_sliding_window_reservation():
    """12 sliding (window 128) + 12 full layers, one pool of 32 KiB pages in 2 groups of 12:
    40 GiB // 32,768 // 12 = 109,226 blocks, one null; a request of 4,096 tokens holds
    256 full blocks + cdiv(min(127 + 8192, 4096), 16) + 1 = 257 sliding blocks."""
    m = specc.load("gpt_oss_20b")
    assert (109_226 - 1) // (256 + 257) == 212
    assert _value(m, "b_max(H=4096, kv_memory=40 GiB, allocator=vllm)") == 212
    # fewer tokens in flight reserve fewer sliding blocks: cdiv(127 + 2048, 16) + 1 = 137
    assert _value(m, "b_max(H=4096, kv_memory=40 GiB, allocator=vllm, max_num_batched_tokens=2048)") \
        == (109_226 - 1) // (256 + 137)


def test_qwen3_next_hybrid_alignment():
    """Gated-DeltaNet state 1,097,728 B per layer; attention 2,048 B per token per layer:
    the attention block rises to 16 · cdiv(1,097,728, 16 · 2,048) = 544 tokens and the state
    page is padded to 544 · 2,048 = 1,114,112 B; 12 attention + 36 linear layers make 4
    groups of 12."""
    pool = lay_out([(LayerSpec("state", 1_097_728), 36), (LayerSpec("full", 2048), 12)], 16)
    assert pool.page == 1_114_112 and pool.group_size == 12
    assert dict(((s.kind, b), g) for s, b, g in pool.types) == {("state", 1): 3, ("full", 544): 1}
    m = specc.load("qwen3_next_80b_a3b")
    blocks = 40 * GIB // 1_114_112 // 12
    assert _value(m, "b_max(H=4096, kv_memory=40 GiB, allocator=vllm)") == (blocks - 1) // (cdiv(4096, 544) + 3)
    assert _value(m, "h_max(B=1, kv_memory=40 GiB, allocator=vllm, extrapolate=true)") == (blocks - 1 - 3) * 544


def test_padding_groups_follow_the_1_5_rule():
    # 13 full + 12 sliding (gpt-oss-20b + a drafter): one group size of 13
    pool = lay_out([(LayerSpec("sliding", 2048, 128), 12), (LayerSpec("full", 2048), 13)], 16)
    assert pool.group_size == 13 and all(g == 1 for _, _, g in pool.types)
    # 10 full + 20 sliding: groups of 10, the sliding layers in 2
    pool = lay_out([(LayerSpec("full", 2048), 10), (LayerSpec("sliding", 2048, 512), 20)], 16)
    assert pool.group_size == 10 and sorted(g for _, _, g in pool.types) == [1, 2]


def test_errors_are_located():
    m = specc.load("llama31_8b")
    with pytest.raises(specc.Error, match="unknown allocator 'sglang'"):
        m.eval("b_max(H=4096, kv_memory=40 GiB, allocator=sglang)")
    with pytest.raises(specc.Error, match="kv_memory="):
        m.eval("b_max(H=4096, allocator=vllm)")


def test_device_budget_matches_kv_memory():
    """Without kv_memory=, the KV budget is the device's memory less the weights and workspace."""
    m = specc.load("llama31_8b")
    free = _value(m, "device_memory(device=h100_sxm)") - _value(m, "weight_bytes()") - 2 * GIB
    assert _value(m, "b_max(H=8192, device=h100_sxm, workspace=2 GiB, allocator=vllm)") == \
        _value(m, f"b_max(H=8192, kv_memory={free} B, allocator=vllm)")


# ------------------------------------------------------------------ brute force on small sizes
class _BlockPool:
    """A literal pool: block ids 0..n-1, block 0 the null block; requests take blocks one by
    one as their tokens arrive (full attention) or as their reservation says (others)."""

    def __init__(self, n):
        self.free = list(range(1, n))      # the null block is never handed out

    def take(self, k) -> bool:
        if k > len(self.free):
            return False
        del self.free[:k]
        return True


def _admit_token_by_token(pool: Pool, memory: int, length: int, batched: int) -> int:
    """Requests of `length` tokens admitted until one does not fit, every group's blocks
    allocated as the tokens (and reservations) grow."""
    blocks = _BlockPool(pool.blocks(memory))
    admitted = 0
    while True:
        needed = 0
        for spec, block, groups in pool.types:
            for _ in range(groups):
                if spec.kind == "full":
                    needed += sum(1 for t in range(length) if t % block == 0)
                elif spec.kind == "sliding":
                    tokens = min(spec.window - 1 + batched, length)
                    needed += sum(1 for t in range(tokens) if t % block == 0) + 1
                else:
                    needed += 1
        if not blocks.take(needed):
            return admitted
        admitted += 1


SMALL = [
    [(LayerSpec("full", 64), 4)],
    [(LayerSpec("full", 96), 3)],
    [(LayerSpec("sliding", 64, 8), 2), (LayerSpec("full", 64), 2)],
    [(LayerSpec("sliding", 32, 5), 6), (LayerSpec("full", 32), 2)],
    [(LayerSpec("state", 3000), 6), (LayerSpec("full", 64), 2)],
    [(LayerSpec("state", 700), 3), (LayerSpec("full", 48), 3)],
]


@pytest.mark.parametrize("specs", SMALL, ids=range(len(SMALL)))
def test_b_max_equals_a_literal_pool(specs):
    rng = random.Random(7)
    for block, batched in itertools.product((4, 16), (3, 40)):
        pool = lay_out(specs, block)
        for _ in range(8):
            memory = rng.randrange(20_000, 400_000)
            for length in (1, 5, 17, 64, 200):
                usable = pool.blocks(memory) - 1
                formula = max(0, usable) // pool.request_blocks(length, batched)
                assert formula == _admit_token_by_token(pool, memory, length, batched), (specs, memory, length)


@pytest.mark.parametrize("specs", SMALL, ids=range(len(SMALL)))
def test_alignment_and_pages_by_enumeration(specs):
    """The hybrid block is the smallest multiple of the alignment whose page holds every
    state page; every type then has one page size."""
    for block in (4, 16, 32):
        pool = lay_out(specs, block)
        states = [s for s, _ in specs if s.kind == "state"]
        for spec, b, _ in pool.types:
            if spec.kind != "state":
                assert spec.size * b == pool.page
        if states:
            per_token = next(s.size for s, _ in specs if s.kind != "state")
            align = max(16, block)
            smallest = next(n for n in itertools.count(align, align) if n * per_token >= max(s.size for s in states))
            assert pool.page == smallest * per_token


def test_h_max_search_equals_a_scan():
    class _A:      # the parts of VllmCapacity h_max's search uses
        pass

    for specs in SMALL:
        pool = lay_out(specs, 16)
        for memory in (50_000, 123_457, 300_001):
            cap = _A()
            cap.pool, cap.batched, cap.usable = pool, 24, pool.blocks(memory) - 1
            fits = lambda b, h: b * cap.pool.request_blocks(h, cap.batched) <= cap.usable   # noqa: E731
            for batch in (1, 3):
                scan = max((h for h in range(1, 5000) if fits(batch, h)), default=0)
                lo, hi = 1, 2
                if not fits(batch, 1):
                    assert scan == 0
                    continue
                while fits(batch, hi):
                    lo, hi = hi, hi * 2
                while hi - lo > 1:
                    mid = (lo + hi) // 2
                    lo, hi = (mid, hi) if fits(batch, mid) else (lo, mid)
                assert lo == scan


def test_allocator_module_cites_vllm():
    doc = allocator.__doc__
    for name in ("get_num_blocks", "BlockPool", "_align_hybrid_block_size", "SlidingWindowSpec",
                 "_get_kv_cache_groups_uniform_page_size", "get_batch_defaults"):
        assert name in doc


@pytest.mark.parametrize("name, memory", [("llama31_8b", "20 MiB"), ("gpt_oss_20b", "3 MiB")])
def test_h_max_is_the_longest_context_b_max_admits(name, memory):
    """allocator.h_max by exponential and binary search = a scan of b_max over H."""
    m = specc.load(name)
    budget = f"kv_memory={memory}, allocator=vllm, max_num_batched_tokens=40"
    for batch in (1, 2):
        h = _value(m, f"h_max(B={batch}, {budget})")
        scan = max(H for H in range(1, 400) if _value(m, f"b_max(H={H}, {budget})") >= batch)
        assert h == scan and 0 < h < 399


def test_state_bytes_counts_whole_pages():
    """state_bytes(allocator=vllm): blocks held × (page × group size) — rounded up to blocks,
    the sliding-window reservation and the padded hybrid pages included."""
    llama = specc.load("llama31_8b")
    assert _value(llama, "state_bytes(H=4000, allocator=vllm)") == cdiv(4000, 16) * 16 * 131_072
    assert _value(llama, "state_bytes(H=4096, allocator=vllm)") == _value(llama, "state_bytes(H=4096)")
    oss = specc.load("gpt_oss_20b")
    assert _value(oss, "state_bytes(H=4096, allocator=vllm)") == (256 + 257) * 32_768 * 12
    qnext = specc.load("qwen3_next_80b_a3b")
    assert _value(qnext, "state_bytes(H=4096, B=2, allocator=vllm)") == 2 * (cdiv(4096, 544) + 3) * 1_114_112 * 12


def test_symbolic_context_is_refused():
    m = specc.load("llama31_8b")
    with pytest.raises(specc.Error, match="whole blocks for a given H"):
        m.eval("b_max(H=H, kv_memory=40 GiB, allocator=vllm)", symbolic=True)


def test_fp8_ds_mla_pages_are_64_tokens():
    """DeepSeek-V3, 61 latent layers of 656 B per token under FlashMLA's 64-token pages."""
    m = specc.load("deepseek_v3")
    q = "h_max(kv_memory=40 GiB, allocator=vllm, kv=fp8_ds_mla, mla=compressed, extrapolate=true{})"
    assert _value(m, q.format("")) == (40 * GIB // (656 * 64) // 61 - 1) * 64
    assert _value(m, q.format(", block=16")) == (40 * GIB // (656 * 16) // 61 - 1) * 16


def test_kv_memory_poses_the_same_budget_to_specc_s_rule():
    """kv_memory= without allocator=: specc's exact state (a sliding layer keeps its window),
    the comparison the allocator differs from."""
    m = specc.load("gpt_oss_20b")
    per_request = _value(m, "state_bytes(H=4096)")
    assert _value(m, "b_max(H=4096, kv_memory=40 GiB)") == 40 * GIB // per_request == 413
    llama = specc.load("llama31_8b")
    assert _value(llama, "b_max(H=4096, kv_memory=40 GiB)") == 80
    assert _value(llama, "h_max(kv_memory=40 GiB, extrapolate=true)") == 327_680
