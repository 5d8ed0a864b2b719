// SPDX-License-Identifier: MIT
#include "app/cli/shardedcommands.h"

#include "core/base/escaping.h"
#include "core/base/pythonliteral.h"
#include "core/io/atomicoutputfile.h"
#include "core/json/json.h"
#include "core/model/checkpoint.h"
#include "core/model/shardset.h"
#include "core/plan/devicemap.h"
#include "core/plan/placementplan.h"
#include "core/report/remapreport.h"
#include "core/write/shardedwriter.h"

#include <filesystem>
#include <ostream>
#include <unistd.h>

namespace ckpt::cli {

namespace {

namespace fs = std::filesystem;

Status writeWholeFile(const std::string& path, const std::string& text)
{
    auto file = AtomicOutputFile::create(path, {}, text.size());
    if (!file)
        return file.error();
    if (Status problem = (*file)->write(text))
        return problem;
    return (*file)->commit();
}

int exportOnly(const Checkpoint& checkpoint, const PlacementPlan& plan, const MachineInventory& machine,
    const std::string& outputFolder, const std::string& why, bool json, std::ostream& out, std::ostream& err)
{
    const DeviceMapExport exported = exportDeviceMap(checkpoint, plan, &machine);
    std::error_code error;
    if (fs::exists(outputFolder, error) && fs::equivalent(outputFolder, checkpoint.shardSet->folder, error)) {
        err << "ckpt-inspect: the output folder is the input folder; choose another\n";
        return 2;
    }
    fs::create_directories(outputFolder, error);
    if (error) {
        err << "ckpt-inspect: cannot create " << printableText(outputFolder) << ": " << error.message()
            << "\n";
        return 2;
    }
    const std::string mapPath = (fs::path(outputFolder) / "device_map.json").string();
    const std::string pythonPath = (fs::path(outputFolder) / "load_with_device_map.py").string();
    const bool dcp = checkpoint.shardSet->layout == ShardLayout::Distributed;
    std::string python = "# Written by ckpt-inspect. " + why + "\n";
    if (dcp)
        python
            += "# DCP loads into a state_dict whose tensors are already placed: build the model, move each\n"
               "# module to the device below, then torch.distributed.checkpoint.load(model.state_dict(), "
               "checkpoint_id="
            + pythonStringLiteral(checkpoint.shardSet->folder) + ").\n";
    else
        python += "from transformers import AutoModelForCausalLM\n";
    python += exported.python(checkpoint.shardSet->folder);
    if (auto problem = writeWholeFile(mapPath, exported.json())) {
        err << "ckpt-inspect: " << printableText(problem->message) << "\n";
        return 2;
    }
    if (auto problem = writeWholeFile(pythonPath, python)) {
        err << "ckpt-inspect: " << printableText(problem->message) << "\n";
        return 2;
    }
    if (json) {
        JsonWriter writer(JsonStyle::Pretty);
        writer.beginObject();
        writer.member("input", checkpoint.shardSet->folder);
        writer.member("output", outputFolder);
        writer.member("layout", std::string(shardLayoutName(checkpoint.shardSet->layout)));
        writer.member("rewritten", false);
        writer.member("why", why);
        writer.key("exported").beginArray().value(mapPath).value(pythonPath).endArray();
        writer.key("device_map").value(*parseJson(exported.json())).endObject();
        out << writer.takeText() << "\n";
    } else {
        out << "nothing rewritten: " << why << "\n"
            << "exported " << printableText(mapPath) << " and " << printableText(pythonPath) << ":\n\n"
            << printableText(python);
    }
    return 0;
}

} // namespace

int saveShardedPlan(const Checkpoint& checkpoint, const PlacementPlan& plan, const MachineInventory& machine,
    const std::string& outputFolder, bool json, bool verify, std::ostream& out, std::ostream& err)
{
    const ShardLayout layout = checkpoint.shardSet->layout;
    if (layout != ShardLayout::HuggingFaceBin)
        return exportOnly(
            checkpoint, plan, machine, outputFolder, *whyFolderCannotBeRemapped(checkpoint), json, out, err);
    auto result = writeRemappedFolder(checkpoint, plan, outputFolder, {{}, verify, {}, {}});
    if (!result) {
        err << "ckpt-inspect: " << printableText(result.error().message) << "\n";
        return 2;
    }
    if (json) {
        JsonWriter writer(JsonStyle::Pretty);
        writeShardedRemapJson(writer, checkpoint, *result);
        out << writer.takeText() << "\n";
    } else {
        writeShardedRemapText(out, *result);
    }
    return 0;
}

} // namespace ckpt::cli
