// SPDX-License-Identifier: MIT
#pragma once

#include "core/devices/deviceinventory.h"
#include "core/report/savecopyreport.h"

#include <QObject>
#include <QString>
#include <QStringList>

#include <functional>
#include <memory>
#include <string>

namespace ckpt {

class CheckpointDocument;
class JobTracker;
struct Checkpoint;
struct TriageReport;

// The one owner of the open checkpoint (Tiled's DocumentManager, scaled down), and the jobs that
// work on it: reading a file, writing the remapped copy, the triage. Views never own the document:
// they learn of a new one through documentChanged(), which fires while the old document still
// exists, so every view (and the window's tree model, which reads it) lets go of it before it is
// destroyed. No one else deletes a document.
class DocumentController : public QObject {
    Q_OBJECT

public:
    explicit DocumentController(QObject* parent = nullptr);
    ~DocumentController() override;

    CheckpointDocument* document() const { return m_document.get(); }
    // What the open job builds beside each new document, off the GUI thread, for a view above this
    // room (the window's tree model: its per-node arrays cost a second at a million tensors).
    // `build` runs in the job; what it returns is moved to the GUI thread and is for the taking
    // during documentChanged() (takeBuiltBeside()); untaken, it goes right after the signal.
    using BuildBeside = std::function<std::unique_ptr<QObject>(CheckpointDocument* document)>;
    void setBuildBeside(BuildBeside build) { m_buildBeside = std::move(build); }
    std::unique_ptr<QObject> takeBuiltBeside() { return std::move(m_builtBeside); }
    // What new documents are planned against, and the open one too.
    void setTarget(const MachineInventory& target);

    // Reading and writing share one tracker: a new open makes a running save's result stale.
    JobTracker* fileJobs() const { return m_fileJobs; }
    bool isBusy() const;

    // Reads `path` off the GUI thread; opened(), openFailed() or openCancelled() follow.
    void openFile(const QString& path);
    // Writes the remapped copy of the open document with its plan as it is now, through the save
    // task (core/tasks/savecopy.h), which refuses a file rated dangerous unless `allowDangerous`
    // (the person's "I trust this file: remap anyway"); saveFinished().
    void saveRemappedCopy(const QString& path, bool allowDangerous = false);
    // How the app names the two ways out of the refusal of a dangerous file.
    static SaveCopyWording saveCopyWording(const Checkpoint& checkpoint);
    // Writes the open document's tensors (a file or a folder) as a plain state_dict (.pt, storages
    // on the plan's devices) or as safetensors (.safetensors) through the export task
    // (core/tasks/exportweights.h), as `ckpt-inspect convert` does; exportFinished() with the lines
    // the CLI prints (what was not carried among them) or why nothing was written.
    // castFloatsTo, plainValues: `--dtype` and `--plain-values` (ExtractOptions).
    void exportWeights(const QString& path, const std::string& castFloatsTo = {}, bool plainValues = false);
    // Triage of the open document against its target, off the GUI thread; triageFinished().
    void startTriage();
    // Running, or to start once the window has painted the file just opened.
    bool isTriageRunning() const;
    JobTracker* triageJobs() const { return m_triageJobs; }
    // Closes the open document, dropping the result of any job still running for it.
    void close();

Q_SIGNALS:
    // `current` is the new document (null after close()); `previous` is still alive during the
    // signal and destroyed right after it.
    void documentChanged(CheckpointDocument* current, CheckpointDocument* previous);
    // The file is open; `problems` are the reader's errors (what is shown may be incomplete).
    void opened(const QString& path, const QStringList& problems);
    void openFailed(const QString& message); // nothing of the file could be shown
    void openCancelled(const QString& fileName);
    void saveFinished(bool ok, const QString& message, const QString& outputPath);
    void exportFinished(bool ok, const QString& message, const QString& outputPath);
    void triageStarted();
    void triageFinished(const std::shared_ptr<const TriageReport>& report);

protected:
    bool event(QEvent* event) override;

private:
    // The triage of a file just opened starts after every event already waiting (the tree's first
    // layout and paint among them): on two cores its job and the GUI thread would otherwise share
    // one core while the person waits for the tree. triageStarted() is emitted at once.
    void startTriageWhenPainted();

    // `beside`, when given, was built for `document` by m_buildBeside.
    void replace(std::unique_ptr<CheckpointDocument> document, std::unique_ptr<QObject> beside = nullptr);

    MachineInventory m_target;
    quint64 m_targetGeneration = 0; // counts setTarget() calls: an open job built for an older target
    JobTracker* m_fileJobs = nullptr;
    JobTracker* m_triageJobs = nullptr;
    BuildBeside m_buildBeside;
    std::unique_ptr<CheckpointDocument> m_document;
    std::unique_ptr<QObject> m_builtBeside; // during documentChanged() only
    const CheckpointDocument* m_triageWaitsFor = nullptr; // startTriageWhenPainted()'s document
};

} // namespace ckpt
