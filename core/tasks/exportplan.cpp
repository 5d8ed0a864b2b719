// SPDX-License-Identifier: MIT
#include "core/tasks/exportplan.h"

#include "core/base/pythonliteral.h"
#include "core/io/atomicoutputfile.h"
#include "core/model/checkpoint.h"
#include "core/model/formatcapabilities.h"
#include "core/model/shardset.h"
#include "core/plan/devicemap.h"
#include "core/plan/placementplan.h"
#include "core/write/shardedwriter.h"

#include <algorithm>
#include <filesystem>
#include <memory>

namespace ckpt {

namespace {

namespace fs = std::filesystem;

// `path` with links and `..` resolved as far as it exists, without a trailing separator.
std::string resolved(const std::string& path)
{
    std::error_code error;
    fs::path absolute = fs::absolute(path, error);
    if (error)
        absolute = path;
    std::string text = fs::weakly_canonical(absolute, error).lexically_normal().string();
    if (error)
        text = absolute.lexically_normal().string();
    while (text.size() > 1 && text.back() == '/')
        text.pop_back();
    return text;
}

bool sameOrInside(const std::string& path, const std::string& folder)
{
    return path == folder
        || (path.size() > folder.size() && path.starts_with(folder) && path[folder.size()] == '/');
}

// The one loader script: the exported dicts with from_pretrained (safetensors), or for DCP how to
// place the state_dict it loads into. `why` is its first comment, on one line.
std::string loaderScript(const Checkpoint& input, const DeviceMapExport& exported, std::string why)
{
    for (char& c : why)
        if (c == '\n' || c == '\r')
            c = ' ';
    const std::string& folder = input.shardSet->folder;
    std::string python = "# Written by Checkpoint Inspector (ckpt-inspect). " + why + "\n";
    std::string dicts = exported.python(folder);
    if (input.shardSet->layout == ShardLayout::Distributed) {
        // from_pretrained cannot read a DCP folder: the script gives the two dicts and says how to
        // place the state_dict (it once ended in a from_pretrained call that named no import).
        dicts.erase(std::min(dicts.size(), dicts.rfind("model = AutoModelForCausalLM")));
        python
            += "# DCP loads into a state_dict whose tensors are already placed: build the model, move each\n"
               "# module to the device below, then torch.distributed.checkpoint.load(model.state_dict(), "
               "checkpoint_id="
            + pythonStringLiteral(folder) + ").\n";
    } else {
        python += "from transformers import AutoModelForCausalLM\n";
    }
    return python + dicts;
}

} // namespace

std::optional<std::string> whyOutputIntoInputFolder(
    const std::string& inputFolder, const std::string& outputFolder)
{
    const std::string input = resolved(inputFolder);
    const std::string output = resolved(outputFolder);
    if (output == input)
        return "the output folder is the input folder; choose a folder outside it";
    if (sameOrInside(output, input))
        return "the output folder is inside the input folder; choose a folder outside it";
    return std::nullopt;
}

std::optional<std::string> whyExportOnly(const Checkpoint& input)
{
    if (!input.shardSet || formatCapabilities(input).copyWithPlan != CopyWithPlan::PlanExported)
        return std::nullopt;
    return whyFolderCannotBeRemapped(input);
}

ExportPlanOutcome exportPlan(const ExportPlanRequest& request)
{
    const Checkpoint& input = *request.input;
    ExportPlanOutcome outcome;
    outcome.outputFolder = request.outputFolder;
    const auto why = whyExportOnly(input);
    if (!why) {
        outcome.status = ExportPlanStatus::NotExportOnly;
        outcome.input = input.shardSet ? input.shardSet->folder : input.path;
        outcome.refusal = "this checkpoint records devices: a remapped copy is written, not a plan";
        return outcome;
    }
    outcome.input = input.shardSet->folder;
    outcome.layout = shardLayoutName(input.shardSet->layout);
    outcome.why = *why;

    const fs::path folder(request.outputFolder);
    const std::string mapPath = (folder / "device_map.json").string();
    const std::string scriptPath = (folder / "load_with_device_map.py").string();

    // Never into the input: not its folder (through a link or `..` too), not a folder inside it,
    // not over one of its files (an output file that is a link to one).
    const std::string inputFolder = resolved(input.shardSet->folder);
    if (auto into = whyOutputIntoInputFolder(input.shardSet->folder, request.outputFolder)) {
        outcome.status = ExportPlanStatus::RefusedIntoInput;
        outcome.refusal = *into;
        return outcome;
    }
    for (const std::string& path : {mapPath, scriptPath}) {
        std::error_code error;
        bool ofInput = sameOrInside(resolved(path), inputFolder);
        for (const ShardFile& shard : input.shardSet->shards)
            ofInput = ofInput || fs::equivalent(path, shard.path, error);
        if (ofInput) {
            outcome.status = ExportPlanStatus::RefusedIntoInput;
            outcome.refusal = path + " is a file of the input folder; choose another output folder";
            return outcome;
        }
    }

    const DeviceMapExport exported = exportDeviceMap(input, *request.plan, request.machine);
    outcome.deviceMapJson = exported.json();
    outcome.loaderScript = loaderScript(input, exported, *why);

    std::error_code error;
    fs::create_directories(folder, error);
    if (error) {
        outcome.status = ExportPlanStatus::Failed;
        outcome.refusal = "cannot create " + request.outputFolder + ": " + error.message();
        return outcome;
    }
    // Both files written before either takes its name: a failure leaves neither.
    std::vector<std::unique_ptr<AtomicOutputFile>> files;
    for (const auto& [path, text] :
        {std::pair<const std::string&, const std::string&>(mapPath, outcome.deviceMapJson),
            std::pair<const std::string&, const std::string&>(scriptPath, outcome.loaderScript)}) {
        auto file = AtomicOutputFile::create(path, {}, text.size());
        Status problem = file ? (*file)->write(text) : Status(file.error());
        if (problem) {
            outcome.status = ExportPlanStatus::Failed;
            outcome.refusal = problem->message;
            return outcome;
        }
        files.push_back(std::move(*file));
    }
    for (const std::unique_ptr<AtomicOutputFile>& file : files) {
        if (Status problem = file->commit()) {
            outcome.status = ExportPlanStatus::Failed;
            outcome.refusal = problem->message;
            return outcome;
        }
        outcome.exported.push_back(file->targetPath());
    }
    outcome.status = ExportPlanStatus::Exported;
    return outcome;
}

} // namespace ckpt
