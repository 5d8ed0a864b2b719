// SPDX-License-Identifier: MIT
#include "ui/planactions.h"

#include "core/plan/autoplacement.h"
#include "core/plan/devicemap.h"
#include "core/report/cudatrialreport.h"
#include "core/tasks/cudatrial.h"
#include "ui/actiontable.h"
#include "ui/base/appsettings.h"
#include "ui/dialogs/mapeverydialog.h"
#include "ui/dialogs/targetdialog.h"
#include "ui/document/checkpointdocument.h"
#include "ui/document/documentcontroller.h"
#include "ui/jobs/jobprogressdialog.h"
#include "ui/jobs/jobtracker.h"

#include <QActionGroup>
#include <QDir>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMenu>
#include <QSaveFile>
#include <QUndoStack>
#include <QWidget>

#include <sstream>
#include <vector>

namespace ckpt {

namespace {

QString fromStd(const std::string& text)
{
    return QString::fromStdString(text);
}

bool writeTextFile(const QString& path, const QByteArray& bytes, QString& error)
{
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly) || file.write(bytes) != bytes.size() || !file.commit()) {
        error = file.errorString();
        return false;
    }
    return true;
}

// This machine before its GPUs are known: its CPU only, so a document opened meanwhile can be
// planned at once; the detected machine replaces it when the job ends.
MachineInventory machineBeingDetected()
{
    MachineInventory machine;
    machine.name = "this machine";
    DeviceInfo cpu;
    cpu.tag = "cpu";
    machine.devices.push_back(cpu);
    return machine;
}

} // namespace

PlanActions::PlanActions(DocumentController* documents, AppSettings* settings, QWidget* dialogParent)
    : QObject(dialogParent)
    , m_documents(documents)
    , m_settings(settings)
    , m_dialogParent(dialogParent)
    , m_detection(new JobTracker(this))
    , m_trial(new JobTracker(this))
    , m_makeCudaAccess([] {
        return CudaAccess {makeSystemCudaRuntime(), systemNvmlFreeSnapshot()};
    })
{
    m_everythingToCpu = createAction(this,
        {"actionEverythingToCpu", tr("Everything to &CPU"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_C),
            {}, [this] { everythingToCpu(); }});
    m_mapEvery = createAction(this,
        {"actionMapEvery", tr("&Map Every Device to…"), QKeySequence(Qt::CTRL | Qt::Key_M), {},
            [this] { mapEveryTag(); }});
    m_autoBalanced = createAction(this,
        {"actionAutoBalanced", tr("Automatic Placement (&Balanced)"), QKeySequence(Qt::CTRL | Qt::Key_B),
            tr("Spread the blocks evenly over the target's GPUs, then the CPU"),
            [this] { autoPlace(true); }});
    m_autoSequential = createAction(this,
        {"actionAutoSequential", tr("Automatic Placement (&Sequential)"),
            QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_B), tr("Fill cuda:0, then cuda:1, …, then the CPU"),
            [this] { autoPlace(false); }});
    m_trialPlacement = createAction(this,
        {"actionTrialPlacement", tr("T&rial on This Machine's GPUs"), {},
            tr("Measure each GPU's CUDA context, then allocate the plan's storages as PyTorch's caching "
               "allocator would: does the plan fit?"),
            [this] { startTrial(false); }});
    m_trialLoad = createAction(this,
        {"actionTrialLoad", tr("Trial &Load on This Machine's GPUs"), {},
            tr("The trial, then copy every planned storage onto its GPU and read it back to compare the "
               "bytes"),
            [this] { startTrial(true); }});

    m_targetMenu = new QMenu(tr("&Target Machine"), dialogParent);
    m_targetMenu->setObjectName(QStringLiteral("targetMenu"));
    m_targetGroup = new QActionGroup(this);
    connect(m_targetMenu, &QMenu::aboutToShow, this, &PlanActions::rebuildTargetMenu);

    // The target: the saved profile used last, else this machine (detected in a job).
    const QString lastProfile = m_settings->lastTargetProfile();
    for (const auto& [name, spec] : targetPresets())
        if (name == lastProfile)
            if (auto machine = parseMachineSpec(spec.toStdString(), name.toStdString())) {
                m_target = std::move(machine.value());
                m_targetProfile = lastProfile;
            }
    if (!lastProfile.isEmpty() && m_targetProfile.isEmpty()) {
        TargetProfiles profiles;
        profiles.load();
        if (auto machine = resolveMachine(lastProfile.toStdString(), profiles)) {
            m_target = std::move(machine.value());
            m_target.name = lastProfile.toStdString();
            m_targetProfile = lastProfile;
        }
    }
    if (m_targetProfile.isEmpty()) {
        m_target = machineBeingDetected();
        m_useDetectedMachine = true;
    }
    m_documents->setTarget(m_target);
    detectThisMachineInBackground();
    rebuildTargetMenu();
}

PlanActions::~PlanActions() = default;

bool PlanActions::isDetecting() const
{
    return m_detection->isRunning();
}

void PlanActions::detectThisMachineInBackground()
{
    m_detection->start([](JobProgress&) { return detectThisMachine(); },
        [this](MachineInventory machine) {
            m_thisMachine = std::move(machine);
            Q_EMIT detectingChanged(false);
            if (m_useDetectedMachine)
                setTarget(*m_thisMachine, QString());
        });
    Q_EMIT detectingChanged(true);
}

void PlanActions::updateActions()
{
    const bool open = m_documents->document() != nullptr;
    m_everythingToCpu->setEnabled(open);
    m_mapEvery->setEnabled(open);
    m_autoBalanced->setEnabled(open);
    m_autoSequential->setEnabled(open);
    m_trialPlacement->setEnabled(open && !isTrialRunning());
    m_trialLoad->setEnabled(open && !isTrialRunning());
}

void PlanActions::setCudaAccess(std::function<CudaAccess()> make)
{
    m_makeCudaAccess = std::move(make);
}

bool PlanActions::isTrialRunning() const
{
    return m_trial->isRunning();
}

void PlanActions::cancelTrial()
{
    m_trial->cancel();
}

void PlanActions::startTrial(bool load)
{
    CheckpointDocument* document = m_documents->document();
    if (!document || isTrialRunning())
        return;
    // The worker gets its own copy of the plan (the user may keep planning) and makes, uses and
    // drops its own runtime: the contexts live on its thread and go when it ends.
    const std::shared_ptr<const Checkpoint> checkpoint = document->sharedCheckpoint();
    const auto plan = std::make_shared<PlacementPlan>(document->plan());
    m_trial->start(
        [checkpoint, plan, load, make = m_makeCudaAccess](JobProgress& progress) {
            const CudaAccess access = make();
            CudaTrialRequest request;
            request.checkpoint = checkpoint.get();
            request.plan = plan.get();
            request.runtime = access.runtime.get();
            request.nvmlFree = access.nvmlFree;
            request.load = load;
            request.progress = [&progress](const std::string&, std::uint64_t done, std::uint64_t total) {
                return progress.report(done, total);
            };
            return std::make_shared<const CudaTrialOutcome>(runCudaTrial(request));
        },
        [this](const std::shared_ptr<const CudaTrialOutcome>& outcome) {
            if (m_trialProgress)
                m_trialProgress->deleteLater();
            updateActions();
            // What was measured stays with this machine; the ledger shows it when this machine is the target.
            if (!outcome->measurement.devices.empty() && m_thisMachine) {
                applyMeasurement(*m_thisMachine, outcome->measurement);
                if (m_targetProfile.isEmpty() && !m_target.described)
                    setTarget(*m_thisMachine, QString());
            }
            std::ostringstream text;
            writeCudaTrialText(text, *outcome);
            Q_EMIT trialFinished(QString::fromStdString(text.str()).trimmed(), outcome->exitCode() == 0);
        });
    updateActions();
    m_trialProgress = new JobProgressDialog(
        load ? tr("Trial load on this machine's GPUs…") : tr("Trial on this machine's GPUs…"),
        m_trial->progress(),
        m_dialogParent); // its Cancel sets the job's flag; the worker frees what it allocated and stops
}

void PlanActions::everythingToCpu()
{
    CheckpointDocument* document = m_documents->document();
    if (!document)
        return;
    PlacementRule rule;
    rule.kind = PlacementRule::Kind::MapTag;
    rule.subject = "*";
    rule.target = "cpu";
    Q_EMIT message(document->move({rule}, tr("Everything to cpu")).text);
}

void PlanActions::mapEveryTag()
{
    CheckpointDocument* document = m_documents->document();
    if (!document)
        return;
    MapEveryDialog dialog(*document, m_dialogParent);
    if (!dialog.hasRecordedDevices()) {
        Q_EMIT errorShown(tr("Nothing to Map"), tr("No storage of this file records a device."));
        return;
    }
    if (dialog.exec() != QDialog::Accepted || !m_documents->document())
        return;
    const std::string target = dialog.toTag();
    if (!isPlausibleDeviceTag(target)) {
        Q_EMIT errorShown(tr("Not a Device"),
            tr("“%1” is not a device as torch writes it (e.g. cpu, cuda:0).").arg(fromStd(target)));
        return;
    }
    PlacementRule rule;
    rule.kind = PlacementRule::Kind::MapTag;
    rule.subject = dialog.fromTag();
    rule.target = target;
    Q_EMIT message(
        document->move({rule}, tr("Map every %1 to %2").arg(fromStd(rule.subject), fromStd(target))).text);
}

void PlanActions::autoPlace(bool balanced)
{
    CheckpointDocument* document = m_documents->document();
    if (!document)
        return;
    AutoPlacementOptions options;
    options.strategy = balanced ? PlacementStrategy::Balanced : PlacementStrategy::Sequential;
    const auto placement = ckpt::placeAutomatically(document->checkpoint(), document->target(), options);
    if (!placement) {
        Q_EMIT errorShown(tr("Automatic Placement Failed"), fromStd(placement.error().message));
        return;
    }
    const MoveReport report = document->move(placement->rules,
        balanced ? tr("Automatic placement (balanced)") : tr("Automatic placement (sequential)"));
    m_autoDeviceMap = placement->deviceMap;
    m_autoDeviceMapIndex = document->undoStack()->index();
    QString text = report.text;
    if (!placement->didNotFit.empty())
        text
            += tr("; %n group(s) fit nowhere and stay on the CPU", nullptr, int(placement->didNotFit.size()));
    Q_EMIT message(text);
}

void PlanActions::useThisMachine()
{
    if (m_thisMachine) {
        setTarget(*m_thisMachine, QString());
        return;
    }
    // Still detecting: this machine's CPU for now, the GPUs when the job ends.
    setTarget(machineBeingDetected(), QString());
    m_useDetectedMachine = true;
}

void PlanActions::describeTarget()
{
    TargetDialog dialog(m_dialogParent);
    if (m_target.described)
        dialog.setSpec(fromStd(formatMachineSpec(m_target)));
    if (dialog.exec() != QDialog::Accepted)
        return;
    if (auto machine = dialog.machine())
        setTarget(std::move(*machine), dialog.profileName());
}

void PlanActions::useProfile(const QString& name)
{
    TargetProfiles profiles;
    profiles.load();
    auto machine = resolveMachine(name.toStdString(), profiles);
    if (!machine) {
        Q_EMIT errorShown(tr("Target Not Usable"), fromStd(machine.error().message));
        return;
    }
    machine->name = name.toStdString();
    setTarget(std::move(machine.value()), name);
}

const std::vector<std::pair<QString, QString>>& PlanActions::targetPresets()
{
    static const std::vector<std::pair<QString, QString>> presets {
        {tr("laptop without a GPU"), QStringLiteral("cpu=16GiB")},
        {tr("workstation (1 GPU)"), QStringLiteral("cuda:0=24GiB,cpu=64GiB")},
        {tr("lab box (2 GPUs)"), QStringLiteral("cuda:0=16GiB,cuda:1=16GiB,cpu=32GiB")},
        {tr("server (8 GPUs)"),
            QStringLiteral("cuda:0=80GiB,cuda:1=80GiB,cuda:2=80GiB,cuda:3=80GiB,cuda:4=80GiB,cuda:5=80GiB,"
                           "cuda:6=80GiB,cuda:7=80GiB,cpu=1TiB")},
    };
    return presets;
}

QStringList PlanActions::targetChoices() const
{
    QStringList choices {tr("this machine")};
    for (const auto& [name, spec] : targetPresets())
        choices.append(name);
    TargetProfiles profiles;
    profiles.load();
    for (const auto& [name, spec] : profiles.profiles())
        if (!choices.contains(fromStd(name)))
            choices.append(fromStd(name));
    return choices;
}

QString PlanActions::currentTargetChoice() const
{
    if (m_targetProfile.isEmpty() && !m_target.described)
        return tr("this machine");
    return m_targetProfile.isEmpty() ? fromStd(m_target.name) : m_targetProfile;
}

void PlanActions::chooseTarget(const QString& choice)
{
    if (choice == tr("this machine")) {
        useThisMachine();
        return;
    }
    for (const auto& [name, spec] : targetPresets()) {
        if (name != choice)
            continue;
        auto machine = parseMachineSpec(spec.toStdString(), name.toStdString());
        if (!machine) {
            Q_EMIT errorShown(tr("Target Not Usable"), fromStd(machine.error().message));
            return;
        }
        setTarget(std::move(machine.value()), name); // remembered by name, as a profile is
        return;
    }
    useProfile(choice);
}

void PlanActions::setTarget(MachineInventory machine, const QString& profileName)
{
    m_useDetectedMachine = false;
    m_target = std::move(machine);
    m_targetProfile = profileName;
    m_settings->setLastTargetProfile(profileName);
    m_documents->setTarget(m_target);
    Q_EMIT message(tr("Target: %1").arg(fromStd(m_target.name)));
    Q_EMIT targetChanged();
}

void PlanActions::rebuildTargetMenu()
{
    m_targetMenu->clear();
    const auto actions = m_targetGroup->actions();
    for (QAction* action : actions)
        m_targetGroup->removeAction(action);

    QAction* thisMachineAction = m_targetMenu->addAction(
        isDetecting() ? tr("This Machine (detecting GPUs…)") : tr("This Machine (detected)"), this,
        &PlanActions::useThisMachine);
    thisMachineAction->setObjectName(QStringLiteral("actionTargetThisMachine"));
    thisMachineAction->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_T));
    thisMachineAction->setCheckable(true);
    thisMachineAction->setChecked(m_targetProfile.isEmpty() && !m_target.described);
    m_targetGroup->addAction(thisMachineAction);

    m_targetMenu->addSeparator();
    for (const auto& [name, spec] : targetPresets()) {
        const QString presetName = name;
        QAction* action
            = m_targetMenu->addAction(name, this, [this, presetName] { chooseTarget(presetName); });
        action->setStatusTip(spec);
        action->setCheckable(true);
        action->setChecked(presetName == m_targetProfile);
        m_targetGroup->addAction(action);
    }
    TargetProfiles profiles;
    profiles.load();
    if (!profiles.profiles().empty())
        m_targetMenu->addSeparator();
    for (const auto& [name, spec] : profiles.profiles()) {
        const QString profileName = fromStd(name);
        QAction* action
            = m_targetMenu->addAction(profileName, this, [this, profileName] { useProfile(profileName); });
        action->setToolTip(fromStd(spec));
        action->setStatusTip(fromStd(spec));
        action->setCheckable(true);
        action->setChecked(profileName == m_targetProfile);
        m_targetGroup->addAction(action);
    }
    m_targetMenu->addSeparator();
    QAction* describe
        = m_targetMenu->addAction(tr("&Describe a Target Machine…"), this, &PlanActions::describeTarget);
    describe->setObjectName(QStringLiteral("actionDescribeTarget"));
    describe->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_T));
}

bool PlanActions::exportMapLocationTo(const QString& path)
{
    CheckpointDocument* document = m_documents->document();
    if (!document)
        return false;
    const std::string python = document->plan().asPython(document->checkpoint().path);
    QString error;
    if (!writeTextFile(path, QByteArray::fromStdString(python), error)) {
        Q_EMIT errorShown(tr("Export Failed"),
            tr("%1 could not be written: %2").arg(QDir::toNativeSeparators(path), error));
        return false;
    }
    return true;
}

bool PlanActions::exportDeviceMapTo(const QString& path)
{
    CheckpointDocument* document = m_documents->document();
    if (!document)
        return false;
    std::map<std::string, std::string> deviceMap;
    if (m_autoDeviceMapIndex >= 0 && document->undoStack()->index() == m_autoDeviceMapIndex) {
        deviceMap = m_autoDeviceMap;
    } else {
        // A manual plan: the highest tree nodes whose tensors are all planned onto one device.
        const Checkpoint& checkpoint = document->checkpoint();
        std::vector<std::uint32_t> pending {0};
        while (!pending.empty()) {
            const std::uint32_t node = pending.back();
            pending.pop_back();
            if (const auto device = document->plannedDeviceOfNode(node)) {
                deviceMap[node == 0 ? std::string() : document->nodePath(node)] = *device;
                continue;
            }
            const auto& children = checkpoint.tree[node].children;
            pending.insert(pending.end(), children.rbegin(), children.rend());
        }
    }
    QString error;
    if (!writeTextFile(path,
            QByteArray::fromStdString(deviceMapJson({deviceMap.begin(), deviceMap.end()}) + "\n"), error)) {
        Q_EMIT errorShown(tr("Export Failed"),
            tr("%1 could not be written: %2").arg(QDir::toNativeSeparators(path), error));
        return false;
    }
    return true;
}

} // namespace ckpt
