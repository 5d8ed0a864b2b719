// SPDX-License-Identifier: MIT
// The vetted catalog of inert globals and the reasons known gadgets are dangerous. See
// picklecatalog.h for why the verdict is an allowlist.
#include "core/triage/picklecatalog.h"

#include <algorithm>
#include <array>
#include <map>
#include <unordered_map>
#include <unordered_set>

namespace ckpt {

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
std::pair<std::string, std::string> mapPython2NameImpl(const std::string& module, const std::string& name)
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

} // namespace

namespace {

// Names vetted by hand beyond torch's defaults: calling them (or __new__/__setstate__ on them)
// builds plain data. Keyed by the Python 3 name.
struct VettedEntry {
    std::string_view name;
    std::string_view reason;
};
constexpr std::array kVetted {
    VettedEntry {"builtins.set", "builds a set from its items"},
    VettedEntry {"builtins.frozenset", "builds a frozenset from its items"},
    VettedEntry {"builtins.bytearray", "builds a bytearray from bytes"},
    VettedEntry {"builtins.complex", "builds a complex number"},
    VettedEntry {"builtins.slice", "builds a slice object"},
    VettedEntry {"builtins.range", "builds a range object"},
    VettedEntry {"builtins.int", "builds an int"},
    VettedEntry {"builtins.float", "builds a float"},
    VettedEntry {"builtins.bool", "builds a bool"},
    VettedEntry {"builtins.str", "builds a str"},
    VettedEntry {"builtins.bytes", "builds bytes"},
    VettedEntry {"builtins.dict", "builds a dict"},
    VettedEntry {"builtins.list", "builds a list"},
    VettedEntry {"builtins.tuple", "builds a tuple"},
    VettedEntry {"builtins.object", "a plain object (object.__new__)"},
    VettedEntry {"collections.OrderedDict", "an ordered dict (state_dicts are OrderedDicts)"},
    VettedEntry {"collections.Counter", "a dict of counts"},
    VettedEntry {
        "collections.defaultdict", "a dict with a default factory (the factory is rated on its own)"},
    VettedEntry {"collections.deque", "a double-ended queue of values"},
    VettedEntry {"copyreg._reconstructor",
        "protocol 0/1 object creation: cls.__new__ and base.__init__ of classes rated on their own"},
    VettedEntry {"_codecs.encode", "how protocol 2 writes bytes: str.encode('latin1')"},
    VettedEntry {"argparse.Namespace", "training arguments: sets attributes from keywords"},
    VettedEntry {"datetime.datetime", "a timestamp"},
    VettedEntry {"datetime.date", "a date"},
    VettedEntry {"datetime.time", "a time of day"},
    VettedEntry {"datetime.timedelta", "a duration"},
    VettedEntry {"datetime.timezone", "a fixed UTC offset"},
    VettedEntry {"decimal.Decimal", "a decimal number"},
    VettedEntry {"fractions.Fraction", "a fraction"},
    VettedEntry {"uuid.UUID", "a UUID value"},
    VettedEntry {"numpy.ndarray", "NumPy array reconstruction (__setstate__ copies bytes)"},
    VettedEntry {"numpy.dtype", "a NumPy dtype"},
    VettedEntry {"numpy.core.multiarray._reconstruct", "NumPy array reconstruction (np.ndarray.__reduce__)"},
    VettedEntry {"numpy._core.multiarray._reconstruct", "NumPy 2 array reconstruction"},
    VettedEntry {"numpy.core.multiarray.scalar", "a NumPy scalar from its dtype and bytes"},
    VettedEntry {"numpy._core.multiarray.scalar", "a NumPy 2 scalar from its dtype and bytes"},
    VettedEntry {"torch.nn.parameter.UninitializedParameter", "a lazy module's parameter placeholder"},
    VettedEntry {"torch.nn.parameter.Buffer", "a registered buffer marker"},
    VettedEntry {"torch.device", "a device name"},
    VettedEntry {"torch._utils._rebuild_tensor_v3", "rebuilds a tensor view over a storage"},
    VettedEntry {"torch._utils._rebuild_qtensor", "rebuilds a quantized tensor"},
    VettedEntry {"torch._utils._rebuild_parameter_with_state", "rebuilds a Parameter and its attributes"},
    VettedEntry {"torch._utils._rebuild_device_tensor_from_cpu_tensor", "moves a rebuilt tensor to a device"},
    VettedEntry {"torch._utils._rebuild_device_tensor_from_numpy", "a device tensor from a NumPy array"},
    VettedEntry {"torch._utils._rebuild_nested_tensor", "rebuilds a nested tensor"},
    VettedEntry {"torch._utils._rebuild_wrapper_subclass", "rebuilds a wrapper tensor subclass's metadata"},
    VettedEntry {"torch._tensor._rebuild_from_type_v2",
        "rebuilds a tensor subclass; the function and class it names are rated on their own"},
    VettedEntry {"torch.serialization._get_layout", "a tensor layout by name"},
};

// nn.Module and optimizer classes of torch itself: unpickling one is __new__ plus
// Module.__setstate__ / Optimizer.__setstate__, which only fill the object's __dict__. Their
// modules hold no capitalised callables other than classes.
bool isTorchModuleOrOptimizerClass(std::string_view module, std::string_view name)
{
    if (name.empty() || name.front() < 'A' || name.front() > 'Z')
        return false;
    if (name.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
        != std::string_view::npos)
        return false;
    auto identifierModule = [](std::string_view rest) {
        return !rest.empty()
            && rest.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") == std::string_view::npos;
    };
    if (module.starts_with("torch.nn.modules."))
        return identifierModule(module.substr(17));
    if (module.starts_with("torch.optim."))
        return identifierModule(module.substr(12));
    return false;
}

// Universal gadgets and code runners from published exploits (hostile-techniques.md §C), with what
// a person needs to know. Whole modules cover their submodules and attributes.
struct DangerEntry {
    std::string_view name;
    std::string_view reason;
};
constexpr std::array kDangerous {
    DangerEntry {"os", "runs shell commands and reaches the file system (os.system, os.popen, ...)"},
    DangerEntry {"posix", "the module behind os on Linux/macOS: posix.system runs a shell command"},
    DangerEntry {"nt", "the module behind os on Windows: nt.system runs a shell command"},
    DangerEntry {"sys", "interpreter internals: sys.modules, sys.settrace, ... give access to anything"},
    DangerEntry {"subprocess", "starts processes"},
    DangerEntry {"commands", "Python 2 shell commands"},
    DangerEntry {"popen2", "Python 2 process spawning"},
    DangerEntry {"pty", "pty.spawn starts processes"},
    DangerEntry {"runpy", "runs Python modules and code objects"},
    DangerEntry {"code", "code.InteractiveInterpreter runs source text"},
    DangerEntry {"codeop", "compiles source text"},
    DangerEntry {"timeit", "timeit.timeit executes its statement string"},
    DangerEntry {"cProfile", "cProfile.run executes its statement string"},
    DangerEntry {"profile", "profile.run executes its statement string"},
    DangerEntry {"pdb", "pdb.run executes its statement string"},
    DangerEntry {"bdb", "Bdb.run executes code under a debugger"},
    DangerEntry {"trace", "Trace.run executes code under a tracer"},
    DangerEntry {"doctest", "doctest.debug_script executes source text"},
    DangerEntry {"idlelib", "IDLE's run/pyshell modules execute source text"},
    DangerEntry {"lib2to3", "lib2to3.pgen2 evaluates grammar text"},
    DangerEntry {"_interpreters", "run_string executes source text in a subinterpreter"},
    DangerEntry {"_xxsubinterpreters", "run_string executes source text in a subinterpreter"},
    DangerEntry {"uuid._get_command_stdout", "runs a command and reads its output"},
    DangerEntry {"_osx_support", "_read_output runs a shell command"},
    DangerEntry {"_aix_support", "_read_cmd_output runs a shell command"},
    DangerEntry {"imaplib.IMAP4_stream", "starts a process for its connection"},
    DangerEntry {"_pyrepl", "pager.pipe_pager runs a shell command"},
    DangerEntry {"test", "test.support.script_helper runs Python processes"},
    DangerEntry {"pydoc", "pydoc.locate imports anything by name; pydoc.pipepager runs a shell command"},
    DangerEntry {"pipes", "pipes.Template runs shell pipelines"},
    DangerEntry {"venv", "venv.create runs pip and scripts"},
    DangerEntry {"ensurepip", "runs pip"},
    DangerEntry {"shutil", "copies, moves and deletes files"},
    DangerEntry {"tempfile", "creates files"},
    DangerEntry {"socket", "opens network connections"},
    DangerEntry {"ssl", "opens network connections (ssl.get_server_certificate leaks data through DNS)"},
    DangerEntry {"http", "network access"},
    DangerEntry {"urllib", "network access"},
    DangerEntry {"urllib2", "network access"},
    DangerEntry {"requests", "network access"},
    DangerEntry {"ftplib", "network access"},
    DangerEntry {"smtplib", "network access"},
    DangerEntry {"telnetlib", "network access"},
    DangerEntry {"webbrowser", "opens URLs (starts a browser process)"},
    DangerEntry {"logging.FileHandler", "creates and writes files"},
    DangerEntry {"importlib", "imports arbitrary modules"},
    DangerEntry {"imp", "imports arbitrary modules (imp.load_source runs a file)"},
    DangerEntry {"zipimport", "imports code from archives"},
    DangerEntry {"pkgutil", "pkgutil.resolve_name reaches any callable by name, e.g. 'os:system'"},
    DangerEntry {"ctypes", "calls native code and writes memory"},
    DangerEntry {"multiprocessing", "starts processes"},
    DangerEntry {"asyncio",
        "starts processes (create_subprocess_shell, _UnixSubprocessTransport) and opens connections"},
    DangerEntry {"signal", "changes process signal handling"},
    DangerEntry {"pickle", "a nested unpickler: pickle.loads runs whatever its bytes say"},
    DangerEntry {"_pickle", "a nested unpickler: _pickle.loads runs whatever its bytes say"},
    DangerEntry {"cPickle", "a nested unpickler"},
    DangerEntry {"dill", "a nested unpickler that also rebuilds code objects"},
    DangerEntry {"cloudpickle", "a nested unpickler that also rebuilds functions (_make_function)"},
    DangerEntry {"marshal", "marshal.loads rebuilds code objects"},
    DangerEntry {"shelve", "opens pickled databases"},
    DangerEntry {"joblib", "joblib.load unpickles files"},
    DangerEntry {"pip", "installs packages (pip.main)"},
    DangerEntry {"setuptools", "runs build scripts"},
    DangerEntry {"distutils", "runs build scripts and writes files (file_util.write_file)"},
    DangerEntry {"fickling", "scanner tampering: imports the scanner to switch its hooks off"},
    DangerEntry {"picklescan", "scanner tampering"},
    DangerEntry {"modelscan", "scanner tampering"},
    DangerEntry {"builtins.eval", "evaluates a Python expression given as text"},
    DangerEntry {"builtins.exec", "executes Python source given as text"},
    DangerEntry {"builtins.execfile", "executes a Python file"},
    DangerEntry {"builtins.compile", "compiles source text into code objects"},
    DangerEntry {"builtins.apply", "Python 2 apply: calls any callable"},
    DangerEntry {"builtins.getattr", "reaches any attribute of any object (e.g. os.system through a module)"},
    DangerEntry {"builtins.setattr", "overwrites attributes of modules and classes"},
    DangerEntry {"builtins.delattr", "deletes attributes of modules and classes"},
    DangerEntry {"builtins.__import__", "imports arbitrary modules"},
    DangerEntry {"builtins.open", "opens files for reading or writing"},
    DangerEntry {"builtins.file", "Python 2 open"},
    DangerEntry {"builtins.input", "reads from the terminal (and evaluates it in Python 2)"},
    DangerEntry {"builtins.breakpoint", "starts a debugger"},
    DangerEntry {"builtins.globals", "exposes the interpreter's global namespace"},
    DangerEntry {"builtins.vars", "exposes namespaces of modules"},
    DangerEntry {"builtins.type", "creates classes with arbitrary attributes"},
    DangerEntry {"functools.partial", "binds arguments to any callable, chaining calls"},
    DangerEntry {"functools.reduce", "calls any callable repeatedly"},
    DangerEntry {"operator", "attrgetter/itemgetter/methodcaller reach and call any attribute"},
    DangerEntry {"_operator", "attrgetter/itemgetter/methodcaller reach and call any attribute"},
    DangerEntry {"types.FunctionType", "builds functions from code objects"},
    DangerEntry {"types.CodeType", "builds code objects"},
    DangerEntry {"io.open", "opens files for reading or writing"},
    DangerEntry {"io.FileIO", "opens files for reading or writing"},
    DangerEntry {"_io", "opens files for reading or writing"},
    DangerEntry {"pathlib", "reaches the file system (write_text, unlink, ...)"},
    DangerEntry {"numpy.load", "numpy.load(allow_pickle=True) unpickles files"},
    DangerEntry {"numpy.testing", "numpy.testing._private.utils.runstring executes a source string"},
    DangerEntry {"numpy.f2py", "crackfortran.getlincoef evaluates text"},
    DangerEntry {"torch.load", "a nested torch.load with weights_only=False runs pickles"},
    DangerEntry {"torch.serialization.load", "a nested torch.load runs pickles"},
    DangerEntry {"torch.hub", "downloads and runs code from GitHub"},
    DangerEntry {"torch.jit.load", "loads a TorchScript archive from a path or bytes"},
    DangerEntry {"torch._inductor", "codecache.compile_file compiles and loads native code"},
    DangerEntry {"torch.utils.bottleneck", "run_cprofile/run_autograd_prof execute code"},
    DangerEntry {"torch._dynamo", "guards evaluate code"},
    DangerEntry {"torch.fx", "ShapeEnv.evaluate_guards_expression evaluates text"},
    DangerEntry {"torch.utils.collect_env", "run/run_and_read_all run shell commands"},
    DangerEntry {"torch.utils.data.datapipes", "decoders run handlers on data"},
    DangerEntry {"torch.jit.unsupported_tensor_ops", "execWrapper executes source text"},
    DangerEntry {"torch.utils._config_module", "ConfigModule.load_config unpickles bytes"},
    DangerEntry {"torch.distributed.rpc", "runs remote procedure calls"},
    DangerEntry {"torch._C._jit_get_operation", "reaches native operators by name"},
    DangerEntry {"torch.ops", "reaches native operators by name"},
};

} // namespace

std::pair<std::string, std::string> python3Name(const std::string& module, const std::string& name)
{
    return mapPython2NameImpl(module, name);
}

bool onTorchDefaultAllowlist(std::string_view path, TorchGeneration generation)
{
    return isAllowed(path, generation);
}

std::optional<InertGlobal> findInertGlobal(std::string_view module, std::string_view name)
{
    const std::string path = std::string(module) + "." + std::string(name);
    if (name.find('.') != std::string_view::npos)
        return std::nullopt; // a dotted attribute reaches into another module
    InertGlobal entry;
    entry.torch113Default = isAllowed(path, TorchGeneration::Torch113);
    entry.torch2Default = isAllowed(path, TorchGeneration::Torch26Plus);
    if (module.starts_with("__torch__") || module == "torch.jit._pickle") {
        // What torch.jit.load's own unpickler resolves: classes compiled from the archive's
        // TorchScript code (which cannot reach Python) and its value builders.
        entry.reason = "TorchScript: resolved by torch.jit.load's own unpickler, not by Python";
        entry.torch113Default = entry.torch2Default = true;
        entry.offerAllowlist = false;
        return entry;
    }
    if (path == "torch.storage._load_from_bytes") {
        entry.reason = "torch.load(io.BytesIO(b), weights_only=False) of the bytes it is given: rated "
                       "by what those bytes hold";
        entry.offerAllowlist = false;
        return entry;
    }
    for (const VettedEntry& vetted : kVetted)
        if (vetted.name == path) {
            entry.reason = std::string(vetted.reason);
            return entry;
        }
    if (entry.torch113Default || entry.torch2Default) {
        entry.reason = "on torch's default weights_only allowlist (tensors, storages, dtypes, rebuild "
                       "functions)";
        return entry;
    }
    if (isTorchModuleOrOptimizerClass(module, name)) {
        entry.reason = "a torch nn.Module or optimizer class: unpickling fills its __dict__";
        return entry;
    }
    return std::nullopt;
}

std::optional<std::string> knownDanger(std::string_view qualifiedName)
{
    // Every dotted sub-path, so that "pathlib.os.system" and "builtins.getattr" both match.
    std::vector<std::size_t> starts {0};
    for (std::size_t i = 0; i < qualifiedName.size(); ++i)
        if (qualifiedName[i] == '.' || qualifiedName[i] == ':')
            starts.push_back(i + 1);
    for (std::size_t start : starts) {
        const std::string_view rest = qualifiedName.substr(start);
        for (const DangerEntry& entry : kDangerous) {
            if (!rest.starts_with(entry.name))
                continue;
            if (rest.size() == entry.name.size() || rest[entry.name.size()] == '.'
                || rest[entry.name.size()] == ':')
                return std::string(entry.reason);
        }
    }
    return std::nullopt;
}

bool isNestedPickleLoader(std::string_view name)
{
    static const std::unordered_set<std::string_view> loaders {"torch.storage._load_from_bytes",
        "pickle.loads", "pickle._loads", "_pickle.loads", "cPickle.loads", "dill.loads", "cloudpickle.loads",
        "torch.load", "torch.serialization.load", "joblib.load", "numpy.load"};
    return loaders.contains(name);
}

} // namespace ckpt
