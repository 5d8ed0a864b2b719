// SPDX-License-Identifier: MIT
#pragma once
// Storages saved inside bytes (core/read/nestedblobs.cpp) get their planned device by rewriting the
// torch.save file in the bytes, the way the remap writer rewrites a main pickle: its persistent
// id's location re-emitted, every other byte kept (a legacy stream's header pickles, key list and
// storage bytes; a zip archive's other records, rewritten record by record with torch.save's
// framing); the outer pickle then carries the new bytes where the old ones stood and is otherwise
// re-emitted unchanged.

#include "core/base/expected.h"

#include <string>

namespace ckpt {

struct Checkpoint;
struct NestedBlob;
class PickleEmitter;

// The torch.save file inside `blob`'s bytes, its storage recorded on `device`.
Expected<std::string> rewriteNestedBlob(
    const Checkpoint& outer, const NestedBlob& blob, const std::string& device);

// Makes `emitter` (over outer.graph) write `blob`'s call with the bytes of rewriteNestedBlob: as
// bytes where the pickle held bytes, as the latin-1 text of _codecs.encode where it held that.
Status replaceNestedBlob(
    PickleEmitter& emitter, const Checkpoint& outer, const NestedBlob& blob, const std::string& device);

} // namespace ckpt
