// SPDX-License-Identifier: MIT
#include "core/read/checkpointreader.h"

#include "core/format/ziparchive.h"
#include "core/io/mappedfile.h"
#include "core/model/quantgroups.h"
#include "core/read/bundlereader.h"
#include "core/read/checkpointbuilder.h"
#include "core/read/dtyperelease.h"
#include "core/read/legacyreader.h"
#include "core/read/picklesection.h"
#include "core/read/remotereader.h"
#include "core/read/safetensorsreader.h"
#include "core/read/shardedreader.h"
#include "core/read/tarreader.h"
#include "core/read/torchzipreader.h"

namespace ckpt {

namespace {

// A plain pickle (no torch framing) is still worth showing: its globals and whatever structure
// it has, without executing anything.
void readPlainPickle(Checkpoint& checkpoint, const ReadOptions& options)
{
    PickleSection section;
    section.record = "pickle";
    runPickleSection(checkpoint, section, checkpoint.file->bytes(), true, options.pickleLimits);
    CheckpointBuilder builder(checkpoint);
    addPickleRoots(builder, section.run);
    addUnreadablePickleFinding(checkpoint, section.run, "the pickle", {}, 0);
    checkpoint.pickles.push_back(std::move(section));
}

Checkpoint judgedOnceRead(Checkpoint checkpoint, const ReadOptions& options)
{
    if (options.judgeGraph)
        options.judgeGraph(checkpoint);
    return checkpoint;
}

} // namespace

Checkpoint readCheckpoint(const std::string& path, const ReadOptions& options)
{
    // An http(s) URL: read through range requests, only the bytes the reader touches (remotereader.h).
    if (isRemoteUrl(path))
        return judgedOnceRead(readRemoteCheckpoint(path, options.forFileInside()), options);
    // A folder, an index, DCP metadata or one listed shard: every file of the set, shown as one (§7).
    if (auto sharded = resolveShardedInput(path)) {
        Checkpoint checkpoint = readShardedCheckpoint(*sharded, options.forFileInside());
        addQuantScaleFindings(checkpoint); // a weight and its scale may lie in different shards
        return judgedOnceRead(std::move(checkpoint), options);
    }
    auto file = MappedFile::open(path);
    if (!file) {
        Checkpoint checkpoint;
        checkpoint.path = path;
        checkpoint.ensureRoot();
        checkpoint.container = {ContainerKind::Unknown, file.error().message};
        checkpoint.addFinding(Severity::Error, FindingCode::CannotOpen, file.error().message);
        return judgedOnceRead(std::move(checkpoint), options);
    }
    return readCheckpoint(*file, options);
}

Checkpoint readCheckpoint(std::shared_ptr<const MappedFile> file, const ReadOptions& options)
{
    Checkpoint checkpoint;
    checkpoint.path = file->path();
    checkpoint.fileSize = file->size();
    checkpoint.file = file;
    checkpoint.ensureRoot();
    checkpoint.container = sniffContainer(file->bytes());
    // A format reader that judged the graph before building the records says so here.
    bool judged = false;
    ReadOptions readerOptions = options.forFileInside();
    if (options.judgeGraph)
        readerOptions.judgeGraph = [&](const Checkpoint& read) {
            // Only this file's own checkpoint: a file read inside it judged alone would rate the
            // whole by a part (a torch.export archive by its sample inputs' pickle). Such a reader
            // should pass forFileInside(); if one does not, this file is judged once it is read.
            if (&read != &checkpoint)
                return;
            judged = true;
            options.judgeGraph(read);
        };

    switch (checkpoint.container.kind) {
    case ContainerKind::Tar:
    case ContainerKind::Gzip:
        // An archive of files (AllenNLP, NeMo) or a compressed checkpoint: its members (bundlereader.h).
        return judgedOnceRead(readBundle(file, checkpoint.container, options.forFileInside()), options);
    case ContainerKind::TorchZip:
        // A plain zip of checkpoint files is a bundle; the directory parsed to tell is kept for the reader.
        checkpoint.zip = std::make_shared<const ZipArchive>(ZipArchive::open(file));
        if (isBundleZip(*checkpoint.zip))
            return judgedOnceRead(readBundle(file, checkpoint.container, options.forFileInside()), options);
        [[fallthrough]];
    case ContainerKind::ZipWithPrefix:
        if (checkpoint.container.kind == ContainerKind::ZipWithPrefix)
            checkpoint.addFinding(Severity::Warning, FindingCode::ZipWithPrefix,
                "the zip archive does not start at byte 0 (" + checkpoint.container.description
                    + "); torch.load only recognises a zip whose first bytes are PK\\3\\4 and would read it "
                      "as a legacy file");
        readTorchZip(checkpoint, readerOptions);
        break;
    case ContainerKind::TorchLegacy:
        readTorchLegacy(checkpoint, readerOptions);
        break;
    case ContainerKind::TorchTar:
        readTorchTar(checkpoint, readerOptions);
        break;
    case ContainerKind::Safetensors:
        readSafetensors(checkpoint);
        break;
    case ContainerKind::PlainPickle:
        checkpoint.format = CheckpointFormat::NotACheckpoint;
        checkpoint.addFinding(Severity::Error, FindingCode::NotACheckpoint,
            "this is a plain Python pickle, not a PyTorch checkpoint: it has no torch framing ("
                + checkpoint.container.description
                + "); its structure is shown below without executing anything");
        readPlainPickle(checkpoint, readerOptions);
        if (!checkpoint.nestedBlobs.empty()) {
            // pickle.dump of tensors: pickle.load reads it (torch.load refuses it), and its storages,
            // read from the torch.save files inside its bytes, record their devices.
            checkpoint.format = CheckpointFormat::PlainPickle;
            Finding& finding = checkpoint.findings.front();
            finding.severity = Severity::Info;
            finding.message = "a plain Python pickle (pickle.dump), not a torch.save file: torch.load "
                              "refuses it, pickle.load reads it; its "
                + std::to_string(checkpoint.nestedBlobs.size())
                + " storage(s) are torch.save files inside its bytes (torch.storage._load_from_bytes), "
                  "read without executing anything";
        }
        break;
    default:
        checkpoint.format = CheckpointFormat::NotACheckpoint;
        checkpoint.addFinding(Severity::Error, FindingCode::NotACheckpoint,
            "not a PyTorch checkpoint: " + checkpoint.container.description);
        break;
    }
    addDtypeReleaseFindings(checkpoint);
    if (options.quantScaleFindings)
        addQuantScaleFindings(checkpoint);
    if (options.judgeGraph && !judged)
        options.judgeGraph(checkpoint);
    return checkpoint;
}

} // namespace ckpt
