#include "mainwindow.h"

#include <QAction>
#include <QApplication>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QKeySequence>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QStatusBar>

namespace ckpt {

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent)
{
    setWindowTitle(tr("Checkpoint Inspector"));

    m_emptyStateLabel = new QLabel(tr("Open a PyTorch checkpoint (File > Open…)"), this);
    m_emptyStateLabel->setObjectName(QStringLiteral("emptyStateLabel"));
    m_emptyStateLabel->setAlignment(Qt::AlignCenter);
    m_emptyStateLabel->setWordWrap(true);
    m_emptyStateLabel->setForegroundRole(QPalette::PlaceholderText);
    setCentralWidget(m_emptyStateLabel);

    // A permanent label rather than showMessage(): menu status tips would wipe a temporary message.
    m_currentFileLabel = new QLabel(this);
    m_currentFileLabel->setObjectName(QStringLiteral("currentFileLabel"));
    m_currentFileLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_currentFileLabel->setContentsMargins(4, 0, 4, 0);
    statusBar()->addWidget(m_currentFileLabel, 1);

    createMenus();
    resize(1000, 680);
}

MainWindow::~MainWindow() = default;

void MainWindow::createMenus()
{
    QMenu* fileMenu = menuBar()->addMenu(tr("&File"));
    fileMenu->setObjectName(QStringLiteral("fileMenu"));

    m_openAction = fileMenu->addAction(tr("&Open…"), this, &MainWindow::chooseFileToOpen);
    m_openAction->setObjectName(QStringLiteral("actionOpen"));
    m_openAction->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_O));
    m_openAction->setStatusTip(tr("Open a PyTorch checkpoint without running its pickle code"));

    fileMenu->addSeparator();

    // Explicit keys: QKeySequence::Quit is empty under some platform themes.
    m_quitAction = fileMenu->addAction(tr("&Quit"), qApp, &QApplication::closeAllWindows);
    m_quitAction->setObjectName(QStringLiteral("actionQuit"));
    m_quitAction->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Q));
    m_quitAction->setMenuRole(QAction::QuitRole);
    m_quitAction->setStatusTip(tr("Close every window and quit"));

    QMenu* helpMenu = menuBar()->addMenu(tr("&Help"));
    helpMenu->setObjectName(QStringLiteral("helpMenu"));

    m_aboutAction = helpMenu->addAction(tr("&About Checkpoint Inspector"), this, &MainWindow::showAbout);
    m_aboutAction->setObjectName(QStringLiteral("actionAbout"));
    m_aboutAction->setMenuRole(QAction::AboutRole);
}

void MainWindow::openFile(const QString& path)
{
    m_currentFile = path;
    m_currentFileLabel->setText(QDir::toNativeSeparators(path));
}

void MainWindow::chooseFileToOpen()
{
    const QString startDir = m_currentFile.isEmpty() ? QString() : QFileInfo(m_currentFile).absolutePath();
    const QString path = QFileDialog::getOpenFileName(this, tr("Open Checkpoint"), startDir,
        tr("PyTorch checkpoints (*.pt *.pth *.bin *.ckpt *.tar *.safetensors);;All files (*)"));
    if (!path.isEmpty())
        openFile(path);
}

void MainWindow::showAbout()
{
    QMessageBox::about(this, tr("About Checkpoint Inspector"),
        tr("<h3>Checkpoint Inspector %1</h3>"
           "<p>Opens PyTorch checkpoints without running their pickle code and shows the device "
           "every tensor was recorded on.</p>")
            .arg(QStringLiteral(CKPT_VERSION)));
}

} // namespace ckpt
