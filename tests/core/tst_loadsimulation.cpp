// The load simulation against real torch: every fixture x a table of map_locations x weights_only
// (default, True, False), loaded by torch 1.13 and by the modern torch on this CPU-only machine.
// Outcome and the full message text (str() of the exception) must match. Rows where torch fails
// for reasons outside the simulation's model are counted and skipped: AttributeError/TypeError/
// NotImplementedError (a class saved from the fixture script's __main__ that the probe cannot
// import, a fixture written by a newer torch than the one loading it, an operator missing for a
// layout), and any other exception type the simulation never claims.
#include "core/devices/deviceinventory.h"
#include "core/read/checkpointreader.h"
#include "core/triage/triage.h"
#include "torchprobe.h"

#include <QDir>
#include <QTest>

using namespace ckpt;

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
};

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
        if (simulation.loads != truth.ok || (!truth.ok && simulated != truth.error))
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

QTEST_GUILESS_MAIN(TestLoadSimulation)
#include "tst_loadsimulation.moc"
