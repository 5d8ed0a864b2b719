// SPDX-License-Identifier: MIT
#include "ui/models/memorytablemodel.h"

#include "ui/models/devicemodel.h"

#include <algorithm>

namespace ckpt {

namespace {
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
}

MemoryTableModel::MemoryTableModel(CheckpointDocument* document, QObject* parent)
    : LedgerModelBase(parent)
{
    setDocument(document);
}

int MemoryTableModel::rowCount(const QModelIndex& parent) const
{
    return ledgerRowCount(parent);
}

int MemoryTableModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

std::uint64_t MemoryTableModel::bytes(int row, int column) const
{
    const DeviceLedgerLine& line = lines()[static_cast<std::size_t>(row)];
    switch (column) {
    case RecordedColumn:
        return line.recordedBytes;
    case PlannedColumn:
        return line.plannedBytes;
    case ContextColumn:
        return line.contextBytes;
    case CapacityColumn:
        return line.capacity.value_or(0);
    default:
        return 0;
    }
}

QVariant MemoryTableModel::data(const QModelIndex& index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const DeviceLedgerLine& line = lines()[static_cast<std::size_t>(index.row())];
    switch (role) {
    case Qt::DisplayRole:
    case Qt::EditRole:
        return double(bytes(index.row(), index.column())) / m_bytesPerUnit;
    case BytesRole:
        return qulonglong(bytes(index.row(), index.column()));
    case OverCapacityRole:
        return line.overCapacity();
    case TagRole:
        return QString::fromStdString(line.tag);
    case Qt::ToolTipRole:
        if (index.column() == CapacityColumn && !line.capacity)
            return tr("The target machine has no %1: its capacity is unknown.")
                .arg(QString::fromStdString(line.tag));
        return QStringLiteral("%1: %2").arg(
            QString::fromStdString(line.tag), formatByteSize(bytes(index.row(), index.column())));
    case Qt::TextAlignmentRole:
        return QVariant(Qt::AlignRight | Qt::AlignVCenter);
    default:
        return {};
    }
}

QVariant MemoryTableModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation == Qt::Vertical) {
        if (role == Qt::DisplayRole && section >= 0 && section < rowCount())
            return tagAt(section);
        return {};
    }
    if (role == Qt::DisplayRole) {
        switch (section) {
        case RecordedColumn:
            return tr("Recorded (%1)").arg(m_unitName);
        case PlannedColumn:
            return tr("Planned (%1)").arg(m_unitName);
        case ContextColumn:
            return tr("CUDA context, assumed (%1)").arg(m_unitName);
        case CapacityColumn:
            return tr("Capacity (%1)").arg(m_unitName);
        default:
            return {};
        }
    }
    if (role == Qt::ToolTipRole) {
        switch (section) {
        case RecordedColumn:
            return tr("Recorded: what the file says now (the device each storage was saved from).");
        case PlannedColumn:
            return tr("Planned: what will land on this device when the saved copy is loaded.");
        case ContextColumn:
            return tr("Memory the CUDA runtime takes on every GPU torch touches: an assumption, not a "
                      "measurement.");
        case CapacityColumn:
            return tr("Total memory of the device on the target machine (0 when unknown).");
        default:
            return {};
        }
    }
    return {};
}

Qt::ItemFlags MemoryTableModel::flags(const QModelIndex& index) const
{
    if (!index.isValid())
        return Qt::NoItemFlags;
    return Qt::ItemIsEnabled | Qt::ItemIsSelectable | Qt::ItemNeverHasChildren;
}

bool MemoryTableModel::overCapacity(int row) const
{
    return row >= 0 && row < rowCount() && lines()[static_cast<std::size_t>(row)].overCapacity();
}

void MemoryTableModel::setUnit(double bytesPerUnit, const QString& name)
{
    if (bytesPerUnit == m_bytesPerUnit && name == m_unitName)
        return;
    m_bytesPerUnit = bytesPerUnit;
    m_unitName = name;
    if (rowCount() > 0)
        Q_EMIT dataChanged(index(0, 0), index(rowCount() - 1, ColumnCount - 1));
    // No headerDataChanged: QVBarModelMapper reacts to it by rebuilding its bar sets, which
    // crashes Qt Charts 6.4; the chart names its series itself and views ask for headers anew.
}

std::uint64_t MemoryTableModel::largestCheckpointBytes() const
{
    std::uint64_t most = 0;
    for (int row = 0; row < rowCount(); ++row)
        most = std::max({most, bytes(row, RecordedColumn), bytes(row, PlannedColumn)});
    return most;
}

std::uint64_t MemoryTableModel::largestBytes() const
{
    std::uint64_t most = 0;
    for (int row = 0; row < rowCount(); ++row)
        for (int column = 0; column < ColumnCount; ++column)
            most = std::max(most, bytes(row, column));
    return most;
}

double MemoryTableModel::maximumGiB() const
{
    std::uint64_t most = 0;
    for (int row = 0; row < rowCount(); ++row)
        for (int column = 0; column < ColumnCount; ++column)
            most = std::max(most, bytes(row, column));
    return double(most) / kGiB;
}

} // namespace ckpt
