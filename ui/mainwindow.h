// SPDX-License-Identifier: MIT
#pragma once

#include "ui/dialogs/filedialogs.h"

#include <QMainWindow>
#include <QPointer>
#include <QString>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

class QAction;
class QDockWidget;
class QLabel;
class QMenu;
class QSplitter;
class QTreeView;
class QUndoGroup;

namespace ckpt {

class AppSettings;
class CheckpointDocument;
class DangerousSaveGuard;
class DetailsPane;
class DeviceShortcuts;
class FirstRunHint;
class GuidedTour;
class MainToolBar;
class Theme;
class DevicePanel;
class DocumentController;
class FindingsPanel;
class ValueScanPanel;
class JobProgressDialog;
class JobTracker;
class MemoryChartWidget;
class PlanActions;
class SafetyBanner;
class StartPage;
class TensorFilterProxyModel;
class TensorTreeModel;
class TensorTreePanel;
struct Checkpoint;
struct MachineInventory;

// The desktop app's top-level window: the tensor tree (left), the device cards, the memory chart
// and the details of the selection (right), the undo history and findings docks, menus and the
// status bar. It wires parts that live elsewhere: the open document and its tree model belong to
// a DocumentController, the Plan menu and the target machine to PlanActions, and opening, saving
// and triage run as jobs (JobTracker) with progress and cancel, a newer job making an older one's
// result stale.
class MainWindow : public QMainWindow {
    Q_OBJECT
    // Tests set this: errors and summaries are then only emitted (errorShown, saveFinished), and
    // the unsaved-changes question is answered "Discard".
    Q_PROPERTY(bool suppressModalDialogs READ suppressModalDialogs WRITE setSuppressModalDialogs)

public:
    explicit MainWindow(QWidget* parent = nullptr);
    ~MainWindow() override;

    // Opens the checkpoint at @p path off the GUI thread; checkpointOpened() or openFailed() follow.
    void openFile(const QString& path);
    // The path given to the last openFile(), empty when nothing is open.
    QString currentFile() const { return m_currentFile; }
    CheckpointDocument* document() const;

    // Where Help > Open demo checkpoint (and the app without arguments) finds the bundled demo.
    void setDemoCheckpointPath(const QString& path);
    QString demoCheckpointPath() const { return m_demoCheckpointPath; }

    // What File > Save remapped copy… does once the file dialog has a path: writes off the GUI
    // thread; saveFinished() follows.
    void saveRemappedCopyTo(const QString& path);
    // What File > Export Weights… does once the file dialog has a path: a plain state_dict (.pt,
    // storages on the plan's devices) or safetensors (.safetensors) of the open checkpoint's
    // tensors, written off the GUI thread; exportFinished() follows.
    // `choices`: --dtype and --plain-values as the CLI takes them (asked by askWeightsValueChoices).
    void exportWeightsTo(const QString& path, const WeightsValueChoices& choices = {});
    // What File > Export plan… do once the file dialog has a path. False (and errorShown) on failure.
    bool exportMapLocationTo(const QString& path);
    bool exportDeviceMapTo(const QString& path);

    // Plans against `machine` (a profile's name, or empty for this machine, is remembered).
    void setTarget(MachineInventory machine, const QString& profileName);

    bool suppressModalDialogs() const { return m_suppressModalDialogs; }
    void setSuppressModalDialogs(bool suppress) { m_suppressModalDialogs = suppress; }

    // For tests and the screenshot.
    QTreeView* treeView() const;
    TensorTreeModel* treeModel() const;
    TensorFilterProxyModel* filterModel() const;
    DevicePanel* devicePanel() const { return m_devicePanel; }
    DetailsPane* detailsPane() const { return m_detailsPane; }
    QDockWidget* detailsDock() const { return m_detailsDock; }
    QDockWidget* devicesDock() const { return m_devicesDock; }
    bool isDetailsShown() const; // the Details dock is open (it is while a row is current)
    FindingsPanel* findingsPanel() const { return m_findingsPanel; }
    SafetyBanner* safetyBanner() const;
    QDockWidget* findingsDock() const { return m_findingsDock; }
    ValueScanPanel* valueScanPanel() const { return m_valueScanPanel; }
    PlanActions* planActions() const { return m_planActions; }
    DeviceShortcuts* deviceShortcuts() const { return m_deviceShortcuts; }
    TensorTreePanel* treePanel() const { return m_treePanel; }
    StartPage* startPage() const { return m_startPage; }
    MemoryChartWidget* memoryChart() const { return m_memoryChart; }
    MainToolBar* mainToolBar() const { return m_toolBar; }
    FirstRunHint* firstRunHint() const { return m_firstRunHint; }
    GuidedTour* guidedTour() const { return m_tour; }
    Theme* theme() const { return m_theme; }
    DangerousSaveGuard* dangerousSaveGuard() const { return m_dangerousSave; }
    // The tree's context menu for the selected rows (built afresh for each right-click).
    QMenu* createTreeContextMenu(QWidget* parent);
    bool isTriageRunning() const;
    QString statusSummary() const; // the counts, bytes and format shown in the status bar
    bool isBusy() const; // an open or save is running

Q_SIGNALS:
    void checkpointOpened(); // the tree shows the file (it may still have findings)
    void openFailed(const QString& message); // nothing could be shown
    void errorShown(const QString& message);
    void saveFinished(bool ok, const QString& message);
    void exportFinished(bool ok, const QString& message);
    // The Findings panel and the tree's badges show the triage of the open checkpoint against the
    // current target (after an open and after every change of target).
    void triageFinished();

protected:
    void closeEvent(QCloseEvent* event) override;
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;

private:
    void createWidgets();
    void createActions();
    void createMenus();
    void restoreSettings();
    void applyDefaultLayout();
    void saveSettings();
    // The Details dock: shown while a row is current, unless the person closed it.
    bool currentRowShown() const;
    void setDetailsWanted(bool wanted);
    void placeDetails();

    static QString emptyStateText();
    void followDocuments(); // the DocumentController's signals (mainwindowdocument.cpp)
    void showCentralWidget(QWidget* widget); // the start page or the tree
    void openDemoCheckpoint();
    void keepShownFile(); // after an open that did not replace the shown file
    void showOpenedFile(const QString& path, const QStringList& problems);
    void showOpenFailure(const QString& text);
    void showSaveResult(bool ok, const QString& message, const QString& outputPath);
    void attachDocument(CheckpointDocument* document, CheckpointDocument* previous);
    void closeDocument();
    // Asks about unsaved changes; true when the caller may go on. Saving first runs `then` after.
    bool maybeKeepChanges(std::function<void()> then);
    void showProgress(const QString& label);

    void chooseSaveTarget(std::function<void()> then = {});
    void chooseExportTarget(bool deviceMap);

    void selectTensors(const std::vector<std::uint32_t>& tensors);
    // The tree's context menu (mainwindowactions.cpp): the same moves as a drop, copies, findings.
    void showTreeContextMenu(const QPoint& position);
    // F6 / Shift+F6: the focus to the next (or previous) shown pane of the tree, cards, findings.
    void focusNextPane(int step);

    void updateTitle();
    void updateActions();
    void updateStatusSummary();
    void showTransientMessage(const QString& text);
    void showError(const QString& title, const QString& message);
    void showInformation(const QString& title, const QString& message);

    std::unique_ptr<AppSettings> m_settings;
    DocumentController* m_documents = nullptr;
    std::unique_ptr<TensorTreeModel> m_treeModel; // over the open document, built beside it in the open job
    PlanActions* m_planActions = nullptr;
    QString m_currentFile;
    QString m_demoCheckpointPath;
    bool m_suppressModalDialogs = false;

    QPointer<JobProgressDialog> m_progressDialog; // of the controller's file job

    std::function<void()> m_afterSave;

    // Widgets.
    StartPage* m_startPage = nullptr; // the central widget while no file is open
    QLabel* m_emptyStateLabel = nullptr; // its message
    QSplitter* m_sideSplitter = nullptr; // the cards over the chart
    QDockWidget* m_devicesDock = nullptr;
    QDockWidget* m_detailsDock = nullptr;
    bool m_detailsWanted = true;
    bool m_placingDetails = false;
    bool m_detailsSized = false;
    bool m_layoutRestored = false;
    FirstRunHint* m_firstRunHint = nullptr;
    MainToolBar* m_toolBar = nullptr;
    DeviceShortcuts* m_deviceShortcuts = nullptr;
    Theme* m_theme = nullptr;
    GuidedTour* m_tour = nullptr;
    DangerousSaveGuard* m_dangerousSave = nullptr;
    TensorTreePanel* m_treePanel = nullptr;
    DevicePanel* m_devicePanel = nullptr;
    MemoryChartWidget* m_memoryChart = nullptr;
    DetailsPane* m_detailsPane = nullptr;
    QDockWidget* m_historyDock = nullptr;
    QDockWidget* m_findingsDock = nullptr;
    FindingsPanel* m_findingsPanel = nullptr;
    ValueScanPanel* m_valueScanPanel = nullptr;
    QDockWidget* m_valueScanDock = nullptr;
    QUndoGroup* m_undoGroup = nullptr;
    QLabel* m_currentFileLabel = nullptr;
    QLabel* m_summaryLabel = nullptr;

    // Actions that change state (the rest live in the action table only).
    QAction* m_saveAction = nullptr;
    QAction* m_exportWeightsAction = nullptr;
    QAction* m_exportMapLocationAction = nullptr;
    QAction* m_exportDeviceMapAction = nullptr;
    QAction* m_closeAction = nullptr;
    QAction* m_selectSharingAction = nullptr;
    QAction* m_demoAction = nullptr;
    QAction* m_tourAction = nullptr;
    std::vector<QAction*> m_actions; // the table's, in menu order
};

} // namespace ckpt
