#!/usr/bin/env python3
"""Pairs each imported problem's own reference solution with its imported answer, for
`gorstar reward grade`: a check that import and grader agree on the public sets.

usage: reference_check.py IMPORTED.jsonl PAIRS.jsonl

IMPORTED.jsonl is `gorstar data export` of an import. The response is the row's worked solution
(meta "solution": MATH, MATH-500, Minerva), or GSM8K's rationale (meta "answer") with its final
"#### X" line written as \\boxed{X}, X as the file has it. Rows without a solution are left out.
"""
import json
import re
import sys


def response_of(meta):
    sol = meta.get("solution")
    if isinstance(sol, str) and sol.strip():
        return sol
    rationale = meta.get("answer")
    if isinstance(rationale, str) and "####" in rationale:
        body, _, final = rationale.rpartition("####")
        return body + "The answer is $\\boxed{" + final.strip() + "}$."
    return None


def main(src, dst):
    n = 0
    with open(src) as f, open(dst, "w") as out:
        for line in f:
            row = json.loads(line)
            meta = row["meta"]
            resp = response_of(json.loads(meta) if isinstance(meta, str) else meta)
            if resp is None:
                continue
            out.write(json.dumps({"id": row["id"], "source": row["source"], "response": resp, "answer": row["answer"]}) + "\n")
            n += 1
    print(n, file=sys.stderr)


if __name__ == "__main__":
    main(*sys.argv[1:3])
