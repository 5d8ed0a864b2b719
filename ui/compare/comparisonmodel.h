// SPDX-License-Identifier: MIT
#pragma once

#include <QAbstractTableModel>
#include <QSortFilterProxyModel>
#include <QString>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace ckpt {

struct Comparison;

// What happened to a tensor between the open checkpoint (A) and the other (B). A tensor changed in
// several ways carries several kinds.
enum ChangeKind : unsigned {
    ChangeAdded = 1u << 0, // only in B
    ChangeRemoved = 1u << 1, // only in A
    ChangeRenamed = 1u << 2, // the same dtype, shape and bytes under another name
    ChangeDtype = 1u << 3,
    ChangeShape = 1u << 4,
    ChangeStride = 1u << 5,
    ChangeDevice = 1u << 6, // the recorded device
    ChangeValues = 1u << 7, // the same dtype and shape, other bytes
};
constexpr unsigned kEveryChange = 0xffu;

// One row per tensor that differs (unchanged tensors are only counted), flat and sortable: the
// change, the name, the tensor in A and in B, and for float tensors whose values moved the largest
// absolute and relative difference.
class ComparisonModel : public QAbstractTableModel {
    Q_OBJECT

public:
    enum Column {
        KindColumn,
        NameColumn,
        BeforeColumn,
        AfterColumn,
        MaxAbsoluteColumn,
        MaxRelativeColumn,
        ColumnCount
    };
    enum Role {
        KindsRole = Qt::UserRole + 1, // unsigned: ChangeKind bits
        SortRole, // numbers as numbers, names as text
        TensorInARole, // the tensor's index in A (its tree), or invalid for tensors only B has
    };

    explicit ComparisonModel(QObject* parent = nullptr);
    ~ComparisonModel() override;

    void setComparison(std::shared_ptr<const Comparison> comparison);
    void clear();
    std::shared_ptr<const Comparison> comparison() const { return m_comparison; }

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    static QString kindText(unsigned kinds); // "dtype, values"

private:
    struct Row {
        unsigned kinds = 0;
        QString name; // B's name for added tensors, "A → B" for renames
        QString before, after;
        std::optional<std::uint32_t> tensorInA;
        std::optional<double> maxAbsolute, maxRelative;
        QString note; // why values were not measured or compared
    };
    std::shared_ptr<const Comparison> m_comparison;
    std::vector<Row> m_rows;
};

// Rows of the chosen kinds (a row shows when it has any of them), sorted by SortRole.
class ComparisonFilterModel : public QSortFilterProxyModel {
    Q_OBJECT

public:
    explicit ComparisonFilterModel(QObject* parent = nullptr);
    void setKinds(unsigned kinds);
    unsigned kinds() const { return m_kinds; }

protected:
    bool filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const override;

private:
    unsigned m_kinds = kEveryChange;
};

} // namespace ckpt
