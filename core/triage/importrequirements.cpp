// SPDX-License-Identifier: MIT
// Which Python modules torch.load(weights_only=False) must import to unpickle a file, and the
// exact exception when one is missing (checked against torch 1.13 / Python 3.11 and torch 2.14 /
// Python 3.14 by tests/core/tst_loadsimulation.cpp on fixtures whose module is and is not importable).
#include "core/triage/importrequirements.h"

#include "core/model/checkpoint.h"
#include "core/model/formatcapabilities.h"

#include <algorithm>
#include <array>
#include <string_view>

namespace ckpt {

namespace {

// sys.stdlib_module_names of Python 3.11 and 3.14 (public names and the private modules pickles
// reference), plus Python 2 names that pickle's fix_imports maps onto them.
constexpr std::array kStandardLibrary {
    "__future__",
    "_abc",
    "_codecs",
    "_collections",
    "_collections_abc",
    "_datetime",
    "_decimal",
    "_functools",
    "_io",
    "_operator",
    "_pickle",
    "_random",
    "_sre",
    "_struct",
    "_thread",
    "_weakref",
    "abc",
    "aifc",
    "annotationlib",
    "antigravity",
    "argparse",
    "array",
    "ast",
    "asynchat",
    "asyncio",
    "asyncore",
    "atexit",
    "audioop",
    "base64",
    "bdb",
    "binascii",
    "bisect",
    "builtins",
    "bz2",
    "cProfile",
    "calendar",
    "cgi",
    "cgitb",
    "chunk",
    "cmath",
    "cmd",
    "code",
    "codecs",
    "codeop",
    "collections",
    "colorsys",
    "compileall",
    "compression",
    "concurrent",
    "configparser",
    "contextlib",
    "contextvars",
    "copy",
    "copyreg",
    "crypt",
    "csv",
    "ctypes",
    "curses",
    "dataclasses",
    "datetime",
    "dbm",
    "decimal",
    "difflib",
    "dis",
    "distutils",
    "doctest",
    "email",
    "encodings",
    "ensurepip",
    "enum",
    "errno",
    "faulthandler",
    "fcntl",
    "filecmp",
    "fileinput",
    "fnmatch",
    "fractions",
    "ftplib",
    "functools",
    "gc",
    "genericpath",
    "getopt",
    "getpass",
    "gettext",
    "glob",
    "graphlib",
    "grp",
    "gzip",
    "hashlib",
    "heapq",
    "hmac",
    "html",
    "http",
    "idlelib",
    "imaplib",
    "imghdr",
    "imp",
    "importlib",
    "inspect",
    "io",
    "ipaddress",
    "itertools",
    "json",
    "keyword",
    "lib2to3",
    "linecache",
    "locale",
    "logging",
    "lzma",
    "mailbox",
    "mailcap",
    "marshal",
    "math",
    "mimetypes",
    "mmap",
    "modulefinder",
    "msilib",
    "msvcrt",
    "multiprocessing",
    "netrc",
    "nis",
    "nntplib",
    "nt",
    "ntpath",
    "nturl2path",
    "numbers",
    "opcode",
    "operator",
    "optparse",
    "os",
    "ossaudiodev",
    "pathlib",
    "pdb",
    "pickle",
    "pickletools",
    "pipes",
    "pkgutil",
    "platform",
    "plistlib",
    "poplib",
    "posix",
    "posixpath",
    "pprint",
    "profile",
    "pstats",
    "pty",
    "pwd",
    "py_compile",
    "pyclbr",
    "pydoc",
    "pydoc_data",
    "pyexpat",
    "queue",
    "quopri",
    "random",
    "re",
    "readline",
    "reprlib",
    "resource",
    "rlcompleter",
    "runpy",
    "sched",
    "secrets",
    "select",
    "selectors",
    "shelve",
    "shlex",
    "shutil",
    "signal",
    "site",
    "smtpd",
    "smtplib",
    "sndhdr",
    "socket",
    "socketserver",
    "spwd",
    "sqlite3",
    "sre_compile",
    "sre_constants",
    "sre_parse",
    "ssl",
    "stat",
    "statistics",
    "string",
    "stringprep",
    "struct",
    "subprocess",
    "sunau",
    "symtable",
    "sys",
    "sysconfig",
    "syslog",
    "tabnanny",
    "tarfile",
    "telnetlib",
    "tempfile",
    "termios",
    "textwrap",
    "this",
    "threading",
    "time",
    "timeit",
    "tkinter",
    "token",
    "tokenize",
    "tomllib",
    "trace",
    "traceback",
    "tracemalloc",
    "tty",
    "turtle",
    "turtledemo",
    "types",
    "typing",
    "unicodedata",
    "unittest",
    "urllib",
    "uu",
    "uuid",
    "venv",
    "warnings",
    "wave",
    "weakref",
    "webbrowser",
    "winreg",
    "winsound",
    "wsgiref",
    "xdrlib",
    "xml",
    "xmlrpc",
    "zipapp",
    "zipfile",
    "zipimport",
    "zlib",
    "zoneinfo",
    "__builtin__",
    "copy_reg",
    "exceptions",
    "UserDict",
    "UserList",
    "StringIO",
    "cStringIO",
    "Queue",
};

// Libraries pickles commonly reference that a machine with torch may or may not have.
constexpr std::array<std::string_view, 24> kKnownThirdParty {"numpy", "scipy", "pandas", "sklearn",
    "transformers", "tokenizers", "accelerate", "peft", "timm", "torchvision", "torchaudio", "torchtext",
    "lightning", "pytorch_lightning", "omegaconf", "hydra", "yaml", "easydict", "addict", "mmcv", "mmengine",
    "ultralytics", "diffusers", "safetensors"};

std::string_view topLevel(std::string_view module)
{
    return module.substr(0, module.find('.'));
}

bool isStandardLibrary(std::string_view module)
{
    const std::string_view top = topLevel(module);
    return std::find(kStandardLibrary.begin(), kStandardLibrary.end(), top) != kStandardLibrary.end();
}

bool declared(std::string_view module, const std::vector<std::string>& importable)
{
    for (const std::string& name : importable)
        if (module == name
            || (module.starts_with(name) && module.size() > name.size() && module[name.size()] == '.'))
            return true;
    return false;
}

} // namespace

const char* importProviderName(ImportProvider provider)
{
    switch (provider) {
    case ImportProvider::StandardLibrary:
        return "standard library";
    case ImportProvider::Torch:
        return "torch";
    case ImportProvider::Declared:
        return "declared importable";
    case ImportProvider::ThirdParty:
        return "third-party library";
    case ImportProvider::UserCode:
        return "user code";
    case ImportProvider::MainScript:
        return "the saving script (__main__)";
    }
    return "?";
}

std::vector<ImportRequirement> importRequirements(
    const Checkpoint& checkpoint, const std::vector<std::string>& importable)
{
    std::vector<ImportRequirement> requirements;
    // torch.jit.load resolves __torch__ classes itself and imports no Python code; safetensors has
    // no pickle.
    if (!formatCapabilities(checkpoint.format).unpicklerImportsClasses)
        return requirements;
    for (const PickleSection& section : checkpoint.pickles) {
        for (const GlobalReference& global : section.run.globals) {
            // torch's find_class answers every name containing "Storage" with a StorageType.
            if (global.name.find("Storage") != std::string::npos)
                continue;
            auto it = std::find_if(requirements.begin(), requirements.end(),
                [&](const ImportRequirement& r) { return r.module == global.module; });
            if (it == requirements.end()) {
                ImportRequirement requirement;
                requirement.module = global.module;
                requirement.record = section.record;
                requirement.offset = global.offset;
                const std::string_view top = topLevel(global.module);
                if (global.module == "__main__") {
                    requirement.provider = ImportProvider::MainScript;
                } else if (top == "torch") {
                    requirement.provider = ImportProvider::Torch;
                } else if (isStandardLibrary(global.module)) {
                    requirement.provider = ImportProvider::StandardLibrary;
                } else if (declared(global.module, importable)) {
                    requirement.provider = ImportProvider::Declared;
                } else if (std::find(kKnownThirdParty.begin(), kKnownThirdParty.end(), top)
                    != kKnownThirdParty.end()) {
                    requirement.provider = ImportProvider::ThirdParty;
                } else {
                    requirement.provider = ImportProvider::UserCode;
                }
                requirement.importable = requirement.provider == ImportProvider::StandardLibrary
                    || requirement.provider == ImportProvider::Torch
                    || requirement.provider == ImportProvider::Declared || top == "numpy"
                    || (requirement.provider == ImportProvider::MainScript
                        && declared("__main__", importable));
                requirements.push_back(std::move(requirement));
                it = requirements.end() - 1;
            }
            if (std::find(it->names.begin(), it->names.end(), global.name) == it->names.end())
                it->names.push_back(global.name);
        }
    }
    return requirements;
}

std::string missingImportMessage(const ImportRequirement& requirement, TorchGeneration generation)
{
    if (requirement.provider == ImportProvider::MainScript) {
        const std::string name = requirement.names.empty() ? std::string("?") : requirement.names.front();
        if (generation == TorchGeneration::Torch113)
            return "Can't get attribute '" + name + "' on <module '__main__' from '<your script>'>";
        return "module '__main__' has no attribute '" + name + "'";
    }
    // importlib reports the first missing package of the dotted path: the top level when the
    // whole package is absent.
    return "No module named '" + std::string(topLevel(requirement.module)) + "'";
}

std::string importFix(const ImportRequirement& requirement)
{
    const std::string top(topLevel(requirement.module));
    std::string names;
    for (const std::string& name : requirement.names)
        names += (names.empty() ? "" : ", ") + name;
    switch (requirement.provider) {
    case ImportProvider::MainScript:
        return "the file pickles " + names + " as defined in the script that saved it; define or import "
            + names + " in the script that calls torch.load, before the call (e.g. `from mymodel import "
            + names + "`; then `import __main__; __main__." + requirement.names.front() + " = "
            + requirement.names.front() + "`), and say so with `--importable __main__`";
    case ImportProvider::ThirdParty:
        return "install " + top + " where torch.load runs (pip install " + top
            + "), and say so with `--importable " + top + "`";
    case ImportProvider::UserCode:
        return "make the package '" + top + "' importable where torch.load runs: run from the folder that "
            + "holds " + top + "/ (the repository that saved the file) or add that folder to the path "
            + "(PYTHONPATH=/path/to/repo, or sys.path.insert(0, '/path/to/repo') before torch.load), and "
            + "say so with `--importable " + top + "`";
    default:
        return {};
    }
}

} // namespace ckpt
