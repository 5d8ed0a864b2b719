// SPDX-License-Identifier: MIT
#include "core/report/machinereport.h"

#include "core/base/escaping.h"
#include "core/base/textformat.h"
#include "core/devices/machineinventory.h"
#include "core/json/json.h"

#include <iomanip>
#include <ostream>

namespace ckpt {

void writeMachineJson(JsonWriter& writer, const MachineInventory& machine)
{
    writer.beginObject();
    writer.member("name", machine.name);
    writer.member("described", machine.described);
    writer.key("devices").beginArray();
    for (const DeviceInfo& device : machine.devices) {
        writer.beginObject();
        writer.member("tag", device.tag);
        writer.member("name", device.name);
        writer.member("total_bytes", device.totalBytes);
        writer.memberOrNull("free_bytes", device.freeBytes);
        writer.key("compute_capability");
        if (device.computeCapability)
            writer.value(std::to_string(device.computeCapability->first) + "."
                + std::to_string(device.computeCapability->second));
        else
            writer.null();
        if (!device.uuid.empty())
            writer.member("uuid", device.uuid);
        if (!device.pciBusId.empty())
            writer.member("pci_bus_id", device.pciBusId);
        writer.endObject();
    }
    writer.endArray();
    writer.member("notes", machine.notes);
    writer.endObject();
}

void writeMachineText(std::ostream& out, const MachineInventory& machine)
{
    out << printableText(machine.name) << (machine.described ? " (described)" : " (detected)") << "\n";
    for (const DeviceInfo& device : machine.devices) {
        out << "  " << std::left << std::setw(8) << printableText(device.tag) << " " << std::setw(28)
            << printableText(device.name) << " " << std::right << std::setw(10)
            << formatBytes(device.totalBytes);
        if (device.freeBytes)
            out << "  (" << formatBytes(*device.freeBytes) << " free)";
        if (device.computeCapability)
            out << "  compute capability " << device.computeCapability->first << "."
                << device.computeCapability->second;
        out << "\n";
    }
    for (const std::string& note : machine.notes)
        out << "  note: " << printableText(note) << "\n";
}

} // namespace ckpt
