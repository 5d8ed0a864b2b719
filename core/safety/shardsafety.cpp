// SPDX-License-Identifier: MIT
// The safety verdict of a checkpoint of several files (shardsafety.h).
#include "core/safety/shardsafety.h"

#include "core/format/streamtransforms.h"
#include "core/io/mappedfile.h"
#include "core/model/checkpoint.h"
#include "core/model/shardset.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <utility>

namespace ckpt {

SafetyVerdict rateShardSafety(const Checkpoint& checkpoint)
{
    SafetyVerdict combined;
    combined.headline = "no pickle: nothing in these files would be unpickled";
    auto merge = [&](const std::string& name, SafetyVerdict verdict) {
        for (UnsafeCallable& callable : verdict.unsafe) {
            callable.where = name + ": " + callable.where;
            combined.unsafe.push_back(std::move(callable));
        }
        for (const std::string& problem : verdict.cannotVerify)
            combined.cannotVerify.push_back(name + ": " + problem);
        for (AllowlistCandidate& candidate : verdict.allowlist)
            if (std::none_of(combined.allowlist.begin(), combined.allowlist.end(),
                    [&](const AllowlistCandidate& known) { return known.name == candidate.name; }))
                combined.allowlist.push_back(std::move(candidate));
        for (const std::string& pickle : verdict.pickles)
            combined.pickles.push_back(name + ": " + pickle);
        for (const std::string& note : verdict.notes)
            combined.notes.push_back(name + ": " + note);
        if (static_cast<int>(verdict.rating) > static_cast<int>(combined.rating)) {
            combined.rating = verdict.rating;
            combined.headline = name + ": " + verdict.headline;
            combined.addSafeGlobals113 = verdict.addSafeGlobals113;
            combined.addSafeGlobals2 = verdict.addSafeGlobals2;
        }
    };
    const ShardSet& set = *checkpoint.shardSet;
    if (set.layout == ShardLayout::Distributed) {
        // .metadata, or each rank's own __R.metadata (use_collectives=False).
        std::vector<std::string> metadataFiles;
        if (set.dcp)
            metadataFiles = set.dcp->metadataFiles;
        if (metadataFiles.empty())
            metadataFiles.push_back(std::filesystem::path(set.indexPath).filename().string());
        for (const std::string& metadataName : metadataFiles)
            if (auto file = MappedFile::open((std::filesystem::path(set.folder) / metadataName).string())) {
                SafetyVerdict metadata = ratePickleSafety((*file)->bytes());
                // DCP reads .metadata with pickle.load, never torch.load: torch's weights_only list has
                // no say there, and a pickle of vetted inert classes only (DCP's dataclasses, paths)
                // cannot run code. No add_safe_globals call would help anyone load it.
                if (metadata.rating == PickleSafety::NeedsAllowlist) {
                    metadata.rating = PickleSafety::KnownInert;
                    metadata.headline
                        = "known inert: every global is a vetted inert class (DCP's metadata "
                          "dataclasses; DCP reads it with pickle.load, not torch.load); loading it "
                          "cannot run code";
                    metadata.addSafeGlobals113.clear();
                    metadata.addSafeGlobals2.clear();
                }
                merge(metadataName, std::move(metadata));
            }
        // A bytes entry is loaded by DCP with torch.load(weights_only=False) (the default planner
        // writes a torch.save of the value; Megatron-core writes its ShardedObjects' torch.save
        // as they are): whatever its pickle calls runs on load. Every such range is rated; the
        // weights_only list has no say there either.
        if (set.dcp) {
            std::map<std::string, std::shared_ptr<const MappedFile>> files;
            for (const DcpDataFile& dataFile : set.dcp->files)
                for (const DcpItem& item : dataFile.items) {
                    const std::string label
                        = dataFile.name + " @" + std::to_string(item.offset) + " (" + item.fqn + ")";
                    if (item.isBytes && !item.transforms.empty()
                        && !item.content.starts_with("torch.save archive")
                        && !item.content.starts_with("raw bytes")
                        && item.content != "past the end of the file") {
                        // Through a writer extension not undone here: the pickle DCP would
                        // torch.load(weights_only=False) cannot be seen.
                        SafetyVerdict unseen;
                        unseen.rating = PickleSafety::DangerousOrUnknown;
                        const std::string unknown = unknownStreamTransforms(item.transforms);
                        unseen.headline
                            = "cannot verify: a pickled value DCP loads with torch.load(weights_only=False) "
                              "is stored through "
                            + (unknown.empty() ? std::string("a writer extension that could not be undone")
                                               : "a writer extension not undone here (" + unknown + ")");
                        unseen.cannotVerify.push_back(unseen.headline);
                        merge(label, std::move(unseen));
                        continue;
                    }
                    if (!item.isBytes || !item.content.starts_with("torch.save archive"))
                        continue;
                    auto& file = files[dataFile.name];
                    if (!file)
                        if (auto opened
                            = MappedFile::open((std::filesystem::path(set.folder) / dataFile.name).string()))
                            file = *opened;
                    if (!file || item.offset + item.length > file->size())
                        continue;
                    const ByteView raw = file->bytes().subspan(item.offset, item.length);
                    std::optional<Expected<ByteBuffer>> undone;
                    if (!item.transforms.empty())
                        undone = undoStreamTransforms(raw, item.transforms, std::uint64_t(1) << 30);
                    if (undone && !*undone)
                        continue; // the reader read it once; the same bytes do not change
                    SafetyVerdict verdict
                        = ratePickleSafety(undone ? ByteView((**undone).data(), (**undone).size()) : raw);
                    if (verdict.rating == PickleSafety::NeedsAllowlist) {
                        verdict.rating = PickleSafety::KnownInert;
                        verdict.headline
                            = "known inert: every global is a vetted inert class (DCP loads bytes "
                              "entries with torch.load(weights_only=False)); loading it cannot run code";
                        verdict.addSafeGlobals113.clear();
                        verdict.addSafeGlobals2.clear();
                    }
                    merge(label, std::move(verdict));
                }
        }
        // A framework's torch.save file beside the data (Megatron-core's common.pt), rated as any file.
        for (const ShardFile& shard : set.shards)
            if (shard.companion && shard.model() && shard.model()->file)
                merge(shard.name, ratePickleSafety(*shard.model()));
        return combined;
    }
    for (const ShardFile& shard : set.shards)
        if (shard.readInPlace()) // no pickle ran: the file alone is rated, and its model never made
            merge(shard.name, ratePickleSafety(*shard.file()));
        else if (shard.model() && shard.model()->file)
            merge(shard.name, ratePickleSafety(*shard.model())); // reuses the shard reader's runs
    if (set.bundle && set.bundle->file) {
        // A bundle is also rated whole, as the scanner rates any archive: a pickle in a member that
        // is no checkpoint (pickled, gzip'd, in a nested archive) is rated too. What the members'
        // own verdicts already name is not said twice.
        SafetyVerdict whole = ratePickleSafety(set.bundle->file->bytes());
        std::erase_if(whole.unsafe, [&](const UnsafeCallable& callable) {
            return std::any_of(combined.unsafe.begin(), combined.unsafe.end(),
                [&](const UnsafeCallable& known) { return known.name == callable.name; });
        });
        if (static_cast<int>(whole.rating) > static_cast<int>(combined.rating) || !whole.unsafe.empty()) {
            whole.pickles.clear();
            whole.notes.clear();
            merge("the bundle", std::move(whole));
        }
    }
    return combined;
}

} // namespace ckpt
