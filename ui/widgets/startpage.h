// SPDX-License-Identifier: MIT
#pragma once

#include <QWidget>

class QAction;
class QLabel;
class QListWidget;

namespace ckpt {

class AppSettings;

// What the window shows while no file is open: a line that says what to do (or why the last file
// could not be opened), buttons for the window's Open, Open Folder, demo and guided tour actions
// (the same actions as the menus), and the recent files, each opened by a click or Enter.
class StartPage : public QWidget {
    Q_OBJECT

public:
    StartPage(AppSettings* settings, const QList<QAction*>& actions, QWidget* parent = nullptr);

    QLabel* messageLabel() const { return m_message; } // "emptyStateLabel"
    QListWidget* recentList() const { return m_recent; }
    void refresh(); // the recent files, from the settings

Q_SIGNALS:
    void fileChosen(const QString& path);

protected:
    void showEvent(QShowEvent* event) override;

private:
    AppSettings* m_settings;
    QLabel* m_message = nullptr;
    QLabel* m_recentTitle = nullptr;
    QListWidget* m_recent = nullptr;
};

} // namespace ckpt
