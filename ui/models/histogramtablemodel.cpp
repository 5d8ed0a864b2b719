// SPDX-License-Identifier: MIT
#include "ui/models/histogramtablemodel.h"

#include <algorithm>

namespace ckpt {

namespace {

QString number(double value)
{
    return QString::number(value, 'g', 5);
}

} // namespace

HistogramTableModel::HistogramTableModel(QObject* parent)
    : QAbstractTableModel(parent)
{ }

void HistogramTableModel::setHistogram(double low, double high, std::vector<std::uint64_t> counts)
{
    beginResetModel();
    m_low = low;
    m_high = high;
    m_counts = std::move(counts);
    endResetModel();
}

std::uint64_t HistogramTableModel::maximumCount() const
{
    return m_counts.empty() ? 0 : *std::max_element(m_counts.begin(), m_counts.end());
}

double HistogramTableModel::edge(int bin) const
{
    if (m_counts.empty())
        return m_low;
    return m_low + (m_high - m_low) * double(bin) / double(m_counts.size());
}

int HistogramTableModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : static_cast<int>(m_counts.size());
}

int HistogramTableModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant HistogramTableModel::data(const QModelIndex& index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    if (role != Qt::DisplayRole && role != Qt::EditRole && role != Qt::ToolTipRole)
        return {};
    const int bin = index.row();
    const std::uint64_t count = m_counts[static_cast<std::size_t>(bin)];
    if (role == Qt::ToolTipRole) {
        const bool last = static_cast<std::size_t>(bin) + 1 == m_counts.size();
        return tr("%1 value(s) in [%2, %3%4")
            .arg(count)
            .arg(number(edge(bin)), number(edge(bin + 1)), last ? QStringLiteral("]") : QStringLiteral(")"));
    }
    switch (index.column()) {
    case CountColumn:
        return double(count); // the chart wants a number it can scale
    case LowColumn:
        return edge(bin);
    case HighColumn:
        return edge(bin + 1);
    }
    return {};
}

QVariant HistogramTableModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (role != Qt::DisplayRole)
        return {};
    if (orientation == Qt::Vertical)
        return section >= 0 && section < rowCount() ? QVariant(number(edge(section))) : QVariant();
    switch (section) {
    case CountColumn:
        return tr("Values");
    case LowColumn:
        return tr("From");
    case HighColumn:
        return tr("To");
    }
    return {};
}

} // namespace ckpt
