// SPDX-License-Identifier: MIT
// ckpt-inspect remap: a copy whose storages are recorded on the planned devices, so that plain
// torch.load puts them there; or the plan printed as a map_location.
#include "command.h"
#include "planoptions.h"
#include "shardedcommands.h"
#include "terminal.h"

#include "core/devices/deviceinventory.h"
#include "core/io/atomicoutputfile.h"
#include "core/io/mappedfile.h"
#include "core/json/json.h"
#include "core/model/checkpoint.h"
#include "core/model/shardset.h"
#include "core/plan/placementplan.h"
#include "core/read/checkpointreader.h"
#include "core/report/remapreport.h"
#include "core/report/safetyreport.h"
#include "core/triage/triage.h"
#include "core/write/remapwriter.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <memory>
#include <unistd.h>

namespace cli {

namespace {

struct RemapArguments {
    std::string file;
    std::string output;
    bool json = false;
    bool verify = true;
    bool printMapLocation = false;
    bool allowDangerous = false;
    PlanOptions planOptions;
    std::vector<ckpt::GlobalRename> renames;
};

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
        ckpt::writeSafetyJson(writer, copied);
        writer.member("summary", summary);
        writer.endObject();
        std::cout << writer.takeText() << "\n";
    } else {
        std::cout << shown(output) << ": " << summary << "\n";
    }
    std::cerr << "warning: " << output << " is a byte-for-byte copy of a file rated dangerous\n";
    return 0;
}

int runRemap(const RemapArguments& arguments)
{
    if (arguments.output.empty() && !arguments.printMapLocation) {
        std::cerr << "ckpt-inspect remap: give FILE and -o OUT (or --print-map-location)\n";
        return kUsageError;
    }

    const ckpt::Checkpoint checkpoint = ckpt::readCheckpoint(arguments.file);
    const ckpt::SafetyVerdict safety = checkpoint.shardSet ? ckpt::rateShardSafety(checkpoint) // every shard
                                                           : ckpt::ratePickleSafety(checkpoint);
    // Safetensors and DCP folders only export a device_map: no pickle is copied.
    const bool exportOnly
        = checkpoint.shardSet && checkpoint.shardSet->layout != ckpt::ShardLayout::HuggingFaceBin;
    if (safety.dangerous() && !arguments.printMapLocation && !exportOnly) {
        if (!arguments.allowDangerous || checkpoint.shardSet) { // a folder is never copied unchanged here
            std::cerr
                << "ckpt-inspect remap: refusing to write a copy of " << shown(arguments.file) << ": "
                << shown(safety.headline)
                << "\n(a copy would carry the same code; pass --allow-dangerous to copy it unchanged)\n";
            return 4;
        }
        if (arguments.renames.empty())
            return copyDangerousUnchanged(arguments.file, arguments.output, safety, arguments.json);
        // Renaming a moved module path is the one reason to rewrite a pickle that cannot be vetted
        // (a whole pickled model whose package was renamed): asked for explicitly, the copy is
        // written like any other, with only the renames and the plan applied, and says so.
        std::cerr << "note: " << shown(arguments.file)
                  << " is rated dangerous; with --allow-dangerous its pickle is carried into the copy with"
                     " only the renames and the plan applied\n";
    }
    if (checkpoint.format == ckpt::CheckpointFormat::NotACheckpoint) {
        std::cerr << "ckpt-inspect remap: " << shown(arguments.file) << ": "
                  << shown(checkpoint.container.description) << "\n";
        return 2;
    }
    ckpt::PlacementPlan plan(checkpoint);
    if (!arguments.planOptions.apply(checkpoint, plan, "remap"))
        return 2;
    if (arguments.printMapLocation) {
        std::cout << shownLines(plan.asPython(arguments.file));
        return 0;
    }

    if (checkpoint.shardSet) { // a folder of shards: a new folder, or the plan exported
        if (!arguments.renames.empty()) {
            std::cerr << "ckpt-inspect remap: --rename-global rewrites one file; it does not apply to a "
                         "folder of shards yet (remap each shard file)\n";
            return kUsageError;
        }
        return ckpt::cli::saveShardedPlan(checkpoint, plan, ckpt::detectThisMachine(), arguments.output,
            arguments.json, arguments.verify, std::cout, std::cerr);
    }
    ckpt::RemapOptions remapOptions {{}, arguments.verify, arguments.renames};
    auto result = ckpt::writeRemappedCopy(checkpoint, plan, arguments.output, remapOptions);
    if (!result) {
        std::cerr << "ckpt-inspect remap: " << shown(result.error().message) << "\n";
        return 2;
    }
    if (arguments.json) {
        ckpt::JsonWriter writer(ckpt::JsonStyle::Pretty);
        ckpt::writeRemapJson(writer, arguments.file, checkpoint, *result);
        std::cout << writer.takeText() << "\n";
    } else {
        ckpt::writeRemapText(std::cout, arguments.output, *result);
    }
    return 0;
}

} // namespace

Command addRemapCommand(CLI::App& program)
{
    auto arguments = std::make_shared<RemapArguments>();
    CLI::App* command = program.add_subcommand("remap",
        "Writes a copy whose storages are recorded on the planned devices, so plain torch.load puts them "
        "there (a tensor moves with every tensor that shares its storage), or prints the plan as a "
        "map_location. Refuses a file rated dangerous (exit 4) unless --allow-dangerous.");
    addPathArgument(*command, "FILE", arguments->file, "a checkpoint file, or a folder of shards");
    command->add_option("-o,--output", arguments->output, "where to write the copy (a folder for shards)")
        ->type_name("OUT");
    arguments->planOptions.addTo(*command);
    command
        ->add_option_function<std::string>(
            "--rename-global",
            [arguments](const std::string& value) {
                auto rename = ckpt::GlobalRename::parse(value);
                if (!rename)
                    throw CLI::ValidationError("--rename-global", rename.error().message);
                arguments->renames.push_back(*rename);
            },
            "names a class or function (module.name) or a module path under its new name in the copy, e.g. "
            "numpy._core.multiarray.scalar=numpy.core.multiarray.scalar; repeatable")
        ->type_name("OLD=NEW");
    command->add_flag("--print-map-location", arguments->printMapLocation,
        "print the plan as a map_location dict (or a Python snippet) instead of writing a copy");
    command->add_flag("--allow-dangerous", arguments->allowDangerous,
        "copy a file rated dangerous unchanged (with --rename-global: only the renames and the plan "
        "applied)");
    addNoVerifyFlag(*command, arguments->verify);
    addJsonFlag(*command, arguments->json);
    return {command, [arguments] { return runRemap(*arguments); }};
}

} // namespace cli
