// SPDX-License-Identifier: MIT
#pragma once

#include <QObject>
#include <QString>

#include <functional>
#include <memory>
#include <vector>

class QAction;
class QMenu;
class QMimeData;
class QWidget;

namespace ckpt {

class DocumentController;

// Keyboard moves: select rows in the tree, then Ctrl+0 puts them on the CPU and Ctrl+1 … Ctrl+8 on
// cuda:0 … cuda:7. A key press makes the same drag payload a drag out of the tree makes and drops
// it through DeviceModel::dropOnDevice, so it is the same one undoable step as a drop on a card.
class DeviceShortcuts : public QObject {
    Q_OBJECT

public:
    static constexpr int kGpuCount = 8;

    // `selection` returns the drag payload of the selected rows (null when none is selected).
    DeviceShortcuts(DocumentController* documents, std::function<std::unique_ptr<QMimeData>()> selection,
        QWidget* parent);

    QMenu* menu() const { return m_menu; } // Plan > Move Selection To
    // "actionMoveToCpu", "actionMoveToCuda0", …; enabled for the target's devices while rows are selected.
    const std::vector<QAction*>& actions() const { return m_actions; }
    void updateActions(bool hasSelection);
    // Moves the selection to `tag`; false when nothing is selected or open.
    bool moveSelectionTo(const QString& tag);

Q_SIGNALS:
    void moved(const QString& statusText);

private:
    DocumentController* m_documents;
    std::function<std::unique_ptr<QMimeData>()> m_selection;
    QMenu* m_menu = nullptr;
    std::vector<QAction*> m_actions;
};

} // namespace ckpt
