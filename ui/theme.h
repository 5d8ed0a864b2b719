// SPDX-License-Identifier: MIT
#pragma once

#include <QObject>
#include <QPalette>
#include <QString>

class QActionGroup;
class QMenu;
class QWidget;

namespace ckpt {

class AppSettings;

// Light and dark palettes, or the platform's own (the default: it follows the desktop's choice as
// Qt reads it at start-up). View > Theme; the choice is remembered.
class Theme : public QObject {
    Q_OBJECT

public:
    Theme(AppSettings* settings, QWidget* menuParent);

    QMenu* menu() const
    {
        return m_menu;
    } // "themeMenu": actionThemeSystem, actionThemeLight, actionThemeDark
    QString current() const { return m_current; }
    void apply(const QString& theme); // "system", "light" or "dark"

    static QPalette lightPalette();
    static QPalette darkPalette();

private:
    AppSettings* m_settings;
    QPalette m_systemPalette;
    QString m_current;
    QMenu* m_menu = nullptr;
    QActionGroup* m_group = nullptr;
};

} // namespace ckpt
