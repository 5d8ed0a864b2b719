#pragma once

#include <QPointer>
#include <QWidget>

#include <cstdint>
#include <optional>

class QTextBrowser;
class QUrl;

namespace ckpt {

class CheckpointDocument;

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

Q_SIGNALS:
    // A tensor named in the pane was clicked (e.g. one sharing the storage).
    void tensorActivated(std::uint32_t tensor);

protected:
    void changeEvent(QEvent* event) override;

private:
    void refresh();
    void openLink(const QUrl& url);
    QString tensorHtml(std::uint32_t tensor) const;
    QString nodeHtml(std::uint32_t treeNode) const;

    QPointer<CheckpointDocument> m_document;
    std::optional<std::uint32_t> m_treeNode;
    QTextBrowser* m_browser = nullptr;
};

} // namespace ckpt
