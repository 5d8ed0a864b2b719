// SPDX-License-Identifier: MIT
#pragma once

#include <QAction>
#include <QKeySequence>
#include <QString>

#include <functional>

namespace ckpt {

// One row of a window's action table: what the menus show and what the action does. Declaring
// actions as rows keeps the texts, keys and tips of a menu readable in one place instead of eight
// setter calls per action.
struct ActionSpec {
    const char* objectName; // what tests and settings find the action by
    QString text;
    QKeySequence shortcut;
    QString statusTip;
    std::function<void()> trigger;
};

inline QAction* createAction(QObject* parent, const ActionSpec& spec)
{
    auto* action = new QAction(spec.text, parent);
    action->setObjectName(QString::fromLatin1(spec.objectName));
    if (!spec.shortcut.isEmpty())
        action->setShortcut(spec.shortcut);
    if (!spec.statusTip.isEmpty())
        action->setStatusTip(spec.statusTip);
    if (spec.trigger)
        QObject::connect(action, &QAction::triggered, parent, spec.trigger);
    return action;
}

} // namespace ckpt
