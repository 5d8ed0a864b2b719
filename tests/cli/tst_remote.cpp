// SPDX-License-Identifier: MIT
// Checkpoints read where they lie: `ckpt-inspect info|check|plan URL` against servers on 127.0.0.1
// started here (tests/tools/range-server.py; no other address is ever touched). Differential: for
// every fixture kind, `info --json URL` is `info --json FILE`, byte for byte once the URL is
// written as the path. A 2 GiB checkpoint written by real torch is read through at most 1% of its
// bytes, counted by the server. The misbehaving servers (ranges refused, connection dropped,
// Content-Length that lies) give their cause on standard error and nothing on standard output.
#include "fixturecomparison.h"

#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QRegularExpression>
#include <QTest>

#include <memory>

namespace {

// One range-server.py on the loopback address, serving `root`; stopped when destroyed.
class RangeServer {
public:
    explicit RangeServer(const QString& root)
    {
        m_process.setProgram(QStringLiteral("/usr/bin/python3"));
        m_process.setArguments({ckpt::testing::sourcePath(QStringLiteral("tests/tools/range-server.py")),
            QStringLiteral("--root"), root});
        m_process.start();
        if (!m_process.waitForStarted(10'000))
            return;
        while (!m_process.canReadLine() && m_process.waitForReadyRead(10'000)) { }
        m_port = QString::fromLatin1(m_process.readLine().trimmed()).toInt();
    }
    ~RangeServer()
    {
        m_process.kill();
        m_process.waitForFinished(5'000);
    }
    RangeServer(const RangeServer&) = delete;
    RangeServer& operator=(const RangeServer&) = delete;
    bool running() const { return m_port > 0; }
    QString url(const QString& mode, const QString& relative) const
    {
        return QStringLiteral("http://127.0.0.1:%1/%2/%3").arg(m_port).arg(mode, relative);
    }
    std::uint64_t bodyBytesServed() const
    {
        const CommandResult stats = ckpt::testing::runProgram(QStringLiteral("/usr/bin/python3"),
            {QStringLiteral("-c"),
                QStringLiteral(
                    "import urllib.request,sys;sys.stdout.write(urllib.request.urlopen(sys.argv[1]).read()."
                    "decode())"),
                url(QStringLiteral("stats"), QString()).chopped(1)},
            30'000);
        return parse(stats.out).member("body_bytes").toUInt64().value_or(UINT64_MAX);
    }

private:
    QProcess m_process;
    int m_port = 0;
};

// A URL's output with the URL written as the local path, to compare with the file's.
QByteArray asLocal(QByteArray output, const QString& url, const QString& path)
{
    return output.replace(url.toUtf8(), path.toUtf8());
}

} // namespace

class TestRemote : public QObject {
    Q_OBJECT

private:
    std::unique_ptr<RangeServer> m_server;

private Q_SLOTS:
    void initTestCase()
    {
        m_server = std::make_unique<RangeServer>(fixturesDir());
        QVERIFY2(m_server->running(), "tests/tools/range-server.py did not start");
    }
    void cleanupTestCase() { m_server.reset(); }

    // Every kind a reader knows, through the mirror: torch zips (1.13 and 2.x, TorchScript),
    // legacy streams, safetensors, and index URLs of sharded sets (.bin and safetensors).
    void infoOfUrlEqualsInfoOfFile_data()
    {
        QTest::addColumn<QString>("relative");
        QTest::addColumn<QString>("localPath"); // what opens the same thing on disk
        const QDir fixtures(fixturesDir());
        for (const QString& folder : {QStringLiteral("torch-1.13"), QStringLiteral("torch-2")}) {
            QDirIterator files(fixturesDir() + u'/' + folder,
                {QStringLiteral("*.pt"), QStringLiteral("*.ptl")}, QDir::Files);
            while (files.hasNext()) {
                const QString relative = fixtures.relativeFilePath(files.next());
                QTest::newRow(qPrintable(relative)) << relative << relative;
            }
        }
        QTest::newRow("safetensors") << QStringLiteral("dtypes/newdtypes.safetensors")
                                     << QStringLiteral("dtypes/newdtypes.safetensors");
        // An index URL opens the set, as the folder (or the index) does on disk.
        QTest::newRow("index safetensors")
            << QStringLiteral("sharded/safetensors/model.safetensors.index.json")
            << QStringLiteral("sharded/safetensors/model.safetensors.index.json");
        QTest::newRow("index bin") << QStringLiteral("sharded/bin_cpu/pytorch_model.bin.index.json")
                                   << QStringLiteral("sharded/bin_cpu/pytorch_model.bin.index.json");
    }
    void infoOfUrlEqualsInfoOfFile()
    {
        QFETCH(QString, relative);
        QFETCH(QString, localPath);
        const QString path = fixturesDir() + u'/' + localPath;
        const QString url = m_server->url(QStringLiteral("ok"), relative);
        const CommandResult file = runInspect({QStringLiteral("info"), QStringLiteral("--json"), path});
        const CommandResult remote = runInspect({QStringLiteral("info"), QStringLiteral("--json"), url});
        QVERIFY2(remote.exitCode == file.exitCode, qPrintable(describe(remote)));
        QVERIFY2(parse(file.out).isObject(), qPrintable(describe(file)));
        // Sharded: the folder is the URL's folder.
        const QByteArray ours = asLocal(asLocal(remote.out, url, path), url.left(url.lastIndexOf(u'/')),
            path.left(path.lastIndexOf(u'/')));
        QCOMPARE(ours, file.out);
        QVERIFY2(QString::fromUtf8(remote.err).contains(QRegularExpression(QStringLiteral("read .+ of .+"))),
            qPrintable(describe(remote)));
        // Again with a fault for every page the readers touch (4 KiB blocks, no fetch plan, no
        // readahead): a reader that read a byte without its fault would differ here.
        QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
        environment.insert(QStringLiteral("CKPT_REMOTE_BLOCK_BYTES"), QStringLiteral("4096"));
        const CommandResult paged = ckpt::testing::runProgram(QStringLiteral(CKPT_INSPECT_BINARY),
            {QStringLiteral("info"), QStringLiteral("--json"), url}, 120'000, environment);
        QVERIFY2(paged.exitCode == file.exitCode, qPrintable(describe(paged)));
        QCOMPARE(asLocal(asLocal(paged.out, url, path), url.left(url.lastIndexOf(u'/')),
                     path.left(path.lastIndexOf(u'/'))),
            file.out);
        // And the text, the face a person reads (one file of each kind: the JSON holds the rest).
        if (!relative.contains(u"devices_mixed") && !relative.contains(u"legacy_state_dict")
            && !relative.endsWith(u".json") && !relative.endsWith(u".safetensors"))
            return;
        const CommandResult fileText = runInspect({QStringLiteral("info"), path});
        const CommandResult remoteText = runInspect({QStringLiteral("info"), url});
        QCOMPARE(asLocal(asLocal(remoteText.out, url, path), url.left(url.lastIndexOf(u'/')),
                     path.left(path.lastIndexOf(u'/'))),
            fileText.out);
    }

    // check and plan read the same way; check says the record CRCs it did not download.
    void checkAndPlanOfUrl()
    {
        const QString relative = QStringLiteral("torch-2/devices_mixed.pt");
        const QString url = m_server->url(QStringLiteral("ok"), relative);
        const QString path = fixturesDir() + u'/' + relative;
        const CommandResult check = runInspect({QStringLiteral("check"), QStringLiteral("--json"), url});
        const CommandResult checkFile = runInspect({QStringLiteral("check"), QStringLiteral("--json"), path});
        QVERIFY2(check.exitCode == checkFile.exitCode, qPrintable(describe(check)));
        QVERIFY2(check.out.contains("record-crcs-not-checked"), qPrintable(describe(check)));
        QVERIFY2(!checkFile.out.contains("record-crcs-not-checked"), qPrintable(describe(checkFile)));
        QVERIFY2(check.err.contains("read "), qPrintable(describe(check)));
        const QString spec = QStringLiteral("cuda:0=1GiB,cpu=4GiB");
        const CommandResult planFile = runInspect(
            {QStringLiteral("plan"), QStringLiteral("--json"), QStringLiteral("--target"), spec, path});
        const CommandResult planUrl = runInspect(
            {QStringLiteral("plan"), QStringLiteral("--json"), QStringLiteral("--target"), spec, url});
        QVERIFY2(planUrl.exitCode == planFile.exitCode, qPrintable(describe(planUrl)));
        QCOMPARE(asLocal(planUrl.out, url, path), planFile.out);
        // What needs every tensor byte says how much before it starts, and does not start.
        const CommandResult values = runInspect({QStringLiteral("check"), QStringLiteral("--values"), url});
        QVERIFY2(
            values.exitCode == 64 && values.err.contains("would download"), qPrintable(describe(values)));
    }

    // The commands that write or compare every tensor byte refuse a URL before fetching anything:
    // nothing is written.
    void writersRefuseUrls()
    {
        const QString url = m_server->url(QStringLiteral("ok"), QStringLiteral("torch-2/devices_mixed.pt"));
        const QString path = fixturesDir() + QStringLiteral("/torch-2/devices_mixed.pt");
        const QString out = QDir::temp().filePath(QStringLiteral("ckpt-remote-refused.pt"));
        QFile::remove(out);
        const QList<QStringList> commands {
            {QStringLiteral("remap"), url, QStringLiteral("-o"), out},
            {QStringLiteral("extract"), url, QStringLiteral("-o"), out},
            {QStringLiteral("convert"), url, QStringLiteral("-o"), out},
            {QStringLiteral("diff"), path, url},
        };
        for (const QStringList& arguments : commands) {
            const CommandResult result = runInspect(arguments);
            QVERIFY2(result.exitCode == 64, qPrintable(describe(result)));
            QVERIFY2(result.err.contains("download it first"), qPrintable(describe(result)));
            QVERIFY2(!QFile::exists(out), qPrintable(describe(result)));
        }
    }

    // Servers that misbehave: their cause on standard error, nothing on standard output, exit 3.
    void misbehavingServers_data()
    {
        QTest::addColumn<QString>("mode");
        QTest::addColumn<QString>("cause");
        QTest::newRow("ranges refused")
            << QStringLiteral("norange") << QStringLiteral("does not honour range requests");
        QTest::newRow("connection dropped") << QStringLiteral("drop") << QStringLiteral("connection dropped");
        QTest::newRow("Content-Length lies")
            << QStringLiteral("lie") << QStringLiteral("Content-Length lies");
        QTest::newRow("not found") << QStringLiteral("ok") << QStringLiteral("HTTP 404");
    }
    void misbehavingServers()
    {
        QFETCH(QString, mode);
        QFETCH(QString, cause);
        const QString relative = mode == u"ok" ? QStringLiteral("torch-2/no-such-file.pt")
                                               : QStringLiteral("torch-2/devices_mixed.pt");
        for (const QString& command :
            {QStringLiteral("info"), QStringLiteral("check"), QStringLiteral("plan")}) {
            const CommandResult result = runInspect({command, m_server->url(mode, relative)});
            QVERIFY2(result.exitCode == 3, qPrintable(describe(result)));
            QVERIFY2(result.out.isEmpty(), qPrintable(describe(result)));
            QVERIFY2(QString::fromUtf8(result.err).contains(cause), qPrintable(describe(result)));
        }
    }

    // A server that refuses ranges, and the user asked for the download: the whole file, then the
    // same output as the file's.
    void downloadWhenRangesRefused()
    {
        const QString relative = QStringLiteral("torch-1.13/legacy_state_dict.pt");
        const QString url = m_server->url(QStringLiteral("norange"), relative);
        const QString path = fixturesDir() + u'/' + relative;
        const CommandResult remote = runInspect(
            {QStringLiteral("info"), QStringLiteral("--json"), QStringLiteral("--download"), url});
        QVERIFY2(remote.exitCode == 0, qPrintable(describe(remote)));
        QVERIFY2(remote.err.contains("downloaded whole"), qPrintable(describe(remote)));
        const CommandResult file = runInspect({QStringLiteral("info"), QStringLiteral("--json"), path});
        QCOMPARE(asLocal(remote.out, url, path), file.out);
    }

    // A 2 GiB checkpoint written by real torch (torch.save of a tensor over a sparse file; kept in
    // /tmp between runs, its zeros made holes again): `info URL` reads at most 1% of it, counted by
    // the server, and prints what `info FILE` prints.
    void largeCheckpointReadsLittle()
    {
        const QString folder = QDir::tempPath() + QStringLiteral("/ckpt-inspector-remote-2gib");
        const QString path = folder + QStringLiteral("/big.pt");
        if (!QFileInfo::exists(path)) {
            QDir().mkpath(folder);
            const QString script = QStringLiteral(R"(
import os, sys, torch
folder = sys.argv[1]
zeros = os.path.join(folder, "zeros.bin")
with open(zeros, "wb") as f:
    f.truncate(2 << 30)
big = torch.from_file(zeros, shared=True, size=(2 << 30) // 4, dtype=torch.float32)
state = {"encoder.weight": big, "encoder.bias": torch.arange(8.0), "head.weight": torch.ones(4, 4)}
torch.save(state, os.path.join(folder, "big.pt.part"))
os.remove(zeros)
os.rename(os.path.join(folder, "big.pt.part"), os.path.join(folder, "big.pt"))
)");
            const CommandResult written = ckpt::testing::runProgram(
                QStringLiteral(CKPT_LEGACY_PYTHON), {QStringLiteral("-c"), script, folder}, 600'000);
            QVERIFY2(written.exitCode == 0, qPrintable(describe(written)));
            // Holes again where torch wrote zeros, so the file costs /tmp almost nothing.
            ckpt::testing::runProgram(
                QStringLiteral("fallocate"), {QStringLiteral("--dig-holes"), path}, 600'000);
        }
        const auto size = static_cast<std::uint64_t>(QFileInfo(path).size());
        QVERIFY(size > (2ull << 30));
        RangeServer server(folder);
        QVERIFY(server.running());
        const QString url = server.url(QStringLiteral("ok"), QStringLiteral("big.pt"));
        const CommandResult remote = runInspect({QStringLiteral("info"), QStringLiteral("--json"), url});
        QVERIFY2(remote.exitCode == 0, qPrintable(describe(remote)));
        const std::uint64_t served = server.bodyBytesServed();
        QVERIFY2(served <= size / 100,
            qPrintable(QStringLiteral("the server sent %1 of %2 bytes").arg(served).arg(size)));
        const CommandResult file = runInspect({QStringLiteral("info"), QStringLiteral("--json"), path});
        QCOMPARE(asLocal(remote.out, url, path), file.out);
        qInfo("%s", remote.err.trimmed().constData());
    }
};

QTEST_GUILESS_MAIN(TestRemote)
#include "tst_remote.moc"
