// SPDX-License-Identifier: MIT
#include "core/plan/autoplacement.h"

#include "core/base/checkedarithmetic.h"

#include "core/devices/machineinventory.h"
#include "core/model/checkpoint.h"

#include <algorithm>
#include <numeric>
#include <unordered_map>
#include <unordered_set>

namespace ckpt {

namespace {

std::vector<std::string> splitName(const std::string& name)
{
    std::vector<std::string> parts;
    std::size_t start = 0;
    for (;;) {
        const std::size_t dot = name.find('.', start);
        parts.push_back(name.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
        if (dot == std::string::npos)
            break;
        start = dot + 1;
    }
    return parts;
}

bool isNumber(const std::string& text)
{
    return !text.empty()
        && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Union-find over groups that share storages.
struct Groups {
    std::vector<std::uint32_t> parent;
    std::uint32_t find(std::uint32_t x)
    {
        while (parent[x] != x)
            x = parent[x] = parent[parent[x]];
        return x;
    }
    void join(std::uint32_t a, std::uint32_t b)
    {
        a = find(a);
        b = find(b);
        if (a != b)
            parent[std::max(a, b)] = std::min(a, b); // the earlier group absorbs the later
    }
};

std::string deviceMapValue(const std::string& tag)
{
    if (tag.starts_with("cuda:"))
        return tag.substr(5);
    return tag;
}

} // namespace

std::string groupPrefix(std::string_view tensorName, int noSplitDepth)
{
    // Composite parts ("w[indices]") go with their tensor.
    const std::string name(tensorName.substr(0, tensorName.find('[')));
    const std::vector<std::string> parts = splitName(name);
    std::size_t depth = 0;
    if (noSplitDepth > 0) {
        depth = static_cast<std::size_t>(noSplitDepth);
    } else {
        depth = std::min<std::size_t>(2, parts.size());
        for (std::size_t i = 0; i < parts.size(); ++i)
            if (isNumber(parts[i])) {
                depth = i + 1;
                break;
            }
    }
    // A tensor never forms a group with its own last component stripped away only: a bare
    // "weight" at depth 2 of "model.weight" stays "model.weight".
    depth = std::min(depth, parts.size());
    std::string prefix;
    for (std::size_t i = 0; i < depth; ++i)
        prefix += (i ? "." : "") + parts[i];
    return prefix;
}

Expected<AutoPlacement> placeAutomatically(
    const Checkpoint& checkpoint, const MachineInventory& machine, const AutoPlacementOptions& options)
{
    AutoPlacement result;
    if (checkpoint.storages.empty())
        return makeError("the checkpoint has no storages to place");

    // 1. Groups: by no-split prefix, in order of first appearance, then merged where they share
    // a storage (tied weights must land together).
    std::vector<std::string> prefixes;
    std::unordered_map<std::string, std::uint32_t> groupOf;
    std::vector<std::int32_t> storageGroup(checkpoint.storages.size(), -1);
    Groups sets;
    for (const TensorEntry& tensor : checkpoint.tensors) {
        if (tensor.storage < 0)
            continue;
        const std::string prefix = groupPrefix(tensor.name, options.noSplitDepth);
        auto [it, inserted] = groupOf.emplace(prefix, static_cast<std::uint32_t>(prefixes.size()));
        if (inserted) {
            prefixes.push_back(prefix);
            sets.parent.push_back(it->second);
        }
        std::int32_t& owner = storageGroup[static_cast<std::size_t>(tensor.storage)];
        if (owner < 0)
            owner = static_cast<std::int32_t>(it->second);
        else
            sets.join(static_cast<std::uint32_t>(owner), it->second);
    }
    std::map<std::uint32_t, std::size_t> resultIndex;
    for (std::uint32_t g = 0; g < prefixes.size(); ++g) {
        const std::uint32_t root = sets.find(g);
        auto [it, inserted] = resultIndex.emplace(root, result.groups.size());
        if (inserted)
            result.groups.emplace_back();
        result.groups[it->second].prefixes.push_back(prefixes[g]);
    }
    for (std::uint32_t s = 0; s < checkpoint.storages.size(); ++s) {
        if (storageGroup[s] < 0)
            continue; // a storage no tensor views (a bare storage): it stays where it is
        PlacementGroup& group
            = result.groups[resultIndex.at(sets.find(static_cast<std::uint32_t>(storageGroup[s])))];
        group.storages.push_back(s);
        group.bytes = saturatingAdd(group.bytes, checkpoint.storages[s].nbytes);
    }

    // 2. Budgets: capacity less the CUDA context and the headroom.
    struct Budget {
        std::string tag;
        std::uint64_t capacity = 0;
        std::uint64_t used = 0;
    };
    std::vector<Budget> gpus;
    std::optional<Budget> cpu;
    for (const DeviceInfo& device : machine.devices) {
        const std::uint64_t total
            = device.freeBytes && !machine.described ? *device.freeBytes : device.totalBytes;
        if (device.tag == "cpu") {
            cpu = Budget {device.tag,
                total > options.assumptions.headroomBytes ? total - options.assumptions.headroomBytes : 0, 0};
        } else if (!device.opaque) {
            const std::uint64_t reserve = saturatingAdd(
                options.assumptions.contextBytesFor(machine, device.tag), options.assumptions.headroomBytes);
            gpus.push_back({device.tag, total > reserve ? total - reserve : 0, 0});
        }
    }
    std::uint64_t total = 0, largest = 0;
    for (const PlacementGroup& group : result.groups) {
        total = saturatingAdd(total, group.bytes);
        largest = std::max(largest, group.bytes);
    }
    if (options.strategy == PlacementStrategy::Balanced && !gpus.empty()) {
        // accelerate's get_balanced_memory: an even share per GPU plus room for the largest
        // block, so that a block boundary never pushes a GPU over; the last GPU may fill up.
        const std::uint64_t share = saturatingAdd(total / gpus.size() + (total % gpus.size() != 0), largest);
        for (std::size_t i = 0; i + 1 < gpus.size(); ++i)
            gpus[i].capacity = std::min(gpus[i].capacity, share);
    }
    for (const Budget& gpu : gpus)
        result.summary.push_back(gpu.tag + ": budget " + formatBytes(gpu.capacity) + " (after "
            + formatBytes(options.assumptions.contextBytesFor(machine, gpu.tag))
            + (machine.measuredContextOf(gpu.tag) ? " measured" : " assumed") + " for the CUDA context"
            + (options.assumptions.headroomBytes
                    ? " and " + formatBytes(options.assumptions.headroomBytes) + " headroom"
                    : std::string())
            + ")");
    if (cpu)
        result.summary.push_back("cpu: budget " + formatBytes(cpu->capacity));
    else
        result.summary.push_back(
            "the machine has no CPU memory described: groups that fit on no GPU do not fit");

    std::unordered_set<std::string_view> tensorNames; // views of the checkpoint's names
    for (const TensorEntry& tensor : checkpoint.tensors)
        tensorNames.insert(tensor.name);

    // 3. Fill, in order.
    std::size_t current = 0;
    for (PlacementGroup& group : result.groups) {
        const std::string what = group.prefixes.size() > 1 ? group.prefixes.front() + " (with "
                + std::to_string(group.prefixes.size() - 1) + " more sharing its storages)"
                                                           : group.prefixes.front();
        std::string skipped;
        // Saturating sums: a hostile storage claims up to 2^64 - 1 bytes, and a wrapped sum
        // would "fit" it on any device.
        while (current < gpus.size()
            && saturatingAdd(gpus[current].used, group.bytes) > gpus[current].capacity) {
            // Sequential placement never goes back to an earlier GPU: blocks stay in order.
            skipped += gpus[current].tag + " has " + formatBytes(gpus[current].capacity - gpus[current].used)
                + " left; ";
            ++current;
        }
        if (current < gpus.size()) {
            gpus[current].used += group.bytes;
            group.device = gpus[current].tag;
            group.reason = skipped + "fits on " + group.device + " ("
                + formatBytes(gpus[current].capacity - gpus[current].used) + " left)";
        } else if (cpu && saturatingAdd(cpu->used, group.bytes) <= cpu->capacity) {
            cpu->used += group.bytes;
            group.device = "cpu";
            group.reason = skipped + (gpus.empty() ? "no GPU in the target; " : "no GPU has room left; ")
                + "on the CPU (" + formatBytes(cpu->capacity - cpu->used) + " left)";
        } else {
            group.device = "cpu";
            group.reason = skipped + "fits nowhere: left on the CPU, over its budget";
            result.didNotFit.push_back(what + " (" + formatBytes(group.bytes) + ")");
        }
        for (const std::string& prefix : group.prefixes) {
            // A prefix that is a whole tensor name moves that tensor alone: as a module prefix it
            // would also catch longer names that belong to other groups.
            const PlacementRule::Kind kind = tensorNames.count(prefix) ? PlacementRule::Kind::MoveTensor
                                                                       : PlacementRule::Kind::MoveModule;
            result.rules.push_back({kind, prefix, group.device});
            result.deviceMap[prefix] = deviceMapValue(group.device);
        }
        if (group.prefixes.size() > 1)
            group.reason += "; kept together because they share storages";
        group.reason = what + " (" + formatBytes(group.bytes) + ") -> " + group.device + ": " + group.reason;
    }
    return result;
}

} // namespace ckpt
