// SPDX-License-Identifier: MIT
#include "ui/document/checkpointdocument.h"

#include <QUndoCommand>
#include <QUndoStack>

#include <algorithm>
#include <memory>
#include <utility>

namespace ckpt {

namespace {

using DeviceList = std::vector<std::pair<std::uint32_t, std::optional<std::string>>>;

// One undoable placement step: the rules it applied, where every unit it changed was before, and
// its report: what the first redo (the user's own move) did, said once for the status bar.
class MoveCommand : public QUndoCommand {
public:
    MoveCommand(CheckpointDocument* document, std::vector<PlacementRule> rules, const QString& text)
        : QUndoCommand(text)
        , m_document(document)
        , m_rules(std::move(rules))
    { }

    const MoveReport& report() const { return m_report; }

    void redo() override
    {
        m_previous.clear();
        std::vector<std::uint32_t> dragged;
        m_document->applyRulesWithoutUndo(m_rules, m_previous, m_reported ? nullptr : &dragged);
        if (!m_reported) {
            m_reported = true; // a later redo (Ctrl+Shift+Z) repeats the move, not the report
            writeReport(dragged);
        }
    }

    void undo() override { m_document->restoreWithoutUndo(m_previous); }

private:
    void writeReport(const std::vector<std::uint32_t>& dragged)
    {
        for (std::uint32_t t : dragged)
            m_report.draggedAlong.emplace_back(m_document->checkpoint().tensors[t].name);
        for (const auto& [unit, device] : m_previous)
            if (m_document->plan().units()[unit].storage >= 0)
                ++m_report.storagesMoved;
        m_report.text = text() + QStringLiteral(": ") + QString::number(m_report.storagesMoved)
            + (m_report.storagesMoved == 1 ? QStringLiteral(" storage moved")
                                           : QStringLiteral(" storages moved"));
        if (!m_report.draggedAlong.empty()) {
            m_report.text += QStringLiteral("; also moved ");
            for (std::size_t i = 0; i < m_report.draggedAlong.size() && i < 3; ++i)
                m_report.text += (i ? QStringLiteral(", ") : QString())
                    + QString::fromStdString(m_report.draggedAlong[i]);
            if (m_report.draggedAlong.size() > 3)
                m_report.text += QStringLiteral(" and %1 more").arg(m_report.draggedAlong.size() - 3);
            m_report.text += QStringLiteral(" (they share a storage)");
        }
    }

    CheckpointDocument* m_document;
    std::vector<PlacementRule> m_rules;
    DeviceList m_previous;
    bool m_reported = false;
    MoveReport m_report;
};

} // namespace

CheckpointDocument::CheckpointDocument(
    std::shared_ptr<const Checkpoint> checkpoint, MachineInventory target, QObject* parent)
    : QObject(parent)
    , m_checkpoint(std::move(checkpoint))
    , m_target(std::move(target))
    , m_plan(std::make_unique<PlacementPlan>(*m_checkpoint))
    , m_undoStack(new QUndoStack(this))
{
    m_ledger = std::make_unique<MemoryLedger>(*m_checkpoint, *m_plan, m_target);
}

CheckpointDocument::~CheckpointDocument() = default;

QString CheckpointDocument::filePath() const
{
    return QString::fromStdString(m_checkpoint->path);
}

bool CheckpointDocument::isModified() const
{
    return !m_undoStack->isClean();
}

std::optional<std::string> CheckpointDocument::plannedDeviceOfTensor(std::uint32_t tensor) const
{
    return m_plan->plannedDeviceOfTensor(tensor);
}

std::optional<std::string> CheckpointDocument::plannedDeviceOfNode(std::uint32_t treeNode) const
{
    const auto bytes = m_ledger->moduleBytes(treeNode);
    if (bytes.size() == 1)
        return bytes.front().first;
    if (treeNode < m_checkpoint->tree.size() && m_checkpoint->tree[treeNode].tensor >= 0)
        return plannedDeviceOfTensor(static_cast<std::uint32_t>(m_checkpoint->tree[treeNode].tensor));
    return std::nullopt;
}

std::string CheckpointDocument::nodePath(std::uint32_t treeNode) const
{
    if (treeNode < m_checkpoint->tree.size() && m_checkpoint->tree[treeNode].tensor >= 0)
        return m_checkpoint->tensors[static_cast<std::size_t>(m_checkpoint->tree[treeNode].tensor)]
            .name.str();
    return m_checkpoint->treePath(treeNode);
}

MoveReport CheckpointDocument::move(const std::vector<PlacementRule>& rules, const QString& description)
{
    auto command = std::make_unique<MoveCommand>(this, rules, description);
    MoveCommand& pushed = *command;
    m_undoStack->push(command.release()); // redoes it once, and keeps it (no command merges or obsoletes)
    return pushed.report();
}

void CheckpointDocument::applyRulesWithoutUndo(
    const std::vector<PlacementRule>& rules, DeviceList& previous, std::vector<std::uint32_t>* dragged)
{
    // A unit changed by several rules of one step keeps the device it had before the first. Flags
    // and sorted vectors rather than sets: one drop may move a hundred thousand storages.
    std::vector<char> seen(rules.size() > 1 ? m_plan->units().size() : 0, 0);
    std::vector<std::uint32_t> named, draggedByAnyRule;
    PlacementChange all;
    for (const PlacementRule& rule : rules) {
        const PlacementChange change = m_plan->apply(rule);
        m_ledger->apply(change);
        named.insert(named.end(), change.tensorsNamed.begin(), change.tensorsNamed.end());
        draggedByAnyRule.insert(
            draggedByAnyRule.end(), change.tensorsDraggedAlong.begin(), change.tensorsDraggedAlong.end());
        previous.reserve(previous.size() + change.unitsChanged.size());
        for (std::size_t i = 0; i < change.unitsChanged.size(); ++i) {
            const std::uint32_t unit = change.unitsChanged[i];
            if (seen.empty() || !std::exchange(seen[unit], 1))
                previous.emplace_back(unit, change.previousDevices[i]);
        }
        all.unitsChanged.insert(
            all.unitsChanged.end(), change.unitsChanged.begin(), change.unitsChanged.end());
    }
    // A tensor one rule drags along may be named by another rule of the same step (a selection).
    if (dragged) {
        std::sort(named.begin(), named.end());
        std::sort(draggedByAnyRule.begin(), draggedByAnyRule.end());
        draggedByAnyRule.erase(
            std::unique(draggedByAnyRule.begin(), draggedByAnyRule.end()), draggedByAnyRule.end());
        for (std::uint32_t t : draggedByAnyRule)
            if (!std::binary_search(named.begin(), named.end(), t))
                dragged->push_back(t);
    }
    notify(all);
}

void CheckpointDocument::restoreWithoutUndo(const DeviceList& devices)
{
    const PlacementChange change = m_plan->restore(devices);
    m_ledger->apply(change);
    notify(change);
}

void CheckpointDocument::setTarget(MachineInventory target)
{
    m_target = std::move(target);
    m_ledger = std::make_unique<MemoryLedger>(*m_checkpoint, *m_plan, m_target);
    Q_EMIT targetChanged();
}

void CheckpointDocument::notify(const PlacementChange& change)
{
    if (!change.unitsChanged.empty())
        Q_EMIT placementChanged(change.unitsChanged);
}

std::vector<PlacementRule> CheckpointDocument::rulesFromMimeData(
    const QByteArray& data, const std::string& device)
{
    std::vector<PlacementRule> rules;
    const auto items = decodePlacementMime(data);
    if (!items)
        return rules;
    for (const PlacementMimeItem& item : *items)
        rules.push_back({item.isModule ? PlacementRule::Kind::MoveModule : PlacementRule::Kind::MoveTensor,
            item.name, device});
    return rules;
}

QByteArray CheckpointDocument::mimeDataFor(const std::vector<std::pair<bool, std::string>>& items)
{
    std::vector<PlacementMimeItem> mimeItems;
    mimeItems.reserve(items.size());
    for (const auto& [isModule, name] : items)
        mimeItems.push_back({isModule, name});
    return encodePlacementMime(mimeItems);
}

} // namespace ckpt
