// On purpose in one file: what is left here is the window's layout, its action and menu tables,
// and its answers to the signals of the parts that do the work (ui/document's controller for open,
// save, export and triage; ui/planactions for the Plan menu; ui/deviceshortcuts for keyboard moves;
// ui/theme, ui/guidedtour, the toolbar; ui/jobs; the dialogs), so a reader sees the whole window in
// one place.
#include "ui/mainwindow.h"

#include "ui/actiontable.h"
#include "ui/appsettings.h"
#include "ui/deviceshortcuts.h"
#include "ui/dialogs/dangeroussave.h"
#include "ui/dialogs/filedialogs.h"
#include "ui/document/checkpointdocument.h"
#include "ui/document/documentcontroller.h"
#include "ui/document/foldersave.h"
#include "ui/guidedtour.h"
#include "ui/jobs/jobprogressdialog.h"
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
#include "ui/widgets/tensortreepanel.h"

#include <QApplication>
#include <QCloseEvent>
#include <QDir>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileInfo>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QSplitter>
#include <QStatusBar>
#include <QTimer>
#include <QTreeView>
#include <QUndoGroup>
#include <QUndoStack>
#include <QUndoView>
#include <QVBoxLayout>

namespace ckpt {

namespace {

QString fromStd(const std::string& text)
{
    return QString::fromStdString(text);
}

QString emptyStateText()
{
    return QObject::tr("Open a PyTorch checkpoint (File > Open…)");
}

} // namespace

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent)
    , m_settings(std::make_unique<AppSettings>())
    , m_documents(new DocumentController(this))
{
    setWindowTitle(tr("Checkpoint Inspector"));
    setAcceptDrops(true);

    m_emptyStateLabel = new QLabel(emptyStateText(), this);
    m_emptyStateLabel->setObjectName(QStringLiteral("emptyStateLabel"));
    m_emptyStateLabel->setAlignment(Qt::AlignCenter);
    m_emptyStateLabel->setWordWrap(true);
    m_emptyStateLabel->setForegroundRole(QPalette::PlaceholderText);
    setCentralWidget(m_emptyStateLabel);

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
    connect(m_findingsPanel->simulationBar(), &LoadSimulationBar::targetChosen, m_planActions,
        &PlanActions::chooseTarget);
    connect(m_planActions, &PlanActions::detectingChanged, m_devicePanel, &DevicePanel::setDetecting);
    m_devicePanel->setDetecting(m_planActions->isDetecting());

    connect(m_documents, &DocumentController::documentChanged, this, &MainWindow::attachDocument);
    connect(m_documents, &DocumentController::opened, this, &MainWindow::showOpenedFile);
    connect(m_documents, &DocumentController::openFailed, this, &MainWindow::showOpenFailure);
    connect(m_documents, &DocumentController::openCancelled, this, [this](const QString& name) {
        keepShownFile();
        showTransientMessage(tr("Opening %1 cancelled").arg(name));
    });
    connect(m_documents, &DocumentController::saveFinished, this, &MainWindow::showSaveResult);
    connect(m_documents, &DocumentController::exportFinished, this,
        [this](bool ok, const QString& message, const QString& path) {
            if (!ok) {
                showError(tr("Weights Not Exported"), message);
            } else {
                showTransientMessage(tr("Exported %1: %2").arg(QFileInfo(path).fileName(), message));
                showInformation(
                    tr("Weights Exported"), tr("%1\n\n%2").arg(QDir::toNativeSeparators(path), message));
            }
            Q_EMIT exportFinished(ok, message);
        });
    connect(m_documents, &DocumentController::triageStarted, this,
        [this] { m_findingsPanel->setChecking(true); });
    connect(m_documents, &DocumentController::triageFinished, this, [this](const auto& report) {
        m_findingsPanel->setReport(
            *report, document()->sharedCheckpoint(), fromStd(document()->target().name));
        m_treePanel->safetyBanner()->setVerdict(report->safety);
        m_treePanel->showFindings(report->findings, document()->checkpoint().tensors.size());
        Q_EMIT triageFinished();
    });
    JobTracker* fileJobs = m_documents->fileJobs();
    connect(fileJobs, &JobTracker::started, this, &MainWindow::updateActions);
    connect(fileJobs, &JobTracker::finished, this, [this] {
        if (m_progressDialog) {
            m_progressDialog->hide();
            m_progressDialog->deleteLater();
        }
        updateActions();
    });

    m_dangerousSave = new DangerousSaveGuard(this);
    connect(m_dangerousSave, &DangerousSaveGuard::finished, this, &MainWindow::showSaveResult);

    createActions();
    createMenus();
    m_toolBar = new MainToolBar(this, m_planActions->targetMenu());
    addToolBar(Qt::TopToolBarArea, m_toolBar);
    m_tour = new GuidedTour(this);
    restoreSettings();
    updateStatusSummary();
    updateActions();
}

MainWindow::~MainWindow()
{
    // The views let go of the document before it and they are destroyed.
    m_documents->fileJobs()->cancel();
    m_documents->close();
}

void MainWindow::createWidgets()
{
    m_treePanel = new TensorTreePanel(this);
    connect(m_treePanel, &TensorTreePanel::currentChanged, this,
        [this] { m_detailsPane->showTreeNode(m_treePanel->currentTreeNode()); });
    connect(m_treePanel, &TensorTreePanel::selectionChanged, this, &MainWindow::updateActions);

    // Right: device cards, chart, details.
    m_devicePanel = new DevicePanel(nullptr, this);
    m_devicePanel->setObjectName(QStringLiteral("devicePanel"));
    m_devicePanel->setAccessibleName(tr("Devices of the target machine"));
    connect(m_devicePanel, &DevicePanel::moved, this, &MainWindow::showTransientMessage);
    m_memoryChart = new MemoryChartWidget(nullptr, this);
    m_memoryChart->setObjectName(QStringLiteral("memoryChart"));
    m_memoryChart->setAccessibleName(tr("Memory per device, recorded and planned"));
    connect(m_memoryChart, &MemoryChartWidget::moved, this, &MainWindow::showTransientMessage);
    m_detailsPane = new DetailsPane(this);
    m_detailsPane->setValuesSource(HelperProcessValues::findForThisProgram());
    connect(m_detailsPane, &DetailsPane::tensorActivated, m_treePanel, &TensorTreePanel::selectTensor);

    // Right: the device cards (every row of them in view) over the chart. Left: the tree over the
    // details of its current row.
    auto* devicesArea = new QWidget(this);
    auto* devicesLayout = new QVBoxLayout(devicesArea);
    devicesLayout->setContentsMargins(0, 0, 0, 0);
    devicesLayout->setSpacing(2);
    devicesLayout->setSizeConstraint(
        QLayout::SetMinAndMaxSize); // no taller than its cards: the chart gets the rest
    m_firstRunHint = new FirstRunHint(devicesArea);
    m_firstRunHint->setVisible(!m_settings->firstRunHintDismissed());
    connect(m_firstRunHint, &FirstRunHint::dismissed, this,
        [this] { m_settings->setFirstRunHintDismissed(true); });
    devicesLayout->addWidget(m_firstRunHint);
    devicesLayout->addWidget(m_devicePanel);
    m_sideSplitter = new QSplitter(Qt::Vertical, this);
    m_sideSplitter->setObjectName(QStringLiteral("sideSplitter"));
    m_sideSplitter->addWidget(devicesArea);
    m_sideSplitter->addWidget(m_memoryChart);
    m_sideSplitter->setStretchFactor(0, 0);
    m_sideSplitter->setStretchFactor(1, 1);
    m_sideSplitter->setChildrenCollapsible(false);

    m_treeSplitter = new QSplitter(Qt::Vertical, this);
    m_treeSplitter->setObjectName(QStringLiteral("treeSplitter"));
    m_treeSplitter->addWidget(m_treePanel);
    m_treeSplitter->addWidget(m_detailsPane);
    m_treeSplitter->setStretchFactor(0, 3);
    m_treeSplitter->setStretchFactor(1, 1);

    m_mainSplitter = new QSplitter(Qt::Horizontal, this);
    m_mainSplitter->setObjectName(QStringLiteral("mainSplitter"));
    m_mainSplitter->addWidget(m_treeSplitter);
    m_mainSplitter->addWidget(m_sideSplitter);
    m_mainSplitter->setStretchFactor(0, 3);
    m_mainSplitter->setStretchFactor(1, 2);
    m_mainSplitter->hide(); // the empty state is the central widget until a file is open

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
}

void MainWindow::createActions()
{
    const ActionSpec table[] = {
        {"actionOpen", tr("&Open…"), QKeySequence(Qt::CTRL | Qt::Key_O),
            tr("Open a PyTorch checkpoint without running its pickle code"),
            [this] {
                if (const QString path = askCheckpointToOpen(this, m_currentFile); !path.isEmpty())
                    openFile(path);
            }},
        // A folder of shards (Hugging Face index, DCP) opens as one checkpoint, as a drop of the folder does.
        {"actionOpenFolder", tr("Open &Folder…"), {},
            tr("Open a folder of shards (index, .bin, safetensors or DCP) as one checkpoint"),
            [this] {
                if (const QString folder = askCheckpointFolderToOpen(this, m_currentFile); !folder.isEmpty())
                    openFile(folder);
            }},
        {"actionSaveRemapped", tr("&Save Remapped Copy…"), QKeySequence(Qt::CTRL | Qt::Key_S),
            tr("Write a copy whose recorded devices are the planned ones (never over the input)"),
            [this] { chooseSaveTarget(); }},
        {"actionExportWeights", tr("E&xport Weights…"), {},
            tr("A plain state_dict (.pt) that torch.load(weights_only=True) opens, or "
               "safetensors, with nothing of the file executed"),
            [this] {
                if (!document())
                    return;
                if (const QString path = askWeightsExportPath(this, *document()); !path.isEmpty())
                    exportWeightsTo(path);
            }},
        {"actionExportMapLocation", tr("Export Plan as &map_location…"), QKeySequence(Qt::CTRL | Qt::Key_E),
            tr("Python for torch.load that applies the plan to the original file"),
            [this] { chooseExportTarget(false); }},
        {"actionExportDeviceMap", tr("Export Plan as &device_map…"),
            QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_E),
            tr("A Hugging Face style device_map (module prefix → device) as JSON"),
            [this] { chooseExportTarget(true); }},
        {"actionClose", tr("&Close"), QKeySequence(Qt::CTRL | Qt::Key_W), {}, [this] { closeDocument(); }},
        // Explicit keys: QKeySequence::Quit is empty under some platform themes.
        {"actionQuit", tr("&Quit"), QKeySequence(Qt::CTRL | Qt::Key_Q), tr("Close every window and quit"),
            [] { QApplication::closeAllWindows(); }},
        {"actionSelectSharing", tr("Select Tensors &Sharing Storage"),
            QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_A),
            tr("Adds every tensor that views the same storage as a selected one: they move together"),
            [this] {
                showTransientMessage(tr("%n tensor(s) share the selected storages", nullptr,
                    int(m_treePanel->selectTensorsSharingStorage())));
            }},
        {"actionFilter", tr("&Filter Tensors"), QKeySequence(Qt::CTRL | Qt::Key_F), {},
            [this] { m_treePanel->focusFilter(); }},
        {"actionOpenDemo", tr("Open &Demo Checkpoint"), QKeySequence(Qt::CTRL | Qt::Key_D),
            tr("A small transformer saved on cuda:0, cuda:1 and cpu"), [this] { openDemoCheckpoint(); }},
        {"actionGuidedTour", tr("&Guided Tour"), {},
            tr("Short steps on the demo checkpoint that drive the app: shared storage, moves, targets, "
               "saving"),
            [this] { m_tour->start(); }},
        {"actionAbout", tr("&About Checkpoint Inspector"), QKeySequence(Qt::Key_F1), {},
            [this] {
                QMessageBox::about(this, tr("About Checkpoint Inspector"),
                    tr("<h3>Checkpoint Inspector %1</h3>"
                       "<p>Opens PyTorch checkpoints without running their pickle code, shows the device "
                       "every tensor was recorded on, and writes a copy that loads on the devices you "
                       "plan.</p>")
                        .arg(QStringLiteral(CKPT_VERSION)));
            }},
    };
    for (const ActionSpec& spec : table)
        m_actions.push_back(createAction(this, spec));
    const auto find = [this](const char* name) { return findChild<QAction*>(QString::fromLatin1(name)); };
    find("actionQuit")->setMenuRole(QAction::QuitRole);
    find("actionAbout")->setMenuRole(QAction::AboutRole);
    m_saveAction = find("actionSaveRemapped");
    m_exportWeightsAction = find("actionExportWeights");
    m_exportMapLocationAction = find("actionExportMapLocation");
    m_exportDeviceMapAction = find("actionExportDeviceMap");
    m_closeAction = find("actionClose");
    m_selectSharingAction = find("actionSelectSharing");
    m_demoAction = find("actionOpenDemo");
    m_tourAction = find("actionGuidedTour");

    // Keyboard moves: the selected rows' drag payload, dropped on a device by a shortcut.
    m_deviceShortcuts = new DeviceShortcuts(
        m_documents,
        [this]() -> std::unique_ptr<QMimeData> {
            QModelIndexList rows;
            const QModelIndexList selected = treeView()->selectionModel()->selectedRows();
            for (const QModelIndex& index : selected)
                rows.append(filterModel()->mapToSource(index));
            if (rows.isEmpty() || !treeModel())
                return nullptr;
            return std::unique_ptr<QMimeData>(treeModel()->mimeData(rows));
        },
        this);
    connect(m_deviceShortcuts, &DeviceShortcuts::moved, this, &MainWindow::showTransientMessage);
    m_theme = new Theme(m_settings.get(), this);

    // The group follows the open document's stack.
    QAction* undo = m_undoGroup->createUndoAction(this, tr("&Undo"));
    undo->setObjectName(QStringLiteral("actionUndo"));
    undo->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Z));
    QAction* redo = m_undoGroup->createRedoAction(this, tr("&Redo"));
    redo->setObjectName(QStringLiteral("actionRedo"));
    redo->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Z));

    QAction* history = m_historyDock->toggleViewAction();
    history->setObjectName(QStringLiteral("actionShowHistory"));
    history->setText(tr("&History"));
    history->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_H));
    QAction* findings = m_findingsDock->toggleViewAction();
    findings->setObjectName(QStringLiteral("actionShowFindings"));
    findings->setText(tr("&Findings"));
    findings->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_F));
    findings->setStatusTip(
        tr("Why the file may not load here, whether it is safe to load, whether it is intact"));
}

void MainWindow::createMenus()
{
    auto* recentMenu = new RecentFilesMenu(m_settings.get(), this);
    connect(recentMenu, &RecentFilesMenu::fileChosen, this, &MainWindow::openFile);

    // The menus as a table: an action or submenu by object name, "-" for a separator.
    const std::pair<QString, std::vector<const char*>> menus[] = {
        {tr("&File"),
            {"actionOpen", "actionOpenFolder", "recentMenu", "-", "actionSaveRemapped", "actionExportWeights",
                "actionExportMapLocation", "actionExportDeviceMap", "-", "actionClose", "actionQuit"}},
        {tr("&Edit"), {"actionUndo", "actionRedo", "-", "actionSelectSharing", "actionFilter"}},
        {tr("&Plan"),
            {"moveSelectionMenu", "-", "actionEverythingToCpu", "actionMapEvery", "-", "actionAutoBalanced",
                "actionAutoSequential", "-", "targetMenu"}},
        {tr("&View"), {"actionShowHistory", "actionShowFindings", "-", "themeMenu"}},
        {tr("&Help"), {"actionGuidedTour", "actionOpenDemo", "-", "actionAbout"}},
    };
    const char* menuNames[] = {"fileMenu", "editMenu", "planMenu", "viewMenu", "helpMenu"};
    int index = 0;
    for (const auto& [title, items] : menus) {
        QMenu* menu = menuBar()->addMenu(title);
        menu->setObjectName(QString::fromLatin1(menuNames[index++]));
        for (const char* item : items) {
            const QString name = QString::fromLatin1(item);
            if (name == QLatin1String("-"))
                menu->addSeparator();
            else if (auto* submenu = findChild<QMenu*>(name))
                menu->addMenu(submenu);
            else if (auto* action = findChild<QAction*>(name))
                menu->addAction(action);
            else
                qWarning("MainWindow: no action or menu named %s", item);
        }
    }
}

void MainWindow::restoreSettings()
{
    const QByteArray geometry = m_settings->windowGeometry();
    if (geometry.isEmpty() || !restoreGeometry(geometry))
        resize(1280, 800);
    const QByteArray state = m_settings->windowState();
    if (state.isEmpty() || !restoreState(state))
        resizeDocks({m_findingsDock}, {190}, Qt::Vertical);
    const QByteArray mainState = m_settings->splitterState(m_mainSplitter->objectName());
    if (mainState.isEmpty() || !m_mainSplitter->restoreState(mainState))
        m_mainSplitter->setSizes({700, 580});
    const QByteArray sideState = m_settings->splitterState(m_sideSplitter->objectName());
    if (sideState.isEmpty() || !m_sideSplitter->restoreState(sideState))
        m_sideSplitter->setSizes({200, 400});
    const QByteArray treeState = m_settings->splitterState(m_treeSplitter->objectName());
    if (treeState.isEmpty() || !m_treeSplitter->restoreState(treeState))
        m_treeSplitter->setSizes({420, 200});
}

void MainWindow::saveSettings()
{
    m_settings->setWindowGeometry(saveGeometry());
    m_settings->setWindowState(saveState());
    m_settings->setSplitterState(m_mainSplitter->objectName(), m_mainSplitter->saveState());
    m_settings->setSplitterState(m_sideSplitter->objectName(), m_sideSplitter->saveState());
    m_settings->setSplitterState(m_treeSplitter->objectName(), m_treeSplitter->saveState());
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
    return m_documents->treeModel();
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

// --- Opening ---------------------------------------------------------------------------------

void MainWindow::openDemoCheckpoint()
{
    if (m_demoCheckpointPath.isEmpty() || !QFileInfo::exists(m_demoCheckpointPath)) {
        showError(tr("No Demo Checkpoint"),
            tr("The demo checkpoint was not found (looked for %1).")
                .arg(QDir::toNativeSeparators(m_demoCheckpointPath)));
        return;
    }
    openFile(m_demoCheckpointPath);
}

void MainWindow::showProgress(const QString& label)
{
    if (m_progressDialog) {
        m_progressDialog->hide();
        m_progressDialog->deleteLater();
    }
    m_progressDialog = new JobProgressDialog(label, m_documents->fileJobs()->progress(), this);
}

void MainWindow::openFile(const QString& path)
{
    if (!maybeKeepChanges([this, path] { openFile(path); }))
        return;
    m_currentFile = path;
    m_currentFileLabel->setText(QDir::toNativeSeparators(path));
    m_documents->openFile(path);
    showProgress(tr("Reading %1…").arg(QFileInfo(path).fileName()));
}

void MainWindow::keepShownFile()
{
    m_currentFile = document() ? document()->filePath() : QString();
    m_currentFileLabel->setText(QDir::toNativeSeparators(m_currentFile));
}

void MainWindow::showOpenFailure(const QString& text)
{
    keepShownFile();
    if (!document())
        m_emptyStateLabel->setText(text);
    Q_EMIT openFailed(text);
    showError(tr("Not a Checkpoint"), text);
}

void MainWindow::showOpenedFile(const QString& path, const QStringList& problems)
{
    keepShownFile();
    if (centralWidget() != m_mainSplitter) {
        // takeCentralWidget() leaves the widget without a parent: taken back as a hidden child, the
        // empty-state label is deleted with the window instead of leaking (LeakSanitizer, asan preset).
        QWidget* previous = takeCentralWidget();
        previous->setParent(this);
        previous->hide();
        setCentralWidget(m_mainSplitter);
        m_mainSplitter->show();
    }
    m_treePanel->expandFirstLevels();
    m_detailsPane->showTreeNode(std::nullopt);
    updateTitle();
    updateStatusSummary();
    updateActions();
    m_settings->addRecentFile(path);
    Q_EMIT checkpointOpened();
    if (!problems.isEmpty()) {
        const QString name = QFileInfo(path).fileName();
        showError(tr("Problems Reading %1").arg(name),
            tr("%1 was read as far as possible; what is shown may be incomplete:\n%2")
                .arg(name, problems.join(QLatin1Char('\n'))));
    }
}

void MainWindow::attachDocument(CheckpointDocument* current, CheckpointDocument* previous)
{
    // The views move to the new document (or to none) while the old one still exists.
    m_treePanel->setDocument(current, m_documents->treeModel());
    m_devicePanel->setDocument(current);
    m_memoryChart->setDocument(current);
    m_detailsPane->setDocument(current);
    m_findingsPanel->simulationBar()->setDocument(current);
    if (previous)
        m_undoGroup->removeStack(previous->undoStack());
    m_findingsPanel->clear();
    if (!current)
        return;
    m_treePanel->safetyBanner()->setChecking();
    m_undoGroup->addStack(current->undoStack());
    m_undoGroup->setActiveStack(current->undoStack());
    connect(current->undoStack(), &QUndoStack::cleanChanged, this, &MainWindow::updateTitle);
    connect(current->undoStack(), &QUndoStack::indexChanged, this, &MainWindow::updateActions);
    connect(current, &CheckpointDocument::targetChanged, this, &MainWindow::updateStatusSummary);
}

void MainWindow::closeDocument()
{
    if (!maybeKeepChanges([this] { closeDocument(); }))
        return;
    m_documents->close();
    if (centralWidget() != m_emptyStateLabel) {
        QWidget* previous = takeCentralWidget(); // parentless now: kept as a hidden child (see showDocument)
        previous->setParent(this);
        previous->hide();
        setCentralWidget(m_emptyStateLabel);
        m_emptyStateLabel->show();
    }
    m_emptyStateLabel->setText(emptyStateText());
    m_currentFile.clear();
    m_currentFileLabel->clear();
    updateTitle();
    updateStatusSummary();
    updateActions();
}

bool MainWindow::maybeKeepChanges(std::function<void()> then)
{
    CheckpointDocument* current = document();
    if (!current || !current->isModified())
        return true;
    if (m_suppressModalDialogs)
        return true; // tests: discard
    switch (askAboutUnsavedPlacement(this, *current)) {
    case UnsavedPlacementAnswer::Save:
        chooseSaveTarget(std::move(then));
        return false;
    case UnsavedPlacementAnswer::Discard:
        current->undoStack()->setClean(); // asked once is enough
        return true;
    case UnsavedPlacementAnswer::Cancel:
        break;
    }
    return false;
}

void MainWindow::closeEvent(QCloseEvent* event)
{
    if (!maybeKeepChanges([this] { close(); })) {
        event->ignore();
        return;
    }
    m_documents->fileJobs()->cancel();
    saveSettings();
    event->accept();
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event)
{
    const QMimeData* mime = event->mimeData();
    if (mime->hasUrls() && !mime->urls().isEmpty() && mime->urls().first().isLocalFile())
        event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event)
{
    const QMimeData* mime = event->mimeData();
    if (!mime->hasUrls())
        return;
    const auto urls = mime->urls();
    for (const QUrl& url : urls) {
        if (url.isLocalFile()) {
            event->acceptProposedAction();
            // After the drop returns: a question about unsaved changes must not run inside the drag.
            const QString path = url.toLocalFile();
            QTimer::singleShot(0, this, [this, path] { openFile(path); });
            return;
        }
    }
}

// --- Saving and exporting --------------------------------------------------------------------

void MainWindow::chooseSaveTarget(std::function<void()> then)
{
    CheckpointDocument* current = document();
    if (!current)
        return;
    const QString path = askRemappedCopyPath(this, *current);
    if (path.isEmpty())
        return;
    m_afterSave = std::move(then);
    saveRemappedCopyTo(path);
}

void MainWindow::saveRemappedCopyTo(const QString& path)
{
    CheckpointDocument* current = document();
    if (!current || isBusy()) {
        const QString message
            = !current ? tr("No checkpoint is open.") : tr("Another file operation is still running.");
        showError(tr("Cannot Save"), message);
        Q_EMIT saveFinished(false, message);
        return;
    }
    // Safetensors and DCP shards record no device: the plan is exported, and the window says why.
    if (folderSaveExportsOnly(current->checkpoint())) {
        auto exported
            = exportFolderPlan(current->checkpoint(), current->plan(), current->target(), path.toStdString());
        const QString message = QString::fromStdString(exported ? *exported : exported.error().message);
        if (exported)
            showInformation(tr("Plan Exported, Nothing Rewritten"), message);
        else
            showError(tr("Plan Not Exported"), message);
        Q_EMIT saveFinished(bool(exported), message);
        return;
    }
    // As `ckpt-inspect remap` does (exit 4): no remapped copy of a file that may run code.
    if (m_dangerousSave->refuse(current->checkpoint(), path))
        return;
    m_documents->saveRemappedCopy(path);
    showProgress(tr("Writing %1…").arg(QFileInfo(path).fileName()));
}

void MainWindow::exportWeightsTo(const QString& path)
{
    if (!document() || isBusy()) {
        const QString message
            = !document() ? tr("No checkpoint is open.") : tr("Another file operation is still running.");
        showError(tr("Cannot Export"), message);
        Q_EMIT exportFinished(false, message);
        return;
    }
    m_documents->exportWeights(path);
    showProgress(tr("Writing %1…").arg(QFileInfo(path).fileName()));
}

void MainWindow::showSaveResult(bool ok, const QString& message, const QString& outputPath)
{
    std::function<void()> then = std::move(m_afterSave);
    m_afterSave = {};
    if (!ok) {
        showError(tr("Remapped Copy Not Saved"), message);
        Q_EMIT saveFinished(false, message);
        return;
    }
    showTransientMessage(tr("Saved %1: %2").arg(QFileInfo(outputPath).fileName(), message));
    showInformation(
        tr("Remapped Copy Saved"), tr("%1\n\n%2").arg(QDir::toNativeSeparators(outputPath), message));
    Q_EMIT saveFinished(true, message);
    if (then)
        then();
}

void MainWindow::chooseExportTarget(bool deviceMap)
{
    if (!document())
        return;
    const QString path
        = deviceMap ? askDeviceMapExportPath(this, *document()) : askMapLocationExportPath(this, *document());
    if (path.isEmpty())
        return;
    if (deviceMap && exportDeviceMapTo(path))
        showTransientMessage(tr("device_map exported to %1").arg(QDir::toNativeSeparators(path)));
    else if (!deviceMap && exportMapLocationTo(path))
        showTransientMessage(tr("Plan exported to %1").arg(QDir::toNativeSeparators(path)));
}

// --- Selection -------------------------------------------------------------------------------

void MainWindow::selectTensors(const std::vector<std::uint32_t>& tensors)
{
    const std::size_t selected = m_treePanel->selectTensors(tensors);
    if (tensors.size() > 1)
        showTransientMessage(tr("%n tensor(s) selected", nullptr, int(selected)));
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

void MainWindow::showError(const QString& title, const QString& message)
{
    Q_EMIT errorShown(message);
    if (m_suppressModalDialogs) {
        showTransientMessage(message);
        return;
    }
    // Window-modal and non-blocking: no nested event loop in the middle of a job's completion.
    auto* box = new QMessageBox(QMessageBox::Warning, title, message, QMessageBox::Ok, this);
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->setTextInteractionFlags(Qt::TextSelectableByMouse);
    box->open();
}

void MainWindow::showInformation(const QString& title, const QString& message)
{
    if (m_suppressModalDialogs)
        return;
    auto* box = new QMessageBox(QMessageBox::Information, title, message, QMessageBox::Ok, this);
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->setTextInteractionFlags(Qt::TextSelectableByMouse);
    box->open();
}

} // namespace ckpt
