// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "core/base/internedstring.h"

namespace ckpt {

struct Checkpoint;
class MappedFile;
class ModulePathCache;

// Reads a safetensors file (torch-format.md §8) into `checkpoint` (whose `file`, `path`, `fileSize`
// and `container` are already set): one storage per tensor (key = tensor name, no device: the
// format records none), tensors with C-order strides, and the tree from the dotted names. Every
// violation of the format's rules becomes a Finding; what can still be read is kept.
//
// How the header is read: Scan, a streaming scan straight into the records for headers in the plain
// form writers produce, the JSON parser for any other; Parse, the JSON parser always (tests check
// that both read every header alike).
enum class SafetensorsHeaderReading { Scan, Parse };
void readSafetensors(
    Checkpoint& checkpoint, SafetensorsHeaderReading reading = SafetensorsHeaderReading::Scan);

// A safetensors file checked as readSafetensors checks it, its tensors not yet added to any
// checkpoint: a set's shard is added straight into the merged checkpoint (issue 28: a 160-shard
// folder spent half of `info` building each shard's own records and copying them into the set's).
struct CheckedSafetensorsTensor {
    std::string_view name; // into the file's header
    InternedString dtype; // torch's name
    std::uint64_t numel = 0; // torch's count (F4: pairs)
    std::uint32_t firstDim = 0; // torch's shape: dims[firstDim, firstDim + dimCount)
    std::uint32_t dimCount = 0;
    std::optional<std::uint64_t> nbytes; // as the reader sets them on the storage
    std::optional<std::uint64_t> dataOffset;
    std::optional<std::uint64_t> availableBytes;
};
struct CheckedSafetensors {
    std::shared_ptr<const MappedFile> file; // holds the header the names point into
    std::vector<CheckedSafetensorsTensor> tensors; // in header order
    std::vector<std::int64_t> dims;
};

// The file's tensors when readSafetensors would raise no finding at all about it (a header in the
// plain form writers produce); nothing otherwise, and the file is then read on its own, so every
// finding is said exactly as for any file.
std::optional<CheckedSafetensors> checkSafetensorsQuietly(std::shared_ptr<const MappedFile> file);
// Adds them to `checkpoint` as readSafetensors adds its tensors, each storage keyed
// "<keyPrefix><name>" (its record still "tensor data of <name>"), the module nodes found through
// `modules`; the header's __metadata__ is left out, as the merge of a set leaves it out.
void addCheckedSafetensors(Checkpoint& checkpoint, const CheckedSafetensors& checked,
    std::string_view keyPrefix, ModulePathCache& modules);

} // namespace ckpt
