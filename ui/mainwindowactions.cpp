// SPDX-License-Identifier: MIT
// The main window's action and menu tables and what its File actions do once a path is chosen
// (save a remapped copy, export weights or the plan), and how it shows errors: the half of
// MainWindow that is tables and answers, apart from its layout and wiring (mainwindow.cpp).
#include "core/base/pythonliteral.h"
#include "core/plan/devicemap.h"
#include "core/tasks/exportplan.h"
#include "ui/actiontable.h"
#include "ui/base/appsettings.h"
#include "ui/compare/comparisondock.h"
#include "ui/deviceshortcuts.h"
#include "ui/dialogs/dangeroussave.h"
#include "ui/dialogs/filedialogs.h"
#include "ui/document/checkpointdocument.h"
#include "ui/document/documentcontroller.h"
#include "ui/guidedtour.h"
#include "ui/jobs/jobprogressdialog.h"
#include "ui/jobs/jobtracker.h"
#include "ui/mainwindow.h"
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
#include "ui/widgets/valuescanpanel.h"
#include "version.h"

#include <QApplication>
#include <QClipboard>
#include <QCloseEvent>
#include <QDir>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileInfo>
#include <QGuiApplication>
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

#include <set>

namespace ckpt {

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
        // A checkpoint where it lies: read through HTTP range requests, only what the tree needs.
        {"actionOpenUrl", tr("Open &URL…"), {},
            tr("Open an http(s) URL of a checkpoint or of an index (*.index.json) without downloading it"),
            [this] {
                if (const QString url = askCheckpointUrlToOpen(this); !url.isEmpty())
                    openFile(url);
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
                const QString path = askWeightsExportPath(this, *document());
                if (path.isEmpty())
                    return;
                if (const auto choices = askWeightsValueChoices(this, path))
                    exportWeightsTo(path, *choices);
            }},
        {"actionCompareWith", tr("Co&mpare With…"), {},
            tr("What changed between the open checkpoint and another file or folder: tensors added, "
               "removed, renamed, and changed in dtype, shape, device or value"),
            [this] { findChild<ComparisonDock*>()->chooseFileAndCompare(); }},
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
        {"actionScanValues", tr("Scan &Values"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_V),
            tr("Reads every tensor's values (every shard of a folder) and lists those holding NaN or "
               "infinity"),
            [this] {
                m_valueScanDock->show();
                m_valueScanDock->raise();
                m_valueScanPanel->startScan();
            }},
        {"actionFilter", tr("&Filter Tensors"), QKeySequence(Qt::CTRL | Qt::Key_F), {},
            [this] { m_treePanel->focusFilter(); }},
        // The keyboard's way between the panes: the tree, the device cards, the findings.
        {"actionNextPane", tr("Next &Pane"), QKeySequence(Qt::Key_F6),
            tr("Moves the keyboard focus to the next of the tree, the device cards and the findings"),
            [this] { focusNextPane(1); }},
        {"actionPreviousPane", tr("Pre&vious Pane"), QKeySequence(Qt::SHIFT | Qt::Key_F6), {},
            [this] { focusNextPane(-1); }},
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
                        .arg(QLatin1String(ckpt::kVersion)));
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
    QAction* devices = m_devicesDock->toggleViewAction();
    devices->setObjectName(QStringLiteral("actionShowDevices"));
    devices->setText(tr("&Devices and Memory"));
    devices->setStatusTip(tr("The target's device cards (drop rows on them) and the memory chart"));
    QAction* details = m_detailsDock->toggleViewAction();
    details->setObjectName(QStringLiteral("actionShowDetails"));
    details->setText(tr("D&etails"));
    details->setShortcut(QKeySequence(Qt::CTRL | Qt::ALT | Qt::Key_D));
    details->setStatusTip(tr("What the current row is, in full; shown while a row is current"));
}

QMenu* MainWindow::createTreeContextMenu(QWidget* parent)
{
    auto* menu = new QMenu(parent);
    menu->setObjectName(QStringLiteral("treeContextMenu"));
    QModelIndexList rows;
    const QModelIndexList selected = treeView()->selectionModel()->selectedRows();
    for (const QModelIndex& index : selected)
        rows.append(filterModel()->mapToSource(index));
    if (!document() || rows.isEmpty())
        return menu;

    // Moves: the Plan menu's own actions, which drop the selection's payload on the device (the
    // same MoveCommand, the same undo as a drag).
    if (auto* moves = findChild<QMenu*>(QStringLiteral("moveSelectionMenu")))
        menu->addMenu(moves);
    menu->addSeparator();

    const auto copy = [this](const QString& text, const QString& what) {
        QGuiApplication::clipboard()->setText(text);
        showTransientMessage(tr("Copied %1").arg(what));
    };
    QStringList names;
    std::vector<std::pair<std::string, std::string>> deviceMap;
    std::set<std::pair<QString, QString>> locations; // recorded -> planned, where they differ
    std::vector<std::uint32_t> tensors;
    for (const QModelIndex& row : std::as_const(rows)) {
        const QString path = row.data(TensorTreeModel::PathRole).toString();
        names << path;
        const QString planned = row.data(TensorTreeModel::PlannedDeviceRole).toString();
        const QString recorded = row.data(TensorTreeModel::RecordedDeviceRole).toString();
        if (!planned.isEmpty() && !path.isEmpty())
            deviceMap.emplace_back(path.toStdString(), planned.toStdString());
        if (!planned.isEmpty() && !recorded.isEmpty() && recorded != QLatin1String("mixed")
            && recorded != planned)
            locations.emplace(recorded, planned);
        if (const int tensor = row.data(TensorTreeModel::TensorIndexRole).toInt(); tensor >= 0)
            tensors.push_back(std::uint32_t(tensor));
    }
    QAction* copyName = menu->addAction(tr("Copy &Name"), this, [copy, names] {
        copy(names.join(QLatin1Char('\n')), names.size() == 1 ? names.front() : tr("the names"));
    });
    copyName->setObjectName(QStringLiteral("actionCopyName"));

    // map_location: the recorded device → the planned one, for torch.load on the original file.
    QStringList pairs;
    for (const auto& [from, to] : locations)
        pairs << QStringLiteral("%1: %2").arg(QString::fromStdString(pythonStringLiteral(from.toStdString())),
            QString::fromStdString(pythonStringLiteral(to.toStdString())));
    QAction* copyMapLocation = menu->addAction(tr("Copy &map_location Entry"), this,
        [copy, pairs] { copy(pairs.join(QStringLiteral(", ")), tr("the map_location entry")); });
    copyMapLocation->setObjectName(QStringLiteral("actionCopyMapLocation"));
    copyMapLocation->setEnabled(!pairs.isEmpty());
    copyMapLocation->setStatusTip(
        tr("The recorded device → the planned one, as torch.load(map_location={…}) takes "
           "it (only where they differ)"));

    // device_map: through the writer File > Export Plan as device_map uses (GPU ordinals as integers).
    QString entries = QString::fromStdString(deviceMapJson(deviceMap)).trimmed();
    if (entries.startsWith(QLatin1Char('{')) && entries.endsWith(QLatin1Char('}')))
        entries = entries.mid(1, entries.size() - 2).trimmed();
    QStringList entryLines = entries.split(QLatin1Char('\n'));
    for (QString& line : entryLines)
        line = line.trimmed();
    QAction* copyDeviceMap = menu->addAction(tr("Copy &device_map Entry"), this,
        [copy, entryLines] { copy(entryLines.join(QLatin1Char('\n')), tr("the device_map entry")); });
    copyDeviceMap->setObjectName(QStringLiteral("actionCopyDeviceMap"));
    copyDeviceMap->setEnabled(!deviceMap.empty());
    menu->addSeparator();

    QAction* showFinding = menu->addAction(tr("Show in &Findings"), this, [this, tensors] {
        m_findingsDock->show();
        m_findingsDock->raise();
        m_findingsPanel->showFindingAbout(tensors);
    });
    showFinding->setObjectName(QStringLiteral("actionShowInFindings"));
    bool hasFinding = false;
    for (const QModelIndex& row : std::as_const(rows))
        hasFinding = hasFinding || row.data(TensorTreeModel::FindingSeverityRole).isValid();
    showFinding->setEnabled(hasFinding);
    menu->addAction(m_selectSharingAction);
    return menu;
}

void MainWindow::showTreeContextMenu(const QPoint& position)
{
    QMenu* menu = createTreeContextMenu(this);
    menu->setAttribute(Qt::WA_DeleteOnClose);
    menu->popup(treeView()->viewport()->mapToGlobal(position));
}

void MainWindow::createMenus()
{
    auto* recentMenu = new RecentFilesMenu(m_settings.get(), this);
    connect(recentMenu, &RecentFilesMenu::fileChosen, this, &MainWindow::openFile);

    // The menus as a table: an action or submenu by object name, "-" for a separator.
    const std::pair<QString, std::vector<const char*>> menus[] = {
        {tr("&File"),
            {"actionOpen", "actionOpenFolder", "actionOpenUrl", "recentMenu", "-", "actionSaveRemapped",
                "actionExportWeights", "actionExportMapLocation", "actionExportDeviceMap", "-",
                "actionCompareWith", "-", "actionClose", "actionQuit"}},
        {tr("&Edit"), {"actionUndo", "actionRedo", "-", "actionSelectSharing", "actionFilter"}},
        {tr("&Plan"),
            {"moveSelectionMenu", "-", "actionEverythingToCpu", "actionMapEvery", "-", "actionAutoBalanced",
                "actionAutoSequential", "-", "targetMenu", "-", "actionTrialPlacement", "actionTrialLoad"}},
        {tr("&View"),
            {"actionShowDevices", "actionShowDetails", "actionShowFindings", "actionShowHistory", "-",
                "actionNextPane", "actionPreviousPane", "-", "actionScanValues", "-", "themeMenu"}},
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
    // As `ckpt-inspect remap` does (exit 4): no remapped copy of a file that may run code. (A folder
    // that records no device gets its plan exported by the same save task.)
    if (m_dangerousSave->refuse(current->checkpoint(), path, &current->plan()))
        return;
    m_documents->saveRemappedCopy(path);
    showProgress(tr("Writing %1…").arg(QFileInfo(path).fileName()));
}

void MainWindow::exportWeightsTo(const QString& path, const WeightsValueChoices& choices)
{
    if (!document() || isBusy()) {
        const QString message
            = !document() ? tr("No checkpoint is open.") : tr("Another file operation is still running.");
        showError(tr("Cannot Export"), message);
        Q_EMIT exportFinished(false, message);
        return;
    }
    m_documents->exportWeights(path, choices.castFloatsTo, choices.plainValues);
    showProgress(tr("Writing %1…").arg(QFileInfo(path).fileName()));
}

void MainWindow::showSaveResult(bool ok, const QString& message, const QString& outputPath)
{
    std::function<void()> then = std::move(m_afterSave);
    m_afterSave = {};
    // Safetensors and DCP folders record no device: the save task exported the plan instead.
    const bool planOnly = document() && whyExportOnly(document()->checkpoint());
    if (!ok) {
        showError(planOnly ? tr("Plan Not Exported") : tr("Remapped Copy Not Saved"), message);
        Q_EMIT saveFinished(false, message);
        return;
    }
    showTransientMessage(tr("Saved %1: %2").arg(QFileInfo(outputPath).fileName(), message));
    showInformation(planOnly ? tr("Plan Exported, Nothing Rewritten") : tr("Remapped Copy Saved"),
        tr("%1\n\n%2").arg(QDir::toNativeSeparators(outputPath), message));
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
