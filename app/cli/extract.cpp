// ckpt-inspect extract: a plain state_dict out of any readable checkpoint, without running it.
#include "commands.h"
#include "extractreport.h"
#include "planoptions.h"

#include "core/json/json.h"
#include "core/model/checkpoint.h"
#include "core/plan/placementplan.h"
#include "core/read/checkpointreader.h"
#include "core/write/extractwriter.h"

#include <iostream>

namespace cli {

int runExtract(const std::vector<std::string>& args)
{
    std::string file, output;
    bool json = false;
    PlanOptions planOptions;
    ckpt::ExtractOptions options;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& arg = args[i];
        auto value = [&]() -> std::optional<std::string> {
            if (i + 1 >= args.size()) {
                std::cerr << "ckpt-inspect extract: " << arg << " needs a value\n";
                return std::nullopt;
            }
            return args[++i];
        };
        std::optional<std::string> error;
        if (planOptions.consume(args, i, "extract", error)) {
            if (error) {
                std::cerr << *error << "\n";
                return 64;
            }
        } else if (arg == "-o" || arg == "--output") {
            auto v = value();
            if (!v)
                return 64;
            output = *v;
        } else if (arg == "--select") {
            auto v = value();
            if (!v)
                return 64;
            options.select.push_back(*v);
        } else if (arg == "--root") {
            auto v = value();
            if (!v)
                return 64;
            options.root = *v;
        } else if (arg == "--json") {
            json = true;
        } else if (arg == "--no-verify") {
            options.verifyAfterWriting = false;
        } else if (arg.starts_with("-")) {
            std::cerr << "ckpt-inspect extract: unknown option " << arg << "\n";
            return 64;
        } else if (file.empty()) {
            file = arg;
        } else {
            std::cerr << "ckpt-inspect extract: give one FILE\n";
            return 64;
        }
    }
    if (file.empty() || output.empty()) {
        std::cerr << "usage: ckpt-inspect extract FILE -o OUT.pt [--select PREFIX]... [--root PATH] "
                     "[--map FROM=TO]... [--tensor NAME=DEV]... [--module PREFIX=DEV]... [--json]\n";
        return 64;
    }
    const ckpt::Checkpoint checkpoint = ckpt::readCheckpoint(file);
    if (checkpoint.format == ckpt::CheckpointFormat::NotACheckpoint) {
        std::cerr << "ckpt-inspect extract: " << file << ": " << checkpoint.container.description << "\n";
        return 2;
    }
    // A folder of shards, an index or a DCP folder reads as one checkpoint (as `info` shows it), but
    // an extract is one torch.save file copied storage by storage from one input file.
    if (checkpoint.shardSet) {
        std::cerr << "ckpt-inspect extract: " << file << " is " << checkpoint.container.description
                  << "; extract writes one file from one file: extract each shard, or write safetensors "
                     "of the whole set with `ckpt-inspect convert "
                  << file << " -o OUT.safetensors`\n";
        return 2;
    }
    ckpt::PlacementPlan plan(checkpoint);
    if (!planOptions.apply(checkpoint, plan, "extract"))
        return 2;
    auto result = ckpt::writeExtractedStateDict(checkpoint, plan, output, options);
    if (!result) {
        std::cerr << "ckpt-inspect extract: " << result.error().message << "\n";
        return 2;
    }
    addUnsafeNotCarried(checkpoint, result->globalsNotCarried);
    if (json) {
        ckpt::JsonWriter writer(ckpt::JsonStyle::Pretty);
        writeExtractJson(writer, file, checkpoint, *result);
        std::cout << writer.takeText() << "\n";
    } else {
        printExtractReport(std::cout, checkpoint, *result);
    }
    return 0;
}

} // namespace cli
