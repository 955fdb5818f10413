"""The commit-message rule of CONTRIBUTING.md (scripts/check_commits.py; .ci/run checks
every commit after check_commits.BASE): a subject of at most 72 characters, a blank
line, a body that says why; a merge commit needs the short subject only."""
import importlib.util
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "scripts", "check_commits.py")
_spec = importlib.util.spec_from_file_location("check_commits", SCRIPT)    # a script, not a package
cc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cc)

GOOD = "core: one job per module\n\nThe flat folder held four jobs; a reader could not find one.\n"


def test_a_short_subject_with_a_body_passes():
    assert cc.problems(GOOD) == []
    assert cc.problems("x" * 72 + "\n\nwhy\n") == []


def test_each_broken_rule_is_named():
    assert cc.problems("x" * 73 + "\n\nwhy\n") == [f"subject is 73 characters (at most 72): {'x' * 73!r}..."]
    assert cc.problems("core: a subject\n") == ["no body: say why the change was made"]
    assert cc.problems("core: a subject\n\n\n") == ["no body: say why the change was made"]
    assert cc.problems("core: a subject\nwhy, without a blank line\n") == ["no blank line after the subject"]
    assert cc.problems("\n\nbody\n") == ["no subject"]


def test_a_merge_commit_needs_the_short_subject_only():
    assert cc.problems("Merge branch 'restructure'\n", merge=True) == []
    assert cc.problems("M" * 80 + "\n", merge=True) != []


def test_the_hook_reads_a_message_file_without_git_comments(tmp_path):
    msg = tmp_path / "COMMIT_EDITMSG"
    msg.write_text(GOOD + "# Please enter the commit message for your changes.\n")
    hook = [sys.executable, SCRIPT, "--file", str(msg)]
    assert subprocess.run(hook, capture_output=True, timeout=60).returncode == 0
    msg.write_text("core: " + "a very long subject " * 5 + "\n")
    p = subprocess.run(hook, capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and "subject is" in p.stderr and "no body" in p.stderr
