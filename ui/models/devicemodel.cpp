// SPDX-License-Identifier: MIT
#include "ui/models/devicemodel.h"

#include <QMimeData>
#include <QPalette>

#include "ui/base/devicecolors.h"

namespace ckpt {

QColor overCapacityColor(const QPalette& palette)
{
    return palette.color(QPalette::Base).lightness() > 128 ? QColor(0xc6, 0x28, 0x28)
                                                           : QColor(0xff, 0x6e, 0x6e);
}

QString formatByteSize(std::uint64_t bytes)
{
    return QString::fromStdString(formatBytes(bytes));
}

DeviceModel::DeviceModel(CheckpointDocument* document, QObject* parent)
    : LedgerModelBase(parent)
{
    setDocument(document);
}

int DeviceModel::rowCount(const QModelIndex& parent) const
{
    return ledgerRowCount(parent);
}

QVariant DeviceModel::data(const QModelIndex& index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const DeviceLedgerLine& line = lines()[static_cast<std::size_t>(index.row())];
    const QString tag = QString::fromStdString(line.tag);
    switch (role) {
    case Qt::DisplayRole:
    case TagRole:
        return tag;
    case NameRole:
        return QString::fromStdString(line.name);
    case Qt::DecorationRole:
        return deviceColor(tag);
    case CapacityRole:
        return line.capacity ? QVariant(qulonglong(*line.capacity)) : QVariant();
    case PlannedBytesRole:
        return qulonglong(line.plannedBytes);
    case RecordedBytesRole:
        return qulonglong(line.recordedBytes);
    case ContextBytesRole:
        return qulonglong(line.contextBytes);
    case HeadroomRole:
        return qlonglong(line.headroom());
    case OverCapacityRole:
        return line.overCapacity();
    case InTargetRole:
        return line.inMachine;
    case StorageCountRole:
        return qulonglong(line.storageCount);
    case RecordsNoDeviceRole:
        return line.recordsNoDevice;
    case Qt::AccessibleTextRole: {
        QString text
            = tag + QStringLiteral(", ") + formatByteSize(line.plannedBytes) + QStringLiteral(" planned");
        if (line.capacity)
            text += QStringLiteral(" of ") + formatByteSize(*line.capacity);
        if (line.overCapacity())
            text += QStringLiteral(", over capacity");
        return text;
    }
    case Qt::ToolTipRole: {
        QString tip = QStringLiteral("<b>") + tag.toHtmlEscaped() + QStringLiteral("</b> ")
            + QString::fromStdString(line.name).toHtmlEscaped() + QStringLiteral("<br>");
        tip += QStringLiteral("Planned: %1 in %2 storages: what will land on this device when the saved copy "
                              "is loaded.<br>")
                   .arg(formatByteSize(line.plannedBytes))
                   .arg(line.storageCount);
        tip += QStringLiteral("Recorded: %1: what the file says now.<br>")
                   .arg(formatByteSize(line.recordedBytes));
        if (line.contextBytes)
            tip += QStringLiteral("CUDA context: %1, %2 (torch's runtime takes it on every GPU it "
                                  "touches).<br>")
                       .arg(formatByteSize(line.contextBytes),
                           line.contextMeasured ? QStringLiteral("measured on this machine")
                                                : QStringLiteral("assumed"));
        if (line.recordsNoDevice)
            tip += QStringLiteral("The file records no device for these storages (safetensors, DCP and NumPy "
                                  "files do not): the loader places them, safetensors.torch.load_file on "
                                  "cpu unless told. Not a device: nothing can be planned onto it.");
        else if (line.capacity)
            tip += QStringLiteral("Capacity: %1; %2 %3.")
                       .arg(formatByteSize(*line.capacity),
                           formatByteSize(std::uint64_t(std::abs(line.headroom()))),
                           line.overCapacity() ? QStringLiteral("too much") : QStringLiteral("left"));
        else
            tip += QStringLiteral("The target machine has no such device: its capacity is unknown.");
        if (!line.recordsNoDevice)
            tip += QStringLiteral("<br><i>Drop tensors or modules here to plan them onto %1.</i>")
                       .arg(tag.toHtmlEscaped());
        return tip;
    }
    default:
        return {};
    }
}

QVariant DeviceModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (section == 0 && orientation == Qt::Horizontal && role == Qt::DisplayRole)
        return tr("Device");
    return {};
}

Qt::ItemFlags DeviceModel::flags(const QModelIndex& index) const
{
    if (!index.isValid())
        return Qt::NoItemFlags;
    // "(none)" is not a device: a drop there would plan storages onto a tag torch cannot restore.
    if (index.data(RecordsNoDeviceRole).toBool())
        return Qt::ItemIsEnabled | Qt::ItemIsSelectable | Qt::ItemNeverHasChildren;
    return Qt::ItemIsEnabled | Qt::ItemIsSelectable | Qt::ItemIsDropEnabled | Qt::ItemNeverHasChildren;
}

QHash<int, QByteArray> DeviceModel::roleNames() const
{
    QHash<int, QByteArray> names = QAbstractListModel::roleNames();
    names.insert(TagRole, "tag");
    names.insert(NameRole, "name");
    names.insert(CapacityRole, "capacity");
    names.insert(PlannedBytesRole, "plannedBytes");
    names.insert(RecordedBytesRole, "recordedBytes");
    names.insert(ContextBytesRole, "contextBytes");
    names.insert(HeadroomRole, "headroom");
    names.insert(OverCapacityRole, "overCapacity");
    names.insert(InTargetRole, "inTarget");
    names.insert(StorageCountRole, "storageCount");
    names.insert(RecordsNoDeviceRole, "recordsNoDevice");
    return names;
}

QStringList DeviceModel::mimeTypes() const
{
    return {QString::fromLatin1(kPlacementMimeType)};
}

Qt::DropActions DeviceModel::supportedDropActions() const
{
    // The tree offers its items as a copy or a move; either means "plan them onto this device".
    return Qt::CopyAction | Qt::MoveAction | Qt::LinkAction;
}

int DeviceModel::dropRow(int row, const QModelIndex& parent) const
{
    if (parent.isValid())
        return parent.row();
    if (row >= 0 && row < rowCount())
        return row;
    return -1;
}

bool DeviceModel::canDropMimeData(
    const QMimeData* data, Qt::DropAction action, int row, int column, const QModelIndex& parent) const
{
    Q_UNUSED(column);
    if (!document() || !data || action == Qt::IgnoreAction
        || !data->hasFormat(QString::fromLatin1(kPlacementMimeType)))
        return false;
    const int target = dropRow(row, parent);
    return target >= 0 && !index(target).data(RecordsNoDeviceRole).toBool();
}

bool DeviceModel::dropMimeData(
    const QMimeData* data, Qt::DropAction action, int row, int column, const QModelIndex& parent)
{
    if (!canDropMimeData(data, action, row, column, parent))
        return false;
    const std::optional<MoveReport> report = dropOnDevice(document(), data, tagAt(dropRow(row, parent)));
    if (!report)
        return false;
    m_lastMoveReport = *report;
    Q_EMIT moved(report->text);
    // The plan changed through the document; nothing for the view to remove from its source.
    return true;
}

QString DeviceModel::moveDescription(const std::vector<PlacementRule>& rules, const QString& tag)
{
    if (rules.size() == 1) {
        const QString subject = QString::fromStdString(rules.front().subject);
        return tr("Move %1 to %2").arg(subject.isEmpty() ? tr("everything") : subject, tag);
    }
    return tr("Move %1 items to %2").arg(rules.size()).arg(tag);
}

std::optional<MoveReport> DeviceModel::dropOnDevice(
    CheckpointDocument* document, const QMimeData* data, const QString& tag)
{
    if (!document || !data || tag.isEmpty())
        return std::nullopt;
    const std::vector<PlacementRule> rules = CheckpointDocument::rulesFromMimeData(
        data->data(QString::fromLatin1(kPlacementMimeType)), tag.toStdString());
    if (rules.empty())
        return std::nullopt;
    return document->move(rules, moveDescription(rules, tag));
}

} // namespace ckpt
