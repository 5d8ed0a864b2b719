// SPDX-License-Identifier: MIT
#include "ui/widgets/findingspanel.h"

#include "core/model/checkpoint.h"
#include "ui/base/displaytext.h"
#include "ui/models/findingsmodel.h"
#include "ui/widgets/loadsimulationbar.h"

#include <QHeaderView>
#include <QLabel>
#include <QSignalBlocker>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTextBrowser>
#include <QTextDocument>
#include <QTreeView>
#include <QVBoxLayout>

#include <algorithm>
#include <set>

namespace ckpt {

namespace {

QString fromStd(const std::string& text)
{
    return displayText(text);
}

QString esc(std::string_view text)
{
    return displayHtml(text);
}

QString ratingHtml(const WeightsOnlyVerdict& verdict)
{
    switch (verdict.rating) {
    case SafetyRating::LoadsWithWeightsOnly:
        return QObject::tr("<span style=\"color:#2e7d32\"><b>Safe with weights_only=True</b></span>: only "
                           "tensors and plain containers; torch.load(weights_only=True) accepts it.");
    case SafetyRating::NeedsAllowlist: {
        QString text = QObject::tr("<span style=\"color:#b26a00\"><b>Needs allowlisting</b></span>: "
                                   "weights_only=True refuses harmless classes");
        if (!verdict.addSafeGlobalsCall.empty())
            text += QObject::tr("; allow them with <code>%1</code>").arg(esc(verdict.addSafeGlobalsCall));
        return text + QLatin1Char('.');
    }
    case SafetyRating::Dangerous: {
        QString text = QObject::tr("<span style=\"color:#c62828\"><b>Dangerous</b></span>: loading it with "
                                   "weights_only=False would run code");
        if (!verdict.dangerousCallChains.empty())
            text += QStringLiteral(": <code>%1</code>").arg(esc(verdict.dangerousCallChains.front()));
        return text + QObject::tr(". Do not load it without weights_only=True.");
    }
    case SafetyRating::NotApplicable:
        return QObject::tr("<b>No pickle to judge</b> (safetensors, or not a checkpoint).");
    }
    return {};
}

} // namespace

FindingsPanel::FindingsPanel(QWidget* parent)
    : QWidget(parent)
    , m_model(new FindingsModel(this))
    , m_proxy(new QSortFilterProxyModel(this))
    , m_simulationBar(new LoadSimulationBar(this))
{
    setObjectName(QStringLiteral("findingsPanel"));
    setAccessibleName(tr("Findings"));
    m_proxy->setSourceModel(m_model);
    m_proxy->setSortRole(FindingsModel::SortRole);

    m_summary = new QLabel(this);
    m_summary->setObjectName(QStringLiteral("findingsSummary"));
    m_summary->setWordWrap(true);
    m_summary->setTextFormat(Qt::RichText);
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_summary->setContentsMargins(4, 2, 4, 2);
    m_summary->setToolTip(tr("Whether torch.load(weights_only=True) accepts the file, and how many findings "
                             "there are; the line above says what torch.load does on the target"));

    m_view = new QTreeView(this);
    m_view->setObjectName(QStringLiteral("findingsView"));
    m_view->setAccessibleName(tr("Findings"));
    m_view->setModel(m_proxy);
    m_view->setRootIsDecorated(false);
    m_view->setUniformRowHeights(true);
    m_view->setAlternatingRowColors(true);
    m_view->setSelectionMode(QAbstractItemView::SingleSelection);
    m_view->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_view->setSortingEnabled(true);
    m_view->sortByColumn(FindingsModel::SeverityColumn, Qt::AscendingOrder); // errors first
    m_view->setTextElideMode(Qt::ElideRight);
    m_view->header()->setStretchLastSection(false);
    m_view->header()->setSectionResizeMode(FindingsModel::MessageColumn, QHeaderView::Stretch);
    m_view->setColumnWidth(FindingsModel::SeverityColumn, 90);
    m_view->setColumnWidth(FindingsModel::CodeColumn, 130);
    m_view->setColumnWidth(FindingsModel::ConcernsColumn, 120);

    m_details = new QTextBrowser(this);
    m_details->setObjectName(QStringLiteral("findingDetails"));
    m_details->setAccessibleName(tr("The selected finding: why it matters and what to do"));
    m_details->setFrameShape(QFrame::NoFrame);
    m_details->setOpenLinks(false);

    auto* splitter = new QSplitter(Qt::Horizontal, this);
    splitter->setObjectName(QStringLiteral("findingsSplitter"));
    splitter->addWidget(m_view);
    splitter->addWidget(m_details);
    splitter->setStretchFactor(0, 3);
    splitter->setStretchFactor(1, 2);

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(2);
    layout->addWidget(m_simulationBar);
    layout->addWidget(m_summary);
    layout->addWidget(splitter, 1);

    connect(m_view->selectionModel(), &QItemSelectionModel::currentChanged, this,
        [this](const QModelIndex& current) {
            showCurrent(current);
            activate(current);
        });
    // A second click on the current finding selects its tensors again (after the tree moved on).
    connect(m_view, &QAbstractItemView::clicked, this, &FindingsPanel::activate);
    connect(m_view, &QAbstractItemView::activated, this, &FindingsPanel::activate);
    clear();
}

FindingsPanel::~FindingsPanel() = default;

bool FindingsPanel::showFindingAbout(const std::vector<std::uint32_t>& tensors)
{
    const std::set<std::uint32_t> wanted(tensors.begin(), tensors.end());
    for (int row = 0; row < m_proxy->rowCount(); ++row) {
        const QModelIndex index = m_proxy->index(row, FindingsModel::MessageColumn);
        const QList<uint> concerned = index.data(FindingsModel::TensorsRole).value<QList<uint>>();
        if (std::none_of(
                concerned.begin(), concerned.end(), [&](uint tensor) { return wanted.count(tensor) > 0; }))
            continue;
        const QSignalBlocker blocker(m_view->selectionModel()); // the tree keeps its selection
        m_view->selectionModel()->setCurrentIndex(
            index, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
        m_view->scrollTo(index);
        showCurrent(index);
        return true;
    }
    return false;
}

void FindingsPanel::setReport(
    const TriageReport& report, std::shared_ptr<const Checkpoint> checkpoint, const QString& /*targetName*/)
{
    m_hasReport = true;
    m_rating = report.weightsOnly.rating;
    m_model->setFindings(report.findings, std::move(checkpoint));

    int errors = 0, warnings = 0, remarks = 0;
    for (const Finding& finding : report.findings) {
        switch (finding.severity) {
        case Severity::Error:
            ++errors;
            break;
        case Severity::Warning:
            ++warnings;
            break;
        case Severity::Info:
            ++remarks;
            break;
        }
    }
    // The rating and the counts. What torch.load does with the file as it is, on the target, is
    // the load simulation bar's line just above (issue 27: said once); its error is a finding.
    QString html = ratingHtml(report.weightsOnly);
    html += QStringLiteral(" ")
        + (report.findings.empty()
                ? tr("No findings.")
                : tr("%1 error(s), %2 warning(s), %3 remark(s).").arg(errors).arg(warnings).arg(remarks));
    m_summaryHtml = html;
    m_summary->setText(html);
    m_view->setEnabled(true);
    m_view->resizeColumnToContents(FindingsModel::SeverityColumn);
    showCurrent({});
}

void FindingsPanel::setChecking(bool checking)
{
    m_view->setEnabled(!checking);
    if (checking)
        m_summary->setText(tr("<i>Checking the file: integrity, weights_only, what torch.load would do on "
                              "the target…</i>"));
    else
        m_summary->setText(m_summaryHtml);
}

void FindingsPanel::clear()
{
    m_hasReport = false;
    m_rating = SafetyRating::NotApplicable;
    m_model->clear();
    m_summaryHtml = tr("<span style=\"color:gray\">Open a checkpoint to check it.</span>");
    m_summary->setText(m_summaryHtml);
    showCurrent({});
}

QString FindingsPanel::summaryText() const
{
    QTextDocument document;
    document.setHtml(m_summary->text());
    return document.toPlainText();
}

void FindingsPanel::showCurrent(const QModelIndex& proxyIndex)
{
    const Finding* finding = m_model->findingAt(m_proxy->mapToSource(proxyIndex).row());
    if (!finding) {
        m_details->setHtml(QStringLiteral("<p style=\"color:gray\">%1</p>")
                               .arg(tr("Select a finding to see why it matters and what to do; its tensors "
                                       "are selected in the tree.")
                                        .toHtmlEscaped()));
        return;
    }
    QString html = QStringLiteral("<p><b>%1</b> <span style=\"color:gray\">%2</span></p><p>%3</p>")
                       .arg(severityText(finding->severity).toHtmlEscaped(), esc(finding->codeId()),
                           esc(finding->message).replace(QLatin1Char('\n'), QStringLiteral("<br>")));
    // The finding's own explanation, or what its code means (core/base/findingcodes.inc).
    const std::string_view why
        = finding->explanation.empty() ? findingCodeInfo(finding->code).explanation : finding->explanation;
    if (!why.empty())
        html += QStringLiteral("<p><b>%1</b> %2</p>").arg(tr("Why it matters:").toHtmlEscaped(), esc(why));
    if (!finding->fix.empty())
        html += QStringLiteral("<p><b>%1</b> %2</p>")
                    .arg(tr("What to do:").toHtmlEscaped(),
                        esc(finding->fix).replace(QLatin1Char('\n'), QStringLiteral("<br>")));
    if (!finding->record.empty())
        html += QStringLiteral("<p style=\"color:gray\">%1</p>")
                    .arg(finding->offset
                            ? tr("Record %1, byte %2").arg(fromStd(finding->record)).arg(*finding->offset)
                            : tr("Record %1").arg(fromStd(finding->record)));
    m_details->setHtml(html);
}

void FindingsPanel::activate(const QModelIndex& proxyIndex)
{
    const Finding* finding = m_model->findingAt(m_proxy->mapToSource(proxyIndex).row());
    if (finding && !finding->tensors.empty())
        Q_EMIT tensorsActivated(finding->tensors);
}

} // namespace ckpt
