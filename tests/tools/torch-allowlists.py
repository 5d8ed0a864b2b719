#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""torch's weights_only allowlists, read from real torch: the source of core/safety/torchallowlists.inc.

torch.load(weights_only=True) accepts a GLOBAL when its name is on `_get_allowed_globals()` or on the
list `add_safe_globals` fills (`_get_user_allowed_globals()`, torch 2.x). torch itself fills that
second list as its modules are imported: in torch 2.14 a plain `import torch` adds the built-in
exception classes and traceback summaries (torch.distributed.distributed_c10d), NJTs
(torch.nested) and mesh layouts; `import torch.distributed.tensor` adds DTensor and its placements,
`import torch._dynamo` adds _DimRange. So the list depends on the process: this script asks real
torch in three kinds of state, each in a fresh interpreter:

  fresh     only what reading the lists needs (`import torch._weights_only_unpickler`, which
            imports torch itself: in every torch here it is the same list as after `import torch`)
  torch     after `import torch`
  <module>  after `import torch` and `import <module>`, for every torch module that calls
            add_safe_globals at import time (found in torch's own sources) and a few that users
            import before loading (torch.distributed.checkpoint, ...)

Modes (each prints to stdout unless --out is given):

  torch-allowlists.py probe [MODULE ...]     run under a torch: JSON of the lists after importing
                                             the modules (none: the "fresh" state)
  torch-allowlists.py json                   run under a torch: every state of that torch, as JSON
  torch-allowlists.py generate --legacy PY --modern PY [--out FILE]
                                             the C++ table for core/safety/torchallowlists.inc
  torch-allowlists.py check --legacy PY --modern PY --table FILE
                                             exit 1 (and say what differs) when FILE is not what
                                             real torch gives now

PY is a command line ("/usr/bin/python3", "tests/tools/modern-python"). Regenerate the committed
table with:

  tests/tools/torch-allowlists.py generate --legacy /usr/bin/python3 \\
      --modern tests/tools/modern-python --out core/safety/torchallowlists.inc

Nothing is loaded or unpickled: the lists are read from torch's own functions.
"""
import ast
import importlib
import inspect
import json
import os
import shlex
import subprocess
import sys

# Modules users import before torch.load that might grow the list; the ones that call
# add_safe_globals are found in torch's sources and added to these.
USER_IMPORTS = [
    "torch.distributed.checkpoint",
    "torch.distributed.fsdp",
]


def read_lists():
    """The lists the weights-only unpickler consults, as they are in this process now."""
    import torch
    import torch._weights_only_unpickler as wo

    wo._get_allowed_globals.cache_clear()  # lru_cache: built from what torch holds now
    allowed = sorted(wo._get_allowed_globals())
    user = sorted(wo._get_user_allowed_globals()) if hasattr(wo, "_get_user_allowed_globals") else []
    out = {
        "torch_version": torch.__version__,
        "python_version": sys.version.split()[0],
        "allowed": allowed,
        "user_allowed": user,
        "blocklisted_modules": list(getattr(wo, "_blocklisted_modules", [])),
    }
    # Python 2 names torch maps before it looks (torch 2.x: _read_global_instruction).
    if hasattr(wo, "_read_global_instruction"):
        import torch._utils as tu

        out["import_mapping"] = sorted(tu.IMPORT_MAPPING.items())
        out["name_mapping"] = sorted([list(k), list(v)] for k, v in tu.NAME_MAPPING.items())
    else:
        out["import_mapping"] = []
        out["name_mapping"] = []
    # The names Unpickler.load answers with a message of its own ("must be imported to load ..."),
    # read from its source: the literal lists of `full_path in [...]` tests after the allowlists.
    special = []
    tree = ast.parse(_dedent(inspect.getsource(wo.Unpickler.load)))
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Compare):
            test = node.test
            if (isinstance(test.left, ast.Name) and test.left.id == "full_path" and len(test.ops) == 1
                    and isinstance(test.ops[0], ast.In) and isinstance(test.comparators[0], ast.List)):
                names = [e.value for e in test.comparators[0].elts if isinstance(e, ast.Constant)]
                message = None
                for statement in node.body:
                    if isinstance(statement, ast.Raise) and isinstance(statement.exc, ast.Call):
                        arg = statement.exc.args[0] if statement.exc.args else None
                        if isinstance(arg, ast.Constant):
                            message = arg.value
                special.append({"names": names, "message": message})
    out["special_messages"] = special
    return out


def _dedent(source):
    import textwrap

    return textwrap.dedent(source)


def safe_globals_call_sites():
    """torch modules whose code calls add_safe_globals (importing each shows whether it does so at import)."""
    import torch

    root = os.path.dirname(torch.__file__)
    modules = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in ("testing", "test", "__pycache__"))
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            path = os.path.join(folder, name)
            try:
                with open(path, encoding="utf-8") as f:
                    text = f.read()
            except (OSError, UnicodeDecodeError):
                continue
            if "add_safe_globals(" not in text:
                continue
            if not any("add_safe_globals(" in line and not line.lstrip().startswith(("#", "def "))
                       for line in text.splitlines()):
                continue
            relative = os.path.relpath(path, os.path.dirname(root))[:-3].replace(os.sep, ".")
            if relative.endswith(".__init__"):
                relative = relative[: -len(".__init__")]
            if relative in ("torch.serialization", "torch._weights_only_unpickler"):
                continue
            modules.append(relative)
    return modules


def probe(modules):
    import torch._weights_only_unpickler  # noqa: F401  (imports torch)

    for module in modules:
        importlib.import_module(module)
    return read_lists()


def run_probe(python, modules):
    command = shlex.split(python) + [os.path.abspath(__file__), "probe"] + modules
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        raise SystemExit(f"{python} probe {modules} failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout)


def every_state(python):
    """{"fresh": lists, "torch": lists, "imports": {module: lists}} of one torch."""
    sites_command = shlex.split(python) + [os.path.abspath(__file__), "sites"]
    sites = subprocess.run(sites_command, capture_output=True, text=True, timeout=600)
    if sites.returncode != 0:
        raise SystemExit(f"{python} sites failed:\n{sites.stderr[-3000:]}")
    candidates = sorted(set(json.loads(sites.stdout)) | set(USER_IMPORTS))
    states = {"fresh": run_probe(python, []), "torch": run_probe(python, ["torch"]), "imports": {}}
    base = set(states["torch"]["allowed"]) | set(states["torch"]["user_allowed"])
    for module in candidates:
        try:
            lists = run_probe(python, ["torch", module])
        except SystemExit as error:  # a module this build cannot import (no distributed, ...)
            states.setdefault("unimportable", {})[module] = str(error)[-300:]
            continue
        if (set(lists["allowed"]) | set(lists["user_allowed"])) != base:
            states["imports"][module] = lists
    return states


def names_of(lists):
    return set(lists["allowed"]) | set(lists["user_allowed"])


def table(legacy, modern):
    """Per name, per torch, a bit mask of the states whose list holds it (bit 0 fresh, bit 1 after
    import torch, bit 2+i after importing growing import i), the growing imports, and the rest."""
    imports = sorted(set(legacy["imports"]) | set(modern["imports"]))
    masks = {}
    for index, states in enumerate((legacy, modern)):
        def mark(names, bit):
            for name in names:
                masks.setdefault(name, [0, 0])[index] |= 1 << bit

        mark(names_of(states["fresh"]), 0)
        mark(names_of(states["torch"]), 1)
        base = names_of(states["torch"])
        for position, module in enumerate(imports):
            if module in states["imports"]:
                mark(names_of(states["imports"][module]) - base, 2 + position)
    return imports, masks


def cpp_string(text):
    return json.dumps(text)  # ASCII names: a JSON string is a C++ string literal


def generate(legacy_python, modern_python):
    legacy, modern = every_state(legacy_python), every_state(modern_python)
    imports, masks = table(legacy, modern)
    lines = [
        "// SPDX-License-Identifier: MIT",
        "// GENERATED by tests/tools/torch-allowlists.py from real torch; do not edit. Regenerate:",
        "//   tests/tools/torch-allowlists.py generate --legacy /usr/bin/python3",
        "//       --modern tests/tools/modern-python --out core/safety/torchallowlists.inc",
        "// (tests/core/tst_weightsonlyallowlists.cpp fails when real torch says otherwise.)",
        "//",
        f"// torch 1.13: {legacy['torch']['torch_version']} (Python {legacy['torch']['python_version']})",
        f"// torch 2.x:  {modern['torch']['torch_version']} (Python {modern['torch']['python_version']})",
        "// Included once, by core/safety/picklecatalog.cpp.",
        "",
        "namespace ckpt::generated {",
        "",
        f"constexpr std::string_view kTorch113Version = {cpp_string(legacy['torch']['torch_version'])};",
        f"constexpr std::string_view kTorch2Version = {cpp_string(modern['torch']['torch_version'])};",
        "",
        "// Bits of AllowlistEntry's masks: the list of a fresh process (only what reading the lists",
        "// imports), the list after `import torch`, and after each import below (bit 2 + its index).",
        "constexpr std::uint32_t kFreshProcess = 1U << 0;",
        "constexpr std::uint32_t kAfterImportTorch = 1U << 1;",
        f"constexpr std::array<std::string_view, {len(imports)}> kGrowingImports {{"
        + ", ".join(cpp_string(m) for m in imports) + "};",
        "",
        "struct AllowlistEntry {",
        "    std::string_view name; // as the unpickler looks it up: module + \".\" + qualified name",
        "    std::uint32_t torch113; // the states whose list holds it in torch 1.13 (0: none)",
        "    std::uint32_t torch2; // the same in torch 2.x",
        "};",
        "",
        "// Sorted by name (binary search).",
        f"constexpr std::array<AllowlistEntry, {len(masks)}> kAllowlist {{{{",
    ]
    for name in sorted(masks):
        m113, m2 = masks[name]
        lines.append(f"    {{{cpp_string(name)}, 0x{m113:x}U, 0x{m2:x}U}},")
    lines.append("}};")
    lines.append("")
    blocked = modern["torch"]["blocklisted_modules"]
    lines.append("// torch 2.x refuses every GLOBAL of these modules, allowlisted or not (_blocklisted_modules).")
    lines.append(f"constexpr std::array<std::string_view, {len(blocked)}> kTorch2BlockedModules {{"
                 + ", ".join(cpp_string(m) for m in blocked) + "};")
    lines.append("")
    lines.append("// torch 2.x's Python 2 names (torch._utils IMPORT_MAPPING and NAME_MAPPING), applied before it looks.")
    im = modern["torch"]["import_mapping"]
    lines.append(f"constexpr std::array<std::pair<std::string_view, std::string_view>, {len(im)}> kTorch2ImportMapping {{{{")
    for old, new in im:
        lines.append(f"    {{{cpp_string(old)}, {cpp_string(new)}}},")
    lines.append("}};")
    nm = modern["torch"]["name_mapping"]
    lines.append("struct NameMapping {")
    lines.append("    std::string_view module, name, newModule, newName;")
    lines.append("};")
    lines.append(f"constexpr std::array<NameMapping, {len(nm)}> kTorch2NameMapping {{{{")
    for (om, on), (nmod, nname) in nm:
        lines.append(f"    {{{cpp_string(om)}, {cpp_string(on)}, {cpp_string(nmod)}, {cpp_string(nname)}}},")
    lines.append("}};")
    lines.append("")
    special = modern["torch"]["special_messages"]
    lines.append("// Names torch 2.x answers with a message of its own when they are on no list (Unpickler.load).")
    lines.append("struct SpecialMessage {")
    lines.append("    std::string_view name, message;")
    lines.append("};")
    pairs = [(name, group["message"]) for group in special for name in group["names"]]
    lines.append(f"constexpr std::array<SpecialMessage, {len(pairs)}> kTorch2SpecialMessages {{{{")
    for name, message in pairs:
        lines.append(f"    {{{cpp_string(name)}, {cpp_string(message)}}},")
    lines.append("}};")
    lines.append("")
    lines.append("} // namespace ckpt::generated")
    return "\n".join(lines) + "\n", legacy, modern


def main():
    args = sys.argv[1:]
    if not args:
        raise SystemExit(__doc__)
    mode = args.pop(0)
    if mode == "probe":
        json.dump(probe(args), sys.stdout, indent=1)
        return 0
    if mode == "sites":
        json.dump(safe_globals_call_sites(), sys.stdout)
        return 0

    def option(name, default=None):
        if name in args:
            return args[args.index(name) + 1]
        return default

    if mode == "json":
        json.dump(every_state(sys.executable), sys.stdout, indent=1)
        return 0
    legacy, modern = option("--legacy"), option("--modern")
    if not legacy or not modern:
        raise SystemExit("give --legacy PY and --modern PY")
    text, legacy_states, modern_states = generate(legacy, modern)
    if mode == "generate":
        out = option("--out")
        if option("--json"):
            with open(option("--json"), "w") as f:
                json.dump({"legacy": legacy_states, "modern": modern_states}, f, indent=1)
        if out:
            with open(out, "w") as f:
                f.write(text)
        else:
            sys.stdout.write(text)
        return 0
    if mode == "check":
        with open(option("--table")) as f:
            committed = f.read()
        if committed == text:
            print("the committed table is what real torch gives")
            return 0
        import difflib

        sys.stdout.writelines(difflib.unified_diff(committed.splitlines(True), text.splitlines(True),
                                                   "committed", "real torch"))
        print("regenerate: tests/tools/torch-allowlists.py generate --legacy /usr/bin/python3 "
              "--modern tests/tools/modern-python --out core/safety/torchallowlists.inc")
        return 1
    raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    sys.exit(main())
