// SPDX-License-Identifier: MIT
#include "ui/document/placementmime.h"

#include <QDataStream>
#include <QIODevice>

namespace ckpt {

namespace {

constexpr quint32 kMagic = 0x434b5044; // "CKPD"
constexpr quint32 kVersion = 1;
constexpr quint8 kTensor = 1;
constexpr quint8 kModule = 2;
// Far more rows than a drag can carry in practice; bounds what a forged count can make us reserve.
constexpr quint32 kMostItems = 1u << 24;

constexpr QDataStream::Version kStreamVersion = QDataStream::Qt_6_0;

} // namespace

QByteArray encodePlacementMime(const std::vector<PlacementMimeItem>& items)
{
    QByteArray payload;
    QDataStream stream(&payload, QIODevice::WriteOnly);
    stream.setVersion(kStreamVersion);
    stream << kMagic << kVersion << quint32(items.size());
    for (const PlacementMimeItem& item : items)
        stream << (item.isModule ? kModule : kTensor) << QByteArray::fromStdString(item.name);
    return payload;
}

std::optional<std::vector<PlacementMimeItem>> decodePlacementMime(const QByteArray& payload)
{
    QDataStream stream(payload);
    stream.setVersion(kStreamVersion);
    quint32 magic = 0, version = 0, count = 0;
    stream >> magic >> version >> count;
    if (stream.status() != QDataStream::Ok || magic != kMagic || version != kVersion || count > kMostItems)
        return std::nullopt;
    std::vector<PlacementMimeItem> items;
    for (quint32 i = 0; i < count; ++i) {
        quint8 kind = 0;
        QByteArray name;
        stream >> kind >> name;
        // A null array is how QDataStream writes "no array"; the encoder never does.
        if (stream.status() != QDataStream::Ok || (kind != kTensor && kind != kModule) || name.isNull())
            return std::nullopt;
        items.push_back({kind == kModule, name.toStdString()});
    }
    if (!stream.atEnd())
        return std::nullopt;
    return items;
}

} // namespace ckpt
