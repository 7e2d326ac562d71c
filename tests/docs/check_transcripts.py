#!/usr/bin/env python3
"""The transcripts of the README and the guides are what the tool prints.

Usage: check_transcripts.py SHARDSCOPE SOURCE_ROOT DOCUMENT.md...
       check_transcripts.py SHARDSCOPE SOURCE_ROOT --self-test

A transcript is a line `$ shardscope check ...` or `$ shardscope plan ...` that names a file
under samples/, and the lines after it up to the closing fence or the next `$` line. The
command runs from the source root; every line shown (a `...` line stands for lines left out)
must be a line of its output (stdout and stderr), so a figure that changed fails the test.
Transcripts that make or name other files are checked where they live (tests/cli, the
```text blocks of docs/reference.md). Exit 0 when every transcript holds, 1 otherwise.
"""
import os
import shlex
import subprocess
import sys
import tempfile


def transcripts(path):
    """(line number, command, shown lines) of each transcript of the document."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        words = line[2:].split() if line.startswith("$ ") else []
        if (len(words) >= 3 and words[0] == "shardscope" and words[1] in ("check", "plan")
                and any(w.startswith("samples/") for w in words)):
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```") and not lines[j].startswith("$ "):
                j += 1
            yield i + 1, line[2:], lines[i + 1:j]
            i = j
        else:
            i += 1


def check(binary, root, documents):
    failed = held = 0
    for doc in documents:
        for number, command, shown in transcripts(doc):
            argv = [binary] + shlex.split(command)[1:]
            run = subprocess.run(argv, cwd=root, capture_output=True, text=True, timeout=300)
            printed = {x.rstrip() for x in (run.stdout + run.stderr).split("\n")}
            missing = [s for s in shown if s.strip() and s.strip() != "..." and s.rstrip() not in printed]
            if missing:
                failed += 1
                print(f"FAIL: {doc}:{number}: `{command}` no longer prints:")
                for s in missing[:10]:
                    print(f"    {s}")
            else:
                held += 1
    return held, failed


def self_test(binary, root):
    """A transcript with a wrong figure fails; the same with the right one holds."""
    sample = "samples/megatron_mlp.ein"
    run = subprocess.run([binary, "check", sample], cwd=root, capture_output=True, text=True)
    first = run.stdout.split("\n")[0]
    with tempfile.TemporaryDirectory() as tmp:
        good, bad = os.path.join(tmp, "good.md"), os.path.join(tmp, "bad.md")
        with open(good, "w") as f:
            f.write(f"```\n$ shardscope check {sample}\n{first}\n...\n```\n")
        with open(bad, "w") as f:
            f.write(f"```\n$ shardscope check {sample}\n{first} (not printed)\n```\n")
        ok = check(binary, root, [good]) == (1, 0) and check(binary, root, [bad]) == (0, 1)
    print("self-test:", "holds" if ok else "FAILED")
    return 0 if ok else 1


def main(argv):
    if len(argv) < 4:
        print(__doc__)
        return 2
    binary, root = os.path.abspath(argv[1]), os.path.abspath(argv[2])
    if argv[3] == "--self-test":
        return self_test(binary, root)
    docs = [os.path.join(root, d) for d in argv[3:]]
    held, failed = check(binary, root, docs)
    print(f"{held} transcripts hold, {failed} fail")
    return 1 if failed or held == 0 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
