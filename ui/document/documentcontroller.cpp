// SPDX-License-Identifier: MIT
#include "ui/document/documentcontroller.h"

#include "core/read/checkpointreader.h"
#include "core/report/exportplanreport.h"
#include "core/report/extractreport.h"
#include "core/report/savecopyreport.h"
#include "core/safety/pickleverdict.h"
#include "core/tasks/exportweights.h"
#include "core/tasks/savecopy.h"
#include "core/triage/triage.h"
#include "ui/document/checkpointdocument.h"
#include "ui/jobs/jobtracker.h"

#include <QCoreApplication>
#include <QEvent>
#include <QFileInfo>
#include <QUndoStack>

#include <limits>

namespace ckpt {

namespace {

QString fromStd(const std::string& text)
{
    return QString::fromStdString(text);
}

// The document an open job builds beside the read, and what a view asked to have built beside it:
// the plan, the ledger and the tree model's per-node arrays cost a second at a million tensors,
// which the GUI thread must not spend.
struct BuiltDocument {
    std::unique_ptr<CheckpointDocument> document;
    std::unique_ptr<QObject> beside;
};

// What an open job hands back: the checkpoint as read, whether Cancel was pressed meanwhile, and
// the document built for it (none when nothing of the file can be shown).
struct ReadResult {
    std::shared_ptr<Checkpoint> checkpoint;
    bool cancelled = false;
    std::shared_ptr<BuiltDocument> built;
};

} // namespace

DocumentController::DocumentController(QObject* parent)
    : QObject(parent)
    , m_fileJobs(new JobTracker(this))
    , m_triageJobs(new JobTracker(this))
{ }

DocumentController::~DocumentController()
{
    // Workers hold only shared data; a cancelled one ends at its next progress report.
    m_fileJobs->cancel();
    m_document.reset();
}

void DocumentController::setTarget(const MachineInventory& target)
{
    m_target = target;
    ++m_targetGeneration;
    if (m_document)
        m_document->setTarget(m_target);
}

bool DocumentController::isBusy() const
{
    return m_fileJobs->isRunning();
}

bool DocumentController::isTriageRunning() const
{
    return m_triageJobs->isRunning() || (m_triageWaitsFor && m_triageWaitsFor == m_document.get());
}

void DocumentController::openFile(const QString& path)
{
    m_fileJobs->start(
        [file = path.toStdString(), target = m_target, gui = thread(), build = m_buildBeside](
            JobProgress& progress) {
            ReadOptions options;
            options.pickleLimits.progress = [&progress](std::uint64_t done, std::uint64_t total) {
                return progress.report(done, total);
            };
            // An http(s) URL: its requests report and stop with the same progress (Cancel stops a
            // request at once; what was read is dropped).
            options.remote.progress = options.pickleLimits.progress;
            options.remote.cancel = &progress.cancelled;
            ReadResult result {std::make_shared<Checkpoint>(readCheckpoint(file, options)), false, nullptr};
            result.cancelled = progress.cancelled;
            if (!result.cancelled && result.checkpoint->format != CheckpointFormat::NotACheckpoint
                && !result.checkpoint->tree.empty()) {
                // Built here, then handed to the GUI thread, which owns them from then on.
                result.built = std::make_shared<BuiltDocument>();
                result.built->document = std::make_unique<CheckpointDocument>(result.checkpoint, target);
                result.built->document->moveToThread(gui);
                if (build && (result.built->beside = build(result.built->document.get())))
                    result.built->beside->moveToThread(gui);
            }
            return result;
        },
        [this, targetGeneration = m_targetGeneration](const ReadResult& result) {
            const Checkpoint& checkpoint = *result.checkpoint;
            const QString path = fromStd(checkpoint.path);
            const QString name = QFileInfo(path).fileName();
            if (result.cancelled) {
                Q_EMIT openCancelled(name);
                return;
            }
            QStringList errors;
            for (const Finding& finding : checkpoint.findings) {
                if (finding.severity == Severity::Error)
                    errors.append(fromStd(finding.message));
            }
            if (errors.size() > 8) {
                const qsizetype more = errors.size() - 8;
                errors.resize(8);
                errors.append(tr("… and %1 more").arg(more));
            }
            if (checkpoint.format == CheckpointFormat::NotACheckpoint || checkpoint.tree.empty()) {
                QString message = fromStd(checkpoint.container.description);
                if (message.isEmpty())
                    message = errors.isEmpty() ? tr("The file holds no checkpoint this tool can read.")
                                               : errors.join(QLatin1Char('\n'));
                else if (!errors.isEmpty())
                    message += QLatin1Char('\n') + errors.join(QLatin1Char('\n'));
                QString text = tr("%1 could not be opened as a checkpoint:\n%2").arg(name, message);
                // A plain pickle is rated like a checkpoint: say first whether it would run code.
                if (const SafetyVerdict safety = ratePickleSafety(checkpoint);
                    safety.rating != PickleSafety::NoPickle)
                    text = tr("Safety: %1\n\n").arg(fromStd(safety.headline)) + text;
                Q_EMIT openFailed(text);
                return;
            }
            if (!result.built || !result.built->document)
                return; // delivered once only
            std::unique_ptr<CheckpointDocument> document = std::move(result.built->document);
            if (targetGeneration != m_targetGeneration)
                document->setTarget(m_target); // the target changed while the file was read
            replace(std::move(document), std::move(result.built->beside));
            startTriageWhenPainted();
            Q_EMIT opened(path, errors);
        });
}

SaveCopyWording DocumentController::saveCopyWording(const Checkpoint& checkpoint)
{
    SaveCopyWording wording;
    wording.override = tr("“I trust this file: remap anyway”").toStdString();
    // As `ckpt-inspect convert DIR` for a folder, `extract FILE` for a file.
    wording.weightsAlone = checkpoint.shardSet
        ? tr("File > Export Weights… of the folder (tensors only, no pickle)").toStdString()
        : tr("File > Export Weights… (tensors only: it loads with torch.load(weights_only=True))")
              .toStdString();
    return wording;
}

void DocumentController::saveRemappedCopy(const QString& path, bool allowDangerous)
{
    if (!m_document)
        return;
    // The worker gets its own copy of the plan: the user may keep dragging while it writes.
    const std::shared_ptr<const Checkpoint> checkpoint = m_document->sharedCheckpoint();
    const auto plan = std::make_shared<PlacementPlan>(m_document->plan());
    const int undoIndex = m_document->undoStack()->index();
    // A folder that records no device gets its plan exported instead, for the document's target.
    const auto machine = std::make_shared<const MachineInventory>(m_document->target());
    m_fileJobs->start(
        [checkpoint, plan, machine, out = path.toStdString(), allowDangerous](JobProgress& progress) {
            SaveCopyRequest request;
            request.input = checkpoint.get();
            request.plan = plan.get();
            request.outputPath = out;
            request.machine = machine.get();
            request.allowDangerous = allowDangerous;
            request.progress = [&progress](std::uint64_t done, std::uint64_t total) {
                return progress.report(done, total);
            };
            return std::make_shared<const SaveCopyOutcome>(ckpt::saveRemappedCopy(request));
        },
        [this, undoIndex, checkpoint](const std::shared_ptr<const SaveCopyOutcome>& outcome) {
            const bool saved = outcome->written() || (outcome->exported && outcome->exported->ok());
            if (!saved) {
                const std::string text = outcome->exported
                    ? exportPlanText(*outcome->exported)
                    : saveCopyRefusalText(*outcome, saveCopyWording(*checkpoint));
                Q_EMIT saveFinished(false, fromStd(text).trimmed(), QString());
                return;
            }
            // Clean only if nothing changed while writing: the copy has the plan as it was then.
            if (m_document && m_document->undoStack()->index() == undoIndex)
                m_document->undoStack()->setClean();
            if (outcome->exported) {
                Q_EMIT saveFinished(true, fromStd(exportPlanText(*outcome->exported)).trimmed(),
                    fromStd(outcome->outputPath));
                return;
            }
            const std::string written
                = outcome->folder ? outcome->folder->outputFolder : outcome->file->outputPath;
            Q_EMIT saveFinished(true, fromStd(saveCopySummary(*outcome)), fromStd(written));
        });
}

void DocumentController::exportWeights(const QString& path, const std::string& castFloatsTo, bool plainValues)
{
    if (!m_document)
        return;
    // The export task (core/tasks/exportweights.h), as `ckpt-inspect convert` and `extract` run it:
    // a file or a folder, to a state_dict or safetensors as the path names it.
    const std::shared_ptr<const Checkpoint> checkpoint = m_document->sharedCheckpoint();
    const auto plan = std::make_shared<PlacementPlan>(m_document->plan());
    m_fileJobs->start(
        [checkpoint, plan, out = path.toStdString(), castFloatsTo, plainValues](JobProgress& job) {
            ExportWeightsRequest request;
            request.input = checkpoint;
            request.plan = plan.get();
            request.outputPath = out;
            request.format = weightsFormatFor(out);
            request.options.castFloatsTo = castFloatsTo;
            request.options.plainValues = plainValues;
            request.options.progress
                = [&job](std::uint64_t done, std::uint64_t total) { return job.report(done, total); };
            return std::make_shared<const ExportWeightsOutcome>(ckpt::exportWeights(request));
        },
        [this, path](const std::shared_ptr<const ExportWeightsOutcome>& outcome) {
            // The lines `ckpt-inspect convert` prints, what was not carried among them.
            Q_EMIT exportFinished(outcome->written(),
                fromStd(outcome->written() ? exportWeightsText(*outcome) : outcome->why).trimmed(), path);
        });
}

namespace {

// Posted with the lowest priority there is: delivered after every event already queued and every
// one those post in turn (layout requests, the low-priority update requests that paint).
const QEvent::Type kStartTriageEvent = static_cast<QEvent::Type>(QEvent::registerEventType());

} // namespace

void DocumentController::startTriageWhenPainted()
{
    if (!m_document)
        return;
    m_triageJobs->reset(); // a triage still running is for another target or document
    m_triageWaitsFor = m_document.get();
    QCoreApplication::postEvent(this, new QEvent(kStartTriageEvent), std::numeric_limits<int>::min());
    Q_EMIT triageStarted();
}

bool DocumentController::event(QEvent* event)
{
    if (event->type() != kStartTriageEvent)
        return QObject::event(event);
    // Not if the document was closed or replaced meanwhile (its successor posted its own), nor
    // if a triage started since (a new target).
    if (m_triageWaitsFor && m_triageWaitsFor == m_document.get())
        startTriage();
    return true;
}

void DocumentController::startTriage()
{
    m_triageWaitsFor = nullptr;
    if (!m_document)
        return;
    TriageOptions options;
    options.target = m_document->target();
    options.sharedVerdicts = m_document->weightsOnlyVerdicts(); // the load simulation bar's too
    // map_location=None: what a plain torch.load does; values are the details pane's business.
    auto checkpoint = m_document->sharedCheckpoint();
    m_triageJobs->start(
        [checkpoint, options = std::move(options)](
            JobProgress&) { return std::make_shared<const TriageReport>(triage(*checkpoint, options)); },
        [this, checkpoint](const std::shared_ptr<const TriageReport>& report) {
            if (m_document && m_document->sharedCheckpoint() == checkpoint)
                Q_EMIT triageFinished(report);
        });
    Q_EMIT triageStarted();
}

void DocumentController::close()
{
    m_triageWaitsFor = nullptr;
    m_fileJobs->reset();
    m_triageJobs->reset();
    if (m_document)
        replace(nullptr);
}

void DocumentController::replace(
    std::unique_ptr<CheckpointDocument> document, std::unique_ptr<QObject> beside)
{
    // The old document stays alive until every view has moved on.
    std::unique_ptr<CheckpointDocument> oldDocument = std::move(m_document);
    m_triageJobs->reset(); // a triage still running belongs to the old document
    m_document = std::move(document);
    m_builtBeside = std::move(beside);
    if (m_document)
        connect(m_document.get(), &CheckpointDocument::targetChanged, this, &DocumentController::startTriage);
    Q_EMIT documentChanged(m_document.get(), oldDocument.get());
    m_builtBeside.reset();
    oldDocument.reset();
}

} // namespace ckpt
