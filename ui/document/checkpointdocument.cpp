// SPDX-License-Identifier: MIT
#include "ui/document/checkpointdocument.h"

#include <QUndoCommand>
#include <QUndoStack>

#include <algorithm>
#include <utility>

namespace ckpt {

namespace {

using DeviceList = std::vector<std::pair<std::uint32_t, std::optional<std::string>>>;

// One undoable placement step: the rules it applied, and where every unit it changed was before.
class MoveCommand : public QUndoCommand {
public:
    MoveCommand(CheckpointDocument* document, std::vector<PlacementRule> rules, const QString& text,
        MoveReport* report)
        : QUndoCommand(text)
        , m_document(document)
        , m_rules(std::move(rules))
        , m_report(report)
    { }

    void redo() override
    {
        m_previous.clear();
        std::vector<std::uint32_t> dragged;
        m_document->applyRulesWithoutUndo(m_rules, m_previous, m_report ? &dragged : nullptr);
        if (m_report) {
            for (std::uint32_t t : dragged)
                m_report->draggedAlong.push_back(m_document->checkpoint().tensors[t].name);
            // Only the first time: the report describes what the user just did.
            m_report->storagesMoved = 0;
            for (const auto& [unit, device] : m_previous)
                if (m_document->plan().units()[unit].storage >= 0)
                    ++m_report->storagesMoved;
            m_report = nullptr;
        }
    }

    void undo() override { m_document->restoreWithoutUndo(m_previous); }

private:
    CheckpointDocument* m_document;
    std::vector<PlacementRule> m_rules;
    DeviceList m_previous;
    MoveReport* m_report;
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
        return m_checkpoint->tensors[static_cast<std::size_t>(m_checkpoint->tree[treeNode].tensor)].name;
    return m_checkpoint->treePath(treeNode);
}

MoveReport CheckpointDocument::move(const std::vector<PlacementRule>& rules, const QString& description)
{
    MoveReport report;
    m_undoStack->push(new MoveCommand(this, rules, description, &report));
    report.text = description + QStringLiteral(": ") + QString::number(report.storagesMoved)
        + (report.storagesMoved == 1 ? QStringLiteral(" storage moved") : QStringLiteral(" storages moved"));
    if (!report.draggedAlong.empty()) {
        report.text += QStringLiteral("; also moved ");
        for (std::size_t i = 0; i < report.draggedAlong.size() && i < 3; ++i)
            report.text
                += (i ? QStringLiteral(", ") : QString()) + QString::fromStdString(report.draggedAlong[i]);
        if (report.draggedAlong.size() > 3)
            report.text += QStringLiteral(" and %1 more").arg(report.draggedAlong.size() - 3);
        report.text += QStringLiteral(" (they share a storage)");
    }
    return report;
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
