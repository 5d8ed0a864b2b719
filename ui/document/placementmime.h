// SPDX-License-Identifier: MIT
#pragma once

#include <QByteArray>

#include <optional>
#include <string>
#include <vector>

namespace ckpt {

// The MIME type of tensors and modules dragged out of the tree onto a device. Declared once: the
// tree offers it, the device cards and the memory chart accept it.
inline constexpr const char* kPlacementMimeType = "application/x-ckpt-inspector-placement";

// One dragged item: a tensor or a module, named by its stable path (names survive re-sorting and
// filtering, row numbers do not).
struct PlacementMimeItem {
    bool isModule = false;
    std::string name;
    bool operator==(const PlacementMimeItem&) const = default;
};

// The payload is a QDataStream: a magic number, a version, the item count, then per item a kind
// byte and the name as a length-prefixed byte array. Names come from the file being inspected and
// may hold any byte (a newline, a tab): a separator-based payload would let one hostile tensor
// name turn into several rules, so the length prefix is the only framing.
QByteArray encodePlacementMime(const std::vector<PlacementMimeItem>& items);

// Nothing when the payload is not exactly what encodePlacementMime() writes: wrong magic or
// version, an unknown kind, a count that does not match, truncated or trailing bytes. A drop of
// such data is refused as a whole, never applied in part.
std::optional<std::vector<PlacementMimeItem>> decodePlacementMime(const QByteArray& payload);

} // namespace ckpt
