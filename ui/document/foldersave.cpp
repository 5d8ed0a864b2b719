// SPDX-License-Identifier: MIT
#include "ui/document/foldersave.h"

#include "core/base/pythonliteral.h"
#include "core/model/checkpoint.h"
#include "core/model/shardset.h"
#include "core/plan/devicemap.h"
#include "core/plan/placementplan.h"
#include "core/write/shardedwriter.h"

#include <QDir>
#include <QSaveFile>
#include <QString>

namespace ckpt {

std::optional<std::string> folderSaveExportsOnly(const Checkpoint& checkpoint)
{
    if (!checkpoint.shardSet || checkpoint.shardSet->layout == ShardLayout::HuggingFaceBin)
        return std::nullopt;
    return whyFolderCannotBeRemapped(checkpoint);
}

Expected<std::string> exportFolderPlan(const Checkpoint& checkpoint, const PlacementPlan& plan,
    const MachineInventory& machine, const std::string& outputFolder)
{
    const auto why = folderSaveExportsOnly(checkpoint);
    if (!why)
        return makeError("this checkpoint can be rewritten; nothing to export");
    if (!QDir().mkpath(QString::fromStdString(outputFolder)))
        return makeError("cannot create the folder " + outputFolder);
    const DeviceMapExport exported = exportDeviceMap(checkpoint, plan, &machine);
    std::string python = "# Written by Checkpoint Inspector. " + *why + "\n";
    python += checkpoint.shardSet->layout == ShardLayout::Distributed
        ? "# Build the model, move each module to the device below, then\n"
          "# torch.distributed.checkpoint.load(model.state_dict(), checkpoint_id="
            + pythonStringLiteral(checkpoint.shardSet->folder) + ").\n"
        : std::string("from transformers import AutoModelForCausalLM\n");
    python += exported.python(checkpoint.shardSet->folder);
    const QDir folder(QString::fromStdString(outputFolder));
    for (const auto& [name, text] :
        {std::pair<QString, std::string>(QStringLiteral("device_map.json"), exported.json()),
            std::pair<QString, std::string>(QStringLiteral("load_with_device_map.py"), python)}) {
        QSaveFile file(folder.filePath(name));
        const QByteArray bytes = QByteArray::fromStdString(text);
        if (!file.open(QIODevice::WriteOnly) || file.write(bytes) != bytes.size() || !file.commit())
            return makeError(folder.filePath(name).toStdString() + ": " + file.errorString().toStdString());
    }
    return "Nothing was rewritten: " + *why + ".\n\nExported device_map.json and load_with_device_map.py to "
        + outputFolder + ".";
}

} // namespace ckpt
