// SPDX-License-Identifier: MIT
#pragma once

#include "ui/models/ledgermodelbase.h"

#include <QAbstractTableModel>

#include <vector>

namespace ckpt {

// Memory per device as a table, for the chart (QVBarModelMapper reads one column per bar set)
// and for anyone who wants the numbers: rows are the ledger's devices, cells are GiB as doubles.
class MemoryTableModel : public LedgerModelBase<QAbstractTableModel> {
    Q_OBJECT

public:
    enum Column { RecordedColumn, PlannedColumn, ContextColumn, CapacityColumn, ColumnCount };
    enum Role {
        BytesRole = Qt::UserRole + 1, // qulonglong: the cell in bytes
        OverCapacityRole, // bool, for the row's device
        TagRole, // QString, the row's device tag
    };

    explicit MemoryTableModel(CheckpointDocument* document, QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
    Qt::ItemFlags flags(const QModelIndex& index) const override;

    bool overCapacity(int row) const;
    double maximumGiB() const; // the largest cell, for the chart's axis
    // The unit the display values are in (GiB unless the chart zooms in on a small checkpoint):
    // changing it re-announces every cell.
    void setUnit(double bytesPerUnit, const QString& name);
    double bytesPerUnit() const { return m_bytesPerUnit; }
    QString unitName() const { return m_unitName; }
    std::uint64_t largestCheckpointBytes() const; // the largest recorded or planned cell
    std::uint64_t largestBytes() const; // the largest cell of any column

Q_SIGNALS:
    // After every refresh (dataChanged or reset), once the model is consistent again.
    void refreshed();

private:
    void rowsRefreshed() override { Q_EMIT refreshed(); }
    std::uint64_t bytes(int row, int column) const;

    double m_bytesPerUnit = 1024.0 * 1024.0 * 1024.0;
    QString m_unitName = QStringLiteral("GiB");
};

} // namespace ckpt
