// SPDX-License-Identifier: MIT
#pragma once

#include "core/triage/plannedload.h"

#include <QPointer>
#include <QWidget>

#include <memory>
#include <optional>
#include <string>

class QComboBox;
class QLabel;
class QTimer;

namespace ckpt {

class CheckpointDocument;
class JobTracker;
struct JobProgress;
struct LoadSimulation;

// Shared by the bar and the Findings summary, which both say how a simulated load ends: the
// devices its tensors land on (sorted, HTML-escaped), and the first line of a message (torch's
// can run to a paragraph).
QStringList landingDevicesHtml(const LoadSimulation& simulation);
QString firstLineOf(const std::string& text);

// The load simulation as a question a person can change: which map_location, on which target,
// for the file as it is and for the copy the current plan would write ("after this plan, torch 2.6+
// loads it on the target"). It follows the plan move by move; the target box asks the window to
// switch the target (targetChosen), which every other view follows too.
class LoadSimulationBar : public QWidget {
    Q_OBJECT

public:
    explicit LoadSimulationBar(QWidget* parent = nullptr);

    void setDocument(CheckpointDocument* document); // nullptr: nothing to simulate
    // The choices of the target box and the current one (PlanActions::targetChoices()).
    void setTargetChoices(const QStringList& choices, const QString& current);

    QComboBox* mapLocationBox() const { return m_mapLocationBox; }
    QComboBox* targetBox() const { return m_targetBox; }
    // Which torch is simulated ("torch 2.6+ and 1.13", "torch 2.6+", "torch 1.13") and what its
    // process has imported ("torch", "torch,torch.distributed.tensor", "all": torch 2.x's
    // weights_only list grows with it). Both are kept in the settings.
    QComboBox* torchBox() const { return m_torchBox; }
    QComboBox* importsBox() const { return m_importsBox; }
    std::optional<TorchGeneration> torchChoice() const { return m_torch; }
    TorchImports imports() const { return m_imports; }
    // Sets the map_location as torch.load is given it ("None", "'cpu'", "{'cuda:1': 'cuda:0'}").
    void setMapLocationText(const QString& text);
    MapLocation mapLocation() const { return m_mapLocation; }
    // The outcome lines as plain text (tests, the tour, accessibility); current after refresh().
    QString resultText() const;
    // Recomputes now, on the calling thread (otherwise a job answers, once per burst of moves).
    void refresh();

Q_SIGNALS:
    void targetChosen(const QString& choice);
    void refreshed();

private:
    struct Question;
    struct Answer;
    Question question() const; // on the GUI thread
    // Anywhere: reads only the question. `job` (null on the GUI thread) stops it once stale.
    static Answer answer(const Question& question, JobProgress* job);
    void showAnswer(const Question& question, const Answer& answer);
    bool showWithoutSimulating(); // no document, or a map_location that does not parse
    void refreshInBackground();
    void scheduleRefresh();
    void forgetFileAsItIs(); // the target or map_location changed: the file's own line is recomputed
    void readMapLocation();
    void readTorchChoice(); // the release and imports boxes, into m_torch and m_imports

    QPointer<CheckpointDocument> m_document;
    MapLocation m_mapLocation;
    QString m_mapLocationError;
    QString m_asItIsHtml; // the file as it is: unchanged by moves, so not recomputed on each one
    QComboBox* m_mapLocationBox = nullptr;
    QComboBox* m_targetBox = nullptr;
    QComboBox* m_torchBox = nullptr;
    QComboBox* m_importsBox = nullptr;
    std::optional<TorchGeneration> m_torch; // nullopt: both
    TorchImports m_imports;
    QString m_importsError;
    QLabel* m_result = nullptr;
    QTimer* m_refreshTimer = nullptr;
    JobTracker* m_jobs = nullptr;
    std::shared_ptr<const WeightsOnlyVerdict>
        m_verdict; // torch 2.6+'s with m_imports, of the document's pickles
};

} // namespace ckpt
