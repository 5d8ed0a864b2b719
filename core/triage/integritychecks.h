// SPDX-License-Identifier: MIT
#pragma once
// Integrity and placement smells: the CRC-32 of every record (torch-format.md §1.4), sizes, views
// against their storages (§2.3), truncation and what can be salvaged, files that are not
// checkpoints; mixed devices within a module, optimizer state away from its parameters, TorchScript
// code that names a device (§5). Defined in integritychecks.cpp.

#include "core/base/finding.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ckpt {

struct Checkpoint;

// The CRC-32 of a stored record's bytes, computed elsewhere in a read the caller made anyway
// (`check --values`: the value helper reads every tensor's bytes and computes it in the same pass).
// The integrity check uses it for the record at exactly this offset and length instead of reading
// the record again; the comparison with the recorded CRC, and every finding, stay its own.
struct KnownRecordCrc {
    std::string record;
    std::uint64_t offset = 0, length = 0;
    std::uint32_t crc = 0;
};

// Integrity (CRC of every record, sizes, views, truncation and salvage, files that are not
// checkpoints) and placement smells (mixed devices in a module, optimizer state away from its
// parameters, TorchScript code that names a device), as findings.
// `checkRecordCrcs` false (a remote file, where it would download every record) says so in a
// finding instead of reading the records.
std::vector<Finding> checkIntegrity(const Checkpoint& checkpoint,
    const std::vector<KnownRecordCrc>& knownRecordCrcs = {}, bool checkRecordCrcs = true);
std::vector<Finding> checkPlacementSmells(const Checkpoint& checkpoint);

} // namespace ckpt
