"""Many `tenforge ARGS` in one process: for tables of inputs the CLI must refuse (each case
would otherwise pay ~4 s of imports in a fresh process). bench/bad_inputs.py and the tests'
bad-input tables use it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Run in a child process: each case calls the CLI's main() as `tenforge ARGS` would, with
# stderr captured; one JSON line per case. One process for the whole table: a fresh `tenforge`
# per case paid ~4 s of imports 40 times over.
_BATCH = """
import contextlib, io, json, sys
from tenforge.cli import main
for args in json.loads(sys.stdin.read()):
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            code = main(args)
        except SystemExit as exc:  # argparse's usage errors
            code = exc.code
    print(json.dumps({"code": code, "stderr": err.getvalue(), "stdout": out.getvalue()}),
          flush=True)
"""


def refused_cleanly(answer: dict, phrase: str) -> bool:
    """Exit status 2 and one line of stderr that contains `phrase`: how tenforge refuses."""
    lines = answer["stderr"].strip().splitlines()
    return answer["code"] == 2 and len(lines) == 1 and phrase in lines[0]


def run_in_one_process(cases: list[list[str]], timeout: float = 900,
                       env: dict[str, str] | None = None) -> list[dict]:
    """Exit status, stderr and stdout of `tenforge ARGS` for every ARGS, in one child
    process."""
    done = subprocess.run([sys.executable, "-c", _BATCH], input=json.dumps(cases),
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT,
                          env={**os.environ, **(env or {})})
    answers = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    if len(answers) != len(cases):
        raise RuntimeError(f"the batch stopped after {len(answers)} of {len(cases)} cases: "
                           f"{done.stderr[-1000:]}")
    return answers
