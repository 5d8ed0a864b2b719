// SPDX-License-Identifier: MIT
// How a row of the tensor tree reads: its texts per column, tooltips, the device swatch (striped
// for a module that mixes devices) with its findings badge, and the column headers.
#include "ui/models/tensortreemodel.h"

#include "ui/base/devicecolors.h"
#include "ui/document/checkpointdocument.h"
#include "ui/models/findingsmodel.h"

#include <QGuiApplication>
#include <QPainter>

namespace ckpt {

namespace {

constexpr int kSwatchSize = 12;

QString deviceText(const std::optional<std::string>& tag)
{
    return tag ? QString::fromStdString(*tag) : QStringLiteral("(none)");
}

QString shapeText(const TensorEntry& tensor)
{
    QString text = QStringLiteral("[");
    for (std::size_t i = 0; i < tensor.shape.size(); ++i) {
        if (i)
            text += QStringLiteral(", ");
        text += QString::number(tensor.shape[i]);
    }
    text += QLatin1Char(']');
    if (tensor.layout != TensorLayout::Strided)
        text += QLatin1Char(' ') + QLatin1String(tensorLayoutName(tensor.layout));
    return text;
}

QString percentText(std::uint64_t part, std::uint64_t whole)
{
    if (whole == 0)
        return QStringLiteral("0%");
    const double share = 100.0 * static_cast<double>(part) / static_cast<double>(whole);
    if (share > 0 && share < 1)
        return QStringLiteral("<1%");
    if (share < 100 && share > 99)
        return QStringLiteral(">99%"); // "100%" beside "<1%" would read as a contradiction
    return QString::number(qRound(share)) + QLatin1Char('%');
}

QString kindDescription(const TreeNode& node)
{
    switch (node.kind) {
    case TreeNodeKind::Root:
        return QStringLiteral("the whole checkpoint");
    case TreeNodeKind::Dict:
        return QStringLiteral("a dictionary");
    case TreeNodeKind::Sequence:
        return QStringLiteral("a list or tuple");
    case TreeNodeKind::Module:
        return QStringLiteral("a module (a group of tensors that share a name prefix)");
    case TreeNodeKind::Object:
        return QStringLiteral("an object");
    case TreeNodeKind::Tensor:
        return QStringLiteral("a tensor");
    case TreeNodeKind::Value:
        return QStringLiteral("a plain value (no tensor, no device memory)");
    case TreeNodeKind::Placeholder:
        return QStringLiteral("an object without tensors, named by its class; its code is never run");
    case TreeNodeKind::Alias:
        return QStringLiteral("a container already shown elsewhere in the tree");
    }
    return {};
}

} // namespace

std::uint64_t TensorTreeModel::bytesOf(std::uint32_t node) const
{
    const TreeNode& treeNode = m_document->checkpoint().tree[node];
    if (treeNode.kind == TreeNodeKind::Tensor && treeNode.tensor >= 0) {
        const std::uint64_t view
            = m_document->checkpoint().tensors[static_cast<std::size_t>(treeNode.tensor)].nbytes();
        if (view > 0 || treeNode.children.empty())
            return view;
    }
    std::uint64_t total = 0;
    for (const auto& [tag, bytes] : m_document->ledger().moduleBytes(node))
        total += bytes;
    return total;
}

QVariantList TensorTreeModel::deviceMix(std::uint32_t node) const
{
    auto bytes = m_document->ledger().moduleBytes(node);
    std::stable_sort(
        bytes.begin(), bytes.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    QVariantList mix;
    mix.reserve(static_cast<qsizetype>(bytes.size()));
    for (const auto& [tag, count] : bytes) {
        QVariantMap entry;
        entry.insert(QStringLiteral("tag"), QString::fromStdString(tag));
        entry.insert(QStringLiteral("bytes"), QVariant::fromValue<qulonglong>(count));
        mix.push_back(entry);
    }
    return mix;
}

QString TensorTreeModel::recordedText(std::uint32_t node) const
{
    const std::int32_t device = m_recordedDevice[node];
    if (device == kMixedDevices)
        return QStringLiteral("mixed");
    if (device == kNoDevice)
        return {};
    return m_recordedTags[static_cast<std::size_t>(device)];
}

QString TensorTreeModel::plannedSingleDevice(std::uint32_t node) const
{
    const TreeNode& treeNode = m_document->checkpoint().tree[node];
    if (treeNode.kind == TreeNodeKind::Tensor && treeNode.tensor >= 0)
        return deviceText(plannedDeviceOfTensor(static_cast<std::uint32_t>(treeNode.tensor)));
    if (m_tensorCount[node] == 0)
        return {};
    const auto bytes = m_document->ledger().moduleBytes(node);
    if (bytes.size() == 1)
        return QString::fromStdString(bytes.front().first);
    if (bytes.empty() && m_changedCount[node] == 0 && m_recordedDevice[node] >= 0)
        return recordedText(node); // tensors without storage bytes (meta): they stay where they are
    return {};
}

QString TensorTreeModel::plannedText(std::uint32_t node) const
{
    if (m_tensorCount[node] == 0)
        return {};
    QString planned = plannedSingleDevice(node);
    if (planned.isEmpty()) {
        const QVariantList mix = deviceMix(node);
        if (mix.isEmpty())
            return QStringLiteral("mixed");
        std::uint64_t total = 0;
        for (const QVariant& entry : mix)
            total += entry.toMap().value(QStringLiteral("bytes")).toULongLong();
        QString text = QStringLiteral("mixed (");
        for (qsizetype i = 0; i < mix.size(); ++i) {
            const QVariantMap entry = mix[i].toMap();
            if (i)
                text += QStringLiteral(", ");
            text += entry.value(QStringLiteral("tag")).toString() + QLatin1Char(' ')
                + percentText(entry.value(QStringLiteral("bytes")).toULongLong(), total);
        }
        return text + QLatin1Char(')');
    }
    if (m_changedCount[node] > 0) {
        const QString recorded = recordedText(node);
        if (recorded != planned)
            return recorded + QStringLiteral(" → ") + planned;
    }
    return planned;
}

QString TensorTreeModel::displayData(std::uint32_t node, int column) const
{
    const Checkpoint& checkpoint = m_document->checkpoint();
    const TreeNode& treeNode = checkpoint.tree[node];
    const TensorEntry* tensor = treeNode.kind == TreeNodeKind::Tensor && treeNode.tensor >= 0
        ? &checkpoint.tensors[static_cast<std::size_t>(treeNode.tensor)]
        : nullptr;
    switch (column) {
    case NameColumn:
        return treeNode.name.empty() ? QStringLiteral("(root)") : QString::fromStdString(treeNode.name.str());
    case DTypeColumn:
        if (tensor) {
            // A quantized weight or one of its scales: the group's layout after the dtype.
            const auto quant = m_quantText.constFind(static_cast<std::uint32_t>(treeNode.tensor));
            return quant == m_quantText.constEnd()
                ? QString::fromStdString(tensor->dtype)
                : QString::fromStdString(tensor->dtype) + QStringLiteral(" · ") + quant.value();
        }
        if (treeNode.kind == TreeNodeKind::Placeholder)
            return QLatin1Char('<')
                + QString::fromStdString(
                    treeNode.className.empty() ? treeNode.summary : treeNode.className.str())
                + QLatin1Char('>');
        if (treeNode.kind == TreeNodeKind::Value || treeNode.kind == TreeNodeKind::Alias)
            return QString::fromStdString(treeNode.summary);
        return {};
    case ShapeColumn:
        return tensor ? shapeText(*tensor) : QString();
    case SizeColumn:
        return m_tensorCount[node] > 0 ? QString::fromStdString(formatBytes(bytesOf(node))) : QString();
    case RecordedDeviceColumn:
        return recordedText(node);
    case PlannedDeviceColumn:
        return plannedText(node);
    default:
        return {};
    }
}

QString TensorTreeModel::nameTooltip(std::uint32_t node) const
{
    const Checkpoint& checkpoint = m_document->checkpoint();
    const TreeNode& treeNode = checkpoint.tree[node];
    QString path = QString::fromStdString(m_document->nodePath(node));
    if (path.isEmpty())
        path = QStringLiteral("(root)");
    QString text
        = QStringLiteral("<b>") + path.toHtmlEscaped() + QStringLiteral("</b>: ") + kindDescription(treeNode);
    if (!treeNode.className.empty())
        text += QStringLiteral("<br>class ") + QString::fromStdString(treeNode.className).toHtmlEscaped();
    if (!treeNode.summary.empty())
        text += QStringLiteral("<br>") + QString::fromStdString(treeNode.summary).toHtmlEscaped();

    if (treeNode.kind == TreeNodeKind::Tensor && treeNode.tensor >= 0) {
        const TensorEntry& tensor = checkpoint.tensors[static_cast<std::size_t>(treeNode.tensor)];
        text += QStringLiteral("<br>") + QString::fromStdString(tensor.dtype) + QLatin1Char(' ')
            + shapeText(tensor) + QStringLiteral(", ") + QString::fromStdString(formatBytes(tensor.nbytes()));
        if (tensor.isParameter)
            text += QStringLiteral(" (a Parameter: weights the model learns)");
        if (tensor.storage >= 0) {
            const StorageRecord& storage = checkpoint.storages[static_cast<std::size_t>(tensor.storage)];
            text += QStringLiteral("<br>Its numbers live in <i>storage ")
                + QString::fromStdString(storage.key.str()).toHtmlEscaped()
                + QStringLiteral("</i>: a block of ") + QString::fromStdString(formatBytes(storage.nbytes))
                + QStringLiteral(" in the file. A tensor is a view into a storage (shape, stride, offset); "
                                 "the device belongs to the storage.");
            if (storage.tensors.size() > 1) {
                text += QStringLiteral(
                    "<br>%1 other tensor(s) view the same storage, so moving this one moves them too:")
                            .arg(storage.tensors.size() - 1);
                int listed = 0;
                for (std::uint32_t other : storage.tensors) {
                    if (other == static_cast<std::uint32_t>(treeNode.tensor))
                        continue;
                    if (++listed > 5) {
                        text += QStringLiteral("<br>&nbsp;&nbsp;…");
                        break;
                    }
                    text += QStringLiteral("<br>&nbsp;&nbsp;")
                        + QString::fromStdString(checkpoint.tensors[other].name.str()).toHtmlEscaped();
                }
            }
        }
    } else if (m_tensorCount[node] > 0) {
        text += QStringLiteral("<br>%1 tensor(s) below, %2 of storage")
                    .arg(m_tensorCount[node])
                    .arg(QString::fromStdString(formatBytes(bytesOf(node))));
        if (m_changedCount[node] > 0)
            text += QStringLiteral("; %1 planned to move").arg(m_changedCount[node]);
    }
    if (isDraggable(node))
        text += QStringLiteral("<br><i>Drag onto a device to plan where it goes.</i>");
    return text;
}

QVariant TensorTreeModel::decoration(std::uint32_t node) const
{
    if (m_tensorCount[node] == 0)
        return {};
    const qreal ratio = qApp ? qApp->devicePixelRatio() : 1.0;
    const QString single = plannedSingleDevice(node);
    const QVariantList mix = single.isEmpty() ? deviceMix(node) : QVariantList();
    QString key = single;
    if (single.isEmpty()) {
        for (const QVariant& entry : mix) {
            const QVariantMap map = entry.toMap();
            key += map.value(QStringLiteral("tag")).toString() + QLatin1Char('=')
                + QString::number(map.value(QStringLiteral("bytes")).toULongLong()) + QLatin1Char(';');
        }
    }
    if (auto found = m_swatches.constFind(key); found != m_swatches.constEnd())
        return found.value();
    // Mixes are many (one per module share); cap the cache instead of growing with the tree.
    if (m_swatches.size() > 512)
        m_swatches.clear();

    const int pixels = qCeil(kSwatchSize * ratio);
    QPixmap pixmap(pixels, pixels);
    pixmap.fill(Qt::transparent);
    {
        QPainter painter(&pixmap);
        const QRectF box(0.5, 0.5, pixels - 1.0, pixels - 1.0);
        if (!single.isEmpty()) {
            painter.fillRect(box, deviceColor(single));
        } else {
            // Vertical stripes, each as wide as its device's share of the bytes.
            std::uint64_t total = 0;
            for (const QVariant& entry : mix)
                total += entry.toMap().value(QStringLiteral("bytes")).toULongLong();
            qreal x = box.left();
            for (qsizetype i = 0; i < mix.size(); ++i) {
                const QVariantMap entry = mix[i].toMap();
                const qreal share = total
                    ? static_cast<qreal>(entry.value(QStringLiteral("bytes")).toULongLong())
                        / static_cast<qreal>(total)
                    : 1.0 / static_cast<qreal>(mix.size());
                const qreal width
                    = i + 1 == mix.size() ? box.right() - x : qMax<qreal>(1.0, share * box.width());
                painter.fillRect(QRectF(x, box.top(), width, box.height()),
                    deviceColor(entry.value(QStringLiteral("tag")).toString()));
                x += width;
            }
        }
        painter.setPen(QPen(QColor(0, 0, 0, 110), 1.0));
        painter.drawRect(box);
    }
    pixmap.setDevicePixelRatio(ratio);
    m_swatches.insert(key, pixmap);
    return pixmap;
}

QVariant TensorTreeModel::decorationWithBadge(std::uint32_t node) const
{
    // The device swatch, then room for a badge: a full one for a row whose own tensor has
    // findings, a pale one for a row with findings below it, nothing otherwise.
    const QVariant swatchVariant = decoration(node);
    const QPixmap swatch = swatchVariant.value<QPixmap>();
    int badge = -1;
    bool faint = false;
    if (m_findingSeverity[node] >= 0) {
        badge = m_findingSeverity[node]; // NOLINT(bugprone-signed-char-misuse) a severity, not a char
    } else if (m_findingSeverityBelow[node] >= 0) {
        badge = m_findingSeverityBelow[node]; // NOLINT(bugprone-signed-char-misuse) a severity, not a char
        faint = true;
    }
    if (swatch.isNull() && badge < 0)
        return {};
    const QString key = QString::number(swatch.isNull() ? 0 : swatch.cacheKey()) + QLatin1Char(':')
        + QString::number(badge) + (faint ? QStringLiteral("f") : QString());
    if (auto found = m_badgedSwatches.constFind(key); found != m_badgedSwatches.constEnd())
        return found.value();
    if (m_badgedSwatches.size() > 1024)
        m_badgedSwatches.clear();

    const qreal ratio = qApp ? qApp->devicePixelRatio() : 1.0;
    constexpr int kGap = 3;
    const int logicalWidth = kSwatchSize + kGap + kSwatchSize;
    QPixmap pixmap(qCeil(logicalWidth * ratio), qCeil(kSwatchSize * ratio));
    pixmap.fill(Qt::transparent);
    {
        QPainter painter(&pixmap);
        painter.scale(ratio, ratio);
        if (!swatch.isNull())
            painter.drawPixmap(QRectF(0, 0, kSwatchSize, kSwatchSize), swatch, QRectF(swatch.rect()));
        if (badge >= 0)
            painter.drawPixmap(QRectF(kSwatchSize + kGap, 0, kSwatchSize, kSwatchSize),
                severityBadge(static_cast<Severity>(badge), kSwatchSize, faint),
                QRectF(0, 0, qCeil(kSwatchSize * ratio), qCeil(kSwatchSize * ratio)));
    }
    pixmap.setDevicePixelRatio(ratio);
    m_badgedSwatches.insert(key, pixmap);
    return pixmap;
}

QVariant TensorTreeModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || section < 0 || section >= ColumnCount)
        return {};
    if (role == Qt::DisplayRole) {
        switch (section) {
        case NameColumn:
            return QStringLiteral("Name");
        case DTypeColumn:
            return QStringLiteral("DType");
        case ShapeColumn:
            return QStringLiteral("Shape");
        case SizeColumn:
            return QStringLiteral("Size");
        case RecordedDeviceColumn:
            return QStringLiteral("Recorded");
        case PlannedDeviceColumn:
            return QStringLiteral("Planned");
        }
    }
    if (role == Qt::ToolTipRole) {
        switch (section) {
        case NameColumn:
            return QStringLiteral(
                "The tree of the checkpoint: modules, dictionaries and lists, down to tensors");
        case DTypeColumn:
            return QStringLiteral("The element type of a tensor (float32: 4 bytes per number; bfloat16: 2); "
                                  "for other values, what they are");
        case ShapeColumn:
            return QStringLiteral(
                "How many numbers along each dimension: [512, 64] is a table of 512 rows of 64");
        case SizeColumn:
            return QStringLiteral(
                "Bytes of a tensor; for a module, the bytes of the storages under it (each counted once)");
        case RecordedDeviceColumn:
            return QStringLiteral("Recorded device: where the storage was when the file was saved; "
                                  "a plain torch.load puts it back there");
        case PlannedDeviceColumn:
            return QStringLiteral("Planned device: where the storage goes under your plan; "
                                  "\"cuda:1 → cpu\" marks a planned move");
        }
    }
    if (role == Qt::TextAlignmentRole && section == SizeColumn)
        return QVariant::fromValue<int>(Qt::AlignRight | Qt::AlignVCenter);
    return {};
}

} // namespace ckpt
