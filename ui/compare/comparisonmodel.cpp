// SPDX-License-Identifier: MIT
#include "ui/compare/comparisonmodel.h"

#include "core/model/checkpoint.h"
#include "ui/compare/comparisonjob.h"

#include <QColor>
#include <QLocale>

#include <unordered_map>

namespace ckpt {

namespace {

QString shapeText(const std::vector<std::int64_t>& values)
{
    QStringList parts;
    for (std::int64_t value : values)
        parts << QString::number(value);
    return u'[' + parts.join(u", "_qs) + u']';
}

// "float32 [16, 8] on cuda:1" (the stride only where it is what changed).
QString describe(const TensorEntry& tensor, bool withStride)
{
    QString text = QString::fromStdString(tensor.dtype) + u' ' + shapeText(tensor.shape);
    if (withStride && tensor.stride)
        text += u" stride "_qs + shapeText(*tensor.stride);
    if (tensor.device)
        text += u" on "_qs + QString::fromStdString(*tensor.device);
    return text;
}

const TensorEntry& entryOf(const DiffTensor& tensor)
{
    return tensor.checkpoint->tensors[tensor.tensor];
}

QString formatDifference(double value)
{
    return QString::number(value, 'g', 6);
}

} // namespace

ComparisonModel::ComparisonModel(QObject* parent)
    : QAbstractTableModel(parent)
{ }

ComparisonModel::~ComparisonModel() = default;

QString ComparisonModel::kindText(unsigned kinds)
{
    static const std::pair<unsigned, const char*> names[] = {{ChangeAdded, "added"},
        {ChangeRemoved, "removed"}, {ChangeRenamed, "renamed"}, {ChangeDtype, "dtype"},
        {ChangeShape, "shape"}, {ChangeStride, "stride"}, {ChangeDevice, "device"}, {ChangeValues, "values"}};
    QStringList parts;
    for (const auto& [kind, name] : names)
        if (kinds & kind)
            parts << tr(name);
    return parts.join(u", "_qs);
}

void ComparisonModel::clear()
{
    beginResetModel();
    m_rows.clear();
    m_comparison.reset();
    endResetModel();
}

void ComparisonModel::setComparison(std::shared_ptr<const Comparison> comparison)
{
    beginResetModel();
    m_rows.clear();
    m_comparison = std::move(comparison);
    if (m_comparison) {
        const Comparison& c = *m_comparison;
        std::unordered_map<std::string, const DiffTensor*> inA, inB;
        for (const DiffTensor& tensor : c.a.tensors)
            inA.emplace(entryOf(tensor).name, &tensor);
        for (const DiffTensor& tensor : c.b.tensors)
            inB.emplace(entryOf(tensor).name, &tensor);
        const QString absent = QStringLiteral("—");
        for (const std::string& name : c.diff.removed) {
            Row row;
            row.kinds = ChangeRemoved;
            row.name = QString::fromStdString(name);
            const DiffTensor* tensor = inA.at(name);
            row.before = describe(entryOf(*tensor), false);
            row.after = absent;
            row.tensorInA = tensor->sideIndex;
            m_rows.push_back(std::move(row));
        }
        for (const std::string& name : c.diff.added) {
            Row row;
            row.kinds = ChangeAdded;
            row.name = QString::fromStdString(name);
            row.before = absent;
            row.after = describe(entryOf(*inB.at(name)), false);
            m_rows.push_back(std::move(row));
        }
        for (const RenamedTensor& renamed : c.diff.renamed) {
            Row row;
            row.kinds = ChangeRenamed;
            row.name = QString::fromStdString(renamed.from) + u" → "_qs + QString::fromStdString(renamed.to);
            const DiffTensor* from = inA.at(renamed.from);
            row.before = describe(entryOf(*from), false);
            row.after = describe(entryOf(*inB.at(renamed.to)), false);
            row.tensorInA = from->sideIndex;
            row.note = tr("The same dtype, shape and bytes under another name");
            m_rows.push_back(std::move(row));
        }
        for (std::size_t k = 0; k < c.diff.changed.size(); ++k) {
            const TensorChange& change = c.diff.changed[k];
            Row row;
            row.kinds = (change.dtypeChanged ? ChangeDtype : 0u) | (change.shapeChanged ? ChangeShape : 0u)
                | (change.strideChanged ? ChangeStride : 0u) | (change.deviceChanged ? ChangeDevice : 0u)
                | (change.valueChanged ? ChangeValues : 0u);
            row.name = QString::fromStdString(change.name);
            row.before = describe(entryOf(change.a), change.strideChanged);
            row.after = describe(entryOf(change.b), change.strideChanged);
            row.tensorInA = change.a.sideIndex;
            if (k < c.deltas.size() && c.deltas[k]) {
                row.maxAbsolute = c.deltas[k]->maxAbsolute;
                row.maxRelative = c.deltas[k]->maxRelative;
                row.note = tr("%1 of %2 values differ")
                               .arg(QLocale().toString(qulonglong(c.deltas[k]->differing)),
                                   QLocale().toString(qulonglong(c.deltas[k]->count)));
            } else if (k < c.deltaErrors.size() && !c.deltaErrors[k].isEmpty()) {
                row.note = c.deltaErrors[k];
            } else if (!change.valueNotCompared.empty()) {
                row.note = tr("Values not compared: %1").arg(QString::fromStdString(change.valueNotCompared));
            }
            m_rows.push_back(std::move(row));
        }
    }
    endResetModel();
}

int ComparisonModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : static_cast<int>(m_rows.size());
}

int ComparisonModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant ComparisonModel::data(const QModelIndex& index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const Row& row = m_rows[static_cast<std::size_t>(index.row())];
    switch (role) {
    case Qt::DisplayRole:
        switch (index.column()) {
        case KindColumn:
            return kindText(row.kinds);
        case NameColumn:
            return row.name;
        case BeforeColumn:
            return row.before;
        case AfterColumn:
            return row.after;
        case MaxAbsoluteColumn:
            return row.maxAbsolute ? formatDifference(*row.maxAbsolute) : QString();
        case MaxRelativeColumn:
            return row.maxRelative ? formatDifference(*row.maxRelative) : QString();
        }
        return {};
    case SortRole:
        switch (index.column()) {
        case KindColumn:
            return row.kinds;
        case MaxAbsoluteColumn:
            return row.maxAbsolute.value_or(-1.0);
        case MaxRelativeColumn:
            return row.maxRelative.value_or(-1.0);
        default:
            return data(index, Qt::DisplayRole);
        }
    case Qt::ToolTipRole:
        return row.note.isEmpty() ? QVariant() : QVariant(row.note);
    case Qt::TextAlignmentRole:
        if (index.column() == MaxAbsoluteColumn || index.column() == MaxRelativeColumn)
            return QVariant(Qt::AlignRight | Qt::AlignVCenter);
        return {};
    case Qt::ForegroundRole:
        if (index.column() == KindColumn) {
            if (row.kinds & ChangeAdded)
                return QColor(0x2e, 0x7d, 0x32);
            if (row.kinds & ChangeRemoved)
                return QColor(0xc6, 0x28, 0x28);
            if (row.kinds & (ChangeDtype | ChangeShape))
                return QColor(0xb2, 0x5b, 0x00);
        }
        return {};
    case KindsRole:
        return row.kinds;
    case TensorInARole:
        return row.tensorInA ? QVariant(static_cast<uint>(*row.tensorInA)) : QVariant();
    }
    return {};
}

QVariant ComparisonModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case KindColumn:
        return tr("Change");
    case NameColumn:
        return tr("Tensor");
    case BeforeColumn:
        return tr("Open checkpoint");
    case AfterColumn:
        return tr("Other");
    case MaxAbsoluteColumn:
        return tr("Max |Δ|");
    case MaxRelativeColumn:
        return tr("Max rel. Δ");
    }
    return {};
}

ComparisonFilterModel::ComparisonFilterModel(QObject* parent)
    : QSortFilterProxyModel(parent)
{
    setSortRole(ComparisonModel::SortRole);
}

void ComparisonFilterModel::setKinds(unsigned kinds)
{
    if (kinds == m_kinds)
        return;
    m_kinds = kinds;
    invalidateRowsFilter();
}

bool ComparisonFilterModel::filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const
{
    const QModelIndex index = sourceModel()->index(sourceRow, 0, sourceParent);
    return (sourceModel()->data(index, ComparisonModel::KindsRole).toUInt() & m_kinds) != 0;
}

} // namespace ckpt
