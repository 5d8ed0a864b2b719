// SPDX-License-Identifier: MIT
// ckpt-inspect-values: value statistics of every tensor of a checkpoint, through libtorch, as JSON.
// `ckpt-inspect check --values` runs it as a separate process, so that the everyday command-line
// tool does not load libtorch (hundreds of MiB, 0.4 s at every start) for the one option that needs it.
// The desktop app runs it the same way with --tensor=INDEX, for the tensor selected in its tree, and
// with --progress for its "Scan values" over every tensor (progress lines on stderr). libtorch
// itself is loaded only when a tensor needs it (torchbridge/libtorchkernels.h): a checkpoint of
// contiguous float tensors is scanned by the native kernels alone.
//
// The protocol (how callers find this program, the one limit on its answer, one JSON array element
// a line) is owned by core/tasks/valueshelper.h, which every caller goes through.
//
// --crc (from `check --values`): the CRC-32 of every storage a tensor covers whole is computed in
// the same read as its statistics and listed under "crcs" (record, offset, length, crc), so check
// compares those records' CRCs without reading their bytes a second time.
#include "core/io/mappedfile.h"
#include "core/io/readahead.h"
#include "core/json/json.h"
#include "core/read/checkpointreader.h"
#include "core/read/tensorbytes.h"
#include "core/read/tensorlocator.h"
#include "tensordiff.h"
#include "tensorstatistics.h"

#include <algorithm>
#include <charconv>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// `ckpt-inspect diff` and the app's comparison ask for value differences: pairs "INDEX_A INDEX_B"
// on stdin (all read before anything is computed, so the caller can write them all first), one
// JSON object out. A and B are opened as the caller opened them (a file, a folder of shards, a DCP
// folder) and the indices are theirs; each tensor's bytes are then read where they lie.
int compareValues(const char* fileA, const char* fileB)
{
    const auto a = std::make_shared<const ckpt::Checkpoint>(ckpt::readCheckpoint(fileA));
    const auto b = std::make_shared<const ckpt::Checkpoint>(ckpt::readCheckpoint(fileB));
    const std::vector<ckpt::LocatedTensor> locatedA = ckpt::locateTensors(a);
    const std::vector<ckpt::LocatedTensor> locatedB = ckpt::locateTensors(b);
    auto difference = [&](std::uint32_t x, std::uint32_t y) -> ckpt::Expected<ckpt::ValueDifference> {
        if (x >= locatedA.size() || y >= locatedB.size())
            return ckpt::makeError("no such tensor");
        for (const ckpt::LocatedTensor* located : {&locatedA[x], &locatedB[y]})
            if (!located->checkpoint)
                return ckpt::makeError(located->problem);
        return ckpt::compareTensorValues(
            *locatedA[x].checkpoint, locatedA[x].tensor, *locatedB[y].checkpoint, locatedB[y].tensor);
    };
    std::vector<std::pair<std::uint32_t, std::uint32_t>> pairs;
    for (std::uint32_t x, y; std::cin >> x >> y;)
        pairs.emplace_back(x, y);
    std::cout << "{\"pairs\":[";
    const char* separator = "\n";
    for (const auto& [x, y] : pairs) {
        ckpt::JsonWriter writer(ckpt::JsonStyle::Compact);
        writer.beginObject();
        writer.member("a", x);
        writer.member("b", y);
        const auto result = difference(x, y);
        if (!result) {
            writer.member("error", result.error().message);
        } else {
            writer.member("count", result->count);
            writer.member("differing", result->differing);
            writer.member("max_abs", result->maxAbsolute);
            writer.member("max_rel", result->maxRelative);
        }
        writer.endObject();
        std::cout << separator << writer.text();
        separator = ",\n";
    }
    std::cout << "\n]}\n";
    return 0;
}

// The statistics of a tensor where its bytes lie. A checkpoint of several files (a folder of
// shards, a DCP folder) has no single map: the values come from the tensor's own shard or chunk,
// where it has another index.
// `reading`, when given, hears how far into the tensor's bytes the scan has read.
ckpt::Expected<ckpt::TensorStatistics> statisticsOf(const ckpt::LocatedTensor& located, bool crc,
    const std::function<void(std::uint64_t done, std::uint64_t of)>& reading = {})
{
    if (!located.checkpoint)
        return ckpt::makeError(located.problem);
    ckpt::StatisticsOptions options;
    options.crc = crc;
    ckpt::ValueProgress progress;
    if (reading) {
        // With a histogram every value is read twice; the first pass is the one that reads the file.
        const std::uint64_t passes = options.histogramBins > 0 ? 2 : 1;
        progress = [&reading, passes](std::uint64_t done, std::uint64_t total) {
            reading(std::min(done * passes, total), total);
            return true;
        };
    }
    return ckpt::computeTensorStatistics(*located.checkpoint, located.tensor, options, progress);
}

// The bytes the scan will read, tensor by tensor in its order, for the read-ahead: a contiguous
// tensor's run in its file's map, anything else counted but not hinted.
std::vector<ckpt::ReadAhead::Range> scanRanges(
    const ckpt::Checkpoint& checkpoint, const std::vector<ckpt::LocatedTensor>& located)
{
    std::vector<ckpt::ReadAhead::Range> ranges;
    ranges.reserve(checkpoint.tensors.size());
    for (std::uint32_t t = 0; t < checkpoint.tensors.size(); ++t) {
        const ckpt::TensorEntry& tensor = checkpoint.tensors[t];
        if (tensor.storage < 0)
            continue;
        ckpt::ReadAhead::Range range {nullptr, tensor.nbytes()};
        const ckpt::Checkpoint* owner = located[t].checkpoint.get();
        if (owner && owner->file && located[t].tensor < owner->tensors.size()) {
            const auto layout = ckpt::tensorByteLayout(*owner, owner->tensors[located[t].tensor]);
            if (layout && layout->contiguous && !layout->deflated && layout->nbytes == range.length
                && layout->fileOffset <= owner->file->size()
                && layout->nbytes <= owner->file->size() - layout->fileOffset)
                range.data = owner->file->bytes().data() + layout->fileOffset;
        }
        ranges.push_back(range);
    }
    return ranges;
}

// The storage record whose every byte the tensor covers, in order: its CRC is the CRC of the
// tensor's bytes. None for views of part of a storage and for checkpoints of several files.
const ckpt::StorageRecord* wholeStorageOf(const ckpt::Checkpoint& checkpoint, const ckpt::TensorEntry& tensor)
{
    if (tensor.storage < 0 || std::size_t(tensor.storage) >= checkpoint.storages.size())
        return nullptr;
    const ckpt::StorageRecord& storage = checkpoint.storages[std::size_t(tensor.storage)];
    if (storage.recordName().empty() || !storage.dataOffset || !tensor.storageOffset
        || *tensor.storageOffset != 0 || tensor.nbytes() != storage.nbytes)
        return nullptr;
    return &storage;
}

int main(int argc, char** argv)
{
    if (argc == 4 && std::string(argv[1]) == "--diff")
        return compareValues(argv[2], argv[3]);
    // ckpt-inspect-values [--tensor=INDEX] FILE: every tensor, or only the one at INDEX.
    std::optional<std::uint32_t> only;
    bool progress = false, crc = false;
    const char* file = nullptr;
    constexpr std::string_view kTensorOption = "--tensor=";
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (arg.substr(0, kTensorOption.size()) == kTensorOption) {
            const std::string_view number = arg.substr(kTensorOption.size());
            std::uint32_t index = 0;
            const auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), index);
            if (error != std::errc() || end != number.data() + number.size() || number.empty()) {
                std::cerr << "ckpt-inspect-values: --tensor needs a tensor index, not '" << number << "'\n";
                return 64;
            }
            only = index;
        } else if (arg == "--progress") {
            progress = true;
        } else if (arg == "--crc") {
            crc = true;
        } else if (!file) {
            file = argv[i];
        } else {
            file = nullptr;
            break;
        }
    }
    if (!file) {
        std::cerr << "usage: ckpt-inspect-values [--tensor=INDEX] [--progress] [--crc] FILE\n       "
                     "ckpt-inspect-values "
                     "--diff A B < pairs\n";
        return 64;
    }
    const auto opened = std::make_shared<const ckpt::Checkpoint>(ckpt::readCheckpoint(file));
    const ckpt::Checkpoint& checkpoint = *opened;
    const std::vector<ckpt::LocatedTensor> located = ckpt::locateTensors(opened);
    // One array element a line, as core/tasks/valueshelper.h reads the answer (the whole is one
    // JSON document all the same), written as each tensor is done.
    {
        ckpt::JsonWriter name(ckpt::JsonStyle::Compact);
        name.value(std::string(file));
        std::cout << "{\"file\":" << name.text() << ",\"tensors\":[";
    }
    const char* separator = "\n";
    // --progress: "progress DONE TOTAL" lines on stderr, in bytes of tensor data, for a caller
    // that shows a progress bar (the app's Scan values); about a hundred per scan.
    std::uint64_t totalBytes = 0, doneBytes = 0, reportedBytes = 0;
    if (progress)
        for (const ckpt::TensorEntry& tensor : checkpoint.tensors)
            totalBytes += tensor.storage >= 0 ? tensor.nbytes() : 0;
    const auto reportProgress = [&](bool last) {
        if (progress && (last || doneBytes - reportedBytes >= totalBytes / 100 + 1)) {
            std::cerr << "progress " << doneBytes << ' ' << totalBytes << std::endl;
            reportedBytes = doneBytes;
        }
    };
    reportProgress(true);
    struct RecordCrc {
        std::string record;
        std::uint64_t offset = 0, length = 0;
        std::uint32_t crc = 0;
    };
    std::vector<RecordCrc> crcs;
    std::vector<bool> storageCrcDone(checkpoint.storages.size());
    // A whole scan reads every tensor in order: the next bytes are asked of the disk while these
    // are computed (core/io/readahead.h).
    std::optional<ckpt::ReadAhead> readAhead;
    if (!only)
        readAhead.emplace(scanRanges(checkpoint, located));
    std::uint64_t scanPosition = 0; // bytes of the tensors before this one, as the read-ahead counts them
    for (std::uint32_t t = 0; t < checkpoint.tensors.size(); ++t) {
        const ckpt::TensorEntry& tensor = checkpoint.tensors[t];
        if (only && t != *only)
            continue;
        if (tensor.storage < 0)
            continue; // composites and storage-less tensors: their parts are listed themselves
        doneBytes += tensor.nbytes();
        reportProgress(false);
        // Only where the tensor lies in the opened file itself (not in another shard).
        const bool inThisFile = located[t].checkpoint.get() == &checkpoint && located[t].tensor == t;
        const ckpt::StorageRecord* whole = crc && inThisFile ? wholeStorageOf(checkpoint, tensor) : nullptr;
        const std::uint64_t tensorStart = scanPosition;
        scanPosition += tensor.nbytes();
        const auto reading = [&](std::uint64_t done, std::uint64_t of) {
            readAhead->reached(tensorStart + (of ? done * tensor.nbytes() / of : 0));
        };
        if (readAhead)
            readAhead->reached(tensorStart);
        const auto statistics
            = statisticsOf(located[t], whole && !storageCrcDone[std::size_t(tensor.storage)],
                readAhead ? std::function<void(std::uint64_t, std::uint64_t)>(reading) : nullptr);
        if (whole && statistics && statistics->bytesCrc) {
            storageCrcDone[std::size_t(tensor.storage)] = true;
            crcs.push_back({whole->record(), *whole->dataOffset, whole->nbytes, *statistics->bytesCrc});
        }
        ckpt::JsonWriter writer(ckpt::JsonStyle::Compact);
        writer.beginObject();
        writer.member("index", static_cast<std::uint64_t>(t));
        writer.member("name", tensor.name);
        if (!statistics) {
            writer.member("error", statistics.error().message);
            writer.endObject();
            std::cout << separator << writer.text();
            separator = ",\n";
            continue;
        }
        writer.member("domain", std::string(ckpt::valueDomainName(statistics->domain)));
        writer.member("count", statistics->count);
        writer.member("nan", statistics->nanCount);
        writer.member("posinf", statistics->positiveInfinityCount);
        writer.member("neginf", statistics->negativeInfinityCount);
        writer.member("zeros", statistics->zeroCount);
        writer.member("finite", statistics->finiteCount);
        writer.member("copied", statistics->copied);
        writer.member("min", statistics->min);
        writer.member("max", statistics->max);
        writer.member("mean", statistics->mean);
        writer.member("std", statistics->std);
        writer.key("histogram").beginObject();
        writer.member("low", statistics->histogram.low);
        writer.member("high", statistics->histogram.high);
        writer.key("counts").beginArray();
        for (std::uint64_t count : statistics->histogram.counts)
            writer.value(count);
        writer.endArray();
        writer.endObject();
        writer.endObject();
        std::cout << separator << writer.text();
        separator = ",\n";
    }
    std::cout << "\n]";
    if (crc) {
        std::cout << ",\"crcs\":[";
        separator = "\n";
        for (const RecordCrc& record : crcs) {
            ckpt::JsonWriter writer(ckpt::JsonStyle::Compact);
            writer.beginObject();
            writer.member("record", record.record);
            writer.member("offset", record.offset);
            writer.member("length", record.length);
            writer.member("crc", std::uint64_t(record.crc));
            writer.endObject();
            std::cout << separator << writer.text();
            separator = ",\n";
        }
        std::cout << "\n]";
    }
    std::cout << "}\n";
    reportProgress(true);
    return 0;
}
