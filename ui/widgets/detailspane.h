// SPDX-License-Identifier: MIT
#pragma once

#include <QPointer>
#include <QWidget>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

class QLabel;
class QTextBrowser;
class QUrl;

namespace ckpt {

class CheckpointDocument;
struct Checkpoint;
class JobTracker;
class TensorValuesSource;
class ValuesChartWidget;

// One file of a sharded checkpoint, as far as a tree node's tensors are in it: how many of the
// node's tensors have their bytes there, those storages' bytes (each storage once, as `info` and
// the device cards count them) and their recorded devices.
struct ShardTotal {
    std::size_t shard = 0; // index into ShardSet::shards
    std::uint64_t tensors = 0;
    std::uint64_t bytes = 0;
    std::vector<std::string> devices; // sorted; "(none)" for a storage that records none
};

// Whether `treeNode` stands for the whole set: the root, or the root's only child (the one top row
// the tree shows, "model").
bool isTopOfSet(const Checkpoint& checkpoint, std::uint32_t treeNode);
// The per-shard split of the tensors under `treeNode`, in shard order; only shards holding some of
// them, except at the top of the set, where every file of the set is listed (a missing one too). Empty when
// the checkpoint is not sharded. One pass over the subtree and a sort of its storages: cheap enough for the
// GUI thread even at 100,000 tensors (milliseconds).
std::vector<ShardTotal> shardTotals(const Checkpoint& checkpoint, std::uint32_t treeNode);

// What the selected tree row is, in full: for a tensor its storage (key, bytes, offset, stride),
// the tensors sharing that storage (links that select them), where it sits in the pickle and how it
// was rebuilt; for a module its bytes per planned device; for a placeholder its class and why it
// is not a tensor. In a sharded set the top node lists each file (tensors, bytes, recorded devices) and
// a module spread over several files lists its split per file.
class DetailsPane : public QWidget {
    Q_OBJECT

public:
    explicit DetailsPane(QWidget* parent = nullptr);

    void setDocument(CheckpointDocument* document);
    // Shows the tree node (index into Checkpoint::tree); nothing selected when empty.
    void showTreeNode(std::optional<std::uint32_t> treeNode);
    std::optional<std::uint32_t> treeNode() const { return m_treeNode; }
    // The text shown, as plain text (tests and accessibility).
    QString plainText() const;
    // Where the Values section gets a tensor's statistics from (they need libtorch, which this
    // process does not load); without a source there is no Values section.
    void setValuesSource(std::shared_ptr<TensorValuesSource> source);
    // The Values section (statistics of the selected tensor's numbers), as plain text; empty when
    // no tensor is selected or there is no values source.
    QString valuesText() const;
    ValuesChartWidget* valuesChart() const { return m_valuesChart; }

Q_SIGNALS:
    // A tensor named in the pane was clicked (e.g. one sharing the storage).
    void tensorActivated(std::uint32_t tensor);
    // The Values section shows the statistics of `tensor` (or why there are none).
    void valuesShown(std::uint32_t tensor);

protected:
    void changeEvent(QEvent* event) override;

private:
    void refresh();
    void openLink(const QUrl& url);
    QString tensorHtml(std::uint32_t tensor) const;
    QString nodeHtml(std::uint32_t treeNode) const;
    void computeValues(std::optional<std::uint32_t> tensor);

    QPointer<CheckpointDocument> m_document;
    std::optional<std::uint32_t> m_treeNode;
    QTextBrowser* m_browser = nullptr;
    // Values: computed off the GUI thread; a newer selection makes an older result stale (and
    // stops its scan).
    QWidget* m_values = nullptr;
    QLabel* m_valuesLabel = nullptr;
    ValuesChartWidget* m_valuesChart = nullptr;
    std::optional<std::uint32_t> m_valuesTensor;
    std::shared_ptr<TensorValuesSource> m_valuesSource;
    JobTracker* m_valuesJobs = nullptr;
};

} // namespace ckpt
