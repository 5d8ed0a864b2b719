// SPDX-License-Identifier: MIT
#include "ui/widgets/recentfilesmenu.h"

#include "ui/base/appsettings.h"

#include <QDir>
#include <QFileInfo>

namespace ckpt {

RecentFilesMenu::RecentFilesMenu(AppSettings* settings, QWidget* parent)
    : QMenu(tr("Open &Recent"), parent)
    , m_settings(settings)
{
    setObjectName(QStringLiteral("recentMenu"));
    connect(this, &QMenu::aboutToShow, this, &RecentFilesMenu::rebuild);
    rebuild();
}

void RecentFilesMenu::rebuild()
{
    clear();
    const QStringList files = m_settings->recentFiles();
    int number = 1;
    for (const QString& path : files) {
        QAction* action = addAction(QStringLiteral("&%1 %2").arg(number % 10).arg(QFileInfo(path).fileName()),
            this, [this, path] { Q_EMIT fileChosen(path); });
        action->setToolTip(QDir::toNativeSeparators(path));
        action->setStatusTip(QDir::toNativeSeparators(path));
        ++number;
    }
    if (files.isEmpty())
        addAction(tr("No recent files"))->setEnabled(false);
    addSeparator();
    QAction* clearAction
        = addAction(tr("&Clear Recent Files"), this, [this] { m_settings->clearRecentFiles(); });
    clearAction->setEnabled(!files.isEmpty());
}

} // namespace ckpt
