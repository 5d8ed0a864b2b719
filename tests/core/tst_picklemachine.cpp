// SPDX-License-Identifier: MIT
// The symbolic pickle machine on its own: pickles written by CPython's pickler (protocols 0-5,
// tests/data/pickle/make_pickle_samples.py) must read back to the same values Python loads, and
// truncated, corrupt or hostile pickles must stop with a message, never crash or run anything.
#include "core/base/textformat.h"
#include "core/pickle/bufferedframes.h"
#include "core/pickle/picklemachine.h"
#include "pickledump.h"
#include "tests/common/testfiles.h"

#include <QDir>
#include <QFile>
#include <QRandomGenerator>
#include <QTest>

#include <algorithm>
#include <cstdio>

using namespace ckpt::testing;

using namespace ckpt;
using namespace pickledump;

namespace {

ByteView view(const QByteArray& data)
{
    return {reinterpret_cast<const std::uint8_t*>(data.constData()), static_cast<std::size_t>(data.size())};
}

// A byte-string literal as a QByteArray, NULs included.
template<std::size_t N> QByteArray bytes(const char (&literal)[N])
{
    return QByteArray(literal, static_cast<qsizetype>(N - 1));
}

QString dataDir()
{
    return QStringLiteral(CKPT_SOURCE_DIR "/tests/data/pickle");
}

} // namespace

class TestPickleMachine : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void readsWhatPythonWrote_data()
    {
        QTest::addColumn<QString>("file");
        const QStringList files
            = QDir(dataDir()).entryList({QStringLiteral("*.pkl")}, QDir::Files, QDir::Name);
        QVERIFY2(files.size() >= 30,
            "the pickle samples are missing: run tests/data/pickle/make_pickle_samples.py");
        for (const QString& file : files)
            QTest::newRow(qPrintable(file)) << file;
    }
    void readsWhatPythonWrote()
    {
        QFETCH(QString, file);
        const QByteArray data = readAll(dataDir() + u'/' + file);
        QString expectedPath = dataDir() + u'/' + file;
        expectedPath.replace(QStringLiteral(".pkl"), QStringLiteral(".expected"));
        const QByteArray expected = readAll(expectedPath).trimmed();
        QVERIFY(!data.isEmpty());
        QVERIFY(!expected.isEmpty());

        PickleGraph graph;
        const PickleRun run = PickleMachine().run(view(data), graph);
        QVERIFY2(run.complete(), run.error ? run.error->c_str() : "no root");
        QCOMPARE(run.endOffset, static_cast<std::uint64_t>(data.size()));
        QCOMPARE(QByteArray::fromStdString(dump(graph, run.root)), expected);
        const int protocol = file.section(u'.', -2, -2).mid(1).toInt();
        if (protocol >= 2)
            QCOMPARE(run.protocol, protocol);
    }

    void memoReferencesKeepIdentity()
    {
        // {"first": L, "second": L, "device": "cpu", "again": "cpu"}: the pickler memoizes L and the
        // interned 'cpu' once; the graph must give the same node back, which is what lets the
        // remap writer un-share a location string from user data later.
        for (int protocol = 0; protocol <= 5; ++protocol) {
            const QByteArray data = readAll(dataDir() + QStringLiteral("/shared.p%1.pkl").arg(protocol));
            PickleGraph graph;
            const PickleRun run = PickleMachine().run(view(data), graph);
            QVERIFY(run.complete());
            const ContainerBody* body = graph.bodyOf(run.root);
            QVERIFY(body);
            QCOMPARE(body->dictItems.size(), std::size_t(8));
            QCOMPARE(body->dictItems[1], body->dictItems[3]);
            QCOMPARE(body->dictItems[5], body->dictItems[7]);
        }
    }

    void everyTruncationStopsWithAMessage_data()
    {
        QTest::addColumn<QString>("file");
        for (const char* name : {"scalars.p0.pkl", "scalars.p2.pkl", "strings.p0.pkl", "strings.p4.pkl",
                 "containers.p1.pkl", "containers.p5.pkl", "shared.p3.pkl", "state_dict_like.p2.pkl"})
            QTest::newRow(name) << QString::fromLatin1(name);
    }
    void everyTruncationStopsWithAMessage()
    {
        QFETCH(QString, file);
        const QByteArray data = readAll(dataDir() + u'/' + file);
        QVERIFY(!data.isEmpty());
        for (qsizetype cut = 0; cut < data.size(); ++cut) {
            PickleGraph graph;
            const QByteArray truncated = data.left(cut);
            const PickleRun run = PickleMachine().run(view(truncated), graph);
            QVERIFY2(!run.complete(), qPrintable(QStringLiteral("cut at %1 was read as complete").arg(cut)));
            QVERIFY(run.error.has_value());
            QVERIFY(!run.error->empty());
            QVERIFY(run.errorOffset <= static_cast<std::uint64_t>(cut));
        }
    }

    void randomBytesNeverCrash()
    {
        QRandomGenerator random(20261121);
        for (int i = 0; i < 3000; ++i) {
            QByteArray data(1 + random.bounded(200), Qt::Uninitialized);
            for (auto& c : data)
                c = static_cast<char>(random.bounded(256));
            if (i % 2)
                data.prepend("\x80\x02", 2);
            PickleGraph graph;
            PickleLimits limits;
            limits.maxStackDepth = 10'000;
            limits.maxNodes = 100'000;
            const PickleRun run = PickleMachine(limits).run(view(data), graph);
            QVERIFY(run.complete() || run.error.has_value());
        }
    }

    void mutatedSamplesNeverCrash()
    {
        const QByteArray original = readAll(dataDir() + QStringLiteral("/containers.p2.pkl"));
        QRandomGenerator random(7);
        for (int i = 0; i < 2000; ++i) {
            QByteArray data = original;
            for (int k = 0; k < 3; ++k)
                data[random.bounded(data.size())] = static_cast<char>(random.bounded(256));
            PickleGraph graph;
            const PickleRun run = PickleMachine().run(view(data), graph);
            QVERIFY(run.complete() || run.error.has_value());
        }
    }

    void limitsAreEnforced_data()
    {
        QTest::addColumn<QByteArray>("pickle");
        QTest::addColumn<QString>("expectedWords");
        QTest::newRow("deep marks") << QByteArray(200'000, '(') << QStringLiteral("MARK");
        QTest::newRow("huge LONG4") << QByteArray("\x80\x02\x8b\xd0\x07\x00\x00", 7)
                + QByteArray(2000, '\x01')
                + '.' << QStringLiteral("limit");
        QTest::newRow("LONG4 past the end")
            << QByteArray("\x80\x02\x8b\xff\xff\xff\x7f", 7) << QStringLiteral("truncated");
        QTest::newRow("unknown memo") << QByteArray("\x80\x02h\x05.", 5) << QStringLiteral("never stored");
        QTest::newRow("not an opcode")
            << QByteArray("\x80\x02\xff.", 4) << QStringLiteral("not a pickle opcode");
        QTest::newRow("protocol 9") << QByteArray("\x80\x09N.", 4) << QStringLiteral("protocol 9");
        QTest::newRow("stack underflow") << QByteArray("\x80\x02R.", 4) << QStringLiteral("stack is empty");
        QTest::newRow("string past end") << QByteArray("\x80\x02X\xff\xff\x00\x00"
                                                       "abc",
            10) << QStringLiteral("truncated");
        QTest::newRow("stack global of ints")
            << QByteArray("\x80\x04K\x01K\x02\x93.", 8) << QStringLiteral("two strings");
        QByteArray manyLists;
        for (int i = 0; i < 20'000; ++i)
            manyLists += ']';
        QTest::newRow("stack depth") << manyLists << QStringLiteral("stack");
    }
    void limitsAreEnforced()
    {
        QFETCH(QByteArray, pickle);
        QFETCH(QString, expectedWords);
        PickleLimits limits;
        limits.maxMarkDepth = 1000;
        limits.maxStackDepth = 10'000;
        limits.maxIntegerBytes = 1024;
        PickleGraph graph;
        const PickleRun run = PickleMachine(limits).run(view(pickle), graph);
        QVERIFY(!run.complete());
        QVERIFY(run.error.has_value());
        QVERIFY2(QString::fromStdString(*run.error).contains(expectedWords), run.error->c_str());
    }

    void memoKeysFarApartAndRewrittenReadBack()
    {
        // Built opcode by opcode (no pickler writes these): LONG_BINPUT keys 4,000,000,000 (far past
        // any dense range), 0 and 1; key 0 stored twice (the second wins, as in Python's memo); then
        // a list of the three memo entries. MEMOIZE afterwards numbers by the entry count (3).
        QByteArray pickle("\x80\x04", 2);
        pickle += QByteArray("K\x07r\x00\x28\x6b\xee", 7); // BININT1 7, LONG_BINPUT 4000000000
        pickle += QByteArray("0K\x08r\x00\x00\x00\x00", 8); // POP, BININT1 8, LONG_BINPUT 0
        pickle += QByteArray("0K\x09r\x00\x00\x00\x00", 8); // POP, BININT1 9, LONG_BINPUT 0 (again)
        pickle += QByteArray("0K\x0ar\x01\x00\x00\x00", 8); // POP, BININT1 10, LONG_BINPUT 1
        pickle += QByteArray("0K\x0b\x94", 4); // POP, BININT1 11, MEMOIZE (key 3)
        pickle += QByteArray("0(j\x00\x28\x6b\xeej\x00\x00\x00\x00j\x01\x00\x00\x00j\x03\x00\x00\x00l.", 24);
        PickleGraph graph;
        const PickleRun run = PickleMachine().run(view(pickle), graph);
        QVERIFY2(run.complete(), run.error ? run.error->c_str() : "");
        const std::vector<NodeId> items = graph.sequence(run.root);
        QCOMPARE(items.size(), std::size_t(4));
        QCOMPARE(graph.intValue(items[0]), std::int64_t(7));
        QCOMPARE(graph.intValue(items[1]), std::int64_t(9));
        QCOMPARE(graph.intValue(items[2]), std::int64_t(10));
        QCOMPARE(graph.intValue(items[3]), std::int64_t(11));

        // The entry limit counts far keys and near keys alike.
        PickleLimits limits;
        limits.maxMemoEntries = 2;
        PickleGraph limited;
        const PickleRun stopped = PickleMachine(limits).run(view(pickle), limited);
        QVERIFY(!stopped.complete());
        QVERIFY2(stopped.error->find("memo grows past") != std::string::npos, stopped.error->c_str());
    }

    void graphsPastOneChunkKeepEveryNode()
    {
        // 200,000 ints appended to one list: the graph's nodes span several of its fixed chunks,
        // and each node must read back as written. (Ints of 30 bits have no node: these are wider.)
        QByteArray pickle("\x80\x02](", 4);
        for (int i = 0; i < 200'000; ++i) {
            pickle += 'J';
            const std::int32_t value = (1 << 30) + i * 3 - 7;
            pickle += QByteArray(reinterpret_cast<const char*>(&value), 4); // little-endian hosts
        }
        pickle += "e.";
        PickleGraph graph;
        const PickleRun run = PickleMachine().run(view(pickle), graph);
        QVERIFY2(run.complete(), run.error ? run.error->c_str() : "");
        QVERIFY(graph.size() > 200'000);
        const std::vector<NodeId> items = graph.sequence(run.root);
        QCOMPARE(items.size(), std::size_t(200'000));
        for (std::size_t i = 0; i < items.size(); ++i)
            if (graph.intValue(items[i]) != (std::int64_t(1) << 30) + static_cast<std::int64_t>(i) * 3 - 7)
                QFAIL(qPrintable(QStringLiteral("item %1 reads back wrong").arg(i)));
    }

    void smallScalarsHaveNoNode()
    {
        // None, True, False and ints of 30 bits are encoded in their ids: the list below costs one
        // node for itself and one for each int outside [-2**29, 2**29), and every accessor still
        // reads each value as written.
        const std::int64_t values[] = {
            0, 1, -1, 255, 65'535, (1 << 29) - 1, -(1 << 29), 1 << 29, -(1 << 29) - 1, INT32_MAX, INT32_MIN};
        QByteArray pickle = bytes("\x80\x02](NI01\nI00\n\x88\x89");
        for (const std::int64_t value : values) {
            pickle += 'J';
            const auto bits = static_cast<std::int32_t>(value);
            pickle += QByteArray(reinterpret_cast<const char*>(&bits), 4); // little-endian hosts
        }
        pickle += "e.";
        PickleGraph graph;
        const PickleRun run = PickleMachine().run(view(pickle), graph);
        QVERIFY2(run.complete(), run.error ? run.error->c_str() : "");
        QCOMPARE(graph.size(), std::size_t(1 + 4)); // the list, and 1 << 29, -(1 << 29) - 1, INT32_MAX/MIN
        const std::vector<NodeId> items = graph.sequence(run.root);
        QCOMPARE(items.size(), std::size_t(5 + std::size(values)));
        QCOMPARE(graph.kind(items[0]), NodeKind::None);
        QCOMPARE(graph.kind(items[1]), NodeKind::Bool);
        QCOMPARE(graph.intValue(items[1]), std::int64_t(1));
        QCOMPARE(graph.kind(items[2]), NodeKind::Bool);
        QCOMPARE(graph.intValue(items[2]), std::int64_t(0));
        QCOMPARE(graph.intValue(items[3]), std::int64_t(1));
        QCOMPARE(graph.intValue(items[4]), std::int64_t(0));
        for (std::size_t i = 0; i < std::size(values); ++i) {
            const NodeId id = items[5 + i];
            QCOMPARE(graph.kind(id), NodeKind::Int);
            QVERIFY(graph.isInt(id));
            QCOMPARE(graph.intValue(id), values[i]);
            QCOMPARE(graph.floatValue(id), static_cast<double>(values[i]));
            QVERIFY(graph.holds(id));
            QCOMPARE(graph.flags(id), std::uint8_t(FlagNone));
            QCOMPARE(graph.text(id), std::string_view());
            QCOMPARE(graph.tupleSize(id), std::size_t(0));
            QCOMPARE(graph.tupleItem(id, 0), kNoNode);
            QCOMPARE(graph.callee(id), kNoNode);
            QVERIFY(graph.bodyOf(id) == nullptr);
            QVERIFY(graph.sequence(id).empty());
        }
        for (int i = 0; i < 5; ++i) {
            QVERIFY(PickleGraph::isInline(items[i]));
            QVERIFY(items[i] != kNoNode);
        }
        QVERIFY(!graph.holds(kNoNode));
        QCOMPARE(graph.kind(kNoNode), NodeKind::None);
        QCOMPARE(graph.intValue(kNoNode), std::int64_t(0));
        QVERIFY(!graph.holds(static_cast<NodeId>(graph.size())));
    }

    void tuplesAndTextPastOneChunkReadBack()
    {
        // Tuple items and text live in fixed chunks, long ones in blocks of their own: 30,000
        // tuples of three strings cross many chunks (none straddles two), one tuple of 5,000
        // items and one text of 100,000 bytes do not fit one, and each reads back as written.
        QByteArray pickle("\x80\x02](", 4);
        auto text = [](int i) { return QByteArray(QByteArray("name.") + QByteArray::number(i)); };
        for (int i = 0; i < 30'000; ++i) {
            for (int k = 0; k < 3; ++k) {
                const QByteArray item = text(i * 3 + k);
                pickle += 'X';
                const auto length = static_cast<std::uint32_t>(item.size());
                pickle += QByteArray(reinterpret_cast<const char*>(&length), 4);
                pickle += item;
            }
            pickle += '\x87'; // TUPLE3
        }
        pickle += '(';
        for (int i = 0; i < 5'000; ++i) {
            pickle += 'J';
            const std::int32_t value = INT32_MAX - i;
            pickle += QByteArray(reinterpret_cast<const char*>(&value), 4);
        }
        pickle += 't';
        const QByteArray big(100'000, 'x');
        pickle += 'X';
        const auto bigLength = static_cast<std::uint32_t>(big.size());
        pickle += QByteArray(reinterpret_cast<const char*>(&bigLength), 4);
        pickle += big;
        pickle += "ce\nf\n"; // a GLOBAL after them
        pickle += "e.";
        PickleGraph graph;
        const PickleRun run = PickleMachine().run(view(pickle), graph);
        QVERIFY2(run.complete(), run.error ? run.error->c_str() : "");
        const std::vector<NodeId> items = graph.sequence(run.root);
        QCOMPARE(items.size(), std::size_t(30'000 + 3));
        for (int i = 0; i < 30'000; ++i) {
            const NodeId tuple = items[static_cast<std::size_t>(i)];
            if (graph.tupleSize(tuple) != 3)
                QFAIL(qPrintable(QStringLiteral("tuple %1 has the wrong size").arg(i)));
            for (int k = 0; k < 3; ++k)
                if (graph.text(graph.tupleItem(tuple, static_cast<std::size_t>(k)))
                    != text(i * 3 + k).toStdString())
                    QFAIL(qPrintable(QStringLiteral("tuple %1 item %2 reads back wrong").arg(i).arg(k)));
            if (graph.sequence(tuple).size() != 3)
                QFAIL("sequence of a small tuple");
        }
        const NodeId wide = items[30'000];
        QCOMPARE(graph.tupleSize(wide), std::size_t(5'000));
        const std::vector<NodeId> wideItems = graph.sequence(wide);
        for (std::size_t i = 0; i < 5'000; ++i) {
            QCOMPARE(graph.intValue(wideItems[i]), std::int64_t(INT32_MAX) - static_cast<std::int64_t>(i));
            QCOMPARE(graph.tupleItem(wide, i), wideItems[i]);
        }
        QCOMPARE(graph.text(items[30'001]), std::string_view(big.constData(), big.size()));
        QCOMPARE(graph.qualifiedName(items[30'002]), std::string("e.f"));
    }

    void hostileReduceIsOnlyANode()
    {
        // What "python -c 'import pickle, os; class E: __reduce__ = lambda s: (os.system, ("echo pwned",))'"
        // writes (protocol 2): GLOBAL 'posix system', the argument tuple, REDUCE.
        static const char raw[] = "\x80\x02"
                                  "cposix\nsystem\nq\x00X\x0a\x00\x00\x00"
                                  "echo pwnedq\x01\x85q\x02Rq\x03.";
        const QByteArray pickle(raw, sizeof(raw) - 1);
        PickleGraph graph;
        const PickleRun run = PickleMachine().run(view(pickle), graph);
        QVERIFY2(run.complete(), run.error ? run.error->c_str() : "");
        QCOMPARE(graph.kind(run.root), NodeKind::Call);
        QCOMPARE(graph.calleeName(run.root), std::string("posix.system"));
        QCOMPARE(run.globals.size(), std::size_t(1));
        QCOMPARE(run.globals[0].module, std::string("posix"));
        QCOMPARE(run.globals[0].offset, std::uint64_t(2));
    }

    void pythonTwoStringsThatAreNotUtf8AreFlagged()
    {
        // Python 2's cPickle, protocol 2: {'owner': 'caf\xe9!'} with a Latin-1 str (SHORT_BINSTRING),
        // which torch.load's default encoding='utf-8' refuses. The expected reason is CPython's.
        static const char raw[] = "\x80\x02}q\x01U\x05ownerq\x02U\x05"
                                  "caf\xe9!q\x03s.";
        const QByteArray pickle(raw, sizeof(raw) - 1);
        PickleGraph graph;
        const PickleRun run = PickleMachine().run(view(pickle), graph);
        QVERIFY2(run.complete(), run.error ? run.error->c_str() : "");
        QCOMPARE(run.undecodableStringOffset, std::optional<std::uint64_t>(14));
        QCOMPARE(run.undecodableStringError,
            std::string("'utf-8' codec can't decode byte 0xe9 in position 3: invalid continuation byte"));
    }

    void utf8DecodeErrorsSayWhatPythonSays_data()
    {
        // Messages printed by python3 for bytes.decode('utf-8') of each input.
        QTest::addColumn<QByteArray>("bytes");
        QTest::addColumn<QString>("error");
        QTest::newRow("valid") << QByteArray("caf\xc3\xa9") << QString();
        QTest::newRow("end") << QByteArray("caf\xe9")
                             << u"byte 0xe9 in position 3: unexpected end of data"_qs;
        QTest::newRow("continuation")
            << QByteArray("caf\xe9!") << u"byte 0xe9 in position 3: invalid continuation byte"_qs;
        QTest::newRow("start") << QByteArray("\x80"
                                             "abc")
                               << u"byte 0x80 in position 0: invalid start byte"_qs;
        QTest::newRow("two") << QByteArray("ab\xe2\x82")
                             << u"bytes in position 2-3: unexpected end of data"_qs;
        QTest::newRow("surrogate") << QByteArray("\xed\xa0\x80")
                                   << u"byte 0xed in position 0: invalid continuation byte"_qs;
        QTest::newRow("overlong") << QByteArray("\xc0\xaf")
                                  << u"byte 0xc0 in position 0: invalid start byte"_qs;
    }
    void utf8DecodeErrorsSayWhatPythonSays()
    {
        QFETCH(QByteArray, bytes);
        QFETCH(QString, error);
        const auto got
            = pythonUtf8DecodeError(std::string_view(bytes.constData(), std::size_t(bytes.size())));
        if (error.isEmpty()) {
            QVERIFY(!got);
            return;
        }
        QVERIFY(got);
        QCOMPARE(QString::fromStdString(*got), u"'utf-8' codec can't decode "_qs + error);
    }

    void terminalEscapesAreStripped()
    {
        QCOMPARE(stripAnsiEscapes("two options, \033[1mdo those steps only\033[0m. \n\t(1)"),
            std::string("two options, do those steps only. \n\t(1)"));
        QCOMPARE(stripAnsiEscapes("plain"), std::string("plain"));
    }

    // Issue 24: what CPython's unpicklers read, the machine reads (the union of _pickle and
    // pickle.py, Python 3.11 and 3.14: either can be the loader). Each row is a protocol-0 value
    // and what CPython loads it to; tests/tools/pickle_differential.py checks the same against the
    // real interpreters, and tests/hostile/families/machine_strictness.py puts a payload behind each.
    void readsWhatCPythonReads_data()
    {
        QTest::addColumn<QByteArray>("pickle");
        QTest::addColumn<QString>("expected");
        auto row = [](const char* name, const QByteArray& pickle, const char* expected) {
            QTest::newRow(name) << pickle << QString::fromLatin1(expected);
        };
        // Integer text: int(x, 0) (pickle.py 3.11), int(x) (3.14), strtol and PyLong_FromString
        // (_pickle), which read a C string: a NUL ends the number.
        row("INT hex", bytes("I0x1f\n."), "i31");
        row("INT octal prefix", bytes("I0o17\n."), "i15");
        row("INT binary", bytes("I0b101\n."), "i5");
        row("INT underscores", bytes("I1_000\n."), "i1000");
        row("INT spaces", bytes("I 12 \n."), "i12");
        row("INT tab and CR", bytes("I\t7\r\n."), "i7");
        row("INT plus", bytes("I+12\n."), "i12");
        row("INT negative hex", bytes("I-0x10\n."), "i-16");
        row("INT strtol octal", bytes("I010\n."), "i8");
        row("INT NUL ends it", bytes("I7\0junk\n."), "i7");
        row("INT 00 is False", bytes("I00\n."), "False");
        row("INT 01 is True", bytes("I01\n."), "True");
        row("INT wide hex", "I0x" + QByteArray(40, 'f') + "\n.",
            "i1461501637330902918203684832716283019655932542975");
        row("INT wide decimal", bytes("I123456789012345678901234567890\n."),
            "i123456789012345678901234567890");
        row("LONG hex with L", bytes("L0x10L\n."), "i16");
        row("LONG sign and space", bytes("L +5L\n."), "i5");
        row("LONG negative wide", bytes("L-99999999999999999999L\n."), "i-99999999999999999999");
        row("LONG binary", "L0b" + QByteArray(70, '1') + "\n.", "i1180591620717411303423");
        row("LONG NUL", bytes("L12\0xyz\n."), "i12");
        row("LONG 0_0", bytes("L0_0\n."), "i0");
        // Memo keys: int(x) or PyLong_FromString(x, 10); pickle.py's memo takes any int.
        row("PUT/GET spaced", bytes("K\x05p 3\n0g+3\n."), "i5");
        row("PUT/GET underscores and zeros", bytes("K\x05p1_0\n0g010\n."), "i5");
        row("PUT/GET NUL", bytes("K\x05p4\0x\n0g4\n."), "i5");
        row("PUT/GET wider than 64 bits",
            bytes("K\x05p99999999999999999999999\n0g099999999999999999999999\n."), "i5");
        row("MEMOIZE after a wide key",
            bytes("K\x05p99999999999999999999999\n0K\x06\x94"
                  "0h\x01."),
            "i6");
        // Opcodes on values that are not lists, dicts or objects, where CPython accepts them.
        row("BUILD None on int", bytes("K\x05Nb."), "i5");
        row("BUILD (None, None) on str",
            bytes("V\nNN\x86"
                  "b."),
            "s");
        row("BUILD empty dict on tuple", bytes(")}b."), "()");
        row("BUILD (None, empty dict) on list",
            bytes("]N}\x86"
                  "b."),
            "[]");
        row("empty APPENDS on int", bytes("K\x05(e."), "i5");
        row("empty SETITEMS on str", bytes("Vx\n(u."), "s78");
        row("empty ADDITEMS on tuple", bytes(")(\x90."), "()");
        row("SETITEM on list", bytes("(K\x01lK\x00K\x02s."), "[i1]");
        row("APPEND to bytearray",
            bytes("\x96\x01\x00\x00\x00\x00\x00\x00\x00"
                  "aK\x05"
                  "a."),
            "b61");
        row("ADDITEMS to a set", bytes("\x8f(K\x01\x90."), "{i1}");
    }
    void readsWhatCPythonReads()
    {
        QFETCH(QByteArray, pickle);
        QFETCH(QString, expected);
        PickleGraph graph;
        const PickleRun run = PickleMachine().run(view(pickle), graph);
        QVERIFY2(run.complete(), run.error.value_or("").c_str());
        QCOMPARE(QString::fromStdString(dump(graph, run.root)), expected);
    }

    // And where both of CPython's unpicklers stop, the machine stops too (and says why).
    void refusesWhatCPythonRefuses_data()
    {
        QTest::addColumn<QByteArray>("pickle");
        QTest::addColumn<QString>("expectedWords");
        auto row = [](const char* name, const QByteArray& pickle, const char* words) {
            QTest::newRow(name) << pickle << QString::fromLatin1(words);
        };
        row("INT empty", bytes("I\n."), "not an integer");
        row("INT double underscore", bytes("I1__0\n."), "not an integer");
        row("INT trailing L", bytes("I12L\n."), "not an integer");
        row("INT float text", bytes("I1e3\n."), "not an integer");
        row("LONG lone L", bytes("LL\n."), "not an integer");
        row("GET hex key", bytes("K\x05p1\n0g0x1\n."), "memo key");
        row("PUT negative key", bytes("K\x05p-1\n."), "negative");
        row("INT too many decimal digits", "I" + QByteArray(4301, '7') + "\n.", "4,300");
        row("APPEND to int",
            bytes("K\x05K\x06"
                  "a."),
            "append");
        row("APPENDS to dict",
            bytes("}(K\x01"
                  "e."),
            "append");
        row("SETITEM on tuple", bytes(")K\x01K\x02s."), "__setitem__");
        row("ADDITEMS on frozenset", bytes("(\x91(K\x01\x90."), "add");
        row("BUILD dict state on int", bytes("K\x05}K\x01K\x02sb."), "no attributes");
        row("BUILD slot state on str",
            bytes("Vxy\nN}K\x01K\x02s\x86"
                  "b."),
            "no attributes");
    }
    void refusesWhatCPythonRefuses()
    {
        QFETCH(QByteArray, pickle);
        QFETCH(QString, expectedWords);
        PickleGraph graph;
        const PickleRun run = PickleMachine().run(view(pickle), graph);
        QVERIFY(!run.complete());
        QVERIFY2(QString::fromStdString(*run.error).contains(expectedWords), run.error->c_str());
    }

    // APPEND, SETITEM or BUILD on a GLOBAL changes the loading process itself (sys.path.append,
    // os.environ[...] = ...): recorded, so the verdict can say it cannot verify what follows.
    void changesToAGlobalAreRecorded()
    {
        const QByteArray pickle("csys\npath\nVx\na0cos\nenviron\nVA\nVB\ns0ccollections\nOrderedDict\nNN\x86"
                                "b.");
        PickleGraph graph;
        const PickleRun run = PickleMachine().run(view(pickle), graph);
        QVERIFY2(run.complete(), run.error.value_or("").c_str());
        QCOMPARE(run.globalMutations.size(), std::size_t(3));
        QCOMPARE(run.globalMutations[0].opcode, std::string("APPEND"));
        QCOMPARE(run.globalMutations[0].module + "." + run.globalMutations[0].name, std::string("sys.path"));
        QCOMPARE(run.globalMutations[1].opcode, std::string("SETITEM"));
        QCOMPARE(run.globalMutations[2].opcode, std::string("BUILD"));
        QCOMPARE(run.globalMutations[2].name, std::string("OrderedDict"));
    }

    // Found by the differential's first campaign: a FRAME that ends inside an opcode's bytes.
    // Python 3.11's _pickle reading a BytesIO drops the frame's last byte and reads the opcode's
    // bytes, and everything after, from after the frame; read without frames, the same bytes are
    // another pickle.
    void framesAsPython311ReadsABytesIO()
    {
        const QByteArray pickle = bytes("\x80\x04\x95\x03\x00\x00\x00\x00\x00\x00\x00\x8c\x02"
                                        "osN\x8c\x06system\x93N\x85R.");
        PickleGraph graph;
        const PickleRun plain = PickleMachine().run(view(pickle), graph);
        QVERIFY(!plain.complete()); // "os", None, "system": STACK_GLOBAL needs two strings
        PickleGraph bufferedGraph;
        const PickleRun buffered = runAsPython311FileBuffer(view(pickle), bufferedGraph);
        QVERIFY2(buffered.complete(), buffered.error.value_or("").c_str());
        QCOMPARE(buffered.globals.size(), std::size_t(1));
        QCOMPARE(buffered.globals[0].module, std::string("sN")); // 'o' dropped, "sN" read after the frame
        QCOMPARE(buffered.globals[0].name, std::string("system"));
        // Frames that hold whole opcodes read the same both ways.
        const QByteArray framed = bytes("\x80\x04\x95\x06\x00\x00\x00\x00\x00\x00\x00\x8c\x02osq\x00"
                                        "\x95\x03\x00\x00\x00\x00\x00\x00\x00h\x00\x86.");
        PickleGraph a, b;
        const PickleRun one = PickleMachine().run(view(framed), a);
        const PickleRun two = runAsPython311FileBuffer(view(framed), b);
        QVERIFY(one.complete() && two.complete());
        QCOMPARE(dump(a, one.root), dump(b, two.root));
    }

    // A limit of the machine's own is not a fault CPython would stop at: the run says so.
    void limitStopsAreMarked()
    {
        PickleLimits limits;
        limits.maxIntegerBytes = 16;
        PickleGraph graph;
        const PickleRun wide = PickleMachine(limits).run(view("L" + QByteArray(60, '9') + "\n."), graph);
        QVERIFY(!wide.complete());
        QVERIFY(wide.stoppedAtLimit);
        const PickleRun malformed = PickleMachine(limits).run(view(bytes("K\x05K\x06"
                                                                         "a.")),
            graph);
        QVERIFY(!malformed.complete());
        QVERIFY(!malformed.stoppedAtLimit);
    }

    // Issue 9: Python reads a GLOBAL line as every byte before its '\n' (readline()[:-1]), so
    // 'collections\r' is not 'collections'. Dropping the '\r' judged, and let the remap writer
    // re-emit, a different global from the one the loader sees. The file is built opcode by
    // opcode by tests/data/malformed/make_hostile_names.py.
    void globalNamesKeepEveryByteOfTheirLine()
    {
        QFile file(QStringLiteral(CKPT_SOURCE_DIR "/tests/data/malformed/global_carriage_return.pt"));
        QVERIFY(file.open(QIODevice::ReadOnly));
        const QByteArray archive = file.readAll();
        // The data.pkl record is stored: find the pickle inside the zip by its PROTO opcode.
        const qsizetype start = archive.indexOf(QByteArray("\x80\x02}(", 4));
        QVERIFY(start > 0);
        PickleGraph graph;
        const PickleRun run
            = PickleMachine().run(ByteView(reinterpret_cast<const std::uint8_t*>(archive.constData()) + start,
                                      static_cast<std::size_t>(archive.size() - start)),
                graph);
        QVERIFY2(run.complete(), run.error.value_or("").c_str());
        bool carriageReturnKept = false;
        for (const GlobalReference& global : run.globals)
            carriageReturnKept |= global.module == "collections\r" && global.name == "OrderedDict";
        QVERIFY(carriageReturnKept);

        // INST names its class on lines too.
        const std::string inst = "\x80\x02(ifoo\r\nBar\r\n.";
        PickleGraph instGraph;
        const PickleRun instRun = PickleMachine().run(
            ByteView(reinterpret_cast<const std::uint8_t*>(inst.data()), inst.size()), instGraph);
        QVERIFY2(instRun.complete(), instRun.error.value_or("").c_str());
        QCOMPARE(instRun.globals.at(0).module, std::string("foo\r"));
        QCOMPARE(instRun.globals.at(0).name, std::string("Bar\r"));
    }
};

QTEST_APPLESS_MAIN(TestPickleMachine)
#include "tst_picklemachine.moc"
