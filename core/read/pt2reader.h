// SPDX-License-Identifier: MIT
#pragma once
// The torch.export archive reader (`.pt2`, docs/formats-pt2.md). Two layouts:
//  - the PT2 archive torch.export.save writes since 2.6 (torch/export/pt2_archive): a torch zip
//    whose `<root>/archive_format` says "pt2"; weights and constants stored raw under
//    data/weights/ and data/constants/, each described by `<model>_weights_config.json` /
//    `<model>_constants_config.json` (dtype, sizes, strides, storage offset, device,
//    use_pickle); weights with use_pickle, data/weights/<model>.pt (2.6-2.7) and sample inputs
//    are nested torch.save archives; models/<model>.json the serialized program; AOTInductor
//    packages add compiled code under data/aotinductor/.
//  - the layout of torch 2.1-2.5 (a plain zipfile without a root folder):
//    serialized_exported_program.json, `version`, and the nested torch.save files
//    serialized_state_dict.pt, serialized_constants.pt, serialized_example_inputs.pt.
// Nested archives are read by readCheckpoint over a slice of the file (nothing is copied, nothing
// run) and shown below the node of their member.

#include "core/read/checkpointreader.h"

#include <optional>

namespace ckpt {

class ZipArchive;
struct Checkpoint;

enum class ExportArchiveLayout {
    Pt2, // archive_format "pt2" (torch 2.6 and later)
    Legacy, // serialized_exported_program.json at the top (torch 2.1-2.5)
};

// Which torch.export layout a zip holds, from its directory alone; nothing for any other zip.
std::optional<ExportArchiveLayout> exportArchiveLayout(const ZipArchive& zip);

// Reads a torch.export archive whose zip directory is already checkpoint.zip (readTorchZip hands
// it over once exportArchiveLayout says so). Fills storages, tensors, tree and findings.
void readExportArchive(Checkpoint& checkpoint, ExportArchiveLayout layout, const ReadOptions& options);

// The zip member names of the configs that record a device (`data/weights/*_weights_config.json`
// and `data/constants/*_constants_config.json` below the archive root), in the order read; the
// remap writer rewrites these and copies every other member byte for byte.
bool isExportPayloadConfig(std::string_view localName);

} // namespace ckpt
