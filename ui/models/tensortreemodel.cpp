// SPDX-License-Identifier: MIT
// The tree model's structure, updates, roles and drag source; how a row reads (texts, tooltips,
// swatches, headers) is in tensortreemodeltext.cpp.
#include "ui/models/tensortreemodel.h"

#include "core/model/quantgroups.h"
#include "core/model/shardset.h"
#include "ui/base/devicecolors.h"
#include "ui/document/checkpointdocument.h"
#include "ui/models/findingsmodel.h"

#include <QFont>
#include <QGuiApplication>
#include <QMimeData>

#include <algorithm>
#include <unordered_set>

namespace ckpt {

namespace {

// A tensor's recorded device as the plan's tags are.
std::optional<std::string> recordedTag(const OptionalInternedString& device)
{
    return device ? std::optional<std::string>(device->str()) : std::nullopt;
}

} // namespace

TensorTreeModel::TensorTreeModel(CheckpointDocument* document, QObject* parent)
    : QAbstractItemModel(parent)
    , m_document(document)
{
    const Checkpoint& checkpoint = m_document->checkpoint();
    const std::size_t nodeCount = checkpoint.tree.size();
    m_rowInParent.assign(nodeCount, 0);
    m_tensorCount.assign(nodeCount, 0);
    m_changedCount.assign(nodeCount, 0);
    m_recordedDevice.assign(nodeCount, kNoDevice);
    m_tensorChanged.assign(checkpoint.tensors.size(), 0);
    m_childIndexesHandedOut.assign(nodeCount, 0);

    for (const TreeNode& node : checkpoint.tree)
        for (std::size_t row = 0; row < node.children.size(); ++row)
            m_rowInParent[node.children[row]] = static_cast<std::uint32_t>(row);

    buildQuantTexts();

    // Breadth-first order from the root; walked backwards it visits children before parents, so
    // the per-node summaries add up in one pass without recursion (trees can be deep and wide).
    std::vector<std::uint32_t> order;
    if (nodeCount > 0) {
        order.reserve(nodeCount);
        order.push_back(0);
        for (std::size_t i = 0; i < order.size(); ++i)
            for (std::uint32_t child : checkpoint.tree[order[i]].children)
                order.push_back(child);
    }
    QHash<QString, std::int32_t> tagIndex;
    const auto indexOfTag = [&](const std::optional<std::string>& recorded) {
        const QString tag = recorded ? QString::fromStdString(*recorded) : QStringLiteral("(none)");
        auto found = tagIndex.find(tag);
        if (found == tagIndex.end()) {
            found = tagIndex.insert(tag, static_cast<std::int32_t>(m_recordedTags.size()));
            m_recordedTags.push_back(tag);
        }
        return found.value();
    };
    // The plan's few recorded tags, each made a QString once, not once per tensor.
    const PlacementPlan& plan = m_document->plan();
    std::vector<std::int32_t> indexOfPlanTag(plan.tagCount(), -1);
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
        const std::uint32_t node = *it;
        const TreeNode& treeNode = checkpoint.tree[node];
        if (treeNode.kind == TreeNodeKind::Tensor && treeNode.tensor >= 0) {
            const auto tensor = static_cast<std::uint32_t>(treeNode.tensor);
            const std::int32_t unit = plan.unitOfTensor(tensor);
            std::int32_t own = 0;
            if (unit >= 0) {
                std::int32_t& cached = indexOfPlanTag[plan.recordedTag(static_cast<std::uint32_t>(unit))];
                if (cached < 0)
                    cached = indexOfTag(recordedDeviceOfTensor(tensor));
                own = cached;
            } else {
                own = indexOfTag(recordedDeviceOfTensor(tensor));
            }
            const std::int32_t fromChildren = m_recordedDevice[node];
            m_recordedDevice[node] = fromChildren == kNoDevice || fromChildren == own ? own : kMixedDevices;
            m_tensorCount[node] += 1;
            m_tensorChanged[tensor] = isTensorChanged(tensor) ? 1 : 0;
            m_changedCount[node] += static_cast<std::uint32_t>(m_tensorChanged[tensor]);
        }
        if (node == 0)
            continue;
        const std::uint32_t parentNode = treeNode.parent;
        m_tensorCount[parentNode] += m_tensorCount[node];
        m_changedCount[parentNode] += m_changedCount[node];
        const std::int32_t mine = m_recordedDevice[node];
        std::int32_t& theirs = m_recordedDevice[parentNode];
        if (mine != kNoDevice)
            theirs = theirs == kNoDevice || theirs == mine ? mine : kMixedDevices;
    }

    connect(m_document, &CheckpointDocument::placementChanged, this, &TensorTreeModel::onPlacementChanged);
    connect(m_document, &CheckpointDocument::targetChanged, this, &TensorTreeModel::onTargetChanged);
}

TensorTreeModel::~TensorTreeModel() = default;

QModelIndex TensorTreeModel::indexForTreeNode(std::uint32_t node, int column) const
{
    if (node == 0 || node >= m_rowInParent.size() || column < 0 || column >= ColumnCount)
        return {};
    m_childIndexesHandedOut[m_document->checkpoint().tree[node].parent] = 1;
    return createIndex(static_cast<int>(m_rowInParent[node]), column, static_cast<quintptr>(node));
}

QModelIndex TensorTreeModel::indexForTensor(std::uint32_t tensor, int column) const
{
    const Checkpoint& checkpoint = m_document->checkpoint();
    if (tensor >= checkpoint.tensors.size())
        return {};
    return indexForTreeNode(checkpoint.tensors[tensor].treeNode, column);
}

QModelIndex TensorTreeModel::index(int row, int column, const QModelIndex& parent) const
{
    if (row < 0 || column < 0 || column >= ColumnCount)
        return {};
    const Checkpoint& checkpoint = m_document->checkpoint();
    if (checkpoint.tree.empty() || (parent.isValid() && parent.column() != 0))
        return {};
    const std::uint32_t parentNode = parent.isValid() ? nodeOf(parent) : 0;
    const auto& children = checkpoint.tree[parentNode].children;
    if (static_cast<std::size_t>(row) >= children.size())
        return {};
    m_childIndexesHandedOut[parentNode] = 1;
    return createIndex(row, column, static_cast<quintptr>(children[static_cast<std::size_t>(row)]));
}

QModelIndex TensorTreeModel::parent(const QModelIndex& child) const
{
    if (!child.isValid())
        return {};
    const std::uint32_t parentNode = m_document->checkpoint().tree[nodeOf(child)].parent;
    return indexForTreeNode(parentNode);
}

int TensorTreeModel::rowCount(const QModelIndex& parent) const
{
    const Checkpoint& checkpoint = m_document->checkpoint();
    if (checkpoint.tree.empty() || (parent.isValid() && parent.column() != 0))
        return 0;
    return static_cast<int>(checkpoint.tree[parent.isValid() ? nodeOf(parent) : 0].children.size());
}

int TensorTreeModel::columnCount(const QModelIndex&) const
{
    return ColumnCount;
}

bool TensorTreeModel::hasChildren(const QModelIndex& parent) const
{
    return rowCount(parent) > 0;
}

std::optional<std::string> TensorTreeModel::recordedDeviceOfTensor(std::uint32_t tensor) const
{
    const PlacementPlan& plan = m_document->plan();
    const std::int32_t unit = plan.unitOfTensor(tensor);
    if (unit >= 0)
        return plan.recordedDevice(static_cast<std::uint32_t>(unit));
    return recordedTag(m_document->checkpoint().tensors[tensor].device);
}

std::optional<std::string> TensorTreeModel::plannedDeviceOfTensor(std::uint32_t tensor) const
{
    // Tensors that are no placement unit of their own (composite sparse tensors) stay where
    // they were recorded; their components move.
    if (m_document->plan().unitOfTensor(tensor) < 0)
        return recordedTag(m_document->checkpoint().tensors[tensor].device);
    return m_document->plannedDeviceOfTensor(tensor);
}

void TensorTreeModel::deviceTagsOfTensors(
    QStringList& tags, std::vector<std::uint16_t>& recorded, std::vector<std::uint16_t>& planned) const
{
    const std::size_t count = m_document->checkpoint().tensors.size();
    recorded.resize(count);
    planned.resize(count);
    std::vector<std::optional<std::string>> seen; // a handful of devices: a linear search is fastest
    const auto indexOf = [&](const std::optional<std::string>& tag) {
        const auto found = std::find(seen.begin(), seen.end(), tag);
        if (found != seen.end())
            return static_cast<std::uint16_t>(found - seen.begin());
        seen.push_back(tag);
        tags.append(tag ? QString::fromStdString(*tag) : QStringLiteral("(none)"));
        return static_cast<std::uint16_t>(seen.size() - 1);
    };
    // Each of the plan's tags looked up once (in the order first met, as before), not per tensor.
    const PlacementPlan& plan = m_document->plan();
    constexpr std::uint32_t kUnseen = UINT32_MAX;
    std::vector<std::uint32_t> ofPlanTag(plan.tagCount(), kUnseen);
    const auto indexOfPlanTag = [&](std::uint32_t planTag) {
        if (ofPlanTag[planTag] == kUnseen)
            ofPlanTag[planTag] = indexOf(plan.tag(planTag));
        return static_cast<std::uint16_t>(ofPlanTag[planTag]);
    };
    for (std::uint32_t t = 0; t < count; ++t) {
        const std::int32_t unit = plan.unitOfTensor(t);
        if (unit < 0) {
            recorded[t] = indexOf(recordedDeviceOfTensor(t));
            planned[t] = indexOf(plannedDeviceOfTensor(t));
            continue;
        }
        recorded[t] = indexOfPlanTag(plan.recordedTag(static_cast<std::uint32_t>(unit)));
        planned[t] = indexOfPlanTag(plan.plannedTag(static_cast<std::uint32_t>(unit)));
    }
}

bool TensorTreeModel::isTensorChanged(std::uint32_t tensor) const
{
    // A tensor that is no unit of its own stays where it was recorded; a unit's tags are interned,
    // so comparing their indices compares the devices.
    const PlacementPlan& plan = m_document->plan();
    const std::int32_t unit = plan.unitOfTensor(tensor);
    return unit >= 0
        && plan.plannedTag(static_cast<std::uint32_t>(unit))
        != plan.recordedTag(static_cast<std::uint32_t>(unit));
}

bool TensorTreeModel::isDraggable(std::uint32_t node) const
{
    const TreeNode& treeNode = m_document->checkpoint().tree[node];
    switch (treeNode.kind) {
    case TreeNodeKind::Tensor:
        return treeNode.tensor >= 0;
    case TreeNodeKind::Module:
    case TreeNodeKind::Dict:
    case TreeNodeKind::Sequence:
    case TreeNodeKind::Object:
        return m_tensorCount[node] > 0;
    default:
        return false;
    }
}

void TensorTreeModel::setFindings(const std::vector<Finding>& findings)
{
    const Checkpoint& checkpoint = m_document->checkpoint();
    const std::size_t nodeCount = checkpoint.tree.size();
    std::vector<std::int8_t> own(nodeCount, -1);
    std::vector<std::int8_t> below(nodeCount, -1);
    QHash<std::uint32_t, QStringList> messages;
    for (const Finding& finding : findings) {
        const auto severity = static_cast<std::int8_t>(finding.severity);
        for (const std::uint32_t tensor : finding.tensors) {
            if (tensor >= checkpoint.tensors.size())
                continue;
            const std::uint32_t node = checkpoint.tensors[tensor].treeNode;
            if (node >= nodeCount)
                continue;
            own[node] = std::max(own[node], severity);
            QStringList& list = messages[node];
            const QString message = QString::fromStdString(finding.message);
            if (list.size() < 4 && !list.contains(message))
                list.append(message);
            // Climb while it raises something: ancestors already as severe stop the walk.
            for (std::uint32_t up = node;; up = checkpoint.tree[up].parent) {
                if (below[up] >= severity)
                    break;
                below[up] = severity;
                if (up == 0)
                    break;
            }
        }
    }

    std::vector<std::uint32_t> changed;
    const bool hadBadges = m_hasBadges;
    m_hasBadges = std::any_of(below.begin(), below.end(), [](std::int8_t s) { return s >= 0; });
    if (hadBadges != m_hasBadges) {
        // The decoration widens or narrows on every row.
        for (std::uint32_t node = 1; node < nodeCount; ++node)
            changed.push_back(node);
    } else {
        for (std::uint32_t node = 1; node < nodeCount; ++node) {
            const bool wasOwn
                = node < m_findingSeverity.size() ? m_findingSeverity[node] != own[node] : own[node] >= 0;
            const bool wasBelow = node < m_findingSeverityBelow.size()
                ? m_findingSeverityBelow[node] != below[node]
                : below[node] >= 0;
            if (wasOwn || wasBelow)
                changed.push_back(node);
        }
    }
    m_findingSeverity = std::move(own);
    m_findingSeverityBelow = std::move(below);
    m_findingMessages = std::move(messages);
    emitRowsChanged(
        changed, {Qt::DecorationRole, Qt::ToolTipRole, FindingSeverityRole, FindingsBelowSeverityRole});
}

void TensorTreeModel::emitRowsChanged(const std::vector<std::uint32_t>& nodes, const QList<int>& roles)
{
    // One dataChanged per run of adjacent siblings.
    const Checkpoint& checkpoint = m_document->checkpoint();
    // (parent, row); kept between calls: a fresh buffer of a hundred thousand pairs would be
    // mapped and page-faulted in again on every drop.
    std::vector<std::pair<std::uint32_t, std::uint32_t>>& byParent = m_rowsByParent;
    byParent.clear();
    byParent.reserve(nodes.size());
    // Rows under a node whose children no view, proxy or caller has ever been handed an index of
    // are skipped: nothing holds anything about them, and whoever asks later reads the new data.
    // A drop of a 100,000-tensor module changes rows under 100,000 parents, most never expanded:
    // one signal each cost more than the move itself.
    for (const std::uint32_t node : nodes)
        if (node != 0 && node < checkpoint.tree.size()
            && m_childIndexesHandedOut[checkpoint.tree[node].parent])
            byParent.emplace_back(checkpoint.tree[node].parent, m_rowInParent[node]);
    std::sort(byParent.begin(), byParent.end());
    for (std::size_t i = 0; i < byParent.size();) {
        std::size_t end = i + 1;
        while (end < byParent.size() && byParent[end].first == byParent[i].first
            && byParent[end].second <= byParent[end - 1].second + 1)
            ++end;
        const std::uint32_t parentNode = byParent[i].first;
        const auto& children = checkpoint.tree[parentNode].children;
        const QModelIndex first = createIndex(static_cast<int>(byParent[i].second), NameColumn,
            static_cast<quintptr>(children[byParent[i].second]));
        const QModelIndex last = createIndex(static_cast<int>(byParent[end - 1].second), ColumnCount - 1,
            static_cast<quintptr>(children[byParent[end - 1].second]));
        Q_EMIT dataChanged(first, last, roles);
        i = end;
    }
}

// Each quantized weight with its scales, one row group: the weight's row says its scheme and scale
// layout, each scale's row its weight and layout, and their tooltips list the whole group.
void TensorTreeModel::buildQuantTexts()
{
    const Checkpoint& checkpoint = m_document->checkpoint();
    const std::shared_ptr<const QuantScan> kept = quantScanOf(checkpoint); // the reader's, not a second scan
    const QuantScan& scan = *kept;
    for (const QuantGroup& group : scan.groups) {
        const TensorEntry& weight = checkpoint.tensors[group.weight];
        const QString weightName
            = QString::fromUtf8(weight.name.data(), static_cast<qsizetype>(weight.name.size()));
        QStringList layouts;
        QString tooltip = QStringLiteral("<hr><b>Quantized weight and its scales</b><br>")
            + weightName.toHtmlEscaped() + QStringLiteral(": ") + QString::fromStdString(group.scheme)
            + QLatin1Char(' ') + QString::fromStdString(std::string(std::string_view(weight.dtype)))
            + QLatin1Char(' ') + QString::fromStdString(quantShapeText(weight.shape));
        if (group.valuesPerElement > 1)
            tooltip += QStringLiteral(", %1 values (%2 packed in each element along dim %3)")
                           .arg(QString::fromStdString(quantShapeText(group.logicalShape)))
                           .arg(group.valuesPerElement)
                           .arg(group.packedDim);
        for (const QuantScale& scale : group.scales) {
            const TensorEntry& tensor = checkpoint.tensors[scale.tensor];
            const QString layout = QString::fromStdString(scale.layout);
            if (scale.role == QuantScaleRole::Weight)
                layouts << layout;
            const std::string_view leaf = std::string_view(weight.name).substr(weight.name.rfind('.') + 1);
            m_quantText.insert(scale.tensor,
                QString::fromLatin1(quantScaleRoleName(scale.role)) + QStringLiteral(" of ")
                    + QString::fromUtf8(leaf.data(), qsizetype(leaf.size())) + QStringLiteral(": ") + layout);
            tooltip += QStringLiteral("<br>&nbsp;&nbsp;")
                + QString::fromUtf8(tensor.name.data(), static_cast<qsizetype>(tensor.name.size()))
                      .toHtmlEscaped()
                + QStringLiteral(": ") + QString::fromLatin1(quantScaleRoleName(scale.role))
                + QStringLiteral(", ") + QString::fromStdString(std::string(std::string_view(tensor.dtype)))
                + QLatin1Char(' ') + QString::fromStdString(quantShapeText(tensor.shape))
                + QStringLiteral(", ") + layout.toHtmlEscaped();
        }
        m_quantText.insert(group.weight,
            QString::fromStdString(group.scheme) + QStringLiteral(", ")
                + (layouts.isEmpty() ? QStringLiteral("no scale") : layouts.join(QStringLiteral(" + "))));
        m_quantTooltip.insert(group.weight, tooltip);
        for (const QuantScale& scale : group.scales)
            m_quantTooltip.insert(scale.tensor, tooltip);
    }
}

QVariant TensorTreeModel::data(const QModelIndex& index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::DoNotUseParent))
        return {};
    const std::uint32_t node = nodeOf(index);
    const int column = index.column();
    const Checkpoint& checkpoint = m_document->checkpoint();
    const TreeNode& treeNode = checkpoint.tree[node];
    const std::int32_t tensor = treeNode.kind == TreeNodeKind::Tensor ? treeNode.tensor : -1;

    switch (role) {
    case Qt::DisplayRole:
        return displayData(node, column);
    case QuantGroupRole:
        return tensor >= 0 ? m_quantText.value(static_cast<std::uint32_t>(tensor)) : QString();
    case Qt::ToolTipRole:
        // A checkpoint of several files: each tensor row names its shard.
        if (column == 0 && tensor >= 0 && checkpoint.shardSet)
            if (const ShardFile* shard = checkpoint.shardSet->shardOfStorage(
                    checkpoint.tensors[static_cast<std::size_t>(tensor)].storage))
                return tr("In shard %1").arg(QString::fromStdString(shard->name));
        if (column == RecordedDeviceColumn && m_tensorCount[node] > 0) {
            const QString recorded = recordedText(node);
            return QString(
                QStringLiteral("<b>Recorded device</b>: where this data was when torch.save wrote the file. "
                               "A plain torch.load puts it back there.<br>")
                + (m_recordedDevice[node] >= 0
                        ? deviceTooltip(recorded).toHtmlEscaped()
                        : QStringLiteral("The tensors below were recorded on several devices.")));
        }
        if (column == PlannedDeviceColumn && m_tensorCount[node] > 0) {
            const QString planned = plannedSingleDevice(node);
            return QString(QStringLiteral("<b>Planned device</b>: where it goes under your plan (drag rows "
                                          "onto a device to change it); "
                                          "the remapped copy records this device.<br>")
                + (planned.isEmpty() ? QStringLiteral("The tensors below are planned onto several devices.")
                                     : deviceTooltip(planned).toHtmlEscaped()));
        }
        if (const auto found = m_findingMessages.constFind(node); found != m_findingMessages.constEnd()) {
            QString text = nameTooltip(node)
                + (tensor >= 0 ? m_quantTooltip.value(static_cast<std::uint32_t>(tensor)) : QString())
                + QStringLiteral("<hr><b>Findings</b>");
            for (const QString& message : found.value())
                text += QStringLiteral("<br>") + message.toHtmlEscaped();
            return text;
        }
        return QString(nameTooltip(node)
            + (tensor >= 0 ? m_quantTooltip.value(static_cast<std::uint32_t>(tensor)) : QString()));
    case Qt::DecorationRole:
        if (column != NameColumn)
            return {};
        return m_hasBadges ? decorationWithBadge(node) : decoration(node);
    case Qt::BackgroundRole:
    case Qt::ForegroundRole: {
        QString tag;
        if (column == RecordedDeviceColumn && m_recordedDevice[node] >= 0)
            tag = recordedText(node);
        else if (column == PlannedDeviceColumn)
            tag = plannedSingleDevice(node);
        if (tag.isEmpty())
            return {};
        return role == Qt::BackgroundRole ? deviceColor(tag) : deviceTextColor(tag);
    }
    case Qt::FontRole:
        if ((column == PlannedDeviceColumn || column == NameColumn) && m_changedCount[node] > 0) {
            QFont font;
            font.setBold(true);
            return font;
        }
        return {};
    case Qt::TextAlignmentRole:
        if (column == SizeColumn)
            return QVariant::fromValue<int>(Qt::AlignRight | Qt::AlignVCenter);
        return {};
    case Qt::AccessibleTextRole:
        return displayData(node, column);
    case TreeNodeRole:
        return QVariant::fromValue<uint>(node);
    case TensorIndexRole:
        return tensor;
    case SortRole:
        if (column == SizeColumn)
            return QVariant::fromValue<qulonglong>(m_tensorCount[node] > 0 ? bytesOf(node) : 0);
        return displayData(node, column);
    case PlannedDeviceRole:
        return plannedSingleDevice(node);
    case RecordedDeviceRole:
        return recordedText(node);
    case DeviceMixRole:
        return deviceMix(node);
    case SharedStorageTensorsRole: {
        QList<int> others;
        if (tensor >= 0) {
            const std::int32_t storage = checkpoint.tensors[static_cast<std::size_t>(tensor)].storage;
            if (storage >= 0)
                for (std::uint32_t other : checkpoint.storages[static_cast<std::size_t>(storage)].tensors)
                    if (static_cast<std::int32_t>(other) != tensor)
                        others.push_back(static_cast<int>(other));
        }
        return QVariant::fromValue(others);
    }
    case ChangedRole:
        return m_changedCount[node] > 0;
    case PathRole:
        return QString::fromStdString(m_document->nodePath(node));
    case FindingSeverityRole:
        if (node < m_findingSeverity.size() && m_findingSeverity[node] >= 0)
            return int(m_findingSeverity[node]);
        return {};
    case FindingsBelowSeverityRole:
        if (node < m_findingSeverityBelow.size() && m_findingSeverityBelow[node] >= 0)
            return int(m_findingSeverityBelow[node]);
        return {};
    default:
        return {};
    }
}

Qt::ItemFlags TensorTreeModel::flags(const QModelIndex& index) const
{
    if (!index.isValid())
        return Qt::NoItemFlags;
    const std::uint32_t node = nodeOf(index);
    Qt::ItemFlags result = Qt::ItemIsEnabled | Qt::ItemIsSelectable;
    if (m_document->checkpoint().tree[node].children.empty())
        result |= Qt::ItemNeverHasChildren;
    if (isDraggable(node))
        result |= Qt::ItemIsDragEnabled;
    return result;
}

QStringList TensorTreeModel::mimeTypes() const
{
    return {QLatin1String(kPlacementMimeType)};
}

QMimeData* TensorTreeModel::mimeData(const QModelIndexList& indexes) const
{
    const Checkpoint& checkpoint = m_document->checkpoint();
    std::vector<std::pair<bool, std::string>> items;
    std::unordered_set<std::uint32_t> seen; // a selected row arrives once per column
    QStringList names;
    for (const QModelIndex& index : indexes) {
        if (!index.isValid() || index.model() != this)
            continue;
        const std::uint32_t node = nodeOf(index);
        if (!isDraggable(node) || !seen.insert(node).second)
            continue;
        const bool isTensor = checkpoint.tree[node].kind == TreeNodeKind::Tensor;
        items.emplace_back(!isTensor, m_document->nodePath(node));
        names.push_back(QString::fromStdString(items.back().second));
    }
    if (items.empty())
        return nullptr;
    auto* mime = new QMimeData;
    mime->setData(QLatin1String(kPlacementMimeType), CheckpointDocument::mimeDataFor(items));
    mime->setText(names.join(QLatin1Char('\n'))); // dropping into an editor gives the names
    return mime;
}

Qt::DropActions TensorTreeModel::supportedDragActions() const
{
    return Qt::MoveAction;
}

void TensorTreeModel::onPlacementChanged(const std::vector<std::uint32_t>& unitsChanged)
{
    const Checkpoint& checkpoint = m_document->checkpoint();
    const PlacementPlan& plan = m_document->plan();
    std::vector<std::uint32_t> tensors;
    for (std::uint32_t u : unitsChanged) {
        if (u >= plan.units().size())
            continue;
        const PlacementUnit& unit = plan.units()[u];
        if (unit.storage >= 0) {
            const auto& viewers = checkpoint.storages[static_cast<std::size_t>(unit.storage)].tensors;
            tensors.insert(tensors.end(), viewers.begin(), viewers.end());
        } else if (unit.tensor >= 0) {
            tensors.push_back(static_cast<std::uint32_t>(unit.tensor));
        }
    }

    // The rows to refresh: those tensors and their ancestors, each once. Stop climbing at a node
    // already collected: its ancestors are too. A flag per node instead of a hash set: a drop of a
    // large module collects a hundred thousand rows.
    m_collected.resize(checkpoint.tree.size(), 0);
    std::vector<std::uint32_t>& rows = m_changedRows; // kept between calls, like m_rowsByParent
    rows.clear();
    for (std::uint32_t t : tensors) {
        const bool changed = isTensorChanged(t);
        if (changed != static_cast<bool>(m_tensorChanged[t])) {
            m_tensorChanged[t] = changed ? 1 : 0;
            for (std::uint32_t node = checkpoint.tensors[t].treeNode;; node = checkpoint.tree[node].parent) {
                m_changedCount[node] += changed ? 1u : static_cast<std::uint32_t>(-1);
                if (node == 0)
                    break;
            }
        }
        for (std::uint32_t node = checkpoint.tensors[t].treeNode; node != 0;
             node = checkpoint.tree[node].parent) {
            if (m_collected[node])
                break;
            m_collected[node] = 1;
            rows.push_back(node);
        }
    }
    for (std::uint32_t node : rows)
        m_collected[node] = 0;
    // One dataChanged per run of adjacent siblings: a module's tensors are one signal, not thousands.
    emitRowsChanged(rows, {});
}

void TensorTreeModel::onTargetChanged()
{
    // The plan is kept, so no row changes device; tooltips and sizes read the new ledger. One
    // signal over the top level makes views repaint without walking the tree.
    const int rows = rowCount();
    if (rows > 0)
        Q_EMIT dataChanged(index(0, 0), index(rows - 1, ColumnCount - 1));
}

} // namespace ckpt
