// SPDX-License-Identifier: MIT
#include "ui/widgets/maintoolbar.h"

#include "ui/widgets/icons.h"

#include <QAction>
#include <QMenu>
#include <QToolButton>

namespace ckpt {

MainToolBar::MainToolBar(QWidget* window, QMenu* targetMenu)
    : QToolBar(tr("Main"), window)
{
    setObjectName(QStringLiteral("mainToolBar"));
    setMovable(false);
    setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    setIconSize(QSize(20, 20));
    // Object name, icon, the short text on the button; nullptr for a separator.
    const struct {
        const char* action;
        const char* icon;
        const char* text;
    } items[] = {
        {"actionOpen", "open", QT_TR_NOOP("Open")},
        {"actionSaveRemapped", "save", QT_TR_NOOP("Save Copy")},
        {nullptr, nullptr, nullptr},
        {"actionUndo", "undo", QT_TR_NOOP("Undo")},
        {"actionRedo", "redo", QT_TR_NOOP("Redo")},
        {nullptr, nullptr, nullptr},
        {"actionEverythingToCpu", "cpu", QT_TR_NOOP("Everything to CPU")},
        {"actionAutoBalanced", "auto", QT_TR_NOOP("Automatic Placement")},
    };
    for (const auto& item : items) {
        if (!item.action) {
            addSeparator();
            continue;
        }
        auto* action = window->findChild<QAction*>(QString::fromLatin1(item.action));
        if (!action) {
            qWarning("MainToolBar: no action named %s", item.action);
            continue;
        }
        action->setIcon(appIcon(QString::fromLatin1(item.icon)));
        action->setIconText(tr(item.text));
        addAction(action);
    }
    m_targetButton = new QToolButton(this);
    m_targetButton->setObjectName(QStringLiteral("targetButton"));
    m_targetButton->setIcon(appIcon(QStringLiteral("target")));
    m_targetButton->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    m_targetButton->setPopupMode(QToolButton::InstantPopup);
    m_targetButton->setMenu(targetMenu);
    m_targetButton->setToolTip(tr("The machine the plan is for: where the copy will be loaded"));
    addWidget(m_targetButton);
    setTargetName({});

    auto* spacer = new QWidget(this);
    spacer->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Preferred);
    addWidget(spacer);
    if (auto* tour = window->findChild<QAction*>(QStringLiteral("actionGuidedTour"))) {
        tour->setIcon(appIcon(QStringLiteral("tour")));
        tour->setIconText(tr("Guided Tour"));
        addAction(tour);
    }
}

void MainToolBar::setTargetName(const QString& name)
{
    m_targetButton->setText(name.isEmpty() ? tr("Target") : tr("Target: %1").arg(name));
}

} // namespace ckpt
