// SPDX-License-Identifier: MIT
#include "ui/compare/comparisondock.h"

#include "core/model/checkpoint.h"
#include "core/report/diffreport.h"
#include "ui/compare/comparisonjob.h"
#include "ui/compare/comparisonmodel.h"
#include "ui/dialogs/filedialogs.h"
#include "ui/document/checkpointdocument.h"
#include "ui/document/documentcontroller.h"
#include "ui/jobs/jobprogressdialog.h"
#include "ui/jobs/jobtracker.h"

#include <QComboBox>
#include <QDir>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMainWindow>
#include <QPushButton>
#include <QTreeView>
#include <QVBoxLayout>

#include <algorithm>

namespace ckpt {

namespace {

QString idleText()
{
    return ComparisonDock::tr(
        "Compare the open checkpoint with another file or folder (File > Compare With…)");
}

} // namespace

ComparisonDock::ComparisonDock(DocumentController* documents, QWidget* parent)
    : QDockWidget(tr("Comparison"), parent)
    , m_documents(documents)
    , m_jobs(new JobTracker(this))
    , m_model(new ComparisonModel(this))
    , m_filter(new ComparisonFilterModel(this))
{
    setObjectName(QStringLiteral("comparisonDock"));
    auto* body = new QWidget(this);
    m_summary = new QLabel(idleText(), body);
    m_summary->setObjectName(QStringLiteral("comparisonSummary"));
    m_summary->setWordWrap(true);
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_kindFilter = new QComboBox(body);
    m_kindFilter->setObjectName(QStringLiteral("comparisonKindFilter"));
    m_kindFilter->setAccessibleName(tr("Show changes of kind"));
    const std::pair<QString, unsigned> kinds[]
        = {{tr("Every change"), kEveryChange}, {tr("Added"), ChangeAdded}, {tr("Removed"), ChangeRemoved},
            {tr("Renamed"), ChangeRenamed}, {tr("Changed dtype"), ChangeDtype},
            {tr("Changed shape"), ChangeShape}, {tr("Changed stride"), ChangeStride},
            {tr("Changed device"), ChangeDevice}, {tr("Changed values"), ChangeValues}};
    for (const auto& [text, kind] : kinds)
        m_kindFilter->addItem(text, kind);
    connect(m_kindFilter, &QComboBox::currentIndexChanged, this,
        [this] { m_filter->setKinds(m_kindFilter->currentData().toUInt()); });
    m_fileButton = new QPushButton(tr("Compare With &File…"), body);
    m_fileButton->setObjectName(QStringLiteral("compareFileButton"));
    connect(m_fileButton, &QPushButton::clicked, this, &ComparisonDock::chooseFileAndCompare);
    m_folderButton = new QPushButton(tr("With F&older…"), body);
    m_folderButton->setObjectName(QStringLiteral("compareFolderButton"));
    m_folderButton->setToolTip(tr("A folder of shards (index, .bin, safetensors) or a DCP folder"));
    connect(m_folderButton, &QPushButton::clicked, this, &ComparisonDock::chooseFolderAndCompare);

    m_filter->setSourceModel(m_model);
    m_view = new QTreeView(body);
    m_view->setObjectName(QStringLiteral("comparisonView"));
    m_view->setAccessibleName(tr("Differences between the open checkpoint and the other"));
    m_view->setModel(m_filter);
    m_view->setRootIsDecorated(false);
    m_view->setUniformRowHeights(true);
    m_view->setAlternatingRowColors(true);
    m_view->setSortingEnabled(true);
    m_view->sortByColumn(ComparisonModel::NameColumn, Qt::AscendingOrder);
    // The name takes what the other columns leave; they fit their contents (a sample of rows, so a
    // comparison of a million tensors does not measure every row).
    m_view->header()->setStretchLastSection(false);
    m_view->header()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_view->header()->setSectionResizeMode(ComparisonModel::NameColumn, QHeaderView::Stretch);
    m_view->header()->setResizeContentsPrecision(200);
    connect(m_view, &QTreeView::clicked, this, &ComparisonDock::activate);
    connect(m_view, &QTreeView::activated, this, &ComparisonDock::activate);
    m_note = new QLabel(body);
    m_note->setObjectName(QStringLiteral("comparisonNote"));
    m_note->setWordWrap(true);
    m_note->setForegroundRole(QPalette::PlaceholderText);
    m_note->hide();

    auto* bar = new QHBoxLayout;
    bar->addWidget(m_summary, 1);
    bar->addWidget(m_kindFilter);
    bar->addWidget(m_fileButton);
    bar->addWidget(m_folderButton);
    auto* layout = new QVBoxLayout(body);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addLayout(bar);
    layout->addWidget(m_view, 1);
    layout->addWidget(m_note);
    setWidget(body);

    connect(m_documents, &DocumentController::documentChanged, this,
        [this](CheckpointDocument* current, CheckpointDocument*) { documentChanged(current); });
    connect(m_jobs, &JobTracker::finished, this, [this] {
        if (m_progressDialog) {
            m_progressDialog->hide();
            m_progressDialog->deleteLater();
        }
        updateButtons();
    });
    updateButtons();
}

ComparisonDock::~ComparisonDock() = default;

bool ComparisonDock::isComparing() const
{
    return m_jobs->isRunning();
}

QString ComparisonDock::summaryText() const
{
    return m_summary->text();
}

void ComparisonDock::updateButtons()
{
    const bool open = m_documents->document() != nullptr;
    m_fileButton->setEnabled(open && !isComparing());
    m_folderButton->setEnabled(open && !isComparing());
}

void ComparisonDock::documentChanged(CheckpointDocument* current)
{
    // The comparison was of the previous checkpoint: drop it (and a running one's result).
    m_jobs->reset();
    m_model->clear();
    m_note->hide();
    m_summary->setText(idleText());
    Q_UNUSED(current);
    updateButtons();
}

void ComparisonDock::chooseFileAndCompare()
{
    const CheckpointDocument* document = m_documents->document();
    if (!document)
        return;
    show();
    raise();
    if (const QString path = askCheckpointToOpen(this, document->filePath()); !path.isEmpty())
        compareWith(path);
}

void ComparisonDock::chooseFolderAndCompare()
{
    const CheckpointDocument* document = m_documents->document();
    if (!document)
        return;
    show();
    raise();
    if (const QString folder = askCheckpointFolderToOpen(this, document->filePath()); !folder.isEmpty())
        compareWith(folder);
}

void ComparisonDock::compareWith(const QString& path)
{
    const CheckpointDocument* document = m_documents->document();
    if (!document)
        return;
    if (isHidden()) {
        show();
        // Room for a screenful of rows; it shares the bottom with the Findings.
        if (auto* window = qobject_cast<QMainWindow*>(parentWidget()))
            window->resizeDocks({this}, {std::max(height(), window->height() / 3)}, Qt::Vertical);
    }
    raise();
    m_model->clear();
    m_note->hide();
    const QString name = QFileInfo(path).fileName();
    m_summary->setText(tr("Comparing with %1…").arg(name));
    std::shared_ptr<const Checkpoint> checkpoint = document->sharedCheckpoint();
    const ValuesHelper helper = findValuesHelper(); // the rule both faces follow (core/tasks)
    m_jobs->start(
        [checkpoint, path, helper](JobProgress& progress) {
            return std::make_shared<const Comparison>(compareWithFile(checkpoint, path, helper, progress));
        },
        [this](std::shared_ptr<const Comparison> comparison) { showComparison(std::move(comparison)); });
    if (m_progressDialog)
        m_progressDialog->deleteLater();
    m_progressDialog = new JobProgressDialog(tr("Comparing with %1…").arg(name), m_jobs->progress(), this);
    updateButtons();
}

void ComparisonDock::showComparison(std::shared_ptr<const Comparison> comparison)
{
    const QString other = QDir::toNativeSeparators(comparison->pathB);
    if (comparison->cancelled) {
        m_summary->setText(tr("Comparison with %1 cancelled").arg(other));
        Q_EMIT comparisonFinished(false, m_summary->text());
        return;
    }
    if (!comparison->error.isEmpty()) {
        m_summary->setText(tr("%1 cannot be compared: %2").arg(other, comparison->error));
        Q_EMIT comparisonFinished(false, m_summary->text());
        return;
    }
    m_model->setComparison(comparison);
    const CheckpointDiff& diff = comparison->diff;
    // The same counts and hashing figures as `ckpt-inspect diff` prints (core/report).
    m_summary->setText(diff.identical()
            ? tr("Against %1: the same tensors with the same bytes (%2 compared)")
                  .arg(other)
                  .arg(diff.unchanged)
            : tr("Against %1: %2").arg(other, QString::fromStdString(diffCountsText(diff))));
    m_summary->setToolTip(QString::fromStdString(diffHashingText(diff)));
    m_note->setText(comparison->valuesProblem);
    m_note->setVisible(!comparison->valuesProblem.isEmpty());
    m_view->resizeColumnToContents(ComparisonModel::KindColumn);
    Q_EMIT comparisonFinished(true, m_summary->text());
}

void ComparisonDock::activate(const QModelIndex& proxyIndex)
{
    const QVariant tensor = proxyIndex.data(ComparisonModel::TensorInARole);
    if (tensor.isValid())
        Q_EMIT tensorActivated(static_cast<std::uint32_t>(tensor.toUInt()));
}

} // namespace ckpt
