#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The load simulation and the safety rating against real torch's weights_only lists, file by file.

  check_weightsonly_agreement.py fixtures --inspect BIN --legacy PY --modern PY
  check_weightsonly_agreement.py corpus --inspect BIN --legacy PY --modern PY --corpus DIR

fixtures: every file of tests/fixtures written by real torch (ours, benign) is loaded by real
  torch.load(weights_only=True, map_location='cpu') of torch 1.13 and 2.x, in a process that imported
  torch only ("fresh process" and "after import torch" are the same process for torch.load: it needs
  torch) and, for 2.x, in one that also made every import that grows the list. `ckpt-inspect check
  --json --torch T --assume-imports S --map-location cpu` must agree: it loads exactly when torch
  loads it, and fails with torch's message (ANSI escapes aside) when torch fails in the unpickler;
  and a file real torch loads is rated known-inert or needs-allowlisting, never dangerous.

corpus: the corpus's files (some hostile) are NEVER given to torch.load or to any unpickler that can
  import. Each pickle torch.load would read is run, in a child process with a timeout, through
  CPython's own unpickler (pickle._Unpickler) whose find_class records the name and returns a stub
  class, whose persistent_load and extension codes return stubs, importing nothing. The recorded
  globals are held to the lists enumerated from real torch (torch-allowlists.py probe), together with
  the opcodes torch's weights-only unpickler accepts. For each torch and state, the first refusal in
  stream order is the expected outcome; the simulation must agree, and a file rated dangerous must
  hold some global outside every list (or something the unpickler cannot reach to the end).

Prints one line per file and torch; exits 1 when any disagrees.
"""
import io
import json
import os
import re
import shlex
import subprocess
import sys
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
ANSI = re.compile(r"\x1b\[[0-9;]*m")


# --- run under a torch ------------------------------------------------------------------------
def load_mode(args):
    """Real torch.load(weights_only=True) of our own fixtures, after importing the given modules."""
    import importlib

    os.environ.pop("TORCH_FORCE_WEIGHTS_ONLY_LOAD", None)
    os.environ.pop("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", None)
    imports = [m for m in args[0].split(",") if m]
    import torch  # noqa: F401

    for module in imports:
        importlib.import_module(module)
    out = []
    import warnings

    warnings.simplefilter("ignore")
    for path in args[1:]:
        try:
            torch.load(path, weights_only=True, map_location="cpu")
            out.append({"ok": True, "error": ""})
        except BaseException as error:  # noqa: BLE001
            out.append({"ok": False, "type": type(error).__name__, "error": str(error)})
    json.dump(out, sys.stdout)


# --- the inert oracle (system python, no torch) ------------------------------------------------
def oracle_mode(args):
    """The pickles torch.load would read from one file, each through CPython's unpickler with an
    inert recording find_class: [{"where", "globals": [[module, name, offset]], "opcodes":
    [[name, code, offset]], "complete": bool, "error"}]. Imports nothing, calls nothing."""
    import pickle
    import pickletools
    import resource

    # A hostile file may ask for a huge allocation: the child dies, it does not take the machine.
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
    path = args[0]
    with open(path, "rb") as f:
        data = f.read()

    class Stub:
        def __init__(self, *args, **kwargs):
            pass

        def __setstate__(self, state):
            pass

        def __call__(self, *args, **kwargs):
            return Stub()

        def append(self, item):
            pass

        def extend(self, items):
            pass

        def __setitem__(self, key, value):
            pass

    def run(blob, where):
        recorded = []
        stream = io.BytesIO(blob)

        class Inert(pickle._Unpickler):
            def find_class(self, module, name):
                recorded.append([module, name])
                return type("Stub_" + name.replace(".", "_"), (Stub,), {})

            def persistent_load(self, pid):
                return Stub()

            def get_extension(self, code):
                recorded.append(["<extension>", str(code)])
                self.append(Stub)

            # Nothing the pickle names is ever called: REDUCE, NEWOBJ(_EX) and BUILD leave a stub
            # where CPython would have called (the stubs would do nothing anyway; this way a
            # non-stub callee, a string or a dict, cannot stop the walk early either).
            def _reduce(self):
                self.stack.pop()
                self.stack[-1] = Stub()

            def _newobj(self):
                self.stack.pop()
                self.stack[-1] = Stub()

            def _newobj_ex(self):
                self.stack.pop()
                self.stack.pop()
                self.stack[-1] = Stub()

            def _build(self):
                self.stack.pop()

            dispatch = dict(pickle._Unpickler.dispatch)
            dispatch[pickle.REDUCE[0]] = _reduce
            dispatch[pickle.NEWOBJ[0]] = _newobj
            dispatch[pickle.NEWOBJ_EX[0]] = _newobj_ex
            dispatch[pickle.BUILD[0]] = _build

        result = {"where": where, "globals": [], "opcodes": [], "complete": False, "error": ""}
        try:
            Inert(stream, fix_imports=False, encoding="latin1").load()
            result["complete"] = True
        except BaseException as error:  # noqa: BLE001  (a stub where a value was wanted, ...)
            result["error"] = f"{type(error).__name__}: {error}"[:300]
        end = stream.tell()
        # Where each global sits, and every opcode before the end: pickletools reads, never runs.
        positions, opcodes = [], []
        try:
            for op, arg, pos in pickletools.genops(blob[:end] if end else blob):
                opcodes.append([op.name, op.code.encode("latin1")[0], pos])
                if op.name in ("GLOBAL", "STACK_GLOBAL", "INST", "OBJ"):
                    positions.append(pos)
                if op.name == "STOP":
                    break
        except Exception:  # noqa: BLE001
            pass
        for index, (module, name) in enumerate(recorded):
            result["globals"].append([module, name, positions[index] if index < len(positions) else -1])
        result["opcodes"] = opcodes
        return result, end

    pickles = []
    if zipfile.is_zipfile(io.BytesIO(data)):
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = archive.namelist()
            if any(n.endswith("constants.pkl") for n in names):
                return json.dump({"kind": "torchscript", "pickles": []}, sys.stdout)
            for name in names:
                if name == "data.pkl" or name.endswith("/data.pkl"):
                    try:
                        blob = archive.read(name)
                    except Exception:  # noqa: BLE001  (zipfile checks what torch's reader does not:
                        # the local header's name; read the stored bytes the central directory names)
                        info = archive.getinfo(name)
                        start = info.header_offset
                        name_length = int.from_bytes(data[start + 26:start + 28], "little")
                        extra_length = int.from_bytes(data[start + 28:start + 30], "little")
                        begin = start + 30 + name_length + extra_length
                        blob = data[begin:begin + info.compress_size]
                    pickles.append(run(blob, name)[0])
                    break
        kind = "zip"
    else:
        import tarfile

        try:
            is_tar = tarfile.is_tarfile(path)
        except Exception:  # noqa: BLE001
            is_tar = False
        if is_tar and data[:1] != b"\x80":
            return json.dump({"kind": "tar", "pickles": []}, sys.stdout)
        kind = "legacy"
        offset = 0
        for where in ("magic number", "protocol version", "sys info", "main pickle"):
            if offset >= len(data):
                break
            result, end = run(data[offset:], where)
            pickles.append(result)
            if not result["complete"]:
                break
            offset += end
    json.dump({"kind": kind, "pickles": pickles}, sys.stdout)


# --- the comparisons ---------------------------------------------------------------------------
def run_json(command, timeout=600):
    result = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    return result


def inspect(binary, path, torch, imports):
    result = run_json([binary, "check", "--json", "--torch", torch, "--assume-imports", imports,
                       "--map-location", "cpu", path], timeout=300)
    try:
        report = json.loads(result.stdout)
    except json.JSONDecodeError:
        return None
    return report


def simulation_of(report):
    sims = report.get("load_simulation", []) if report else []
    return sims[0] if sims else None


def fixture_files():
    files = []
    for folder in ("tests/fixtures/torch-1.13", "tests/fixtures/torch-2"):
        directory = os.path.join(SOURCE, folder)
        for name in sorted(os.listdir(directory)):
            if name.endswith((".pt", ".ptl", ".pth")):
                files.append(os.path.join(directory, name))
    sharded = os.path.join(SOURCE, "tests/fixtures/sharded")
    for folder in sorted(os.listdir(sharded)):
        if folder.startswith("broken_") or not os.path.isdir(os.path.join(sharded, folder)):
            continue
        for name in sorted(os.listdir(os.path.join(sharded, folder))):
            if name.endswith(".bin"):
                files.append(os.path.join(sharded, folder, name))
    return files


def states_for(torch):
    """(label, --assume-imports text, modules imported before torch.load)."""
    growing = ""
    with open(os.path.join(SOURCE, "core/safety/torchallowlists.inc")) as f:
        match = re.search(r"kGrowingImports \{([^}]*)\}", f.read())
        growing = [m.strip().strip('"') for m in match.group(1).split(",") if m.strip()]
    states = [("after import torch (= a fresh process)", "torch", [])]
    if torch == "2.x":
        states.append(("after every growing import", "all", growing))
    return states


def fixtures(options):
    files = fixture_files()
    disagreements, skipped, compared = [], [], 0
    for torch, python in (("1.13", options["--legacy"]), ("2.x", options["--modern"])):
        for label, imports, modules in states_for(torch):
            command = shlex.split(python) + [os.path.abspath(__file__), "load", ",".join(modules)] + files
            real = run_json(command)
            if real.returncode != 0:
                raise SystemExit(f"{python} load failed:\n{real.stderr[-3000:]}")
            answers = json.loads(real.stdout)
            for path, truth in zip(files, answers):
                report = inspect(options["--inspect"], path, torch, imports)
                simulation = simulation_of(report)
                if torch == "1.13" and report is not None and simulation is not None \
                        and simulation.get("error_type") != "UnicodeDecodeError":
                    # torch 1.13's torch.load defaults to weights_only=False, and so does its
                    # simulation: its weights_only=True answer is the weights_only verdict's (a
                    # string torch cannot decode stops either unpickler alike: the simulation's).
                    message = report["weights_only"].get("torch_message")
                    simulation = {"loads": not message, "error": message or ""}
                short = os.path.relpath(path, SOURCE)
                if simulation is None:
                    if truth["ok"]:
                        disagreements.append(f"{short} [{torch}, {label}]: torch loads it, check has no simulation")
                    continue
                rating = report["safety"]["rating"]
                if truth["ok"] and rating == "dangerous":
                    disagreements.append(f"{short} [{torch}, {label}]: torch loads it with weights_only=True, rated dangerous")
                if not truth["ok"] and "Weights only load failed" not in truth["error"] \
                        and truth.get("type") != "UnicodeDecodeError":
                    # Not the unpickler's answer: a file of a newer torch that the older one cannot
                    # rebuild (_rebuild_tensor_v2 arguments), outside what the lists decide.
                    skipped.append(f"{short} [{torch}]: {truth.get('type')}: {truth['error'][:100]}")
                    continue
                compared += 1
                said = "loads" if simulation["loads"] else "fails: " + (simulation["error"] or "")[:160]
                print(f"{short} [torch {torch}, {label}]: torch {'loads' if truth['ok'] else 'fails'}; "
                      f"check {said.splitlines()[0] if said else said}; rating {rating}")
                if truth["ok"] != simulation["loads"]:
                    disagreements.append(f"{short} [{torch}, {label}]: torch {'loads' if truth['ok'] else 'fails: ' + truth['error'][:300]}; "
                                         f"simulation {said}")
                elif not truth["ok"] and "WeightsUnpickler error" in truth["error"]:
                    if ANSI.sub("", truth["error"]) != simulation["error"]:
                        disagreements.append(f"{short} [{torch}, {label}]: torch says {truth['error'][:300]!r}; "
                                             f"simulation says {simulation['error'][:300]!r}")
    for line in skipped:
        print("not compared (not the unpickler's answer):", line)
    print(f"{compared} simulations compared with real torch, {len(skipped)} not the unpickler's answer, "
          f"{len(disagreements)} disagreements")
    for line in disagreements:
        print("DISAGREES:", line)
    return 1 if disagreements else 0


def corpus(options):
    helper = shlex.split(options["--legacy"])[0]  # CPython 3.11's unpickler; torch is never imported
    states = {}
    for torch, python in (("1.13", options["--legacy"]), ("2.x", options["--modern"])):
        for label, imports, modules in states_for(torch):
            command = shlex.split(python) + [os.path.join(HERE, "torch-allowlists.py"), "probe", "torch"] + modules
            probe = run_json(command)
            if probe.returncode != 0:
                raise SystemExit(f"{python} probe failed:\n{probe.stderr[-3000:]}")
            lists = json.loads(probe.stdout)
            states[(torch, label, imports)] = lists
    every = set()
    for lists in states.values():
        every |= set(lists["allowed"]) | set(lists["user_allowed"])
    # torch's weights-only unpickler's opcodes (torch/_weights_only_unpickler.py of each version)
    accepted = {"GLOBAL", "NEWOBJ", "REDUCE", "BUILD", "APPEND", "APPENDS", "SETITEM", "SETITEMS", "MARK",
                "TUPLE", "TUPLE1", "TUPLE2", "TUPLE3", "NONE", "NEWFALSE", "NEWTRUE", "EMPTY_TUPLE",
                "EMPTY_LIST", "EMPTY_DICT", "EMPTY_SET", "BININT", "BININT1", "BININT2", "BINUNICODE",
                "SHORT_BINSTRING", "BINPERSID", "BINGET", "LONG_BINGET", "BINPUT", "LONG_BINPUT", "LONG1",
                "PROTO", "STOP"}
    directory = options["--corpus"]
    rows, disagreements = [], []
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        try:
            oracle = subprocess.run([helper, "-I", os.path.abspath(__file__), "oracle", path], capture_output=True,
                                    text=True, timeout=30, env={"PATH": "/usr/bin:/bin"})
            seen = json.loads(oracle.stdout) if oracle.returncode == 0 else None
        except subprocess.TimeoutExpired:
            seen = None
        for (torch, label, imports), lists in states.items():
            report = inspect(options["--inspect"], path, torch, imports)
            if report is None:
                disagreements.append(f"{name}: check --json gave no report")
                continue
            simulation = simulation_of(report)
            if torch == "1.13" and simulation is not None and simulation.get("error_type") != "UnicodeDecodeError":
                # 1.13's torch.load defaults to weights_only=False, and so does its simulation: the
                # weights_only=True answer is the weights_only verdict's.
                message = report["weights_only"].get("torch_message")
                simulation = {"loads": not message, "error": message or ""}
            rating = report["safety"]["rating"]
            allowed = set(lists["allowed"]) | set(lists["user_allowed"])
            mapping = {tuple(k): tuple(v) for k, v in lists.get("name_mapping", [])}
            imports_map = dict(lists.get("import_mapping", []))

            def torch_name(module, item):
                if torch == "2.x":
                    if (module, item) in mapping:
                        module, item = mapping[(module, item)]
                    elif module in imports_map:
                        module = imports_map[module]
                return f"{module}.{item}"

            expected, outside_every_list = None, []
            # A legacy stream is compared only when its main pickle was reached (a file that is no
            # pickle at all, a safetensors file that torch 2.x hands to safetensors, is not a
            # question of lists).
            comparable = bool(seen) and seen["kind"] in ("zip", "legacy") and bool(seen["pickles"]) and (
                seen["kind"] == "zip" or seen["pickles"][-1]["where"] == "main pickle")
            for pickle_seen in (seen or {}).get("pickles", []):
                for module, item, _ in pickle_seen["globals"]:
                    # Under the name torch looks up and under the name CPython does.
                    if torch_name(module, item) not in every and f"{module}.{item}" not in every:
                        outside_every_list.append(f"{module}.{item}")
            if comparable:
                # The first refusal of torch's unpickler, in stream order (the main pickle: the
                # legacy header pickles hold no globals).
                main = seen["pickles"][-1]
                events = [(pos, "op", code) for op, code, pos in main["opcodes"]
                          if op not in accepted and not (op == "BINFLOAT" and torch == "2.x")]
                events += [(pos, "global", torch_name(m, i)) for m, i, pos in main["globals"]
                           if torch_name(m, i) not in allowed]
                events.sort(key=lambda e: (e[0] if e[0] >= 0 else 1 << 62))
                if events:
                    expected = (f"Unsupported operand {events[0][2]}" if events[0][1] == "op"
                                else events[0][2])
                elif main["complete"]:
                    expected = "loads"
            said = None
            if simulation is not None:
                said = "loads" if simulation["loads"] else simulation["error"] or ""
            verdict = "agrees"
            if expected is not None and said is not None:
                if expected == "loads":
                    ok = said == "loads" or "Unsupported" not in said and "WeightsUnpickler" not in said
                    # (a device failure after the unpickler accepted it is still a load the lists allow)
                elif expected.startswith("Unsupported operand"):
                    ok = expected in said
                else:
                    shown = expected[len("builtins."):] if expected.startswith("builtins.") else expected
                    ok = (f"GLOBAL {shown} " in said or f"class {expected}" in said
                          or "must be imported" in said or f"GLOBAL {expected} whose module" in said)
                if not ok:
                    verdict = "DISAGREES"
                    disagreements.append(f"{name} [torch {torch}, {label}]: inert unpickler + real list: "
                                         f"{expected}; simulation: {said[:200]}")
            if rating == "dangerous" and seen and seen["kind"] in ("zip", "legacy") and not outside_every_list \
                    and any(p["complete"] for p in seen["pickles"]):
                cannot = report["safety"].get("cannot_verify") or []
                unsafe = [u.get("name") for u in report["safety"].get("unsafe", [])]
                verdict = "DISAGREES"
                disagreements.append(f"{name} [torch {torch}, {label}]: rated dangerous, yet every global the "
                                     f"inert unpickler met is on some torch list (unsafe: {unsafe}; "
                                     f"cannot verify: {cannot[:2]})")
            rows.append(f"{name} [torch {torch}, {label}]: {seen['kind'] if seen else 'oracle failed'}; "
                        f"oracle {expected}; simulation {(said or '-').splitlines()[0][:120]}; rating {rating}; "
                        f"outside every list {sorted(set(outside_every_list))[:3]}: {verdict}")
    for row in rows:
        print(row)
    print(f"{len(rows)} file x torch comparisons, {len(disagreements)} disagreements")
    for line in disagreements:
        print("DISAGREES:", line)
    return 1 if disagreements else 0


def main():
    args = sys.argv[1:]
    mode = args.pop(0) if args else ""
    if mode == "load":
        return load_mode(args)
    if mode == "oracle":
        return oracle_mode(args)
    options = {}
    while args:
        key = args.pop(0)
        options[key] = args.pop(0)
    for key in ("--inspect", "--legacy", "--modern"):
        if key not in options:
            raise SystemExit(__doc__)
    if not options["--modern"]:
        print("no modern torch configured (CKPT_MODERN_PYTHON): skipped")
        return 77
    if mode == "fixtures":
        return fixtures(options)
    if mode == "corpus":
        if not os.path.isdir(options.get("--corpus", "")):
            print("no corpus here: skipped")
            return 77
        return corpus(options)
    raise SystemExit(__doc__)


if __name__ == "__main__":
    sys.exit(main() or 0)
