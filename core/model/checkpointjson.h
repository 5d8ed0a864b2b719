// SPDX-License-Identifier: MIT
#pragma once

#include <string>

namespace ckpt {

struct Checkpoint;
class JsonWriter;

// `ckpt-inspect info --json`: the contract of design.md ("format", "tensors", "storages"), plus
// totals per device, findings and the globals the pickles reference.
std::string checkpointToJson(const Checkpoint& checkpoint, bool pretty);
// The same members written into an object the caller has begun, so that a caller can add its own
// members and stream the document as it is produced (a 100,000-tensor document is tens of MB).
void writeCheckpointJsonMembers(JsonWriter& json, const Checkpoint& checkpoint);

// `ckpt-inspect info`: the tree with dtype, shape, size and recorded device per tensor, then
// totals per device and the findings, for a person at a terminal.
std::string checkpointToText(const Checkpoint& checkpoint);

} // namespace ckpt
