// SPDX-License-Identifier: MIT
#pragma once

#include <QSortFilterProxyModel>

#include <vector>

namespace ckpt {

class JobTracker;

// Filters and sorts the tensor tree. A row stays when it or something below it matches (so the
// path to a match stays visible), and everything below a matching module stays too. Which rows
// stay is worked out once per filter text over the whole tree (matchTensorFilter), in a job when
// the tree is large, so typing never blocks the window; filterAcceptsRow() then reads one flag,
// and only the rows of expanded modules are ever asked (no recursive filtering). Sorting reads
// TensorTreeModel::SortRole: bytes for the Size column, names in natural order ("layers.2" before
// "layers.10") otherwise.
class TensorFilterProxyModel : public QSortFilterProxyModel {
    Q_OBJECT

public:
    enum class Field { Any, Name, DType, Device };

    explicit TensorFilterProxyModel(QObject* parent = nullptr);

    // Case-insensitive substring of the dotted name, the dtype, or the recorded or planned device.
    // "device:cuda:1", "dtype:bfloat16" or "name:exp_avg" look at one field only. Empty shows all.
    void setFilterText(const QString& text);
    QString filterText() const { return m_text; }
    // Trees with more nodes than this filter in a job (filterApplied() says when it is done).
    void setBackgroundThreshold(std::size_t nodes) { m_backgroundThreshold = nodes; }
    bool isFiltering() const;

Q_SIGNALS:
    void filterApplied(); // the rows shown now follow filterText()

protected:
    bool filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const override;
    bool lessThan(const QModelIndex& left, const QModelIndex& right) const override;

private:
    void applyFilter();
    void install(std::vector<char> shown);

    QString m_text;
    std::vector<char> m_shown; // per tree node, while a needle is set
    std::size_t m_backgroundThreshold = 50000;
    JobTracker* m_jobs = nullptr;
    Field m_field = Field::Any;
    QString m_needle;
};

} // namespace ckpt
