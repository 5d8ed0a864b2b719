// SPDX-License-Identifier: MIT
// The load simulation against real torch: every fixture x a table of map_locations x weights_only
// (default, True, False), loaded by torch 1.13 and by the modern torch on this CPU-only machine.
// Outcome and the full message text (str() of the exception) must match. Rows where torch fails
// for reasons outside the simulation's model are counted and skipped: AttributeError/TypeError/
// NotImplementedError (a fixture written by a newer torch than the one loading it, an operator
// missing for a layout), and any other exception type the simulation never claims. A class the
// unpickler cannot import is modelled: ModuleNotFoundError for a user's package that is not on the
// path, AttributeError for a class saved from the fixture script's __main__ (Python 3.11 names the
// running script there; the simulation says <your script>).
#include "core/devices/machinespec.h"
#include "core/plan/placementplan.h"
#include "core/read/checkpointreader.h"
#include "core/triage/plannedload.h"
#include "core/triage/triage.h"
#include "torchprobe.h"

#include <QDir>
#include <QRegularExpression>
#include <QTest>

namespace {
// A record's device as the plan's tags are (std::optional<std::string>): compared with an
// OptionalInternedString directly, std::optional's operator== would call two "none" unequal.
std::optional<std::string> asTag(const ckpt::OptionalInternedString& d)
{
    return (d ? std::optional<std::string>(d->str()) : std::nullopt);
}
} // namespace

using namespace ckpt;

static QString withoutScriptPath(QString message);

class TestLoadSimulation : public QObject {
    Q_OBJECT

private:
    void compareWith(const QString& python, TorchGeneration generation);

private Q_SLOTS:
    void parsesMapLocations();
    void restoresOnDescribedMachines();
    void agreesWithTorch113() { compareWith(QStringLiteral(CKPT_LEGACY_PYTHON), TorchGeneration::Torch113); }
    void agreesWithModernTorch()
    {
        compareWith(QStringLiteral(CKPT_MODERN_PYTHON), TorchGeneration::Torch26Plus);
    }
    void importsAgreeWithTorch113()
    {
        compareImports(QStringLiteral(CKPT_LEGACY_PYTHON), TorchGeneration::Torch113);
    }
    void importsAgreeWithModernTorch()
    {
        compareImports(QStringLiteral(CKPT_MODERN_PYTHON), TorchGeneration::Torch26Plus);
    }
    void gpuTargetGetsGpuRemap();
    void knownVerdictChangesNothing();
    void storageDevicesKeepDistinctDevices();
    void storageDevicesSayWhatTheCopySays();
    void progressCanStopTheSimulation();

private:
    void compareImports(const QString& python, TorchGeneration generation);
};

// Python 3.11 says "Can't get attribute 'Net' on <module '__main__' from '/path/script.py'>"; the
// simulation cannot know the user's script and says <your script>.
static QString withoutScriptPath(QString message)
{
    static const QRegularExpression script(QStringLiteral("<module '__main__' from '[^']*'>"));
    return message.replace(script, QStringLiteral("<module '__main__' from '<your script>'>"));
}

// A whole model whose class lives in a user's package (tests/fixtures/usercode/models) and one whose
// classes live in the saving script's __main__, loaded with weights_only=False by real torch with
// and without the package on the path, against the simulation with and without --importable.
void TestLoadSimulation::compareImports(const QString& python, TorchGeneration generation)
{
    if (python.isEmpty())
        QSKIP("no interpreter configured for this torch");
    const auto machine = parseMachineSpec("cpu=16GiB");
    QVERIFY(machine);
    const QString usercode = QStringLiteral(CKPT_SOURCE_DIR "/tests/fixtures/usercode");
    struct Row {
        QString file;
        bool onPath;
    };
    std::vector<Row> rows;
    std::vector<TorchProbeJob> jobs;
    std::vector<QString> pythonPaths;
    for (const auto* directory : {"torch-1.13", "torch-2"})
        for (const auto* name : {"user_package_module.pt", "whole_module.pt", "state_dict.pt"})
            for (const bool onPath : {false, true}) {
                const QString file = QStringLiteral(CKPT_SOURCE_DIR "/tests/fixtures/")
                    + QLatin1String(directory) + u'/' + QLatin1String(name);
                rows.push_back({file, onPath});
                jobs.push_back({file, QString(), false, true});
                pythonPaths.push_back(onPath ? usercode : QString());
            }
    QString why;
    const auto results = runTorchProbe(python, jobs, why, pythonPaths);
    if (!why.isEmpty())
        QFAIL(qPrintable(why));
    int failures = 0;
    QStringList mismatches;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const auto& truth = results[i];
        if (!truth.ok && truth.type != QLatin1String("ModuleNotFoundError")
            && truth.type != QLatin1String("AttributeError"))
            continue; // e.g. a torch-2 fixture 1.13 cannot rebuild
        const Checkpoint checkpoint = readCheckpoint(rows[i].file.toStdString());
        const std::vector<std::string> importable
            = rows[i].onPath ? std::vector<std::string> {"models"} : std::vector<std::string> {};
        const auto simulation = simulateLoad(checkpoint, *machine, {}, generation, false, importable);
        failures += truth.ok ? 0 : 1;
        const QString simulated = QString::fromStdString(simulation.error);
        if (simulation.loads != truth.ok
            || (!truth.ok
                && (simulated != withoutScriptPath(truth.error)
                    || QString::fromStdString(simulation.errorType) != truth.type)))
            mismatches << QStringLiteral("%1 (package on path: %2): torch %3 %4 | simulated %5 %6 %7")
                              .arg(rows[i].file.section(u'/', -2), rows[i].onPath ? u"yes"_qs : u"no"_qs,
                                  truth.ok ? u"loads"_qs : truth.type, truth.error,
                                  simulation.loads ? u"loads"_qs : u"fails"_qs,
                                  QString::fromStdString(simulation.errorType), simulated);
    }
    QVERIFY2(mismatches.isEmpty(), qPrintable(mismatches.join(u'\n')));
    // Both kinds of failure really happened (a fixture set that lost them would pass vacuously).
    QVERIFY2(failures >= 4, qPrintable(QStringLiteral("only %1 import failures seen").arg(failures)));
}

// A file recorded on cuda:3, checked for a target with one GPU: the fix maps cuda:3 onto that GPU.
void TestLoadSimulation::gpuTargetGetsGpuRemap()
{
    const Checkpoint checkpoint = readCheckpoint(CKPT_SOURCE_DIR "/tests/fixtures/torch-2/devices_cuda1.pt");
    QVERIFY(!checkpoint.storages.empty());
    const auto oneGpu = parseMachineSpec("cuda:0=24GiB,cpu=64GiB");
    QVERIFY(oneGpu);
    TriageOptions options;
    options.target = *oneGpu;
    const TriageReport report = triage(checkpoint, options);
    bool found = false;
    for (const Finding& finding : report.findings) {
        if (finding.code != FindingCode::LoadFails)
            continue;
        found = true;
        QVERIFY2(
            finding.explanation.find("the target has 1 GPU; map `cuda:1` to `cuda:0`") != std::string::npos,
            finding.explanation.c_str());
        QVERIFY2(
            finding.fix.find("map_location={'cuda:1': 'cuda:0'}") != std::string::npos, finding.fix.c_str());
        QVERIFY2(finding.fix.find("--map cuda:1=cuda:0") != std::string::npos, finding.fix.c_str());
        QVERIFY(finding.explanation.find("no CUDA device") == std::string::npos);
    }
    QVERIFY(found);
    // The map it proposes does load there.
    const auto fixed = simulateLoad(
        checkpoint, *oneGpu, *MapLocation::parse("{'cuda:1': 'cuda:0'}"), TorchGeneration::Torch26Plus);
    QVERIFY(fixed.loads);
}

void TestLoadSimulation::parsesMapLocations()
{
    QCOMPARE(MapLocation::parse("none")->kind, MapLocation::Kind::None);
    QCOMPARE(MapLocation::parse("cpu")->python(), std::string("'cpu'"));
    QCOMPARE(MapLocation::parse("torch.device('cuda:0')")->device, std::string("cuda:0"));
    const auto dict = MapLocation::parse("cuda:1=cuda:0,cuda:2=cpu");
    QVERIFY(dict);
    QCOMPARE(dict->python(), std::string("{'cuda:1': 'cuda:0', 'cuda:2': 'cpu'}"));
    const auto literal = MapLocation::parse("{'cuda:1': \"cpu\"}");
    QVERIFY(literal);
    QCOMPARE(literal->dict.at("cuda:1"), std::string("cpu"));
    QVERIFY(!MapLocation::parse("{'cuda:1' 'cpu'}"));
    QVERIFY(!MapLocation::parse("cuda 0"));
}

void TestLoadSimulation::restoresOnDescribedMachines()
{
    const auto checkpoint = readCheckpoint(CKPT_SOURCE_DIR "/tests/fixtures/torch-2/devices_cuda1.pt");
    const auto oneGpu = parseMachineSpec("cuda:0=24GiB,cpu=64GiB");
    QVERIFY(oneGpu);
    auto simulation = simulateLoad(checkpoint, *oneGpu, {}, TorchGeneration::Torch26Plus);
    QVERIFY(!simulation.loads);
    QCOMPARE(simulation.error,
        std::string("Attempting to deserialize object on CUDA device 1 but torch.cuda.device_count() is 1. "
                    "Please use "
                    "torch.load with map_location to map your storages to an existing device."));
    simulation = simulateLoad(
        checkpoint, *oneGpu, *MapLocation::parse("cuda:1=cuda:0"), TorchGeneration::Torch26Plus);
    QVERIFY(simulation.loads);
    for (const auto& storage : simulation.storages)
        QVERIFY(storage.landsOn == std::string("cuda:0") || storage.landsOn == std::string("cpu"));
}

void TestLoadSimulation::compareWith(const QString& python, TorchGeneration generation)
{
    if (python.isEmpty())
        QSKIP("no interpreter configured for this torch");
    const auto machine = parseMachineSpec("cpu=16GiB");
    QVERIFY(machine);
    const QStringList mappings {QString(), QStringLiteral("cpu"), QStringLiteral("cuda:1=cuda:0"),
        QStringLiteral("{'cuda:1': 'cpu'}"),
        QStringLiteral("cuda:0=cpu,cuda:1=cpu,cuda=cpu,mps=cpu,xpu:0=cpu"), QStringLiteral("cuda:0")};
    struct Row {
        QString file;
        MapLocation mapLocation;
        std::optional<bool> weightsOnly;
    };
    std::vector<Row> rows;
    std::vector<TorchProbeJob> jobs;
    for (const auto* directory : {"torch-1.13", "torch-2"}) {
        const QDir dir(QStringLiteral(CKPT_SOURCE_DIR "/tests/fixtures/") + QLatin1String(directory));
        for (const auto& file : dir.entryList({QStringLiteral("*.pt")}, QDir::Files, QDir::Name))
            for (const auto& mapping : mappings)
                for (const std::optional<bool> weightsOnly :
                    {std::optional<bool>(), std::optional(true), std::optional(false)}) {
                    auto location = MapLocation::parse(mapping.toStdString());
                    QVERIFY(location);
                    rows.push_back({dir.filePath(file), *location, weightsOnly});
                    jobs.push_back({dir.filePath(file),
                        location->kind == MapLocation::Kind::None
                            ? QString()
                            : QString::fromStdString(location->python()),
                        weightsOnly, true});
                }
    }
    QString why;
    const auto results = runTorchProbe(python, jobs, why);
    if (!why.isEmpty())
        QFAIL(qPrintable(why));

    int compared = 0, skipped = 0;
    QStringList mismatches;
    std::map<QString, Checkpoint> checkpoints;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const auto& row = rows[i];
        const auto& truth = results[i];
        const bool modelled = truth.ok || truth.type == QLatin1String("RuntimeError")
            || truth.type == QLatin1String("UnpicklingError")
            || truth.type == QLatin1String("ModuleNotFoundError")
            || truth.type == QLatin1String("UnicodeDecodeError")
            || (truth.type == QLatin1String("AttributeError")
                && truth.error.contains(QLatin1String("'__main__'")))
            || (truth.type == QLatin1String("ValueError")
                && truth.error.startsWith(QLatin1String("map_location should be")));
        if (!modelled) {
            ++skipped;
            continue;
        }
        auto it = checkpoints.find(row.file);
        if (it == checkpoints.end())
            it = checkpoints.emplace(row.file, readCheckpoint(row.file.toStdString())).first;
        const auto simulation
            = simulateLoad(it->second, *machine, row.mapLocation, generation, row.weightsOnly);
        ++compared;
        const QString simulated = QString::fromStdString(simulation.error);
        if (simulation.loads != truth.ok || (!truth.ok && simulated != withoutScriptPath(truth.error))
            || (!truth.ok && !simulation.errorType.empty()
                && QString::fromStdString(simulation.errorType) != truth.type))
            mismatches << QStringLiteral(
                "%1 map_location=%2 weights_only=%3:\n  torch: %4 %5\n  simulated: %6 %7")
                              .arg(row.file.section(u'/', -2),
                                  QString::fromStdString(row.mapLocation.python()),
                                  row.weightsOnly
                                      ? (*row.weightsOnly ? QStringLiteral("True") : QStringLiteral("False"))
                                      : QStringLiteral("default"),
                                  truth.ok ? QStringLiteral("loads") : truth.type, truth.error.left(300),
                                  simulation.loads ? QStringLiteral("loads") : QStringLiteral("fails"),
                                  simulated.left(300));
    }
    qInfo("%s: %d rows compared, %d outside the model skipped", qPrintable(python), compared, skipped);
    if (!mismatches.isEmpty())
        QFAIL(qPrintable(QStringLiteral("%1 of %2 rows disagree:\n").arg(mismatches.size()).arg(compared)
            + mismatches.mid(0, 15).join(u'\n')));
}

// The app judges a file's pickles once and hands the verdict to every simulation after a move; the
// triage hands its own to its simulations. On every fixture written by real torch (whose outcomes
// compareWith holds to torch's), for the file as it is and for a plan that puts every storage on a
// GPU the machine lacks, the simulations given the verdict say exactly what the ones that judge it
// themselves say; a verdict made for the other generation is not used.
void TestLoadSimulation::knownVerdictChangesNothing()
{
    const auto machine = parseMachineSpec("cuda:0=16GiB,cpu=16GiB");
    QVERIFY(machine);
    int compared = 0, rejectedByVerdict = 0, failingStorages = 0;
    for (const auto* directory : {"torch-1.13", "torch-2"}) {
        const QDir dir(QStringLiteral(CKPT_SOURCE_DIR "/tests/fixtures/") + QLatin1String(directory));
        for (const auto& file : dir.entryList({QStringLiteral("*.pt")}, QDir::Files, QDir::Name)) {
            const Checkpoint checkpoint = readCheckpoint(dir.filePath(file).toStdString());
            StorageDevices elsewhere(checkpoint.storages.size());
            for (std::uint32_t storage = 0; storage < checkpoint.storages.size(); ++storage)
                QVERIFY(elsewhere.set(storage, "cuda:3"));
            for (const TorchGeneration generation :
                {TorchGeneration::Torch113, TorchGeneration::Torch26Plus}) {
                const WeightsOnlyVerdict verdict = judgeWeightsOnly(checkpoint, generation);
                const TorchGeneration other = generation == TorchGeneration::Torch113
                    ? TorchGeneration::Torch26Plus
                    : TorchGeneration::Torch113;
                for (const auto* devices : {static_cast<decltype(&elsewhere)>(nullptr), &elsewhere})
                    for (const std::optional<bool> weightsOnly :
                        {std::optional<bool>(), std::optional(true), std::optional(false)}) {
                        // Without a verdict the simulation judges for itself: the reference.
                        const LoadSimulation judged = simulateLoadWithDevices(
                            checkpoint, devices, *machine, {}, generation, {}, weightsOnly);
                        const LoadSimulation given = simulateLoadWithDevices(checkpoint, devices, *machine,
                            {}, generation, KnownWeightsOnlyVerdict {&verdict}, weightsOnly);
                        const LoadSimulation absent = simulateLoadWithDevices(checkpoint, devices, *machine,
                            {}, generation, KnownWeightsOnlyVerdict {}, weightsOnly);
                        // The other generation's verdict is ignored, not used in its place.
                        const WeightsOnlyVerdict otherVerdict = judgeWeightsOnly(checkpoint, other);
                        const LoadSimulation wrongGeneration = simulateLoadWithDevices(checkpoint, devices,
                            *machine, {}, generation, KnownWeightsOnlyVerdict {&otherVerdict}, weightsOnly);
                        for (const LoadSimulation* simulation : {&given, &absent, &wrongGeneration}) {
                            const QString what
                                = QStringLiteral("%1/%2 %3 weights_only=%4 %5")
                                      .arg(QLatin1String(directory), file,
                                          QLatin1String(torchGenerationName(generation)),
                                          weightsOnly ? QString::number(*weightsOnly) : u"default"_qs,
                                          devices ? u"all on cuda:3"_qs : u"as it is"_qs);
                            QVERIFY2(simulation->loads == judged.loads, qPrintable(what));
                            QVERIFY2(simulation->error == judged.error, qPrintable(what));
                            QVERIFY2(simulation->errorType == judged.errorType, qPrintable(what));
                            QVERIFY2(simulation->storages.size() == judged.storages.size(), qPrintable(what));
                            for (std::size_t i = 0; i < judged.storages.size(); ++i) {
                                QVERIFY2(simulation->storages[i].landsOn == judged.storages[i].landsOn,
                                    qPrintable(what));
                                QVERIFY2(simulation->storages[i].error == judged.storages[i].error,
                                    qPrintable(what));
                            }
                        }
                        ++compared;
                        rejectedByVerdict += !judged.loads && !verdict.torchMessage.empty()
                                && judged.error == verdict.torchMessage
                            ? 1
                            : 0;
                        for (const StorageLoadOutcome& outcome : judged.storages)
                            failingStorages += outcome.landsOn ? 0 : 1;
                    }
            }
        }
    }
    // The fixtures reach both paths the verdict decides: a load the weights-only unpickler stops
    // first, and storages that fail to restore.
    QVERIFY2(rejectedByVerdict > 0, qPrintable(QString::number(compared)));
    QVERIFY2(failingStorages > 0, qPrintable(QString::number(compared)));
}

// The table of distinct devices behind the two bytes a storage: a device named again reuses its
// entry, a storage never set stays as recorded, and a plan naming more devices than two bytes can
// index leaves the storages past that as recorded instead of pointing them at another device.
void TestLoadSimulation::storageDevicesKeepDistinctDevices()
{
    StorageDevices devices(70'000);
    QCOMPARE(devices.size(), std::size_t(70'000));
    QVERIFY(devices.set(0, "cuda:1"));
    QVERIFY(devices.set(1, "cpu"));
    QVERIFY(devices.set(2, "cuda:1"));
    QCOMPARE(devices.devices(), (std::vector<std::string> {"cuda:1", "cpu"}));
    QCOMPARE(*devices.of(0), std::string("cuda:1"));
    QCOMPARE(*devices.of(1), std::string("cpu"));
    QCOMPARE(*devices.of(2), std::string("cuda:1"));
    QVERIFY(!devices.of(3));
    QVERIFY(!devices.of(70'000));
    QVERIFY(!devices.set(70'000, "cpu"));
    for (std::uint32_t storage = 3; devices.devices().size() < StorageDevices::kAsRecorded; ++storage)
        QVERIFY(devices.set(storage, "cuda:" + std::to_string(storage)));
    QCOMPARE(devices.devices().size(), std::size_t(StorageDevices::kAsRecorded));
    QVERIFY(!devices.set(69'999, "xpu:0"));
    QVERIFY(!devices.of(69'999));
    QVERIFY(devices.set(69'999, "cpu")); // a device it knows still fits
    QCOMPARE(*devices.of(69'999), std::string("cpu"));
    QCOMPARE(*devices.of(3), std::string("cuda:3"));
}

// A remap rewrites the storages' device tags and nothing else, so the copy a plan writes is the
// file with other devices recorded. Handed the plan as StorageDevices (two bytes a storage), the
// simulation must say exactly what the simulation of that copy says, the checkpoint with a device
// string rewritten into every storage: on every fixture written by real torch, both generations,
// for plans that move every third tensor to a GPU (one the machine has, one it lacks) and every
// third to cpu, under three map_locations and the three weights_only choices.
void TestLoadSimulation::storageDevicesSayWhatTheCopySays()
{
    const auto machine = parseMachineSpec("cuda:0=16GiB,cpu=16GiB");
    QVERIFY(machine);
    const std::vector<MapLocation> mapLocations {
        MapLocation {}, *MapLocation::parse("cpu"), *MapLocation::parse("{'cuda:3': 'cuda:0'}")};
    int compared = 0, movedStorages = 0, failingStorages = 0, changedOutcomes = 0;
    for (const auto* directory : {"torch-1.13", "torch-2"}) {
        const QDir dir(QStringLiteral(CKPT_SOURCE_DIR "/tests/fixtures/") + QLatin1String(directory));
        for (const auto& file : dir.entryList({QStringLiteral("*.pt")}, QDir::Files, QDir::Name)) {
            const Checkpoint checkpoint = readCheckpoint(dir.filePath(file).toStdString());
            for (const char* gpu : {"cuda:0", "cuda:3"}) {
                PlacementPlan plan(checkpoint);
                for (std::uint32_t tensor = 0; tensor < checkpoint.tensors.size(); ++tensor)
                    if (tensor % 3 != 2)
                        plan.apply({PlacementRule::Kind::MoveTensor, checkpoint.tensors[tensor].name.str(),
                            tensor % 3 == 0 ? gpu : "cpu"});
                const StorageDevices devices = StorageDevices::ofPlan(plan, checkpoint.storages.size());
                QCOMPARE(devices.size(), checkpoint.storages.size());
                Checkpoint copy = readCheckpoint(dir.filePath(file).toStdString()); // not copyable
                for (std::uint32_t storage = 0; storage < copy.storages.size(); ++storage) {
                    const std::optional<std::string> planned = plan.plannedDeviceOfStorage(storage);
                    copy.storages[storage].device
                        = planned ? std::optional<InternedString>(*planned) : std::nullopt;
                    movedStorages += devices.of(storage) ? 1 : 0;
                    // Where the plan keeps a storage's device, the compact form says "as recorded".
                    QCOMPARE(devices.of(storage) != nullptr,
                        planned != asTag(checkpoint.storages[storage].device));
                }
                for (const TorchGeneration generation :
                    {TorchGeneration::Torch113, TorchGeneration::Torch26Plus})
                    for (const MapLocation& mapLocation : mapLocations)
                        for (const std::optional<bool> weightsOnly :
                            {std::optional<bool>(), std::optional(true), std::optional(false)}) {
                            const LoadSimulation ofCopy
                                = simulateLoad(copy, *machine, mapLocation, generation, weightsOnly);
                            const LoadSimulation planned = simulateLoadWithDevices(
                                checkpoint, &devices, *machine, mapLocation, generation, {}, weightsOnly);
                            const LoadSimulation asItIs
                                = simulateLoad(checkpoint, *machine, mapLocation, generation, weightsOnly);
                            const QString what
                                = QStringLiteral("%1/%2 %3 map_location=%4 weights_only=%5 plan to %6")
                                      .arg(QLatin1String(directory), file,
                                          QLatin1String(torchGenerationName(generation)),
                                          QString::fromStdString(mapLocation.python()),
                                          weightsOnly ? QString::number(*weightsOnly) : u"default"_qs,
                                          QLatin1String(gpu));
                            QVERIFY2(planned.loads == ofCopy.loads, qPrintable(what));
                            QVERIFY2(planned.error == ofCopy.error, qPrintable(what));
                            QVERIFY2(planned.errorType == ofCopy.errorType, qPrintable(what));
                            QVERIFY2(planned.weightsOnly == ofCopy.weightsOnly, qPrintable(what));
                            QVERIFY2(planned.storages.size() == ofCopy.storages.size(), qPrintable(what));
                            for (std::size_t i = 0; i < ofCopy.storages.size(); ++i) {
                                QVERIFY2(planned.storages[i].storage == ofCopy.storages[i].storage,
                                    qPrintable(what));
                                QVERIFY2(planned.storages[i].landsOn == ofCopy.storages[i].landsOn,
                                    qPrintable(what));
                                QVERIFY2(
                                    planned.storages[i].error == ofCopy.storages[i].error, qPrintable(what));
                                failingStorages += planned.storages[i].landsOn ? 0 : 1;
                                changedOutcomes
                                    += planned.storages[i].landsOn != asItIs.storages[i].landsOn ? 1 : 0;
                            }
                            ++compared;
                        }
            }
        }
    }
    // The plans moved storages, some of them onto the GPU the machine lacks, and changed where
    // storages land compared with the file as it is (a plan the simulation ignored would pass
    // otherwise).
    const QString counts = QStringLiteral("%1 compared, %2 moved, %3 failing, %4 changed")
                               .arg(compared)
                               .arg(movedStorages)
                               .arg(failingStorages)
                               .arg(changedOutcomes);
    qInfo("%s", qPrintable(counts));
    QVERIFY2(movedStorages > 0, qPrintable(counts));
    QVERIFY2(failingStorages > 0, qPrintable(counts));
    QVERIFY2(changedOutcomes > 0, qPrintable(counts));
}

// The app's job reports progress through the simulation and stops it when a newer plan supersedes
// it. A progress callback that always says go on changes nothing and hears of every storage, the
// last report saying all are done; one that says stop at once ends the simulation before it has
// an outcome for any storage.
void TestLoadSimulation::progressCanStopTheSimulation()
{
    const auto machine = parseMachineSpec("cuda:0=16GiB,cpu=16GiB");
    QVERIFY(machine);
    const Checkpoint checkpoint = readCheckpoint(CKPT_SOURCE_DIR "/tests/fixtures/torch-2/devices_cuda1.pt");
    QVERIFY(!checkpoint.storages.empty());
    const std::uint64_t storages = checkpoint.storages.size();
    for (const TorchGeneration generation : {TorchGeneration::Torch113, TorchGeneration::Torch26Plus}) {
        const LoadSimulation unwatched
            = simulateLoadWithDevices(checkpoint, nullptr, *machine, {}, generation);
        std::vector<std::pair<std::uint64_t, std::uint64_t>> reports;
        const LoadSimulation watched = simulateLoadWithDevices(checkpoint, nullptr, *machine, {}, generation,
            {}, std::nullopt, {}, [&reports](std::uint64_t done, std::uint64_t total) {
                reports.emplace_back(done, total);
                return true;
            });
        QCOMPARE(watched.loads, unwatched.loads);
        QCOMPARE(watched.error, unwatched.error);
        QCOMPARE(watched.storages.size(), unwatched.storages.size());
        for (std::size_t i = 0; i < unwatched.storages.size(); ++i) {
            QCOMPARE(watched.storages[i].landsOn, unwatched.storages[i].landsOn);
            QCOMPARE(watched.storages[i].error, unwatched.storages[i].error);
        }
        QVERIFY(reports.size() >= 2);
        QCOMPARE(reports.front(), std::make_pair(std::uint64_t(0), storages));
        QCOMPARE(reports.back(), std::make_pair(storages, storages));

        int asked = 0;
        const LoadSimulation stopped = simulateLoadWithDevices(checkpoint, nullptr, *machine, {}, generation,
            {}, std::nullopt, {}, [&asked](std::uint64_t, std::uint64_t) {
                ++asked;
                return false;
            });
        QCOMPARE(asked, 1);
        QVERIFY(stopped.storages.empty());
        QVERIFY(!stopped.loads);
    }
}

QTEST_GUILESS_MAIN(TestLoadSimulation)
#include "tst_loadsimulation.moc"
