#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Generates the hostile files (make_hostile.py) and checks what ckpt-inspect says about each:

- rated as the manifest says ("dangerous" for every hostile file), with `check` exiting 4;
- every callable the manifest names appears among the verdict's unsafe callables;
- no add_safe_globals call is offered for a dangerous file, and the calls offered for the others
  name only vetted classes (never an unsafe or unknown global);
- `info` puts the rating first (text: the first line; JSON: the first member);
- one judgement of each pickle (one_judgement): the weights-only section, the findings, the load
  simulation, `info` and the exit code all say what the safety verdict says;
- `remap` refuses a dangerous file (exit 4, nothing written), naming both ways out (the override,
  where the file can be remapped, and `extract`); with --allow-dangerous it writes the REMAPPED copy,
  which `check` rates exactly like the input (same rating, same unsafe callables, same calls) and
  which says it is as dangerous, or, where the file cannot be remapped at all, says why (exit 2) and
  writes nothing;
- `extract` and `convert` either refuse (exit 2, a message, nothing written) or write only tensors
  and name the file's callables among the globals they did not carry; what they write loads with
  torch.load(weights_only=True) (extract) or is a safetensors file with {"format": "pt"} (convert);
- no marker file ever appears (nothing ran).

Nothing here unpickles a hostile file; only what ckpt-inspect wrote is loaded, with weights_only=True.
usage: check_hostile.py GENERATOR INSPECT OUTDIR
"""
import concurrent.futures
import glob
import json
import os
import struct
import subprocess
import sys

import torch  # only to load what ckpt-inspect wrote, with weights_only=True

generator, inspect, out = sys.argv[1], sys.argv[2], sys.argv[3]
for stale in glob.glob("/tmp/ckpt-hostile-marker-*"):
    os.remove(stale)
subprocess.run([sys.executable, generator, out], check=True)

failures = []
rows = []
with open(os.path.join(out, "manifest.tsv")) as f:
    next(f)
    for line in f:
        rows.append(line.rstrip("\n").split("\t"))


def run(*args):
    result = subprocess.run([inspect, *args], capture_output=True, timeout=300)
    return result.returncode, result.stdout.decode("utf-8", "replace"), result.stderr.decode("utf-8", "replace")


def one_judgement(name, report, code, info_text, info_json):
    """One judgement of each pickle (issue 24): every section of `check` and `info`, and the exit code,
    say what the safety verdict says, whatever the manifest expects of the file.

    - every global the weights-only section calls blocked or unknown is among the safety verdict's
      unsafe callables (under the Python 3 name it lists it by);
    - the rating is dangerous whenever the weights-only section names such a global or rates the file
      dangerous, and no finding calls it dangerous apart from the rating;
    - `check` exits 4 exactly when the rating is dangerous (and says so in its JSON);
    - where the weights-only walk says torch 2.6+ refuses the file, the load simulation does not say
      that torch.load(weights_only=True) of 2.6+ loads it;
    - `info` (text and JSON) leads with the same rating as `check`.
    """
    problems = []
    safety = report["safety"]
    weights_only = report["weights_only"]
    unsafe = {entry["name"] for entry in safety["unsafe"]}
    flagged = [g for g in weights_only["globals"] if g["verdict"] in ("blocked", "unknown")]
    for global_ in flagged:
        if global_.get("safety_name", global_["name"]) not in unsafe:
            problems.append("the weights-only section calls %s %s, but the safety verdict does not name it "
                            "(unsafe: %s)" % (global_["name"], global_["verdict"], ", ".join(sorted(unsafe)) or "none"))
    dangerous = safety["rating"] == "dangerous"
    if (flagged or weights_only["rating"] == "dangerous") and not dangerous:
        problems.append("the weights-only section says %s (%s) while the safety rating is %s" % (
            weights_only["rating"], ", ".join(g["name"] for g in flagged) or "no global", safety["rating"]))
    for finding in report["findings"]:
        if finding["code"] in ("weights-only-dangerous", "unsafe-pickle") and not dangerous:
            problems.append("finding %s while the safety rating is %s" % (finding["code"], safety["rating"]))
    if dangerous != (code == 4) or report["exit_code"] != code:
        problems.append("check exits %d (JSON says %s) for a file rated %s" % (code, report["exit_code"],
                                                                             safety["rating"]))
    if weights_only["torch_message"] and weights_only["torch"] == "torch 2.6+":
        for simulation in report["load_simulation"]:
            if simulation["torch"] == "torch 2.6+" and simulation["weights_only"] and simulation["loads"]:
                problems.append("the load simulation says torch 2.6+ loads it with weights_only=True, while the "
                                "weights-only walk says: %s" % weights_only["torch_message"][:120])
    if not info_text.startswith("safety: " + safety["rating"] + ":"):
        problems.append("info leads with %r, check rates it %s" % (info_text[:60], safety["rating"]))
    if info_json is not None and info_json.get("safety", {}).get("rating") != safety["rating"]:
        problems.append("info --json rates it %s, check %s" % (info_json.get("safety", {}).get("rating"),
                                                                 safety["rating"]))
    return ["%s: %s" % (name, problem) for problem in problems]


class FileResult:
    """What the checks of one hostile file found; the files are checked concurrently and their
    results gathered in manifest order."""

    def __init__(self):
        self.failures = []
        self.techniques = set()  # empty unless the file is rated dangerous as expected
        self.remapped = False  # remapped under --allow-dangerous, the copy rated like the input
        self.remap_refused = False  # cannot be remapped at all (said so, nothing written)
        self.extracted = []  # (file, command) that wrote a file rather than refusing


def check_file(row):
    result = FileResult()
    check_outputs(row, result)
    check_truncations(row[0], result)
    return result


def check_outputs(row, result):
    name, technique, rating, callables = row
    path = os.path.join(out, name)
    code, stdout, stderr = run("check", "--json", path)
    try:
        report = json.loads(stdout)
    except ValueError:
        result.failures.append("%s: check --json printed no JSON (exit %d): %s" % (name, code, stderr[-300:]))
        return
    safety = report["safety"]
    unsafe = [entry["name"] for entry in safety["unsafe"]]
    if safety["rating"] != rating:
        result.failures.append("%s: rated %s, expected %s: %s" % (name, safety["rating"], rating, safety["headline"]))
    if rating == "dangerous":
        result.techniques.update(technique.split(","))
        if code != 4 or report["exit_code"] != 4:
            result.failures.append("%s: check exits %d, expected 4" % (name, code))
        if safety["add_safe_globals_torch2"] or safety["add_safe_globals_torch113"]:
            result.failures.append("%s: an add_safe_globals call is offered for a dangerous file" % name)
        for finding in report["findings"]:
            if "add_safe_globals" in finding.get("fix", "") and finding["code"] != "load-fails":
                result.failures.append("%s: finding %s offers add_safe_globals" % (name, finding["code"]))
    elif code == 4:
        result.failures.append("%s: check exits 4 for a file rated %s" % (name, rating))
    for expected in [c for c in callables.split(",") if c and c != "-"]:
        if not any(expected in found for found in unsafe):
            result.failures.append("%s: %s is not named (unsafe: %s)" % (name, expected, ", ".join(unsafe) or "none"))
    if rating == "dangerous" and callables == "-" and not safety["cannot_verify"]:
        result.failures.append("%s: rated dangerous without naming a callable or a reason it cannot be verified" % name)
    offered = (safety["add_safe_globals_torch2"] or "") + (safety["add_safe_globals_torch113"] or "")
    vetted = {entry["name"] for entry in safety["vetted_not_default"]}
    for line in offered.splitlines():
        if line.startswith("from "):
            parts = line.split()
            if parts[1] + "." + parts[3] not in vetted:
                result.failures.append("%s: add_safe_globals offers %s.%s, which is not vetted" % (name, parts[1], parts[3]))
    for found in unsafe:
        if found.split(".")[-1] in offered:
            result.failures.append("%s: the unsafe %s appears in an add_safe_globals call" % (name, found))

    # info: the rating first.
    check_code, check_report = code, report
    code, info_text, stderr = run("info", path)
    if not info_text.startswith("safety: " + rating):
        result.failures.append("%s: info does not start with the rating: %r" % (name, info_text[:120]))
    code, stdout, stderr = run("info", "--json", path)
    info = None
    try:
        info = json.loads(stdout)
        if list(info)[0] != "safety" or info["safety"]["rating"] != rating:
            result.failures.append("%s: info --json does not lead with the rating" % name)
    except ValueError:
        result.failures.append("%s: info --json printed no JSON: %s" % (name, stderr[-200:]))
    result.failures.extend(one_judgement(name, check_report, check_code, info_text, info))

    # remap: refused naming both ways out; told, the remapped copy rated exactly like the input.
    if rating == "dangerous":
        target = os.path.join(out, "remapped-" + name)
        for leftover in (target,):
            if os.path.exists(leftover):
                os.remove(leftover)
        code, stdout, stderr = run("remap", path, "-o", target, "--map", "*=cpu")
        if code != 4 or os.path.exists(target) or "refusing" not in stderr:
            result.failures.append("%s: remap did not refuse (exit %d): %s" % (name, code, stderr[-200:]))
        elif "--allow-dangerous" not in stderr and "cannot be remapped in any case" not in stderr:
            result.failures.append("%s: remap's refusal names neither the override nor why there is none: %s"
                            % (name, stderr[-300:]))
        elif "extract" not in stderr:
            result.failures.append("%s: remap's refusal does not name extract for the weights alone: %s"
                            % (name, stderr[-300:]))
        offered_override = "--allow-dangerous writes the remapped copy" in stderr
        code, stdout, stderr = run("remap", path, "-o", target, "--map", "*=cpu", "--allow-dangerous", "--json")
        if code == 2:
            # Not remappable at all (no checkpoint, a damaged pickle, ...), the copy would not rate as
            # the input does, or the write failed: said precisely, nothing written.
            if os.path.exists(target) or not any(
                    said in stderr for said in ("cannot remap", "refusing to give the copy", "could not write")):
                result.failures.append("%s: remap --allow-dangerous refused without saying why, or left %s: %s"
                                % (name, target, stderr[-300:]))
            if offered_override and "cannot remap" in stderr:
                result.failures.append("%s: remap offered --allow-dangerous, which then says it cannot remap: %s"
                                % (name, stderr[-300:]))
            result.remap_refused = True
        elif code != 0 or not os.path.exists(target):
            result.failures.append("%s: remap --allow-dangerous failed (exit %d): %s" % (name, code, stderr[-200:]))
        else:
            try:
                written = json.loads(stdout)
            except ValueError:
                written = {}
            if not written.get("as_dangerous_as_input"):
                result.failures.append("%s: remap --allow-dangerous does not say the copy is as dangerous" % name)
            code, copy_stdout, copy_stderr = run("check", "--json", target)
            try:
                copy_safety = json.loads(copy_stdout)["safety"]
            except (ValueError, KeyError):
                copy_safety = None
            if copy_safety is None:
                result.failures.append("%s: check --json of the remapped copy printed no verdict: %s"
                                % (name, copy_stderr[-200:]))
            elif (copy_safety["rating"] != safety["rating"]
                  or sorted(e["name"] for e in copy_safety["unsafe"]) != sorted(unsafe)
                  or sorted(e["call"] or "" for e in copy_safety["unsafe"])
                  != sorted(e["call"] or "" for e in safety["unsafe"])):
                result.failures.append("%s: the remapped copy is rated %s (%s), the input %s (%s)" % (
                    name, copy_safety["rating"], ", ".join(e["name"] for e in copy_safety["unsafe"]),
                    safety["rating"], ", ".join(unsafe)))
            result.remapped = True
            os.remove(target)

    # extract and convert: refused, or only tensors written and the callables named as not carried.
    for command, suffix in (("extract", ".pt"), ("convert", ".safetensors")):
        target = os.path.join(out, command + "-" + name + suffix)
        if os.path.exists(target):
            os.remove(target)
        code, stdout, stderr = run(command, path, "-o", target, "--json")
        if code == 2:
            if not stderr.strip() or os.path.exists(target):
                result.failures.append("%s: %s refused without a message or left %s" % (name, command, target))
            continue
        if code != 0 or not os.path.exists(target):
            result.failures.append("%s: %s exits %d: %s" % (name, command, code, stderr[-200:]))
            continue
        result.extracted.append((name, command))
        report = json.loads(stdout)
        carried_not = report["globals_not_carried"] if command == "extract" else [
            g for item in report["inputs"] for g in item["globals_not_carried"]]
        for expected in [c for c in callables.split(",") if c and c != "-"]:
            if not any(expected in found for found in carried_not):
                result.failures.append("%s: %s does not name %s as not carried (it names %s)" % (
                    name, command, expected, ", ".join(carried_not) or "none"))
        if command == "extract":
            try:
                loaded = torch.load(target, map_location="cpu", weights_only=True)
                if not all(torch.is_tensor(v) for v in loaded.values()):
                    result.failures.append("%s: the extract holds something other than tensors" % name)
            except Exception as error:  # noqa: BLE001 - any failure to load is the finding
                result.failures.append("%s: the extract does not load with weights_only=True: %s" % (name, error))
        else:
            with open(target, "rb") as f:
                header = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
            if header.get("__metadata__") != {"format": "pt"}:
                result.failures.append("%s: the conversion's __metadata__ is %s" % (name, header.get("__metadata__")))
        os.remove(target)



def check_truncations(name, result):
    """Cut short anywhere, no file crashes the reader or the verdict (a truncated gzip once did)."""
    with open(os.path.join(out, name), "rb") as f:
        data = f.read()
    truncated = os.path.join(out, "truncated-%s.bin" % name)
    for cut in sorted({1, 7, len(data) // 3, len(data) // 2, len(data) - 8, len(data) - 3, len(data) - 1}):
        if cut <= 0 or cut >= len(data):
            continue
        with open(truncated, "wb") as f:
            f.write(data[:cut])
        code, stdout, stderr = run("check", "--json", truncated)
        if code < 0 or code > 4:
            result.failures.append("%s cut at byte %d: check exits %d: %s" % (name, cut, code, stderr[-200:]))
    if os.path.exists(truncated):
        os.remove(truncated)


# Each file's checks start one ckpt-inspect after another (about 17 per file, 3,900 in all); under
# ASan each start costs a quarter of a second, so the files are checked side by side, one per core.
techniques = set()
dangerous_count = 0
extracted_rows = []
remapped_rows = []
remap_refused = []
with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
    for (name, technique, rating, callables), result in zip(rows, pool.map(check_file, rows)):
        failures.extend(result.failures)
        if rating == "dangerous":
            dangerous_count += 1
        techniques.update(result.techniques)
        if result.remapped:
            remapped_rows.append(name)
        if result.remap_refused:
            remap_refused.append(name)
        extracted_rows.extend(result.extracted)

markers = glob.glob("/tmp/ckpt-hostile-marker-*")
if markers:
    failures.append("marker files appeared (something ran): %s" % ", ".join(markers))

print("%d files, %d hostile (rated dangerous), techniques covered: %s" % (
    len(rows), dangerous_count, ", ".join(sorted(techniques, key=int))))
print("remap --allow-dangerous wrote %d remapped copies rated exactly like their input (%s); "
      "%d files cannot be remapped and were refused with the reason" % (
          len(remapped_rows), ", ".join(remapped_rows), len(remap_refused)))
print("extract/convert wrote tensors only from %d of %d runs, refused the rest: %s" % (
    len(extracted_rows), 2 * len(rows), ", ".join("%s %s" % (c, n) for n, c in extracted_rows)))
if failures:
    print("%d failures:" % len(failures))
    for failure in failures:
        print("  " + failure)
    sys.exit(1)
print("all checks passed")
