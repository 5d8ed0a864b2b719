// SPDX-License-Identifier: MIT
// The main window's side of the open document: how it follows the DocumentController (a document
// shown or gone, an open that failed or was cancelled, a save or export finished, triage), and
// the flows that open and close a file (File > Open, a drop, the demo, unsaved changes on close).
// The controller owns the document and runs the jobs; this file only decides what the window shows.
#include "ui/mainwindow.h"

#include "ui/base/appsettings.h"
#include "ui/dialogs/filedialogs.h"
#include "ui/document/checkpointdocument.h"
#include "ui/document/documentcontroller.h"
#include "ui/jobs/jobprogressdialog.h"
#include "ui/jobs/jobtracker.h"
#include "ui/models/tensortreemodel.h"
#include "ui/widgets/detailspane.h"
#include "ui/widgets/devicepanel.h"
#include "ui/widgets/findingspanel.h"
#include "ui/widgets/loadsimulationbar.h"
#include "ui/widgets/memorychartwidget.h"
#include "ui/widgets/safetybanner.h"
#include "ui/widgets/startpage.h"
#include "ui/widgets/tensortreepanel.h"
#include "ui/widgets/valuescanpanel.h"

#include <QCloseEvent>
#include <QDir>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileInfo>
#include <QLabel>
#include <QMimeData>
#include <QSplitter>
#include <QTimer>
#include <QUndoGroup>
#include <QUndoStack>

namespace ckpt {

QString MainWindow::emptyStateText()
{
    return tr("Open a PyTorch checkpoint (File > Open…)");
}

void MainWindow::followDocuments()
{
    // The tree model is the window's: the open job builds it beside the document, off the GUI thread.
    m_documents->setBuildBeside([](CheckpointDocument* document) -> std::unique_ptr<QObject> {
        return std::make_unique<TensorTreeModel>(document);
    });
    connect(m_documents, &DocumentController::documentChanged, this, &MainWindow::attachDocument);
    connect(m_documents, &DocumentController::opened, this, &MainWindow::showOpenedFile);
    connect(m_documents, &DocumentController::openFailed, this, &MainWindow::showOpenFailure);
    connect(m_documents, &DocumentController::openCancelled, this, [this](const QString& name) {
        keepShownFile();
        showTransientMessage(tr("Opening %1 cancelled").arg(name));
    });
    connect(m_documents, &DocumentController::saveFinished, this, &MainWindow::showSaveResult);
    connect(m_documents, &DocumentController::exportFinished, this,
        [this](bool ok, const QString& message, const QString& path) {
            if (!ok) {
                showError(tr("Weights Not Exported"), message);
            } else {
                // The summary line in the status bar; the box shows every line, what was not carried too.
                showTransientMessage(
                    tr("Exported %1: %2")
                        .arg(QFileInfo(path).fileName(), message.section(QLatin1Char('\n'), 0, 0)));
                showInformation(
                    tr("Weights Exported"), tr("%1\n\n%2").arg(QDir::toNativeSeparators(path), message));
            }
            Q_EMIT exportFinished(ok, message);
        });
    connect(m_documents, &DocumentController::triageStarted, this,
        [this] { m_findingsPanel->setChecking(true); });
    connect(m_documents, &DocumentController::triageFinished, this, [this](const auto& report) {
        m_findingsPanel->setReport(
            *report, document()->sharedCheckpoint(), QString::fromStdString(document()->target().name));
        m_treePanel->safetyBanner()->setVerdict(report->safety);
        m_treePanel->showFindings(report->findings, document()->checkpoint().tensors.size());
        Q_EMIT triageFinished();
    });
    JobTracker* fileJobs = m_documents->fileJobs();
    connect(fileJobs, &JobTracker::started, this, &MainWindow::updateActions);
    connect(fileJobs, &JobTracker::finished, this, [this] {
        if (m_progressDialog) {
            m_progressDialog->hide();
            m_progressDialog->deleteLater();
        }
        updateActions();
    });
}

void MainWindow::showCentralWidget(QWidget* widget)
{
    if (centralWidget() == widget)
        return;
    // takeCentralWidget() leaves the widget without a parent: taken back as a hidden child, it is
    // deleted with the window instead of leaking (LeakSanitizer, asan preset).
    QWidget* previous = takeCentralWidget();
    previous->setParent(this);
    previous->hide();
    setCentralWidget(widget);
    widget->show();
}

void MainWindow::openDemoCheckpoint()
{
    if (m_demoCheckpointPath.isEmpty() || !QFileInfo::exists(m_demoCheckpointPath)) {
        showError(tr("No Demo Checkpoint"),
            tr("The demo checkpoint was not found (looked for %1).")
                .arg(QDir::toNativeSeparators(m_demoCheckpointPath)));
        return;
    }
    openFile(m_demoCheckpointPath);
}

void MainWindow::showProgress(const QString& label)
{
    if (m_progressDialog) {
        m_progressDialog->hide();
        m_progressDialog->deleteLater();
    }
    m_progressDialog = new JobProgressDialog(label, m_documents->fileJobs()->progress(), this);
}

void MainWindow::openFile(const QString& path)
{
    if (!maybeKeepChanges([this, path] { openFile(path); }))
        return;
    m_currentFile = path;
    m_currentFileLabel->setText(QDir::toNativeSeparators(path));
    m_documents->openFile(path);
    showProgress(tr("Reading %1…").arg(QFileInfo(path).fileName()));
}

void MainWindow::keepShownFile()
{
    m_currentFile = document() ? document()->filePath() : QString();
    m_currentFileLabel->setText(QDir::toNativeSeparators(m_currentFile));
}

void MainWindow::showOpenFailure(const QString& text)
{
    keepShownFile();
    if (!document())
        m_emptyStateLabel->setText(text);
    Q_EMIT openFailed(text);
    showError(tr("Not a Checkpoint"), text);
}

void MainWindow::showOpenedFile(const QString& path, const QStringList& problems)
{
    keepShownFile();
    showCentralWidget(m_treePanel);
    m_treePanel->expandFirstLevels();
    m_detailsPane->showTreeNode(m_treePanel->currentTreeNode());
    placeDetails();
    updateTitle();
    updateStatusSummary();
    updateActions();
    m_settings->addRecentFile(path);
    Q_EMIT checkpointOpened();
    if (!problems.isEmpty()) {
        const QString name = QFileInfo(path).fileName();
        showError(tr("Problems Reading %1").arg(name),
            tr("%1 was read as far as possible; what is shown may be incomplete:\n%2")
                .arg(name, problems.join(QLatin1Char('\n'))));
    }
}

void MainWindow::attachDocument(CheckpointDocument* current, CheckpointDocument* previous)
{
    // The views move to the new document (or to none) while the old one still exists; so does the
    // tree model, built beside the new document in the open job (or now), the old one going last.
    std::unique_ptr<TensorTreeModel> previousModel = std::move(m_treeModel);
    if (current) {
        std::unique_ptr<QObject> built = m_documents->takeBuiltBeside();
        if (qobject_cast<TensorTreeModel*>(built.get()))
            m_treeModel.reset(static_cast<TensorTreeModel*>(built.release()));
        else
            m_treeModel = std::make_unique<TensorTreeModel>(current);
    }
    m_treePanel->setDocument(current, m_treeModel.get());
    m_devicePanel->setDocument(current);
    m_memoryChart->setDocument(current);
    m_detailsPane->setDocument(current);
    m_valueScanPanel->setDocument(current);
    m_findingsPanel->simulationBar()->setDocument(current);
    if (previous)
        m_undoGroup->removeStack(previous->undoStack());
    m_findingsPanel->clear();
    if (!current)
        return;
    m_treePanel->safetyBanner()->setChecking();
    m_undoGroup->addStack(current->undoStack());
    m_undoGroup->setActiveStack(current->undoStack());
    connect(current->undoStack(), &QUndoStack::cleanChanged, this, &MainWindow::updateTitle);
    connect(current->undoStack(), &QUndoStack::indexChanged, this, &MainWindow::updateActions);
    connect(current, &CheckpointDocument::targetChanged, this, &MainWindow::updateStatusSummary);
}

void MainWindow::closeDocument()
{
    if (!maybeKeepChanges([this] { closeDocument(); }))
        return;
    m_documents->close();
    showCentralWidget(m_startPage);
    m_emptyStateLabel->setText(emptyStateText());
    m_currentFile.clear();
    m_currentFileLabel->clear();
    placeDetails();
    updateTitle();
    updateStatusSummary();
    updateActions();
}

bool MainWindow::maybeKeepChanges(std::function<void()> then)
{
    CheckpointDocument* current = document();
    if (!current || !current->isModified())
        return true;
    if (m_suppressModalDialogs)
        return true; // tests: discard
    switch (askAboutUnsavedPlacement(this, *current)) {
    case UnsavedPlacementAnswer::Save:
        chooseSaveTarget(std::move(then));
        return false;
    case UnsavedPlacementAnswer::Discard:
        current->undoStack()->setClean(); // asked once is enough
        return true;
    case UnsavedPlacementAnswer::Cancel:
        break;
    }
    return false;
}

void MainWindow::closeEvent(QCloseEvent* event)
{
    if (!maybeKeepChanges([this] { close(); })) {
        event->ignore();
        return;
    }
    m_documents->fileJobs()->cancel();
    saveSettings();
    event->accept();
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event)
{
    const QMimeData* mime = event->mimeData();
    if (mime->hasUrls() && !mime->urls().isEmpty() && mime->urls().first().isLocalFile())
        event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event)
{
    const QMimeData* mime = event->mimeData();
    if (!mime->hasUrls())
        return;
    const auto urls = mime->urls();
    for (const QUrl& url : urls) {
        if (url.isLocalFile()) {
            event->acceptProposedAction();
            // After the drop returns: a question about unsaved changes must not run inside the drag.
            const QString path = url.toLocalFile();
            QTimer::singleShot(0, this, [this, path] { openFile(path); });
            return;
        }
    }
}

} // namespace ckpt
