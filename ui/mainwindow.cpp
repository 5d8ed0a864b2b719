#include "ui/mainwindow.h"

#include "ui/widgets/devicecolors.h"

#include "core/plan/autoplacement.h"
#include "core/read/checkpointreader.h"
#include "core/triage/triage.h"
#include "core/write/remapwriter.h"
#include "ui/appsettings.h"
#include "ui/dialogs/targetdialog.h"
#include "ui/document/checkpointdocument.h"
#include "ui/models/tensorfilterproxymodel.h"
#include "ui/models/tensortreemodel.h"
#include "ui/widgets/detailspane.h"
#include "ui/widgets/devicepanel.h"
#include "ui/widgets/findingspanel.h"
#include "ui/widgets/memorychartwidget.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QCloseEvent>
#include <QComboBox>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDir>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QElapsedTimer>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QFutureWatcher>
#include <QHeaderView>
#include <QJsonDocument>
#include <QJsonObject>
#include <QKeySequence>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QProgressDialog>
#include <QSaveFile>
#include <QSplitter>
#include <QStatusBar>
#include <QTimer>
#include <QTreeView>
#include <QUndoGroup>
#include <QUndoStack>
#include <QUndoView>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include <atomic>
#include <set>

namespace ckpt {

// What a background job shares with the GUI thread: progress written by the worker, read by a
// timer (throttled), and the cancel flag the worker's progress callback answers with.
struct MainWindow::BackgroundJob {
    std::atomic<std::uint64_t> done {0};
    std::atomic<std::uint64_t> total {0};
    std::atomic<bool> cancelled {false};
    QElapsedTimer elapsed;
    bool progressCallback(std::uint64_t d, std::uint64_t t)
    {
        done.store(d, std::memory_order_relaxed);
        total.store(t, std::memory_order_relaxed);
        return !cancelled.load(std::memory_order_relaxed);
    }
};

namespace {

QString fromStd(const std::string& text)
{
    return QString::fromStdString(text);
}

const QString kTreeTooltip = QObject::tr(
    "Every tensor of the checkpoint. Recorded: the device torch.save wrote for its storage. Planned: where "
    "the remapped copy puts it. A storage is the block of bytes tensors view; tensors sharing a storage "
    "always move together.\nDrag rows onto a device card to plan them there.");

} // namespace

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent)
    , m_settings(std::make_unique<AppSettings>())
{
    setWindowTitle(tr("Checkpoint Inspector"));
    setAcceptDrops(true);

    m_emptyStateLabel = new QLabel(tr("Open a PyTorch checkpoint (File > Open…)"), this);
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

    m_progressTimer = new QTimer(this);
    m_progressTimer->setInterval(100);
    connect(m_progressTimer, &QTimer::timeout, this, [this] {
        if (!m_job || !m_progressDialog)
            return;
        const std::uint64_t done = m_job->done.load(std::memory_order_relaxed);
        const std::uint64_t total = m_job->total.load(std::memory_order_relaxed);
        if (total == 0)
            return;
        const double fraction = std::min(1.0, double(done) / double(total));
        m_progressDialog->setValue(int(fraction * 1000));
        if (fraction > 0.02) {
            const double seconds = double(m_job->elapsed.elapsed()) / 1000.0 * (1.0 - fraction) / fraction;
            const QString base = m_progressDialog->property("baseLabel").toString();
            m_progressDialog->setLabelText(
                base + QLatin1Char('\n') + tr("about %1 s left").arg(std::max(1, int(seconds + 0.5))));
        }
    });

    createActions();
    createMenus();

    // The target: the saved profile used last, else this machine.
    const QString lastProfile = m_settings->lastTargetProfile();
    if (!lastProfile.isEmpty()) {
        TargetProfiles profiles;
        profiles.load();
        auto machine = resolveMachine(lastProfile.toStdString(), profiles);
        if (machine) {
            m_target = std::move(machine.value());
            m_target.name = lastProfile.toStdString();
            m_targetProfile = lastProfile;
        }
    }
    if (m_targetProfile.isEmpty())
        m_target = thisMachine();

    restoreSettings();
    updateActions();
}

MainWindow::~MainWindow()
{
    // Workers hold only shared data; a cancelled one ends at its next progress report.
    if (m_job)
        m_job->cancelled = true;
    if (m_document) {
        m_filterModel->setSourceModel(nullptr);
        delete m_treeModel;
        m_treeModel = nullptr;
        m_devicePanel->setDocument(nullptr);
        m_memoryChart->setDocument(nullptr);
        m_detailsPane->setDocument(nullptr);
        delete m_document.data();
    }
}

void MainWindow::createWidgets()
{
    // Left: filter and tree.
    auto* treeSide = new QWidget(this);
    m_filterEdit = new QLineEdit(treeSide);
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
    m_treeView = new QTreeView(treeSide);
    m_treeView->setObjectName(QStringLiteral("tensorTree"));
    m_treeView->setAccessibleName(tr("Tensors by module"));
    m_treeView->setToolTip(kTreeTooltip);
    m_treeView->setUniformRowHeights(true);
    m_treeView->setAlternatingRowColors(true);
    m_treeView->setSelectionMode(QAbstractItemView::ExtendedSelection);
    m_treeView->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_treeView->setDragEnabled(true);
    m_treeView->setDragDropMode(QAbstractItemView::DragOnly);
    m_treeView->setModel(m_filterModel);
    // No sort column at first: the file's own order, until a header is clicked.
    m_treeView->header()->setSortIndicator(-1, Qt::AscendingOrder);
    m_treeView->setSortingEnabled(true);
    m_treeView->header()->setStretchLastSection(false);
    connect(m_treeView->selectionModel(), &QItemSelectionModel::currentChanged, this,
        &MainWindow::selectionChanged);
    connect(m_treeView->selectionModel(), &QItemSelectionModel::selectionChanged, this,
        &MainWindow::updateActions);

    auto* treeLayout = new QVBoxLayout(treeSide);
    treeLayout->setContentsMargins(0, 0, 0, 0);
    treeLayout->setSpacing(4);
    treeLayout->addWidget(m_filterEdit);
    treeLayout->addWidget(m_treeView, 1);
    // The colour legend of the tree: one swatch per device of the target and of the file.
    m_legendLabel = new QLabel(treeSide);
    m_legendLabel->setObjectName(QStringLiteral("deviceLegend"));
    m_legendLabel->setAccessibleName(tr("Device colour legend"));
    m_legendLabel->setToolTip(
        tr("Rows are coloured by their planned device: where the storage will land when the "
           "saved copy is loaded. A module mixing devices shows stripes."));
    m_legendLabel->setTextFormat(Qt::RichText);
    treeLayout->addWidget(m_legendLabel);

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
    connect(m_detailsPane, &DetailsPane::tensorActivated, this, &MainWindow::selectTensor);

    m_sideSplitter = new QSplitter(Qt::Vertical, this);
    m_sideSplitter->setObjectName(QStringLiteral("sideSplitter"));
    m_sideSplitter->addWidget(m_devicePanel);
    m_sideSplitter->addWidget(m_memoryChart);
    m_sideSplitter->addWidget(m_detailsPane);
    m_sideSplitter->setStretchFactor(0, 2);
    m_sideSplitter->setStretchFactor(1, 3);
    m_sideSplitter->setStretchFactor(2, 2);

    m_mainSplitter = new QSplitter(Qt::Horizontal, this);
    m_mainSplitter->setObjectName(QStringLiteral("mainSplitter"));
    m_mainSplitter->addWidget(treeSide);
    m_mainSplitter->addWidget(m_sideSplitter);
    m_mainSplitter->setStretchFactor(0, 3);
    m_mainSplitter->setStretchFactor(1, 2);
    m_mainSplitter->hide(); // the empty state is the central widget until a file is open

    m_undoView = new QUndoView(m_undoGroup);
    m_undoView->setObjectName(QStringLiteral("historyView"));
    m_undoView->setEmptyLabel(tr("<as opened>"));
    m_undoView->setAccessibleName(tr("History of placement changes"));
    m_undoView->setToolTip(tr("Every placement change; click a row to go back to it"));
    m_historyDock = new QDockWidget(tr("History"), this);
    m_historyDock->setObjectName(QStringLiteral("historyDock"));
    m_historyDock->setWidget(m_undoView);
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
    m_openAction = new QAction(tr("&Open…"), this);
    m_openAction->setObjectName(QStringLiteral("actionOpen"));
    m_openAction->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_O));
    m_openAction->setStatusTip(tr("Open a PyTorch checkpoint without running its pickle code"));
    connect(m_openAction, &QAction::triggered, this, &MainWindow::chooseFileToOpen);

    m_saveAction = new QAction(tr("&Save Remapped Copy…"), this);
    m_saveAction->setObjectName(QStringLiteral("actionSaveRemapped"));
    m_saveAction->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_S));
    m_saveAction->setStatusTip(
        tr("Write a copy whose recorded devices are the planned ones (never over the input)"));
    connect(m_saveAction, &QAction::triggered, this, [this] { chooseSaveTarget(); });

    m_exportMapLocationAction = new QAction(tr("Export Plan as &map_location…"), this);
    m_exportMapLocationAction->setObjectName(QStringLiteral("actionExportMapLocation"));
    m_exportMapLocationAction->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_E));
    m_exportMapLocationAction->setStatusTip(
        tr("Python for torch.load that applies the plan to the original file"));
    connect(m_exportMapLocationAction, &QAction::triggered, this, &MainWindow::chooseMapLocationTarget);

    m_exportDeviceMapAction = new QAction(tr("Export Plan as &device_map…"), this);
    m_exportDeviceMapAction->setObjectName(QStringLiteral("actionExportDeviceMap"));
    m_exportDeviceMapAction->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_E));
    m_exportDeviceMapAction->setStatusTip(
        tr("A Hugging Face style device_map (module prefix → device) as JSON"));
    connect(m_exportDeviceMapAction, &QAction::triggered, this, &MainWindow::chooseDeviceMapTarget);

    m_closeAction = new QAction(tr("&Close"), this);
    m_closeAction->setObjectName(QStringLiteral("actionClose"));
    m_closeAction->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_W));
    connect(m_closeAction, &QAction::triggered, this, &MainWindow::closeDocument);

    // Explicit keys: QKeySequence::Quit is empty under some platform themes.
    m_quitAction = new QAction(tr("&Quit"), this);
    m_quitAction->setObjectName(QStringLiteral("actionQuit"));
    m_quitAction->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Q));
    m_quitAction->setMenuRole(QAction::QuitRole);
    m_quitAction->setStatusTip(tr("Close every window and quit"));
    connect(m_quitAction, &QAction::triggered, qApp, &QApplication::closeAllWindows);

    // The group follows the open document's stack.
    m_undoAction = m_undoGroup->createUndoAction(this, tr("&Undo"));
    m_undoAction->setObjectName(QStringLiteral("actionUndo"));
    m_undoAction->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Z));
    m_redoAction = m_undoGroup->createRedoAction(this, tr("&Redo"));
    m_redoAction->setObjectName(QStringLiteral("actionRedo"));
    m_redoAction->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Z));

    m_selectSharingAction = new QAction(tr("Select Tensors &Sharing Storage"), this);
    m_selectSharingAction->setObjectName(QStringLiteral("actionSelectSharing"));
    m_selectSharingAction->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_A));
    m_selectSharingAction->setStatusTip(
        tr("Adds every tensor that views the same storage as a selected one: they move together"));
    connect(m_selectSharingAction, &QAction::triggered, this, &MainWindow::selectTensorsSharingStorage);

    m_everythingToCpuAction = new QAction(tr("Everything to &CPU"), this);
    m_everythingToCpuAction->setObjectName(QStringLiteral("actionEverythingToCpu"));
    m_everythingToCpuAction->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_C));
    connect(m_everythingToCpuAction, &QAction::triggered, this, &MainWindow::everythingToCpu);

    m_mapEveryAction = new QAction(tr("&Map Every Device to…"), this);
    m_mapEveryAction->setObjectName(QStringLiteral("actionMapEvery"));
    m_mapEveryAction->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_M));
    connect(m_mapEveryAction, &QAction::triggered, this, &MainWindow::mapEveryTag);

    m_autoBalancedAction = new QAction(tr("Automatic Placement (&Balanced)"), this);
    m_autoBalancedAction->setObjectName(QStringLiteral("actionAutoBalanced"));
    m_autoBalancedAction->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_B));
    m_autoBalancedAction->setStatusTip(tr("Spread the blocks evenly over the target's GPUs, then the CPU"));
    connect(m_autoBalancedAction, &QAction::triggered, this, [this] { autoPlace(true); });

    m_autoSequentialAction = new QAction(tr("Automatic Placement (&Sequential)"), this);
    m_autoSequentialAction->setObjectName(QStringLiteral("actionAutoSequential"));
    m_autoSequentialAction->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_B));
    m_autoSequentialAction->setStatusTip(tr("Fill cuda:0, then cuda:1, …, then the CPU"));
    connect(m_autoSequentialAction, &QAction::triggered, this, [this] { autoPlace(false); });

    m_demoAction = new QAction(tr("Open &Demo Checkpoint"), this);
    m_demoAction->setObjectName(QStringLiteral("actionOpenDemo"));
    m_demoAction->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_D));
    m_demoAction->setStatusTip(tr("A small transformer saved on cuda:0, cuda:1 and cpu"));
    connect(m_demoAction, &QAction::triggered, this, &MainWindow::openDemoCheckpoint);

    m_aboutAction = new QAction(tr("&About Checkpoint Inspector"), this);
    m_aboutAction->setObjectName(QStringLiteral("actionAbout"));
    m_aboutAction->setMenuRole(QAction::AboutRole);
    m_aboutAction->setShortcut(QKeySequence(Qt::Key_F1));
    connect(m_aboutAction, &QAction::triggered, this, [this] {
        QMessageBox::about(this, tr("About Checkpoint Inspector"),
            tr("<h3>Checkpoint Inspector %1</h3>"
               "<p>Opens PyTorch checkpoints without running their pickle code, shows the device every "
               "tensor was recorded on, and writes a copy that loads on the devices you plan.</p>")
                .arg(QStringLiteral(CKPT_VERSION)));
    });
}

void MainWindow::createMenus()
{
    QMenu* fileMenu = menuBar()->addMenu(tr("&File"));
    fileMenu->setObjectName(QStringLiteral("fileMenu"));
    fileMenu->addAction(m_openAction);
    m_recentMenu = fileMenu->addMenu(tr("Open &Recent"));
    m_recentMenu->setObjectName(QStringLiteral("recentMenu"));
    connect(m_recentMenu, &QMenu::aboutToShow, this, &MainWindow::rebuildRecentMenu);
    rebuildRecentMenu();
    fileMenu->addSeparator();
    fileMenu->addAction(m_saveAction);
    fileMenu->addAction(m_exportMapLocationAction);
    fileMenu->addAction(m_exportDeviceMapAction);
    fileMenu->addSeparator();
    fileMenu->addAction(m_closeAction);
    fileMenu->addAction(m_quitAction);

    QMenu* editMenu = menuBar()->addMenu(tr("&Edit"));
    editMenu->setObjectName(QStringLiteral("editMenu"));
    editMenu->addAction(m_undoAction);
    editMenu->addAction(m_redoAction);
    editMenu->addSeparator();
    editMenu->addAction(m_selectSharingAction);
    QAction* findAction = editMenu->addAction(tr("&Filter Tensors"), this, [this] {
        m_filterEdit->setFocus(Qt::ShortcutFocusReason);
        m_filterEdit->selectAll();
    });
    findAction->setObjectName(QStringLiteral("actionFilter"));
    findAction->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_F));

    QMenu* planMenu = menuBar()->addMenu(tr("&Plan"));
    planMenu->setObjectName(QStringLiteral("planMenu"));
    planMenu->addAction(m_everythingToCpuAction);
    planMenu->addAction(m_mapEveryAction);
    planMenu->addSeparator();
    planMenu->addAction(m_autoBalancedAction);
    planMenu->addAction(m_autoSequentialAction);
    planMenu->addSeparator();
    m_targetMenu = planMenu->addMenu(tr("&Target Machine"));
    m_targetMenu->setObjectName(QStringLiteral("targetMenu"));
    m_targetGroup = new QActionGroup(this);
    connect(m_targetMenu, &QMenu::aboutToShow, this, &MainWindow::rebuildTargetMenu);
    rebuildTargetMenu();

    QMenu* viewMenu = menuBar()->addMenu(tr("&View"));
    viewMenu->setObjectName(QStringLiteral("viewMenu"));
    QAction* historyToggle = m_historyDock->toggleViewAction();
    historyToggle->setObjectName(QStringLiteral("actionShowHistory"));
    historyToggle->setText(tr("&History"));
    historyToggle->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_H));
    viewMenu->addAction(historyToggle);
    QAction* findingsToggle = m_findingsDock->toggleViewAction();
    findingsToggle->setObjectName(QStringLiteral("actionShowFindings"));
    findingsToggle->setText(tr("&Findings"));
    findingsToggle->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_F));
    findingsToggle->setStatusTip(
        tr("Why the file may not load here, whether it is safe to load, whether it is intact"));
    viewMenu->addAction(findingsToggle);

    QMenu* helpMenu = menuBar()->addMenu(tr("&Help"));
    helpMenu->setObjectName(QStringLiteral("helpMenu"));
    helpMenu->addAction(m_demoAction);
    helpMenu->addSeparator();
    helpMenu->addAction(m_aboutAction);
}

void MainWindow::rebuildRecentMenu()
{
    m_recentMenu->clear();
    const QStringList files = m_settings->recentFiles();
    int number = 1;
    for (const QString& path : files) {
        QAction* action = m_recentMenu->addAction(
            QStringLiteral("&%1 %2").arg(number % 10).arg(QFileInfo(path).fileName()), this,
            [this, path] { openFile(path); });
        action->setToolTip(QDir::toNativeSeparators(path));
        action->setStatusTip(QDir::toNativeSeparators(path));
        ++number;
    }
    if (files.isEmpty())
        m_recentMenu->addAction(tr("No recent files"))->setEnabled(false);
    m_recentMenu->addSeparator();
    QAction* clear = m_recentMenu->addAction(
        tr("&Clear Recent Files"), this, [this] { m_settings->clearRecentFiles(); });
    clear->setEnabled(!files.isEmpty());
}

void MainWindow::rebuildTargetMenu()
{
    m_targetMenu->clear();
    const auto actions = m_targetGroup->actions();
    for (QAction* action : actions)
        m_targetGroup->removeAction(action);

    QAction* thisMachineAction
        = m_targetMenu->addAction(tr("This Machine (detected)"), this, &MainWindow::useThisMachine);
    thisMachineAction->setObjectName(QStringLiteral("actionTargetThisMachine"));
    thisMachineAction->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_T));
    thisMachineAction->setCheckable(true);
    thisMachineAction->setChecked(m_targetProfile.isEmpty() && !m_target.described);
    m_targetGroup->addAction(thisMachineAction);

    TargetProfiles profiles;
    profiles.load();
    if (!profiles.profiles().empty())
        m_targetMenu->addSeparator();
    for (const auto& [name, spec] : profiles.profiles()) {
        const QString profileName = fromStd(name);
        QAction* action
            = m_targetMenu->addAction(profileName, this, [this, profileName] { useProfile(profileName); });
        action->setToolTip(fromStd(spec));
        action->setStatusTip(fromStd(spec));
        action->setCheckable(true);
        action->setChecked(profileName == m_targetProfile);
        m_targetGroup->addAction(action);
    }
    m_targetMenu->addSeparator();
    QAction* describe
        = m_targetMenu->addAction(tr("&Describe a Target Machine…"), this, &MainWindow::describeTarget);
    describe->setObjectName(QStringLiteral("actionDescribeTarget"));
    describe->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_T));
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
        m_mainSplitter->setSizes({720, 680});
    const QByteArray sideState = m_settings->splitterState(m_sideSplitter->objectName());
    if (sideState.isEmpty() || !m_sideSplitter->restoreState(sideState))
        m_sideSplitter->setSizes({190, 300, 290});
}

void MainWindow::saveSettings()
{
    m_settings->setWindowGeometry(saveGeometry());
    m_settings->setWindowState(saveState());
    m_settings->setSplitterState(m_mainSplitter->objectName(), m_mainSplitter->saveState());
    m_settings->setSplitterState(m_sideSplitter->objectName(), m_sideSplitter->saveState());
}

const MachineInventory& MainWindow::thisMachine()
{
    if (!m_thisMachine)
        m_thisMachine = detectThisMachine();
    return *m_thisMachine;
}

void MainWindow::setDemoCheckpointPath(const QString& path)
{
    m_demoCheckpointPath = path;
    updateActions();
}

// --- Opening ---------------------------------------------------------------------------------

void MainWindow::chooseFileToOpen()
{
    const QString startDir = m_currentFile.isEmpty() ? QString() : QFileInfo(m_currentFile).absolutePath();
    const QString path = QFileDialog::getOpenFileName(this, tr("Open Checkpoint"), startDir,
        tr("PyTorch checkpoints (*.pt *.pth *.bin *.ckpt *.tar *.safetensors);;All files (*)"));
    if (!path.isEmpty())
        openFile(path);
}

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

std::shared_ptr<MainWindow::BackgroundJob> MainWindow::startProgress(const QString& label)
{
    stopProgress();
    m_job = std::make_shared<BackgroundJob>();
    m_job->elapsed.start();
    m_progressDialog = new QProgressDialog(label, tr("Cancel"), 0, 1000, this);
    m_progressDialog->setObjectName(QStringLiteral("progressDialog"));
    m_progressDialog->setProperty("baseLabel", label);
    m_progressDialog->setWindowModality(Qt::WindowModal);
    m_progressDialog->setMinimumDuration(400);
    m_progressDialog->setAutoClose(false);
    m_progressDialog->setAutoReset(false);
    m_progressDialog->setValue(0);
    const std::weak_ptr<BackgroundJob> weakJob = m_job;
    connect(m_progressDialog, &QProgressDialog::canceled, this, [weakJob] {
        if (const auto job = weakJob.lock())
            job->cancelled = true;
    });
    m_progressTimer->start();
    updateActions();
    return m_job;
}

void MainWindow::stopProgress()
{
    m_progressTimer->stop();
    if (m_progressDialog) {
        m_progressDialog->hide();
        m_progressDialog->deleteLater();
        m_progressDialog = nullptr;
    }
    m_job.reset();
    updateActions();
}

CheckpointDocument* MainWindow::document() const
{
    return m_document.data();
}

bool MainWindow::isBusy() const
{
    return m_job != nullptr;
}

void MainWindow::openFile(const QString& path)
{
    if (!maybeKeepChanges([this, path] { openFile(path); }))
        return;
    m_currentFile = path;
    m_currentFileLabel->setText(QDir::toNativeSeparators(path));

    const quint64 generation = ++m_openGeneration;
    ++m_saveGeneration; // a save still running belongs to the document being replaced
    const auto job = startProgress(tr("Reading %1…").arg(QFileInfo(path).fileName()));
    auto* watcher = new QFutureWatcher<std::shared_ptr<Checkpoint>>(this);
    connect(watcher, &QFutureWatcherBase::finished, this, [this, watcher, generation] {
        watcher->deleteLater();
        finishOpening(generation, watcher->result());
    });
    watcher->setFuture(QtConcurrent::run([file = path.toStdString(), job] {
        ReadOptions options;
        options.pickleLimits.progress
            = [job](std::uint64_t done, std::uint64_t total) { return job->progressCallback(done, total); };
        return std::make_shared<Checkpoint>(readCheckpoint(file, options));
    }));
}

void MainWindow::finishOpening(quint64 generation, std::shared_ptr<Checkpoint> checkpoint)
{
    if (generation != m_openGeneration)
        return; // a later open (or close) superseded this one
    const bool cancelled = m_job && m_job->cancelled;
    stopProgress();
    const QString path = fromStd(checkpoint->path);
    const QString name = QFileInfo(path).fileName();

    if (cancelled) {
        m_currentFile = m_document ? m_document->filePath() : QString();
        m_currentFileLabel->setText(QDir::toNativeSeparators(m_currentFile));
        showTransientMessage(tr("Opening %1 cancelled").arg(name));
        return;
    }

    QStringList errors;
    for (const Finding& finding : checkpoint->findings) {
        if (finding.severity == Severity::Error)
            errors.append(fromStd(finding.message));
    }
    if (errors.size() > 8) {
        const qsizetype more = errors.size() - 8;
        errors.resize(8);
        errors.append(tr("… and %1 more").arg(more));
    }

    const bool nothingToShow
        = checkpoint->format == CheckpointFormat::NotACheckpoint || checkpoint->tree.empty();
    if (nothingToShow) {
        QString message = fromStd(checkpoint->container.description);
        if (message.isEmpty())
            message = errors.isEmpty() ? tr("The file holds no checkpoint this tool can read.")
                                       : errors.join(QLatin1Char('\n'));
        else if (!errors.isEmpty())
            message += QLatin1Char('\n') + errors.join(QLatin1Char('\n'));
        const QString text = tr("%1 could not be opened as a checkpoint:\n%2").arg(name, message);
        m_currentFile = m_document ? m_document->filePath() : QString();
        m_currentFileLabel->setText(QDir::toNativeSeparators(m_currentFile));
        if (!m_document)
            m_emptyStateLabel->setText(text);
        Q_EMIT openFailed(text);
        showError(tr("Not a Checkpoint"), text);
        return;
    }

    showDocument(std::move(checkpoint));
    m_settings->addRecentFile(path);
    Q_EMIT checkpointOpened();
    if (!errors.isEmpty()) {
        showError(tr("Problems Reading %1").arg(name),
            tr("%1 was read as far as possible; what is shown may be incomplete:\n%2")
                .arg(name, errors.join(QLatin1Char('\n'))));
    }
}

void MainWindow::showDocument(std::shared_ptr<Checkpoint> checkpoint)
{
    CheckpointDocument* old = m_document.data();
    auto* document = new CheckpointDocument(std::move(checkpoint), m_target, this);

    // Views first move to the new document, then the old one goes.
    TensorTreeModel* oldModel = m_treeModel;
    m_treeModel = new TensorTreeModel(document, this);
    m_filterModel->setSourceModel(m_treeModel);
    delete oldModel;
    m_devicePanel->setDocument(document);
    m_memoryChart->setDocument(document);
    m_detailsPane->setDocument(document);
    m_undoGroup->addStack(document->undoStack());
    m_undoGroup->setActiveStack(document->undoStack());
    connect(document->undoStack(), &QUndoStack::cleanChanged, this, &MainWindow::updateTitle);
    connect(document->undoStack(), &QUndoStack::indexChanged, this, &MainWindow::updateActions);
    connect(document, &CheckpointDocument::targetChanged, this, &MainWindow::updateStatusSummary);
    connect(document, &CheckpointDocument::targetChanged, this, &MainWindow::startTriage);
    m_document = document;
    if (old) {
        m_undoGroup->removeStack(old->undoStack());
        delete old;
    }
    m_autoDeviceMap.clear();
    m_autoDeviceMapIndex = -1;
    m_currentFile = document->filePath();
    m_currentFileLabel->setText(QDir::toNativeSeparators(m_currentFile));

    if (centralWidget() != m_mainSplitter) {
        takeCentralWidget()->hide();
        setCentralWidget(m_mainSplitter);
        m_mainSplitter->show();
    }
    // Open the first levels; deeper ones on demand (a million rows must not be expanded here).
    const QModelIndex root = m_filterModel->index(0, 0);
    const int topRows = m_filterModel->rowCount();
    if (document->checkpoint().tensors.size() <= 5000)
        m_treeView->expandToDepth(topRows == 1 ? 2 : 1);
    else if (root.isValid())
        m_treeView->expand(root);
    m_treeView->header()->setSectionResizeMode(TensorTreeModel::NameColumn, QHeaderView::Stretch);
    const int widths[] = {0, 70, 90, 72, 80, 130};
    for (int column = 1; column < TensorTreeModel::ColumnCount; ++column) {
        m_treeView->header()->setSectionResizeMode(column, QHeaderView::Interactive);
        m_treeView->setColumnWidth(column, widths[column]);
    }
    m_detailsPane->showTreeNode(std::nullopt);
    updateTitle();
    updateStatusSummary();
    updateActions();
    m_findingsPanel->clear();
    startTriage();
}

void MainWindow::startTriage()
{
    if (!m_document)
        return;
    const quint64 generation = ++m_triageGeneration;
    m_triageRunning = true;
    m_findingsPanel->setChecking(true);
    TriageOptions options;
    options.target = m_document->target();
    // map_location=None: what a plain torch.load does; values are the details pane's business.
    const QString targetName = fromStd(m_document->target().name);
    auto checkpoint = m_document->sharedCheckpoint();
    auto* watcher = new QFutureWatcher<std::shared_ptr<TriageReport>>(this);
    connect(
        watcher, &QFutureWatcherBase::finished, this, [this, watcher, generation, checkpoint, targetName] {
            watcher->deleteLater();
            if (generation != m_triageGeneration || !m_document
                || m_document->sharedCheckpoint() != checkpoint)
                return; // a later open, close or target superseded it
            m_triageRunning = false;
            const std::shared_ptr<TriageReport> report = watcher->result();
            m_findingsPanel->setReport(*report, checkpoint, targetName);
            if (m_treeModel)
                m_treeModel->setFindings(report->findings);
            Q_EMIT triageFinished();
        });
    watcher->setFuture(QtConcurrent::run([checkpoint, options = std::move(options)] {
        return std::make_shared<TriageReport>(triage(*checkpoint, options));
    }));
}

void MainWindow::closeDocument()
{
    if (!maybeKeepChanges([this] { closeDocument(); }))
        return;
    ++m_openGeneration;
    ++m_saveGeneration;
    stopProgress();
    if (m_document) {
        m_filterModel->setSourceModel(nullptr);
        delete m_treeModel;
        m_treeModel = nullptr;
        m_devicePanel->setDocument(nullptr);
        m_memoryChart->setDocument(nullptr);
        m_detailsPane->setDocument(nullptr);
        m_undoGroup->removeStack(m_document->undoStack());
        delete m_document.data();
    }
    ++m_triageGeneration;
    m_triageRunning = false;
    m_findingsPanel->clear();
    if (centralWidget() != m_emptyStateLabel) {
        takeCentralWidget()->hide();
        setCentralWidget(m_emptyStateLabel);
        m_emptyStateLabel->show();
    }
    m_emptyStateLabel->setText(tr("Open a PyTorch checkpoint (File > Open…)"));
    m_currentFile.clear();
    m_currentFileLabel->clear();
    updateTitle();
    updateStatusSummary();
    updateActions();
}

bool MainWindow::maybeKeepChanges(std::function<void()> then)
{
    if (!m_document || !m_document->isModified())
        return true;
    if (m_suppressModalDialogs)
        return true; // tests: discard
    QMessageBox box(QMessageBox::Warning, tr("Unsaved Placement"),
        tr("The placement of %1 was changed but no remapped copy was saved.")
            .arg(QFileInfo(m_document->filePath()).fileName()),
        QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel, this);
    box.setInformativeText(tr("Save a remapped copy first?"));
    box.setDefaultButton(QMessageBox::Save);
    switch (box.exec()) {
    case QMessageBox::Save:
        chooseSaveTarget(std::move(then));
        return false;
    case QMessageBox::Discard:
        m_document->undoStack()->setClean(); // asked once is enough
        return true;
    default:
        return false;
    }
}

void MainWindow::closeEvent(QCloseEvent* event)
{
    if (!maybeKeepChanges([this] { close(); })) {
        event->ignore();
        return;
    }
    if (m_job)
        m_job->cancelled = true;
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
    if (!m_document)
        return;
    const QFileInfo input(m_document->filePath());
    QString suffix = QStringLiteral("remapped");
    if (const auto mapping = m_document->plan().asTagMapping()) {
        std::set<std::string> targets;
        for (const auto& [from, to] : *mapping)
            targets.insert(to);
        if (targets.size() == 1)
            suffix = fromStd(*targets.begin()).replace(QLatin1Char(':'), QLatin1Char('-'));
    }
    const QString proposal
        = input.dir().filePath(input.completeBaseName() + QLatin1Char('-') + suffix + QStringLiteral(".pt"));
    const QString path = QFileDialog::getSaveFileName(this, tr("Save Remapped Copy"), proposal,
        tr("PyTorch checkpoints (*.pt *.pth *.bin *.ckpt);;All files (*)"));
    if (path.isEmpty())
        return;
    m_afterSave = std::move(then);
    saveRemappedCopyTo(path);
}

void MainWindow::saveRemappedCopyTo(const QString& path)
{
    if (!m_document || isBusy()) {
        const QString message
            = !m_document ? tr("No checkpoint is open.") : tr("Another file operation is still running.");
        showError(tr("Cannot Save"), message);
        Q_EMIT saveFinished(false, message);
        return;
    }
    const quint64 generation = ++m_saveGeneration;
    // The worker gets its own copy of the plan: the user may keep dragging while it writes.
    const std::shared_ptr<const Checkpoint> checkpoint = m_document->sharedCheckpoint();
    const auto plan = std::make_shared<PlacementPlan>(m_document->plan());
    const int undoIndex = m_document->undoStack()->index();
    const auto job = startProgress(tr("Writing %1…").arg(QFileInfo(path).fileName()));
    using Result = std::shared_ptr<Expected<RemapResult>>;
    auto* watcher = new QFutureWatcher<Result>(this);
    connect(watcher, &QFutureWatcherBase::finished, this, [this, watcher, generation, undoIndex] {
        watcher->deleteLater();
        if (generation != m_saveGeneration)
            return;
        stopProgress();
        const Result result = watcher->result();
        std::function<void()> then = std::move(m_afterSave);
        m_afterSave = {};
        if (!*result) {
            const QString message = fromStd(result->error().message);
            showError(tr("Remapped Copy Not Saved"), message);
            Q_EMIT saveFinished(false, message);
            return;
        }
        const QString summary = fromStd((*result)->summary());
        // Clean only if nothing changed while writing: the copy has the plan as it was then.
        if (m_document && m_document->undoStack()->index() == undoIndex)
            m_document->undoStack()->setClean();
        showTransientMessage(
            tr("Saved %1: %2").arg(QFileInfo(fromStd((*result)->outputPath)).fileName(), summary));
        showInformation(tr("Remapped Copy Saved"),
            tr("%1\n\n%2").arg(QDir::toNativeSeparators(fromStd((*result)->outputPath)), summary));
        Q_EMIT saveFinished(true, summary);
        if (then)
            then();
    });
    watcher->setFuture(QtConcurrent::run([checkpoint, plan, out = path.toStdString(), job]() -> Result {
        RemapOptions options;
        options.progress
            = [job](std::uint64_t done, std::uint64_t total) { return job->progressCallback(done, total); };
        return std::make_shared<Expected<RemapResult>>(writeRemappedCopy(*checkpoint, *plan, out, options));
    }));
}

void MainWindow::chooseMapLocationTarget()
{
    if (!m_document)
        return;
    const QFileInfo input(m_document->filePath());
    const QString path = QFileDialog::getSaveFileName(this, tr("Export Plan as map_location"),
        input.dir().filePath(input.completeBaseName() + QStringLiteral("-load.py")),
        tr("Python (*.py);;All files (*)"));
    if (!path.isEmpty() && exportMapLocationTo(path))
        showTransientMessage(tr("Plan exported to %1").arg(QDir::toNativeSeparators(path)));
}

void MainWindow::chooseDeviceMapTarget()
{
    if (!m_document)
        return;
    const QFileInfo input(m_document->filePath());
    const QString path = QFileDialog::getSaveFileName(this, tr("Export Plan as device_map"),
        input.dir().filePath(input.completeBaseName() + QStringLiteral("-device_map.json")),
        tr("JSON (*.json);;All files (*)"));
    if (!path.isEmpty() && exportDeviceMapTo(path))
        showTransientMessage(tr("device_map exported to %1").arg(QDir::toNativeSeparators(path)));
}

namespace {

bool writeTextFile(const QString& path, const QByteArray& bytes, QString& error)
{
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly) || file.write(bytes) != bytes.size() || !file.commit()) {
        error = file.errorString();
        return false;
    }
    return true;
}

} // namespace

bool MainWindow::exportMapLocationTo(const QString& path)
{
    if (!m_document)
        return false;
    const std::string python = m_document->plan().asPython(m_document->checkpoint().path);
    QString error;
    if (!writeTextFile(path, QByteArray::fromStdString(python), error)) {
        showError(tr("Export Failed"),
            tr("%1 could not be written: %2").arg(QDir::toNativeSeparators(path), error));
        return false;
    }
    return true;
}

bool MainWindow::exportDeviceMapTo(const QString& path)
{
    if (!m_document)
        return false;
    std::map<std::string, std::string> deviceMap;
    if (m_autoDeviceMapIndex >= 0 && m_document->undoStack()->index() == m_autoDeviceMapIndex) {
        deviceMap = m_autoDeviceMap;
    } else {
        // A manual plan: the highest tree nodes whose tensors are all planned onto one device.
        const Checkpoint& checkpoint = m_document->checkpoint();
        std::vector<std::uint32_t> pending {0};
        while (!pending.empty()) {
            const std::uint32_t node = pending.back();
            pending.pop_back();
            if (const auto device = m_document->plannedDeviceOfNode(node)) {
                deviceMap[node == 0 ? std::string() : m_document->nodePath(node)] = *device;
                continue;
            }
            const auto& children = checkpoint.tree[node].children;
            pending.insert(pending.end(), children.rbegin(), children.rend());
        }
    }
    QJsonObject object;
    for (const auto& [prefix, device] : deviceMap) {
        // accelerate writes GPUs as ordinals.
        const QString tag = fromStd(device);
        bool isOrdinal = false;
        const int ordinal = tag.startsWith(QLatin1String("cuda:")) ? tag.mid(5).toInt(&isOrdinal) : 0;
        object.insert(fromStd(prefix), isOrdinal ? QJsonValue(ordinal) : QJsonValue(tag));
    }
    QString error;
    if (!writeTextFile(path, QJsonDocument(object).toJson(QJsonDocument::Indented), error)) {
        showError(tr("Export Failed"),
            tr("%1 could not be written: %2").arg(QDir::toNativeSeparators(path), error));
        return false;
    }
    return true;
}

// --- Plan ------------------------------------------------------------------------------------

void MainWindow::everythingToCpu()
{
    if (!m_document)
        return;
    PlacementRule rule;
    rule.kind = PlacementRule::Kind::MapTag;
    rule.subject = "*";
    rule.target = "cpu";
    showTransientMessage(m_document->move({rule}, tr("Everything to cpu")).text);
}

void MainWindow::mapEveryTag()
{
    if (!m_document)
        return;
    QDialog dialog(this);
    dialog.setWindowTitle(tr("Map Every Device to Another"));
    auto* from = new QComboBox(&dialog);
    from->setObjectName(QStringLiteral("mapFrom"));
    for (const auto& [tag, bytes] : m_document->checkpoint().bytesByDevice()) {
        if (tag != "(none)")
            from->addItem(
                QStringLiteral("%1 (%2)").arg(fromStd(tag), fromStd(formatBytes(bytes))), fromStd(tag));
    }
    auto* to = new QComboBox(&dialog);
    to->setObjectName(QStringLiteral("mapTo"));
    to->setEditable(true);
    for (const DeviceInfo& device : m_document->target().devices)
        to->addItem(fromStd(device.tag));
    if (to->findText(QStringLiteral("cpu")) < 0)
        to->addItem(QStringLiteral("cpu"));
    from->setToolTip(tr("A device recorded in the file (where torch.save found the storages)"));
    to->setToolTip(tr("The device the remapped copy records instead"));
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, &dialog);
    connect(buttons, &QDialogButtonBox::accepted, &dialog, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
    auto* layout = new QFormLayout(&dialog);
    layout->addRow(tr("Every storage recorded on:"), from);
    layout->addRow(tr("Goes to:"), to);
    layout->addRow(buttons);
    if (from->count() == 0) {
        showError(tr("Nothing to Map"), tr("No storage of this file records a device."));
        return;
    }
    if (dialog.exec() != QDialog::Accepted)
        return;
    const std::string target = to->currentText().trimmed().toStdString();
    if (!isPlausibleDeviceTag(target)) {
        showError(tr("Not a Device"),
            tr("“%1” is not a device as torch writes it (e.g. cpu, cuda:0).").arg(fromStd(target)));
        return;
    }
    PlacementRule rule;
    rule.kind = PlacementRule::Kind::MapTag;
    rule.subject = from->currentData().toString().toStdString();
    rule.target = target;
    showTransientMessage(
        m_document->move({rule}, tr("Map every %1 to %2").arg(fromStd(rule.subject), fromStd(target))).text);
}

void MainWindow::autoPlace(bool balanced)
{
    if (!m_document)
        return;
    AutoPlacementOptions options;
    options.strategy = balanced ? PlacementStrategy::Balanced : PlacementStrategy::Sequential;
    const auto placement = ckpt::placeAutomatically(m_document->checkpoint(), m_document->target(), options);
    if (!placement) {
        showError(tr("Automatic Placement Failed"), fromStd(placement.error().message));
        return;
    }
    const MoveReport report = m_document->move(placement->rules,
        balanced ? tr("Automatic placement (balanced)") : tr("Automatic placement (sequential)"));
    m_autoDeviceMap = placement->deviceMap;
    m_autoDeviceMapIndex = m_document->undoStack()->index();
    QString text = report.text;
    if (!placement->didNotFit.empty())
        text
            += tr("; %n group(s) fit nowhere and stay on the CPU", nullptr, int(placement->didNotFit.size()));
    showTransientMessage(text);
}

void MainWindow::useThisMachine()
{
    setTarget(thisMachine(), QString());
}

void MainWindow::describeTarget()
{
    TargetDialog dialog(this);
    if (m_target.described)
        dialog.setSpec(fromStd(formatMachineSpec(m_target)));
    if (dialog.exec() != QDialog::Accepted)
        return;
    if (auto machine = dialog.machine())
        setTarget(std::move(*machine), dialog.profileName());
}

void MainWindow::useProfile(const QString& name)
{
    TargetProfiles profiles;
    profiles.load();
    auto machine = resolveMachine(name.toStdString(), profiles);
    if (!machine) {
        showError(tr("Target Not Usable"), fromStd(machine.error().message));
        return;
    }
    machine->name = name.toStdString();
    setTarget(std::move(machine.value()), name);
}

void MainWindow::setTarget(MachineInventory machine, const QString& profileName)
{
    m_target = std::move(machine);
    m_targetProfile = profileName;
    m_settings->setLastTargetProfile(profileName);
    if (m_document)
        m_document->setTarget(m_target);
    showTransientMessage(tr("Target: %1").arg(fromStd(m_target.name)));
    updateStatusSummary();
}

// --- Selection -------------------------------------------------------------------------------

void MainWindow::selectionChanged()
{
    const QModelIndex current = m_filterModel->mapToSource(m_treeView->currentIndex());
    if (!current.isValid() || !m_treeModel) {
        m_detailsPane->showTreeNode(std::nullopt);
        return;
    }
    m_detailsPane->showTreeNode(current.data(TensorTreeModel::TreeNodeRole).toUInt());
}

void MainWindow::selectTensor(std::uint32_t tensor)
{
    if (!m_treeModel)
        return;
    QModelIndex index = m_filterModel->mapFromSource(m_treeModel->indexForTensor(tensor));
    if (!index.isValid() && !m_filterEdit->text().isEmpty()) {
        // Filtered out: show everything again.
        m_filterEdit->clear();
        m_filterTimer->stop();
        m_filterModel->setFilterText(QString());
        index = m_filterModel->mapFromSource(m_treeModel->indexForTensor(tensor));
    }
    if (!index.isValid())
        return;
    m_treeView->selectionModel()->setCurrentIndex(
        index, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    m_treeView->scrollTo(index);
}

void MainWindow::selectTensors(const std::vector<std::uint32_t>& tensors)
{
    if (!m_treeModel || tensors.empty())
        return;
    if (!m_filterEdit->text().isEmpty()) {
        // Some may be filtered out: show everything again.
        m_filterEdit->clear();
        m_filterTimer->stop();
        m_filterModel->setFilterText(QString());
    }
    // Selecting is per row; past a few thousand rows the tree is no help anyway.
    constexpr std::size_t kMostSelected = 20000;
    QItemSelection selection;
    QModelIndex first;
    std::size_t selected = 0;
    for (const std::uint32_t tensor : tensors) {
        const QModelIndex index = m_filterModel->mapFromSource(m_treeModel->indexForTensor(tensor));
        if (!index.isValid())
            continue;
        if (!first.isValid())
            first = index;
        selection.select(index, index);
        if (++selected == kMostSelected)
            break;
    }
    if (!first.isValid())
        return;
    m_treeView->selectionModel()->setCurrentIndex(first, QItemSelectionModel::NoUpdate);
    m_treeView->selectionModel()->select(
        selection, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    m_treeView->scrollTo(first);
    // Open the modules of the others too, so the selection can be seen.
    for (const QItemSelectionRange& range : std::as_const(selection)) {
        for (QModelIndex parent = range.topLeft().parent(); parent.isValid(); parent = parent.parent())
            if (!m_treeView->isExpanded(parent))
                m_treeView->expand(parent);
    }
    if (tensors.size() > 1)
        showTransientMessage(tr("%n tensor(s) selected", nullptr, int(selected)));
}

void MainWindow::selectTensorsSharingStorage()
{
    if (!m_document || !m_treeModel)
        return;
    const Checkpoint& checkpoint = m_document->checkpoint();
    std::set<std::uint32_t> tensors;
    const QModelIndexList rows = m_treeView->selectionModel()->selectedRows();
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
        const QModelIndex index = m_filterModel->mapFromSource(m_treeModel->indexForTensor(tensor));
        if (index.isValid()) {
            selection.select(index, index);
            m_treeView->scrollTo(index);
        }
    }
    m_treeView->selectionModel()->select(selection, QItemSelectionModel::Select | QItemSelectionModel::Rows);
    showTransientMessage(tr("%n tensor(s) share the selected storages", nullptr, int(tensors.size())));
}

// --- Status ----------------------------------------------------------------------------------

void MainWindow::updateTitle()
{
    if (!m_document) {
        setWindowTitle(tr("Checkpoint Inspector"));
        setWindowModified(false);
        return;
    }
    setWindowTitle(QStringLiteral("%1[*] — %2")
                       .arg(QFileInfo(m_document->filePath()).fileName(), tr("Checkpoint Inspector")));
    setWindowModified(m_document->isModified());
}

void MainWindow::updateActions()
{
    const bool open = m_document != nullptr;
    const bool idle = !isBusy();
    m_saveAction->setEnabled(open && idle);
    m_exportMapLocationAction->setEnabled(open);
    m_exportDeviceMapAction->setEnabled(open);
    m_closeAction->setEnabled(open);
    m_selectSharingAction->setEnabled(open && m_treeView->selectionModel()->hasSelection());
    m_everythingToCpuAction->setEnabled(open);
    m_mapEveryAction->setEnabled(open);
    m_autoBalancedAction->setEnabled(open);
    m_autoSequentialAction->setEnabled(open);
    m_demoAction->setEnabled(!m_demoCheckpointPath.isEmpty());
}

QString MainWindow::statusSummary() const
{
    if (!m_document)
        return {};
    const Checkpoint& checkpoint = m_document->checkpoint();
    return tr("%1 tensors · %2 storages · %3 · %4 · target: %5")
        .arg(fromStd(formatThousands(checkpoint.tensors.size())),
            fromStd(formatThousands(checkpoint.storages.size())),
            fromStd(formatBytes(checkpoint.totalStorageBytes())),
            QString::fromLatin1(checkpointFormatName(checkpoint.format)), fromStd(m_document->target().name));
}

void MainWindow::updateStatusSummary()
{
    m_summaryLabel->setText(statusSummary());
    updateLegend();
}

void MainWindow::updateLegend()
{
    if (!m_legendLabel)
        return;
    CheckpointDocument* current = document();
    if (!current) {
        m_legendLabel->clear();
        return;
    }
    QStringList tags;
    for (const DeviceInfo& device : current->target().devices)
        tags.append(QString::fromStdString(device.tag));
    for (const StorageRecord& storage : current->checkpoint().storages) {
        const QString tag = QString::fromStdString(storage.device.value_or("(none)"));
        if (!tags.contains(tag))
            tags.append(tag);
    }
    QString html = tr("Devices:") + QStringLiteral("&nbsp;");
    for (const QString& tag : std::as_const(tags))
        html += QStringLiteral("<span style=\"background-color:%1; color:%2\">&nbsp;%3&nbsp;</span>&nbsp; ")
                    .arg(deviceColor(tag).name(), deviceTextColor(tag).name(), tag.toHtmlEscaped());
    m_legendLabel->setText(html);
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
