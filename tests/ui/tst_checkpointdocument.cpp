// SPDX-License-Identifier: MIT
// The document behind the app: one undoable step per move, and a report that says which tensors a
// move dragged along because they share a storage with what was named.
#include "core/read/checkpointreader.h"
#include "ui/document/checkpointdocument.h"

#include <QTest>
#include <QUndoStack>

namespace {
// A record's device as the plan's tags are (std::optional<std::string>): compared with an
// OptionalInternedString directly, std::optional's operator== would call two "none" unequal.
std::optional<std::string> asTag(const ckpt::OptionalInternedString& d)
{
    return (d ? std::optional<std::string>(d->str()) : std::nullopt);
}
} // namespace

using namespace ckpt;

class TestCheckpointDocument : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void reportsTensorsDraggedAlong()
    {
        // tied_weights: embed.weight and lm_head.weight share one storage.
        auto checkpoint = std::make_shared<const Checkpoint>(
            readCheckpoint(CKPT_SOURCE_DIR "/tests/fixtures/torch-2/tied_weights.pt"));
        auto machine = parseMachineSpec("cuda:0=8GiB,cuda:1=8GiB,cpu=16GiB");
        QVERIFY(machine.hasValue());
        CheckpointDocument document(checkpoint, *machine);

        const MoveReport one = document.move({{PlacementRule::Kind::MoveTensor, "lm_head.weight", "cuda:1"}},
            QStringLiteral("Move lm_head.weight to cuda:1"));
        QCOMPARE(one.storagesMoved, std::size_t(1));
        QCOMPARE(one.draggedAlong, std::vector<std::string> {"embed.weight"});
        QVERIFY(one.text.contains(QStringLiteral("embed.weight")));
        QVERIFY(document.isModified());

        // Both named in one step (a selection): nothing is dragged along.
        const MoveReport both = document.move({{PlacementRule::Kind::MoveTensor, "lm_head.weight", "cpu"},
                                                  {PlacementRule::Kind::MoveTensor, "embed.weight", "cpu"}},
            QStringLiteral("Move 2 items to cpu"));
        QVERIFY(both.draggedAlong.empty());

        document.undoStack()->undo();
        document.undoStack()->undo();
        QVERIFY(!document.isModified());
        for (std::uint32_t t = 0; t < checkpoint->tensors.size(); ++t)
            QCOMPARE(document.plannedDeviceOfTensor(t), asTag(checkpoint->tensors[t].device));
        document.undoStack()->redo();
        QCOMPARE(document.plannedDeviceOfTensor(0).value_or(""), std::string("cuda:1"));
    }
};

QTEST_GUILESS_MAIN(TestCheckpointDocument)
#include "tst_checkpointdocument.moc"
