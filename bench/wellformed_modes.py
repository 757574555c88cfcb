#!/usr/bin/env python3
"""Count the well-formed rollouts of a `gorstar rollout --jsonl` traces file and sort the others by
their first failure.

Well formed is rollout.Trajectory.WellFormed: no tool call that failed to parse, and the rollout
ended on an <answer> holding a \\boxed{} (or on the turn limit while calling). A malformed rollout
is counted once, under the first rule it breaks:

  call_garbled     a <tool_call> whose body is not {"name": …, "arguments": {…}}
  call_unclosed    the same, and the </tool_call> is missing too
  runaway          no parse error, but the response budget ran out (finish truncated)
  no_call          a turn with neither a tool call nor an <answer>
  answer_unboxed   an <answer> without a \\boxed{}
  error            the backend failed

Apart from that it counts first_call_failed: trajectories whose first tool call failed by the
model's fault (a parse error, or the sandbox's error, timeout, memory or output_limit), as
rollout.Trajectory.FailedToolCalls counts them; and, of those, first_call_planted: the first call's
code is the failed call that `data synth --sft` recovery conversations show (`print(result)`; before
2026-12-01 a misspelt `prnt(…)`, also counted).

Usage: wellformed_modes.py TRACES.jsonl [--json]
"""

import json
import sys

MODES = ("call_garbled", "call_unclosed", "runaway", "no_call", "answer_unboxed", "error")
FAILED = ("parse_error", "error", "timeout", "memory", "output_limit")


def failure(t):
    """The trajectory's first failure mode, or None when it is well formed."""
    for turn in t["turns"]:
        if turn.get("status") == "parse_error":
            if "missing its closing" in turn.get("tool_text", ""):
                return "call_unclosed"
            return "call_garbled"
    finish = t["finish"]
    if finish == "answer":
        return None if t.get("extracted") else "answer_unboxed"
    if finish == "max_turns":
        return None
    if finish == "truncated":
        return "runaway"
    if finish == "no_call":
        return "no_call"
    return "error"


def first_call(t):
    """The trajectory's first turn with a tool call, or None."""
    return next((turn for turn in t["turns"] if turn.get("status")), None)


def main(argv):
    if len(argv) < 2 or argv[1].startswith("-"):
        sys.exit("usage: wellformed_modes.py TRACES.jsonl [--json]")
    counts = dict.fromkeys(MODES, 0)
    total = well = first_failed = first_planted = 0
    with open(argv[1], encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                t = json.loads(line)
            except json.JSONDecodeError as e:
                sys.exit(f"{argv[1]}:{n}: not a JSON trace: {e}")
            total += 1
            call = first_call(t)
            if call and call["status"] in FAILED:
                first_failed += 1
                code = call.get("code", "").strip()
                first_planted += code.startswith("prnt(") or code == "print(result)"
            mode = failure(t)
            if mode is None:
                well += 1
            else:
                counts[mode] += 1
    out = {"trajectories": total, "well_formed": well,
           "well_formed_share": well / total if total else 0.0, **counts,
           "first_call_failed": first_failed, "first_call_planted": first_planted}
    if "--json" in argv[2:]:
        print(json.dumps(out))
        return
    print(f"well_formed {well}/{total} ({100 * out['well_formed_share']:.1f}%)  "
          + "  ".join(f"{m} {counts[m]}" for m in MODES)
          + f"  first_call_failed {first_failed} (planted {first_planted})")


if __name__ == "__main__":
    main(sys.argv)
