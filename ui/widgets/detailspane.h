// SPDX-License-Identifier: MIT
#pragma once

#include <QPointer>
#include <QWidget>

#include <cstdint>
#include <memory>
#include <optional>

class QLabel;
class QTextBrowser;
class QUrl;

namespace ckpt {

class CheckpointDocument;
class JobTracker;
class TensorValuesSource;
class ValuesChartWidget;

// What the selected tree row is, in full: for a tensor its storage (key, bytes, offset, stride),
// the tensors sharing that storage (links that select them), where it sits in the pickle and how it
// was rebuilt; for a module its bytes per planned device; for a placeholder its class and why it
// is not a tensor.
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
