// SPDX-License-Identifier: MIT
#pragma once

#include "ui/values/tensorvalues.h"

#include <QAbstractTableModel>

#include <vector>

namespace ckpt {

// The tensors a values scan found holding NaN or ±Inf, one row each. Counts are numbers in
// Qt::DisplayRole, so a QSortFilterProxyModel on top sorts them as numbers.
class NonFiniteTableModel : public QAbstractTableModel {
    Q_OBJECT

public:
    enum Column {
        NameColumn,
        NanColumn,
        PositiveInfinityColumn,
        NegativeInfinityColumn,
        NonFiniteColumn,
        CountColumn,
        ColumnCount
    };
    enum Role { TensorIndexRole = Qt::UserRole + 1 }; // uint: index into Checkpoint::tensors

    explicit NonFiniteTableModel(QObject* parent = nullptr);

    void setTensors(std::vector<ScannedTensor> tensors);
    const std::vector<ScannedTensor>& tensors() const { return m_tensors; }
    const ScannedTensor* tensorAt(const QModelIndex& index) const;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    std::vector<ScannedTensor> m_tensors;
};

} // namespace ckpt
