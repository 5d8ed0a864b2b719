// SPDX-License-Identifier: MIT
#pragma once

#include <QToolBar>

class QMenu;
class QToolButton;

namespace ckpt {

// The main window's toolbar: open, save copy, undo, redo, everything to CPU, automatic placement,
// the target machine (a menu) and the guided tour. It finds the window's actions by object name
// (the action table's), gives them their icons, and shows the target's name on its button.
class MainToolBar : public QToolBar {
    Q_OBJECT

public:
    MainToolBar(QWidget* window, QMenu* targetMenu);
    void setTargetName(const QString& name);
    QToolButton* targetButton() const { return m_targetButton; }

private:
    QToolButton* m_targetButton = nullptr;
};

} // namespace ckpt
