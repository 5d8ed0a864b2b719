// SPDX-License-Identifier: MIT
#include "ui/widgets/loadsimulationbar.h"

#include "ui/base/displaytext.h"

#include "core/model/checkpoint.h"
#include "core/plan/placementplan.h"
#include "ui/document/checkpointdocument.h"
#include "ui/jobs/jobtracker.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QSettings>
#include <QSignalBlocker>
#include <QTextDocument>
#include <QTimer>
#include <QVBoxLayout>

#include <set>

namespace ckpt {

namespace {

QString fromStd(const std::string& text)
{
    return QString::fromStdString(text);
}

// "torch 2.6+ loads it (tensors on cpu)" or "torch 2.6+ fails: RuntimeError …", as HTML.
QString outcomeHtml(const LoadSimulation& simulation)
{
    QString name = QString::fromLatin1(torchGenerationName(simulation.generation));
    // Which process it stands for, when it is not a plain `import torch` (2.x's list grows with it).
    if (simulation.generation == TorchGeneration::Torch26Plus && !simulation.imports.modules.empty())
        name += LoadSimulationBar::tr(" after import %1")
                    .arg(fromStd(simulation.imports.text()).replace(u',', QStringLiteral(", ")));
    if (simulation.loads) {
        const QStringList names = landingDevicesHtml(simulation);
        QString text
            = LoadSimulationBar::tr("<b>%1</b> <span style=\"color:#2e7d32\">loads it</span>").arg(name);
        if (!names.isEmpty())
            text += LoadSimulationBar::tr(" (tensors on %1)").arg(names.join(QStringLiteral(", ")));
        return text;
    }
    QString error = firstLineOf(simulation.error);
    if (error.size() > 100)
        error = error.left(99) + QChar(0x2026);
    return LoadSimulationBar::tr("<b>%1</b> <span style=\"color:#c62828\">fails</span>: “%2”")
        .arg(name, error.toHtmlEscaped());
}

// A job made stale by a newer question (JobTracker::reset) stops between simulations and inside
// them, instead of running to an answer nobody shows: a burst of moves starts a job per move, and
// they ran side by side, each with a million outcomes. Null `job`: the GUI thread's own refresh.
bool stale(const JobProgress* job)
{
    return job && job->cancelled.load(std::memory_order_relaxed);
}

// The chosen generations' lines (both unless one is chosen); empty when the job went stale.
QString bothHtml(const Checkpoint& checkpoint, const StorageDevices* devices, const MachineInventory& target,
    const MapLocation& mapLocation, const WeightsOnlyVerdict& modernVerdict, JobProgress* job,
    std::optional<TorchGeneration> only, const TorchImports& imports)
{
    SimulationProgress progress;
    if (job)
        progress = [job](std::uint64_t done, std::uint64_t total) { return job->report(done, total); };
    if (only == TorchGeneration::Torch113) {
        const LoadSimulation old = simulateLoadWithDevices(checkpoint, devices, target, mapLocation,
            TorchGeneration::Torch113, KnownWeightsOnlyVerdict {}, std::nullopt, {}, progress);
        return stale(job) ? QString() : outcomeHtml(old);
    }
    LoadSimulation modern
        = simulateLoadWithDevices(checkpoint, devices, target, mapLocation, TorchGeneration::Torch26Plus,
            KnownWeightsOnlyVerdict {&modernVerdict}, std::nullopt, {}, progress, imports);
    if (stale(job))
        return {};
    QString modernHtml = outcomeHtml(modern);
    if (only == TorchGeneration::Torch26Plus)
        return modernHtml;
    // An outcome per storage: a million of them need not wait beside the other generation's.
    modern.storages = {};
    const LoadSimulation old = simulateLoadWithDevices(checkpoint, devices, target, mapLocation,
        TorchGeneration::Torch113, KnownWeightsOnlyVerdict {}, std::nullopt, {}, progress);
    if (stale(job))
        return {};
    // One line each: the same outcome from both generations is said once.
    if (modern.loads == old.loads && modern.error == old.error && imports.modules.empty())
        return modernHtml.replace(QStringLiteral("torch 2.6+</b>"), QStringLiteral("torch 2.6+ and 1.13</b>"))
            .replace(QStringLiteral("loads it</span>"), QStringLiteral("load it</span>"))
            .replace(QStringLiteral(">fails</span>"), QStringLiteral(">fail</span>"));
    return modernHtml + QStringLiteral(" · ") + outcomeHtml(old);
}

} // namespace

QStringList landingDevicesHtml(const LoadSimulation& simulation)
{
    std::set<std::string> devices;
    // A million storages name a handful of devices, mostly in runs: the set sees each run once.
    const InternedString* previous = nullptr;
    for (const StorageLoadOutcome& outcome : simulation.storages)
        if (outcome.landsOn && (!previous || *previous != *outcome.landsOn)) {
            devices.insert(*outcome.landsOn);
            previous = &*outcome.landsOn;
        }
    QStringList names;
    for (const std::string& device : devices)
        names.append(fromStd(device).toHtmlEscaped());
    return names;
}

QString firstLineOf(const std::string& text)
{
    const QString all = displayText(text); // without torch's terminal codes
    const qsizetype newline = all.indexOf(QLatin1Char('\n'));
    return newline < 0 ? all : all.left(newline);
}

LoadSimulationBar::LoadSimulationBar(QWidget* parent)
    : QWidget(parent)
    , m_refreshTimer(new QTimer(this))
    , m_jobs(new JobTracker(this))
{
    setObjectName(QStringLiteral("loadSimulationBar"));
    setAccessibleName(tr("Load simulation"));

    m_mapLocationBox = new QComboBox(this);
    m_mapLocationBox->setObjectName(QStringLiteral("mapLocationBox"));
    m_mapLocationBox->setEditable(true);
    m_mapLocationBox->setInsertPolicy(QComboBox::NoInsert);
    m_mapLocationBox->addItems({QStringLiteral("None"), QStringLiteral("'cpu'"), QStringLiteral("'cuda:0'")});
    m_mapLocationBox->setMinimumContentsLength(14);
    m_mapLocationBox->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_mapLocationBox->setToolTip(tr("The map_location given to torch.load: None, a device ('cpu'), or a "
                                    "dict {'cuda:1': 'cuda:0'}. Type your own."));
    m_mapLocationBox->setAccessibleName(tr("map_location"));

    m_targetBox = new QComboBox(this);
    m_targetBox->setObjectName(QStringLiteral("simulationTargetBox"));
    m_targetBox->setToolTip(tr("The machine torch.load runs on (the plan's target)"));
    m_targetBox->setAccessibleName(tr("Target machine"));
    m_targetBox->setSizeAdjustPolicy(QComboBox::AdjustToContents);

    m_torchBox = new QComboBox(this);
    m_torchBox->setObjectName(QStringLiteral("simulatedTorchBox"));
    m_torchBox->addItem(tr("torch 2.6+ and 1.13"), QStringLiteral("both"));
    m_torchBox->addItem(tr("torch 2.6+"), QStringLiteral("2.x"));
    m_torchBox->addItem(tr("torch 1.13"), QStringLiteral("1.13"));
    m_torchBox->setToolTip(
        tr("The torch whose torch.load is simulated (its weights_only lists as read from "
           "torch %1 and %2)")
            .arg(fromStd(simulatedTorchName(TorchGeneration::Torch26Plus, {})).section(u',', 1, 1).trimmed(),
                fromStd(simulatedTorchName(TorchGeneration::Torch113, {})).section(u',', 1, 1).trimmed()));
    m_torchBox->setAccessibleName(tr("Simulated torch"));
    m_torchBox->setSizeAdjustPolicy(QComboBox::AdjustToContents);

    m_importsBox = new QComboBox(this);
    m_importsBox->setObjectName(QStringLiteral("assumedImportsBox"));
    m_importsBox->setEditable(true);
    m_importsBox->setInsertPolicy(QComboBox::NoInsert);
    m_importsBox->addItem(QStringLiteral("torch"));
    for (const std::string& module : growingTorchImports())
        m_importsBox->addItem(QStringLiteral("torch,") + fromStd(module));
    m_importsBox->addItem(QStringLiteral("all"));
    m_importsBox->setMinimumContentsLength(14);
    m_importsBox->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_importsBox->setToolTip(tr("What the process calling torch.load has imported: torch 2.x's weights_only "
                                "list grows with it (import torch.distributed.tensor allows DTensor). "
                                "Comma-separated, or all."));
    m_importsBox->setAccessibleName(tr("Assumed imports"));
    {
        // The last choice, kept across sessions (QSettings: organisation and application from main()).
        QSettings settings;
        const int torchIndex
            = m_torchBox->findData(settings.value(QStringLiteral("loadSimulation/torch")).toString());
        if (torchIndex >= 0)
            m_torchBox->setCurrentIndex(torchIndex);
        const QString imports = settings.value(QStringLiteral("loadSimulation/assumeImports")).toString();
        if (!imports.isEmpty() && TorchImports::parse(imports.toStdString()))
            m_importsBox->setCurrentText(imports);
    }
    readTorchChoice();

    m_result = new QLabel(this);
    m_result->setObjectName(QStringLiteral("loadSimulationResult"));
    m_result->setTextFormat(Qt::RichText);
    m_result->setWordWrap(true);
    m_result->setTextInteractionFlags(Qt::TextSelectableByMouse);

    auto* choices = new QHBoxLayout;
    choices->setContentsMargins(0, 0, 0, 0);
    auto* mapLabel = new QLabel(tr("torch.load(…, map_location="), this);
    mapLabel->setBuddy(m_mapLocationBox);
    choices->addWidget(mapLabel);
    choices->addWidget(m_mapLocationBox);
    auto* onLabel = new QLabel(tr(") on"), this);
    onLabel->setBuddy(m_targetBox);
    choices->addWidget(onLabel);
    choices->addWidget(m_targetBox);
    choices->addStretch(1);
    // The simulated release and imports on a line of their own: on one line with map_location and
    // the target, the bar's minimum width took the room the device cards need beside the tree.
    auto* release = new QHBoxLayout;
    release->setContentsMargins(0, 0, 0, 0);
    auto* torchLabel = new QLabel(tr("simulated with"), this);
    torchLabel->setBuddy(m_torchBox);
    release->addWidget(torchLabel);
    release->addWidget(m_torchBox);
    auto* importsLabel = new QLabel(tr("after import"), this);
    importsLabel->setBuddy(m_importsBox);
    release->addWidget(importsLabel);
    release->addWidget(m_importsBox);
    release->addStretch(1);

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 2, 4, 2);
    layout->setSpacing(2);
    layout->addLayout(choices);
    layout->addLayout(release);
    layout->addWidget(m_result);

    m_refreshTimer->setSingleShot(true);
    m_refreshTimer->setInterval(0);
    connect(m_refreshTimer, &QTimer::timeout, this, &LoadSimulationBar::refreshInBackground);
    connect(m_mapLocationBox, &QComboBox::currentTextChanged, this, [this] {
        readMapLocation();
        forgetFileAsItIs();
        scheduleRefresh();
    });
    auto torchChanged = [this] {
        readTorchChoice();
        QSettings settings;
        settings.setValue(QStringLiteral("loadSimulation/torch"), m_torchBox->currentData());
        if (m_importsError.isEmpty())
            settings.setValue(QStringLiteral("loadSimulation/assumeImports"), fromStd(m_imports.text()));
        m_verdict.reset(); // judged with the imports it was asked for
        forgetFileAsItIs();
        scheduleRefresh();
    };
    connect(m_torchBox, &QComboBox::currentIndexChanged, this, torchChanged);
    connect(m_importsBox, &QComboBox::currentTextChanged, this, torchChanged);
    connect(m_targetBox, &QComboBox::activated, this,
        [this](int index) { Q_EMIT targetChosen(m_targetBox->itemText(index)); });
    refresh();
}

void LoadSimulationBar::setDocument(CheckpointDocument* document)
{
    if (m_document)
        disconnect(m_document, nullptr, this, nullptr);
    m_document = document;
    m_verdict.reset();
    if (document) {
        connect(document, &CheckpointDocument::placementChanged, this, &LoadSimulationBar::scheduleRefresh);
        connect(document, &CheckpointDocument::targetChanged, this, [this] {
            forgetFileAsItIs();
            scheduleRefresh();
        });
    }
    forgetFileAsItIs();
    if (document) {
        // Shown at once, answered by a job (a million storages): the old document's lines must not
        // stay up meanwhile.
        m_jobs->reset();
        m_result->setText(
            QStringLiteral("<span style=\"color:gray\">%1</span>").arg(tr("Simulating torch.load…")));
        scheduleRefresh();
    } else {
        refresh();
    }
}

void LoadSimulationBar::setTargetChoices(const QStringList& choices, const QString& current)
{
    const QSignalBlocker blocker(m_targetBox);
    if (choices != [this] {
            QStringList items;
            for (int i = 0; i < m_targetBox->count(); ++i)
                items.append(m_targetBox->itemText(i));
            return items;
        }()) {
        m_targetBox->clear();
        m_targetBox->addItems(choices);
    }
    const int index = m_targetBox->findText(current);
    if (index >= 0) {
        m_targetBox->setCurrentIndex(index);
    } else {
        // A described machine that is not among the choices: shown, not offered again.
        m_targetBox->addItem(current);
        m_targetBox->setCurrentIndex(m_targetBox->count() - 1);
    }
}

void LoadSimulationBar::setMapLocationText(const QString& text)
{
    m_mapLocationBox->setCurrentText(text);
    readMapLocation();
    forgetFileAsItIs();
    refresh();
}

void LoadSimulationBar::readMapLocation()
{
    auto parsed = MapLocation::parse(m_mapLocationBox->currentText().toStdString());
    if (parsed) {
        m_mapLocation = std::move(parsed.value());
        m_mapLocationError.clear();
    } else {
        m_mapLocationError = fromStd(parsed.error().message);
    }
}

void LoadSimulationBar::readTorchChoice()
{
    const QString torch = m_torchBox->currentData().toString();
    m_torch = torch == QLatin1String("1.13") ? std::optional(TorchGeneration::Torch113)
        : torch == QLatin1String("2.x")      ? std::optional(TorchGeneration::Torch26Plus)
                                             : std::nullopt;
    auto parsed = TorchImports::parse(m_importsBox->currentText().toStdString());
    if (parsed) {
        m_imports = std::move(parsed.value());
        m_importsError.clear();
    } else {
        m_importsError = fromStd(parsed.error().message);
    }
}

void LoadSimulationBar::forgetFileAsItIs()
{
    m_asItIsHtml.clear();
    m_jobs->reset(); // an answer under way was for the old target or map_location
}

void LoadSimulationBar::scheduleRefresh()
{
    m_refreshTimer->start();
}

// What one refresh works from, taken on the GUI thread: the checkpoint (shared, never changed),
// the plan's device per storage when it changes anything, and the choosers.
struct LoadSimulationBar::Question {
    std::shared_ptr<const Checkpoint> checkpoint;
    MachineInventory target;
    MapLocation mapLocation;
    std::optional<TorchGeneration> torch; // nullopt: both
    TorchImports imports;
    bool fileAsItIsKnown = false; // m_asItIsHtml holds its line already
    std::shared_ptr<const WeightsOnlyVerdict> verdict; // null: judge it (once per document)
    std::shared_ptr<SharedWeightsOnlyVerdicts> verdicts; // the document's, shared with its triage
    // The plan's device of each storage where it differs from the file's, two bytes a storage,
    // taken on the GUI thread and handed to the simulations as it is. Empty when the plan changes
    // nothing.
    bool planChangesAnything = false;
    StorageDevices plannedDevices;
    std::optional<std::map<std::string, std::string>> tagMapping; // the plan as a map_location dict
};

struct LoadSimulationBar::Answer {
    bool stopped = false; // its job went stale and stopped early: nothing below is an answer
    std::shared_ptr<const Checkpoint> checkpoint; // the one asked about
    std::shared_ptr<const WeightsOnlyVerdict> verdict;
    QString asItIsHtml; // empty when it was known
    QString afterPlanHtml; // empty when the plan changes nothing
};

LoadSimulationBar::Question LoadSimulationBar::question() const
{
    Question question;
    question.checkpoint = m_document->sharedCheckpoint();
    question.target = m_document->target();
    question.mapLocation = m_mapLocation;
    question.torch = m_torch;
    question.imports = m_imports;
    question.fileAsItIsKnown = !m_asItIsHtml.isEmpty();
    question.verdict = m_verdict;
    question.verdicts = m_document->weightsOnlyVerdicts();
    const PlacementPlan& plan = m_document->plan();
    if (plan.changesAnything()) {
        question.planChangesAnything = true;
        question.plannedDevices = StorageDevices::ofPlan(plan, question.checkpoint->storages.size());
        question.tagMapping = plan.asTagMapping();
    }
    return question;
}

LoadSimulationBar::Answer LoadSimulationBar::answer(const Question& question, JobProgress* job)
{
    Answer answer;
    answer.checkpoint = question.checkpoint;
    answer.verdict = question.verdict;
    if (!answer.verdict) // the triage's judgement when it asked first (the same generation and imports)
        answer.verdict = question.verdicts
            ? question.verdicts->get(*question.checkpoint, TorchGeneration::Torch26Plus, question.imports)
            : std::make_shared<const WeightsOnlyVerdict>(
                judgeWeightsOnly(*question.checkpoint, TorchGeneration::Torch26Plus, question.imports));
    if (!question.fileAsItIsKnown) {
        answer.asItIsHtml = bothHtml(*question.checkpoint, nullptr, question.target, question.mapLocation,
            *answer.verdict, job, question.torch, question.imports);
        answer.stopped = answer.asItIsHtml.isEmpty();
    }
    if (question.planChangesAnything && !answer.stopped) {
        answer.afterPlanHtml = bothHtml(*question.checkpoint, &question.plannedDevices, question.target,
            question.mapLocation, *answer.verdict, job, question.torch, question.imports);
        answer.stopped = answer.afterPlanHtml.isEmpty();
    }
    return answer;
}

void LoadSimulationBar::showAnswer(const Question& question, const Answer& answer)
{
    if (answer.verdict && m_document && m_document->sharedCheckpoint() == answer.checkpoint)
        m_verdict = answer.verdict;
    if (!answer.asItIsHtml.isEmpty())
        m_asItIsHtml = answer.asItIsHtml;
    // The choosers above say which map_location and target: the lines say only what happens.
    QString html = tr("<b>The file as it is:</b> %1").arg(m_asItIsHtml);
    if (question.planChangesAnything) {
        html += QStringLiteral("<br>")
            + tr("<b>After this plan</b> (the saved copy): %1").arg(answer.afterPlanHtml);
        if (question.tagMapping) {
            MapLocation same;
            same.kind = MapLocation::Kind::Dict;
            same.dict = *question.tagMapping;
            html += QStringLiteral("<br>")
                + tr("The same at load time, without a copy: <code>torch.load(path, map_location=%1)</code>")
                      .arg(fromStd(same.python()).toHtmlEscaped());
        }
    } else {
        html += QStringLiteral("<br><span style=\"color:gray\">%1</span>")
                    .arg(tr(
                        "The plan changes nothing yet: drag tensors onto a device, or use the Plan menu."));
    }
    m_result->setText(html);
    Q_EMIT refreshed();
}

bool LoadSimulationBar::showWithoutSimulating()
{
    if (!m_document) {
        m_result->setText(tr("<span style=\"color:gray\">Open a checkpoint to ask what torch.load would do "
                             "with it.</span>"));
        Q_EMIT refreshed();
        return true;
    }
    if (!m_mapLocationError.isEmpty() || !m_importsError.isEmpty()) {
        m_result->setText(
            QStringLiteral("<span style=\"color:#c62828\">%1</span>")
                .arg((m_mapLocationError.isEmpty() ? m_importsError : m_mapLocationError).toHtmlEscaped()));
        Q_EMIT refreshed();
        return true;
    }
    return false;
}

void LoadSimulationBar::refresh()
{
    m_refreshTimer->stop();
    m_jobs->reset(); // what it would have said is said now
    if (showWithoutSimulating())
        return;
    const Question asked = question();
    showAnswer(asked, answer(asked, nullptr));
}

void LoadSimulationBar::refreshInBackground()
{
    if (showWithoutSimulating()) {
        m_jobs->reset();
        return;
    }
    // A million storages take two simulations and, once per document, the weights-only verdict:
    // a job, so a drop never waits for them. A newer refresh makes this one stale.
    auto asked = std::make_shared<const Question>(question());
    m_jobs->start(
        [asked](JobProgress& progress) { return std::make_shared<const Answer>(answer(*asked, &progress)); },
        [this, asked](const std::shared_ptr<const Answer>& result) {
            if (!result->stopped && m_document && m_document->sharedCheckpoint() == result->checkpoint)
                showAnswer(*asked, *result);
        });
}

QString LoadSimulationBar::resultText() const
{
    QTextDocument document;
    document.setHtml(m_result->text());
    return document.toPlainText();
}

} // namespace ckpt
