#pragma once

#include "core/devices/deviceinventory.h"

#include <QMainWindow>
#include <QPointer>
#include <QString>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

class QAction;
class QActionGroup;
class QDockWidget;
class QLabel;
class QLineEdit;
class QMenu;
class QProgressDialog;
class QSplitter;
class QTimer;
class QTreeView;
class QUndoGroup;
class QUndoView;

namespace ckpt {

class AppSettings;
class CheckpointDocument;
class DetailsPane;
class DevicePanel;
class FindingsPanel;
class SafetyBanner;
class MemoryChartWidget;
class TensorFilterProxyModel;
class TensorTreeModel;
struct Checkpoint;

// The desktop app's top-level window: the tensor tree (left), the device cards, the memory chart
// and the details of the selection (right), the undo history dock, menus and the status bar.
// Opening and saving run off the GUI thread (QtConcurrent) with progress and cancel; a generation
// counter drops the result of a job that a later one superseded.
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
    void exportWeightsTo(const QString& path);
    // What File > Export plan… do once the file dialog has a path. False (and errorShown) on failure.
    bool exportMapLocationTo(const QString& path);
    bool exportDeviceMapTo(const QString& path);

    // Plans against `machine` (a profile's name, or empty for this machine, is remembered).
    void setTarget(MachineInventory machine, const QString& profileName);

    bool suppressModalDialogs() const { return m_suppressModalDialogs; }
    void setSuppressModalDialogs(bool suppress) { m_suppressModalDialogs = suppress; }

    // For tests and the screenshot.
    QTreeView* treeView() const { return m_treeView; }
    TensorTreeModel* treeModel() const { return m_treeModel; }
    TensorFilterProxyModel* filterModel() const { return m_filterModel; }
    DevicePanel* devicePanel() const { return m_devicePanel; }
    DetailsPane* detailsPane() const { return m_detailsPane; }
    FindingsPanel* findingsPanel() const { return m_findingsPanel; }
    SafetyBanner* safetyBanner() const { return m_safetyBanner; }
    QDockWidget* findingsDock() const { return m_findingsDock; }
    bool isTriageRunning() const { return m_triageRunning; }
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
    struct BackgroundJob;

    void createWidgets();
    void createActions();
    void createMenus();
    void restoreSettings();
    void saveSettings();

    void chooseFileToOpen();
    void openDemoCheckpoint();
    void finishOpening(quint64 generation, std::shared_ptr<Checkpoint> checkpoint);
    void showDocument(std::shared_ptr<Checkpoint> checkpoint);
    void closeDocument();
    // Asks about unsaved changes; true when the caller may go on. Saving first runs `then` after.
    bool maybeKeepChanges(std::function<void()> then);

    void chooseSaveTarget(std::function<void()> then = {});
    void chooseExportWeightsTarget();
    void chooseMapLocationTarget();
    void chooseDeviceMapTarget();

    void everythingToCpu();
    void mapEveryTag();
    void autoPlace(bool balanced);
    void useThisMachine();
    void describeTarget();
    void useProfile(const QString& name);
    void rebuildTargetMenu();
    void rebuildRecentMenu();
    void selectTensorsSharingStorage();
    void selectTensor(std::uint32_t tensor);
    void selectTensors(const std::vector<std::uint32_t>& tensors);
    void startTriage();
    void selectionChanged();

    void updateTitle();
    void updateActions();
    void updateStatusSummary();
    void updateLegend();
    void showTransientMessage(const QString& text);
    void showError(const QString& title, const QString& message);
    void showInformation(const QString& title, const QString& message);
    std::shared_ptr<BackgroundJob> startProgress(const QString& label);
    void stopProgress();
    const MachineInventory& thisMachine();

    std::unique_ptr<AppSettings> m_settings;
    QString m_currentFile;
    QString m_demoCheckpointPath;
    bool m_suppressModalDialogs = false;

    // Jobs: a newer open or save makes an older result stale.
    quint64 m_openGeneration = 0;
    quint64 m_saveGeneration = 0;
    quint64 m_triageGeneration = 0; // a newer open, close or target makes an older triage stale
    bool m_triageRunning = false;
    std::shared_ptr<BackgroundJob> m_job;
    QProgressDialog* m_progressDialog = nullptr;
    QTimer* m_progressTimer = nullptr;
    std::function<void()> m_afterSave;

    QPointer<CheckpointDocument> m_document;
    std::optional<MachineInventory> m_thisMachine;
    MachineInventory m_target;
    QString m_targetProfile; // empty: this machine
    std::map<std::string, std::string> m_autoDeviceMap; // of the last automatic placement
    int m_autoDeviceMapIndex = -1; // undo index it belongs to

    // Widgets.
    QLabel* m_emptyStateLabel = nullptr;
    QSplitter* m_mainSplitter = nullptr;
    QSplitter* m_sideSplitter = nullptr;
    QLineEdit* m_filterEdit = nullptr;
    QTimer* m_filterTimer = nullptr;
    QTreeView* m_treeView = nullptr;
    TensorTreeModel* m_treeModel = nullptr;
    TensorFilterProxyModel* m_filterModel = nullptr;
    DevicePanel* m_devicePanel = nullptr;
    MemoryChartWidget* m_memoryChart = nullptr;
    DetailsPane* m_detailsPane = nullptr;
    QDockWidget* m_historyDock = nullptr;
    QUndoView* m_undoView = nullptr;
    QDockWidget* m_findingsDock = nullptr;
    FindingsPanel* m_findingsPanel = nullptr;
    SafetyBanner* m_safetyBanner = nullptr; // the safety verdict, above the tree
    QUndoGroup* m_undoGroup = nullptr;
    QLabel* m_currentFileLabel = nullptr;
    QLabel* m_summaryLabel = nullptr;
    QLabel* m_legendLabel = nullptr;

    // Actions.
    QAction* m_openAction = nullptr;
    QMenu* m_recentMenu = nullptr;
    QAction* m_saveAction = nullptr;
    QAction* m_exportWeightsAction = nullptr;
    QAction* m_exportMapLocationAction = nullptr;
    QAction* m_exportDeviceMapAction = nullptr;
    QAction* m_closeAction = nullptr;
    QAction* m_quitAction = nullptr;
    QAction* m_undoAction = nullptr;
    QAction* m_redoAction = nullptr;
    QAction* m_selectSharingAction = nullptr;
    QAction* m_everythingToCpuAction = nullptr;
    QAction* m_mapEveryAction = nullptr;
    QAction* m_autoBalancedAction = nullptr;
    QAction* m_autoSequentialAction = nullptr;
    QMenu* m_targetMenu = nullptr;
    QActionGroup* m_targetGroup = nullptr;
    QAction* m_demoAction = nullptr;
    QAction* m_aboutAction = nullptr;
};

} // namespace ckpt
