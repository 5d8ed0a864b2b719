// SPDX-License-Identifier: MIT
#pragma once

#include <QMenu>

namespace ckpt {

class AppSettings;

// File > Open Recent: rebuilt from the settings each time it opens (another window may have added
// a file), numbered for the keyboard, with Clear at the end.
class RecentFilesMenu : public QMenu {
    Q_OBJECT

public:
    RecentFilesMenu(AppSettings* settings, QWidget* parent);

Q_SIGNALS:
    void fileChosen(const QString& path);

private:
    void rebuild();

    AppSettings* m_settings = nullptr;
};

} // namespace ckpt
