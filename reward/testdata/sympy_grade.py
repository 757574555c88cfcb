"""A sympy-based answer checker, the baseline for gorstar's reward benchmark.

It does what Python verifiers in this field do: take the last \\boxed{} outside tool responses,
rewrite LaTeX into sympy syntax, parse both sides with implicit multiplication, and accept when
simplify(a - b) == 0 (or when the normalized strings match). Usage:

    python3 sympy_grade.py MIX.json ROUNDS

MIX.json is a list of [response, reference] pairs. Prints one JSON object:
{"n": grades, "correct": N, "per_grade_s": seconds}.
"""
import json
import re
import sys
import time

import sympy
from sympy.parsing.sympy_parser import (convert_xor, implicit_multiplication_application,
                                        parse_expr, standard_transformations)

TRANSFORMS = standard_transformations + (implicit_multiplication_application, convert_xor)


def last_box(text):
    text = re.sub(r"<tool_response>.*?(</tool_response>|$)", "", text, flags=re.S)
    i = text.rfind("\\boxed{")
    if i < 0:
        return None
    depth, start = 0, i + len("\\boxed")
    for j in range(start, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return text[start + 1:j]
    return None


def frac_to_div(s):
    # \frac{a}{b} -> ((a)/(b)), innermost first.
    pat = re.compile(r"\\frac\{([^{}]*)\}\{([^{}]*)\}")
    while True:
        t = pat.sub(r"((\1)/(\2))", s)
        if t == s:
            return s
        s = t


def normalize(s):
    s = s.strip().strip("$").rstrip(".")
    for a, b in [("\\left", ""), ("\\right", ""), ("\\!", ""), ("\\,", ""), ("\\dfrac", "\\frac"),
                 ("\\tfrac", "\\frac"), ("^\\circ", ""), ("^{\\circ}", ""), ("\\%", ""), ("\\$", ""),
                 ("\\cdot", "*"), ("\\times", "*"), ("\\pi", "pi"), ("\\infty", "oo")]:
        s = s.replace(a, b)
    s = re.sub(r"\\text\{[^{}]*\}", "", s)
    s = re.sub(r"^[a-zA-Z]\s*=\s*", "", s)
    s = frac_to_div(s)
    s = re.sub(r"\\sqrt\{([^{}]*)\}", r"sqrt(\1)", s)
    s = re.sub(r"\\sqrt(\d)", r"sqrt(\1)", s)
    s = s.replace("{", "(").replace("}", ")").replace("\\", "")
    if re.fullmatch(r"-?\d{1,3}(,\d{3})+", s):
        s = s.replace(",", "")
    return s


def parse(s):
    if "," in s:
        return tuple(parse_expr(p, transformations=TRANSFORMS) for p in s.strip("()[]").split(","))
    return parse_expr(s, transformations=TRANSFORMS)


def equivalent(a, b):
    na, nb = normalize(a), normalize(b)
    if na == nb:
        return True
    try:
        ea, eb = parse(na), parse(nb)
        if isinstance(ea, tuple) or isinstance(eb, tuple):
            return isinstance(ea, tuple) and isinstance(eb, tuple) and len(ea) == len(eb) and all(
                sympy.simplify(x - y) == 0 for x, y in zip(ea, eb))
        return sympy.simplify(ea - eb) == 0
    except Exception:
        return False


def grade(response, reference):
    box = last_box(response)
    return box is not None and equivalent(box, reference)


def main():
    with open(sys.argv[1]) as f:
        mix = json.load(f)
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    grade(*mix[0])  # warm up imports and caches outside the timing
    n = correct = 0
    start = time.perf_counter()
    for _ in range(rounds):
        for response, reference in mix:
            correct += grade(response, reference)
            n += 1
    elapsed = time.perf_counter() - start
    print(json.dumps({"n": n, "correct": correct, "per_grade_s": elapsed / n}))


if __name__ == "__main__":
    main()
