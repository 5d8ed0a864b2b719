// SPDX-License-Identifier: MIT
#include "ui/widgets/valuescanpanel.h"

#include "core/tasks/valueshelper.h"
#include "ui/base/displaytext.h"
#include "ui/document/checkpointdocument.h"
#include "ui/jobs/jobtracker.h"
#include "ui/models/nonfinitetablemodel.h"
#include "ui/values/tensorvalues.h"
#include "ui/widgets/valueschartwidget.h"

#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTableView>
#include <QTimer>
#include <QVBoxLayout>

namespace ckpt {

ValueScanPanel::ValueScanPanel(QWidget* parent)
    : QWidget(parent)
    , m_jobs(new JobTracker(this))
    , m_progressTimer(new QTimer(this))
    , m_status(new QLabel(this))
    , m_progress(new QProgressBar(this))
    , m_cancel(new QPushButton(tr("Cancel"), this))
    , m_rescan(new QPushButton(tr("Scan Again"), this))
    , m_model(new NonFiniteTableModel(this))
    , m_sorted(new QSortFilterProxyModel(this))
    , m_table(new QTableView(this))
    , m_finding(new QLabel(this))
    , m_chartTitle(new QLabel(this))
    , m_chart(new ValuesChartWidget(this))
{
    setObjectName(QStringLiteral("valueScanPanel"));
    setAccessibleName(tr("Values scan"));
    m_status->setObjectName(QStringLiteral("valueScanStatus"));
    m_status->setWordWrap(true);
    m_progress->setObjectName(QStringLiteral("valueScanProgress"));
    m_progress->setRange(0, 1000);
    m_progress->setAccessibleName(tr("Values scan progress"));
    m_progress->hide();
    m_cancel->setObjectName(QStringLiteral("valueScanCancel"));
    m_cancel->setToolTip(tr("Stop the scan; what it found so far is dropped"));
    m_cancel->hide();
    m_rescan->setObjectName(QStringLiteral("valueScanAgain"));
    m_rescan->setToolTip(tr("Read every tensor's values again"));
    connect(m_cancel, &QPushButton::clicked, this, &ValueScanPanel::cancelScan);
    connect(m_rescan, &QPushButton::clicked, this, &ValueScanPanel::startScan);

    m_sorted->setSourceModel(m_model);
    m_table->setObjectName(QStringLiteral("nonFiniteTable"));
    m_table->setAccessibleName(tr("Tensors holding NaN or infinity"));
    m_table->setModel(m_sorted);
    m_table->setSortingEnabled(true);
    m_table->sortByColumn(NonFiniteTableModel::NonFiniteColumn, Qt::DescendingOrder);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->verticalHeader()->hide();
    m_table->horizontalHeader()->setSectionResizeMode(NonFiniteTableModel::NameColumn, QHeaderView::Stretch);
    m_table->setAlternatingRowColors(true);
    connect(m_table->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
        &ValueScanPanel::showSelected);

    m_finding->setObjectName(QStringLiteral("valueScanFinding"));
    m_finding->setWordWrap(true);
    m_finding->setTextFormat(Qt::PlainText); // names come from the file
    m_finding->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_finding->hide();
    m_chartTitle->setObjectName(QStringLiteral("valueScanChartTitle"));
    m_chartTitle->setWordWrap(true);
    m_chart->setMinimumHeight(90);
    auto* chartBox = new QWidget(this);
    auto* chartLayout = new QVBoxLayout(chartBox);
    chartLayout->setContentsMargins(0, 0, 0, 0);
    chartLayout->addWidget(m_chartTitle);
    chartLayout->addWidget(m_chart, 1);

    auto* splitter = new QSplitter(Qt::Horizontal, this);
    splitter->setChildrenCollapsible(false);
    splitter->addWidget(m_table);
    splitter->addWidget(chartBox);
    splitter->setStretchFactor(0, 1);
    splitter->setStretchFactor(1, 1);

    auto* top = new QHBoxLayout;
    top->addWidget(m_status, 1);
    top->addWidget(m_progress);
    top->addWidget(m_cancel);
    top->addWidget(m_rescan);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addLayout(top);
    layout->addWidget(splitter, 1);
    layout->addWidget(m_finding);

    m_progressTimer->setInterval(100);
    connect(m_progressTimer, &QTimer::timeout, this, &ValueScanPanel::updateProgress);
    connect(m_jobs, &JobTracker::finished, this, [this] {
        m_progressTimer->stop();
        m_progress->hide();
        m_cancel->hide();
        m_rescan->setEnabled(m_document && m_source);
    });
    setDocument(nullptr);
}

void ValueScanPanel::setValuesSource(std::shared_ptr<TensorValuesSource> source)
{
    m_source = std::move(source);
    setDocument(m_document);
}

void ValueScanPanel::setDocument(CheckpointDocument* document)
{
    m_jobs->reset();
    m_document = document;
    m_model->setTensors({});
    m_findings.clear();
    m_finding->hide();
    m_chart->clear();
    m_chartTitle->clear();
    m_rescan->setEnabled(m_document && m_source);
    if (!m_source)
        m_status->setText(tr("Scanning values needs %1.")
                              .arg(QString::fromStdString(findValuesHelper().problem))); // as the CLI says it
    else if (!m_document)
        m_status->setText(tr("Open a checkpoint to scan its values for NaN and infinity."));
    else
        m_status->setText(tr("Reads every tensor's values to find NaN and infinity (Scan Again)."));
}

bool ValueScanPanel::isScanning() const
{
    return m_jobs->isRunning();
}

QString ValueScanPanel::statusText() const
{
    return m_status->text();
}

void ValueScanPanel::startScan()
{
    if (!m_document || !m_source)
        return;
    m_model->setTensors({});
    m_findings.clear();
    m_finding->hide();
    m_chart->clear();
    m_chartTitle->clear();
    const QString name = QFileInfo(m_document->filePath()).fileName();
    m_status->setText(tr("Scanning the values of %1…").arg(name));
    m_progress->setValue(0);
    m_progress->show();
    m_cancel->show();
    m_rescan->setEnabled(false);
    m_progressTimer->start();
    // The worker holds the source and the path only: the document may close meanwhile.
    m_jobs->start(
        [source = m_source, path = m_document->checkpoint().path](JobProgress& progress) {
            return std::make_shared<Expected<ValueScanResult>>(
                source->scan(path, [&progress](std::uint64_t done, std::uint64_t total) {
                    return progress.report(done, total);
                }));
        },
        [this, name](const std::shared_ptr<Expected<ValueScanResult>>& result) {
            if (!*result) {
                m_status->setText(tr("The values of %1 could not be scanned: %2")
                                      .arg(name, QString::fromStdString(result->error().message)));
            } else if ((*result)->cancelled) {
                m_status->setText(tr("Scan cancelled."));
            } else {
                // The counts as `check --values` says them (core/report).
                const ValueScanResult& scan = **result;
                QString text = scan.countsText + QLatin1Char('.');
                if (!scan.nonFinite.empty())
                    text += QLatin1Char(' ') + tr("Click one for its histogram and its finding.");
                m_status->setText(text);
                m_findings = scan.findings;
                m_model->setTensors(scan.nonFinite);
                if (m_sorted->rowCount() > 0)
                    m_table->selectRow(0);
            }
            Q_EMIT scanFinished(); // NOLINT(readability-misleading-indentation) Q_EMIT expands to nothing
        });
}

void ValueScanPanel::cancelScan()
{
    m_jobs->cancel();
}

void ValueScanPanel::updateProgress()
{
    const auto progress = m_jobs->progress();
    if (!progress)
        return;
    const std::uint64_t total = progress->total.load();
    const std::uint64_t done = progress->done.load();
    m_progress->setValue(
        total ? static_cast<int>(1000.0 * static_cast<double>(done) / static_cast<double>(total)) : 0);
}

void ValueScanPanel::showSelected()
{
    const ScannedTensor* tensor = m_model->tensorAt(m_sorted->mapToSource(m_table->currentIndex()));
    if (!tensor) {
        m_chart->clear();
        m_chartTitle->clear();
        m_finding->hide();
        return;
    }
    m_finding->setText(findingText());
    m_finding->setVisible(!m_finding->text().isEmpty());
    const TensorValues& values = tensor->values;
    m_chartTitle->setText(tr("<b>%1</b>: %2 NaN, %3 +Inf, %4 −Inf; histogram of its %5 finite values")
                              .arg(tensor->name.toHtmlEscaped())
                              .arg(values.nanCount)
                              .arg(values.positiveInfinityCount)
                              .arg(values.negativeInfinityCount)
                              .arg(values.finiteCount));
    m_chart->setHistogram(values.histogramLow, values.histogramHigh, values.histogramCounts);
    Q_EMIT tensorActivated(tensor->tensor);
}

QString ValueScanPanel::findingText() const
{
    const ScannedTensor* tensor = m_model->tensorAt(m_sorted->mapToSource(m_table->currentIndex()));
    if (!tensor)
        return {};
    for (const Finding& finding : m_findings)
        if (finding.tensors == std::vector<std::uint32_t> {tensor->tensor})
            return displayText(finding.message + "\n" + finding.explanation + "\nFix: " + finding.fix);
    return {};
}

} // namespace ckpt
