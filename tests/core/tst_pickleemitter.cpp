// SPDX-License-Identifier: MIT
// The pickle emitter: what it writes must read back to the same values (every sample written by
// CPython, every pickle of every torch-written fixture), use only the opcodes torch's
// weights_only unpickler accepts for torch's own pickles, and change a replaced location tag
// without touching a user string that shared its memo slot.
#include "core/pickle/pickleemitter.h"
#include "core/pickle/picklemachine.h"
#include "core/read/checkpointreader.h"
#include "pickledump.h"

#include <QDir>
#include <QFile>
#include <QTest>

#include <bitset>

using namespace ckpt;
using namespace pickledump;

namespace {

ByteView view(const QByteArray& data)
{
    return {reinterpret_cast<const std::uint8_t*>(data.constData()), static_cast<std::size_t>(data.size())};
}

// torch-format.md §6.3: the opcodes torch's weights_only unpickler accepts.
std::bitset<256> weightsOnlyOpcodes()
{
    std::bitset<256> allowed;
    for (char op : std::string_view("cRbaesu(tN)]}JKMGXUQhjqr."))
        allowed.set(static_cast<unsigned char>(op));
    for (int op : {0x80, 0x81, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8a, 0x8f})
        allowed.set(static_cast<std::size_t>(op));
    return allowed;
}

QStringList fixtureFiles()
{
    QStringList files;
    for (const char* version : {"torch-1.13", "torch-2"}) {
        const QDir dir(QStringLiteral(CKPT_SOURCE_DIR "/tests/fixtures/") + QString::fromLatin1(version));
        for (const QString& name : dir.entryList({QStringLiteral("*.pt")}, QDir::Files, QDir::Name))
            files << dir.filePath(name);
    }
    return files;
}

} // namespace

class TestPickleEmitter : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void samplesRoundTrip_data()
    {
        QTest::addColumn<QString>("file");
        const QDir dir(QStringLiteral(CKPT_SOURCE_DIR "/tests/data/pickle"));
        for (const QString& name : dir.entryList({QStringLiteral("*.pkl")}, QDir::Files, QDir::Name))
            QTest::newRow(qPrintable(name)) << dir.filePath(name);
    }
    void samplesRoundTrip()
    {
        QFETCH(QString, file);
        QFile f(file);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QByteArray data = f.readAll();
        PickleGraph graph;
        const PickleRun run = PickleMachine().run(view(data), graph);
        QVERIFY(run.complete());
        const auto emitted = PickleEmitter(graph).emit(run.root, run.protocol);
        QVERIFY2(emitted.hasValue(), emitted.hasValue() ? "" : emitted.error().message.c_str());
        PickleGraph again;
        const PickleRun rerun = PickleMachine().run(ByteView(*emitted), again);
        QVERIFY2(rerun.complete(), rerun.error ? rerun.error->c_str() : "");
        QCOMPARE(dump(again, rerun.root), dump(graph, run.root));
    }

    void fixturePicklesRoundTrip_data()
    {
        QTest::addColumn<QString>("file");
        const QStringList files = fixtureFiles();
        QVERIFY(files.size() >= 50);
        for (const QString& file : files)
            QTest::newRow(qPrintable(file.section(u'/', -2))) << file;
    }
    void fixturePicklesRoundTrip()
    {
        QFETCH(QString, file);
        const Checkpoint checkpoint = readCheckpoint(file.toStdString());
        QVERIFY(!checkpoint.pickles.empty());
        for (const PickleSection& section : checkpoint.pickles) {
            const auto emitted = PickleEmitter(checkpoint.graph).emit(section.run.root, section.run.protocol);
            QVERIFY2(emitted.hasValue(), emitted.hasValue() ? "" : emitted.error().message.c_str());
            PickleGraph again;
            const PickleRun rerun = PickleMachine().run(ByteView(*emitted), again);
            QVERIFY(rerun.complete());
            QCOMPARE(dump(again, rerun.root), dump(checkpoint.graph, section.run.root));
            // What torch's weights_only loader accepted in the input, it accepts in the output.
            const std::bitset<256> allowed = weightsOnlyOpcodes();
            if ((section.run.opcodesSeen & ~allowed).none())
                QVERIFY2((rerun.opcodesSeen & ~allowed).none(), section.record.c_str());
        }
    }

    void replacedTagLeavesSharedUserStringAlone()
    {
        // memo_hazard_cpu.pt: {"device": "cpu", ...} where the pickler wrote the user's 'cpu' once
        // and the storage's location tag fetches it from the memo.
        for (const char* version : {"torch-1.13", "torch-2"}) {
            const QString path = QStringLiteral(CKPT_SOURCE_DIR "/tests/fixtures/")
                + QString::fromLatin1(version) + QStringLiteral("/memo_hazard_cpu.pt");
            const Checkpoint checkpoint = readCheckpoint(path.toStdString());
            QVERIFY(!checkpoint.storages.empty());
            const StorageRecord& storage = checkpoint.storages.front();
            QCOMPARE(storage.device.value_or(""), std::string("cpu"));
            PickleEmitter emitter(checkpoint.graph);
            for (const StorageRecord& s : checkpoint.storages)
                for (NodeId tuple : s.persistentIdTuples)
                    emitter.replaceItem(tuple, 3, {PickleReplacement::Kind::Text, "cuda:3", kNoNode, {}, 0});
            const auto emitted = emitter.emit(checkpoint.pickles.front().run.root, 2);
            QVERIFY(emitted.hasValue());
            const std::string text(emitted->begin(), emitted->end());
            QVERIFY(text.find("cuda:3") != std::string::npos);
            // The user's string is still written, exactly once more, as 'cpu'.
            QVERIFY(text.find("cpu") != std::string::npos);
            PickleGraph again;
            const PickleRun rerun = PickleMachine().run(ByteView(*emitted), again);
            QVERIFY(rerun.complete());
            const std::string before = dump(checkpoint.graph, checkpoint.pickles.front().run.root);
            const std::string after = dump(again, rerun.root);
            QVERIFY(before != after);
            // Only the tags changed: with them swapped back, the values are identical.
            std::string restored = after;
            const std::string cpuHex = "s637075", cudaHex = "s637564613a33";
            for (std::size_t at = restored.find(cudaHex); at != std::string::npos;
                 at = restored.find(cudaHex, at))
                restored.replace(at, cudaHex.size(), cpuHex);
            QCOMPARE(restored, before);
        }
    }

    // Issue 9: the emitter recursed once per nesting level and overflowed a 2 MiB stack at about
    // 20,000 nested tuples (before that it refused past 20,000 levels). Values nest as deep as
    // the machine reads them; the writer must keep its own stack.
    void deepNestingIsWrittenWithoutRecursion()
    {
        constexpr int kDepth = 250'000;
        PickleGraph graph;
        NodeId value = graph.addScalar(NodeKind::Int, 7);
        const NodeId cls = graph.addGlobal("collections", "OrderedDict");
        for (int level = 0; level < kDepth; ++level) {
            switch (level % 4) {
            case 0:
                value = graph.addTuple(&value, 1);
                break;
            case 1: {
                const NodeId list = graph.addContainer(NodeKind::List);
                graph.ensureBody(list).items.push_back(value);
                value = list;
                break;
            }
            case 2: {
                const NodeId dict = graph.addContainer(NodeKind::Dict);
                const NodeId key = graph.addText(NodeKind::String, "k");
                graph.ensureBody(dict).dictItems = {key, value};
                value = dict;
                break;
            }
            default: {
                const NodeId args = graph.addTuple(&value, 1);
                value = graph.addCall(NodeKind::Call, cls, args);
                break;
            }
            }
        }
        const auto emitted = PickleEmitter(graph).emit(value, 2);
        QVERIFY2(emitted.hasValue(), emitted.hasValue() ? "" : emitted.error().message.c_str());

        PickleGraph again;
        const PickleRun rerun = PickleMachine().run(ByteView(*emitted), again);
        QVERIFY2(rerun.complete(), rerun.error.value_or("").c_str());
        // Walk back down (iteratively): the same kinds at every level, and the 7 at the bottom.
        NodeId node = rerun.root;
        for (int level = kDepth - 1; level >= 0; --level) {
            switch (level % 4) {
            case 0:
                QCOMPARE(again.kind(node), NodeKind::Tuple);
                node = again.tupleItem(node, 0);
                break;
            case 1:
                QCOMPARE(again.kind(node), NodeKind::List);
                node = again.bodyOf(node)->items.at(0);
                break;
            case 2:
                QCOMPARE(again.kind(node), NodeKind::Dict);
                node = again.bodyOf(node)->dictItems.at(1);
                break;
            default:
                QCOMPARE(again.kind(node), NodeKind::Call);
                QCOMPARE(again.calleeName(node), std::string("collections.OrderedDict"));
                node = again.tupleItem(again.arguments(node), 0);
                break;
            }
        }
        QCOMPARE(again.kind(node), NodeKind::Int);
        QCOMPARE(again.intValue(node), std::int64_t(7));
    }

    // Issue 9: a global name a text GLOBAL line cannot carry (a line break, any control
    // character) is written as STACK_GLOBAL and reads back byte for byte; one that is not UTF-8
    // cannot be written by any opcode and is refused. Plain names keep the GLOBAL line.
    void globalNamesAreWrittenFaithfully_data()
    {
        QTest::addColumn<QByteArray>("module");
        QTest::addColumn<QByteArray>("name");
        QTest::addColumn<bool>("textLine");
        QTest::newRow("plain") << QByteArray("torch") << QByteArray("device") << true;
        QTest::newRow("non-ASCII letters") << QByteArray("caf\xc3\xa9") << QByteArray("Cr\xc3\xa8me") << true;
        QTest::newRow("newline in the name")
            << QByteArray("posix") << QByteArray("system\n(Vtouch /tmp/ckpt-inspector-hostile-marker\ntR0V")
            << false;
        QTest::newRow("newline in the module") << QByteArray("torch\nposix") << QByteArray("system") << false;
        QTest::newRow("carriage return") << QByteArray("collections\r") << QByteArray("OrderedDict") << false;
        QTest::newRow("escape") << QByteArray("os\x1b[8m") << QByteArray("system") << false;
        QTest::newRow("NUL") << QByteArray("os\0", 3) << QByteArray("system") << false;
    }
    void globalNamesAreWrittenFaithfully()
    {
        QFETCH(QByteArray, module);
        QFETCH(QByteArray, name);
        QFETCH(bool, textLine);
        PickleGraph graph;
        const NodeId global = graph.addGlobal(module.toStdString(), name.toStdString());
        const auto emitted = PickleEmitter(graph).emit(global, 2);
        QVERIFY2(emitted.hasValue(), emitted.hasValue() ? "" : emitted.error().message.c_str());
        const std::string bytes(emitted->begin(), emitted->end());
        QCOMPARE(bytes[2] == 'c', textLine);
        PickleGraph again;
        const PickleRun rerun = PickleMachine().run(ByteView(*emitted), again);
        QVERIFY2(rerun.complete(), rerun.error.value_or("").c_str());
        QCOMPARE(rerun.globals.size(), std::size_t(1));
        QCOMPARE(QByteArray::fromStdString(rerun.globals[0].module), module);
        QCOMPARE(QByteArray::fromStdString(rerun.globals[0].name), name);
        QCOMPARE(rerun.opcodesSeen.test(0x93), !textLine);
    }

    void globalThatIsNotUtf8IsRefused()
    {
        PickleGraph graph;
        const NodeId global = graph.addGlobal("collections\xff", "OrderedDict");
        const auto emitted = PickleEmitter(graph).emit(global, 2);
        QVERIFY(!emitted.hasValue());
        QVERIFY2(
            emitted.error().message.find("not UTF-8") != std::string::npos, emitted.error().message.c_str());
        QVERIFY2(emitted.error().message.find("\\xff") != std::string::npos, emitted.error().message.c_str());
    }

    // Without recursion the writer must still stop on a cycle the memo cannot break (it would grow
    // its work list for ever), and must not mistake a scalar referenced many times for one.
    void cyclesStopAndSharedScalarsDoNot()
    {
        PickleGraph graph;
        const NodeId frozen = graph.addContainer(NodeKind::FrozenSet);
        const NodeId list = graph.addContainer(NodeKind::List);
        graph.ensureBody(frozen).items.push_back(list);
        graph.ensureBody(list).items.push_back(frozen);
        const auto cyclic = PickleEmitter(graph).emit(frozen, 2);
        QVERIFY(!cyclic.hasValue());
        QVERIFY2(cyclic.error().message.find("refer to themselves") != std::string::npos,
            cyclic.error().message.c_str());

        PickleGraph shared;
        const NodeId one = shared.addScalar(NodeKind::Int, 1);
        const NodeId many = shared.addContainer(NodeKind::List);
        shared.ensureBody(many).items.assign(100'000, one);
        const auto emitted = PickleEmitter(shared).emit(many, 2);
        QVERIFY2(emitted.hasValue(), emitted.hasValue() ? "" : emitted.error().message.c_str());
        PickleGraph again;
        const PickleRun rerun = PickleMachine().run(ByteView(*emitted), again);
        QVERIFY(rerun.complete());
        QCOMPARE(again.bodyOf(rerun.root)->items.size(), std::size_t(100'000));
    }

    // None, booleans and small ints have no node of their own (their value is their id): equal
    // ints share an id, and the writer must still write each where it stands, never from the memo,
    // with the opcode its value asks for, as CPython's pickler does.
    void inlineScalarsAreWrittenAsBefore()
    {
        const QByteArray input = QByteArray::fromHex("8002"
                                                     "28" // MARK
                                                     "4b05"
                                                     "4b05"
                                                     "4e"
                                                     "88"
                                                     "89" // 5, 5, None, True, False
                                                     "4d2c01" // 300
                                                     "4a70110100" // 70,000
                                                     "4affffffff" // -1
                                                     "4a00000020" // 2**29 (a node)
                                                     "4b05" // 5 again
                                                     "74" // TUPLE
                                                     "2e");
        PickleGraph graph;
        const PickleRun run = PickleMachine().run(view(input), graph);
        QVERIFY2(run.complete(), run.error ? run.error->c_str() : "");
        QCOMPARE(graph.tupleItem(run.root, 0), graph.tupleItem(run.root, 1)); // one id for both 5s
        const auto emitted = PickleEmitter(graph).emit(run.root, 2);
        QVERIFY2(emitted.hasValue(), emitted.hasValue() ? "" : emitted.error().message.c_str());
        QCOMPARE(QByteArray(
                     reinterpret_cast<const char*>(emitted->data()), static_cast<qsizetype>(emitted->size())),
            input);
    }
};

QTEST_APPLESS_MAIN(TestPickleEmitter)
#include "tst_pickleemitter.moc"
