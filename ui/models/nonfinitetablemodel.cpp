// SPDX-License-Identifier: MIT
#include "ui/models/nonfinitetablemodel.h"

namespace ckpt {

NonFiniteTableModel::NonFiniteTableModel(QObject* parent)
    : QAbstractTableModel(parent)
{ }

void NonFiniteTableModel::setTensors(std::vector<ScannedTensor> tensors)
{
    beginResetModel();
    m_tensors = std::move(tensors);
    endResetModel();
}

const ScannedTensor* NonFiniteTableModel::tensorAt(const QModelIndex& index) const
{
    if (!index.isValid() || index.model() != this || index.row() >= rowCount())
        return nullptr;
    return &m_tensors[static_cast<std::size_t>(index.row())];
}

int NonFiniteTableModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : static_cast<int>(m_tensors.size());
}

int NonFiniteTableModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant NonFiniteTableModel::data(const QModelIndex& index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const ScannedTensor& tensor = m_tensors[static_cast<std::size_t>(index.row())];
    const TensorValues& values = tensor.values;
    if (role == TensorIndexRole)
        return QVariant::fromValue<uint>(tensor.tensor);
    if (role == Qt::TextAlignmentRole && index.column() != NameColumn)
        return QVariant::fromValue<int>(Qt::AlignRight | Qt::AlignVCenter);
    if (role == Qt::ToolTipRole)
        return tr("%1: %2 NaN, %3 +Inf, %4 −Inf among %5 values; click for its histogram of the finite ones")
            .arg(tensor.name)
            .arg(values.nanCount)
            .arg(values.positiveInfinityCount)
            .arg(values.negativeInfinityCount)
            .arg(values.count);
    if (role != Qt::DisplayRole && role != Qt::AccessibleTextRole)
        return {};
    switch (index.column()) {
    case NameColumn:
        return tensor.name;
    case NanColumn:
        return QVariant::fromValue<qulonglong>(values.nanCount);
    case PositiveInfinityColumn:
        return QVariant::fromValue<qulonglong>(values.positiveInfinityCount);
    case NegativeInfinityColumn:
        return QVariant::fromValue<qulonglong>(values.negativeInfinityCount);
    case NonFiniteColumn:
        return QVariant::fromValue<qulonglong>(values.nonFiniteCount());
    case CountColumn:
        return QVariant::fromValue<qulonglong>(values.count);
    }
    return {};
}

QVariant NonFiniteTableModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || section < 0 || section >= ColumnCount)
        return {};
    if (role == Qt::DisplayRole) {
        static const char* const titles[] = {"Tensor", "NaN", "+Inf", "−Inf", "Not finite", "Values"};
        return tr(titles[section]);
    }
    if (role == Qt::ToolTipRole && section == NonFiniteColumn)
        return tr("NaN, +Inf and −Inf together; the list starts with the tensor holding the most");
    return {};
}

} // namespace ckpt
