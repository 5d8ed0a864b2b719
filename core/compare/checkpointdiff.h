#pragma once

#include "core/base/expected.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ckpt {

struct Checkpoint;

// One tensor of one side of a comparison (a side may span several files: a sharded folder).
struct DiffTensor {
    const Checkpoint* checkpoint = nullptr;
    std::uint32_t tensor = 0;
};

// The tensors of checkpoints by their names, as `diff` compares them.
std::vector<DiffTensor> diffTensorsOf(const std::vector<const Checkpoint*>& checkpoints);

struct TensorChange {
    std::string name;
    DiffTensor a, b;
    bool dtypeChanged = false;
    bool shapeChanged = false;
    bool strideChanged = false; // only where both sides record one
    bool deviceChanged = false; // only where both sides record one (safetensors records none)
    bool valueChanged = false; // same dtype and shape, other bytes
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
    bool identical() const { return added.empty() && removed.empty() && renamed.empty() && changed.empty(); }
};

struct DiffOptions {
    unsigned threads = 0; // 0: one per hardware thread
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
