// SPDX-License-Identifier: MIT
// The placement plan's rules and the remap writer's safety, at the core level: a tensor drags its
// storage's other tensors along, later rules win, the plan exports as map_location when it can,
// and a cancelled or refused write leaves nothing behind. Whether torch loads the result is
// checked by tests/cli/tst_remap.cpp with real torch.
#include "core/pickle/pickleemitter.h"
#include "core/plan/placementplan.h"
#include "core/read/checkpointreader.h"
#include "core/write/remapwriter.h"

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <set>

namespace {
// A record's device as the plan's tags are (std::optional<std::string>): compared with an
// OptionalInternedString directly, std::optional's operator== would call two "none" unequal.
std::optional<std::string> asTag(const ckpt::OptionalInternedString& d)
{
    return (d ? std::optional<std::string>(d->str()) : std::nullopt);
}
} // namespace

using namespace ckpt;

namespace {

Checkpoint malformed(const char* name)
{
    // Built opcode by opcode by tests/data/malformed/make_hostile_names.py; never unpickled.
    return readCheckpoint(std::string(CKPT_SOURCE_DIR "/tests/data/malformed/") + name);
}

std::set<std::pair<std::string, std::string>> globalsOf(const Checkpoint& checkpoint)
{
    std::set<std::pair<std::string, std::string>> names;
    for (const PickleSection& section : checkpoint.pickles)
        for (const GlobalReference& global : section.run.globals)
            names.emplace(global.module, global.name);
    return names;
}

Checkpoint fixture(const char* name)
{
    return readCheckpoint(std::string(CKPT_SOURCE_DIR "/tests/fixtures/") + name);
}

PlacementRule rule(PlacementRule::Kind kind, const char* text)
{
    auto parsed = PlacementRule::parse(kind, text);
    return parsed.hasValue() ? *parsed : PlacementRule {};
}

std::int32_t tensorIndex(const Checkpoint& checkpoint, const std::string& name)
{
    for (std::uint32_t t = 0; t < checkpoint.tensors.size(); ++t)
        if (checkpoint.tensors[t].name == name)
            return static_cast<std::int32_t>(t);
    return -1;
}

} // namespace

class TestRemapWriter : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void rulesParse()
    {
        QVERIFY(PlacementRule::parse(PlacementRule::Kind::MapTag, "cuda:1=cuda:0").hasValue());
        QVERIFY(PlacementRule::parse(PlacementRule::Kind::MapTag, "*=cpu").hasValue());
        QVERIFY(PlacementRule::parse(PlacementRule::Kind::MoveTensor, "model.a=b.weight=cuda:1")
                    .hasValue()); // last '=' splits
        QVERIFY(!PlacementRule::parse(PlacementRule::Kind::MapTag, "cuda:1").hasValue());
        QVERIFY(!PlacementRule::parse(PlacementRule::Kind::MapTag, "cuda:1=GPU0").hasValue());
        QVERIFY(!PlacementRule::parse(PlacementRule::Kind::MapTag, "=cpu").hasValue());
    }

    void tensorDragsItsStorageAlong()
    {
        // tied_weights: embed.weight and lm_head.weight share one storage.
        const Checkpoint checkpoint = fixture("torch-2/tied_weights.pt");
        const std::int32_t embed = tensorIndex(checkpoint, "embed.weight");
        const std::int32_t head = tensorIndex(checkpoint, "lm_head.weight");
        QVERIFY(embed >= 0 && head >= 0);
        QCOMPARE(checkpoint.tensors[embed].storage, checkpoint.tensors[head].storage);
        PlacementPlan plan(checkpoint);
        const PlacementChange change
            = plan.apply(rule(PlacementRule::Kind::MoveTensor, "lm_head.weight=cuda:1"));
        QCOMPARE(change.unitsChanged.size(), std::size_t(1));
        QCOMPARE(change.tensorsDraggedAlong, std::vector<std::uint32_t> {static_cast<std::uint32_t>(embed)});
        QCOMPARE(plan.plannedDeviceOfTensor(static_cast<std::uint32_t>(embed)).value_or(""),
            std::string("cuda:1"));
    }

    void laterRulesWinAndMapsUseRecordedTags()
    {
        const Checkpoint checkpoint = fixture("torch-2/devices_mixed.pt");
        PlacementPlan plan(checkpoint);
        plan.apply(rule(PlacementRule::Kind::MapTag, "*=cpu"));
        for (std::uint32_t s = 0; s < checkpoint.storages.size(); ++s)
            QCOMPARE(plan.plannedDeviceOfStorage(s).value_or(""), std::string("cpu"));
        const std::string first(checkpoint.tensors.front().name);
        plan.apply(rule(PlacementRule::Kind::MoveTensor, (first + "=cuda:0").c_str()));
        QCOMPARE(plan.plannedDeviceOfTensor(0).value_or(""), std::string("cuda:0"));
        // A pure mapping no longer: one storage recorded like others goes elsewhere.
        QVERIFY(!plan.asTagMapping().has_value() || !plan.asTagMapping()->empty());

        PlacementPlan mapping(checkpoint);
        mapping.apply(rule(PlacementRule::Kind::MapTag, "cuda:1=cuda:0"));
        mapping.apply(
            rule(PlacementRule::Kind::MapTag, "cuda:0=cpu")); // a dict: cuda:1 is not chained on to cpu
        auto tags = mapping.asTagMapping();
        QVERIFY(tags.has_value());
        QCOMPARE(tags->at("cuda:1"), std::string("cuda:0"));
        QCOMPARE(tags->at("cuda:0"), std::string("cpu"));
        QVERIFY(
            QString::fromStdString(mapping.asPython("f.pt")).contains(QStringLiteral("map_location = {")));
    }

    void moduleRuleTakesThePrefixOnly()
    {
        const Checkpoint checkpoint = fixture("torch-2/training_checkpoint.pt");
        PlacementPlan plan(checkpoint);
        const PlacementChange change
            = plan.apply(rule(PlacementRule::Kind::MoveModule, "model.encoder=cuda:1"));
        QVERIFY(!change.tensorsNamed.empty());
        for (std::uint32_t t : change.tensorsNamed)
            QVERIFY(checkpoint.tensors[t].name.starts_with("model.encoder."));
        for (std::uint32_t t = 0; t < checkpoint.tensors.size(); ++t)
            if (!checkpoint.tensors[t].name.starts_with("model.encoder.")
                && checkpoint.tensors[t].storage >= 0) {
                bool shared = false;
                for (std::uint32_t named : change.tensorsNamed)
                    shared = shared || checkpoint.tensors[named].storage == checkpoint.tensors[t].storage;
                if (!shared)
                    QCOMPARE(plan.plannedDeviceOfTensor(t), asTag(checkpoint.tensors[t].device));
            }
    }

    void metaTensorsStayOnMeta()
    {
        const Checkpoint checkpoint = fixture("torch-2/meta_tensors.pt");
        PlacementPlan plan(checkpoint);
        const PlacementChange change = plan.apply(rule(PlacementRule::Kind::MapTag, "*=cpu"));
        QVERIFY(!change.notes.empty());
        for (std::uint32_t t = 0; t < checkpoint.tensors.size(); ++t)
            if (checkpoint.tensors[t].layout == TensorLayout::Meta)
                QCOMPARE(plan.plannedDeviceOfTensor(t).value_or(""), std::string("meta"));
    }

    void perTensorPlanExportsValidPython()
    {
        const Checkpoint checkpoint = fixture("torch-2/training_checkpoint.pt");
        PlacementPlan plan(checkpoint);
        plan.apply(rule(PlacementRule::Kind::MoveModule, "model.encoder=cuda:1"));
        QVERIFY(!plan.asTagMapping().has_value());
        const QString snippet = QString::fromStdString(plan.asPython("/tmp/model.pt"));
        QVERIFY(snippet.contains(QStringLiteral("'model.encoder.0.weight': 'cuda:1'")));
        QProcess python;
        python.start(QStringLiteral(CKPT_LEGACY_PYTHON),
            {QStringLiteral("-c"), QStringLiteral("import ast, sys; ast.parse(sys.stdin.read())")});
        python.write(snippet.toUtf8());
        python.closeWriteChannel();
        QVERIFY(python.waitForFinished(60'000));
        QVERIFY2(python.exitCode() == 0, python.readAllStandardError().constData());
    }

    void cancelHalfWayLeavesNothing()
    {
        const Checkpoint checkpoint = fixture("torch-2/many_tensors.pt");
        PlacementPlan plan(checkpoint);
        plan.apply(rule(PlacementRule::Kind::MapTag, "*=cuda:0"));
        QTemporaryDir dir;
        const std::string target = QString(dir.path() + QStringLiteral("/out.pt")).toStdString();
        int calls = 0;
        RemapOptions options;
        options.progress = [&](std::uint64_t done, std::uint64_t total) {
            ++calls;
            return done < total / 2;
        };
        const auto result = writeRemappedCopy(checkpoint, plan, target, options);
        QVERIFY(!result.hasValue());
        QVERIFY2(QString::fromStdString(result.error().message).contains(QStringLiteral("cancel")),
            result.error().message.c_str());
        QVERIFY(calls > 1);
        QVERIFY(!QFile::exists(QString::fromStdString(target)));
        QCOMPARE(QDir(dir.path()).entryList(QDir::Files | QDir::Hidden).size(), 0);
    }

    void tarFilesBecomeZipCheckpoints_data()
    {
        QTest::addColumn<QString>("file");
        const QDir corpus(QStringLiteral(CKPT_SOURCE_DIR "/../shared/corpus/files"));
        if (!corpus.exists())
            QSKIP("../shared/corpus/files is not present on this machine");
        // The container is decided by the bytes: several ".pth.tar" files are zips, HDF5 or LFS pointers.
        for (const QString& name : corpus.entryList({QStringLiteral("*.tar")}, QDir::Files))
            if (readCheckpoint(corpus.filePath(name).toStdString()).format == CheckpointFormat::TorchTar)
                QTest::newRow(qPrintable(name)) << corpus.filePath(name);
    }
    void tarFilesBecomeZipCheckpoints()
    {
        // The 0.1.x tar layout is converted to torch.save's zip; torch 1.13 cannot load these
        // hand-made tar files at all, so the check compares the converted file, loaded by torch,
        // with the raw storage bytes of the tar read by tests/remap/check_tar_conversion.py
        // (which never unpickles the tar).
        QFETCH(QString, file);
        const Checkpoint checkpoint = readCheckpoint(file.toStdString());
        QCOMPARE(checkpoint.format, CheckpointFormat::TorchTar);
        PlacementPlan plan(checkpoint);
        plan.apply(rule(PlacementRule::Kind::MapTag, "*=cpu"));
        QTemporaryDir dir;
        const QString output = dir.path() + QStringLiteral("/converted.pt");
        const auto result = writeRemappedCopy(checkpoint, plan, output.toStdString());
        QVERIFY2(result.hasValue(), result.hasValue() ? "" : result.error().message.c_str());
        QProcess python;
        python.start(QStringLiteral(CKPT_LEGACY_PYTHON),
            {QStringLiteral(CKPT_SOURCE_DIR "/tests/remap/check_tar_conversion.py"), file, output});
        QVERIFY(python.waitForFinished(120'000));
        QVERIFY2(python.exitCode() == 0,
            QByteArray(python.readAllStandardError() + python.readAllStandardOutput()).constData());
    }

    // The copy is checked after it is flushed: every storage's bytes read back from disk against
    // the CRC the input's zip records for them. A file torch wrote whose storage byte changed
    // afterwards (the reader does not check CRCs, so it opens cleanly) gives a copy whose bytes
    // differ from the recorded CRC: the check must refuse it and leave nothing behind.
    void copyWithAWrongByteIsRefused()
    {
        QTemporaryDir dir;
        const QString input = dir.path() + QStringLiteral("/input.pt");
        QVERIFY(
            QFile::copy(QStringLiteral(CKPT_SOURCE_DIR "/tests/fixtures/torch-2/many_tensors.pt"), input));
        QVERIFY(QFile::setPermissions(input, QFileDevice::ReadOwner | QFileDevice::WriteOwner));
        std::uint64_t at = 0;
        {
            const Checkpoint original = readCheckpoint(input.toStdString());
            for (const StorageRecord& storage : original.storages)
                if (storage.dataOffset && storage.nbytes > 2)
                    at = *storage.dataOffset + storage.nbytes / 2;
        }
        QVERIFY(at > 0);
        QFile file(input);
        QVERIFY(file.open(QIODevice::ReadWrite));
        QVERIFY(file.seek(static_cast<qint64>(at)));
        char byte = 0;
        QVERIFY(file.getChar(&byte));
        QVERIFY(file.seek(static_cast<qint64>(at)));
        QVERIFY(file.putChar(static_cast<char>(byte ^ 0x40)));
        file.close();

        const Checkpoint checkpoint = readCheckpoint(input.toStdString());
        QVERIFY(!checkpoint.hasErrors());
        PlacementPlan plan(checkpoint);
        plan.apply(rule(PlacementRule::Kind::MapTag, "*=cpu"));
        const std::string target = QString(dir.path() + QStringLiteral("/out.pt")).toStdString();
        const auto result = writeRemappedCopy(checkpoint, plan, target);
        QVERIFY(!result.hasValue());
        QVERIFY2(QString::fromStdString(result.error().message).contains(QStringLiteral("CRC mismatch")),
            result.error().message.c_str());
        QVERIFY(!QFile::exists(QString::fromStdString(target)));
        QCOMPARE(QDir(dir.path()).entryList(QDir::Files | QDir::Hidden).size(), 1);

        // The same file unchanged is copied and checked.
        QVERIFY(QFile::remove(input));
        QVERIFY(
            QFile::copy(QStringLiteral(CKPT_SOURCE_DIR "/tests/fixtures/torch-2/many_tensors.pt"), input));
        const Checkpoint unchanged = readCheckpoint(input.toStdString());
        PlacementPlan unchangedPlan(unchanged);
        unchangedPlan.apply(rule(PlacementRule::Kind::MapTag, "*=cpu"));
        const auto clean = writeRemappedCopy(unchanged, unchangedPlan, target);
        QVERIFY2(clean.hasValue(), clean.hasValue() ? "" : clean.error().message.c_str());
        QVERIFY(clean->verified);
    }

    void refusesToWriteOverTheInput()
    {
        QTemporaryDir dir;
        const QString copy = dir.path() + QStringLiteral("/input.pt");
        QVERIFY(
            QFile::copy(QStringLiteral(CKPT_SOURCE_DIR "/tests/fixtures/torch-2/devices_cuda1.pt"), copy));
        QFile original(copy);
        QVERIFY(original.open(QIODevice::ReadOnly));
        const QByteArray before = original.readAll();
        original.close();
        const Checkpoint checkpoint = readCheckpoint(copy.toStdString());
        PlacementPlan plan(checkpoint);
        plan.apply(rule(PlacementRule::Kind::MapTag, "*=cpu"));
        const auto result = writeRemappedCopy(checkpoint, plan, copy.toStdString());
        QVERIFY(!result.hasValue());
        QVERIFY(QString::fromStdString(result.error().message).contains(QStringLiteral("input")));
        QVERIFY(original.open(QIODevice::ReadOnly));
        QVERIFY(original.readAll() == before);
    }

    // Issue 9: a STACK_GLOBAL whose name holds a newline was re-emitted as a text GLOBAL line,
    // and the copy of a file torch refuses called posix.system, "verified".
    void stackGlobalWithNewlineStaysAStackGlobal()
    {
        const Checkpoint input = malformed("stack_global_newline.pt");
        QVERIFY(!input.hasErrors());
        PlacementPlan plan(input);
        plan.apply(rule(PlacementRule::Kind::MapTag, "cuda:1=cpu"));
        QTemporaryDir dir;
        const QString output = dir.filePath(QStringLiteral("copy.pt"));
        const auto result = writeRemappedCopy(input, plan, output.toStdString());
        QVERIFY2(result.hasValue(), result.hasValue() ? "" : result.error().message.c_str());
        QVERIFY(result->verified);
        QCOMPARE(result->recordsRewritten, std::uint64_t(1));
        const Checkpoint copy = readCheckpoint(output.toStdString());
        QCOMPARE(copy.storages.at(0).device.value_or(""), std::string("cpu"));
        QCOMPARE(globalsOf(copy), globalsOf(input));
        QVERIFY(!globalsOf(copy).count({"posix", "system"}));
        QFile file(output);
        QVERIFY(file.open(QIODevice::ReadOnly));
        QVERIFY(!file.readAll().contains("cposix\nsystem\n"));
        QVERIFY(!QFile::exists(QStringLiteral("/tmp/ckpt-inspector-hostile-marker")));
    }

    // The writer's own check: the copy names only globals the input named, byte for byte. Fed
    // the data.pkl a writer that made the name a GLOBAL line wrote, it refuses and names the call.
    void copyMayNameOnlyTheInputsGlobals()
    {
        const Checkpoint input = malformed("stack_global_newline.pt");
        QFile naive(
            QStringLiteral(CKPT_SOURCE_DIR "/tests/data/malformed/stack_global_newline.naive-copy.pkl"));
        QVERIFY(naive.open(QIODevice::ReadOnly));
        const QByteArray bytes = naive.readAll();
        const ByteView view(
            reinterpret_cast<const std::uint8_t*>(bytes.constData()), static_cast<std::size_t>(bytes.size()));
        const Status refused = checkRewrittenGlobals(input, "stack_global_newline/data.pkl", view, false);
        QVERIFY(refused);
        QVERIFY2(refused->message.find("posix.system") != std::string::npos, refused->message.c_str());
        QVERIFY2(refused->message.find("never names") != std::string::npos, refused->message.c_str());

        // What the emitter writes now passes; so does torch.device only where the writer wrote it.
        PickleEmitter emitter(input.graph);
        const auto emitted = emitter.emit(input.pickles.front().run.root, input.pickles.front().run.protocol);
        QVERIFY(emitted.hasValue());
        QVERIFY(!checkRewrittenGlobals(input, "data.pkl", ByteView(*emitted), false));
        const std::string device("\x80\x02"
                                 "ctorch\ndevice\n"
                                 "X\x03\x00\x00\x00"
                                 "cpu\x85R.",
            27);
        const ByteView deviceView(reinterpret_cast<const std::uint8_t*>(device.data()), device.size());
        QVERIFY(checkRewrittenGlobals(input, "data.pkl", deviceView, false));
        QVERIFY(!checkRewrittenGlobals(input, "data.pkl", deviceView, true));
    }

    void globalWithCarriageReturnIsCopiedExactly()
    {
        const Checkpoint input = malformed("global_carriage_return.pt");
        QVERIFY(globalsOf(input).count({"collections\r", "OrderedDict"}));
        PlacementPlan plan(input);
        plan.apply(rule(PlacementRule::Kind::MapTag, "cuda:1=cpu"));
        QTemporaryDir dir;
        const QString output = dir.filePath(QStringLiteral("copy.pt"));
        const auto result = writeRemappedCopy(input, plan, output.toStdString());
        QVERIFY2(result.hasValue(), result.hasValue() ? "" : result.error().message.c_str());
        QCOMPARE(globalsOf(readCheckpoint(output.toStdString())), globalsOf(input));
    }

    void globalThatIsNotUtf8IsNotRewritten()
    {
        const Checkpoint input = malformed("global_not_utf8.pt");
        PlacementPlan plan(input);
        plan.apply(rule(PlacementRule::Kind::MapTag, "cuda:1=cpu"));
        QTemporaryDir dir;
        const QString output = dir.filePath(QStringLiteral("copy.pt"));
        const auto result = writeRemappedCopy(input, plan, output.toStdString());
        QVERIFY(!result.hasValue());
        QVERIFY2(
            result.error().message.find("not UTF-8") != std::string::npos, result.error().message.c_str());
        QVERIFY(QDir(dir.path()).entryList(QDir::AllEntries | QDir::Hidden | QDir::NoDotAndDotDot).isEmpty());
    }

    // Issue 9: geometry whose byte size overflows was called fine and remapped, "verified".
    void overflowingSizesAreNotCopied_data()
    {
        QTest::addColumn<QString>("file");
        QTest::newRow("stride 2^62") << QStringLiteral("stride_overflow.pt");
        QTest::newRow("numel 2^62") << QStringLiteral("numel_overflow.pt");
    }
    void overflowingSizesAreNotCopied()
    {
        QFETCH(QString, file);
        const Checkpoint input = malformed(file.toUtf8().constData());
        QVERIFY(input.hasErrors());
        PlacementPlan plan(input);
        plan.apply(rule(PlacementRule::Kind::MapTag, "*=cuda:0"));
        QTemporaryDir dir;
        const auto result
            = writeRemappedCopy(input, plan, dir.filePath(QStringLiteral("copy.pt")).toStdString());
        QVERIFY(!result.hasValue());
        QVERIFY2(
            result.error().message.find("overflow") != std::string::npos, result.error().message.c_str());
    }
};

QTEST_APPLESS_MAIN(TestRemapWriter)
#include "tst_remapwriter.moc"
