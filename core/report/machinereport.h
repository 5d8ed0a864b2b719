// SPDX-License-Identifier: MIT
#pragma once
// A machine (detected or described) as text and as JSON: `devices` and `plan` show it.
#include <iosfwd>

namespace ckpt {

class JsonWriter;
struct MachineInventory;

void writeMachineJson(JsonWriter& writer, const MachineInventory& machine);
// Its name, one line per device (tag, name, total and free memory, compute capability), its notes.
void writeMachineText(std::ostream& out, const MachineInventory& machine);

} // namespace ckpt
