// SPDX-License-Identifier: MIT
#pragma once
// torch.distributed.checkpoint's writer extensions (torch/distributed/checkpoint/_extension.py,
// torch 2.8+): FileSystemWriter(_extensions=[...]) passes each item's bytes through stream
// transforms and records their descriptors ("name[@local-domain][/version]", e.g.
// "stream.zstd/1") in the item's _StorageInfo.transform_descriptors. DCP's reader undoes them in
// the order they are listed. The only transform torch ships is ZStandard ("stream.zstd", major
// version 1), undone here with libzstd; any other is named, never guessed at.

#include "core/base/bytes.h"
#include "core/base/expected.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ckpt {

// Whether `descriptor` names a transform this reader can undo ("stream.zstd/1", "stream.zstd/1.2").
bool isKnownStreamTransform(const std::string& descriptor);

// The descriptors of `descriptors` that are not known, joined with ", "; empty when all are known.
std::string unknownStreamTransforms(const std::vector<std::string>& descriptors);

// The bytes as DCP's reader sees them after undoing every transform in order. Refuses to produce
// more than maxSize bytes (a hostile stream cannot balloon in memory). Fails, naming the cause, for
// an unknown transform (the words of DCP's registry: "Unknown extension name='...'"), a corrupt or
// cut-off zstd stream, or output past maxSize.
Expected<ByteBuffer> undoStreamTransforms(
    ByteView raw, const std::vector<std::string>& descriptors, std::uint64_t maxSize);

} // namespace ckpt
