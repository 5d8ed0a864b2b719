// SPDX-License-Identifier: MIT
#pragma once

#include "core/base/bytes.h"
#include "core/base/expected.h"
#include "core/model/checkpoint.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ckpt {

class AtomicOutputFile;

// What a writer meant one tensor of its output to be, as the project's reader must read it back.
// Kept small (a million tensors make a million of these): the texts are views of the writer's own
// strings, which outlive the verification, and dimensions are stored inline.
struct IntendedTensor {
    std::string_view name;
    InternedString dtype;
    Dimensions shape;
    OptionalDimensions stride; // none: a layout without strides (sparse, nested)
    std::optional<std::int64_t> storageOffset;
    // The output storage it views ("" for none): tensors meant to share a storage name the same key.
    std::string_view storageKey;
    // The device the output records for it (none where the format records none).
    std::optional<InternedString> device;
    bool deviceChecked = true; // false: the writer leaves the device where the reader finds it
};

// What a writer meant one storage of its output to hold.
struct IntendedStorage {
    std::string_view key; // a view of the writer's own string, as IntendedTensor's
    std::optional<InternedString> device; // recorded in the output (none where the format records none)
    bool deviceChecked = true;
    // The length of its record in the output, when the writer knows it.
    std::optional<std::uint64_t> length;
    // The CRC-32 of its record's bytes (none: not checked, e.g. an input written with CRCs off).
    std::optional<std::uint32_t> crc;
    // Or the bytes themselves, chunk by chunk, compared byte for byte from the record's start.
    std::function<Status(const std::function<Status(ByteView)>& sink)> bytes;
};

// One description of a written file that every writer gives the verifier: what it meant to write.
struct IntendedOutput {
    std::string what; // "the written copy", "the written state_dict", ... (starts the messages)
    std::optional<CheckpointFormat> format;
    std::vector<IntendedTensor> tensors; // all tensors of the file, in the reader's order
    bool matchTensorsByName = false; // for formats whose reader orders them otherwise (safetensors)
    std::vector<IntendedStorage> storages; // every storage whose bytes the writer vouches for
    // The globals the written pickles may name (the writer names nothing it did not mean to);
    // none: not checked (a format without pickles).
    std::optional<std::set<std::pair<std::string, std::string>>> allowedGlobals;
};

// Re-reads the file being written (from its temporary path, with the project's own reader) while
// it is flushed to disk, and checks it against `intended`: it reads back without errors in the
// intended format; every tensor has the intended name, dtype, shape, stride, storage offset,
// storage (so sharing is as intended) and recorded device; every storage its recorded device,
// record length and bytes (CRC-32 or byte compare); its pickles name only the allowed globals.
// The message names the first mismatches (at most a few), each with its tensor or storage. Every
// writer calls it after writing and before the file takes the target's name.
Status verifyWrittenFile(const AtomicOutputFile& output, IntendedOutput intended);

// The C-order strides torch gives a contiguous tensor of `shape`.
Dimensions contiguousStrides(const Dimensions& shape);

// Test hooks: a fault put into the written file (through its descriptor) or into what the writer
// meant, just before verifyWrittenFile checks, as a writer bug would. Tests only; one at a time.
struct ReadBackFaultForTesting {
    std::function<void(int fd)> file;
    std::function<void(IntendedOutput&)> intent;
};
class ScopedReadBackFault {
public:
    explicit ScopedReadBackFault(ReadBackFaultForTesting fault);
    ~ScopedReadBackFault();
    ScopedReadBackFault(const ScopedReadBackFault&) = delete;
    ScopedReadBackFault& operator=(const ScopedReadBackFault&) = delete;
};
// The fault in force, if any (applied by verifyWrittenFile).
const ReadBackFaultForTesting* readBackFaultForTesting();

} // namespace ckpt
