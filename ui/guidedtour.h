// SPDX-License-Identifier: MIT
#pragma once

#include <QObject>
#include <QString>
#include <QTemporaryDir>

#include <functional>
#include <memory>
#include <vector>

class QDockWidget;
class QListWidget;
class QMainWindow;
class QPushButton;
class QTextBrowser;

namespace ckpt {

class DetailsPane;
class DeviceShortcuts;
class DocumentController;
class LoadSimulationBar;
class PlanActions;
class TensorTreePanel;

// Teaching mode (Help > Guided Tour): a side panel of short steps on the bundled demo checkpoint,
// each of which drives the app itself: the tied embedding and its shared storage, a move that
// takes the other name along, a laptop without a GPU and torch's error, Everything to CPU, the
// map_location that does the same at load time, and saving the copy. Any step can be replayed: the
// demo's plan is put back as the steps before it leave it, then the step runs again. The tour
// writes only into a temporary folder of its own; it never saves over anything.
//
// It is handed the parts it drives rather than the window: what it asks of the window (open the
// demo, save the copy, with the window's own flows) it asks by signal, and the window answers
// through demoOpened(), demoNotOpened() and saveFinished().
class GuidedTour : public QObject {
    Q_OBJECT

public:
    struct Parts {
        QMainWindow* window = nullptr; // the tour's panel docks there
        DocumentController* documents = nullptr; // the open document
        TensorTreePanel* tree = nullptr;
        DetailsPane* details = nullptr;
        DeviceShortcuts* shortcuts = nullptr;
        PlanActions* plan = nullptr; // the target machine, Everything to CPU
        LoadSimulationBar* simulation = nullptr;
        std::function<QString()> demoPath; // where the bundled demo checkpoint is
    };
    explicit GuidedTour(Parts parts, QObject* parent = nullptr);
    ~GuidedTour() override;

    QDockWidget* dock() const { return m_dock; }
    QListWidget* stepList() const { return m_steps; }
    QPushButton* runButton() const { return m_runButton; }
    QPushButton* nextButton() const { return m_nextButton; }
    QString stepText() const; // the panel's text, plain (the step and what it showed)
    int stepCount() const { return int(m_definitions.size()); }
    bool isRunning() const { return m_running >= 0; }
    QString outputFolder() const { return m_outputFolder ? m_outputFolder->path() : QString(); }
    QString lastSavedCopy() const { return m_lastSavedCopy; }

    void start(); // shows the panel on its first step, and runs it (opens the demo)
    void runStep(int index);

    // The window's answers to openRequested() and saveRequested().
    void demoOpened();
    void demoNotOpened(const QString& message);
    void saveFinished(bool ok, const QString& message);

Q_SIGNALS:
    void stepFinished(int index, const QString& outcome);
    // Open `path` as File > Open does; demoOpened() or demoNotOpened() follow.
    void openRequested(const QString& path);
    // Save the remapped copy to `path` as File > Save Remapped Copy does; saveFinished() follows.
    void saveRequested(const QString& path);

private:
    struct Step {
        QString title;
        QString explanation;
        std::function<QString()> run; // does the step; returns what it showed ("" for async steps)
    };
    void defineSteps();
    void showStep(int index);
    void whenDemoOpen(const std::function<void()>& then);
    void resetDemo();
    void finishStep(int index, const QString& outcome);
    QString saveCopy(); // async: finishes the step on saveFinished

    Parts m_parts;
    std::function<void()> m_whenOpen; // waits for demoOpened()
    QString m_savingTo; // waits for saveFinished()
    std::vector<Step> m_definitions;
    std::vector<QString> m_outcomes;
    QDockWidget* m_dock = nullptr;
    QListWidget* m_steps = nullptr;
    QTextBrowser* m_text = nullptr;
    QPushButton* m_runButton = nullptr;
    QPushButton* m_nextButton = nullptr;
    int m_running = -1;
    std::unique_ptr<QTemporaryDir> m_outputFolder;
    QString m_lastSavedCopy;
    int m_copies = 0;
    QString m_lastMoveText;
};

} // namespace ckpt
