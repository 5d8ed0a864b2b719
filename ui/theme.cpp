// SPDX-License-Identifier: MIT
#include "ui/theme.h"

#include "ui/base/appsettings.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QMenu>
#include <QStyle>

namespace ckpt {

namespace {

// The platform's palette as the application started with it, before any theme replaced it (a
// second window must not take the first one's dark palette for the system's).
const QPalette& systemPalette()
{
    static const QPalette palette = QApplication::palette();
    return palette;
}

} // namespace

Theme::Theme(AppSettings* settings, QWidget* menuParent)
    : QObject(menuParent)
    , m_settings(settings)
    , m_systemPalette(systemPalette())
{
    m_menu = new QMenu(tr("&Theme"), menuParent);
    m_menu->setObjectName(QStringLiteral("themeMenu"));
    m_group = new QActionGroup(this);
    const std::pair<const char*, QString> choices[]
        = {{"system", tr("Follow the &System")}, {"light", tr("&Light")}, {"dark", tr("&Dark")}};
    for (const auto& [name, text] : choices) {
        const QString theme = QString::fromLatin1(name);
        QAction* action = m_menu->addAction(text, this, [this, theme] { apply(theme); });
        action->setObjectName(QStringLiteral("actionTheme") + theme.left(1).toUpper() + theme.mid(1));
        action->setCheckable(true);
        action->setData(theme);
        m_group->addAction(action);
    }
    apply(m_settings->theme());
}

void Theme::apply(const QString& theme)
{
    m_current = theme == QLatin1String("light") || theme == QLatin1String("dark") ? theme
                                                                                  : QStringLiteral("system");
    const QList<QAction*> actions = m_group->actions();
    for (QAction* action : actions)
        action->setChecked(action->data().toString() == m_current);
    m_settings->setTheme(m_current);
    if (m_current == QLatin1String("dark"))
        QApplication::setPalette(darkPalette());
    else if (m_current == QLatin1String("light"))
        QApplication::setPalette(lightPalette());
    else
        QApplication::setPalette(m_systemPalette);
}

QPalette Theme::lightPalette()
{
    // Fusion's own light palette: the same on every desktop.
    return QApplication::style()->standardPalette();
}

QPalette Theme::darkPalette()
{
    QPalette dark;
    const QColor window(0x2b, 0x2b, 0x2b);
    const QColor text(0xe6, 0xe6, 0xe6);
    const QColor disabled(0x80, 0x80, 0x80);
    dark.setColor(QPalette::Window, window);
    dark.setColor(QPalette::WindowText, text);
    dark.setColor(QPalette::Base, QColor(0x1e, 0x1e, 0x1e));
    dark.setColor(QPalette::AlternateBase, QColor(0x26, 0x26, 0x26));
    dark.setColor(QPalette::ToolTipBase, QColor(0x3a, 0x3a, 0x3a));
    dark.setColor(QPalette::ToolTipText, text);
    dark.setColor(QPalette::Text, text);
    dark.setColor(QPalette::Button, QColor(0x35, 0x35, 0x35));
    dark.setColor(QPalette::ButtonText, text);
    dark.setColor(QPalette::BrightText, QColor(0xff, 0x6e, 0x6e));
    dark.setColor(QPalette::Light, QColor(0x4a, 0x4a, 0x4a));
    dark.setColor(QPalette::Midlight, QColor(0x3e, 0x3e, 0x3e));
    dark.setColor(QPalette::Mid, QColor(0x5a, 0x5a, 0x5a));
    dark.setColor(QPalette::Dark, QColor(0x1a, 0x1a, 0x1a));
    dark.setColor(QPalette::Shadow, QColor(0x10, 0x10, 0x10));
    dark.setColor(QPalette::Highlight, QColor(0x2f, 0x6f, 0xb3));
    dark.setColor(QPalette::HighlightedText, Qt::white);
    dark.setColor(QPalette::Link, QColor(0x6c, 0xb4, 0xff));
    dark.setColor(QPalette::PlaceholderText, QColor(0x90, 0x90, 0x90));
    for (const auto role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText})
        dark.setColor(QPalette::Disabled, role, disabled);
    return dark;
}

} // namespace ckpt
