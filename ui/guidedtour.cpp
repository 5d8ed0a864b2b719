// SPDX-License-Identifier: MIT
#include "ui/guidedtour.h"

#include "core/base/textformat.h"
#include "core/triage/triage.h"
#include "ui/deviceshortcuts.h"
#include "ui/document/checkpointdocument.h"
#include "ui/document/documentcontroller.h"
#include "ui/planactions.h"
#include "ui/widgets/detailspane.h"
#include "ui/widgets/findingspanel.h"
#include "ui/widgets/loadsimulationbar.h"
#include "ui/widgets/tensortreepanel.h"

#include <QAction>
#include <QDir>
#include <QDockWidget>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QListWidget>
#include <QMainWindow>
#include <QPushButton>
#include <QTextBrowser>
#include <QTextDocument>
#include <QTreeView>
#include <QUndoStack>
#include <QVBoxLayout>

#include <optional>
#include <utility>

namespace ckpt {

namespace {

const char* const kTourTarget = QT_TRANSLATE_NOOP("ckpt::PlanActions", "lab box (2 GPUs)");
const char* const kLaptop = QT_TRANSLATE_NOOP("ckpt::PlanActions", "laptop without a GPU");
const std::string kEmbedding = "model.embed.weight";

QString fromStd(const std::string& text)
{
    return QString::fromStdString(text);
}

std::optional<std::uint32_t> tensorNamed(const Checkpoint& checkpoint, const std::string& name)
{
    for (std::uint32_t tensor = 0; tensor < checkpoint.tensors.size(); ++tensor)
        if (checkpoint.tensors[tensor].name == name)
            return tensor;
    return std::nullopt;
}

// The other names of the storage `tensor` views.
QStringList sharingNames(const Checkpoint& checkpoint, std::uint32_t tensor)
{
    QStringList names;
    const std::int32_t storage = checkpoint.tensors[tensor].storage;
    if (storage < 0)
        return names;
    for (const std::uint32_t other : checkpoint.storages[std::size_t(storage)].tensors)
        if (other != tensor)
            names.append(fromStd(checkpoint.tensors[other].name.str()));
    return names;
}

} // namespace

GuidedTour::GuidedTour(Parts parts, QObject* parent)
    : QObject(parent)
    , m_parts(std::move(parts))
{
    m_steps = new QListWidget;
    m_steps->setObjectName(QStringLiteral("tourSteps"));
    m_steps->setAccessibleName(tr("Steps of the tour"));
    m_text = new QTextBrowser;
    m_text->setObjectName(QStringLiteral("tourText"));
    m_text->setOpenLinks(false);
    m_text->setAccessibleName(tr("The step, and what it showed"));
    m_runButton = new QPushButton(tr("Show Me"));
    m_runButton->setObjectName(QStringLiteral("tourRunButton"));
    m_runButton->setDefault(true);
    m_nextButton = new QPushButton(tr("Next Step"));
    m_nextButton->setObjectName(QStringLiteral("tourNextButton"));

    auto* panel = new QWidget;
    panel->setObjectName(QStringLiteral("tourPanel"));
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(m_runButton);
    buttons->addWidget(m_nextButton);
    auto* layout = new QVBoxLayout(panel);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addWidget(m_steps, 2);
    layout->addWidget(m_text, 3);
    layout->addLayout(buttons);

    m_dock = new QDockWidget(tr("Guided Tour"), m_parts.window);
    m_dock->setObjectName(QStringLiteral("tourDock"));
    m_dock->setWidget(panel);
    m_dock->hide();
    m_parts.window->addDockWidget(Qt::LeftDockWidgetArea, m_dock); // beside the tree, the cards stay whole

    defineSteps();
    m_outcomes.resize(m_definitions.size());
    for (const Step& step : m_definitions)
        m_steps->addItem(step.title);

    connect(m_steps, &QListWidget::currentRowChanged, this, &GuidedTour::showStep);
    connect(m_runButton, &QPushButton::clicked, this, [this] { runStep(m_steps->currentRow()); });
    connect(m_nextButton, &QPushButton::clicked, this, [this] {
        const int next = m_steps->currentRow() + 1;
        if (next >= stepCount())
            return;
        m_steps->setCurrentRow(next);
        runStep(next);
    });
    connect(m_parts.shortcuts, &DeviceShortcuts::moved, this,
        [this](const QString& text) { m_lastMoveText = text; });
}

GuidedTour::~GuidedTour() = default;

void GuidedTour::defineSteps()
{
    m_definitions = {
        {tr("1. Open the demo checkpoint"),
            tr("A small transformer saved on two GPUs and the CPU. The tree colours every tensor by "
               "device; the cards and the chart say how much lands where. The tour plans for a lab box "
               "with two GPUs, and never writes over a file."),
            [this] {
                const Checkpoint& checkpoint = m_parts.documents->document()->checkpoint();
                return tr("Opened %1: %2 tensors in %3 storages, %4, recorded on %5.")
                    .arg(QFileInfo(m_parts.documents->document()->filePath()).fileName())
                    .arg(checkpoint.tensors.size())
                    .arg(checkpoint.storages.size())
                    .arg(fromStd(formatBytes(checkpoint.totalStorageBytes())))
                    .arg([&] {
                        QStringList devices;
                        for (const auto& [device, bytes] : checkpoint.bytesByDevice())
                            devices.append(fromStd(device));
                        return devices.join(QStringLiteral(", "));
                    }());
            }},
        {tr("2. A tied embedding shares its storage"),
            tr("Select the embedding, then Edit › Select Tensors Sharing Storage. A device belongs to a "
               "storage, the block of bytes tensors view: tied weights are two names for one storage."),
            [this] {
                const Checkpoint& checkpoint = m_parts.documents->document()->checkpoint();
                const auto embed = tensorNamed(checkpoint, kEmbedding);
                if (!embed)
                    return tr("The demo has no %1.").arg(fromStd(kEmbedding));
                m_parts.tree->selectTensor(*embed);
                const std::size_t selected = m_parts.tree->selectTensorsSharingStorage();
                m_parts.details->showTreeNode(checkpoint.tensors[*embed].treeNode);
                return tr("%1 and %2 view one storage: %n tensor(s) selected. Whatever moves one moves "
                          "the other.",
                    nullptr, int(selected))
                    .arg(fromStd(kEmbedding), sharingNames(checkpoint, *embed).join(QStringLiteral(", ")));
            }},
        {tr("3. Move it, and watch the other name move"),
            tr("Only the embedding is selected and moved to cuda:1 (Ctrl+2, as a drop on the cuda:1 "
               "card would). Its twin goes along, and the status bar says so."),
            [this] {
                CheckpointDocument* document = m_parts.documents->document();
                const auto embed = tensorNamed(document->checkpoint(), kEmbedding);
                if (!embed)
                    return tr("The demo has no %1.").arg(fromStd(kEmbedding));
                m_parts.tree->view()->clearSelection();
                m_parts.tree->selectTensor(*embed);
                m_lastMoveText.clear();
                m_parts.shortcuts->moveSelectionTo(QStringLiteral("cuda:1"));
                QStringList planned;
                planned.append(tr("%1 → %2").arg(
                    fromStd(kEmbedding), fromStd(document->plannedDeviceOfTensor(*embed).value_or("?"))));
                for (const QString& other : sharingNames(document->checkpoint(), *embed)) {
                    const auto index = tensorNamed(document->checkpoint(), other.toStdString());
                    planned.append(tr("%1 → %2").arg(
                        other, fromStd(document->plannedDeviceOfTensor(*index).value_or("?"))));
                }
                return tr("%1. Planned now: %2.").arg(m_lastMoveText, planned.join(QStringLiteral(", ")));
            }},
        {tr("4. A laptop without a GPU"),
            tr("The target becomes a laptop with no GPU. torch.load restores every storage onto the "
               "device it records, so the file as it is cannot load there: this is torch's own error."),
            [this] {
                m_parts.plan->chooseTarget(tr(kLaptop));
                LoadSimulationBar* bar = m_parts.simulation;
                bar->refresh();
                const CheckpointDocument* document = m_parts.documents->document();
                const LoadSimulation simulation = simulateLoad(
                    document->checkpoint(), document->target(), MapLocation {}, TorchGeneration::Torch26Plus);
                return simulation.loads
                    ? tr("torch 2.6+ loads it on %1.").arg(fromStd(document->target().name))
                    : tr("On %1, torch.load(path) raises: %2")
                          .arg(fromStd(document->target().name), fromStd(simulation.error));
            }},
        {tr("5. Everything to CPU"),
            tr("Plan › Everything to CPU plans every storage onto the CPU. The Findings dock now "
               "answers for the copy this plan writes."),
            [this] {
                m_parts.plan->everythingToCpuAction()->trigger();
                LoadSimulationBar* bar = m_parts.simulation;
                bar->refresh();
                const QStringList lines = bar->resultText().split(QLatin1Char('\n'));
                QString after;
                for (const QString& line : lines)
                    if (line.startsWith(tr("After this plan")))
                        after = line;
                return after.isEmpty() ? bar->resultText() : after;
            }},
        {tr("6. The same at load time"),
            tr("No copy is needed when you control the torch.load call: map_location='cpu' does what "
               "this plan does, as the file is loaded. The Findings dock's map_location box is set to it."),
            [this] {
                LoadSimulationBar* bar = m_parts.simulation;
                bar->setMapLocationText(QStringLiteral("'cpu'"));
                const CheckpointDocument* document = m_parts.documents->document();
                const LoadSimulation simulation = simulateLoad(document->checkpoint(), document->target(),
                    bar->mapLocation(), TorchGeneration::Torch26Plus);
                return tr("torch.load(path, map_location='cpu') on %1: %2. As Python for this plan:\n%3")
                    .arg(fromStd(document->target().name),
                        simulation.loads ? tr("torch 2.6+ loads it") : fromStd(simulation.error),
                        fromStd(document->plan().asPython(
                            QFileInfo(document->filePath()).fileName().toStdString())));
            }},
        {tr("7. Save the copy"),
            tr("File › Save Remapped Copy writes a new file whose recorded devices are the planned ones, "
               "loads it back to check, and never touches the original. The tour saves into a "
               "temporary folder of its own."),
            [this] { return saveCopy(); }},
    };
}

QString GuidedTour::stepText() const
{
    return m_text->toPlainText();
}

void GuidedTour::start()
{
    m_dock->show();
    m_dock->raise();
    m_steps->setCurrentRow(0);
    runStep(0);
}

void GuidedTour::showStep(int index)
{
    if (index < 0 || index >= stepCount())
        return;
    const Step& step = m_definitions[std::size_t(index)];
    QString html = QStringLiteral("<h3>%1</h3><p>%2</p>")
                       .arg(step.title.toHtmlEscaped(), step.explanation.toHtmlEscaped());
    const QString& outcome = m_outcomes[std::size_t(index)];
    if (!outcome.isEmpty())
        html += QStringLiteral("<p><b>%1</b><br>%2</p>")
                    .arg(tr("What happened:").toHtmlEscaped(),
                        outcome.toHtmlEscaped().replace(QLatin1Char('\n'), QStringLiteral("<br>")));
    m_text->setHtml(html);
    m_runButton->setText(outcome.isEmpty() ? tr("Show Me") : tr("Replay"));
    m_runButton->setEnabled(m_running < 0);
    m_nextButton->setEnabled(m_running < 0 && index + 1 < stepCount());
}

void GuidedTour::runStep(int index)
{
    if (index < 0 || index >= stepCount() || m_running >= 0)
        return;
    m_running = index;
    m_runButton->setEnabled(false);
    m_nextButton->setEnabled(false);
    whenDemoOpen([this, index] {
        // The state the steps before this one leave, then this step.
        resetDemo();
        for (int before = 1; before < index; ++before)
            if (before != stepCount() - 1) // saving leaves no state behind
                m_definitions[std::size_t(before)].run();
        const QString outcome = m_definitions[std::size_t(index)].run();
        if (!outcome.isEmpty() || index != stepCount() - 1)
            finishStep(index, outcome);
    });
}

void GuidedTour::finishStep(int index, const QString& outcome)
{
    m_running = -1;
    m_outcomes[std::size_t(index)] = outcome;
    if (QListWidgetItem* item = m_steps->item(index))
        item->setText(QStringLiteral("✓ ") + m_definitions[std::size_t(index)].title);
    if (m_steps->currentRow() != index)
        m_steps->setCurrentRow(index);
    showStep(index);
    Q_EMIT stepFinished(index, outcome);
}

void GuidedTour::whenDemoOpen(const std::function<void()>& then)
{
    const QString demo = m_parts.demoPath ? m_parts.demoPath() : QString();
    if (m_parts.documents->document()
        && QFileInfo(m_parts.documents->document()->filePath()) == QFileInfo(demo)) {
        then();
        return;
    }
    if (demo.isEmpty() || !QFileInfo::exists(demo)) {
        finishStep(m_running, tr("The demo checkpoint is not installed (looked for %1).").arg(demo));
        return;
    }
    m_whenOpen = then;
    Q_EMIT openRequested(demo);
}

void GuidedTour::demoOpened()
{
    if (!m_whenOpen)
        return; // an open the tour did not ask for
    const std::function<void()> then = std::exchange(m_whenOpen, nullptr);
    then();
}

void GuidedTour::demoNotOpened(const QString& message)
{
    if (!m_whenOpen)
        return;
    m_whenOpen = nullptr;
    finishStep(m_running, tr("The demo could not be opened: %1").arg(message));
}

void GuidedTour::resetDemo()
{
    CheckpointDocument* document = m_parts.documents->document();
    m_parts.plan->chooseTarget(tr(kTourTarget));
    m_parts.simulation->setMapLocationText(QStringLiteral("None"));
    document->undoStack()->setIndex(0);
    m_parts.tree->view()->clearSelection();
}

QString GuidedTour::saveCopy()
{
    if (!m_outputFolder) {
        m_outputFolder
            = std::make_unique<QTemporaryDir>(QDir::tempPath() + QStringLiteral("/ckpt-tour-XXXXXX"));
        if (!m_outputFolder->isValid()) {
            m_outputFolder.reset();
            return tr("No temporary folder to save into.");
        }
    }
    m_savingTo = m_outputFolder->filePath(QStringLiteral("demo-on-cpu-%1.pt").arg(++m_copies));
    Q_EMIT saveRequested(m_savingTo);
    return {};
}

void GuidedTour::saveFinished(bool ok, const QString& message)
{
    if (m_savingTo.isEmpty())
        return; // a save the tour did not ask for
    const QString path = std::exchange(m_savingTo, QString());
    if (ok)
        m_lastSavedCopy = path;
    finishStep(stepCount() - 1,
        ok ? tr("Wrote %1 (the tour's temporary folder; your files are untouched): %2")
                 .arg(QDir::toNativeSeparators(path), message)
           : tr("Not saved: %1").arg(message));
}

} // namespace ckpt
