#pragma once

#include <string>

namespace ckpt {

struct Checkpoint;

// `ckpt-inspect info --json`: the contract of design.md ("format", "tensors", "storages"), plus
// totals per device, findings and the globals the pickles reference.
std::string checkpointToJson(const Checkpoint& checkpoint, bool pretty);

// `ckpt-inspect info`: the tree with dtype, shape, size and recorded device per tensor, then
// totals per device and the findings, for a person at a terminal.
std::string checkpointToText(const Checkpoint& checkpoint);

} // namespace ckpt
