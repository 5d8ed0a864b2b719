#include "ui/models/tensorfilterproxymodel.h"

#include "ui/models/tensortreemodel.h"

namespace ckpt {

namespace {

// Natural order: digit runs compare as numbers, the rest case-insensitively. QCollator's numeric
// mode does the same but costs far more per comparison, and a flat state_dict sorts a million names.
int naturalCompare(const QString& a, const QString& b)
{
    qsizetype i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
        if (a[i].isDigit() && b[j].isDigit()) {
            qsizetype endA = i, endB = j;
            while (endA < a.size() && a[endA].isDigit())
                ++endA;
            while (endB < b.size() && b[endB].isDigit())
                ++endB;
            // Skip leading zeros, then the longer run is the larger number.
            qsizetype startA = i, startB = j;
            while (startA + 1 < endA && a[startA] == QLatin1Char('0'))
                ++startA;
            while (startB + 1 < endB && b[startB] == QLatin1Char('0'))
                ++startB;
            if (endA - startA != endB - startB)
                return endA - startA < endB - startB ? -1 : 1;
            for (qsizetype k = 0; k < endA - startA; ++k)
                if (a[startA + k] != b[startB + k])
                    return a[startA + k] < b[startB + k] ? -1 : 1;
            i = endA;
            j = endB;
            continue;
        }
        const QChar x = a[i].toCaseFolded(), y = b[j].toCaseFolded();
        if (x != y)
            return x < y ? -1 : 1;
        ++i;
        ++j;
    }
    if (i < a.size())
        return 1;
    if (j < b.size())
        return -1;
    return QString::compare(a, b); // only case differs: keep the order stable
}

} // namespace

TensorFilterProxyModel::TensorFilterProxyModel(QObject* parent)
    : QSortFilterProxyModel(parent)
{
    setRecursiveFilteringEnabled(true);
    setAutoAcceptChildRows(true);
    setSortRole(TensorTreeModel::SortRole);
    setFilterCaseSensitivity(Qt::CaseInsensitive);
}

void TensorFilterProxyModel::setFilterText(const QString& text)
{
    if (text == m_text)
        return;
    m_text = text;
    const QString trimmed = text.trimmed();
    m_field = Field::Any;
    m_needle = trimmed;
    static const std::pair<const char*, Field> prefixes[]
        = {{"device:", Field::Device}, {"dtype:", Field::DType}, {"name:", Field::Name}};
    for (const auto& [prefix, field] : prefixes) {
        if (trimmed.startsWith(QLatin1String(prefix), Qt::CaseInsensitive)) {
            m_field = field;
            m_needle = trimmed.mid(qsizetype(qstrlen(prefix))).trimmed();
            break;
        }
    }
    invalidateFilter();
}

bool TensorFilterProxyModel::filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const
{
    if (m_needle.isEmpty())
        return true;
    const QAbstractItemModel* model = sourceModel();
    const QModelIndex row = model->index(sourceRow, 0, sourceParent);
    const auto contains
        = [this](const QVariant& value) { return value.toString().contains(m_needle, Qt::CaseInsensitive); };

    if (m_field == Field::Any || m_field == Field::Name)
        if (contains(row.data(TensorTreeModel::PathRole)))
            return true;
    // Types and devices select tensors: a module matches through them (recursive filtering),
    // not by a summary such as "mixed".
    if (row.data(TensorTreeModel::TensorIndexRole).toInt() < 0)
        return false;
    if (m_field == Field::Any || m_field == Field::DType)
        if (contains(model->index(sourceRow, TensorTreeModel::DTypeColumn, sourceParent).data()))
            return true;
    if (m_field == Field::Any || m_field == Field::Device)
        if (contains(row.data(TensorTreeModel::RecordedDeviceRole))
            || contains(row.data(TensorTreeModel::PlannedDeviceRole)))
            return true;
    return false;
}

bool TensorFilterProxyModel::lessThan(const QModelIndex& left, const QModelIndex& right) const
{
    const QVariant a = left.data(sortRole());
    const QVariant b = right.data(sortRole());
    if (a.typeId() == QMetaType::QString && b.typeId() == QMetaType::QString)
        return naturalCompare(a.toString(), b.toString()) < 0;
    return QSortFilterProxyModel::lessThan(left, right);
}

} // namespace ckpt
