// SPDX-License-Identifier: MIT
#pragma once
// An automatic placement (`plan`): the target, why each block went where, and the memory per
// device that results, as text and as JSON.
#include <iosfwd>
#include <string>

namespace ckpt {

class JsonWriter;
class MemoryLedger;
struct AutoPlacement;
struct AutoPlacementOptions;
struct CudaMeasurement;
struct CudaTrialOutcome;
struct MachineInventory;

// The memory per device, one JSON object a line of the ledger, as an array.
void writeLedgerJson(JsonWriter& writer, const MemoryLedger& ledger);

// {"file", "target", "strategy", "groups", "ledger", "cpu_staging_bytes", "did_not_fit"}, and
// "measured" and "trial" when they were asked for (`--measure`, `--trial`).
void writePlacementJson(JsonWriter& writer, const std::string& file, const MachineInventory& machine,
    const AutoPlacementOptions& options, const AutoPlacement& placement, const MemoryLedger& ledger,
    const CudaMeasurement* measured = nullptr, const CudaTrialOutcome* trial = nullptr);
void writePlacementText(std::ostream& out, const MachineInventory& machine,
    const AutoPlacementOptions& options, const AutoPlacement& placement, const MemoryLedger& ledger);

} // namespace ckpt
