// SPDX-License-Identifier: MIT
// ckpt-inspect: the command-line twin of the desktop app, for scripts, servers and tests. This file
// only builds the parser and runs the chosen command; each command lives in app/cli/.
#include "app/cli/command.h"
#include "app/cli/terminal.h"
#include "core/base/mallocpolicy.h"
#include "version.h"

#include <algorithm>
#include <csignal>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

namespace {

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
  help [COMMAND]       this text, or a command's options (also COMMAND --help)

Options take their value as --opt VALUE or --opt=VALUE; numbers and sizes that are not what they
say are refused (exit 64). ckpt-inspect --version prints the version.

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

// The innermost command the command line chose (`targets save` rather than `targets`), or nullptr.
const CLI::App* chosenCommand(const CLI::App& program)
{
    const CLI::App* chosen = nullptr;
    for (const CLI::App* level = &program; level;) {
        const auto below = level->get_subcommands();
        level = below.empty() ? nullptr : below.front();
        if (level)
            chosen = level;
    }
    return chosen;
}

bool isCommand(CLI::App& program, const std::string& name)
{
    return !program.get_subcommands([&name](const CLI::App* command) { return command->check_name(name); })
                .empty();
}

// "remap", "targets save": how the user typed the command after the program's name.
std::string commandPath(const CLI::App* command)
{
    std::string path;
    for (; command && command->get_parent(); command = command->get_parent())
        path = command->get_name() + (path.empty() ? "" : " " + path);
    return path;
}

// Text as lines of at most `width` columns (CLI11 prints descriptions as given).
std::string wrapped(const std::string& text, std::size_t width)
{
    std::string out, line;
    std::size_t start = 0;
    while (start < text.size()) {
        const std::size_t end = std::min(text.find(' ', start), text.size());
        const std::string word = text.substr(start, end - start);
        if (!line.empty() && line.size() + 1 + word.size() > width) {
            out += line + "\n";
            line.clear();
        }
        line += (line.empty() ? "" : " ") + word;
        start = end + 1;
    }
    return out + line;
}

constexpr std::size_t kHelpWidth = 100;
constexpr std::size_t kOptionColumn = 30;

// CLI11's help, its descriptions wrapped to the terminal's usual width.
class WrappingFormatter : public CLI::Formatter {
public:
    WrappingFormatter() { column_width(kOptionColumn); }
    std::string make_option_desc(const CLI::Option* option) const override
    {
        return wrapped(CLI::Formatter::make_option_desc(option), kHelpWidth - kOptionColumn);
    }
    std::string make_description(const CLI::App* app) const override
    {
        return wrapped(app->get_description(), kHelpWidth) + "\n";
    }
};

// CLI11's help of one command, its usage line naming the program ("ckpt-inspect remap [OPTIONS]").
std::string helpOf(const CLI::App& command)
{
    const std::string path = commandPath(&command);
    const std::size_t space = path.rfind(' ');
    return command.help(
        space == std::string::npos ? "ckpt-inspect" : "ckpt-inspect " + path.substr(0, space));
}

} // namespace

int main(int argc, char** argv)
{
    ckpt::returnLargeBlocksToTheSystem();
    cli::TerminalSafeBuffer safeOut(std::cout.rdbuf());
    cli::TerminalSafeBuffer safeErr(std::cerr.rdbuf());
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

    CLI::App program("Opens PyTorch checkpoints without running any of their pickle code.", "ckpt-inspect");
    program.formatter(std::make_shared<WrappingFormatter>());
    program.set_version_flag("--version", std::string("ckpt-inspect ") + ckpt::kVersion, "print the version");
    program.require_subcommand(1, 1);
    const std::vector<cli::Command> commands {cli::addInfoCommand(program), cli::addRemapCommand(program),
        cli::addCheckCommand(program), cli::addDevicesCommand(program), cli::addPlanCommand(program),
        cli::addTargetsCommand(program), cli::addExtractCommand(program), cli::addConvertCommand(program),
        cli::addDiffCommand(program)};
    std::string helpTopic;
    CLI::App* help = program.add_subcommand("help", "this text, or a command's options");
    help->add_option("COMMAND", helpTopic, "the command whose options to show");

    if (argc < 2) {
        std::cout << kUsage;
        return cli::kUsageError;
    }
    if (const std::string first = argv[1]; !first.starts_with("-") && !isCommand(program, first)) {
        std::cerr << "ckpt-inspect: unknown command '" << first << "'\n" << kUsage;
        return cli::kUsageError;
    }
    try {
        program.parse(argc, argv);
    } catch (const CLI::CallForHelp&) {
        const CLI::App* command = chosenCommand(program);
        std::cout << (command ? helpOf(*command) : std::string(kUsage));
        return 0;
    } catch (const CLI::CallForAllHelp&) {
        std::cout << kUsage;
        return 0;
    } catch (const CLI::CallForVersion& version) {
        std::cout << version.what() << "\n";
        return 0;
    } catch (const CLI::ParseError& error) {
        const std::string path = commandPath(chosenCommand(program));
        std::cerr << "ckpt-inspect" << (path.empty() ? "" : " " + path) << ": " << error.what() << "\n"
                  << "(ckpt-inspect " << (path.empty() ? "" : path + " ") << "--help lists the options)\n";
        return cli::kUsageError;
    }
    if (help->parsed()) {
        if (helpTopic.empty()) {
            std::cout << kUsage;
            return 0;
        }
        if (!isCommand(program, helpTopic)) {
            std::cerr << "ckpt-inspect help: unknown command '" << helpTopic << "'\n";
            return cli::kUsageError;
        }
        const CLI::App* command = program.get_subcommand(helpTopic);
        std::cout << helpOf(*command);
        return 0;
    }
    // A file-size limit must fail the write with a message, not kill the process mid-file.
    std::signal(SIGXFSZ, SIG_IGN);
    for (const cli::Command& command : commands)
        if (command.parser->parsed())
            return command.run();
    std::cout << kUsage;
    return cli::kUsageError;
}
