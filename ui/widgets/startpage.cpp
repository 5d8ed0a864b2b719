// SPDX-License-Identifier: MIT
#include "ui/widgets/startpage.h"

#include "ui/base/appsettings.h"

#include <QAction>
#include <QDir>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QToolButton>
#include <QVBoxLayout>

namespace ckpt {

StartPage::StartPage(AppSettings* settings, const QList<QAction*>& actions, QWidget* parent)
    : QWidget(parent)
    , m_settings(settings)
{
    setObjectName(QStringLiteral("startPage"));
    setAccessibleName(tr("Start page"));

    m_message = new QLabel(this);
    m_message->setObjectName(QStringLiteral("emptyStateLabel"));
    m_message->setAlignment(Qt::AlignCenter);
    m_message->setWordWrap(true);
    m_message->setForegroundRole(QPalette::PlaceholderText);

    auto* buttons = new QHBoxLayout;
    buttons->setSpacing(12);
    buttons->addStretch(1);
    for (QAction* action : actions) {
        auto* button = new QToolButton(this);
        button->setObjectName(action->objectName() + QStringLiteral("Button"));
        button->setDefaultAction(action);
        button->setToolButtonStyle(Qt::ToolButtonTextUnderIcon);
        button->setIconSize(QSize(32, 32));
        button->setMinimumWidth(120);
        button->setAccessibleName(action->text().remove(QLatin1Char('&')));
        button->setFocusPolicy(Qt::StrongFocus);
        buttons->addWidget(button);
    }
    buttons->addStretch(1);

    m_recentTitle = new QLabel(tr("Recent files"), this);
    m_recentTitle->setObjectName(QStringLiteral("recentFilesTitle"));
    m_recent = new QListWidget(this);
    m_recent->setObjectName(QStringLiteral("recentFilesList"));
    m_recent->setAccessibleName(tr("Recent files"));
    m_recent->setMaximumWidth(720);
    m_recent->setMaximumHeight(220);
    m_recentTitle->setBuddy(m_recent);
    connect(m_recent, &QListWidget::itemActivated, this,
        [this](QListWidgetItem* item) { Q_EMIT fileChosen(item->data(Qt::UserRole).toString()); });

    auto* layout = new QVBoxLayout(this);
    layout->addStretch(2);
    layout->addWidget(m_message);
    layout->addSpacing(16);
    layout->addLayout(buttons);
    layout->addSpacing(24);
    layout->addWidget(m_recentTitle, 0, Qt::AlignHCenter);
    layout->addWidget(m_recent, 0, Qt::AlignHCenter);
    layout->addStretch(3);
    refresh();
}

void StartPage::refresh()
{
    m_recent->clear();
    const QStringList files = m_settings->recentFiles();
    for (const QString& path : files) {
        auto* item = new QListWidgetItem(
            QStringLiteral("%1 — %2").arg(QFileInfo(path).fileName(), QDir::toNativeSeparators(path)),
            m_recent);
        item->setData(Qt::UserRole, path);
        item->setToolTip(QDir::toNativeSeparators(path));
    }
    m_recent->setMinimumWidth(std::min(720, m_recent->sizeHintForColumn(0) + 24));
    m_recentTitle->setVisible(!files.isEmpty());
    m_recent->setVisible(!files.isEmpty());
}

void StartPage::showEvent(QShowEvent* event)
{
    refresh(); // another window may have opened files
    QWidget::showEvent(event);
}

} // namespace ckpt
