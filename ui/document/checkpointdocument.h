// SPDX-License-Identifier: MIT
#pragma once

#include "core/devices/deviceinventory.h"
#include "core/model/checkpoint.h"
#include "core/plan/memoryledger.h"
#include "core/plan/placementplan.h"
#include "core/triage/weightsonlyverdict.h"
#include "ui/document/placementmime.h"

#include <QObject>
#include <QString>

#include <memory>
#include <optional>
#include <string>
#include <vector>

class QUndoStack;

namespace ckpt {

// What one user action did, for the status bar: "moved 3 storages to cuda:1; also moved
// model.embed.weight (shares a storage with lm_head.weight)".
struct MoveReport {
    std::size_t storagesMoved = 0;
    std::vector<std::string> draggedAlong; // names of tensors moved only because they share a storage
    QString text;
};

// One open checkpoint in the app: the read checkpoint, its placement plan and memory ledger
// against the current target machine, and the undo stack of moves. Models and views observe it;
// every change to the plan goes through move(), which pushes an undo command.
class CheckpointDocument : public QObject {
    Q_OBJECT

public:
    CheckpointDocument(
        std::shared_ptr<const Checkpoint> checkpoint, MachineInventory target, QObject* parent = nullptr);
    ~CheckpointDocument() override;

    const Checkpoint& checkpoint() const { return *m_checkpoint; }
    std::shared_ptr<const Checkpoint> sharedCheckpoint() const { return m_checkpoint; }
    // The weights_only judgements of the checkpoint, made once for the triage and the load
    // simulation bar, whichever asks first (both run as jobs when the file opens).
    const std::shared_ptr<SharedWeightsOnlyVerdicts>& weightsOnlyVerdicts() const
    {
        return m_weightsOnlyVerdicts;
    }
    const PlacementPlan& plan() const { return *m_plan; }
    const MemoryLedger& ledger() const { return *m_ledger; }
    const MachineInventory& target() const { return m_target; }
    QString filePath() const;
    QUndoStack* undoStack() const { return m_undoStack; }
    bool isModified() const; // the plan differs from what the undo stack's clean state had

    // The planned device of a tensor (its storage's), and of a tree node: the single device of all
    // storages below it, or nothing when they are mixed (then see ledger().moduleBytes()).
    std::optional<std::string> plannedDeviceOfTensor(std::uint32_t tensor) const;
    std::optional<std::string> plannedDeviceOfNode(std::uint32_t treeNode) const;
    // Dotted path of a tree node, as rules and the MIME data name it.
    std::string nodePath(std::uint32_t treeNode) const;

    // Applies rules as one undoable step named `description` ("Move model.layers.3 to cuda:1").
    MoveReport move(const std::vector<PlacementRule>& rules, const QString& description);
    // Parses kPlacementMimeType data (ui/document/placementmime.h) into rules that put everything
    // named onto `device`; no rule at all when the payload is malformed.
    static std::vector<PlacementRule> rulesFromMimeData(const QByteArray& data, const std::string& device);
    static QByteArray mimeDataFor(const std::vector<std::pair<bool /*isModule*/, std::string>>& items);

    // Switches the target machine (detected or described): the ledger is rebuilt, the plan kept.
    void setTarget(MachineInventory target);

    // Used by the undo commands only.
    // `dragged`, when given, receives the tensors moved only because they share a storage with
    // a tensor the rules named, as the plan reports them.
    void applyRulesWithoutUndo(const std::vector<PlacementRule>& rules,
        std::vector<std::pair<std::uint32_t, std::optional<std::string>>>& previous,
        std::vector<std::uint32_t>* dragged = nullptr);
    void restoreWithoutUndo(const std::vector<std::pair<std::uint32_t, std::optional<std::string>>>& devices);

Q_SIGNALS:
    // Units (storages, storage-less tensors) whose planned device changed; models refresh the rows
    // of the tensors concerned and their ancestors. The ledger is already up to date.
    void placementChanged(const std::vector<std::uint32_t>& unitsChanged);
    void targetChanged();

private:
    void notify(const PlacementChange& change);

    std::shared_ptr<const Checkpoint> m_checkpoint;
    std::shared_ptr<SharedWeightsOnlyVerdicts> m_weightsOnlyVerdicts
        = std::make_shared<SharedWeightsOnlyVerdicts>();
    MachineInventory m_target;
    std::unique_ptr<PlacementPlan> m_plan;
    std::unique_ptr<MemoryLedger> m_ledger;
    QUndoStack* m_undoStack = nullptr;
};

} // namespace ckpt
