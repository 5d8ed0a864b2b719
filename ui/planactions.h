// SPDX-License-Identifier: MIT
#pragma once

#include "core/devices/deviceinventory.h"

#include <QObject>
#include <QString>
#include <QStringList>

#include <map>
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
    QMenu* m_targetMenu = nullptr;
    QActionGroup* m_targetGroup = nullptr;
};

} // namespace ckpt
