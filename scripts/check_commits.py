#!/usr/bin/env python3
"""Commit messages as CONTRIBUTING.md asks: a subject of at most 72 characters, a blank
line, then a body that says why (merge commits: the subject only).

    python scripts/check_commits.py                   # every commit after BASE on HEAD (.ci/run)
    python scripts/check_commits.py --range A..B      # the commits of a range
    python scripts/check_commits.py --file MSG        # one message (a git commit-msg hook:
                                                      #   ln -s ../../scripts/commit-msg .git/hooks/)

Exits 1 naming each commit and what is wrong with its message.  History before BASE
is what it is; the rule holds from there on.
"""
from __future__ import annotations

import argparse
import subprocess
import sys

BASE = "7bcdda5"        # main when the rule landed (issue 23: the restructure merge); older subjects are not checked
MAX_SUBJECT = 72


def problems(message: str, merge: bool = False) -> list[str]:
    """What is wrong with a commit message (git's text, comments already stripped)."""
    lines = message.rstrip("\n").split("\n")
    subject = lines[0].strip() if lines else ""
    out = []
    if not subject:
        return ["no subject"]
    if len(subject) > MAX_SUBJECT:
        out.append(f"subject is {len(subject)} characters (at most {MAX_SUBJECT}): {subject[:80]!r}...")
    if merge:
        return out
    if len(lines) > 1 and lines[1].strip():
        out.append("no blank line after the subject")
    if not any(line.strip() for line in lines[1:]):
        out.append("no body: say why the change was made")
    return out


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True, check=True).stdout


def check_range(spec: str) -> list[str]:
    """'<sha> <problem>' for every commit of ``spec`` (git rev-list syntax) whose message breaks the rule."""
    report = []
    for sha in _git("rev-list", "--reverse", spec).split():
        parents = _git("rev-list", "--parents", "-n", "1", sha).split()[1:]
        message = _git("log", "-1", "--format=%B", sha)
        for p in problems(message, merge=len(parents) > 1):
            report.append(f"{sha[:10]} {p}")
    return report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--range", help=f"git revision range (default: {BASE}..HEAD)")
    ap.add_argument("--file", help="a commit message file (the commit-msg hook's argument)")
    args = ap.parse_args(argv)
    if args.file:
        with open(args.file, encoding="utf-8") as f:
            text = "\n".join(line for line in f.read().split("\n") if not line.startswith("#"))
        report = problems(text)
    else:
        spec = args.range or f"{BASE}..HEAD"
        try:
            report = check_range(spec)
        except subprocess.CalledProcessError as e:
            print(f"check_commits: git cannot list {spec}: {e.stderr.strip()} (a shallow clone? fetch the "
                  f"history back to {BASE})", file=sys.stderr)
            return 2
    for line in report:
        print(line, file=sys.stderr)
    if report:
        print("commit messages: subject <= 72 characters, a blank line, a body that says why "
              "(CONTRIBUTING.md); fix with git commit --amend or git rebase -i", file=sys.stderr)
    return 1 if report else 0


if __name__ == "__main__":
    sys.exit(main())
