// SPDX-License-Identifier: MIT
#pragma once

#include "core/devices/cudaruntime.h"
#include "core/devices/deviceinventory.h"

#include <QObject>
#include <QPointer>
#include <QString>
#include <QStringList>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

class QAction;
class QActionGroup;
class QMenu;
class QWidget;

namespace ckpt {

class AppSettings;
class DocumentController;
class JobProgressDialog;
class JobTracker;

// The Plan menu and what it plans against: Everything to CPU, Map Every Device (its dialog),
// automatic placement, the target machine (this machine, a saved profile, a described one), and
// the plan's exports (map_location Python, a device_map). This machine's GPUs are detected in a
// job, never on the GUI thread: until it ends the target is "this machine" with its CPU only and
// isDetecting() is true.
class PlanActions : public QObject {
    Q_OBJECT

public:
    PlanActions(DocumentController* documents, AppSettings* settings, QWidget* dialogParent);
    ~PlanActions() override;

    QAction* everythingToCpuAction() const { return m_everythingToCpu; }
    QAction* mapEveryAction() const { return m_mapEvery; }
    QAction* autoBalancedAction() const { return m_autoBalanced; }
    QAction* autoSequentialAction() const { return m_autoSequential; }
    // Filled each time it opens: this machine, the saved profiles, Describe….
    QMenu* targetMenu() const { return m_targetMenu; }
    // The trial on this machine's GPUs (core/tasks/cudatrial.h, as `plan --trial` and
    // `--trial-load`), in a job with progress and Cancel; it measures each GPU's CUDA context, which
    // this machine's inventory keeps from then on (the ledger then shows it as measured).
    QAction* trialPlacementAction() const { return m_trialPlacement; }
    QAction* trialLoadAction() const { return m_trialLoad; }
    void startTrial(bool load);
    bool isTrialRunning() const;
    void cancelTrial();
    // Where the trial's CUDA runtime and NVML's figures come from: the system's (libcuda and
    // libnvidia-ml through dlopen) unless a test hands a fake. Each trial makes them afresh in its
    // worker and drops them there.
    struct CudaAccess {
        std::unique_ptr<CudaRuntime> runtime;
        NvmlFreeSnapshot nvmlFree;
    };
    void setCudaAccess(std::function<CudaAccess()> make);
    void updateActions();

    const MachineInventory& target() const { return m_target; }
    // What the target box beside the load simulation offers: this machine, a few typical machines
    // (targetPresets()), and the saved profiles, by name; and the one in use.
    QStringList targetChoices() const;
    QString currentTargetChoice() const;
    void chooseTarget(const QString& choice);
    // Typical machines, name and spec: "laptop without a GPU" = "cpu=16GiB", …
    static const std::vector<std::pair<QString, QString>>& targetPresets();
    void setTarget(MachineInventory machine, const QString& profileName);
    bool isDetecting() const;

    // False with errorShown() when the file cannot be written.
    bool exportMapLocationTo(const QString& path);
    bool exportDeviceMapTo(const QString& path);

Q_SIGNALS:
    void message(const QString& text); // for the status bar
    void errorShown(const QString& title, const QString& message);
    void targetChanged(); // the target, or whether it is still being detected
    void detectingChanged(bool detecting);
    // The trial's report, the lines `plan --trial` prints after the plan; `passed` when the plan
    // fits (and, for a trial load, every byte came back equal).
    void trialFinished(const QString& report, bool passed);

private:
    void everythingToCpu();
    void mapEveryTag();
    void autoPlace(bool balanced);
    void useThisMachine();
    void describeTarget();
    void useProfile(const QString& name);
    void rebuildTargetMenu();
    void detectThisMachineInBackground();

    DocumentController* m_documents = nullptr;
    AppSettings* m_settings = nullptr;
    QWidget* m_dialogParent = nullptr;
    JobTracker* m_detection = nullptr;
    JobTracker* m_trial = nullptr;
    QPointer<JobProgressDialog> m_trialProgress;
    std::function<CudaAccess()> m_makeCudaAccess;
    std::optional<MachineInventory> m_thisMachine;
    bool m_useDetectedMachine = false; // the target waits for the detection job
    MachineInventory m_target;
    QString m_targetProfile; // empty: this machine
    std::map<std::string, std::string> m_autoDeviceMap; // of the last automatic placement
    int m_autoDeviceMapIndex = -1; // the undo index it belongs to

    QAction* m_everythingToCpu = nullptr;
    QAction* m_mapEvery = nullptr;
    QAction* m_autoBalanced = nullptr;
    QAction* m_autoSequential = nullptr;
    QAction* m_trialPlacement = nullptr;
    QAction* m_trialLoad = nullptr;
    QMenu* m_targetMenu = nullptr;
    QActionGroup* m_targetGroup = nullptr;
};

} // namespace ckpt
