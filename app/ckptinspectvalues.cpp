// ckpt-inspect-values: value statistics of every tensor of a checkpoint, through libtorch, as JSON.
// `ckpt-inspect check --values` runs it as a separate process, so that the everyday command-line
// tool does not load libtorch (hundreds of MiB, 0.4 s at every start) for the one option that needs it.
// The desktop app runs it the same way with --tensor=INDEX, for the tensor selected in its tree, and
// with --progress for its "Scan values" over every tensor (progress lines on stderr).
#include "core/json/json.h"
#include "core/model/shardset.h"
#include "core/read/checkpointreader.h"
#include "tensordiff.h"
#include "tensorstatistics.h"

#include <charconv>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// `ckpt-inspect diff` asks for value differences: pairs "INDEX_A INDEX_B" on stdin (all read before
// anything is computed, so the caller can write them all first), one JSON object out.
int compareValues(const char* fileA, const char* fileB)
{
    const ckpt::Checkpoint a = ckpt::readCheckpoint(fileA);
    const ckpt::Checkpoint b = ckpt::readCheckpoint(fileB);
    std::vector<std::pair<std::uint32_t, std::uint32_t>> pairs;
    for (std::uint32_t x, y; std::cin >> x >> y;)
        pairs.emplace_back(x, y);
    ckpt::JsonWriter writer(ckpt::JsonStyle::Compact);
    writer.beginObject();
    writer.key("pairs").beginArray();
    for (const auto& [x, y] : pairs) {
        writer.beginObject();
        writer.member("a", x);
        writer.member("b", y);
        auto difference = x < a.tensors.size() && y < b.tensors.size()
            ? ckpt::compareTensorValues(a, x, b, y)
            : ckpt::Expected<ckpt::ValueDifference>(ckpt::makeError("no such tensor"));
        if (!difference) {
            writer.member("error", difference.error().message);
        } else {
            writer.member("count", difference->count);
            writer.member("differing", difference->differing);
            writer.member("max_abs", difference->maxAbsolute);
            writer.member("max_rel", difference->maxRelative);
        }
        writer.endObject();
    }
    writer.endArray();
    writer.endObject();
    std::cout << writer.takeText() << "\n";
    return 0;
}

// The statistics of tensor `index` of `checkpoint`. A checkpoint of several files (a folder of shards)
// has no single map: the values come from the tensor's own shard, where it has another index.
ckpt::Expected<ckpt::TensorStatistics> statisticsOf(const ckpt::Checkpoint& checkpoint, std::uint32_t index)
{
    const ckpt::ShardFile* shard = checkpoint.shardSet
        ? checkpoint.shardSet->shardOfStorage(checkpoint.tensors[index].storage)
        : nullptr;
    if (shard && shard->checkpoint && shard->checkpoint->file && index >= shard->firstTensor)
        return ckpt::computeTensorStatistics(*shard->checkpoint, index - shard->firstTensor);
    return ckpt::computeTensorStatistics(checkpoint, index);
}

int main(int argc, char** argv)
{
    if (argc == 4 && std::string(argv[1]) == "--diff")
        return compareValues(argv[2], argv[3]);
    // ckpt-inspect-values [--tensor=INDEX] FILE: every tensor, or only the one at INDEX.
    std::optional<std::uint32_t> only;
    bool progress = false;
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
        } else if (!file) {
            file = argv[i];
        } else {
            file = nullptr;
            break;
        }
    }
    if (!file) {
        std::cerr
            << "usage: ckpt-inspect-values [--tensor=INDEX] [--progress] FILE\n       ckpt-inspect-values "
               "--diff A B < pairs\n";
        return 64;
    }
    const ckpt::Checkpoint checkpoint = ckpt::readCheckpoint(file);
    ckpt::JsonWriter writer(ckpt::JsonStyle::Compact);
    writer.beginObject();
    writer.member("file", std::string(file));
    writer.key("tensors").beginArray();
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
    for (std::uint32_t t = 0; t < checkpoint.tensors.size(); ++t) {
        const ckpt::TensorEntry& tensor = checkpoint.tensors[t];
        if (only && t != *only)
            continue;
        if (tensor.storage < 0)
            continue; // composites and storage-less tensors: their parts are listed themselves
        doneBytes += tensor.nbytes();
        reportProgress(false);
        const auto statistics = statisticsOf(checkpoint, t);
        writer.beginObject();
        writer.member("index", static_cast<std::uint64_t>(t));
        writer.member("name", tensor.name);
        if (!statistics) {
            writer.member("error", statistics.error().message);
            writer.endObject();
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
    }
    writer.endArray();
    writer.endObject();
    reportProgress(true);
    std::cout << writer.takeText() << "\n";
    return 0;
}
