#!/usr/bin/env python3
"""Write N synthetic math problems as JSONL for the data-import benchmark.

Rows look like public math datasets (a few hundred characters of text with LaTeX, an answer, an
id, a source and a couple of extra fields) so that import speed and memory are measured on
realistic sizes. Deterministic: the same N gives the same file.

usage: gen_problems.py N OUT.jsonl
"""
import json
import random
import sys

WORDS = ("let find the value of such that triangle circle integer positive real number sum product "
         "points area radius probability sequence function remainder divided digits prime square "
         "polynomial roots coefficient angle degrees side length perimeter chosen randomly").split()


def problem(rng, i):
    a, b, c = rng.randint(2, 999), rng.randint(2, 999), rng.randint(2, 99)
    words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 70)))
    tex = rf"$\frac{{{a}}}{{{b}}} + x^{{{c}}} = \sqrt{{{a * b}}}$"
    text = f"Problem {i}: {words.capitalize()} {tex}. What is the remainder when $N$ is divided by {c}?"
    kind = rng.random()
    answer = str(rng.randint(0, 10**6)) if kind < 0.8 else rf"\frac{{{a}}}{{{b}}}"
    return {"id": f"bench-{i}", "problem": text, "answer": answer,
            "source": rng.choice(["amc", "aime", "olympiad", "synthetic"]),
            "level": rng.randint(1, 5), "tags": [rng.choice(WORDS), rng.choice(WORDS)]}


def main():
    n, out = int(sys.argv[1]), sys.argv[2]
    rng = random.Random(1)
    with open(out, "w") as f:
        for i in range(n):
            f.write(json.dumps(problem(rng, i)))
            f.write("\n")


if __name__ == "__main__":
    main()
