// SPDX-License-Identifier: MIT
#include "ui/models/tensorfilterproxymodel.h"

#include "ui/document/checkpointdocument.h"
#include "ui/jobs/jobtracker.h"
#include "ui/models/tensorfilter.h"
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
    , m_jobs(new JobTracker(this))
{
    // The flags already keep the ancestors and descendants of a match: Qt's recursive filtering
    // would ask every row of the tree, and every row of a module the first time it changes.
    setRecursiveFilteringEnabled(false);
    setAutoAcceptChildRows(false);
    setSortRole(TensorTreeModel::SortRole);
    setFilterCaseSensitivity(Qt::CaseInsensitive);
    // A new model (a new document) makes the flags of the old one meaningless.
    connect(this, &QAbstractProxyModel::sourceModelChanged, this, [this] {
        if (auto* model = qobject_cast<TensorTreeModel*>(sourceModel()))
            connect(model->document(), &CheckpointDocument::placementChanged, this, [this] {
                // Planned devices changed: a device filter must look again.
                if (!m_needle.isEmpty() && m_field != Field::Name && m_field != Field::DType)
                    applyFilter();
            });
        applyFilter();
    });
}

bool TensorFilterProxyModel::isFiltering() const
{
    return m_jobs->isRunning();
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
    applyFilter();
}

void TensorFilterProxyModel::applyFilter()
{
    auto* model = qobject_cast<TensorTreeModel*>(sourceModel());
    if (m_needle.isEmpty() || !model) {
        m_jobs->reset();
        install({});
        return;
    }
    TensorFilterQuery query;
    query.field = static_cast<TensorFilterQuery::Field>(m_field);
    query.needle = m_needle;
    const CheckpointDocument* document = model->document();
    const Checkpoint& checkpoint = document->checkpoint();
    if (m_field == Field::Any || m_field == Field::Device) {
        // The plan changes under the person's hand: its devices are copied here, as tag indices.
        model->deviceTagsOfTensors(query.tags, query.recordedTag, query.plannedTag);
    }
    if (checkpoint.tree.size() <= m_backgroundThreshold) {
        m_jobs->reset();
        install(matchTensorFilter(checkpoint, query));
        return;
    }
    m_jobs->start(
        [checkpoint = document->sharedCheckpoint(), query = std::move(query)](JobProgress& progress) {
            return matchTensorFilter(*checkpoint, query, [&progress] { return !progress.cancelled; });
        },
        [this](const std::vector<char>& shown) { install(shown); });
}

void TensorFilterProxyModel::install(std::vector<char> shown)
{
    m_shown = std::move(shown);
    invalidateFilter();
    Q_EMIT filterApplied();
}

bool TensorFilterProxyModel::filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const
{
    if (m_needle.isEmpty() || m_shown.empty())
        return true; // no needle, or its first match is still running: everything
    const QModelIndex row = sourceModel()->index(sourceRow, 0, sourceParent);
    const std::size_t node = row.internalId();
    return node < m_shown.size() && m_shown[node];
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
