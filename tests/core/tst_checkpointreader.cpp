// SPDX-License-Identifier: MIT
// The reader as a whole on damaged copies of torch-written fixtures: a file cut at any point is
// read without a crash, says that it is truncated, and salvages exactly the storages whose bytes
// lie before the cut. Hostile pickles are shown, never run.
#include "core/io/mappedfile.h"
#include "core/read/checkpointreader.h"
#include "tests/common/testfiles.h"
#include "tests/common/treedump.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <map>

using namespace ckpt::testing;

using namespace ckpt;

namespace {

Checkpoint readBytes(const QByteArray& bytes, const char* name)
{
    return readCheckpoint(MappedFile::fromBuffer(ByteBuffer(bytes.begin(), bytes.end()), name));
}

} // namespace

class TestCheckpointReader : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void truncationSalvagesCompleteStorages_data()
    {
        QTest::addColumn<QString>("file");
        QTest::newRow("zip, training checkpoint") << fixturePath("torch-2/training_checkpoint.pt");
        QTest::newRow("zip, torch 1.13") << fixturePath("torch-1.13/devices_mixed.pt");
        QTest::newRow("legacy") << fixturePath("torch-1.13/legacy_state_dict.pt");
        QTest::newRow("torchscript") << fixturePath("torch-2/torchscript_traced.pt");
    }
    void truncationSalvagesCompleteStorages()
    {
        QFETCH(QString, file);
        const QByteArray full = readAll(file);
        QVERIFY2(!full.isEmpty(), qPrintable(file));
        const Checkpoint whole = readBytes(full, "whole");
        QVERIFY(!whole.hasErrors());
        QVERIFY(!whole.tensors.empty());

        const qsizetype step = std::max<qsizetype>(1, full.size() / 400);
        int cutsWithAllTensors = 0;
        for (qsizetype cut = 0; cut < full.size(); cut += step) {
            const Checkpoint partial = readBytes(full.left(cut), "cut");
            QVERIFY2(partial.hasErrors(), qPrintable(QStringLiteral("cut at %1 reported no error").arg(cut)));
            for (const StorageRecord& storage : partial.storages) {
                if (!storage.bytesComplete())
                    continue;
                // A storage said to be complete really lies before the cut, at the offset the
                // whole file has it.
                QVERIFY(*storage.dataOffset + storage.nbytes <= static_cast<std::uint64_t>(cut));
                const std::optional<std::uint32_t> index = whole.storageIndex(storage.key);
                QVERIFY(index.has_value());
                QCOMPARE(*storage.dataOffset, *whole.storages[*index].dataOffset);
            }
            if (partial.tensors.size() == whole.tensors.size())
                ++cutsWithAllTensors;
        }
        // Once the pickle is complete (it comes first in torch's zips and legacy files), every
        // tensor is listed even though the rest of the file is missing.
        QVERIFY(cutsWithAllTensors > 0);
    }

    void corruptedBytesNeverCrash()
    {
        const QByteArray full = readAll(fixturePath("torch-2/training_checkpoint.pt"));
        QVERIFY(!full.isEmpty());
        std::uint32_t seed = 12345;
        for (int i = 0; i < 1500; ++i) {
            QByteArray damaged = full;
            for (int k = 0; k < 4; ++k) {
                seed = seed * 1664525u + 1013904223u;
                damaged[static_cast<qsizetype>(seed % static_cast<std::uint32_t>(damaged.size()))]
                    = static_cast<char>(seed >> 24);
            }
            const Checkpoint checkpoint = readBytes(damaged, "damaged");
            QVERIFY(!checkpoint.tree.empty());
        }
    }

    // A flat state_dict's dotted names become modules (the builder remembers the modules of the
    // last name and checks them rather than looking each up again): the tree must be the one
    // Checkpoint::modulePathFor builds name by name, and every tensor's name the key torch wrote,
    // for keys with odd dots, keys that leave and re-enter a prefix, and keys that are not strings
    // (never split: a float key's dot is no module boundary).
    void dottedNamesBuildTheModuleTree_data()
    {
        QTest::addColumn<bool>("zip");
        QTest::newRow("zip") << true;
        QTest::newRow("legacy") << false;
    }
    void dottedNamesBuildTheModuleTree()
    {
        QFETCH(bool, zip);
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString script = dir.filePath(QStringLiteral("write.py"));
        const QString output = dir.filePath(QStringLiteral("state.pt"));
        QVERIFY(writeAll(script,
            "import collections, json, sys, torch\n"
            "keys = ['a.b.c', 'a.b.d', 'a', 'a..b', '.hidden', 'trailing.', 'x.y.', '', 'a.b',\n"
            "        'z.0.weight', 'z.1.weight', 'z.0.bias', '...', 'a.b.c.d', 'q.r',\n"
            "        'encoder.layers.0.attn.q', 'encoder.layers.0.attn.k', 'encoder.layers.1.attn.q',\n"
            "        'encoder.layers.0.mlp', 'decoder.layers.0.attn.q', 'a.z', '\u00e9.t', 'a.b.c.e',\n"
            "        7, 1.5, ('t', 2)]\n"
            "sd = collections.OrderedDict((k, torch.full((2,), float(i))) for i, k in enumerate(keys))\n"
            "torch.save(sd, sys.argv[1], _use_new_zipfile_serialization=sys.argv[2] == 'zip')\n"
            "# The names torch itself gives: its own file loaded back (written just now, not untrusted).\n"
            "back = torch.load(sys.argv[1])\n"
            "print(json.dumps([str(k) if isinstance(k, (str, int)) else None for k in back.keys()]))\n"));
        QProcess process;
        process.start(QStringLiteral(CKPT_LEGACY_PYTHON),
            {script, output, zip ? QStringLiteral("zip") : QStringLiteral("legacy")});
        if (!process.waitForStarted())
            QSKIP("no python3 with torch 1.13 to write the state_dict");
        QVERIFY(process.waitForFinished(120000));
        QVERIFY2(process.exitCode() == 0, process.readAllStandardError().constData());
        const QJsonArray torchKeys = QJsonDocument::fromJson(process.readAllStandardOutput()).array();
        QCOMPARE(torchKeys.size(), 26);

        const Checkpoint checkpoint = readCheckpoint(output.toStdString());
        QVERIFY(!checkpoint.hasErrors());
        QCOMPARE(checkpoint.tensors.size(), std::size_t(26));
        for (qsizetype i = 0; i < torchKeys.size(); ++i) {
            if (torchKeys[i].isNull())
                continue; // the float and tuple keys, whose Python str() the reader does not promise
            QCOMPARE(QString::fromStdString(checkpoint.tensors[static_cast<std::size_t>(i)].name.str()),
                torchKeys[i].toString());
        }
        QCOMPARE(checkpoint.tensors[24].name, std::string("1.5"));
        QCOMPARE(checkpoint.tensors[25].name, std::string("('t', 2)"));

        Checkpoint reference;
        reference.ensureRoot();
        for (std::size_t i = 0; i < checkpoint.tensors.size(); ++i) {
            const std::string name(checkpoint.tensors[i].name);
            if (i >= 23) { // not strings: one node each, unsplit
                reference.addTreeNode(0, TreeNodeKind::Tensor, name);
                continue;
            }
            std::string leaf;
            const std::uint32_t parent = reference.modulePathFor(0, name, leaf);
            reference.addTreeNode(parent, TreeNodeKind::Tensor, leaf);
        }
        QString got;
        QString want;
        dumpTree(checkpoint, 0, 0, got);
        dumpTree(reference, 0, 0, want);
        QCOMPARE(got, want);
    }

    // torch 2.14 wrote it (tests/fixtures/dtypes/newdtypes.pt): dtypes without a legacy storage
    // class as _rebuild_tensor_v3 over an untyped storage. Each tensor is what torch.load returned
    // (.expected.json), and each dtype an older torch lacks is named with the release it needs.
    void newerDtypesInATorchZip()
    {
        const QString path = fixturePath("dtypes/newdtypes.pt");
        const QByteArray full = readAll(path);
        const Checkpoint checkpoint = readBytes(full, "newdtypes.pt");
        QFile expectedFile(path + QStringLiteral(".expected.json"));
        QVERIFY(expectedFile.open(QIODevice::ReadOnly));
        const QJsonArray expected
            = QJsonDocument::fromJson(expectedFile.readAll()).object()[QStringLiteral("tensors")].toArray();
        QCOMPARE(checkpoint.tensors.size(), std::size_t(expected.size()));
        for (const auto& value : expected) {
            const QJsonObject truth = value.toObject();
            const TensorEntry* tensor = nullptr;
            for (const TensorEntry& candidate : checkpoint.tensors)
                if (candidate.name == truth[QStringLiteral("name")].toString().toStdString())
                    tensor = &candidate;
            QVERIFY(tensor);
            QCOMPARE(tensor->dtype, truth[QStringLiteral("dtype")].toString().toStdString());
            std::vector<std::int64_t> shape;
            for (const auto& size : truth[QStringLiteral("shape")].toArray())
                shape.push_back(size.toInteger());
            QCOMPARE(tensor->shape, shape);
            QCOMPARE(tensor->nbytes(), std::uint64_t(truth[QStringLiteral("nbytes")].toInteger()));
            const StorageRecord& storage = checkpoint.storages[std::size_t(tensor->storage)];
            QCOMPARE(storage.nbytes, std::uint64_t(truth[QStringLiteral("nbytes")].toInteger()));
            QVERIFY(storage.bytesComplete());
        }
        std::map<std::string, std::string> needs;
        for (const Finding& finding : checkpoint.findings) {
            QCOMPARE(finding.code, FindingCode::DtypeNeedsNewerTorch);
            const auto at = finding.message.find(" needs torch >= ");
            const auto start = finding.message.rfind("): ", at);
            needs[finding.message.substr(start + 3, at - start - 3)] = finding.message.substr(at + 16, 3);
        }
        const std::map<std::string, std::string> releases {{"float4_e2m1fn_x2", "2.8"},
            {"float8_e8m0fnu", "2.7"}, {"float8_e4m3fn", "2.2"}, {"float8_e5m2", "2.2"},
            {"float8_e4m3fnuz", "2.2"}, {"float8_e5m2fnuz", "2.2"}, {"uint16", "2.3"}, {"uint32", "2.3"},
            {"uint64", "2.3"}, {"complex32", "2.2"}};
        QCOMPARE(needs, releases);
    }

    void cutStorageIsNamed()
    {
        // A file cut in the middle of its last storage: that storage is named as incomplete.
        const QByteArray full = readAll(fixturePath("torch-2/state_dict.pt"));
        const Checkpoint whole = readBytes(full, "whole");
        QVERIFY(!whole.storages.empty());
        const StorageRecord& last = whole.storages.back();
        QVERIFY(last.dataOffset.has_value());
        const Checkpoint cut
            = readBytes(full.left(static_cast<qsizetype>(*last.dataOffset + last.nbytes / 2)), "cut");
        bool found = false;
        for (const Finding& finding : cut.findings)
            found = found || finding.code == FindingCode::RecordTruncated
                || finding.code == FindingCode::ZipTruncated || finding.code == FindingCode::Truncated;
        QVERIFY(found);
    }
};

QTEST_APPLESS_MAIN(TestCheckpointReader)
#include "tst_checkpointreader.moc"
