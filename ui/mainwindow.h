#pragma once

#include <QMainWindow>
#include <QString>

class QAction;
class QLabel;

namespace ckpt {

/// The desktop app's top-level window: menus, the checkpoint view and the status bar.
class MainWindow : public QMainWindow {
    Q_OBJECT

public:
    explicit MainWindow(QWidget* parent = nullptr);
    ~MainWindow() override;

    /// Shows the checkpoint at @p path. For now only the path is shown, in the status bar.
    void openFile(const QString& path);

    /// The path given to the last openFile(), empty when nothing is open.
    QString currentFile() const { return m_currentFile; }

private:
    void createMenus();
    void chooseFileToOpen();
    void showAbout();

    QString m_currentFile;
    QLabel* m_emptyStateLabel = nullptr;
    QLabel* m_currentFileLabel = nullptr;
    QAction* m_openAction = nullptr;
    QAction* m_quitAction = nullptr;
    QAction* m_aboutAction = nullptr;
};

} // namespace ckpt
