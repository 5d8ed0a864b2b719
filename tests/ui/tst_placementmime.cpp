// SPDX-License-Identifier: MIT
// The drag payload from the tree to the device cards (issue 12, bug 3). Tensor names come from the
// file and may hold any byte; one dragged tensor must become exactly one rule, whatever its name,
// and a payload that is not exactly what the tree writes must be refused as a whole.

#include "tests/common/uitesthelpers.h"
#include "ui/document/checkpointdocument.h"
#include "ui/document/placementmime.h"
#include "ui/models/devicemodel.h"
#include "ui/models/tensortreemodel.h"

#include <QAbstractItemModelTester>
#include <QDataStream>
#include <QMimeData>
#include <QTemporaryDir>
#include <QTest>
#include <QUndoStack>

#include <memory>

using namespace ckpt;

namespace {

const std::string kHostileName = "x\nmodule\tmodel";

QModelIndex findTensorRow(const TensorTreeModel& model, std::uint32_t tensor)
{
    return model.indexForTensor(tensor);
}

} // namespace

class TestPlacementMime : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void roundTripsHostileNames()
    {
        const std::vector<PlacementMimeItem> items {
            {false, kHostileName}, {true, "model.layers.1"}, {false, std::string("nul\0inside", 10)},
            {false, "tab\tand\r\nCRLF and 'quotes' and \xc3\xa9"},
            {true, ""}, // the root module: "everything"
        };
        const auto decoded = decodePlacementMime(encodePlacementMime(items));
        QVERIFY(decoded);
        QVERIFY(*decoded == items);
    }

    // The defect: with the newline-separated payload this gave two rules, the second one
    // MoveModule "model", which moves the whole model.
    void oneHostileTensorIsOneRule()
    {
        const auto rules = CheckpointDocument::rulesFromMimeData(
            CheckpointDocument::mimeDataFor({{false, kHostileName}}), "cpu");
        QCOMPARE(rules.size(), std::size_t(1));
        QVERIFY(rules.front().kind == PlacementRule::Kind::MoveTensor);
        QCOMPARE(rules.front().subject, kHostileName);
        QCOMPARE(rules.front().target, std::string("cpu"));
    }

    void malformedPayloadsAreRefused()
    {
        const QByteArray good = encodePlacementMime({{false, "a.weight"}, {true, "model"}});
        QVERIFY(decodePlacementMime(good));
        QVERIFY(!decodePlacementMime(QByteArray()));
        // The old text form, as another program might still send it.
        QVERIFY(!decodePlacementMime(QByteArrayLiteral("module\tmodel\n")));
        for (qsizetype cut = 0; cut < good.size(); ++cut)
            QVERIFY2(!decodePlacementMime(good.left(cut)), qPrintable(QStringLiteral("cut at %1").arg(cut)));
        QVERIFY(!decodePlacementMime(good + QByteArrayLiteral("\x00")));

        const auto forged = [](quint32 magic, quint32 version, quint32 count, quint8 kind) {
            QByteArray bytes;
            QDataStream stream(&bytes, QIODevice::WriteOnly);
            stream.setVersion(QDataStream::Qt_6_0);
            stream << magic << version << count << kind << QByteArrayLiteral("model");
            return bytes;
        };
        const quint32 magic = 0x434b5044;
        QVERIFY(decodePlacementMime(forged(magic, 1, 1, 2)));
        QVERIFY(!decodePlacementMime(forged(magic + 1, 1, 1, 2))); // not ours
        QVERIFY(!decodePlacementMime(forged(magic, 2, 1, 2))); // a version we do not know
        QVERIFY(!decodePlacementMime(forged(magic, 1, 1, 3))); // an unknown kind
        QVERIFY(!decodePlacementMime(forged(magic, 1, 2, 2))); // more items claimed than sent
        QVERIFY(!decodePlacementMime(forged(magic, 1, 0xffffffffu, 2))); // a count to exhaust memory
        QVERIFY(CheckpointDocument::rulesFromMimeData(forged(magic, 1, 2, 2), "cpu").empty());
    }

    // End to end on a file real torch wrote: dragging the tensor with the hostile name out of the
    // tree onto a device card moves that tensor only; a damaged payload moves nothing.
    void dropMovesOnlyTheDraggedTensor()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString path = dir.filePath(QStringLiteral("hostile-names.pt"));
        const QString why = testing::runTorchScript(
            QStringLiteral(
                "import sys, torch\n"
                "torch.save({'x\\nmodule\\tmodel': torch.zeros(2),\n"
                "            'model.a': torch.zeros(4), 'model.b': torch.ones(4)}, sys.argv[1])\n"),
            {path});
        if (!why.isEmpty())
            QSKIP(qPrintable(why));

        auto document = testing::openDocument(path, "cuda:0=4GiB,cpu=16GiB");
        QVERIFY(document);
        const Checkpoint& checkpoint = document->checkpoint();
        const auto hostile = testing::tensorIndexNamed(checkpoint, kHostileName);
        const auto a = testing::tensorIndexNamed(checkpoint, "model.a");
        const auto b = testing::tensorIndexNamed(checkpoint, "model.b");
        QVERIFY(hostile && a && b);

        TensorTreeModel tree(document.get());
        QAbstractItemModelTester treeTester(&tree, QAbstractItemModelTester::FailureReportingMode::QtTest);
        const QModelIndex row = findTensorRow(tree, *hostile);
        QVERIFY(row.isValid());
        std::unique_ptr<QMimeData> mime(tree.mimeData({row}));
        QVERIFY(mime);
        // Dropping into a text editor still gives the name.
        QCOMPARE(mime->text(), QString::fromStdString(kHostileName));

        DeviceModel devices(document.get());
        QAbstractItemModelTester devicesTester(
            &devices, QAbstractItemModelTester::FailureReportingMode::QtTest);
        const int gpu = devices.rowOfTag(QStringLiteral("cuda:0"));
        QVERIFY(gpu >= 0);

        QVERIFY(devices.dropMimeData(mime.get(), Qt::MoveAction, gpu, 0, {}));
        QCOMPARE(document->plan().plannedDeviceOfTensor(*hostile), std::optional<std::string>("cuda:0"));
        QCOMPARE(document->plan().plannedDeviceOfTensor(*a), std::optional<std::string>("cpu"));
        QCOMPARE(document->plan().plannedDeviceOfTensor(*b), std::optional<std::string>("cpu"));
        QCOMPARE(document->undoStack()->count(), 1);
        document->undoStack()->undo();
        QCOMPARE(document->plan().plannedDeviceOfTensor(*hostile), std::optional<std::string>("cpu"));

        // A damaged copy of the same payload: refused as a whole, nothing moves, no new step.
        QMimeData damaged;
        const QByteArray payload = mime->data(QLatin1String(kPlacementMimeType));
        damaged.setData(QLatin1String(kPlacementMimeType), payload.left(payload.size() - 1));
        QVERIFY(!devices.dropMimeData(&damaged, Qt::MoveAction, gpu, 0, {}));
        QCOMPARE(document->plan().plannedDeviceOfTensor(*hostile), std::optional<std::string>("cpu"));
        QCOMPARE(document->undoStack()->index(), 0);
    }
};

QTEST_MAIN(TestPlacementMime)
#include "tst_placementmime.moc"
