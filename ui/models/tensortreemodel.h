// SPDX-License-Identifier: MIT
#pragma once

#include "core/base/finding.h"

#include <QAbstractItemModel>
#include <QHash>
#include <QPixmap>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ckpt {

class CheckpointDocument;

// The checkpoint's tree as a Qt model: one row per tree node, the node index as the QModelIndex's
// internal id. Everything per row lives in the checkpoint's arrays and in a few flat arrays built
// once here (row in parent, recorded device summary, tensor and changed-tensor counts), so
// index() and parent() are O(1) and a million tensors cost no heap object per row.
// The document must outlive the model.
class TensorTreeModel : public QAbstractItemModel {
    Q_OBJECT

public:
    enum Column {
        NameColumn,
        DTypeColumn,
        ShapeColumn,
        SizeColumn,
        RecordedDeviceColumn,
        PlannedDeviceColumn,
        ColumnCount
    };
    enum Role {
        TreeNodeRole = Qt::UserRole + 1, // uint: index into Checkpoint::tree
        TensorIndexRole, // int: index into Checkpoint::tensors, -1 for non-tensors
        SortRole, // qulonglong bytes for the Size column, text otherwise
        PlannedDeviceRole, // QString: the single planned device, empty when mixed or none
        DeviceMixRole, // QVariantList of QVariantMap {"tag": QString, "bytes": qulonglong}, by bytes
        SharedStorageTensorsRole, // QList<int>: the other tensors that view the same storage
        ChangedRole, // bool: planned != recorded (for a module: some tensor below it)
        RecordedDeviceRole, // QString: the single recorded device, "mixed" or empty
        PathRole, // QString: dotted path, as rules and the MIME data name it
        FindingSeverityRole, // int ckpt::Severity: the worst finding about this row's tensor; unset if none
        FindingsBelowSeverityRole, // int ckpt::Severity: the worst finding about a tensor at or below
        // QString: a quantized weight's scheme and scale layouts, or a scale's weight and layout
        // (core/model/quantgroups.h); empty for other rows. The DType column shows it after the dtype.
        QuantGroupRole,
    };

    explicit TensorTreeModel(CheckpointDocument* document, QObject* parent = nullptr);
    ~TensorTreeModel() override;

    CheckpointDocument* document() const { return m_document; }
    QModelIndex indexForTreeNode(std::uint32_t node, int column = 0) const;
    QModelIndex indexForTensor(std::uint32_t tensor, int column = 0) const;
    // Tensors at or below a node (a composite sparse tensor counts with its components).
    std::uint32_t tensorCountUnder(std::uint32_t node) const { return m_tensorCount[node]; }
    // Marks the rows of the tensors the findings concern (a badge in the Name column, the worst
    // severity in FindingSeverityRole) and, paler, their ancestors. Replaces earlier findings.
    void setFindings(const std::vector<Finding>& findings);
    // Every tensor's recorded and planned device as the tree shows them, as indices into `tags`
    // (a snapshot of the plan for a filter job).
    void deviceTagsOfTensors(
        QStringList& tags, std::vector<std::uint16_t>& recorded, std::vector<std::uint16_t>& planned) const;

    QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
    QModelIndex parent(const QModelIndex& child) const override;
    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    bool hasChildren(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
    Qt::ItemFlags flags(const QModelIndex& index) const override;
    QStringList mimeTypes() const override;
    QMimeData* mimeData(const QModelIndexList& indexes) const override;
    Qt::DropActions supportedDragActions() const override;

private:
    static constexpr std::int32_t kNoDevice = -1; // m_recordedDevice: no tensor below
    static constexpr std::int32_t kMixedDevices = -2;

    void onPlacementChanged(const std::vector<std::uint32_t>& unitsChanged);
    void onTargetChanged();

    std::uint32_t nodeOf(const QModelIndex& index) const
    {
        return static_cast<std::uint32_t>(index.internalId());
    }
    bool isDraggable(std::uint32_t node) const;
    bool isTensorChanged(std::uint32_t tensor) const;
    std::optional<std::string> recordedDeviceOfTensor(std::uint32_t tensor) const;
    std::optional<std::string> plannedDeviceOfTensor(std::uint32_t tensor) const;
    QString recordedText(std::uint32_t node) const;
    QString plannedText(std::uint32_t node) const;
    QString plannedSingleDevice(std::uint32_t node) const; // empty when mixed or no device
    std::uint64_t bytesOf(std::uint32_t node) const;
    QVariantList deviceMix(std::uint32_t node) const;
    QString nameTooltip(std::uint32_t node) const;
    QString displayData(std::uint32_t node, int column) const;
    QVariant decoration(std::uint32_t node) const;
    QVariant decorationWithBadge(std::uint32_t node) const;
    void buildQuantTexts();
    void emitRowsChanged(const std::vector<std::uint32_t>& nodes, const QList<int>& roles);

    CheckpointDocument* m_document;
    // Per tree node.
    std::vector<std::uint32_t> m_rowInParent;
    std::vector<std::uint32_t> m_tensorCount; // tensors at or below
    std::vector<std::uint32_t> m_changedCount; // tensors at or below whose planned != recorded
    std::vector<std::int32_t> m_recordedDevice; // index into m_recordedTags, kNoDevice, kMixedDevices
    std::vector<QString> m_recordedTags;
    // Per tensor: whether it counts in m_changedCount now.
    std::vector<char> m_tensorChanged;
    // Per tree node: whether an index of one of its children was ever handed out (index(),
    // indexForTreeNode(), parent()). Rows under a node without one need no dataChanged.
    mutable std::vector<char> m_childIndexesHandedOut;
    std::vector<char> m_collected; // per tree node, scratch for onPlacementChanged (all 0 between calls)
    std::vector<std::uint32_t> m_changedRows; // scratch for onPlacementChanged
    std::vector<std::pair<std::uint32_t, std::uint32_t>> m_rowsByParent; // scratch for emitRowsChanged
    // Swatches by device tag (a handful), and striped ones by mix (cleared when it grows).
    mutable QHash<QString, QPixmap> m_swatches;
    // Per tree node, the worst finding severity (int ckpt::Severity, -1: none) about its own tensor
    // and about any tensor at or below it; empty until setFindings().
    std::vector<std::int8_t> m_findingSeverity;
    std::vector<std::int8_t> m_findingSeverityBelow;
    QHash<std::uint32_t, QStringList> m_findingMessages; // per node with own findings: the first few
    // Per tensor of a quantized group (a weight or one of its scales): QuantGroupRole's text, and
    // the lines its tooltip adds (the whole group). Empty for a checkpoint without quantized weights.
    QHash<std::uint32_t, QString> m_quantText;
    QHash<std::uint32_t, QString> m_quantTooltip;
    bool m_hasBadges = false; // some row has a badge: every swatch gets room for one, so names align
    mutable QHash<QString, QPixmap> m_badgedSwatches;
};

} // namespace ckpt
