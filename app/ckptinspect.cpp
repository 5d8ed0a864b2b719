// ckpt-inspect: the command-line twin of the desktop app, for scripts, servers and tests.
#include "app/cli/shardedcommands.h"
#include "cli/commands.h"
#include "core/base/escaping.h"
#include "core/devices/deviceinventory.h"
#include "core/io/atomicoutputfile.h"
#include "core/io/mappedfile.h"
#include "core/json/json.h"
#include "core/model/checkpoint.h"
#include "core/model/checkpointjson.h"
#include "core/model/shardset.h"
#include "core/plan/autoplacement.h"
#include "core/plan/devicemap.h"
#include "core/plan/memoryledger.h"
#include "core/plan/placementplan.h"
#include "core/read/checkpointreader.h"
#include "core/triage/triage.h"
#include "core/write/remapwriter.h"

#include <iomanip>
#include <sstream>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

namespace {

// Text output shows what a checkpoint holds, and a checkpoint is untrusted: a tensor or global
// named "\x1b[30A\x1b[J..." would move the cursor and hide the lines above it (issue 9). Every
// value taken from a file or a message is printed through shown(); the JSON output escapes on
// its own.
std::string shown(std::string_view text)
{
    return ckpt::printableText(text);
}

// Multi-line text (a Python snippet, an add_safe_globals call): each line made printable, the
// line breaks kept.
std::string shownLines(std::string_view text)
{
    std::string out;
    for (std::size_t start = 0; start <= text.size();) {
        const std::size_t end = std::min(text.find('\n', start), text.size());
        out += shown(text.substr(start, end - start));
        if (end < text.size())
            out += '\n';
        start = end + 1;
    }
    return out;
}

// The last line of defence for anything printed without shown(): a stream buffer in front of
// stdout and stderr that writes C0 control characters other than line breaks and tabs, and DEL,
// as visible escapes, so no escape sequence reaches the terminal whatever the code path.
class TerminalSafeBuffer : public std::streambuf {
public:
    explicit TerminalSafeBuffer(std::streambuf* target)
        : m_target(target)
    { }

protected:
    int_type overflow(int_type c) override
    {
        if (traits_type::eq_int_type(c, traits_type::eof()))
            return m_target->pubsync() == 0 ? traits_type::not_eof(c) : traits_type::eof();
        return put(traits_type::to_char_type(c)) ? c : traits_type::eof();
    }
    // Runs of safe bytes go to the target in one call: a character at a time through a stdio-synced
    // stream cost a third of `info --json`'s time on a 100,000-tensor file.
    std::streamsize xsputn(const char* data, std::streamsize count) override
    {
        std::streamsize done = 0;
        while (done < count) {
            std::streamsize run = done;
            while (run < count && isSafe(static_cast<unsigned char>(data[run])))
                ++run;
            if (run > done) {
                const std::streamsize written = m_target->sputn(data + done, run - done);
                if (written != run - done)
                    return done + written;
                done = run;
            }
            if (done < count) {
                if (!put(data[done]))
                    return done;
                ++done;
            }
        }
        return count;
    }
    int sync() override { return m_target->pubsync(); }

public:
    std::streambuf* target() const { return m_target; }

private:
    static bool isSafe(unsigned char byte)
    {
        return (byte >= 0x20 && byte != 0x7F) || byte == '\n' || byte == '\t';
    }
    bool put(char c)
    {
        const auto byte = static_cast<unsigned char>(c);
        if (isSafe(byte))
            return m_target->sputc(c) != traits_type::eof();
        char escaped[8];
        std::snprintf(escaped, sizeof escaped, "\\x%02x", byte);
        return m_target->sputn(escaped, 4) == 4;
    }

    std::streambuf* m_target;
};

const char* kUsage = R"(usage: ckpt-inspect COMMAND [options]

Opens PyTorch checkpoints without running any of their pickle code.

commands:
  info FILE [--json]   the tree of tensors with dtype, shape, size and the device each
                       storage was recorded on; totals per device; findings
  remap FILE -o OUT [--map FROM=TO]... [--tensor NAME=DEV]... [--module PREFIX=DEV]...
        [--rename-global OLD=NEW]... [--json] [--no-verify] [--allow-dangerous]
                       writes a copy whose storages are recorded on the planned devices, so
                       plain torch.load puts them there (FROM may be *; later rules win; a
                       tensor moves with every tensor that shares its storage); refuses a
                       file rated dangerous (exit 4) unless --allow-dangerous, which copies
                       it unchanged (or, with --rename-global, with only the renames and the
                       plan applied); --rename-global names a class or function (module.name)
                       or a module path under its new name in the copy, e.g.
                       numpy._core.multiarray.scalar=numpy.core.multiarray.scalar
  remap FILE --print-map-location [--map ...] [--tensor ...] [--module ...]
                       prints the plan as a map_location dict, or as a Python snippet when
                       it cannot be said as one, instead of writing a copy
  check FILE [--target SPEC|NAME] [--map-location ML] [--importable MODULE]... [--values] [--json]
                       triage: integrity (CRC of every record, truncation and what can be
                       salvaged), placement smells, what torch.load would do on the target
                       (torch 1.13 and 2.6+) and the weights_only verdict; ML is none, cpu,
                       cuda:1, cuda:1=cuda:0,... or a Python dict literal; --importable says
                       a Python package (or __main__ for the saving script's classes) is
                       importable where torch.load runs (the standard library, torch and
                       numpy are assumed); --values adds
                       each tensor's NaN/Inf/zero counts, range, mean, std and histogram
                       (through libtorch); exit 0 clean, 1 warnings, 2 errors, 3 could not
                       read, 4 dangerous or cannot verify (loading it may run code)
  devices [--json]     the devices of this machine: CUDA GPUs as torch numbers them (name,
                       compute capability, total and free memory) and the CPU's memory
  plan FILE [--target SPEC|NAME] [--strategy balanced|sequential] [--no-split-depth N]
       [--headroom SIZE] [--context SIZE] [--allocator-rounding] [--json]
       [--save OUT] [--export device-map|map-location]
                       places every storage automatically on the target (this machine when
                       no --target), shows why each block went where, and memory per device;
                       --save writes the remapped copy, --export prints the plan for Python
  targets [list | save NAME SPEC | remove NAME]
                       described machines saved by name, e.g.
                       save "lab box" cuda:0=24GiB,cuda:1=24GiB,cpu=64GiB
  extract FILE -o OUT.pt [--select PREFIX]... [--root PATH] [--map ...] [--tensor ...]
        [--module ...] [--json]
                       writes a plain state_dict (dotted name -> tensor) that
                       torch.load(weights_only=True) opens, from any readable checkpoint
                       (whole pickled modules, Lightning files, NumPy or argparse objects):
                       storage bytes copied unchanged, nothing executed; says what was dropped
  convert FILE|DIR -o OUT.safetensors|OUTDIR [--max-shard-size SIZE] [--select PREFIX]...
                       safetensors ("format": "pt") from a torch checkpoint or a folder of
                       them, one file or shards with model.safetensors.index.json; tensors
                       that share a storage become separate copies, views contiguous copies
  convert FILE.safetensors -o OUT.pt [--device DEV] [--map ...] [--tensor ...] [--module ...]
                       back to a torch.save file whose storages are recorded on DEV (cpu)
  diff A B [--json] [--no-values] [--threads N]
                       what changed between two checkpoints (files or folders, any formats):
                       tensors added, removed, renamed (same bytes), changed in dtype, shape,
                       stride, recorded device or value (content hashes, in parallel), and
                       for float tensors the largest absolute and relative difference;
                       exit 0 identical, 1 different, 2 could not compare
  help                 this text

SPEC describes a machine: cuda:0=24GiB,cuda:1=24GiB,cpu=64GiB (also 2xcuda=80GiB; other tags
such as mps or xpu:0 are taken as devices with that capacity).

FILE may also be a folder of shards, an index (*.index.json), one shard, or a DCP folder
(.metadata): all files open as one checkpoint, each tensor naming its shard. remap and plan
--save then write OUT as a new folder of .bin shards; safetensors and DCP record no device, so
OUT receives device_map.json and load_with_device_map.py instead.

Every command that reads a file first rates every pickle in it (never run): known inert,
needs allowlisting, or dangerous (cannot verify; treat as dangerous).

exit status: 0 read, 1 read with warnings, 2 read with errors, 3 could not read,
4 (check, remap) dangerous or cannot verify
)";

// The safety verdict as text lines, for the top of `info` and `check`.
std::string safetyText(const ckpt::SafetyVerdict& safety)
{
    std::string text = "safety: " + std::string(ckpt::pickleSafetyName(safety.rating)) + ": "
        + shown(safety.headline) + "\n";
    for (const ckpt::UnsafeCallable& callable : safety.unsafe)
        text += std::string("  ") + (callable.knownDangerous ? "dangerous      " : "cannot verify  ")
            + shown(callable.name) + ": " + shown(callable.reason) + " (" + shown(callable.where) + ")"
            + (callable.call.empty() ? std::string() : "\n                 would run " + shown(callable.call))
            + "\n";
    for (const std::string& problem : safety.cannotVerify)
        text += "  cannot verify  " + shown(problem) + "\n";
    if (safety.rating != ckpt::PickleSafety::DangerousOrUnknown)
        for (const ckpt::AllowlistCandidate& candidate : safety.allowlist)
            text += "  vetted inert   " + shown(candidate.name) + ": " + shown(candidate.reason)
                + (candidate.torch2Default ? "" : "; not on torch 2.x's default list")
                + (candidate.torch113Default ? "" : "; not on torch 1.13's default list") + "\n";
    for (const std::string& note : safety.notes)
        text += "  note: " + shown(note) + "\n";
    if (!safety.addSafeGlobals2.empty())
        text += "  allow with (torch 2.x):\n    " + [&] {
            std::string indented = shownLines(safety.addSafeGlobals2);
            for (std::size_t at = 0; (at = indented.find('\n', at)) != std::string::npos; at += 5)
                indented.replace(at, 1, "\n    ");
            return indented;
        }() + "\n";
    return text;
}

void writeSafetyJson(ckpt::JsonWriter& writer, const ckpt::SafetyVerdict& safety)
{
    writer.beginObject();
    writer.member("rating", std::string(ckpt::pickleSafetyName(safety.rating)));
    writer.member("headline", safety.headline);
    writer.key("unsafe").beginArray();
    for (const ckpt::UnsafeCallable& callable : safety.unsafe) {
        writer.beginObject();
        writer.member("name", callable.name);
        writer.member("known_dangerous", callable.knownDangerous);
        writer.member("reason", callable.reason);
        writer.member("where", callable.where);
        writer.key("call");
        callable.call.empty() ? writer.null() : writer.value(callable.call);
        writer.endObject();
    }
    writer.endArray();
    writer.key("cannot_verify").beginArray();
    for (const std::string& problem : safety.cannotVerify)
        writer.value(problem);
    writer.endArray();
    writer.key("vetted_not_default").beginArray();
    for (const ckpt::AllowlistCandidate& candidate : safety.allowlist) {
        writer.beginObject();
        writer.member("name", candidate.name);
        writer.member("reason", candidate.reason);
        writer.member("torch_1_13_default", candidate.torch113Default);
        writer.member("torch_2_default", candidate.torch2Default);
        writer.endObject();
    }
    writer.endArray();
    writer.key("add_safe_globals_torch2");
    safety.addSafeGlobals2.empty() ? writer.null() : writer.value(safety.addSafeGlobals2);
    writer.key("add_safe_globals_torch113");
    safety.addSafeGlobals113.empty() ? writer.null() : writer.value(safety.addSafeGlobals113);
    writer.key("pickles").beginArray();
    for (const std::string& pickle : safety.pickles)
        writer.value(pickle);
    writer.endArray();
    writer.key("notes").beginArray();
    for (const std::string& note : safety.notes)
        writer.value(note);
    writer.endArray();
    writer.endObject();
}

int exitCodeFor(const ckpt::Checkpoint& checkpoint)
{
    if (checkpoint.format == ckpt::CheckpointFormat::NotACheckpoint)
        return 3;
    if (checkpoint.hasErrors())
        return 2;
    for (const ckpt::Finding& finding : checkpoint.findings)
        if (finding.severity == ckpt::Severity::Warning)
            return 1;
    return 0;
}

int runInfo(const std::vector<std::string>& args)
{
    bool json = false;
    std::string file;
    for (const std::string& arg : args) {
        if (arg == "--json")
            json = true;
        else if (arg.starts_with("-")) {
            std::cerr << "ckpt-inspect info: unknown option " << arg << "\n" << kUsage;
            return 64;
        } else if (file.empty())
            file = arg;
        else {
            std::cerr << "ckpt-inspect info: give one FILE\n";
            return 64;
        }
    }
    if (file.empty()) {
        std::cerr << "ckpt-inspect info: missing FILE\n" << kUsage;
        return 64;
    }
    const ckpt::Checkpoint checkpoint = ckpt::readCheckpoint(file);
    const ckpt::SafetyVerdict safety = checkpoint.shardSet ? ckpt::rateShardSafety(checkpoint) // every shard
                                                           : ckpt::ratePickleSafety(checkpoint);
    if (json) {
        // The rating leads the document, as it leads the text. Streamed as it is written: the
        // document of a 100,000-tensor file is never held whole.
        ckpt::JsonWriter writer(std::cout, ckpt::JsonStyle::Pretty);
        writer.beginObject();
        writer.key("safety");
        writeSafetyJson(writer, safety);
        ckpt::writeCheckpointJsonMembers(writer, checkpoint);
        writer.endObject();
        writer.flush();
        std::cout << "\n";
    } else {
        std::cout << safetyText(safety) << "\n" << ckpt::checkpointToText(checkpoint);
    }
    return exitCodeFor(checkpoint);
}

// `remap --allow-dangerous` on a dangerous file: its bytes copied as they are (re-emitting a
// pickle that runs code would only launder it), the copy rated again before the rename so that what
// lands under OUT is exactly what was rated.
int copyDangerousUnchanged(
    const std::string& file, const std::string& output, const ckpt::SafetyVerdict& safety, bool json)
{
    auto input = ckpt::MappedFile::open(file);
    if (!input) {
        std::cerr << "ckpt-inspect remap: " << input.error().message << "\n";
        return 2;
    }
    const ckpt::ByteView bytes = (*input)->bytes();
    auto out = ckpt::AtomicOutputFile::create(output, file, bytes.size());
    if (!out) {
        std::cerr << "ckpt-inspect remap: " << out.error().message << "\n";
        return 2;
    }
    for (std::uint64_t done = 0; done < bytes.size();) {
        const ssize_t n
            = ::pwrite((*out)->fd(), bytes.data() + done, bytes.size() - done, static_cast<off_t>(done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            std::cerr << "ckpt-inspect remap: writing " << output << ": " << std::strerror(errno) << "\n";
            return 2;
        }
        done += static_cast<std::uint64_t>(n);
    }
    ckpt::ByteBuffer copy(bytes.size());
    for (std::uint64_t done = 0; done < copy.size();) {
        const ssize_t n
            = ::pread((*out)->fd(), copy.data() + done, copy.size() - done, static_cast<off_t>(done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            std::cerr << "ckpt-inspect remap: reading back " << output << ": " << std::strerror(errno)
                      << "\n";
            return 2;
        }
        done += static_cast<std::uint64_t>(n);
    }
    const ckpt::SafetyVerdict copied = ckpt::ratePickleSafety(ckpt::ByteView(copy.data(), copy.size()));
    auto names = [](const ckpt::SafetyVerdict& verdict) {
        std::vector<std::string> list;
        for (const ckpt::UnsafeCallable& callable : verdict.unsafe)
            list.push_back(callable.name);
        return list;
    };
    if (copied.rating != safety.rating || names(copied) != names(safety)
        || !std::equal(copy.begin(), copy.end(), bytes.begin())) {
        std::cerr << "ckpt-inspect remap: the copy does not rate as the input did (" << shown(copied.headline)
                  << "); nothing written\n";
        return 2;
    }
    if (auto problem = (*out)->commit()) {
        std::cerr << "ckpt-inspect remap: " << problem->message << "\n";
        return 2;
    }
    const std::string summary
        = "copied unchanged, still DANGEROUS (--allow-dangerous): nothing was remapped; "
        + shown(safety.headline);
    if (json) {
        ckpt::JsonWriter writer(ckpt::JsonStyle::Pretty);
        writer.beginObject();
        writer.member("input", file);
        writer.member("output", output);
        writer.member("copied_unchanged", true);
        writer.key("safety");
        writeSafetyJson(writer, copied);
        writer.member("summary", summary);
        writer.endObject();
        std::cout << writer.takeText() << "\n";
    } else {
        std::cout << shown(output) << ": " << summary << "\n";
    }
    std::cerr << "warning: " << output << " is a byte-for-byte copy of a file rated dangerous\n";
    return 0;
}

int runRemap(const std::vector<std::string>& args)
{
    std::string file;
    std::string output;
    bool json = false;
    bool verify = true;
    bool printMapLocation = false;
    bool allowDangerous = false;
    std::vector<ckpt::PlacementRule> rules;
    std::vector<ckpt::GlobalRename> renames;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& arg = args[i];
        auto value = [&](const char* flag) -> std::optional<std::string> {
            if (i + 1 >= args.size()) {
                std::cerr << "ckpt-inspect remap: " << flag << " needs a value\n";
                return std::nullopt;
            }
            return args[++i];
        };
        using Kind = ckpt::PlacementRule::Kind;
        std::optional<Kind> ruleKind;
        if (arg == "-o" || arg == "--output") {
            auto v = value("-o");
            if (!v)
                return 64;
            output = *v;
        } else if (arg == "--map") {
            ruleKind = Kind::MapTag;
        } else if (arg == "--tensor") {
            ruleKind = Kind::MoveTensor;
        } else if (arg == "--module") {
            ruleKind = Kind::MoveModule;
        } else if (arg == "--json") {
            json = true;
        } else if (arg == "--no-verify") {
            verify = false;
        } else if (arg == "--print-map-location") {
            printMapLocation = true;
        } else if (arg == "--allow-dangerous") {
            allowDangerous = true;
        } else if (arg == "--rename-global") {
            auto v = value("--rename-global");
            if (!v)
                return 64;
            auto rename = ckpt::GlobalRename::parse(*v);
            if (!rename) {
                std::cerr << "ckpt-inspect remap: --rename-global " << rename.error().message << "\n";
                return 64;
            }
            renames.push_back(*rename);
        } else if (arg.starts_with("-")) {
            std::cerr << "ckpt-inspect remap: unknown option " << arg << "\n" << kUsage;
            return 64;
        } else if (file.empty()) {
            file = arg;
        } else {
            std::cerr << "ckpt-inspect remap: give one FILE\n";
            return 64;
        }
        if (ruleKind) {
            auto v = value(arg.c_str());
            if (!v)
                return 64;
            auto rule = ckpt::PlacementRule::parse(*ruleKind, *v);
            if (!rule) {
                std::cerr << "ckpt-inspect remap: " << arg << " " << rule.error().message << "\n";
                return 64;
            }
            rules.push_back(*rule);
        }
    }
    if (file.empty() || (output.empty() && !printMapLocation)) {
        std::cerr << "ckpt-inspect remap: give FILE and -o OUT (or --print-map-location)\n" << kUsage;
        return 64;
    }

    const ckpt::Checkpoint checkpoint = ckpt::readCheckpoint(file);
    const ckpt::SafetyVerdict safety = checkpoint.shardSet ? ckpt::rateShardSafety(checkpoint) // every shard
                                                           : ckpt::ratePickleSafety(checkpoint);
    // Safetensors and DCP folders only export a device_map: no pickle is copied.
    const bool exportOnly
        = checkpoint.shardSet && checkpoint.shardSet->layout != ckpt::ShardLayout::HuggingFaceBin;
    if (safety.dangerous() && !printMapLocation && !exportOnly) {
        if (!allowDangerous || checkpoint.shardSet) { // a folder is never copied unchanged here
            std::cerr
                << "ckpt-inspect remap: refusing to write a copy of " << shown(file) << ": "
                << shown(safety.headline)
                << "\n(a copy would carry the same code; pass --allow-dangerous to copy it unchanged)\n";
            return 4;
        }
        if (renames.empty())
            return copyDangerousUnchanged(file, output, safety, json);
        // Renaming a moved module path is the one reason to rewrite a pickle that cannot be vetted
        // (a whole pickled model whose package was renamed): asked for explicitly, the copy is
        // written like any other, with only the renames and the plan applied, and says so.
        std::cerr << "note: " << shown(file)
                  << " is rated dangerous; with --allow-dangerous its pickle is carried into the copy with"
                     " only the renames and the plan applied\n";
    }
    if (checkpoint.format == ckpt::CheckpointFormat::NotACheckpoint) {
        std::cerr << "ckpt-inspect remap: " << shown(file) << ": " << shown(checkpoint.container.description)
                  << "\n";
        return 2;
    }
    ckpt::PlacementPlan plan(checkpoint);
    for (const ckpt::PlacementRule& rule : rules) {
        const ckpt::PlacementChange change = plan.apply(rule);
        if (rule.kind != ckpt::PlacementRule::Kind::MapTag && change.tensorsNamed.empty()) {
            std::cerr << "ckpt-inspect remap: " << shown(rule.describe()) << ": the checkpoint has no tensor "
                      << (rule.kind == ckpt::PlacementRule::Kind::MoveTensor ? "named '" : "under '")
                      << shown(rule.subject) << "'\n";
            return 2;
        }
        for (const std::string& note : change.notes)
            std::cerr << "note: " << shown(rule.describe()) << ": " << shown(note) << "\n";
        if (!change.tensorsDraggedAlong.empty()) {
            std::cerr << "note: " << shown(rule.describe()) << " also moves "
                      << change.tensorsDraggedAlong.size() << " tensor(s) that share a storage with it:";
            for (std::size_t k = 0; k < change.tensorsDraggedAlong.size() && k < 5; ++k)
                std::cerr << " " << shown(checkpoint.tensors[change.tensorsDraggedAlong[k]].name);
            std::cerr << (change.tensorsDraggedAlong.size() > 5 ? " ...\n" : "\n");
        }
    }
    if (printMapLocation) {
        std::cout << shownLines(plan.asPython(file));
        return 0;
    }

    if (checkpoint.shardSet) { // a folder of shards: a new folder, or the plan exported
        if (!renames.empty()) {
            std::cerr << "ckpt-inspect remap: --rename-global rewrites one file; it does not apply to a "
                         "folder of shards yet (remap each shard file)\n";
            return 64;
        }
        return ckpt::cli::saveShardedPlan(
            checkpoint, plan, ckpt::detectThisMachine(), output, json, verify, std::cout, std::cerr);
    }
    ckpt::RemapOptions remapOptions {{}, verify, renames};
    auto result = ckpt::writeRemappedCopy(checkpoint, plan, output, remapOptions);
    if (!result) {
        std::cerr << "ckpt-inspect remap: " << shown(result.error().message) << "\n";
        return 2;
    }
    if (json) {
        ckpt::JsonWriter writer(ckpt::JsonStyle::Pretty);
        writer.beginObject();
        writer.member("input", file);
        writer.member("output", result->outputPath);
        writer.member("format", std::string(ckpt::checkpointFormatName(checkpoint.format)));
        writer.key("storages").beginArray();
        for (const ckpt::RemappedStorage& storage : result->storages) {
            writer.beginObject();
            writer.member("key", storage.key);
            writer.member("output_key", storage.outputKey);
            writer.key("recorded");
            storage.recorded ? writer.value(*storage.recorded) : writer.null();
            writer.key("planned");
            storage.planned ? writer.value(*storage.planned) : writer.null();
            writer.endObject();
        }
        writer.endArray();
        writer.key("globals_renamed").beginArray();
        for (const std::string& renamed : result->globalsRenamed)
            writer.value(renamed);
        writer.endArray();
        writer.member("records_copied", result->recordsCopied);
        writer.member("records_rewritten", result->recordsRewritten);
        writer.member("bytes_written", result->bytesWritten);
        writer.member("seconds", result->seconds);
        writer.member("verified", result->verified);
        writer.member("summary", result->summary());
        writer.endObject();
        std::cout << writer.takeText() << "\n";
    } else {
        std::cout << shown(output) << ": " << shown(result->summary()) << "\n";
        for (const std::string& renamed : result->globalsRenamed)
            std::cout << "  renamed " << shown(renamed) << "\n";
    }
    return 0;
}

std::string bytesText(std::uint64_t bytes)
{
    return ckpt::formatBytes(bytes);
}

void writeDevices(ckpt::JsonWriter& writer, const ckpt::MachineInventory& machine)
{
    writer.beginObject();
    writer.member("name", machine.name);
    writer.member("described", machine.described);
    writer.key("devices").beginArray();
    for (const ckpt::DeviceInfo& device : machine.devices) {
        writer.beginObject();
        writer.member("tag", device.tag);
        writer.member("name", device.name);
        writer.member("total_bytes", device.totalBytes);
        writer.key("free_bytes");
        device.freeBytes ? writer.value(*device.freeBytes) : writer.null();
        writer.key("compute_capability");
        if (device.computeCapability)
            writer.value(std::to_string(device.computeCapability->first) + "."
                + std::to_string(device.computeCapability->second));
        else
            writer.null();
        if (!device.uuid.empty())
            writer.member("uuid", device.uuid);
        if (!device.pciBusId.empty())
            writer.member("pci_bus_id", device.pciBusId);
        writer.endObject();
    }
    writer.endArray();
    writer.key("notes").beginArray();
    for (const std::string& note : machine.notes)
        writer.value(note);
    writer.endArray();
    writer.endObject();
}

void printMachine(const ckpt::MachineInventory& machine)
{
    std::cout << shown(machine.name) << (machine.described ? " (described)" : " (detected)") << "\n";
    for (const ckpt::DeviceInfo& device : machine.devices) {
        std::cout << "  " << std::left << std::setw(8) << shown(device.tag) << " " << std::setw(28)
                  << shown(device.name) << " " << std::right << std::setw(10) << bytesText(device.totalBytes);
        if (device.freeBytes)
            std::cout << "  (" << bytesText(*device.freeBytes) << " free)";
        if (device.computeCapability)
            std::cout << "  compute capability " << device.computeCapability->first << "."
                      << device.computeCapability->second;
        std::cout << "\n";
    }
    for (const std::string& note : machine.notes)
        std::cout << "  note: " << shown(note) << "\n";
}

int runDevices(const std::vector<std::string>& args)
{
    bool json = false;
    for (const std::string& arg : args) {
        if (arg == "--json")
            json = true;
        else {
            std::cerr << "ckpt-inspect devices: unknown argument " << arg << "\n";
            return 64;
        }
    }
    const ckpt::MachineInventory machine = ckpt::detectThisMachine();
    if (json) {
        ckpt::JsonWriter writer(ckpt::JsonStyle::Pretty);
        writeDevices(writer, machine);
        std::cout << writer.takeText() << "\n";
    } else {
        printMachine(machine);
    }
    return 0;
}

int runTargets(const std::vector<std::string>& args)
{
    ckpt::TargetProfiles profiles;
    if (auto problem = profiles.load()) {
        std::cerr << "ckpt-inspect targets: " << problem->message << "\n";
        return 2;
    }
    if (args.empty() || args[0] == "list") {
        for (const auto& [name, spec] : profiles.profiles())
            std::cout << shown(name) << ": " << shown(spec) << "\n";
        return 0;
    }
    if (args[0] == "save" && args.size() == 3) {
        if (auto problem = profiles.set(args[1], args[2])) {
            std::cerr << "ckpt-inspect targets: " << problem->message << "\n";
            return 64;
        }
        if (auto problem = profiles.save()) {
            std::cerr << "ckpt-inspect targets: " << problem->message << "\n";
            return 2;
        }
        std::cout << "saved '" << args[1] << "': " << args[2] << "\n";
        return 0;
    }
    if (args[0] == "remove" && args.size() == 2) {
        if (!profiles.remove(args[1])) {
            std::cerr << "ckpt-inspect targets: no saved target named '" << args[1] << "'\n";
            return 2;
        }
        if (auto problem = profiles.save()) {
            std::cerr << "ckpt-inspect targets: " << problem->message << "\n";
            return 2;
        }
        return 0;
    }
    std::cerr << "ckpt-inspect targets: use list, save NAME SPEC or remove NAME\n";
    return 64;
}

int runPlan(const std::vector<std::string>& args)
{
    std::string file, target, save, exportKind;
    bool json = false;
    ckpt::AutoPlacementOptions options;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& arg = args[i];
        auto value = [&]() -> std::optional<std::string> {
            if (i + 1 >= args.size()) {
                std::cerr << "ckpt-inspect plan: " << arg << " needs a value\n";
                return std::nullopt;
            }
            return args[++i];
        };
        auto size = [&]() -> std::optional<std::uint64_t> {
            auto text = value();
            if (!text)
                return std::nullopt;
            auto bytes = ckpt::parseByteSize(*text);
            if (!bytes) {
                std::cerr << "ckpt-inspect plan: " << arg << ": " << bytes.error().message << "\n";
                return std::nullopt;
            }
            return *bytes;
        };
        if (arg == "--target") {
            auto v = value();
            if (!v)
                return 64;
            target = *v;
        } else if (arg == "--strategy") {
            auto v = value();
            if (!v)
                return 64;
            if (*v == "balanced")
                options.strategy = ckpt::PlacementStrategy::Balanced;
            else if (*v == "sequential")
                options.strategy = ckpt::PlacementStrategy::Sequential;
            else {
                std::cerr << "ckpt-inspect plan: --strategy is balanced or sequential\n";
                return 64;
            }
        } else if (arg == "--no-split-depth") {
            auto v = value();
            if (!v)
                return 64;
            options.noSplitDepth = std::atoi(v->c_str());
        } else if (arg == "--headroom") {
            auto v = size();
            if (!v)
                return 64;
            options.assumptions.headroomBytes = *v;
        } else if (arg == "--context") {
            auto v = size();
            if (!v)
                return 64;
            options.assumptions.cudaContextBytes = *v;
        } else if (arg == "--allocator-rounding") {
            options.assumptions.allocatorRounding = true;
        } else if (arg == "--json") {
            json = true;
        } else if (arg == "--save" || arg == "-o") {
            auto v = value();
            if (!v)
                return 64;
            save = *v;
        } else if (arg == "--export") {
            auto v = value();
            if (!v)
                return 64;
            exportKind = *v;
            if (exportKind != "device-map" && exportKind != "map-location") {
                std::cerr << "ckpt-inspect plan: --export is device-map or map-location\n";
                return 64;
            }
        } else if (arg.starts_with("-")) {
            std::cerr << "ckpt-inspect plan: unknown option " << arg << "\n" << kUsage;
            return 64;
        } else if (file.empty()) {
            file = arg;
        } else {
            std::cerr << "ckpt-inspect plan: give one FILE\n";
            return 64;
        }
    }
    if (file.empty()) {
        std::cerr << "ckpt-inspect plan: missing FILE\n" << kUsage;
        return 64;
    }
    ckpt::TargetProfiles profiles;
    if (auto problem = profiles.load())
        std::cerr << "note: saved targets could not be read: " << problem->message << "\n";
    auto machine = ckpt::resolveMachine(target, profiles);
    if (!machine) {
        std::cerr << "ckpt-inspect plan: " << machine.error().message << "\n";
        return 64;
    }
    const ckpt::Checkpoint checkpoint = ckpt::readCheckpoint(file);
    if (checkpoint.format == ckpt::CheckpointFormat::NotACheckpoint) {
        std::cerr << "ckpt-inspect plan: " << shown(file) << ": " << shown(checkpoint.container.description)
                  << "\n";
        return 2;
    }
    auto placement = ckpt::placeAutomatically(checkpoint, *machine, options);
    if (!placement) {
        std::cerr << "ckpt-inspect plan: " << shown(placement.error().message) << "\n";
        return 2;
    }
    ckpt::PlacementPlan plan(checkpoint);
    ckpt::MemoryLedger ledger(checkpoint, plan, *machine, options.assumptions);
    for (const ckpt::PlacementRule& rule : placement->rules)
        ledger.apply(plan.apply(rule));

    if (exportKind == "device-map") {
        std::cout << ckpt::deviceMapJson({placement->deviceMap.begin(), placement->deviceMap.end()}) << "\n";
    } else if (exportKind == "map-location") {
        std::cout << shownLines(plan.asPython(file));
    } else if (json) {
        ckpt::JsonWriter writer(ckpt::JsonStyle::Pretty);
        writer.beginObject();
        writer.member("file", file);
        writer.key("target");
        writeDevices(writer, *machine);
        writer.member("strategy",
            std::string(options.strategy == ckpt::PlacementStrategy::Balanced ? "balanced" : "sequential"));
        writer.key("groups").beginArray();
        for (const ckpt::PlacementGroup& group : placement->groups) {
            writer.beginObject();
            writer.key("prefixes").beginArray();
            for (const std::string& prefix : group.prefixes)
                writer.value(prefix);
            writer.endArray();
            writer.member("bytes", group.bytes);
            writer.member("device", group.device);
            writer.member("reason", group.reason);
            writer.endObject();
        }
        writer.endArray();
        writer.key("ledger").beginArray();
        for (const ckpt::DeviceLedgerLine& line : ledger.lines()) {
            writer.beginObject();
            writer.member("device", line.tag);
            writer.member("in_target", line.inMachine);
            writer.member("recorded_bytes", line.recordedBytes);
            writer.member("planned_bytes", line.plannedBytes);
            writer.member("allocated_bytes", line.allocatedBytes);
            writer.member("storages", line.storageCount);
            writer.member("cuda_context_bytes", line.contextBytes);
            writer.member("reserved_bytes", line.reservedBytes);
            writer.key("capacity_bytes");
            line.capacity ? writer.value(*line.capacity) : writer.null();
            writer.member("headroom_bytes", line.headroom());
            writer.member("over_capacity", line.overCapacity());
            writer.endObject();
        }
        writer.endArray();
        writer.member("cpu_staging_bytes", ledger.cpuStagingBytes());
        writer.key("did_not_fit").beginArray();
        for (const std::string& item : placement->didNotFit)
            writer.value(item);
        writer.endArray();
        writer.endObject();
        std::cout << writer.takeText() << "\n";
    } else {
        printMachine(*machine);
        std::cout << "\nStrategy: "
                  << (options.strategy == ckpt::PlacementStrategy::Balanced ? "balanced" : "sequential")
                  << "; blocks kept together by name prefix"
                  << (options.noSplitDepth > 0 ? " of depth " + std::to_string(options.noSplitDepth)
                                               : std::string(" (automatic depth)"))
                  << "\n";
        for (const std::string& line : placement->summary)
            std::cout << "  " << shown(line) << "\n";
        std::cout << "\nPlacement:\n";
        for (const ckpt::PlacementGroup& group : placement->groups)
            std::cout << "  " << shown(group.reason) << "\n";
        std::cout << "\nMemory per device (each storage once):\n";
        std::cout << "  " << std::left << std::setw(10) << "device" << std::right << std::setw(12)
                  << "recorded" << std::setw(12) << "planned" << std::setw(14) << "CUDA context"
                  << std::setw(12) << "capacity" << std::setw(12) << "headroom"
                  << "\n";
        for (const ckpt::DeviceLedgerLine& line : ledger.lines()) {
            std::cout << "  " << std::left << std::setw(10) << shown(line.tag) << std::right << std::setw(12)
                      << bytesText(line.recordedBytes) << std::setw(12) << bytesText(line.allocatedBytes)
                      << std::setw(14)
                      << (line.contextBytes ? bytesText(line.contextBytes) : std::string("-"))
                      << std::setw(12) << (line.capacity ? bytesText(*line.capacity) : std::string("-"))
                      << std::setw(12)
                      << (line.capacity ? (line.headroom() < 0
                                  ? "-" + bytesText(static_cast<std::uint64_t>(-line.headroom()))
                                  : bytesText(static_cast<std::uint64_t>(line.headroom())))
                                        : std::string("-"))
                      << (line.overCapacity() ? "  OVER CAPACITY" : "")
                      << (line.inMachine ? "" : "  (not in the target)") << "\n";
        }
        std::cout
            << "  CUDA context: " << bytesText(options.assumptions.cudaContextBytes)
            << " per GPU in use, an assumption (accelerate documents 1-2 GB); change it with --context\n";
        std::cout << "  A plain torch.load stages up to " << bytesText(ledger.cpuStagingBytes())
                  << " in CPU memory on the way (each storage is read into CPU memory before it moves)\n";
        if (!placement->didNotFit.empty()) {
            std::cout << "\nDid not fit:\n";
            for (const std::string& item : placement->didNotFit)
                std::cout << "  " << shown(item) << "\n";
        }
    }
    if (!save.empty() && checkpoint.shardSet) {
        if (const int status
            = ckpt::cli::saveShardedPlan(checkpoint, plan, *machine, save, false, true, std::cerr, std::cerr))
            return status;
    } else if (!save.empty()) {
        auto result = ckpt::writeRemappedCopy(checkpoint, plan, save);
        if (!result) {
            std::cerr << "ckpt-inspect plan: " << shown(result.error().message) << "\n";
            return 2;
        }
        std::cerr << shown(save) << ": " << shown(result->summary()) << "\n";
    }
    return placement->didNotFit.empty() ? 0 : 1;
}

void writeFindingJson(
    ckpt::JsonWriter& writer, const ckpt::Checkpoint& checkpoint, const ckpt::Finding& finding)
{
    writer.beginObject();
    writer.member("severity", ckpt::severityName(finding.severity));
    writer.member("code", finding.code);
    writer.member("message", finding.message);
    writer.member("explanation", finding.explanation);
    writer.member("fix", finding.fix);
    writer.key("record");
    finding.record.empty() ? writer.null() : writer.value(finding.record);
    writer.key("offset");
    finding.offset ? writer.value(*finding.offset) : writer.null();
    writer.key("tensors").beginArray();
    for (std::uint32_t tensor : finding.tensors)
        if (tensor < checkpoint.tensors.size())
            writer.value(checkpoint.tensors[tensor].name);
    writer.endArray();
    writer.endObject();
}

// The outcome most storages share, so that only the storages that differ are listed.
std::string commonOutcome(const ckpt::LoadSimulation& simulation)
{
    std::map<std::string, std::size_t> counts;
    for (const ckpt::StorageLoadOutcome& outcome : simulation.storages)
        ++counts[outcome.landsOn ? "lands on " + *outcome.landsOn : "fails: " + outcome.error];
    std::string best;
    std::size_t bestCount = 0;
    for (const auto& [text, count] : counts)
        if (count > bestCount) {
            best = text;
            bestCount = count;
        }
    return best;
}

// Runs ckpt-inspect-values (built next to this program when libtorch is available) and returns
// its JSON, or why there is none.
ckpt::Expected<ckpt::JsonValue> computeValues(const std::string& file)
{
    char self[4096];
    const ssize_t length = ::readlink("/proc/self/exe", self, sizeof self - 1);
    if (length <= 0)
        return ckpt::makeError("cannot find this program's folder to run ckpt-inspect-values");
    std::string program(self, static_cast<std::size_t>(length));
    program = program.substr(0, program.find_last_of('/') + 1) + "ckpt-inspect-values";
    if (::access(program.c_str(), X_OK) != 0)
        return ckpt::makeError(
            "value statistics need ckpt-inspect-values, built only where libtorch is installed (" + program
            + " is missing)");
    int pipeEnds[2];
    if (::pipe(pipeEnds) != 0)
        return ckpt::makeError(std::string("cannot run ckpt-inspect-values: ") + std::strerror(errno));
    const pid_t child = ::fork();
    if (child == 0) {
        ::dup2(pipeEnds[1], STDOUT_FILENO);
        ::close(pipeEnds[0]);
        ::close(pipeEnds[1]);
        ::execl(program.c_str(), program.c_str(), file.c_str(), static_cast<char*>(nullptr));
        ::_exit(127);
    }
    ::close(pipeEnds[1]);
    std::string output;
    char buffer[65536];
    for (ssize_t n; (n = ::read(pipeEnds[0], buffer, sizeof buffer)) != 0;) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            break;
        output.append(buffer, static_cast<std::size_t>(n));
    }
    ::close(pipeEnds[0]);
    int status = 0;
    ::waitpid(child, &status, 0);
    if (child < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return ckpt::makeError("ckpt-inspect-values failed on " + file);
    ckpt::JsonParseLimits limits;
    limits.maxBytes = std::size_t(1) << 31;
    return ckpt::parseJson(output, limits);
}

// NaN and infinities found by the value scan, as findings.
void addValueFindings(const ckpt::JsonValue& values, ckpt::TriageReport& report)
{
    for (const ckpt::JsonValue& tensor : values.member("tensors").items()) {
        const std::uint64_t nan = tensor.member("nan").toUInt64().value_or(0);
        const std::uint64_t posinf = tensor.member("posinf").toUInt64().value_or(0);
        const std::uint64_t neginf = tensor.member("neginf").toUInt64().value_or(0);
        if (nan + posinf + neginf == 0)
            continue;
        ckpt::Finding finding(ckpt::Severity::Warning, "values-nonfinite",
            "tensor '" + tensor.member("name").toString() + "' holds " + std::to_string(nan) + " NaN, "
                + std::to_string(posinf) + " +Inf and " + std::to_string(neginf) + " -Inf of its "
                + std::to_string(tensor.member("count").toUInt64().value_or(0)) + " values");
        finding.tensors.push_back(static_cast<std::uint32_t>(tensor.member("index").toUInt64().value_or(0)));
        finding.explanation
            = "A model with NaN or infinite weights produces NaN outputs: training diverged before this "
              "checkpoint was saved, or the values were damaged afterwards.";
        finding.fix = "Go back to an earlier checkpoint, or lower the learning rate and check the loss "
                      "scaling; a CRC "
                      "mismatch finding would mean the file itself was damaged.";
        report.findings.push_back(std::move(finding));
    }
}

int runCheck(const std::vector<std::string>& args)
{
    std::string file, target, mapLocationText;
    bool json = false;
    ckpt::TriageOptions options;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& arg = args[i];
        auto value = [&]() -> std::optional<std::string> {
            if (i + 1 >= args.size()) {
                std::cerr << "ckpt-inspect check: " << arg << " needs a value\n";
                return std::nullopt;
            }
            return args[++i];
        };
        if (arg == "--target") {
            auto v = value();
            if (!v)
                return 64;
            target = *v;
        } else if (arg == "--map-location") {
            auto v = value();
            if (!v)
                return 64;
            mapLocationText = *v;
        } else if (arg == "--importable") {
            auto v = value();
            if (!v)
                return 64;
            options.importableModules.push_back(*v);
        } else if (arg == "--values") {
            options.values = true;
        } else if (arg == "--json") {
            json = true;
        } else if (arg.starts_with("-")) {
            std::cerr << "ckpt-inspect check: unknown option " << arg << "\n" << kUsage;
            return 64;
        } else if (file.empty()) {
            file = arg;
        } else {
            std::cerr << "ckpt-inspect check: give one FILE\n";
            return 64;
        }
    }
    if (file.empty()) {
        std::cerr << "ckpt-inspect check: missing FILE\n" << kUsage;
        return 64;
    }
    if (!target.empty()) {
        ckpt::TargetProfiles profiles;
        if (auto problem = profiles.load())
            std::cerr << "note: saved targets could not be read: " << problem->message << "\n";
        auto machine = ckpt::resolveMachine(target, profiles);
        if (!machine) {
            std::cerr << "ckpt-inspect check: " << machine.error().message << "\n";
            return 64;
        }
        options.target = *machine;
    }
    if (!mapLocationText.empty()) {
        auto mapLocation = ckpt::MapLocation::parse(mapLocationText);
        if (!mapLocation) {
            std::cerr << "ckpt-inspect check: --map-location: " << mapLocation.error().message << "\n";
            return 64;
        }
        options.mapLocation = *mapLocation;
    }

    const ckpt::Checkpoint checkpoint = ckpt::readCheckpoint(file);
    ckpt::TriageReport report = ckpt::triage(checkpoint, options);
    std::optional<ckpt::JsonValue> values;
    std::string valuesProblem;
    if (options.values && checkpoint.format != ckpt::CheckpointFormat::NotACheckpoint) {
        auto computed = computeValues(file);
        if (computed) {
            values = *computed;
            addValueFindings(*values, report);
        } else {
            valuesProblem = computed.error().message;
        }
    }
    const bool unreadable = checkpoint.format == ckpt::CheckpointFormat::NotACheckpoint
        || (!checkpoint.file && !checkpoint.shardSet); // several files have no single map
    const int exitCode = report.safety.dangerous() ? 4 : unreadable ? 3 : report.exitCode();
    const std::string format = unreadable ? std::string(ckpt::containerKindName(checkpoint.container.kind))
                                          : std::string(ckpt::checkpointFormatName(checkpoint.format));

    if (json) {
        ckpt::JsonWriter writer(ckpt::JsonStyle::Pretty);
        writer.beginObject();
        writer.member("file", file);
        writer.member("format", format);
        writer.member("exit_code", exitCode);
        writer.key("safety");
        writeSafetyJson(writer, report.safety);
        writer.key("findings").beginArray();
        for (const ckpt::Finding& finding : report.findings)
            writeFindingJson(writer, checkpoint, finding);
        writer.endArray();
        writer.key("load_simulation").beginArray();
        for (const ckpt::LoadSimulation& simulation : report.loadSimulations) {
            writer.beginObject();
            writer.member("torch", ckpt::torchGenerationName(simulation.generation));
            writer.member("weights_only", simulation.weightsOnly);
            writer.member("loads", simulation.loads);
            writer.key("error");
            simulation.error.empty() ? writer.null() : writer.value(simulation.error);
            writer.key("error_type");
            simulation.errorType.empty() ? writer.null() : writer.value(simulation.errorType);
            writer.key("storages").beginArray();
            for (const ckpt::StorageLoadOutcome& outcome : simulation.storages) {
                writer.beginObject();
                writer.member("storage",
                    outcome.storage < checkpoint.storages.size() ? checkpoint.storages[outcome.storage].key
                                                                 : std::to_string(outcome.storage));
                writer.key("lands_on");
                outcome.landsOn ? writer.value(*outcome.landsOn) : writer.null();
                writer.key("error");
                outcome.error.empty() ? writer.null() : writer.value(outcome.error);
                writer.endObject();
            }
            writer.endArray();
            writer.endObject();
        }
        writer.endArray();
        const ckpt::WeightsOnlyVerdict& verdict = report.weightsOnly;
        writer.key("weights_only").beginObject();
        writer.member("rating", ckpt::safetyRatingName(verdict.rating));
        writer.member("torch", ckpt::torchGenerationName(verdict.generation));
        writer.key("globals").beginArray();
        for (const ckpt::GlobalClassification& global : verdict.globals) {
            writer.beginObject();
            writer.member("name", global.name);
            writer.member("verdict", ckpt::globalVerdictName(global.verdict));
            writer.member("reason", global.reason);
            writer.endObject();
        }
        writer.endArray();
        writer.key("rejected_opcodes").beginArray();
        for (const std::string& opcode : verdict.rejectedOpcodes)
            writer.value(opcode);
        writer.endArray();
        writer.key("add_safe_globals");
        verdict.addSafeGlobalsCall.empty() ? writer.null() : writer.value(verdict.addSafeGlobalsCall);
        writer.key("call_chains").beginArray();
        for (const std::string& chain : verdict.dangerousCallChains)
            writer.value(chain);
        writer.endArray();
        writer.key("torch_message");
        verdict.torchMessage.empty() ? writer.null() : writer.value(verdict.torchMessage);
        writer.endObject();
        if (values)
            writer.member("values", values->member("tensors"));
        else if (options.values)
            writer.member("values_error", valuesProblem);
        writer.endObject();
        std::cout << writer.takeText() << "\n";
        return exitCode;
    }

    std::cout << shown(file) << ": " << shown(format) << "\n" << safetyText(report.safety);
    for (const ckpt::Severity severity :
        {ckpt::Severity::Error, ckpt::Severity::Warning, ckpt::Severity::Info}) {
        std::size_t count = 0;
        for (const ckpt::Finding& finding : report.findings)
            count += finding.severity == severity;
        if (!count)
            continue;
        std::cout << "\n"
                  << (severity == ckpt::Severity::Error            ? "Errors"
                             : severity == ckpt::Severity::Warning ? "Warnings"
                                                                   : "Notes")
                  << " (" << count << "):\n";
        for (const ckpt::Finding& finding : report.findings) {
            if (finding.severity != severity)
                continue;
            std::cout << "  [" << finding.code << "] " << shown(finding.message) << "\n";
            if (!finding.explanation.empty())
                std::cout << "      why: " << shown(finding.explanation) << "\n";
            if (!finding.fix.empty())
                std::cout << "      fix: " << shown(finding.fix) << "\n";
        }
    }
    if (report.findings.empty())
        std::cout << "\nNo findings.\n";
    if (!report.loadSimulations.empty()) {
        std::cout << "\nLoad simulation"
                  << (options.target ? " on " + shown(options.target->name) : std::string(" on this machine"))
                  << ", map_location=" << shown(options.mapLocation.python()) << ":\n";
        for (const ckpt::LoadSimulation& simulation : report.loadSimulations) {
            std::cout << "  " << ckpt::torchGenerationName(simulation.generation)
                      << (simulation.weightsOnly ? " (weights_only=True)" : " (weights_only=False)") << ": "
                      << (simulation.loads ? "loads"
                                           : "fails: "
                                     + shown((simulation.errorType.empty() ? std::string()
                                                                           : simulation.errorType + ": ")
                                         + simulation.error))
                      << "\n";
            const std::string common = commonOutcome(simulation);
            if (!common.empty())
                std::cout << "    most storages: " << shown(common) << "\n";
            for (const ckpt::StorageLoadOutcome& outcome : simulation.storages) {
                const std::string text
                    = outcome.landsOn ? "lands on " + *outcome.landsOn : "fails: " + outcome.error;
                if (text != common && outcome.storage < checkpoint.storages.size())
                    std::cout << "    storage " << shown(checkpoint.storages[outcome.storage].key) << ": "
                              << shown(text) << "\n";
            }
        }
    }
    const ckpt::WeightsOnlyVerdict& verdict = report.weightsOnly;
    std::cout << "\nweights_only verdict (" << ckpt::torchGenerationName(verdict.generation)
              << "): " << ckpt::safetyRatingName(verdict.rating) << "\n";
    for (const ckpt::GlobalClassification& global : verdict.globals)
        std::cout << "  " << std::left << std::setw(16) << ckpt::globalVerdictName(global.verdict)
                  << std::right << " " << shown(global.name)
                  << (global.reason.empty() ? std::string() : ": " + shown(global.reason)) << "\n";
    if (!verdict.addSafeGlobalsCall.empty())
        std::cout << "  allow with: " << shownLines(verdict.addSafeGlobalsCall) << "\n";
    for (const std::string& chain : verdict.dangerousCallChains)
        std::cout << "  would run: " << shown(chain) << "\n";
    if (values) {
        std::size_t computed = 0, nonFinite = 0;
        for (const ckpt::JsonValue& tensor : values->member("tensors").items()) {
            computed += tensor.find("error") ? 0 : 1;
            nonFinite += tensor.member("nan").toUInt64().value_or(0)
                    + tensor.member("posinf").toUInt64().value_or(0)
                    + tensor.member("neginf").toUInt64().value_or(0)
                ? 1
                : 0;
        }
        std::cout << "\nValues: " << computed << " tensors scanned, " << nonFinite
                  << " hold NaN or infinities\n";
        for (const ckpt::JsonValue& tensor : values->member("tensors").items()) {
            if (tensor.find("error")) {
                std::cout << "  " << shown(tensor.member("name").toString()) << ": "
                          << shown(tensor.member("error").toString()) << "\n";
                continue;
            }
            std::cout << "  " << std::left << std::setw(40) << shown(tensor.member("name").toString())
                      << std::right << " min " << tensor.member("min").toDouble() << "  max "
                      << tensor.member("max").toDouble() << "  mean " << tensor.member("mean").toDouble()
                      << "  std " << tensor.member("std").toDouble()
                      << (tensor.member("nan").toUInt64().value_or(0)
                                 ? "  NaN " + std::to_string(*tensor.member("nan").toUInt64())
                                 : "")
                      << "\n";
        }
    } else if (options.values) {
        std::cout << "\nValues: " << shown(valuesProblem) << "\n";
    }
    return exitCode;
}

} // namespace

int main(int argc, char** argv)
{
    TerminalSafeBuffer safeOut(std::cout.rdbuf());
    TerminalSafeBuffer safeErr(std::cerr.rdbuf());
    std::cout.rdbuf(&safeOut);
    std::cerr.rdbuf(&safeErr);
    struct RestoreStreams {
        std::streambuf* out;
        std::streambuf* err;
        ~RestoreStreams()
        {
            std::cout.flush();
            std::cerr.flush();
            std::cout.rdbuf(out);
            std::cerr.rdbuf(err);
        }
    } restore {safeOut.target(), safeErr.target()};
    std::vector<std::string> args(argv + 1, argv + argc);
    if (args.empty() || args[0] == "help" || args[0] == "--help" || args[0] == "-h") {
        std::cout << kUsage;
        return args.empty() ? 64 : 0;
    }
    const std::string command = args[0];
    args.erase(args.begin());
    // A file-size limit must fail the write with a message, not kill the process mid-file.
    std::signal(SIGXFSZ, SIG_IGN);
    if (command == "info")
        return runInfo(args);
    if (command == "remap")
        return runRemap(args);
    if (command == "check")
        return runCheck(args);
    if (command == "devices")
        return runDevices(args);
    if (command == "targets")
        return runTargets(args);
    if (command == "plan")
        return runPlan(args);
    if (command == "extract")
        return cli::runExtract(args);
    if (command == "convert")
        return cli::runConvert(args);
    if (command == "diff")
        return cli::runDiff(args);
    std::cerr << "ckpt-inspect: unknown command '" << command << "'\n" << kUsage;
    return 64;
}
