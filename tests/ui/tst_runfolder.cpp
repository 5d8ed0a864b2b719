// SPDX-License-Identifier: MIT
// The app with a training run's folder (tests/fixtures/runfolder/): opened as one document, one
// top-level row per file (its format, or what the file is), a truncated file named while the
// others are shown, a plan across the files and File > Save Remapped Copy writing a new folder in
// which only the file whose devices change is rewritten.
#include "core/model/shardset.h"
#include "core/plan/placementplan.h"
#include "core/read/checkpointreader.h"
#include "tests/common/testfiles.h"
#include "tests/common/uitesthelpers.h"
#include "ui/document/checkpointdocument.h"
#include "ui/mainwindow.h"
#include "ui/models/tensortreemodel.h"

#include <QApplication>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include <set>

namespace {

QString runFolder(const QString& name)
{
    return QStringLiteral(CKPT_SOURCE_DIR "/tests/fixtures/runfolder/") + name;
}

std::set<QString> topLevelRows(const QAbstractItemModel* model)
{
    std::set<QString> names;
    QModelIndex parent;
    // The tree may show the root as one row: its children are the top level then.
    if (model->rowCount() == 1 && model->rowCount(model->index(0, 0)) > 1
        && model->index(0, 0).data().toString().isEmpty())
        parent = model->index(0, 0);
    for (int row = 0; row < model->rowCount(parent); ++row)
        names.insert(model->index(row, 0, parent).data().toString());
    return names;
}

} // namespace

class TestRunFolderUi : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase()
    {
        QApplication::setQuitOnLastWindowClosed(false);
        QStandardPaths::setTestModeEnabled(true);
        QVERIFY(m_config.isValid());
        qputenv("XDG_CONFIG_HOME", QFile::encodeName(m_config.path()));
        QSettings().clear();
    }

    void oneRowPerFile_data()
    {
        QTest::addColumn<QString>("folder");
        QTest::addColumn<QStringList>("rows");
        QTest::newRow("trainer") << QStringLiteral("trainer/checkpoint-2")
                                 << QStringList {QStringLiteral("model.safetensors"),
                                        QStringLiteral("optimizer.pt"), QStringLiteral("scheduler.pt"),
                                        QStringLiteral("rng_state.pth"), QStringLiteral("training_args.bin"),
                                        QStringLiteral("trainer_state.json"), QStringLiteral("config.json"),
                                        QStringLiteral("generation_config.json")};
        QTest::newRow("trainer sharded")
            << QStringLiteral("trainer_sharded/checkpoint-2")
            << QStringList {QStringLiteral("model.safetensors"),
                   QStringLiteral("model.safetensors.index.json"), QStringLiteral("optimizer.pt"),
                   QStringLiteral("scheduler.pt"), QStringLiteral("rng_state.pth"),
                   QStringLiteral("training_args.bin"), QStringLiteral("trainer_state.json"),
                   QStringLiteral("config.json"), QStringLiteral("generation_config.json")};
        QTest::newRow("lightning") << QStringLiteral(
            "lightning") << QStringList {QStringLiteral("last.ckpt"), QStringLiteral("epoch=0-step=2.ckpt")};
        QTest::newRow("deepspeed") << QStringLiteral("deepspeed")
                                   << QStringList {QStringLiteral("global_step2/mp_rank_00_model_states.pt"),
                                          QStringLiteral(
                                              "global_step2/zero_pp_rank_0_mp_rank_00_optim_states.pt"),
                                          QStringLiteral("latest"), QStringLiteral("zero_to_fp32.py")};
        // A Trainer output_dir: the final model, and the newest checkpoint-N's files (not checkpoint-5's).
        QTest::newRow("trainer output")
            << QStringLiteral("trainer_output")
            << QStringList {QStringLiteral("model.safetensors"), QStringLiteral("training_args.bin"),
                   QStringLiteral("config.json"), QStringLiteral("generation_config.json"),
                   QStringLiteral("checkpoint-10/model.safetensors"),
                   QStringLiteral("checkpoint-10/optimizer.pt"), QStringLiteral("checkpoint-10/scheduler.pt"),
                   QStringLiteral("checkpoint-10/rng_state.pth"),
                   QStringLiteral("checkpoint-10/training_args.bin"),
                   QStringLiteral("checkpoint-10/trainer_state.json"),
                   QStringLiteral("checkpoint-10/config.json"),
                   QStringLiteral("checkpoint-10/generation_config.json")};
        QTest::newRow("trainer output, deepspeed")
            << QStringLiteral("trainer_output_ds")
            << QStringList {QStringLiteral("checkpoint-2/global_step2/mp_rank_00_model_states.pt"),
                   QStringLiteral("checkpoint-2/global_step2/zero_pp_rank_0_mp_rank_00_optim_states.pt"),
                   QStringLiteral("checkpoint-2/rng_state.pth"),
                   QStringLiteral("checkpoint-2/training_args.bin"),
                   QStringLiteral("checkpoint-2/trainer_state.json"), QStringLiteral("checkpoint-2/latest"),
                   QStringLiteral("checkpoint-2/zero_to_fp32.py")};
        QTest::newRow("truncated") << QStringLiteral("broken_truncated")
                                   << QStringList {QStringLiteral("model.pt"), QStringLiteral("optim.pt"),
                                          QStringLiteral("train.pt"), QStringLiteral("config.yaml")};
    }
    void oneRowPerFile()
    {
        QFETCH(QString, folder);
        QFETCH(QStringList, rows);
        ckpt::MainWindow window;
        window.setSuppressModalDialogs(true);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        QVERIFY(ckpt::testing::openAndWait(window, runFolder(folder)));
        const ckpt::Checkpoint& checkpoint = window.document()->checkpoint();
        QVERIFY(checkpoint.shardSet);
        QCOMPARE(checkpoint.shardSet->layout, ckpt::ShardLayout::RunFolder);
        const std::set<QString> shown = topLevelRows(window.treeModel());
        QCOMPARE(shown, std::set<QString>(rows.begin(), rows.end()));
        if (folder == QStringLiteral("broken_truncated")) {
            // The bad file is named among the findings; the good ones still hold their tensors.
            bool named = false;
            for (const ckpt::Finding& finding : checkpoint.findings)
                named = named
                    || (finding.code == ckpt::FindingCode::RunFolderFileUnreadable
                        && finding.record == "optim.pt");
            QVERIFY(named);
            QVERIFY(ckpt::testing::tensorIndexNamed(checkpoint, "model.pt.embed.weight").has_value());
        }
    }

    // Plan across the files, save a new folder: only optim.pt is rewritten.
    void saveRewritesOnlyWhatChanges()
    {
        ckpt::MainWindow window;
        window.setSuppressModalDialogs(true);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        const QString input = runFolder(QStringLiteral("olmo"));
        QVERIFY(ckpt::testing::openAndWait(window, input));
        ckpt::CheckpointDocument* document = window.document();
        document->move({ckpt::PlacementRule {ckpt::PlacementRule::Kind::MoveModule, "optim.pt", "cpu"}},
            QStringLiteral("optim.pt to the CPU"));
        QTemporaryDir out;
        const QString folder = out.filePath(QStringLiteral("olmo-remapped"));
        QSignalSpy finished(&window, &ckpt::MainWindow::saveFinished);
        window.saveRemappedCopyTo(folder);
        QVERIFY(finished.wait(60000));
        QVERIFY2(finished.first().at(0).toBool(), qPrintable(finished.first().at(1).toString()));
        for (const char* same : {"model.pt", "train.pt", "config.yaml"})
            QCOMPARE(ckpt::testing::sha256Of(folder + QLatin1Char('/') + QLatin1String(same)),
                ckpt::testing::sha256Of(input + QLatin1Char('/') + QLatin1String(same)));
        const ckpt::Checkpoint written = ckpt::readCheckpoint(folder.toStdString());
        QVERIFY(written.shardSet);
        QCOMPARE(written.shardSet->layout, ckpt::ShardLayout::RunFolder);
        for (const ckpt::TensorEntry& tensor : written.tensors)
            if (tensor.name.starts_with("optim.pt."))
                QCOMPARE(tensor.device.value_or("?"), std::string("cpu"));
            else if (tensor.name.starts_with("model.pt."))
                QCOMPARE(tensor.device.value_or("?"), std::string("cuda:0"));
    }

    // A Trainer output_dir saved from the app: its training_args.bin files are copied byte for byte,
    // so no "may run code" question stops the save; checkpoint-10's optimizer is rewritten.
    void trainerOutputSavesWithoutTheQuestion()
    {
        ckpt::MainWindow window;
        window.setSuppressModalDialogs(true);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        const QString input = runFolder(QStringLiteral("trainer_output"));
        QVERIFY(ckpt::testing::openAndWait(window, input));
        ckpt::CheckpointDocument* document = window.document();
        document->move({ckpt::PlacementRule {ckpt::PlacementRule::Kind::MapTag, "cuda:0", "cpu"}},
            QStringLiteral("cuda:0 to the CPU"));
        QTemporaryDir out;
        const QString folder = out.filePath(QStringLiteral("run-remapped"));
        QSignalSpy finished(&window, &ckpt::MainWindow::saveFinished);
        window.saveRemappedCopyTo(folder);
        QVERIFY(finished.wait(60000));
        QVERIFY2(finished.first().at(0).toBool(), qPrintable(finished.first().at(1).toString()));
        for (const char* same : {"training_args.bin", "checkpoint-10/training_args.bin", "model.safetensors"})
            QCOMPARE(ckpt::testing::sha256Of(folder + QLatin1Char('/') + QLatin1String(same)),
                ckpt::testing::sha256Of(input + QLatin1Char('/') + QLatin1String(same)));
        QVERIFY(!QFile::exists(folder + QStringLiteral("/checkpoint-5")));
        const ckpt::Checkpoint written = ckpt::readCheckpoint(folder.toStdString());
        QVERIFY(written.shardSet);
        QCOMPARE(written.shardSet->newestCheckpoint, std::string("checkpoint-10"));
        for (const ckpt::TensorEntry& tensor : written.tensors)
            if (tensor.name.starts_with("checkpoint-10/optimizer.pt."))
                QCOMPARE(tensor.device.value_or("?"), std::string("cpu"));
    }

private:
    QTemporaryDir m_config;
};

QTEST_MAIN(TestRunFolderUi)
#include "tst_runfolder.moc"
