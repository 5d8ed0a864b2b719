// SPDX-License-Identifier: MIT
#pragma once

#include "core/base/expected.h"
#include "core/read/tensorlocator.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ckpt {

struct Checkpoint;

// One tensor of one side of a comparison: where its bytes are read (a side may span several
// files: a folder of shards, a DCP folder) and which tensor of the side as opened it is.
struct DiffTensor {
    const Checkpoint* checkpoint = nullptr; // holds the bytes (the side itself, a shard, a DCP chunk)
    std::uint32_t tensor = 0; // in `checkpoint`
    std::uint32_t sideIndex = 0; // in the side's own checkpoint (what its tree and tools number)
    std::string unreadable; // why its bytes cannot be read, when they cannot
};

// One side of a comparison as opened (a file, a folder of shards or a DCP folder) and its named
// tensors, each located where its bytes are. Keeps what it locates alive.
struct DiffSide {
    std::shared_ptr<const Checkpoint> checkpoint;
    std::vector<LocatedTensor> located;
    std::vector<DiffTensor> tensors;
};
DiffSide makeDiffSide(std::shared_ptr<const Checkpoint> checkpoint);

struct TensorChange {
    std::string name;
    DiffTensor a, b;
    bool dtypeChanged = false;
    bool shapeChanged = false;
    bool strideChanged = false; // only where both sides record one
    bool deviceChanged = false; // only where both sides record one (safetensors records none)
    bool valueChanged = false; // same dtype and shape, other bytes
    bool valueChangeComparable() const { return valueChanged && valueNotCompared.empty(); }
    std::string valueNotCompared; // why the values could not be compared, if they could not
};

struct RenamedTensor {
    std::string from, to;
};

struct CheckpointDiff {
    std::vector<std::string> added; // in B only
    std::vector<std::string> removed; // in A only
    std::vector<RenamedTensor> renamed; // the same dtype, shape and bytes under another name
    std::vector<TensorChange> changed;
    std::uint64_t unchanged = 0;
    std::uint64_t bytesHashed = 0;
    std::uint32_t threads = 1;
    double hashSeconds = 0;
    bool cancelled = false; // the progress callback asked to stop: nothing above is complete
    bool identical() const { return added.empty() && removed.empty() && renamed.empty() && changed.empty(); }
};

struct DiffOptions {
    unsigned threads = 0; // 0: one per hardware thread
    // Bytes hashed so far of all to hash, from the hashing threads (at least once per 64 MiB);
    // false stops the comparison (CheckpointDiff::cancelled).
    std::function<bool(std::uint64_t done, std::uint64_t total)> progress;
};

// Compares two sides by name. Every tensor's values are hashed (XXH3-128 of the bytes it shows, in
// C order, so a view and its contiguous copy hash alike), in parallel, one storage or view per job
// straight from the file maps; nothing is decoded. Tensors only one side has are matched by hash,
// dtype and shape to find renames.
CheckpointDiff diffCheckpoints(
    const std::vector<DiffTensor>& a, const std::vector<DiffTensor>& b, const DiffOptions& options = {});

// A hash of the bytes a tensor shows (for tests and the benchmark): nothing for composite tensors
// and tensors whose bytes are missing.
std::optional<std::pair<std::uint64_t, std::uint64_t>> tensorContentHash(
    const Checkpoint& checkpoint, std::uint32_t tensor);

} // namespace ckpt
