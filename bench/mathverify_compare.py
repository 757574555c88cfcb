#!/usr/bin/env python3
"""Compare gorstar's verifier with Hugging Face Math-Verify's regression suite.

Math-Verify keeps its regression cases as pytest parametrizations (and a few plain tests) in
tests/test_all.py and tests/test_mixed_number_extraction.py. This script reads those files as
syntax trees (it never imports or runs them, so neither pytest, sympy nor math_verify is needed),
turns every case into one `gorstar reward grade` input line

    {"response": "<answer>\\boxed{PRED}</answer>", "answer": GOLD}

with Math-Verify's expected verdict kept beside it, grades the lines in each mode, and prints how
often gorstar agrees.

    go build -o gorstar . && python3 bench/mathverify_compare.py --gorstar ./gorstar \
        PATH/tests/test_all.py PATH/tests/test_mixed_number_extraction.py [--show disagree]

Only short cases are graded (gold and prediction up to --max-chars characters, 200 by default):
the long ones test Math-Verify's extraction from free prose, which gorstar does differently on
purpose (the last box, or an <answer> block). Cases that need Math-Verify's options other than
the defaults (allow_set_relation_comp=True) are left out, since gorstar has no such switch.
"""

import argparse
import ast
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict


class Case:
    """One verdict of Math-Verify: verify(gold, pred) == expected."""

    def __init__(self, source, pred, gold, expected):
        self.source, self.pred, self.gold, self.expected = source, pred, gold, bool(expected)

    def line(self):
        return {"response": "<answer>\\boxed{" + self.pred + "}</answer>", "answer": self.gold}


# --- reading values out of the syntax tree ---------------------------------------------------

class Unknown(Exception):
    """A value the reader does not evaluate (a call it does not know, a name it has no value for)."""


def sympy_number(call, env):
    """sympy.Rational(p, q) and sympy.Integer(n) as the text a reference would hold."""
    args = [value_of(a, env) for a in call.args]
    name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
    if name == "Integer" and len(args) == 1:
        return str(int(args[0]))
    if name == "Rational" and len(args) == 2:
        p, q = int(args[0]), int(args[1])
        return str(p) if q == 1 else f"{p}/{q}"
    raise Unknown(name)


def value_of(node, env):
    """Evaluates the few expression forms the two test files use for their data."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in env:
            return env[node.id]
        raise Unknown(node.id)
    if isinstance(node, (ast.Tuple, ast.List)):
        return [value_of(e, env) for e in node.elts]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -value_of(node.operand, env)
    if isinstance(node, ast.JoinedStr):  # f"11{line_separator}5/6"
        parts = []
        for v in node.values:
            if isinstance(v, ast.FormattedValue):
                parts.append(str(value_of(v.value, env)))
            else:
                parts.append(v.value)
        return "".join(parts)
    if isinstance(node, ast.Call):
        fname = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if fname in ("Rational", "Integer"):
            return sympy_number(node, env)
        if fname == "parse" and node.args:  # parse(TEXT, config): the text is the answer
            return value_of(node.args[0], env)
        if fname == "param":  # pytest.param(a, b, id=...)
            return [value_of(a, env) for a in node.args]
    raise Unknown(ast.dump(node)[:60])


def parametrizations(func):
    """The (argument names, list of argument tuples) of a function's parametrize decorators."""
    for dec in func.decorator_list:
        if not (isinstance(dec, ast.Call) and getattr(dec.func, "attr", "") == "parametrize"):
            continue
        names = value_of(dec.args[0], {})
        if isinstance(names, str):
            names = [n.strip() for n in names.split(",")]
        rows = []
        for row in dec.args[1].elts:
            v = value_of(row, {})
            rows.append(v if isinstance(v, list) and len(names) > 1 else [v[0] if isinstance(v, list) else v])
        return names, rows
    return None, [[]]


def body_values(func, env):
    """Adds the function body's simple assignments (text, numbers, parse(...)) to env."""
    env = dict(env)
    for stmt in func.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            try:
                env[stmt.targets[0].id] = value_of(stmt.value, env)
            except Unknown:
                pass
    return env


# --- turning one evaluated test into verdicts -------------------------------------------------

def verdicts(env):
    """The (pred, gold, expected) triples one evaluated test asserts, by the names it uses.

    test_all.py names its cases gold, pred, expected. The mixed-number tests name a prediction and
    what it must (expected_value, percentage_value, existing_non_mixed_value, gold with expected)
    or must not (finite_candidates, incorrectly_combined, unscaled_value) equal.
    """
    if {"gold", "pred", "expected"} <= env.keys():
        return [(env["pred"], env["gold"], env["expected"])]
    out = []
    pred = env.get("prediction")
    if pred is not None:
        if "expected_value" in env:
            out.append((pred, env["expected_value"], True))
        if "gold" in env and "expected" in env:
            out.append((pred, env["gold"], env["expected"]))
        for c in env.get("finite_candidates", []):
            out.append((pred, c, False))
        for name, want in (("incorrectly_combined", False), ("existing_non_mixed_value", True),
                           ("percentage_value", True), ("unscaled_value", False)):
            if name in env:
                out.append((pred, env[name], want))
    if "addition" in env and "subtraction" in env:
        out.append((env["addition"], env["expected_addition"], True))
        out.append((env["subtraction"], env["expected_subtraction"], True))
        out.append((env["subtraction"], env["addition"], False))
    return out


def read_cases(path):
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    cases, skipped = [], Counter()
    base = os.path.basename(path)
    for func in tree.body:
        if not (isinstance(func, ast.FunctionDef) and func.name.startswith("test_")):
            continue
        try:
            names, rows = parametrizations(func)
        except Unknown:
            skipped[func.name + " (unreadable parameters)"] += 1
            continue
        found = 0
        for row in rows:
            env = dict(zip(names or [], row))
            if env.get("allow_set_relation_comp"):  # a non-default option of Math-Verify
                skipped["allow_set_relation_comp=True"] += 1
                continue
            for pred, gold, expected in verdicts(body_values(func, env)):
                cases.append(Case(f"{base}::{func.name}", str(pred), str(gold), expected))
                found += 1
        if not found:
            skipped[func.name + " (no verdict this script reads)"] += 1
    return cases, skipped


# --- grading ----------------------------------------------------------------------------------

def grade(gorstar, cases, mode, workdir):
    src = os.path.join(workdir, f"in-{mode}.jsonl")
    dst = os.path.join(workdir, f"out-{mode}.jsonl")
    with open(src, "w", encoding="utf-8") as f:
        for c in cases:
            f.write(json.dumps(c.line(), ensure_ascii=False) + "\n")
    subprocess.run([gorstar, "--quiet", "reward", "grade", "--in", src, "--out", dst, "--mode", mode],
                   check=True)
    with open(dst, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+", help="Math-Verify test files (tests/test_all.py, tests/test_mixed_number_extraction.py)")
    ap.add_argument("--gorstar", default="gorstar", help="the gorstar binary (default: gorstar on PATH)")
    ap.add_argument("--modes", default="strict,rstar2", help="comma-separated reward modes to run")
    ap.add_argument("--max-chars", type=int, default=200, help="longest gold or prediction graded")
    ap.add_argument("--show", choices=["none", "disagree", "all"], default="none",
                    help="list the cases where gorstar disagrees (or every case)")
    ap.add_argument("--jsonl", help="also write the graded cases of the first mode to this file")
    args = ap.parse_args()

    cases, skipped = [], Counter()
    for path in args.files:
        c, s = read_cases(path)
        cases += c
        skipped.update(s)
    total = len(cases)
    cases = [c for c in cases if len(c.pred) <= args.max_chars and len(c.gold) <= args.max_chars]
    print(f"{total} cases read, {len(cases)} short enough to grade (<= {args.max_chars} chars)")
    for why, n in sorted(skipped.items()):
        print(f"  not graded: {why}: {n}")

    with tempfile.TemporaryDirectory() as workdir:
        for i, mode in enumerate(args.modes.split(",")):
            results = grade(args.gorstar, cases, mode, workdir)
            agree = 0
            by_source = defaultdict(lambda: [0, 0])
            false_pos = false_neg = 0
            for c, r in zip(cases, results):
                ok = r["correct"] == c.expected
                agree += ok
                by_source[c.source][0] += ok
                by_source[c.source][1] += 1
                if not ok:
                    false_pos += r["correct"]
                    false_neg += not r["correct"]
                if args.show == "all" or args.show == "disagree" and not ok:
                    mark = "ok  " if ok else "DIFF"
                    print(f"  {mark} [{mode}] expected={int(c.expected)} got={int(r['correct'])} "
                          f"pred={c.pred!r} gold={c.gold!r} ({r['reason']}; {c.source})")
            print(f"{mode}: agree on {agree}/{len(cases)} ({100 * agree / max(len(cases), 1):.1f}%); "
                  f"gorstar accepts {false_pos} Math-Verify rejects, rejects {false_neg} it accepts")
            for src in sorted(by_source):
                a, n = by_source[src]
                print(f"  {src}: {a}/{n}")
            if i == 0 and args.jsonl:
                with open(args.jsonl, "w", encoding="utf-8") as f:
                    for c, r in zip(cases, results):
                        r["expected"] = c.expected
                        r["source"] = c.source
                        f.write(json.dumps(r, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    sys.exit(main())
