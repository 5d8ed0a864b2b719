// SPDX-License-Identifier: MIT
// The vetted catalog of inert globals and the reasons known gadgets are dangerous. See
// picklecatalog.h for why the verdict is an allowlist.
#include "core/safety/picklecatalog.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <unordered_map>
#include <unordered_set>

// torch's weights_only lists, generated from real torch (namespace ckpt::generated).
#include "core/safety/torchallowlists.inc"

namespace ckpt {

namespace {

// The states of the process the imports stand for: a fresh process and `import torch` always
// (torch.load needs torch), then one bit per growing import assumed.
std::uint32_t stateMask(const TorchImports& imports)
{
    std::uint32_t mask = generated::kFreshProcess | generated::kAfterImportTorch;
    for (const std::string& module : imports.modules)
        for (std::size_t i = 0; i < generated::kGrowingImports.size(); ++i)
            if (generated::kGrowingImports[i] == module)
                mask |= 1U << (2 + i);
    return mask;
}

const generated::AllowlistEntry* findAllowlistEntry(std::string_view path)
{
    const auto& table = generated::kAllowlist;
    const auto it = std::lower_bound(table.begin(), table.end(), path,
        [](const generated::AllowlistEntry& entry, std::string_view name) { return entry.name < name; });
    return it != table.end() && it->name == path ? &*it : nullptr;
}

bool isAllowed(std::string_view path, TorchGeneration generation, const TorchImports& imports = {})
{
    const generated::AllowlistEntry* entry = findAllowlistEntry(path);
    if (!entry)
        return false;
    const std::uint32_t states = generation == TorchGeneration::Torch113 ? entry->torch113 : entry->torch2;
    // torch 1.13 has no add_safe_globals: its list is the same in every state.
    return (states & stateMask(imports)) != 0;
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
    // On torch 2.x's list after `import torch` (torch.distributed registers them): noted here for
    // what they do beyond building data.
    VettedEntry {"traceback.StackSummary", "a list of traceback frame records (a list subclass)"},
    VettedEntry {"traceback.FrameSummary",
        "a traceback frame record; built with lookup_line it reads one line of the named source file "
        "through linecache (a file read, no code run)"},
    // torch.distributed.checkpoint's .metadata (read by DCP with pickle.load): dataclasses of names,
    // sizes and offsets (torch/distributed/checkpoint/metadata.py, filesystem.py). Their only own
    // code on unpickling is TensorProperties.__setstate__, which unpacks a tuple and maps an enum.
    VettedEntry {"torch.distributed.checkpoint.metadata.Metadata",
        "DCP's checkpoint metadata: a dataclass of per-tensor storage metadata"},
    VettedEntry {"torch.distributed.checkpoint.metadata.MetadataIndex",
        "DCP: a frozen dataclass naming a tensor chunk (fqn, offset, index)"},
    VettedEntry {"torch.distributed.checkpoint.metadata.ChunkStorageMetadata",
        "DCP: a dataclass of a chunk's offsets and sizes"},
    VettedEntry {"torch.distributed.checkpoint.metadata.TensorStorageMetadata",
        "DCP: a dataclass of a tensor's properties, size and chunks"},
    VettedEntry {"torch.distributed.checkpoint.metadata.BytesStorageMetadata",
        "DCP: an empty dataclass marking a non-tensor entry"},
    VettedEntry {"torch.distributed.checkpoint.metadata.TensorProperties",
        "DCP: a dataclass of dtype, layout and flags (__setstate__ unpacks a tuple)"},
    VettedEntry {"torch.distributed.checkpoint.metadata._MEM_FORMAT_ENCODING",
        "DCP: an Enum of memory formats (calling it looks a member up)"},
    VettedEntry {"torch.distributed.checkpoint.metadata.StorageMeta",
        "DCP: a dataclass of checkpoint, save and load ids"},
    VettedEntry {"torch.distributed.checkpoint.filesystem._StorageInfo",
        "DCP: a dataclass of a chunk's file name, offset and length"},
    // The save plans a framework keeps in its metadata (Megatron-core's all_local_plans):
    // torch/distributed/checkpoint/planner.py's frozen dataclasses and Enum, filesystem.py's prefix;
    // none has its own unpickling code.
    VettedEntry {"torch.distributed.checkpoint.planner.SavePlan",
        "DCP: a frozen dataclass of a rank's write items and planner data"},
    VettedEntry {"torch.distributed.checkpoint.planner.WriteItem",
        "DCP: a frozen dataclass naming one item to write (index, type, tensor data)"},
    VettedEntry {"torch.distributed.checkpoint.planner.WriteItemType",
        "DCP: an Enum of item kinds (calling it looks a member up)"},
    VettedEntry {"torch.distributed.checkpoint.planner.TensorWriteData",
        "DCP: a frozen dataclass of a chunk, its properties and size"},
    VettedEntry {"torch.distributed.checkpoint.planner.BytesIOWriteData",
        "DCP: a frozen dataclass of a bytes item's length"},
    VettedEntry {"torch.distributed.checkpoint.filesystem._StoragePrefix",
        "DCP: a dataclass of a data file name prefix"},
    // An in-memory bytes buffer (what DCP's default planner pickles for an io.BytesIO value):
    // construction and __setstate__ keep bytes and a position; no file is touched. The rest of
    // _io/io (open, FileIO) stays dangerous.
    VettedEntry {
        "_io.BytesIO", "an in-memory bytes buffer (its state: bytes and a position); touches no file"},
    VettedEntry {
        "io.BytesIO", "an in-memory bytes buffer (its state: bytes and a position); touches no file"},
    VettedEntry {"torch.distributed._shard.sharded_tensor.metadata.TensorProperties",
        "older DCP and ShardedTensor: a dataclass of dtype, layout and flags (__setstate__ unpacks a tuple)"},
    VettedEntry {"torch.distributed._shard.sharded_tensor.metadata.MEM_FORMAT_ENCODING",
        "older DCP and ShardedTensor: an Enum of memory formats"},
    VettedEntry {"torch.distributed._shard.metadata.ShardMetadata",
        "ShardedTensor: a dataclass of a shard's offsets, sizes and placement name"},
    // Paths DCP stores (StorageMeta.checkpoint_id): constructing a path object touches no file; the
    // methods that do (write_text, unlink, ...) are dotted names, never these classes.
    VettedEntry {"pathlib.PosixPath", "a file system path value (constructing it touches no file)"},
    VettedEntry {"pathlib.WindowsPath", "a file system path value (constructing it touches no file)"},
    VettedEntry {"pathlib.Path", "a file system path value (constructing it touches no file)"},
    VettedEntry {"pathlib.PurePosixPath", "a pure path value"},
    VettedEntry {"pathlib.PureWindowsPath", "a pure path value"},
    VettedEntry {"pathlib.PurePath", "a pure path value"},
    VettedEntry {"pathlib._local.PosixPath", "a file system path value (Python 3.13's module name)"},
    VettedEntry {"pathlib._local.WindowsPath", "a file system path value (Python 3.13's module name)"},
    VettedEntry {"pathlib._local.Path", "a file system path value (Python 3.13's module name)"},
    VettedEntry {"pathlib._local.PurePosixPath", "a pure path value (Python 3.13's module name)"},
    VettedEntry {"pathlib._local.PureWindowsPath", "a pure path value (Python 3.13's module name)"},
    VettedEntry {"pathlib._local.PurePath", "a pure path value (Python 3.13's module name)"},
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

bool onTorchDefaultAllowlist(std::string_view path, TorchGeneration generation, const TorchImports& imports)
{
    return isAllowed(path, generation, imports);
}

std::vector<std::string_view> everyTorchAllowlistName()
{
    std::vector<std::string_view> names;
    names.reserve(generated::kAllowlist.size());
    for (const generated::AllowlistEntry& entry : generated::kAllowlist)
        names.push_back(entry.name);
    return names;
}

std::optional<std::string> torchImportThatAllows(std::string_view path)
{
    const generated::AllowlistEntry* entry = findAllowlistEntry(path);
    if (!entry || (entry->torch2 & (generated::kFreshProcess | generated::kAfterImportTorch)))
        return std::nullopt;
    for (std::size_t i = 0; i < generated::kGrowingImports.size(); ++i)
        if (entry->torch2 & (1U << (2 + i)))
            return std::string(generated::kGrowingImports[i]);
    return std::nullopt;
}

std::pair<std::string, std::string> torch2Python3Name(const std::string& module, const std::string& name)
{
    for (const generated::NameMapping& mapping : generated::kTorch2NameMapping)
        if (mapping.module == module && mapping.name == name)
            return {std::string(mapping.newModule), std::string(mapping.newName)};
    for (const auto& [from, to] : generated::kTorch2ImportMapping)
        if (from == module)
            return {std::string(to), name};
    return {module, name};
}

bool torch2BlocksModule(std::string_view module)
{
    return std::find(generated::kTorch2BlockedModules.begin(), generated::kTorch2BlockedModules.end(), module)
        != generated::kTorch2BlockedModules.end();
}

std::optional<std::string_view> torch2SpecialMessage(std::string_view path)
{
    for (const generated::SpecialMessage& special : generated::kTorch2SpecialMessages)
        if (special.name == path)
            return special.message;
    return std::nullopt;
}

std::optional<std::string> vettedBaseOf(std::string_view path)
{
    // Decided by name: a subclass cannot be told from a look-alike by the pickle alone (its BUILD
    // state may hold the base's fields and more, or fewer), so only classes known from their
    // package's source are listed, each with the vetted class it derives from.
    static const std::array<std::pair<std::string_view, std::string_view>, 3> known {{
        {"megatron.core.dist_checkpointing.strategies.torch.MCoreMetadata",
            "torch.distributed.checkpoint.metadata.Metadata"},
        {"megatron.core.dist_checkpointing.mapping.MCoreMetadata",
            "torch.distributed.checkpoint.metadata.Metadata"},
        {"megatron.core.dist_checkpointing.strategies.torch.MCoreSavePlan",
            "torch.distributed.checkpoint.planner.SavePlan"},
    }};
    for (const auto& [subclass, base] : known)
        if (subclass == path)
            return std::string(base);
    return std::nullopt;
}

const char* torchGenerationName(TorchGeneration generation)
{
    return generation == TorchGeneration::Torch113 ? "torch 1.13" : "torch 2.6+";
}

Expected<TorchImports> TorchImports::parse(const std::string& text)
{
    TorchImports imports;
    std::size_t start = 0;
    while (start <= text.size()) {
        auto comma = text.find(',', start);
        if (comma == std::string::npos)
            comma = text.size();
        std::string_view item = std::string_view(text).substr(start, comma - start);
        start = comma + 1;
        while (!item.empty() && (item.front() == ' ' || item.front() == '\t'))
            item.remove_prefix(1);
        while (!item.empty() && (item.back() == ' ' || item.back() == '\t'))
            item.remove_suffix(1);
        if (item.empty() || item == "torch")
            continue;
        if (item == "all") {
            imports.modules = growingTorchImports();
            continue;
        }
        const auto& known = growingTorchImports();
        if (std::find(known.begin(), known.end(), item) == known.end()) {
            std::string names;
            for (const std::string& module : known)
                names += ", " + module;
            return makeError("\"" + std::string(item)
                + "\" adds nothing known to torch's weights_only list; the imports that do: torch (always)"
                + names + ", or all");
        }
        if (std::find(imports.modules.begin(), imports.modules.end(), item) == imports.modules.end())
            imports.modules.emplace_back(item);
    }
    std::sort(imports.modules.begin(), imports.modules.end());
    return imports;
}

std::string TorchImports::text() const
{
    std::string out = "torch";
    for (const std::string& module : modules)
        out += "," + module;
    return out;
}

const std::vector<std::string>& growingTorchImports()
{
    static const std::vector<std::string> modules(
        generated::kGrowingImports.begin(), generated::kGrowingImports.end());
    return modules;
}

std::string simulatedTorchName(TorchGeneration generation, const TorchImports& imports)
{
    std::string out = std::string(torchGenerationName(generation)) + ", lists of ";
    if (generation == TorchGeneration::Torch113)
        return out + std::string(generated::kTorch113Version);
    out += std::string(generated::kTorch2Version) + ", after import torch";
    for (const std::string& module : imports.modules)
        out += ", " + module;
    return out;
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
                       "functions, and the classes torch registers with add_safe_globals on import torch)";
        return entry;
    }
    if (const auto module2 = torchImportThatAllows(path)) {
        // torch vetted it itself: one of its modules registers it when imported.
        entry.reason = "on torch 2.x's weights_only list once " + *module2
            + " is imported (torch registers it with add_safe_globals)";
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
