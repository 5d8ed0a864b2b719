# SPDX-License-Identifier: MIT
"""Snapshot of what ckpt-inspect says and writes for every fixture and corpus file, so a change to
the internals of reading can be shown to keep every output byte-identical (issue 28).

For each input (every file and shard folder under tests/fixtures, tests/hostile and
/work/shared/corpus/files, or the paths given with --inputs), it records the exit code and the
output of `info --json`, `check`, `check --json`, and of `remap --map '*=cpu' --allow-dangerous`:
its text and JSON answers, and the SHA-256 of every file the remap wrote. Wall-clock figures (the
"written in 0.04 s" of a remap, "seconds" in JSON) are blanked out, and so are the two outputs
that differ between two runs of the same binary: the CPU budget of an exported plan (max_memory's
'cpu', this machine's free memory at the time) and the gzip header's time of a remapped .tar.gz or
.nemo (hashed decompressed).

    python3 bench/outputs-snapshot.py BUILD_DIR SNAPSHOT_DIR [--inputs PATH...]
    diff -r BEFORE_SNAPSHOT AFTER_SNAPSHOT     # no output: byte-identical

Build the commit before and the commit after (two build folders, or one rebuilt), snapshot each,
and diff the two folders. Nothing here fails on a difference; `diff -r` says it.
"""
import gzip
import hashlib
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CORPUS = "/work/shared/corpus/files"

# Figures of time, the only thing that may differ between two runs of the same binary.
MEMORY_PATTERN = (re.compile(rb"""(['"]cpu['"]: ?)[0-9]+"""), rb"\1<free memory>")
TIME_PATTERNS = [
    MEMORY_PATTERN,
    (re.compile(rb'("(?:[a-z_]*seconds|[a-z_]*_ms)": )-?[0-9.eE+-]+'), rb"\1<time>"),
    (re.compile(rb"\b[0-9]+(?:\.[0-9]+)? (s|ms)\b"), rb"<time> \1"),
]


def normalise(data, scratch):
    data = data.replace(scratch.encode(), b"<out>")
    for pattern, replacement in TIME_PATTERNS:
        data = pattern.sub(replacement, data)
    return data


def inputs_under(folder):
    found = []
    skip_suffixes = (".expected.json", ".py", ".md", ".sh", ".txt", "README")
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames.sort()
        # A folder of shards, a DCP or a run folder is an input as a whole, as well as file by file.
        if any(n.endswith((".index.json", ".metadata")) or n == ".metadata" for n in filenames) or any(
            n.endswith(".distcp") for n in filenames
        ):
            found.append(dirpath)
        for name in sorted(filenames):
            if name.endswith(skip_suffixes):
                continue
            found.append(os.path.join(dirpath, name))
    return found


def run(command, cwd):
    try:
        done = subprocess.run(command, cwd=cwd, capture_output=True, timeout=300)
        return done.returncode, done.stdout, done.stderr
    except subprocess.TimeoutExpired:
        return "timeout", b"", b""


def main():
    args = sys.argv[1:]
    if len(args) < 2:
        sys.exit(__doc__)
    build, snapshot = os.path.abspath(args[0]), os.path.abspath(args[1])
    cli = os.path.join(build, "app", "ckpt-inspect")
    if "--inputs" in args:
        inputs = [os.path.abspath(p) for p in args[args.index("--inputs") + 1:]]
    else:
        inputs = []
        for folder in (os.path.join(ROOT, "tests", "fixtures"), os.path.join(ROOT, "tests", "hostile"), CORPUS):
            if os.path.isdir(folder):
                inputs += inputs_under(folder)
    os.makedirs(snapshot, exist_ok=True)
    env_root = ROOT + os.sep
    for path in inputs:
        label = path[len(env_root):] if path.startswith(env_root) else path.lstrip("/")
        label = label.replace("/", "__")
        lines = []
        with tempfile.TemporaryDirectory(prefix="ckpt-snapshot-") as scratch:
            commands = [
                ("info --json", [cli, "info", "--json", path]),
                ("check", [cli, "check", path]),
                ("check --json", [cli, "check", "--json", path]),
                ("remap", [cli, "remap", path, "--map", "*=cpu", "--allow-dangerous", "-o", os.path.join(scratch, "text")]),
                ("remap --json", [cli, "remap", path, "--map", "*=cpu", "--allow-dangerous", "--json", "-o", os.path.join(scratch, "json")]),
            ]
            for what, command in commands:
                code, out, err = run(command, ROOT)
                lines.append(f"== {what}: exit {code}\n".encode())
                lines.append(normalise(out, scratch))
                lines.append(b"-- stderr\n")
                lines.append(normalise(err, scratch))
            for dirpath, dirnames, filenames in os.walk(scratch):
                dirnames.sort()
                for name in sorted(filenames):
                    full = os.path.join(dirpath, name)
                    with open(full, "rb") as f:
                        data = f.read()
                    if data[:2] == b"\x1f\x8b":  # gzip: its header holds the time it was written
                        try:
                            data = gzip.decompress(data)
                        except (OSError, EOFError):
                            pass
                    digest = hashlib.sha256(MEMORY_PATTERN[0].sub(MEMORY_PATTERN[1], data)).hexdigest()
                    lines.append(f"== written {os.path.relpath(full, scratch)} {digest}\n".encode())
        with open(os.path.join(snapshot, label + ".txt"), "wb") as f:
            f.write(b"".join(lines))
    print(f"{len(inputs)} inputs snapshotted into {snapshot}")


if __name__ == "__main__":
    main()
