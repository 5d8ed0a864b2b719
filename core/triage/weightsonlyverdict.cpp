// The weights_only verdict: what torch.load(weights_only=True) of torch 1.13 and of 2.6+ would say
// about a checkpoint, found without unpickling anything (torch-format.md §6).
//
// The pickle bytes are walked exactly as torch's weights-only unpickler reads them, stopping where
// it stops: the first GLOBAL it does not allow or the first opcode it does not know. Structural
// checks (BUILD on a non-allowlisted type, ...) can only fire after an allowed GLOBAL produced such
// an object, which the default allowlists never do, so they are not modelled.

#include "core/io/mappedfile.h"
#include "core/model/checkpoint.h"
#include "core/triage/triage.h"

#include <algorithm>
#include <array>
#include <set>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

namespace ckpt {

const char* globalVerdictName(GlobalVerdict verdict)
{
    switch (verdict) {
    case GlobalVerdict::Allowed:
        return "allowed";
    case GlobalVerdict::NeedsAllowlist:
        return "needs-allowlist";
    case GlobalVerdict::Blocked:
        return "blocked";
    case GlobalVerdict::Unknown:
        return "unknown";
    }
    return "unknown";
}

const char* safetyRatingName(SafetyRating rating)
{
    switch (rating) {
    case SafetyRating::LoadsWithWeightsOnly:
        return "loads-with-weights-only";
    case SafetyRating::NeedsAllowlist:
        return "needs-allowlist";
    case SafetyRating::Dangerous:
        return "dangerous";
    case SafetyRating::NotApplicable:
        return "not-applicable";
    }
    return "not-applicable";
}

namespace {

// torch 1.13 `_get_allowed_globals()` (printed from the installed torch 1.13).
const std::unordered_set<std::string_view>& allowedGlobals113()
{
    static const std::unordered_set<std::string_view> names = [] {
        std::unordered_set<std::string_view> set {"collections.OrderedDict", "torch.nn.parameter.Parameter",
            "torch.serialization._get_layout", "torch.Size", "torch.Tensor", "torch.complex32",
            "torch.complex64", "torch.complex128", "torch.float16", "torch.float32", "torch.float64",
            "torch.int8", "torch.int16", "torch.int32", "torch.int64", "torch._utils._rebuild_parameter",
            "torch._utils._rebuild_tensor", "torch._utils._rebuild_tensor_v2",
            "torch._utils._rebuild_sparse_tensor", "torch._utils._rebuild_meta_tensor_no_storage",
            "torch._utils._rebuild_sparse_csr_tensor", "torch.storage.TypedStorage",
            "torch.storage.UntypedStorage"};
        return set;
    }();
    return names;
}

// torch 2.14 `_get_allowed_globals()` beyond the tensor/storage classes (printed from torch 2.14).
const std::unordered_set<std::string_view>& allowedGlobals26()
{
    static const std::unordered_set<std::string_view> names {"_codecs.encode", "builtins.bytearray",
        "builtins.complex", "builtins.set", "collections.Counter", "collections.OrderedDict",
        "torch.nn.parameter.Parameter", "torch.serialization._get_layout", "torch.Size", "torch.Tensor",
        "torch.device", "torch.storage.TypedStorage", "torch.storage.UntypedStorage",
        "torch._tensor._rebuild_from_type_v2", "torch._utils._rebuild_device_tensor_from_cpu_tensor",
        "torch._utils._rebuild_device_tensor_from_numpy", "torch._utils._rebuild_meta_tensor_no_storage",
        "torch._utils._rebuild_nested_tensor", "torch._utils._rebuild_parameter",
        "torch._utils._rebuild_parameter_with_state", "torch._utils._rebuild_qtensor",
        "torch._utils._rebuild_sparse_tensor", "torch._utils._rebuild_tensor",
        "torch._utils._rebuild_tensor_v2", "torch._utils._rebuild_tensor_v3",
        "torch._utils._rebuild_wrapper_subclass", "torch.bcomplex32", "torch.bfloat16", "torch.bits16",
        "torch.bits1x8", "torch.bits2x4", "torch.bits4x2", "torch.bits8", "torch.bool", "torch.complex128",
        "torch.complex32", "torch.complex64", "torch.float16", "torch.float32", "torch.float4_e2m1fn_x2",
        "torch.float64", "torch.float8_e4m3fn", "torch.float8_e4m3fnuz", "torch.float8_e5m2",
        "torch.float8_e5m2fnuz", "torch.float8_e8m0fnu", "torch.int1", "torch.int2", "torch.int3",
        "torch.int4", "torch.int5", "torch.int6", "torch.int7", "torch.int8", "torch.int16", "torch.int32",
        "torch.int64", "torch.per_channel_affine", "torch.per_channel_affine_float_qparams",
        "torch.per_channel_symmetric", "torch.per_tensor_affine", "torch.per_tensor_symmetric",
        "torch.qint32", "torch.qint8", "torch.quint2x4", "torch.quint4x2", "torch.quint8", "torch.uint1",
        "torch.uint2", "torch.uint3", "torch.uint4", "torch.uint5", "torch.uint6", "torch.uint7",
        "torch.uint8", "torch.uint16", "torch.uint32", "torch.uint64"};
    return names;
}

// The legacy tensor and storage classes both versions allow (torch._tensor_classes and
// torch._storage_classes); 2.x maps the storage names to StorageType by name.
bool isLegacyTensorOrStorageClass(std::string_view path, TorchGeneration generation)
{
    static const std::array<std::string_view, 9> tensorTypes {
        "BFloat16", "Bool", "Byte", "Char", "Double", "Float", "Half", "Int", "Long"};
    static const std::array<std::string_view, 17> storageTypes {"BFloat16", "Bool", "Byte", "Char",
        "ComplexDouble", "ComplexFloat", "Double", "Float", "Half", "Int", "Long", "QInt32", "QInt8",
        "QUInt2x4", "QUInt4x2", "QUInt8", "Short"};
    auto rest = path;
    bool cuda = false, sparse = false;
    if (rest.starts_with("torch.cuda.sparse.")) {
        cuda = sparse = true;
        rest.remove_prefix(18);
    } else if (rest.starts_with("torch.cuda.")) {
        cuda = true;
        rest.remove_prefix(11);
    } else if (rest.starts_with("torch.sparse.")) {
        sparse = true;
        rest.remove_prefix(13);
    } else if (rest.starts_with("torch.")) {
        rest.remove_prefix(6);
    } else {
        return false;
    }
    (void)generation; // both lists are identical in 1.13 and 2.14
    auto stripSuffix = [&](std::string_view suffix) {
        if (!rest.ends_with(suffix))
            return false;
        rest.remove_suffix(suffix.size());
        return true;
    };
    if (stripSuffix("Tensor")) {
        if (rest == "Short")
            return true;
        return std::find(tensorTypes.begin(), tensorTypes.end(), rest) != tensorTypes.end()
            && !(sparse && rest == "Bool");
    }
    if (!sparse && stripSuffix("Storage")) {
        // torch.cuda has no quantized or ComplexDouble/Float... storages; be exact about it.
        if (cuda && (rest.starts_with("Q")))
            return false;
        return std::find(storageTypes.begin(), storageTypes.end(), rest) != storageTypes.end();
    }
    return false;
}

bool isAllowed(std::string_view path, TorchGeneration generation)
{
    if (isLegacyTensorOrStorageClass(path, generation))
        return true;
    return generation == TorchGeneration::Torch113 ? allowedGlobals113().contains(path)
                                                   : allowedGlobals26().contains(path);
}

// Python 2 names as torch 2.x maps them before the allowlist check (torch/_utils.py IMPORT_MAPPING,
// NAME_MAPPING, adapted from _compat_pickle). 1.13 does not map: `__builtin__.set` is rejected there.
std::pair<std::string, std::string> mapPython2Name(std::string module, std::string name)
{
    static const std::map<std::pair<std::string_view, std::string_view>,
        std::pair<std::string_view, std::string_view>>
        names {{{"__builtin__", "xrange"}, {"builtins", "range"}},
            {{"__builtin__", "reduce"}, {"functools", "reduce"}},
            {{"__builtin__", "intern"}, {"sys", "intern"}}, {{"__builtin__", "unichr"}, {"builtins", "chr"}},
            {{"__builtin__", "unicode"}, {"builtins", "str"}}, {{"__builtin__", "long"}, {"builtins", "int"}},
            {{"__builtin__", "basestring"}, {"builtins", "str"}},
            {{"itertools", "izip"}, {"builtins", "zip"}}, {{"itertools", "imap"}, {"builtins", "map"}},
            {{"itertools", "ifilter"}, {"builtins", "filter"}},
            {{"itertools", "ifilterfalse"}, {"itertools", "filterfalse"}},
            {{"itertools", "izip_longest"}, {"itertools", "zip_longest"}},
            {{"UserDict", "IterableUserDict"}, {"collections", "UserDict"}},
            {{"UserDict", "UserDict"}, {"collections", "UserDict"}},
            {{"UserList", "UserList"}, {"collections", "UserList"}},
            {{"UserString", "UserString"}, {"collections", "UserString"}},
            {{"exceptions", "StandardError"}, {"builtins", "Exception"}}};
    static const std::map<std::string_view, std::string_view> modules {{"__builtin__", "builtins"},
        {"copy_reg", "copyreg"}, {"Queue", "queue"}, {"repr", "reprlib"}, {"_abcoll", "collections.abc"},
        {"UserDict", "collections"}, {"UserList", "collections"}, {"UserString", "collections"},
        {"whichdb", "dbm"}, {"StringIO", "io"}, {"cStringIO", "io"}};
    if (auto it = names.find({module, name}); it != names.end())
        return {std::string(it->second.first), std::string(it->second.second)};
    if (module == "exceptions") // every other exceptions.X is builtins.X
        return {"builtins", name};
    if (auto it = modules.find(module); it != modules.end())
        return {std::string(it->second), name};
    return {module, name};
}

// Globals that run code or reach the system when called (or, for whole modules, whatever they
// hold). Keyed by the Python 3 name; the reason is what a person needs to know.
struct BlockedEntry {
    std::string_view name; // "os" (a whole module) or "builtins.eval"
    std::string_view reason;
};
constexpr std::array kBlocked {
    BlockedEntry {"os", "runs shell commands and reaches the file system (os.system, os.popen, ...)"},
    BlockedEntry {"posix", "the module behind os on Linux/macOS: posix.system runs a shell command"},
    BlockedEntry {"nt", "the module behind os on Windows: nt.system runs a shell command"},
    BlockedEntry {"sys", "interpreter internals: sys.modules, sys.settrace, ... give access to anything"},
    BlockedEntry {"subprocess", "starts processes"},
    BlockedEntry {"commands", "Python 2 shell commands"},
    BlockedEntry {"popen2", "Python 2 process spawning"},
    BlockedEntry {"pty", "pty.spawn starts processes"},
    BlockedEntry {"runpy", "runs Python modules and files"},
    BlockedEntry {"code", "code.InteractiveInterpreter runs source text"},
    BlockedEntry {"codeop", "compiles source text"},
    BlockedEntry {"timeit", "timeit.timeit executes its statement string"},
    BlockedEntry {"cProfile", "cProfile.run executes its statement string"},
    BlockedEntry {"profile", "profile.run executes its statement string"},
    BlockedEntry {"pdb", "pdb.run executes its statement string"},
    BlockedEntry {"bdb", "runs code under a debugger"},
    BlockedEntry {"trace", "runs code under a tracer"},
    BlockedEntry {"shutil", "copies, moves and deletes files"},
    BlockedEntry {"tempfile", "creates files"},
    BlockedEntry {"socket", "opens network connections"},
    BlockedEntry {"ssl", "opens network connections"},
    BlockedEntry {"http", "network access"},
    BlockedEntry {"urllib", "network access"},
    BlockedEntry {"urllib2", "network access"},
    BlockedEntry {"requests", "network access"},
    BlockedEntry {"ftplib", "network access"},
    BlockedEntry {"smtplib", "network access"},
    BlockedEntry {"telnetlib", "network access"},
    BlockedEntry {"webbrowser", "opens URLs (starts a browser process)"},
    BlockedEntry {"importlib", "imports arbitrary modules"},
    BlockedEntry {"imp", "imports arbitrary modules"},
    BlockedEntry {"zipimport", "imports code from archives"},
    BlockedEntry {"pkgutil", "imports arbitrary modules"},
    BlockedEntry {"ctypes", "calls native code and writes memory"},
    BlockedEntry {"multiprocessing", "starts processes"},
    BlockedEntry {"asyncio", "starts processes (create_subprocess_shell) and opens connections"},
    BlockedEntry {"signal", "changes process signal handling"},
    BlockedEntry {"pickle", "a nested unpickler: pickle.loads runs whatever its bytes say"},
    BlockedEntry {"_pickle", "a nested unpickler: _pickle.loads runs whatever its bytes say"},
    BlockedEntry {"cPickle", "a nested unpickler"},
    BlockedEntry {"dill", "a nested unpickler that also rebuilds code objects"},
    BlockedEntry {"cloudpickle", "a nested unpickler that also rebuilds code objects"},
    BlockedEntry {"marshal", "marshal.loads rebuilds code objects"},
    BlockedEntry {"shelve", "opens pickled databases"},
    BlockedEntry {"joblib", "joblib.load unpickles files"},
    BlockedEntry {"pip", "installs packages"},
    BlockedEntry {"setuptools", "runs build scripts"},
    BlockedEntry {"distutils", "runs build scripts and commands"},
    BlockedEntry {"builtins.eval", "evaluates a Python expression given as text"},
    BlockedEntry {"builtins.exec", "executes Python source given as text"},
    BlockedEntry {"builtins.execfile", "executes a Python file"},
    BlockedEntry {"builtins.compile", "compiles source text into code objects"},
    BlockedEntry {
        "builtins.getattr", "reaches any attribute of any object (e.g. os.system through a module)"},
    BlockedEntry {"builtins.setattr", "overwrites attributes of modules and classes"},
    BlockedEntry {"builtins.delattr", "deletes attributes of modules and classes"},
    BlockedEntry {"builtins.__import__", "imports arbitrary modules"},
    BlockedEntry {"builtins.open", "opens files for reading or writing"},
    BlockedEntry {"builtins.file", "Python 2 open"},
    BlockedEntry {"builtins.input", "reads from the terminal (and evaluates it in Python 2)"},
    BlockedEntry {"builtins.breakpoint", "starts a debugger"},
    BlockedEntry {"builtins.globals", "exposes the interpreter's global namespace"},
    BlockedEntry {"builtins.vars", "exposes namespaces of modules"},
    BlockedEntry {"builtins.type", "creates classes with arbitrary attributes"},
    BlockedEntry {"functools.partial", "binds arguments to any callable, chaining calls"},
    BlockedEntry {"functools.reduce", "calls any callable repeatedly"},
    BlockedEntry {"operator.attrgetter", "reaches any attribute of any object"},
    BlockedEntry {"operator.methodcaller", "calls any method of any object"},
    BlockedEntry {"types.FunctionType", "builds functions from code objects"},
    BlockedEntry {"types.CodeType", "builds code objects"},
    BlockedEntry {"io.open", "opens files for reading or writing"},
    BlockedEntry {"io.FileIO", "opens files for reading or writing"},
    BlockedEntry {"pathlib.Path", "reaches the file system (write_text, unlink, ...)"},
    BlockedEntry {"numpy.load", "numpy.load(allow_pickle=True) unpickles files"},
    BlockedEntry {"numpy.testing._private.utils.runstring", "executes a source string"},
    BlockedEntry {"torch.load", "a nested torch.load with weights_only=False runs pickles"},
    BlockedEntry {"torch.hub.load", "downloads and runs code from GitHub"},
    BlockedEntry {"torch.jit.load", "loads TorchScript code"},
    BlockedEntry {"torch.serialization.load", "a nested torch.load runs pickles"},
    BlockedEntry {"torch._C._jit_get_operation", "reaches native operators by name"},
    BlockedEntry {"torch.ops", "reaches native operators by name"},
};

const BlockedEntry* blockedEntry(const std::string& module, const std::string& name)
{
    const std::string path = module + "." + name;
    for (const auto& entry : kBlocked) {
        if (path == entry.name || module == entry.name)
            return &entry;
        // A whole-module entry covers its submodules (os.path, urllib.request, ...).
        if (entry.name.find('.') == std::string_view::npos
            && module.starts_with(std::string(entry.name) + "."))
            return &entry;
    }
    return nullptr;
}

// Harmless names outside torch that torch still rejects by default.
bool isKnownHarmless(const std::string& path)
{
    static const std::unordered_set<std::string_view> names {"builtins.dict", "builtins.list",
        "builtins.tuple", "builtins.int", "builtins.float", "builtins.str", "builtins.bytes", "builtins.bool",
        "builtins.slice", "builtins.range", "builtins.frozenset", "builtins.object", "builtins.set",
        "builtins.complex", "builtins.bytearray", "collections.defaultdict", "collections.deque",
        "collections.OrderedDict", "collections.Counter", "copyreg._reconstructor", "numpy.dtype",
        "numpy.ndarray", "numpy.core.multiarray._reconstruct", "numpy._core.multiarray._reconstruct",
        "numpy.core.multiarray.scalar", "numpy._core.multiarray.scalar", "datetime.datetime", "datetime.date",
        "datetime.timedelta", "argparse.Namespace", "enum.Enum", "pathlib.PosixPath", "_codecs.encode",
        "fractions.Fraction", "decimal.Decimal", "uuid.UUID"};
    return names.contains(path);
}

std::string repr(std::string_view text, std::size_t limit)
{
    const bool hasSingle = text.find('\'') != std::string_view::npos;
    const bool hasDouble = text.find('"') != std::string_view::npos;
    const char quote = hasSingle && !hasDouble ? '"' : '\'';
    std::string out(1, quote);
    std::size_t count = 0;
    for (char c : text) {
        if (count++ >= limit) {
            out += "...";
            break;
        }
        if (c == quote || c == '\\')
            out += '\\';
        if (c == '\n')
            out += "\\n";
        else
            out += c;
    }
    out += quote;
    return out;
}

// A call's arguments in Python syntax, summarised: strings cut, nested calls kept (they are the
// chain a person needs to see: eval(compile(...))).
std::string summarise(const PickleGraph& graph, NodeId id, int depth)
{
    if (depth > 4)
        return "...";
    switch (graph.kind(id)) {
    case NodeKind::None:
        return "None";
    case NodeKind::Bool:
        return graph.intValue(id) ? "True" : "False";
    case NodeKind::Int:
        return std::to_string(graph.intValue(id));
    case NodeKind::Float:
        return std::to_string(graph.floatValue(id));
    case NodeKind::String:
        return repr(graph.text(id), 120);
    case NodeKind::Bytes:
        return "b" + repr(graph.text(id), 60);
    case NodeKind::Global:
        return graph.qualifiedName(id);
    case NodeKind::Call:
    case NodeKind::NewObject: {
        auto callee = graph.calleeName(id);
        if (callee.empty())
            callee = summarise(graph, graph.callee(id), depth + 1);
        std::string out = callee + "(";
        const auto args = graph.arguments(id);
        if (graph.kind(args) == NodeKind::Tuple) {
            const auto items = graph.sequence(args);
            for (std::size_t i = 0; i < items.size(); ++i) {
                if (i)
                    out += ", ";
                if (i >= 4) {
                    out += "...";
                    break;
                }
                out += summarise(graph, items[i], depth + 1);
            }
        } else {
            out += "*" + summarise(graph, args, depth + 1);
        }
        return out + ")";
    }
    case NodeKind::Tuple:
    case NodeKind::List: {
        const auto items = graph.sequence(id);
        const bool tuple = graph.kind(id) == NodeKind::Tuple;
        std::string out = tuple ? "(" : "[";
        for (std::size_t i = 0; i < items.size() && i < 4; ++i)
            out += (i ? ", " : "") + summarise(graph, items[i], depth + 1);
        if (items.size() > 4)
            out += ", ...";
        if (tuple && items.size() == 1)
            out += ",";
        return out + (tuple ? ")" : "]");
    }
    case NodeKind::Dict:
        return "{...}";
    default:
        return "<...>";
    }
}

// Where the weights-only unpickler stops in one pickle, read from its bytes.
struct Rejection {
    std::uint64_t offset = 0;
    std::string innerMessage;
    bool isGlobal = false;
};

constexpr std::string_view kUnsafe26
    = "In PyTorch 2.6, we changed the default value of the `weights_only` argument "
      "in `torch.load` from `False` to `True`. Re-running `torch.load` with "
      "`weights_only` set to `False` will likely succeed, but it can result in "
      "arbitrary code execution. Do it only if you got the file from a trusted "
      "source.";
constexpr std::string_view kDocs26
    = "\n\nCheck the documentation of torch.load to learn more about types accepted "
      "by default with weights_only "
      "https://pytorch.org/docs/stable/generated/torch.load.html.";

// The inner WeightsUnpickler message for a rejected GLOBAL.
std::string globalRejectionMessage(
    const std::string& module, const std::string& name, TorchGeneration generation)
{
    if (generation == TorchGeneration::Torch113)
        return "Unsupported class " + module + "." + name;
    static const std::array<std::string_view, 3> njt {"torch.nested._internal.nested_tensor.NestedTensor",
        "torch.nested._internal.nested_tensor._rebuild_njt", "torch._dynamo.decorators._DimRange"};
    static const std::array<std::string_view, 7> dtensor {"torch.distributed.device_mesh.DeviceMesh",
        "torch.distributed.tensor._dtensor_spec.DTensorSpec",
        "torch.distributed.tensor._dtensor_spec.TensorMeta", "torch.distributed.tensor.DTensor",
        "torch.distributed.tensor.placement_types.Partial",
        "torch.distributed.tensor.placement_types.Replicate",
        "torch.distributed.tensor.placement_types.Shard"};
    std::string path = module + "." + name;
    if (module == "sys" || module == "os" || module == "posix" || module == "nt")
        return "Trying to load unsupported GLOBAL " + path + " whose module " + module + " is blocked.";
    if (std::find(njt.begin(), njt.end(), path) != njt.end())
        return "``torch.nested`` and ``torch._dynamo`` must be imported to load nested jagged tensors (NJTs)";
    if (std::find(dtensor.begin(), dtensor.end(), path) != dtensor.end())
        return "``torch.distributed.tensor`` must be imported to load DTensors";
    // torch 2.x drops a leading "builtins." from the name it prints (builtins.eval -> eval).
    if (path.starts_with("builtins")) {
        path = path.substr(8);
        path = !path.empty() && path[0] == '.' ? path.substr(1) : "builtins" + path;
    }
    return "Unsupported global: GLOBAL " + path
        + " was not an allowed global by default. Please use `torch.serialization.add_safe_globals([" + path
        + "])` or the `torch.serialization.safe_globals([" + path
        + "])` context manager to allowlist this global if you trust this class/function.";
}

// torch.load's wrapping of the inner message (1.13: serialization.py UNSAFE_MESSAGE; 2.x:
// _get_wo_message), i.e. str() of the exception torch.load raises.
std::string wrapWeightsOnlyMessage(const std::string& inner, TorchGeneration generation)
{
    if (generation == TorchGeneration::Torch113)
        return "Weights only load failed. Re-running `torch.load` with `weights_only` set to `False` will "
               "likely "
               "succeed, but it can result in arbitrary code execution.Do it only if you get the file from a "
               "trusted source. WeightsUnpickler error: "
            + inner;
    const std::string unsafe(kUnsafe26);
    if (inner.find("was not an allowed global by default.") != std::string::npos)
        return "Weights only load failed. This file can still be loaded, to do so you have two options, "
               "\033[1mdo those steps only if you trust the source of the checkpoint\033[0m. \n\t(1) "
            + unsafe
            + "\n\t(2) Alternatively, to load with `weights_only=True` please check the recommended steps in "
              "the "
              "following error message.\n\tWeightsUnpickler error: "
            + inner + std::string(kDocs26);
    if (inner.find(" must be imported to load") != std::string::npos)
        return "Weights only load failed. " + inner + "\n " + unsafe + "\n";
    std::string out = "Weights only load failed. " + unsafe + "\n";
    if (inner.find(" is blocked.") == std::string::npos)
        out += "Please file an issue with the following so that we can make `weights_only=True` compatible "
               "with "
               "your use case: WeightsUnpickler error: ";
    return out + "\n\n" + inner + std::string(kDocs26);
}

bool opcodeAccepted(std::uint8_t op, TorchGeneration generation)
{
    switch (op) {
    case 'c': // GLOBAL
    case 0x81: // NEWOBJ
    case 'R': // REDUCE
    case 'b': // BUILD
    case 'a': // APPEND
    case 'e': // APPENDS
    case 's': // SETITEM
    case 'u': // SETITEMS
    case '(': // MARK
    case 't': // TUPLE
    case 0x85: // TUPLE1
    case 0x86: // TUPLE2
    case 0x87: // TUPLE3
    case 'N': // NONE
    case 0x89: // NEWFALSE
    case 0x88: // NEWTRUE
    case ')': // EMPTY_TUPLE
    case ']': // EMPTY_LIST
    case '}': // EMPTY_DICT
    case 0x8f: // EMPTY_SET
    case 'J': // BININT
    case 'K': // BININT1
    case 'M': // BININT2
    case 'X': // BINUNICODE
    case 'U': // SHORT_BINSTRING
    case 'Q': // BINPERSID
    case 'h': // BINGET
    case 'j': // LONG_BINGET
    case 'q': // BINPUT
    case 'r': // LONG_BINPUT
    case 0x8a: // LONG1
    case 0x80: // PROTO
    case '.': // STOP
        return true;
    case 'G': // BINFLOAT: 1.13's unpickler lacks it ("Unsupported operand 71")
        return generation == TorchGeneration::Torch26Plus;
    default:
        return false;
    }
}

// Walks one pickle as the weights-only unpickler would and returns where it gives up, if it does.
// nullopt from an unreadable pickle too: then the caller falls back to the recorded globals.
std::optional<std::optional<Rejection>> scanPickle(ByteView data, TorchGeneration generation)
{
    std::uint64_t pos = 0;
    auto readLine = [&](std::string& out) {
        const auto start = pos;
        while (pos < data.size() && data[pos] != '\n')
            ++pos;
        if (pos >= data.size())
            return false;
        out.assign(reinterpret_cast<const char*>(data.data()) + start, pos - start);
        ++pos;
        return true;
    };
    while (pos < data.size()) {
        const auto at = pos;
        const std::uint8_t op = data[pos++];
        if (!opcodeAccepted(op, generation))
            return std::optional<Rejection>(
                Rejection {at, "Unsupported operand " + std::to_string(op), false});
        std::uint64_t skip = 0;
        switch (op) {
        case 'c': {
            std::string module, name;
            if (!readLine(module) || !readLine(name))
                return std::nullopt;
            std::string mappedModule = module, mappedName = name;
            if (generation == TorchGeneration::Torch26Plus)
                std::tie(mappedModule, mappedName) = mapPython2Name(module, name);
            if (!isAllowed(mappedModule + "." + mappedName, generation))
                return std::optional<Rejection>(
                    Rejection {at, globalRejectionMessage(mappedModule, mappedName, generation), true});
            continue;
        }
        case 'J':
        case 'j':
        case 'r':
            skip = 4;
            break;
        case 'K':
        case 'h':
        case 'q':
        case 0x80:
            skip = 1;
            break;
        case 'M':
            skip = 2;
            break;
        case 'G':
            skip = 8;
            break;
        case 'X': {
            auto length = readLittleEndian<std::uint32_t>(data, pos);
            if (!length)
                return std::nullopt;
            skip = 4 + *length;
            break;
        }
        case 'U':
        case 0x8a:
            if (pos >= data.size())
                return std::nullopt;
            skip = 1 + data[pos];
            break;
        case '.':
            return std::optional<Rejection>();
        default:
            break;
        }
        pos += skip;
    }
    return std::nullopt;
}

// The pickles torch.load reads with the weights-only unpickler: data.pkl of a torch zip, the main
// pickle of the legacy format (its header pickles use only accepted opcodes and no GLOBAL).
bool readByTorchLoad(const Checkpoint& checkpoint, const PickleSection& section)
{
    if (checkpoint.format == CheckpointFormat::TorchZip)
        return section.record.ends_with("data.pkl");
    if (checkpoint.format == CheckpointFormat::TorchLegacy)
        return section.record == "main pickle";
    return false;
}

std::string importLine(const std::string& path)
{
    const auto dot = path.rfind('.');
    if (dot == std::string::npos)
        return {};
    return "from " + path.substr(0, dot) + " import " + path.substr(dot + 1);
}

} // namespace

WeightsOnlyVerdict judgeWeightsOnly(const Checkpoint& checkpoint, TorchGeneration generation)
{
    WeightsOnlyVerdict verdict;
    verdict.generation = generation;
    if (checkpoint.format != CheckpointFormat::TorchZip && checkpoint.format != CheckpointFormat::TorchLegacy
        && checkpoint.format != CheckpointFormat::TorchScript
        && checkpoint.format != CheckpointFormat::TorchTar) {
        verdict.rating = SafetyRating::NotApplicable;
        return verdict;
    }

    // Classify every GLOBAL of every pickle, once per name (first occurrence).
    std::set<std::string> seen;
    std::set<std::string> blockedNames;
    std::vector<std::string> rejectedNames; // in first-seen order, for add_safe_globals
    for (const auto& section : checkpoint.pickles) {
        for (const auto& global : section.run.globals) {
            const std::string written = global.module + "." + global.name;
            if (!seen.insert(written).second)
                continue;
            auto [module, name] = generation == TorchGeneration::Torch26Plus
                ? mapPython2Name(global.module, global.name)
                : std::pair {global.module, global.name};
            // Blocked names are judged on the Python 3 name whatever the generation: __builtin__.eval
            // is eval.
            const auto [module3, name3] = mapPython2Name(global.module, global.name);
            const std::string path = module + "." + name;
            const std::string path3 = module3 + "." + name3;
            GlobalClassification classification;
            classification.name = written;
            classification.offset = global.offset;
            classification.record = section.record;
            if (const auto* blocked = blockedEntry(module3, name3)) {
                classification.verdict = GlobalVerdict::Blocked;
                classification.reason = std::string(blocked->reason);
                if (path3 != written)
                    classification.reason += " (" + written + " is " + path3 + ")";
                blockedNames.insert(written);
            } else if (isAllowed(path, generation)) {
                classification.verdict = GlobalVerdict::Allowed;
                classification.reason = std::string("on ") + torchGenerationName(generation)
                    + "'s default weights_only allowlist";
            } else if (module.starts_with("__torch__")) {
                classification.verdict = GlobalVerdict::NeedsAllowlist;
                classification.reason
                    = "a TorchScript class type: loaded by torch.jit.load, not by the unpickler";
            } else if (module == "torch" || module.starts_with("torch.") || isKnownHarmless(path3)) {
                classification.verdict = GlobalVerdict::NeedsAllowlist;
                classification.reason = "harmless, but not on " + std::string(torchGenerationName(generation))
                    + "'s default allowlist";
                rejectedNames.push_back(path);
            } else {
                classification.verdict = GlobalVerdict::Unknown;
                classification.reason = "a class from " + module
                    + " the tool knows nothing about: allowlist it only if you trust that code";
                rejectedNames.push_back(path);
            }
            verdict.globals.push_back(std::move(classification));
        }
    }

    // Opcodes the unpickler refuses, over the pickles torch.load would read.
    for (const auto& section : checkpoint.pickles) {
        if (!readByTorchLoad(checkpoint, section))
            continue;
        for (std::size_t op = 0; op < 256; ++op)
            if (section.run.opcodesSeen.test(op)
                && !opcodeAccepted(static_cast<std::uint8_t>(op), generation)) {
                std::string opName = pickleOpcodeName(static_cast<std::uint8_t>(op));
                if (std::find(verdict.rejectedOpcodes.begin(), verdict.rejectedOpcodes.end(), opName)
                    == verdict.rejectedOpcodes.end())
                    verdict.rejectedOpcodes.push_back(opName);
            }
    }

    // Calls of blocked globals: the chain that would run under weights_only=False.
    const auto& graph = checkpoint.graph;
    for (NodeId id = 0; id < graph.size(); ++id) {
        const auto kind = graph.kind(id);
        if (kind != NodeKind::Call && kind != NodeKind::NewObject)
            continue;
        const auto callee = graph.callee(id);
        if (graph.kind(callee) != NodeKind::Global)
            continue;
        if (!blockedNames.contains(graph.qualifiedName(callee)))
            continue;
        if (verdict.dangerousCallChains.size() < 20)
            verdict.dangerousCallChains.push_back(summarise(graph, id, 0));
    }

    // Where the weights-only unpickler stops first, and what it says.
    for (const auto& section : checkpoint.pickles) {
        if (!readByTorchLoad(checkpoint, section))
            continue;
        std::optional<std::optional<Rejection>> scanned;
        if (checkpoint.file) {
            const auto bytes = checkpoint.file->bytes();
            if (auto view = subView(bytes, section.fileOffset, section.run.endOffset);
                view && !view->empty() && view->back() == '.')
                scanned = scanPickle(*view, generation);
        }
        if (!scanned) {
            // Bytes not at hand (compressed record, truncated): the first rejected GLOBAL by offset.
            for (const auto& global : section.run.globals) {
                auto [module, name] = generation == TorchGeneration::Torch26Plus
                    ? mapPython2Name(global.module, global.name)
                    : std::pair {global.module, global.name};
                if (!isAllowed(module + "." + name, generation)) {
                    scanned = std::optional<Rejection>(
                        Rejection {global.offset, globalRejectionMessage(module, name, generation), true});
                    break;
                }
            }
        }
        if (scanned && *scanned) {
            verdict.firstRejectionOffset = (*scanned)->offset;
            verdict.firstRejectionRecord = section.record;
            verdict.torchMessage = wrapWeightsOnlyMessage((*scanned)->innerMessage, generation);
            break;
        }
    }

    if (checkpoint.format == CheckpointFormat::TorchScript) {
        // torch.load hands TorchScript to torch.jit.load; 2.6+ refuses that with weights_only=True.
        verdict.rating = blockedNames.empty() ? SafetyRating::NotApplicable : SafetyRating::Dangerous;
        if (generation == TorchGeneration::Torch26Plus)
            verdict.torchMessage = "Cannot use ``weights_only=True`` with TorchScript archives passed to "
                                   "``torch.load``. "
                + std::string(kUnsafe26);
        verdict.firstRejectionOffset.reset();
        return verdict;
    }
    if (checkpoint.format == CheckpointFormat::TorchTar && generation == TorchGeneration::Torch26Plus) {
        verdict.torchMessage = "Cannot use ``weights_only=True`` with files saved in the legacy .tar format. "
            + std::string(kUnsafe26);
        verdict.firstRejectionOffset = 0;
    }

    if (!blockedNames.empty()) {
        verdict.rating = SafetyRating::Dangerous;
    } else if (verdict.torchMessage.empty() && verdict.rejectedOpcodes.empty() && rejectedNames.empty()) {
        verdict.rating = SafetyRating::LoadsWithWeightsOnly;
    } else {
        verdict.rating = SafetyRating::NeedsAllowlist;
    }

    if (!rejectedNames.empty() && verdict.rating == SafetyRating::NeedsAllowlist) {
        std::string imports, list;
        for (const auto& path : rejectedNames) {
            imports += importLine(path) + "\n";
            list += (list.empty() ? "" : ", ") + path.substr(path.rfind('.') + 1);
        }
        verdict.addSafeGlobalsCall
            = "import torch\n" + imports + "torch.serialization.add_safe_globals([" + list + "])";
    }
    return verdict;
}

} // namespace ckpt
