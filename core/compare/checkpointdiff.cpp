// SPDX-License-Identifier: MIT
#include "core/compare/checkpointdiff.h"

#include "core/io/mappedfile.h"
#include "core/model/checkpoint.h"
#include "core/read/tensorbytes.h"

#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <thread>
#include <unordered_map>

namespace ckpt {

namespace {

using Hash = std::pair<std::uint64_t, std::uint64_t>;

std::optional<Hash> hashTensor(const Checkpoint& checkpoint, const TensorEntry& tensor, std::uint64_t* bytes,
    const std::function<bool(std::uint64_t)>& keepGoing = {})
{
    XXH3_state_t* state = XXH3_createState();
    if (!state)
        return std::nullopt;
    XXH3_128bits_reset(state);
    const Status status = forEachTensorByteChunk(checkpoint, tensor, [&](ByteView chunk) -> Status {
        XXH3_128bits_update(state, chunk.data(), chunk.size());
        *bytes += chunk.size();
        if (keepGoing && !keepGoing(chunk.size()))
            return makeError("cancelled");
        return std::nullopt;
    });
    const XXH128_hash_t digest = XXH3_128bits_digest(state);
    XXH3_freeState(state);
    if (status)
        return std::nullopt;
    return Hash {digest.high64, digest.low64};
}

const TensorEntry& entryOf(const DiffTensor& tensor)
{
    return tensor.checkpoint->tensors[tensor.tensor];
}

// A job hashes the bytes one run or view shows; tensors that show the same bytes share it.
struct JobKey {
    const Checkpoint* checkpoint;
    std::uint64_t offset;
    std::uint64_t length;
    bool operator<(const JobKey& other) const
    {
        return std::tie(checkpoint, offset, length) < std::tie(other.checkpoint, other.offset, other.length);
    }
};

} // namespace

DiffSide makeDiffSide(std::shared_ptr<const Checkpoint> checkpoint)
{
    DiffSide side;
    side.checkpoint = std::move(checkpoint);
    side.located = locateTensors(side.checkpoint);
    for (std::uint32_t t = 0; t < side.checkpoint->tensors.size(); ++t) {
        if (side.checkpoint->tensors[t].name.empty())
            continue; // a bare root tensor has no name to compare by
        const LocatedTensor& located = side.located[t];
        if (located.checkpoint)
            side.tensors.push_back({located.checkpoint.get(), located.tensor, t, {}});
        else // compared by dtype, shape and device only
            side.tensors.push_back({side.checkpoint.get(), t, t, located.problem});
    }
    return side;
}

std::optional<Hash> tensorContentHash(const Checkpoint& checkpoint, std::uint32_t tensor)
{
    std::uint64_t bytes = 0;
    return hashTensor(checkpoint, checkpoint.tensors.at(tensor), &bytes);
}

CheckpointDiff diffCheckpoints(
    const std::vector<DiffTensor>& a, const std::vector<DiffTensor>& b, const DiffOptions& options)
{
    CheckpointDiff diff;
    // 1. Every tensor's hash, in parallel; contiguous tensors over the same bytes share one job.
    std::vector<DiffTensor> all(a);
    all.insert(all.end(), b.begin(), b.end());
    std::vector<std::int64_t> jobOf(all.size(), -1);
    std::vector<std::size_t> jobs; // index into `all` of the tensor each job hashes
    std::map<JobKey, std::size_t> jobByKey;
    for (std::size_t i = 0; i < all.size(); ++i) {
        auto layout = tensorByteLayout(*all[i].checkpoint, entryOf(all[i]));
        if (!layout)
            continue;
        if (layout->contiguous && !layout->deflated) { // (a deflated one's offset is in its storage)
            auto [it, added] = jobByKey.emplace(
                JobKey {all[i].checkpoint, layout->fileOffset, layout->nbytes}, jobs.size());
            if (added)
                jobs.push_back(i);
            jobOf[i] = static_cast<std::int64_t>(it->second);
        } else {
            jobOf[i] = static_cast<std::int64_t>(jobs.size());
            jobs.push_back(i);
        }
    }
    // Largest first, so that one big storage does not start last and finish alone.
    std::vector<std::size_t> order(jobs.size());
    std::vector<std::uint64_t> jobBytes(jobs.size());
    for (std::size_t j = 0; j < jobs.size(); ++j) {
        order[j] = j;
        jobBytes[j] = entryOf(all[jobs[j]]).nbytes();
    }
    std::stable_sort(
        order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return jobBytes[x] > jobBytes[y]; });
    std::vector<std::optional<Hash>> jobHash(jobs.size());
    const unsigned threads = std::max(1u,
        std::min<unsigned>(
            options.threads ? options.threads : std::max(1u, std::thread::hardware_concurrency()),
            static_cast<unsigned>(std::max<std::size_t>(jobs.size(), 1))));
    diff.threads = threads;
    std::atomic<std::size_t> next {0};
    std::atomic<std::uint64_t> hashedBytes {0};
    std::atomic<std::uint64_t> progressBytes {0};
    std::atomic<bool> cancelled {false};
    std::uint64_t totalBytes = 0;
    for (std::uint64_t bytes : jobBytes)
        totalBytes += bytes;
    std::function<bool(std::uint64_t)> keepGoing;
    if (options.progress) {
        keepGoing = [&](std::uint64_t bytes) {
            if (!options.progress(progressBytes += bytes, totalBytes))
                cancelled = true;
            return !cancelled.load();
        };
        if (!options.progress(0, totalBytes))
            cancelled = true;
    }
    const auto start = std::chrono::steady_clock::now();
    auto work = [&] {
        std::uint64_t bytes = 0;
        for (std::size_t k; !cancelled && (k = next.fetch_add(1)) < order.size();) {
            const std::size_t job = order[k];
            const DiffTensor& tensor = all[jobs[job]];
            jobHash[job] = hashTensor(*tensor.checkpoint, entryOf(tensor), &bytes, keepGoing);
        }
        hashedBytes += bytes;
    };
    std::vector<std::thread> pool;
    for (unsigned t = 1; t < threads; ++t)
        pool.emplace_back(work);
    work();
    for (std::thread& thread : pool)
        thread.join();
    diff.hashSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    diff.bytesHashed = hashedBytes;
    if (cancelled) {
        diff.cancelled = true;
        return diff;
    }
    auto hashOf = [&](std::size_t i) -> std::optional<Hash> {
        return jobOf[i] < 0 ? std::nullopt : jobHash[static_cast<std::size_t>(jobOf[i])];
    };

    // 2. By name (views of the entries' names, which outlive the maps).
    std::unordered_map<std::string_view, std::size_t> inB;
    for (std::size_t i = 0; i < b.size(); ++i)
        inB.emplace(entryOf(b[i]).name, a.size() + i);
    std::unordered_map<std::string_view, std::size_t> inA;
    for (std::size_t i = 0; i < a.size(); ++i)
        inA.emplace(entryOf(a[i]).name, i);
    std::vector<std::size_t> onlyA, onlyB;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const TensorEntry& left = entryOf(a[i]);
        auto it = inB.find(left.name);
        if (it == inB.end()) {
            onlyA.push_back(i);
            continue;
        }
        const TensorEntry& right = entryOf(all[it->second]);
        TensorChange change;
        change.name = left.name;
        change.a = a[i];
        change.b = all[it->second];
        change.dtypeChanged = left.dtype != right.dtype;
        change.shapeChanged = left.shape != right.shape;
        change.strideChanged
            = left.stride && right.stride && !change.shapeChanged && left.stride != right.stride;
        change.deviceChanged = left.device && right.device && left.device != right.device;
        if (!change.dtypeChanged && !change.shapeChanged) {
            const auto x = hashOf(i), y = hashOf(it->second);
            if (!x || !y)
                change.valueNotCompared
                    = left.layout != TensorLayout::Strided || right.layout != TensorLayout::Strided
                    ? "composite tensor (compared by dtype and shape only)"
                    : !a[i].unreadable.empty()     ? a[i].unreadable
                    : !change.b.unreadable.empty() ? change.b.unreadable
                                                   : "its bytes are not complete or not readable";
            else
                change.valueChanged = *x != *y;
        }
        if (change.dtypeChanged || change.shapeChanged || change.strideChanged || change.deviceChanged
            || change.valueChanged)
            diff.changed.push_back(std::move(change));
        else
            ++diff.unchanged;
    }
    for (std::size_t i = 0; i < b.size(); ++i)
        if (!inA.count(entryOf(b[i]).name))
            onlyB.push_back(a.size() + i);

    // 3. Renames: a tensor only A has and one only B has, with the same dtype, shape and bytes.
    std::map<std::tuple<Hash, std::string, std::vector<std::int64_t>>, std::vector<std::size_t>>
        addedByContent;
    for (std::size_t i : onlyB)
        if (auto hash = hashOf(i))
            addedByContent[{*hash, entryOf(all[i]).dtype, entryOf(all[i]).shape}].push_back(i);
    std::vector<bool> matched(all.size(), false);
    for (std::size_t i : onlyA) {
        auto hash = hashOf(i);
        if (hash) {
            auto it = addedByContent.find({*hash, entryOf(all[i]).dtype, entryOf(all[i]).shape});
            if (it != addedByContent.end()) {
                auto& candidates = it->second;
                auto pick = std::find_if(
                    candidates.begin(), candidates.end(), [&](std::size_t c) { return !matched[c]; });
                if (pick != candidates.end()) {
                    matched[*pick] = true;
                    diff.renamed.push_back(
                        {std::string(entryOf(all[i]).name), std::string(entryOf(all[*pick]).name)});
                    continue;
                }
            }
        }
        diff.removed.emplace_back(entryOf(all[i]).name);
    }
    for (std::size_t i : onlyB)
        if (!matched[i])
            diff.added.emplace_back(entryOf(all[i]).name);
    return diff;
}

} // namespace ckpt
