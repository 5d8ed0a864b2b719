// SPDX-License-Identifier: MIT
#include "ui/widgets/tensortreepanel.h"

#include "ui/base/devicecolors.h"
#include "ui/base/displaytext.h"
#include "ui/document/checkpointdocument.h"
#include "ui/models/tensorfilterproxymodel.h"
#include "ui/models/tensortreemodel.h"
#include "ui/widgets/loadsimulationbar.h"
#include "ui/widgets/onelinebanner.h"
#include "ui/widgets/safetybanner.h"
#include "ui/widgets/tensortreeview.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QTimer>
#include <QTreeView>
#include <QVBoxLayout>

#include <algorithm>
#include <set>

namespace ckpt {

TensorTreePanel::TensorTreePanel(QWidget* parent)
    : QWidget(parent)
{
    setObjectName(QStringLiteral("treePanel"));
    m_filterEdit = new QLineEdit(this);
    m_filterEdit->setObjectName(QStringLiteral("filterEdit"));
    m_filterEdit->setPlaceholderText(tr("Filter by name, dtype or device…"));
    m_filterEdit->setClearButtonEnabled(true);
    m_filterEdit->setAccessibleName(tr("Filter tensors"));
    m_filterEdit->setToolTip(
        tr("Shows tensors whose name, dtype or device contains the text, with their modules"));
    m_filterTimer = new QTimer(this);
    m_filterTimer->setSingleShot(true);
    m_filterTimer->setInterval(300);
    connect(m_filterEdit, &QLineEdit::textChanged, m_filterTimer, qOverload<>(&QTimer::start));
    connect(m_filterTimer, &QTimer::timeout, this,
        [this] { m_filterModel->setFilterText(m_filterEdit->text()); });

    m_filterModel = new TensorFilterProxyModel(this);
    m_view = new TensorTreeView(this);
    m_view->setObjectName(QStringLiteral("tensorTree"));
    m_view->setAccessibleName(tr("Tensors by module"));
    m_view->setToolTip(
        tr("Every tensor of the checkpoint. Recorded: the device torch.save wrote for its storage. Planned: "
           "where the remapped copy puts it. A storage is the block of bytes tensors view; tensors sharing a "
           "storage always move together.\nDrag rows onto a device card to plan them there."));
    m_view->setUniformRowHeights(true);
    m_view->setAlternatingRowColors(true);
    m_view->setSelectionMode(QAbstractItemView::ExtendedSelection);
    m_view->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_view->setDragEnabled(true);
    m_view->setDragDropMode(QAbstractItemView::DragOnly);
    m_view->setModel(m_filterModel);
    // No sort column at first: the file's own order, until a header is clicked.
    m_view->header()->setSortIndicator(-1, Qt::AscendingOrder);
    m_view->setSortingEnabled(true);
    m_view->header()->setStretchLastSection(false);
    connect(m_view->selectionModel(), &QItemSelectionModel::currentChanged, this,
        &TensorTreePanel::currentChanged);
    connect(m_view->selectionModel(), &QItemSelectionModel::selectionChanged, this,
        &TensorTreePanel::selectionChanged);

    // The colour legend of the tree: one swatch per device of the target and of the file.
    m_legendLabel = new QLabel(this);
    m_legendLabel->setObjectName(QStringLiteral("deviceLegend"));
    m_legendLabel->setAccessibleName(tr("Device colour legend"));
    m_legendLabel->setToolTip(
        tr("Rows are coloured by their planned device: where the storage will land when the "
           "saved copy is loaded. A module mixing devices shows stripes."));
    m_legendLabel->setTextFormat(Qt::RichText);
    m_legendLabel->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred); // cut, never wider

    // Above the tree, one line each (issue 27: the tree gets the room): the safety verdict, a
    // finding about the whole file (torch.load fails on the target, say), then the filter with the
    // legend beside it. Each line expands in place; the Findings dock has the full text.
    m_safetyBanner = new SafetyBanner(this);
    m_fileFindings = new OneLineBanner(QStringLiteral("fileFindings"), this);
    m_fileFindings->setAccessibleName(tr("Findings about the whole file"));
    auto* filterRow = new QHBoxLayout;
    filterRow->setContentsMargins(0, 0, 0, 0);
    filterRow->setSpacing(6);
    filterRow->addWidget(m_filterEdit, 3);
    filterRow->addWidget(m_legendLabel, 2);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(2);
    layout->addWidget(m_safetyBanner);
    layout->addWidget(m_fileFindings);
    layout->addLayout(filterRow);
    layout->addWidget(m_view, 1);
}

void TensorTreePanel::showFindings(const std::vector<Finding>& findings, std::size_t tensorCount)
{
    // Badges go on the rows a finding names, and only there (the model marks their ancestors
    // paler). A finding that names no tensor, or most of them (a torch.load that fails on most
    // storages fails for the file), is also said once above the tree, in one line that says what
    // it means here; its message expands in place and the Findings dock says why and what to do.
    std::vector<const Finding*> aboutFile;
    for (const Finding& finding : findings) {
        const bool wholeFile = finding.tensors.empty() || finding.tensors.size() * 2 > tensorCount;
        // Remarks stay in the Findings dock; the safety of the pickles is the banner's line.
        const bool aboutSafety = finding.code == FindingCode::UnsafePickle
            || finding.code == FindingCode::WeightsOnlyDangerous
            || finding.code == FindingCode::WeightsOnlyNeedsAllowlist
            || finding.code == FindingCode::WeightsOnlyLoads;
        if (wholeFile && finding.severity != Severity::Info && !aboutSafety)
            aboutFile.push_back(&finding);
    }
    std::stable_sort(aboutFile.begin(), aboutFile.end(),
        [](const Finding* a, const Finding* b) { return a->severity > b->severity; });
    if (m_model) {
        // A finding that names every tensor would put the same badge on every row, where it points
        // nowhere (issue 14): it is said above the tree only. One that names some rows, even most of
        // them, still marks those rows, as they differ from the rest.
        std::vector<Finding> rowFindings;
        for (const Finding& finding : findings)
            if (tensorCount == 0 || finding.tensors.size() < tensorCount)
                rowFindings.push_back(finding);
        m_model->setFindings(rowFindings);
    }
    if (aboutFile.empty()) {
        m_fileFindings->clear();
        return;
    }
    const Finding& first = *aboutFile.front();
    QString line = first.severity == Severity::Error ? tr("<b>&#10006; Whole file</b>: ")
                                                     : tr("<b>Whole file (warning)</b>: ");
    // What it means here, in a few words; torch's message is the expansion (and the Findings').
    if (first.code == FindingCode::LoadFails)
        line += tr("torch.load fails on the target");
    else
        line += displayHtml(first.codeId());
    if (!first.tensors.empty())
        line += tr(" for %1 of %2 tensors").arg(first.tensors.size()).arg(tensorCount);
    if (aboutFile.size() > 1)
        line += tr(" (and %n more)", nullptr, int(aboutFile.size() - 1));
    QStringList more;
    for (const Finding* finding : aboutFile) {
        if (more.size() >= 4)
            break;
        more << firstLineOf(finding->message).toHtmlEscaped();
    }
    m_fileFindings->present(
        first.severity == Severity::Error ? OneLineBanner::Tone::Danger : OneLineBanner::Tone::Caution, line,
        more.join(QStringLiteral("<br>")));
}

QString TensorTreePanel::fileFindingsText() const
{
    return m_fileFindings->isHidden() ? QString() : m_fileFindings->text();
}

void TensorTreePanel::setDocument(CheckpointDocument* document, TensorTreeModel* model)
{
    m_document = document;
    m_model = model;
    m_fileFindings->clear();
    m_filterModel->setSourceModel(model);
    updateLegend();
}

void TensorTreePanel::expandFirstLevels()
{
    if (!m_document)
        return;
    // Open the first levels; deeper ones on demand (a million rows must not be expanded here).
    const QModelIndex root = m_filterModel->index(0, 0);
    const int topRows = m_filterModel->rowCount();
    if (m_document->checkpoint().tensors.size() <= 5000)
        m_view->expandToDepth(topRows == 1 ? 2 : 1);
    else if (root.isValid())
        m_view->expand(root);
    m_view->header()->setSectionResizeMode(TensorTreeModel::NameColumn, QHeaderView::Stretch);
    const int widths[] = {0, 70, 90, 72, 80, 130};
    for (int column = 1; column < TensorTreeModel::ColumnCount; ++column) {
        m_view->header()->setSectionResizeMode(column, QHeaderView::Interactive);
        m_view->setColumnWidth(column, widths[column]);
    }
}

void TensorTreePanel::updateLegend()
{
    if (!m_document) {
        m_legendLabel->clear();
        return;
    }
    QStringList tags;
    for (const DeviceInfo& device : m_document->target().devices)
        tags.append(QString::fromStdString(device.tag));
    // A million storages on a handful of devices: compare the core's strings, convert each device once.
    std::vector<const OptionalInternedString*> devices;
    for (const StorageRecord& storage : m_document->checkpoint().storages)
        if (std::none_of(
                devices.begin(), devices.end(), [&](const auto* seen) { return *seen == storage.device; }))
            devices.push_back(&storage.device);
    for (const OptionalInternedString* device : devices) {
        const QString tag = QString::fromStdString(device->value_or("(none)"));
        if (!tags.contains(tag))
            tags.append(tag);
    }
    QString html = tr("Devices:") + QStringLiteral("&nbsp;");
    for (const QString& tag : std::as_const(tags))
        html += QStringLiteral("<span style=\"background-color:%1; color:%2\">&nbsp;%3&nbsp;</span>&nbsp; ")
                    .arg(deviceColor(tag).name(), deviceTextColor(tag).name(), tag.toHtmlEscaped());
    m_legendLabel->setText(html);
}

void TensorTreePanel::focusFilter()
{
    m_filterEdit->setFocus(Qt::ShortcutFocusReason);
    m_filterEdit->selectAll();
}

std::optional<std::uint32_t> TensorTreePanel::currentTreeNode() const
{
    const QModelIndex current = m_filterModel->mapToSource(m_view->currentIndex());
    if (!current.isValid() || !m_model)
        return std::nullopt;
    return current.data(TensorTreeModel::TreeNodeRole).toUInt();
}

bool TensorTreePanel::hasSelection() const
{
    return m_view->selectionModel()->hasSelection();
}

void TensorTreePanel::showAllRows()
{
    m_filterEdit->clear();
    m_filterTimer->stop();
    m_filterModel->setFilterText(QString());
}

void TensorTreePanel::selectTensor(std::uint32_t tensor)
{
    if (!m_model)
        return;
    QModelIndex index = m_filterModel->mapFromSource(m_model->indexForTensor(tensor));
    if (!index.isValid() && !m_filterEdit->text().isEmpty()) {
        showAllRows(); // it was filtered out
        index = m_filterModel->mapFromSource(m_model->indexForTensor(tensor));
    }
    if (!index.isValid())
        return;
    m_view->selectionModel()->setCurrentIndex(
        index, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    m_view->scrollTo(index);
}

std::size_t TensorTreePanel::selectTensors(const std::vector<std::uint32_t>& tensors)
{
    if (!m_model || tensors.empty())
        return 0;
    if (!m_filterEdit->text().isEmpty())
        showAllRows(); // some may be filtered out
    // Selecting is per row; past a few thousand rows the tree is no help anyway.
    constexpr std::size_t kMostSelected = 20000;
    QItemSelection selection;
    QModelIndex first;
    std::size_t selected = 0;
    for (const std::uint32_t tensor : tensors) {
        const QModelIndex index = m_filterModel->mapFromSource(m_model->indexForTensor(tensor));
        if (!index.isValid())
            continue;
        if (!first.isValid())
            first = index;
        selection.select(index, index);
        if (++selected == kMostSelected)
            break;
    }
    if (!first.isValid())
        return 0;
    m_view->selectionModel()->setCurrentIndex(first, QItemSelectionModel::NoUpdate);
    m_view->selectionModel()->select(
        selection, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    m_view->scrollTo(first);
    // Open the modules of the others too, so the selection can be seen.
    for (const QItemSelectionRange& range : std::as_const(selection)) {
        for (QModelIndex parent = range.topLeft().parent(); parent.isValid(); parent = parent.parent())
            if (!m_view->isExpanded(parent))
                m_view->expand(parent);
    }
    return selected;
}

std::size_t TensorTreePanel::selectTensorsSharingStorage()
{
    if (!m_document || !m_model)
        return 0;
    const Checkpoint& checkpoint = m_document->checkpoint();
    std::set<std::uint32_t> tensors;
    const QModelIndexList rows = m_view->selectionModel()->selectedRows();
    for (const QModelIndex& row : rows) {
        const int tensor = m_filterModel->mapToSource(row).data(TensorTreeModel::TensorIndexRole).toInt();
        if (tensor < 0)
            continue;
        const std::int32_t storage = checkpoint.tensors[static_cast<std::size_t>(tensor)].storage;
        if (storage < 0)
            continue;
        for (const std::uint32_t other : checkpoint.storages[static_cast<std::size_t>(storage)].tensors)
            tensors.insert(other);
    }
    QItemSelection selection;
    for (const std::uint32_t tensor : tensors) {
        const QModelIndex index = m_filterModel->mapFromSource(m_model->indexForTensor(tensor));
        if (index.isValid()) {
            selection.select(index, index);
            m_view->scrollTo(index);
        }
    }
    m_view->selectionModel()->select(selection, QItemSelectionModel::Select | QItemSelectionModel::Rows);
    return tensors.size();
}

} // namespace ckpt
