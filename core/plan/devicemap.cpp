// SPDX-License-Identifier: MIT
#include "core/plan/devicemap.h"

#include "core/base/pythonliteral.h"
#include "core/devices/machineinventory.h"
#include "core/json/json.h"
#include "core/model/checkpoint.h"
#include "core/plan/autoplacement.h"
#include "core/plan/placementplan.h"

#include <algorithm>
#include <map>

namespace ckpt {

namespace {

std::string deviceMapKey(const std::string& tag)
{
    if (tag.starts_with("cuda:"))
        return tag.substr(5);
    if (tag == "cuda")
        return "0"; // what torch means by a bare "cuda": the current device, 0 unless set
    return tag;
}

bool isOrdinal(const std::string& value)
{
    // Nine digits at most: an ordinal, never a number that would not fit (a hostile tag).
    return !value.empty() && value.size() <= 9
        && std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; });
}

void writeDeviceMapEntries(
    JsonWriter& writer, const std::vector<std::pair<std::string, std::string>>& deviceMap)
{
    for (const auto& [name, device] : deviceMap) {
        const std::string key = deviceMapKey(device);
        if (isOrdinal(key))
            writer.member(name, static_cast<std::int64_t>(std::stoll(key)));
        else
            writer.member(name, device);
    }
}

std::string pythonLiteral(const std::string& value)
{
    return isOrdinal(value) ? value : pythonStringLiteral(value);
}

} // namespace

DeviceMapExport exportDeviceMap(const Checkpoint& checkpoint, const PlacementPlan& plan,
    const MachineInventory* machine, int noSplitDepth)
{
    std::map<std::string, std::vector<std::uint32_t>> tensorsByGroup;
    for (std::uint32_t i = 0; i < checkpoint.tensors.size(); ++i)
        tensorsByGroup[groupPrefix(checkpoint.tensors[i].name, noSplitDepth)].push_back(i);
    DeviceMapExport result;
    std::map<std::string, std::uint64_t> bytes;
    auto deviceOf = [&](std::uint32_t tensor) { return plan.plannedDeviceOfTensor(tensor).value_or("cpu"); };
    for (const auto& [group, tensors] : tensorsByGroup) {
        const std::string first = deviceOf(tensors.front());
        const bool together = std::all_of(
            tensors.begin(), tensors.end(), [&](std::uint32_t t) { return deviceOf(t) == first; });
        if (together)
            result.deviceMap.emplace_back(group, deviceMapKey(first));
        else
            for (std::uint32_t t : tensors)
                result.deviceMap.emplace_back(checkpoint.tensors[t].name, deviceMapKey(deviceOf(t)));
    }
    for (std::uint32_t s = 0; s < checkpoint.storages.size(); ++s)
        bytes[deviceMapKey(plan.plannedDeviceOfStorage(s).value_or("cpu"))] += checkpoint.storages[s].nbytes;
    for (const auto& [key, planned] : bytes) {
        std::uint64_t limit = planned;
        if (machine)
            for (const DeviceInfo& device : machine->devices)
                if (deviceMapKey(device.tag) == key)
                    limit = std::max(limit, device.freeBytes.value_or(device.totalBytes));
        result.maxMemory.emplace_back(key, limit);
    }
    // GPUs first in ordinal order, then the rest, as accelerate lists them.
    std::stable_sort(result.maxMemory.begin(), result.maxMemory.end(), [](const auto& a, const auto& b) {
        if (isOrdinal(a.first) != isOrdinal(b.first))
            return isOrdinal(a.first);
        return isOrdinal(a.first) && std::stoll(a.first) < std::stoll(b.first);
    });
    return result;
}

std::string deviceMapJson(const std::vector<std::pair<std::string, std::string>>& deviceMap)
{
    JsonWriter writer(JsonStyle::Pretty);
    writer.beginObject();
    writeDeviceMapEntries(writer, deviceMap);
    writer.endObject();
    return writer.takeText();
}

std::string DeviceMapExport::json() const
{
    JsonWriter writer(JsonStyle::Pretty);
    writer.beginObject();
    writer.key("device_map").beginObject();
    writeDeviceMapEntries(writer, deviceMap);
    writer.endObject();
    writer.key("max_memory").beginObject();
    for (const auto& [device, limit] : maxMemory)
        writer.member(device, limit);
    writer.endObject();
    writer.endObject();
    return writer.takeText() + "\n";
}

std::string DeviceMapExport::python(const std::string& folder) const
{
    std::string out = "device_map = {\n";
    for (const auto& [name, device] : deviceMap)
        out += "    " + pythonStringLiteral(name) + ": " + pythonLiteral(device) + ",\n";
    out += "}\nmax_memory = {";
    for (std::size_t i = 0; i < maxMemory.size(); ++i)
        out += (i ? ", " : "") + pythonLiteral(maxMemory[i].first) + ": "
            + std::to_string(maxMemory[i].second);
    out += "}\nmodel = AutoModelForCausalLM.from_pretrained(" + pythonStringLiteral(folder)
        + ", device_map=device_map, max_memory=max_memory)\n";
    return out;
}

} // namespace ckpt
