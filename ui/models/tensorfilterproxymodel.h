#pragma once

#include <QSortFilterProxyModel>

namespace ckpt {

// Filters and sorts the tensor tree. A row stays when it or something below it matches (so the
// path to a match stays visible), and everything below a matching module stays too. Sorting reads
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

protected:
    bool filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const override;
    bool lessThan(const QModelIndex& left, const QModelIndex& right) const override;

private:
    QString m_text;
    Field m_field = Field::Any;
    QString m_needle;
};

} // namespace ckpt
