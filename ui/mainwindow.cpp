// SPDX-License-Identifier: MIT
// The window's layout, its wiring to the parts that do the work (ui/document's controller for open,
// save, export and triage; ui/planactions for the Plan menu; ui/deviceshortcuts for keyboard moves;
// ui/theme, ui/guidedtour and the toolbar; ui/jobs; the dialogs) and its answers to their signals.
// The action and menu tables and the File actions' handlers are in mainwindowactions.cpp; following
// the document controller and the open and close flows in mainwindowdocument.cpp.
#include "ui/mainwindow.h"

#include "ui/actiontable.h"
#include "ui/base/appsettings.h"
#include "ui/compare/comparisondock.h"
#include "ui/deviceshortcuts.h"
#include "ui/dialogs/dangeroussave.h"
#include "ui/document/checkpointdocument.h"
#include "ui/document/documentcontroller.h"
#include "ui/guidedtour.h"
#include "ui/jobs/jobtracker.h"
#include "ui/models/tensorfilterproxymodel.h"
#include "ui/models/tensortreemodel.h"
#include "ui/planactions.h"
#include "ui/theme.h"
#include "ui/values/tensorvalues.h"
#include "ui/widgets/detailspane.h"
#include "ui/widgets/devicepanel.h"
#include "ui/widgets/findingspanel.h"
#include "ui/widgets/firstrunhint.h"
#include "ui/widgets/loadsimulationbar.h"
#include "ui/widgets/maintoolbar.h"
#include "ui/widgets/memorychartwidget.h"
#include "ui/widgets/recentfilesmenu.h"
#include "ui/widgets/safetybanner.h"
#include "ui/widgets/startpage.h"
#include "ui/widgets/tensortreepanel.h"
#include "ui/widgets/valuescanpanel.h"
#include "version.h"

#include <QAbstractItemView>
#include <QApplication>

#include <QDockWidget>
#include <QFileInfo>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QScrollArea>
#include <QSplitter>
#include <QStatusBar>
#include <QTreeView>
#include <QUndoGroup>
#include <QUndoView>
#include <QVBoxLayout>
#include <algorithm>

namespace ckpt {

namespace {

QString fromStd(const std::string& text)
{
    return QString::fromStdString(text);
}

} // namespace

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent)
    , m_settings(std::make_unique<AppSettings>())
    , m_documents(new DocumentController(this))
{
    setWindowTitle(tr("Checkpoint Inspector"));
    setAcceptDrops(true);

    m_undoGroup = new QUndoGroup(this);
    createWidgets();

    // Permanent labels rather than showMessage(): menu status tips would wipe a temporary message.
    m_currentFileLabel = new QLabel(this);
    m_currentFileLabel->setObjectName(QStringLiteral("currentFileLabel"));
    m_currentFileLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_currentFileLabel->setContentsMargins(4, 0, 4, 0);
    statusBar()->addWidget(m_currentFileLabel, 1);
    m_summaryLabel = new QLabel(this);
    m_summaryLabel->setObjectName(QStringLiteral("summaryLabel"));
    m_summaryLabel->setContentsMargins(4, 0, 4, 0);
    m_summaryLabel->setToolTip(
        tr("Tensors, storages (blocks of bytes that tensors view; a device belongs to a "
           "storage), their total size and the file's format"));
    statusBar()->addPermanentWidget(m_summaryLabel);

    // The target (the last profile, else this machine, detected in a job) and the Plan menu.
    m_planActions = new PlanActions(m_documents, m_settings.get(), this);
    connect(m_planActions, &PlanActions::message, this, &MainWindow::showTransientMessage);
    connect(m_planActions, &PlanActions::errorShown, this, &MainWindow::showError);
    connect(m_planActions, &PlanActions::targetChanged, this, &MainWindow::updateStatusSummary);
    connect(m_planActions, &PlanActions::trialFinished, this, [this](const QString& report, bool passed) {
        passed ? showInformation(tr("Trial on This Machine's GPUs"), report)
               : showError(tr("Trial on This Machine's GPUs"), report);
    });
    connect(m_findingsPanel->simulationBar(), &LoadSimulationBar::targetChosen, m_planActions,
        &PlanActions::chooseTarget);
    connect(m_planActions, &PlanActions::detectingChanged, m_devicePanel, &DevicePanel::setDetecting);
    m_devicePanel->setDetecting(m_planActions->isDetecting());

    followDocuments();

    m_dangerousSave = new DangerousSaveGuard(this);
    connect(m_dangerousSave, &DangerousSaveGuard::finished, this, &MainWindow::showSaveResult);
    // "I trust this file: remap anyway": the same save, with the override.
    connect(m_dangerousSave, &DangerousSaveGuard::remapApproved, this, [this](const QString& path) {
        if (!document() || isBusy()) {
            showSaveResult(false, tr("Another file operation is still running."), path);
            return;
        }
        m_documents->saveRemappedCopy(path, true);
        showProgress(tr("Writing %1…").arg(QFileInfo(path).fileName()));
    });

    createActions();
    createMenus();
    // While no file is open: the start page (the same actions as the menus, and the recent files).
    QList<QAction*> startActions;
    for (const char* name : {"actionOpen", "actionOpenFolder", "actionOpenDemo", "actionGuidedTour"})
        startActions << findChild<QAction*>(QString::fromLatin1(name));
    m_startPage = new StartPage(m_settings.get(), startActions, this);
    connect(m_startPage, &StartPage::fileChosen, this, &MainWindow::openFile);
    m_emptyStateLabel = m_startPage->messageLabel();
    m_emptyStateLabel->setText(emptyStateText());
    setCentralWidget(m_startPage);
    m_toolBar = new MainToolBar(this, m_planActions->targetMenu());
    addToolBar(Qt::TopToolBarArea, m_toolBar);
    m_tour = new GuidedTour({this, m_documents, m_treePanel, m_detailsPane, m_deviceShortcuts, m_planActions,
                                m_findingsPanel->simulationBar(), [this] { return m_demoCheckpointPath; }},
        this);
    connect(m_tour, &GuidedTour::openRequested, this, &MainWindow::openFile);
    connect(this, &MainWindow::checkpointOpened, m_tour, &GuidedTour::demoOpened);
    connect(this, &MainWindow::openFailed, m_tour, &GuidedTour::demoNotOpened);
    connect(m_tour, &GuidedTour::saveRequested, this, &MainWindow::saveRemappedCopyTo);
    connect(this, &MainWindow::saveFinished, m_tour, &GuidedTour::saveFinished);
    restoreSettings();
    updateStatusSummary();
    updateActions();
}

MainWindow::~MainWindow()
{
    // The views let go of the document before it and they are destroyed.
    m_documents->fileJobs()->cancel();
    m_documents->close();
    // The docks hide as QWidget's destructor closes the window, after this one has run: their
    // visibility handlers (which call MainWindow's members) must not see a half-destroyed window.
    disconnect(m_detailsDock, nullptr, this, nullptr);
    disconnect(m_detailsDock->toggleViewAction(), nullptr, this, nullptr);
}

void MainWindow::createWidgets()
{
    m_treePanel = new TensorTreePanel(this);
    connect(m_treePanel, &TensorTreePanel::currentChanged, this, [this] {
        m_detailsPane->showTreeNode(m_treePanel->currentTreeNode());
        placeDetails();
    });
    connect(m_treePanel, &TensorTreePanel::selectionChanged, this, &MainWindow::updateActions);
    m_treePanel->view()->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(
        m_treePanel->view(), &QWidget::customContextMenuRequested, this, &MainWindow::showTreeContextMenu);

    m_devicePanel = new DevicePanel(nullptr, this);
    m_devicePanel->setObjectName(QStringLiteral("devicePanel"));
    m_devicePanel->setAccessibleName(tr("Devices of the target machine"));
    connect(m_devicePanel, &DevicePanel::moved, this, &MainWindow::showTransientMessage);
    m_memoryChart = new MemoryChartWidget(nullptr, this);
    m_memoryChart->setObjectName(QStringLiteral("memoryChart"));
    m_memoryChart->setAccessibleName(tr("Memory per device, recorded and planned"));
    connect(m_memoryChart, &MemoryChartWidget::moved, this, &MainWindow::showTransientMessage);
    m_detailsPane = new DetailsPane(this);
    // One helper for the details pane and Scan Values: found once, on start-up.
    const std::shared_ptr<TensorValuesSource> valuesSource = HelperProcessValues::findForThisProgram();
    m_detailsPane->setValuesSource(valuesSource);
    connect(m_detailsPane, &DetailsPane::tensorActivated, m_treePanel, &TensorTreePanel::selectTensor);

    // The tree is the window's centre and has its whole height (issue 27); everything else is a dock
    // a person can move, close or float, remembered between runs (saveSettings). Right, the whole
    // height of the window: the first-run hint and the device cards over the chart ("Devices"), and
    // below them the details of the current row ("Details", shown once a row is current). The
    // Findings dock goes under the tree only.
    m_sideSplitter = new QSplitter(Qt::Vertical, this);
    m_sideSplitter->setObjectName(QStringLiteral("sideSplitter"));
    m_sideSplitter->addWidget(m_devicePanel);
    m_sideSplitter->addWidget(m_memoryChart);
    m_sideSplitter->setStretchFactor(0, 0);
    m_sideSplitter->setStretchFactor(1, 1);
    m_sideSplitter->setChildrenCollapsible(false);
    // The cards take what their rows need, the chart the rest (a splitter keeps sizes it was given).
    connect(m_devicePanel, &DevicePanel::heightChanged, this, [this](int cards) {
        const QList<int> sizes = m_sideSplitter->sizes();
        const int total = sizes.value(0) + sizes.value(1);
        if (total > cards && sizes.value(0) != cards)
            m_sideSplitter->setSizes({cards, total - cards});
    });
    auto* devicesArea = new QWidget(this);
    devicesArea->setObjectName(QStringLiteral("devicesArea"));
    auto* devicesLayout = new QVBoxLayout(devicesArea);
    devicesLayout->setContentsMargins(0, 0, 0, 0);
    devicesLayout->setSpacing(2);
    m_firstRunHint = new FirstRunHint(devicesArea);
    m_firstRunHint->setVisible(!m_settings->firstRunHintDismissed());
    connect(m_firstRunHint, &FirstRunHint::dismissed, this,
        [this] { m_settings->setFirstRunHintDismissed(true); });
    devicesLayout->addWidget(m_firstRunHint);
    devicesLayout->addWidget(m_sideSplitter, 1);
    m_devicesDock = new QDockWidget(tr("Devices"), this);
    m_devicesDock->setObjectName(QStringLiteral("devicesDock"));
    m_devicesDock->setAccessibleName(tr("Devices of the target machine and memory per device"));
    m_devicesDock->setWidget(devicesArea);
    addDockWidget(Qt::RightDockWidgetArea, m_devicesDock);

    m_detailsDock = new QDockWidget(tr("Details"), this);
    m_detailsDock->setObjectName(QStringLiteral("detailsDock"));
    m_detailsDock->setAccessibleName(tr("Details of the current row"));
    // In a scroll area: the dock may be shorter than the pane's sections (the chart keeps its room
    // beside eight GPUs' cards); the pane then scrolls.
    auto* detailsScroll = new QScrollArea(this);
    detailsScroll->setObjectName(QStringLiteral("detailsScroll"));
    detailsScroll->setFrameShape(QFrame::NoFrame);
    detailsScroll->setWidgetResizable(true);
    detailsScroll->setAccessibleName(tr("Details of the current row"));
    detailsScroll->setWidget(m_detailsPane);
    m_detailsDock->setWidget(detailsScroll);
    addDockWidget(Qt::RightDockWidgetArea, m_detailsDock, Qt::Vertical);
    m_detailsDock->hide(); // until a row is current
    // Closed by its button or the View menu: it stays closed (and is remembered) until shown again;
    // hidden because nothing is current, it comes back with the next current row.
    connect(m_detailsDock, &QDockWidget::visibilityChanged, this, [this] {
        if (!m_placingDetails && m_detailsDock->isHidden() && currentRowShown())
            setDetailsWanted(false);
    });
    connect(m_detailsDock->toggleViewAction(), &QAction::triggered, this, [this](bool shown) {
        setDetailsWanted(shown);
        if (shown && !currentRowShown())
            m_detailsPane->showTreeNode(std::nullopt); // says "select a row"
    });
    setCorner(Qt::BottomRightCorner, Qt::RightDockWidgetArea);
    setCorner(Qt::TopRightCorner, Qt::RightDockWidgetArea);

    auto* undoView = new QUndoView(m_undoGroup);
    undoView->setObjectName(QStringLiteral("historyView"));
    undoView->setEmptyLabel(tr("<as opened>"));
    undoView->setAccessibleName(tr("History of placement changes"));
    undoView->setToolTip(tr("Every placement change; click a row to go back to it"));
    m_historyDock = new QDockWidget(tr("History"), this);
    m_historyDock->setObjectName(QStringLiteral("historyDock"));
    m_historyDock->setWidget(undoView);
    addDockWidget(Qt::LeftDockWidgetArea, m_historyDock);
    m_historyDock->hide();

    m_findingsPanel = new FindingsPanel(this);
    connect(m_findingsPanel, &FindingsPanel::tensorsActivated, this, &MainWindow::selectTensors);
    m_findingsDock = new QDockWidget(tr("Findings"), this);
    m_findingsDock->setObjectName(QStringLiteral("findingsDock"));
    m_findingsDock->setWidget(m_findingsPanel);
    addDockWidget(Qt::BottomDockWidgetArea, m_findingsDock);

    auto* comparison = new ComparisonDock(m_documents, this); // File > Compare With… shows it
    connect(comparison, &ComparisonDock::tensorActivated, m_treePanel, &TensorTreePanel::selectTensor);
    addDockWidget(Qt::BottomDockWidgetArea, comparison);
    tabifyDockWidget(m_findingsDock, comparison);
    comparison->hide();

    m_valueScanPanel = new ValueScanPanel(this);
    m_valueScanPanel->setValuesSource(valuesSource);
    connect(m_valueScanPanel, &ValueScanPanel::tensorActivated, m_treePanel, &TensorTreePanel::selectTensor);
    m_valueScanDock = new QDockWidget(tr("Values Scan"), this);
    m_valueScanDock->setObjectName(QStringLiteral("valueScanDock"));
    m_valueScanDock->setWidget(m_valueScanPanel);
    addDockWidget(Qt::BottomDockWidgetArea, m_valueScanDock);
    tabifyDockWidget(m_findingsDock, m_valueScanDock);
    m_valueScanDock->hide();
}

namespace {

// The version of the docks' arrangement saved with QMainWindow::saveState: a state saved by an
// older arrangement (the tree, details and cards in splitters, before issue 27) is not restored
// onto this one; the window starts with the defaults instead.
constexpr int kLayoutVersion = 27;

} // namespace

void MainWindow::restoreSettings()
{
    const QByteArray geometry = m_settings->windowGeometry();
    if (geometry.isEmpty() || !restoreGeometry(geometry))
        resize(1280, 800);
    m_detailsWanted = m_settings->detailsShown();
    const QByteArray state = m_settings->windowState();
    m_layoutRestored = !state.isEmpty() && restoreState(state, kLayoutVersion);
    if (!m_layoutRestored)
        applyDefaultLayout();
    const QByteArray sideState = m_settings->splitterState(m_sideSplitter->objectName());
    if (sideState.isEmpty() || !m_sideSplitter->restoreState(sideState))
        m_sideSplitter->setSizes({200, 400});
    placeDetails();
}

void MainWindow::applyDefaultLayout()
{
    // The tree about the left 55% of the width (the cards keep three to a row), the Findings under
    // it a quarter of the height and the load simulation bar's second line (the simulated torch and
    // imports), so that the bar's two outcome lines are never squeezed over each other.
    resizeDocks({m_devicesDock}, {std::max(580, width() * 2 / 5)}, Qt::Horizontal);
    resizeDocks({m_findingsDock}, {qMax(196, height() / 4 + 26)}, Qt::Vertical);
}

void MainWindow::saveSettings()
{
    m_settings->setWindowGeometry(saveGeometry());
    m_settings->setWindowState(saveState(kLayoutVersion));
    m_settings->setSplitterState(m_sideSplitter->objectName(), m_sideSplitter->saveState());
    m_settings->setDetailsShown(m_detailsWanted);
}

bool MainWindow::currentRowShown() const
{
    return document() && m_treePanel->currentTreeNode().has_value();
}

bool MainWindow::isDetailsShown() const
{
    return !m_detailsDock->isHidden();
}

void MainWindow::setDetailsWanted(bool wanted)
{
    m_detailsWanted = wanted;
    m_settings->setDetailsShown(wanted);
}

void MainWindow::placeDetails()
{
    // The details appear when a row is current, unless the person closed them.
    const bool show = m_detailsWanted && currentRowShown();
    if (show == !m_detailsDock->isHidden())
        return;
    m_placingDetails = true;
    m_detailsDock->setVisible(show);
    m_placingDetails = false;
    if (show && !m_detailsSized && !m_layoutRestored && !m_detailsDock->isFloating()
        && dockWidgetArea(m_detailsDock) == Qt::RightDockWidgetArea) {
        // First shown in the default arrangement: the cards and chart over the details, which take
        // up to two fifths of the column, less where many rows of cards leave the chart too little.
        m_detailsSized = true;
        const int column = m_devicesDock->height() + m_detailsDock->height();
        const int chartRoom = 300;
        const int details = std::clamp(
            column - m_devicePanel->height() - chartRoom, std::min(160, column / 3), column * 2 / 5);
        resizeDocks({m_devicesDock, m_detailsDock}, {column - details, details}, Qt::Vertical);
    }
}

void MainWindow::setDemoCheckpointPath(const QString& path)
{
    m_demoCheckpointPath = path;
    updateActions();
}

CheckpointDocument* MainWindow::document() const
{
    return m_documents->document();
}

QTreeView* MainWindow::treeView() const
{
    return m_treePanel->view();
}

TensorFilterProxyModel* MainWindow::filterModel() const
{
    return m_treePanel->filterModel();
}

SafetyBanner* MainWindow::safetyBanner() const
{
    return m_treePanel->safetyBanner();
}

TensorTreeModel* MainWindow::treeModel() const
{
    return m_treeModel.get();
}

bool MainWindow::isBusy() const
{
    return m_documents->isBusy();
}

bool MainWindow::isTriageRunning() const
{
    return m_documents->isTriageRunning();
}

void MainWindow::setTarget(MachineInventory machine, const QString& profileName)
{
    m_planActions->setTarget(std::move(machine), profileName);
}

bool MainWindow::exportMapLocationTo(const QString& path)
{
    return m_planActions->exportMapLocationTo(path);
}

bool MainWindow::exportDeviceMapTo(const QString& path)
{
    return m_planActions->exportDeviceMapTo(path);
}

// --- Selection -------------------------------------------------------------------------------

void MainWindow::selectTensors(const std::vector<std::uint32_t>& tensors)
{
    const std::size_t selected = m_treePanel->selectTensors(tensors);
    if (tensors.size() > 1)
        showTransientMessage(tr("%n tensor(s) selected", nullptr, int(selected)));
}

void MainWindow::focusNextPane(int step)
{
    const std::vector<QWidget*> panes = {treeView(), m_devicePanel->view(), m_findingsPanel->view()};
    std::vector<QWidget*> shown;
    for (QWidget* pane : panes)
        if (pane->isVisible())
            shown.push_back(pane);
    if (shown.empty())
        return;
    int current = -1;
    for (int i = 0; i < int(shown.size()); ++i)
        if (shown[std::size_t(i)] == QApplication::focusWidget()
            || shown[std::size_t(i)]->isAncestorOf(QApplication::focusWidget()))
            current = i;
    const int count = int(shown.size());
    const int next = current < 0 ? (step > 0 ? 0 : count - 1) : ((current + step) % count + count) % count;
    shown[std::size_t(next)]->setFocus(Qt::ShortcutFocusReason);
}

// --- Status ----------------------------------------------------------------------------------

void MainWindow::updateTitle()
{
    if (!document()) {
        setWindowTitle(tr("Checkpoint Inspector"));
        setWindowModified(false);
        return;
    }
    setWindowTitle(QStringLiteral("%1[*] — %2")
                       .arg(QFileInfo(document()->filePath()).fileName(), tr("Checkpoint Inspector")));
    setWindowModified(document()->isModified());
}

void MainWindow::updateActions()
{
    const bool open = document() != nullptr;
    m_saveAction->setEnabled(open && !isBusy());
    m_exportWeightsAction->setEnabled(open && !isBusy());
    m_exportMapLocationAction->setEnabled(open);
    m_exportDeviceMapAction->setEnabled(open);
    m_closeAction->setEnabled(open);
    findChild<QAction*>(QStringLiteral("actionCompareWith"))->setEnabled(open);

    findChild<QAction*>(QStringLiteral("actionScanValues"))
        ->setEnabled(open && m_valueScanPanel->hasValuesSource());
    m_selectSharingAction->setEnabled(open && m_treePanel->hasSelection());
    m_demoAction->setEnabled(!m_demoCheckpointPath.isEmpty());
    m_tourAction->setEnabled(!m_demoCheckpointPath.isEmpty());
    m_planActions->updateActions();
    m_deviceShortcuts->updateActions(open && m_treePanel->hasSelection());
}

QString MainWindow::statusSummary() const
{
    if (!document())
        return {};
    const Checkpoint& checkpoint = document()->checkpoint();
    return tr("%1 tensors · %2 storages · %3 · %4 · target: %5")
        .arg(fromStd(formatThousands(checkpoint.tensors.size())),
            fromStd(formatThousands(checkpoint.storages.size())),
            fromStd(formatBytes(checkpoint.totalStorageBytes())),
            QString::fromLatin1(checkpointFormatName(checkpoint.format)), fromStd(document()->target().name));
}

void MainWindow::updateStatusSummary()
{
    m_summaryLabel->setText(statusSummary());
    m_treePanel->updateLegend();
    const QString target = m_planActions->currentTargetChoice();
    if (m_toolBar)
        m_toolBar->setTargetName(target);
    m_findingsPanel->simulationBar()->setTargetChoices(m_planActions->targetChoices(), target);
    if (m_deviceShortcuts)
        updateActions();
}

void MainWindow::showTransientMessage(const QString& text)
{
    if (!text.isEmpty())
        statusBar()->showMessage(text, 10000);
}

} // namespace ckpt
