#!/usr/bin/env python3
"""PyTorch's scaled_dot_product_attention over contiguous caches, on lab 07's benchmark batches.

The chapter's other yardstick (labs/07-cuda-gqa-decode/README.md, "Measured"): FlashAttention's
decode path as PyTorch calls it, over caches [B, H_kv, L, D] that are not paged at all, next to a
plain read of the same K and V bytes (a `sum`, the read roofline) on the same GPU. Timed like
lab07_bench: CUDA events around one call, the L2 cache flushed (a 256 MB write) before each, after
a warm-up; the median of 30 calls. GB/s = K and V bytes / time. One JSON line per batch.

Not part of the build and not needed by any test; run it where PyTorch sees a GPU:

    python3 labs/07-cuda-gqa-decode/bench/sdpa_contiguous.py > sdpa.jsonl
"""
from __future__ import annotations

import json
import statistics
import sys

# {seqs, tokens, heads, kv_heads}: the batches of bench_lab.cpp's register_gpu_benchmarks().
SHAPES = [(64, 4096, 32, 4), (128, 2048, 32, 8), (16, 4096, 32, 32), (1, 16384, 32, 8),
          (1, 65536, 32, 8)]
HEAD_SIZE = 128
CALLS = 30


def main() -> int:
    try:
        import torch
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError as e:
        print(f"sdpa_contiguous: PyTorch is not installed ({e})", file=sys.stderr)
        return 1
    if not torch.cuda.is_available():
        print("sdpa_contiguous: no CUDA device", file=sys.stderr)
        return 1
    flush = torch.empty(256 * 1024 * 1024, dtype=torch.uint8, device="cuda")

    def timed(fn) -> float:
        """The median seconds of CALLS calls of fn, each after an L2 flush."""
        fn()
        torch.cuda.synchronize()
        times = []
        for _ in range(CALLS):
            flush.fill_(1)
            start = torch.cuda.Event(enable_timing=True)
            stop = torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            stop.record()
            stop.synchronize()
            times.append(start.elapsed_time(stop) * 1e-3)
        return statistics.median(times)

    for seqs, tokens, heads, kv_heads in SHAPES:
        gen = torch.Generator(device="cuda").manual_seed(7000 + seqs)
        q = torch.randn(seqs, heads, 1, HEAD_SIZE, device="cuda", dtype=torch.float16,
                        generator=gen) * 4.0
        k = torch.rand(seqs, kv_heads, tokens, HEAD_SIZE, device="cuda", dtype=torch.float16,
                       generator=gen) * 2 - 1
        v = torch.rand_like(k) * 2 - 1
        kv_bytes = k.numel() * k.element_size() * 2
        row = {"shape": f"{seqs}x{tokens} {heads}/{kv_heads}", "kv_MB": kv_bytes / 1e6,
               "device": torch.cuda.get_device_name(), "torch": torch.__version__}
        try:
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                seconds = timed(lambda: torch.nn.functional.scaled_dot_product_attention(
                    q, k, v, enable_gqa=True))
            row["sdpa_flash_GBps"] = kv_bytes / seconds / 1e9
        except RuntimeError as e:  # a backend that does not take the shape says so
            row["sdpa_flash"] = f"err {type(e).__name__}: {e}"
        row["read_sum_GBps"] = kv_bytes / timed(lambda: (k.sum(), v.sum())) / 1e9
        print(json.dumps(row), flush=True)
        del q, k, v
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
