#!/usr/bin/env python3
"""PyTorch's matmul on the training products of gorstar's GEMM benchmarks, fp32 and bf16.

Prints one line per shape: GFLOP/s of the fastest of --calls calls in each dtype, with --threads
threads (the number gorstar's benchmark used). bf16 on a CPU goes through oneDNN when it is built
in (the script says whether); fp32 through the BLAS torch links. The shapes and transposes are
kernels/matmul_bench_test.go's gemmShapes (NT: y = x Wᵀ, NN: dx = dy W, TN: dW = dyᵀ x).

    /usr/bin/python3 bench/gemm_torch.py --threads 2 --calls 5
"""
import argparse
import time

import torch

SHAPES = [
    ("square1024", False, False, 1024, 1024, 1024),
    ("up_fwd_4096x1536x512_NT", False, True, 4096, 1536, 512),
    ("down_fwd_4096x512x1536_NT", False, True, 4096, 512, 1536),
    ("up_dx_4096x512x1536_NN", False, False, 4096, 512, 1536),
    ("up_dw_1536x512x4096_TN", True, False, 1536, 512, 4096),
    ("q_fwd_4096x512x512_NT", False, True, 4096, 512, 512),
    ("lm_head_chunk_fwd_1048x32000x512_NT", False, True, 1048, 32000, 512),
    ("lm_head_chunk_dx_1048x512x32000_NN", False, False, 1048, 512, 32000),
    ("lm_head_chunk_dw_32000x512x1048_TN", True, False, 32000, 512, 1048),
]


def best(f, calls):
    f()
    t = float("inf")
    for _ in range(calls):
        t0 = time.perf_counter()
        f()
        t = min(t, time.perf_counter() - t0)
    return t


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--only", default="", help="run the shapes whose name contains this")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    print(f"torch {torch.__version__}, {a.threads} threads, oneDNN (mkldnn) built: {torch.backends.mkldnn.is_available()}")
    for name, ta, tb, M, N, K in SHAPES:
        if a.only not in name:
            continue
        flops = 2.0 * M * N * K
        row = [name]
        for dt in (torch.float32, torch.bfloat16):
            A = torch.randn(K, M) if ta else torch.randn(M, K)
            B = torch.randn(N, K) if tb else torch.randn(K, N)
            A, B = A.to(dt), B.to(dt)
            opA, opB = (A.t() if ta else A), (B.t() if tb else B)
            out = torch.empty(M, N, dtype=dt)
            t = best(lambda: torch.matmul(opA, opB, out=out), a.calls)
            row.append(f"{'fp32' if dt == torch.float32 else 'bf16'} {flops / t / 1e9:7.1f} GFLOP/s")
        print("  ".join(row))


if __name__ == "__main__":
    main()
