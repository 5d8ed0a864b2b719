// SPDX-License-Identifier: MIT
#pragma once

#include <QAbstractTableModel>

#include <cstdint>
#include <vector>

namespace ckpt {

// A histogram as a table: one row per bin, its lower and upper edge and its count. What the
// values chart reads through a QVBarModelMapper.
class HistogramTableModel : public QAbstractTableModel {
    Q_OBJECT

public:
    enum Column { CountColumn, LowColumn, HighColumn, ColumnCount };

    explicit HistogramTableModel(QObject* parent = nullptr);

    // Equal-width bins from `low` to `high`; empty counts: no histogram.
    void setHistogram(double low, double high, std::vector<std::uint64_t> counts);
    double low() const { return m_low; }
    double high() const { return m_high; }
    std::uint64_t maximumCount() const;
    double edge(int bin) const;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    double m_low = 0, m_high = 0;
    std::vector<std::uint64_t> m_counts;
};

} // namespace ckpt
