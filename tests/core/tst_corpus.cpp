// SPDX-License-Identifier: MIT
// Every real checkpoint of ../shared/corpus/files (written by other people; some hostile) against
// what MANIFEST.tsv says about it: its container, the recorded location of every storage, the
// number of tensor rebuild calls; and for broken or hostile files, a clear classification.
// Nothing is ever unpickled for real: the reader is symbolic.
#include "core/io/mappedfile.h"
#include "core/read/checkpointreader.h"
#include "tests/common/testfiles.h"

#include <QDir>
#include <QFile>
#include <QTest>

#include <map>
#include <set>

using namespace ckpt::testing;

using namespace ckpt;

namespace {

struct ManifestRow {
    QString file;
    QString container;
    QString locations;
    QString tensorCount;
    QString notes;
};

std::vector<ManifestRow> readManifest()
{
    std::vector<ManifestRow> rows;
    QFile manifest(corpusDir() + QStringLiteral("/MANIFEST.tsv"));
    if (!manifest.open(QIODevice::ReadOnly))
        return rows;
    const QStringList lines = QString::fromUtf8(manifest.readAll()).split(u'\n', Qt::SkipEmptyParts);
    const QStringList header = lines.value(0).split(u'\t');
    const auto column = [&](const char* name) { return header.indexOf(QString::fromLatin1(name)); };
    for (qsizetype i = 1; i < lines.size(); ++i) {
        const QStringList cells = lines[i].split(u'\t');
        if (cells.size() < header.size())
            continue;
        rows.push_back({cells[column("file")], cells[column("container")],
            cells[column("recorded_locations")], cells[column("tensor_count")], cells[column("notes")]});
    }
    return rows;
}

// "cpu x10; cuda:0 x24" -> {cpu: 10, cuda:0: 24}
std::map<std::string, int> parseLocations(const QString& text)
{
    std::map<std::string, int> counts;
    for (const QString& part : text.split(u';', Qt::SkipEmptyParts)) {
        const QString trimmed = part.trimmed();
        const qsizetype x = trimmed.lastIndexOf(QStringLiteral(" x"));
        if (x > 0)
            counts[trimmed.left(x).toStdString()] = trimmed.mid(x + 2).toInt();
    }
    return counts;
}

const char* expectedFormat(const QString& container)
{
    if (container == u"zip")
        return "torch-zip";
    if (container == u"legacy-pickle")
        return "torch-legacy";
    if (container == u"tar")
        return "torch-tar";
    if (container == u"torchscript")
        return "torchscript";
    if (container == u"safetensors")
        return "safetensors";
    return "not-a-checkpoint";
}

} // namespace

class TestCorpus : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void readsAsTheManifestSays_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("container");
        QTest::addColumn<QString>("locations");
        QTest::addColumn<QString>("tensorCount");
        QTest::addColumn<QString>("notes");
        if (!QDir(corpusDir() + QStringLiteral("/files")).exists())
            QSKIP("../shared/corpus/files is not present on this machine");
        const auto rows = readManifest();
        QVERIFY2(rows.size() == 43, "MANIFEST.tsv should list 43 files");
        for (const ManifestRow& row : rows)
            QTest::newRow(qPrintable(row.file))
                << row.file << row.container << row.locations << row.tensorCount << row.notes;
    }

    void readsAsTheManifestSays()
    {
        QFETCH(QString, file);
        QFETCH(QString, container);
        QFETCH(QString, locations);
        QFETCH(QString, tensorCount);
        QFETCH(QString, notes);
        const QString path = corpusDir() + QStringLiteral("/files/") + file;
        const QByteArray before = [&] {
            QFile f(path);
            return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
        }();

        const Checkpoint checkpoint = readCheckpoint(path.toStdString());
        QCOMPARE(QString::fromLatin1(checkpointFormatName(checkpoint.format)),
            QString::fromLatin1(expectedFormat(container)));

        // Storage locations, counted once per storage key in each pickle, as the manifest counts them.
        if (locations == u"none" || (!locations.startsWith(u"n/a") && !locations.isEmpty())) {
            std::map<std::string, int> ours;
            for (const PickleSection& section : checkpoint.pickles)
                for (std::uint32_t index : section.storagesUsed)
                    ++ours[checkpoint.storages[index].device.value_or("(none)")];
            const auto expected
                = locations == u"none" ? std::map<std::string, int> {} : parseLocations(locations);
            QVERIFY2(ours == expected, qPrintable(u"locations differ from the manifest's "_qs + locations));
        }

        // tensor_count: calls to torch._utils._rebuild_* in all pickles, counting a Parameter once
        // (its _rebuild_parameter wraps the _rebuild_tensor_v2 call that is counted).
        bool numeric = false;
        const int expectedCalls = tensorCount.toInt(&numeric);
        if (numeric && checkpoint.format != CheckpointFormat::Safetensors) {
            int calls = 0;
            for (NodeId id = 0; id < checkpoint.graph.size(); ++id)
                if (checkpoint.graph.kind(id) == NodeKind::Call
                    && checkpoint.graph.calleeName(id).starts_with("torch._utils._rebuild_")
                    && !checkpoint.graph.calleeName(id).starts_with("torch._utils._rebuild_parameter"))
                    ++calls;
            QCOMPARE(calls, expectedCalls);
        } else if (numeric) {
            QCOMPARE(static_cast<int>(checkpoint.tensors.size()), expectedCalls);
        }

        std::set<std::string> globals;
        for (const PickleSection& section : checkpoint.pickles)
            for (const GlobalReference& global : section.run.globals)
                globals.insert(global.module + "." + global.name);

        if (notes.startsWith(u"MALICIOUS")) {
            QVERIFY2(globals.count("builtins.eval"), "the hostile call must be reported among the globals");
            QVERIFY(checkpoint.hasErrors());
        } else if (container != u"other") {
            for (const Finding& finding : checkpoint.findings)
                QVERIFY2(finding.severity != Severity::Error, finding.message.c_str());
            QVERIFY(!checkpoint.tree.empty());
        } else {
            QVERIFY(checkpoint.hasErrors());
            QVERIFY(!checkpoint.container.description.empty());
            if (notes.contains(u"Git LFS"))
                QVERIFY2(checkpoint.findings.front().message.find("git lfs pull") != std::string::npos,
                    checkpoint.findings.front().message.c_str());
            if (notes.contains(u"HDF5"))
                QCOMPARE(checkpoint.container.kind, ContainerKind::Hdf5);
            if (notes.contains(u"PNG"))
                QCOMPARE(checkpoint.container.kind, ContainerKind::Png);
            if (notes.contains(u"empty (0-byte)"))
                QCOMPARE(checkpoint.container.kind, ContainerKind::Empty);
            if (notes.contains(u"protocol-0 text pickle")) {
                QCOMPARE(checkpoint.container.kind, ContainerKind::PlainPickle);
                QVERIFY(globals.count("copy_reg._reconstructor"));
            }
        }

        // Reading never writes to the input.
        QFile after(path);
        QVERIFY(after.open(QIODevice::ReadOnly));
        QVERIFY(after.readAll() == before);
    }
};

QTEST_APPLESS_MAIN(TestCorpus)
#include "tst_corpus.moc"
