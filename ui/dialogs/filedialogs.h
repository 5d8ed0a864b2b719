// SPDX-License-Identifier: MIT
#pragma once

#include <QString>

#include <optional>
#include <string>

class QWidget;

namespace ckpt {

class CheckpointDocument;

// The File menu's questions, each a function that returns the answer (an empty path: cancelled),
// so the main window keeps only what it does with the answer.

QString askCheckpointToOpen(QWidget* parent, const QString& currentFile);
// A folder of shards (Hugging Face index, DCP), opened as one checkpoint.
QString askCheckpointFolderToOpen(QWidget* parent, const QString& currentFile);
// Proposes "<name>-<device>.pt" when the plan sends everything to one device, else
// "<name>-remapped.pt", beside the input; for a folder of shards, the folder "<name>-<device>".
// An http(s) URL of a checkpoint or an index, read where it lies (core/read/remotereader.h); asked
// again, with the reason, until it is one or the question is cancelled.
QString askCheckpointUrlToOpen(QWidget* parent);
QString askRemappedCopyPath(QWidget* parent, const CheckpointDocument& document);
QString askWeightsExportPath(QWidget* parent, const CheckpointDocument& document);
// What Export Weights… writes differently, as `convert`/`extract` take it: --dtype (floating
// tensors cast as torch's .to casts them; empty: as they are) and --plain-values.
struct WeightsValueChoices {
    std::string castFloatsTo;
    bool plainValues = false;
};
// Asked after the path; nothing when cancelled. A .safetensors path offers no plain values (it
// holds only tensors).
std::optional<WeightsValueChoices> askWeightsValueChoices(QWidget* parent, const QString& path);
QString askMapLocationExportPath(QWidget* parent, const CheckpointDocument& document);
QString askDeviceMapExportPath(QWidget* parent, const CheckpointDocument& document);

enum class UnsavedPlacementAnswer { Save, Discard, Cancel };
// The placement of `document` changed and no remapped copy was saved: save first, discard, or stay.
UnsavedPlacementAnswer askAboutUnsavedPlacement(QWidget* parent, const CheckpointDocument& document);

} // namespace ckpt
