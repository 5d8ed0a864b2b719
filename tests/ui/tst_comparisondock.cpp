// SPDX-License-Identifier: MIT
// File > Compare With… through the real widgets: the open checkpoint (a training step written by
// torch 1.13) against the next step, judged by torch itself (tests/compare/make_training_steps.py:
// exactly the tensors torch.equal says differ, with torch's largest absolute and relative
// differences, measured by the ckpt-inspect-values helper: the GUI never loads libtorch); renames
// and dtype changes; folders of shards against each other; filtering by kind, sorting, clicking a
// row to select its tensor in the main tree; the models under QAbstractItemModelTester; cancel and
// a new document dropping a comparison; and a render of the window to look at.
#include "core/json/json.h"
#include "core/read/checkpointreader.h"
#include "tests/common/uitesthelpers.h"
#include "ui/compare/comparisondock.h"
#include "ui/compare/comparisonjob.h"
#include "ui/compare/comparisonmodel.h"
#include "ui/jobs/jobtracker.h"
#include "ui/mainwindow.h"
#include "ui/models/tensorfilterproxymodel.h"
#include "ui/models/tensortreemodel.h"
#include "ui/values/tensorvalues.h"

#include <QAbstractItemModelTester>
#include <QAction>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QHeaderView>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QProcess>
#include <QScopeGuard>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <QTreeView>

#include <cmath>
#include <map>
#include <set>

using namespace ckpt;

namespace {

struct TorchTruth {
    bool differs = false;
    std::optional<double> maxAbsolute, maxRelative;
    std::uint64_t differing = 0;
};

QString sharded(const QString& name)
{
    return QStringLiteral(CKPT_SOURCE_DIR "/tests/fixtures/sharded/") + name;
}

// Rows of `model` (through the proxy, as the view shows them) by tensor name.
std::map<QString, QModelIndex> rowsByName(const QAbstractItemModel* model)
{
    std::map<QString, QModelIndex> rows;
    for (int row = 0; row < model->rowCount(); ++row)
        rows[model->index(row, ComparisonModel::NameColumn).data().toString()]
            = model->index(row, ComparisonModel::NameColumn);
    return rows;
}

} // namespace

class TestComparisonDock : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    std::map<QString, TorchTruth> m_truth;
    bool m_haveHelper = false;

    QString steps(const char* name) const
    {
        return m_dir.filePath(QStringLiteral("steps/") + QLatin1String(name));
    }

    static std::unique_ptr<MainWindow> makeWindow()
    {
        auto window = std::make_unique<MainWindow>();
        window->setSuppressModalDialogs(true);
        window->setTarget(*parseMachineSpec("cpu=16GiB", "cpu only"), QString());
        window->resize(1400, 900);
        window->show();
        return window;
    }

    // Compares the window's open checkpoint with `path` as the action does once a path is chosen.
    static bool compareAndWait(MainWindow& window, const QString& path)
    {
        auto* dock = window.findChild<ComparisonDock*>();
        if (!dock)
            return false;
        QSignalSpy finished(dock, &ComparisonDock::comparisonFinished);
        dock->compareWith(path);
        if (!finished.wait(120000))
            return false;
        return finished.first().first().toBool();
    }

private Q_SLOTS:
    void initTestCase()
    {
        QStandardPaths::setTestModeEnabled(true);
        QVERIFY(m_dir.isValid());
        QProcess python;
        python.start(QStringLiteral(CKPT_LEGACY_PYTHON),
            {QStringLiteral(CKPT_SOURCE_DIR "/tests/compare/make_training_steps.py"),
                m_dir.filePath(QStringLiteral("steps"))});
        QVERIFY(python.waitForFinished(300000));
        QVERIFY2(python.exitCode() == 0, python.readAllStandardError().constData());
        QFile file(steps("expected.json"));
        QVERIFY(file.open(QIODevice::ReadOnly));
        const QByteArray text = file.readAll();
        const auto truth = parseJson(std::string_view(text.constData(), std::size_t(text.size())));
        QVERIFY(truth);
        for (const JsonMember& member : truth->member("tensors").members()) {
            TorchTruth entry;
            entry.differs = member.value.member("differs").toBool();
            if (member.value.find("max_abs")) {
                entry.maxAbsolute = member.value.member("max_abs").toDouble();
                entry.maxRelative = member.value.member("max_rel").toDouble();
                entry.differing = member.value.member("differing").toUInt64().value_or(0);
            }
            m_truth[QString::fromStdString(member.key)] = entry;
        }
        QVERIFY(m_truth.size() > 4);
        m_haveHelper = bool(findValuesHelper());
#ifdef CKPT_HAVE_TORCHBRIDGE
        QVERIFY2(m_haveHelper, "the build has libtorch, so the values helper must be found");
#endif
    }

    // The model and its filter stay consistent through resets, filtering and sorting.
    void modelsPassTheModelTester()
    {
        ComparisonModel model;
        ComparisonFilterModel filter;
        QAbstractItemModelTester modelTester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        filter.setSourceModel(&model);
        QAbstractItemModelTester filterTester(
            &filter, QAbstractItemModelTester::FailureReportingMode::QtTest);
        JobProgress progress;
        auto a = std::make_shared<const Checkpoint>(readCheckpoint(steps("step0.pt").toStdString()));
        auto comparison = std::make_shared<const Comparison>(
            compareWithFile(a, steps("step1.pt"), findValuesHelper(), progress));
        QVERIFY(comparison->error.isEmpty() && !comparison->cancelled);
        model.setComparison(comparison);
        QVERIFY(model.rowCount() > 0);
        filter.sort(ComparisonModel::MaxAbsoluteColumn, Qt::DescendingOrder);
        filter.setKinds(ChangeValues);
        QCOMPARE(filter.rowCount(), model.rowCount());
        filter.setKinds(ChangeAdded | ChangeRenamed);
        QCOMPARE(filter.rowCount(), 0);
        filter.setKinds(kEveryChange);
        auto edited = std::make_shared<const Comparison>(
            compareWithFile(a, steps("step0_edited.pt"), ValuesHelper(), progress));
        model.setComparison(edited);
        QCOMPARE(model.rowCount(), 2); // one rename, one cast
        model.clear();
        QCOMPARE(filter.rowCount(), 0);
    }

    // A cancelled job says so and holds no half-made result.
    void cancelledComparisonSaysSo()
    {
        JobProgress progress;
        progress.cancelled = true;
        auto a = std::make_shared<const Checkpoint>(readCheckpoint(steps("step0.pt").toStdString()));
        const Comparison comparison = compareWithFile(a, steps("step1.pt"), ValuesHelper(), progress);
        QVERIFY(comparison.cancelled);
        QVERIFY(comparison.diff.changed.empty());
    }

    void trainingStepsDifferWhereTorchSays()
    {
        auto window = makeWindow();
        QVERIFY(testing::openAndWait(*window, steps("step0.pt")));
        QAction* action = window->findChild<QAction*>(QStringLiteral("actionCompareWith"));
        QVERIFY(action && action->isEnabled());
        QVERIFY(window->menuBar()->findChild<QMenu*>(QStringLiteral("fileMenu"))->actions().contains(action));
        QVERIFY(compareAndWait(*window, steps("step1.pt")));
        auto* dock = window->findChild<ComparisonDock*>();
        QVERIFY(dock->isVisible());
        QAbstractItemModelTester tester(
            dock->filterModel(), QAbstractItemModelTester::FailureReportingMode::QtTest);

        // Exactly the tensors torch says differ, each a value change only.
        const auto rows = rowsByName(dock->filterModel());
        std::set<QString> shown, differing;
        for (const auto& [name, index] : rows)
            shown.insert(name);
        for (const auto& [name, truth] : m_truth)
            if (truth.differs)
                differing.insert(name);
        QVERIFY(!differing.empty() && differing.size() < m_truth.size());
        QCOMPARE(shown, differing);
        const std::shared_ptr<const Comparison> comparison = dock->model()->comparison();
        QCOMPARE(comparison->diff.unchanged, std::uint64_t(m_truth.size() - differing.size()));
        for (const auto& [name, index] : rows) {
            QCOMPARE(
                index.siblingAtColumn(ComparisonModel::KindColumn).data(ComparisonModel::KindsRole).toUInt(),
                unsigned(ChangeValues));
            const TorchTruth& truth = m_truth.at(name);
            if (!truth.maxAbsolute || !m_haveHelper)
                continue;
            // The numbers torch computed, to the last bit, and as the view shows them.
            std::size_t k = 0;
            while (QString::fromStdString(comparison->diff.changed[k].name) != name)
                ++k;
            QVERIFY2(comparison->deltas[k], qPrintable(name));
            QCOMPARE(comparison->deltas[k]->maxAbsolute, *truth.maxAbsolute);
            QVERIFY(std::abs(comparison->deltas[k]->maxRelative - *truth.maxRelative)
                <= 1e-12 * std::max(1.0, *truth.maxRelative));
            QCOMPARE(comparison->deltas[k]->differing, truth.differing);
            QCOMPARE(index.siblingAtColumn(ComparisonModel::MaxAbsoluteColumn).data().toString(),
                QString::number(*truth.maxAbsolute, 'g', 6));
        }
        if (!m_haveHelper)
            QVERIFY(dock->findChild<QLabel*>(QStringLiteral("comparisonNote"))->isVisibleTo(dock));

        // Sorting by the largest absolute difference, through the header as a user clicks it.
        QTreeView* view = dock->view();
        if (m_haveHelper) {
            view->sortByColumn(ComparisonModel::MaxAbsoluteColumn, Qt::DescendingOrder);
            const QString top = dock->filterModel()->index(0, ComparisonModel::NameColumn).data().toString();
            double largest = 0;
            QString largestName;
            for (const QString& name : differing)
                if (m_truth.at(name).maxAbsolute && *m_truth.at(name).maxAbsolute > largest) {
                    largest = *m_truth.at(name).maxAbsolute;
                    largestName = name;
                }
            QCOMPARE(top, largestName);
        }

        // Filtering by kind through the combo box.
        QComboBox* kinds = dock->kindFilter();
        kinds->setCurrentIndex(kinds->findData(unsigned(ChangeDevice)));
        QCOMPARE(dock->filterModel()->rowCount(), 0);
        kinds->setCurrentIndex(kinds->findData(unsigned(ChangeValues)));
        QCOMPARE(dock->filterModel()->rowCount(), int(differing.size()));

        // Clicking a row selects that tensor in the main tree.
        const QModelIndex row
            = dock->filterModel()->index(dock->filterModel()->rowCount() - 1, ComparisonModel::NameColumn);
        const QString name = row.data().toString();
        view->scrollTo(row);
        QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, view->visualRect(row).center());
        const auto tensor = testing::tensorIndexNamed(window->document()->checkpoint(), name.toStdString());
        QVERIFY(tensor);
        const QModelIndex current = window->filterModel()->mapToSource(window->treeView()->currentIndex());
        QCOMPARE(current, window->treeModel()->indexForTensor(*tensor));

        // Look at it: build/ci/renders/comparison.png.
        kinds->setCurrentIndex(0);
        const QString dir = QStringLiteral(CKPT_BINARY_DIR "/renders");
        QDir().mkpath(dir);
        QTest::qWait(100);
        QVERIFY(window->grab().save(dir + QStringLiteral("/comparison.png")));
    }

    // Compare With finds the helper by the rule `ckpt-inspect diff` follows ($CKPT_VALUES_HELPER
    // first) and says its failure in the same words (tests/cli/tst_diff.cpp): a stand-in
    // (tests/tools/fake-values-helper.py) that fails, then one that measures every pair as 0.5.
    void helperFailureIsSaidAsTheCliSaysIt()
    {
        const QByteArray saved = qgetenv("CKPT_VALUES_HELPER");
        const auto restore = qScopeGuard([&] {
            qputenv("CKPT_VALUES_HELPER", saved);
            qunsetenv("FAKE_VALUES_FAIL");
        });
        qputenv("CKPT_VALUES_HELPER", CKPT_SOURCE_DIR "/tests/tools/fake-values-helper.py");
        qputenv("FAKE_VALUES_FAIL", "boom: no such tensor");
        auto window = makeWindow();
        QVERIFY(testing::openAndWait(*window, steps("step0.pt")));
        QVERIFY(compareAndWait(*window, steps("step1.pt")));
        auto* dock = window->findChild<ComparisonDock*>();
        auto* note = dock->findChild<QLabel*>(QStringLiteral("comparisonNote"));
        QVERIFY(note->isVisibleTo(dock));
        QCOMPARE(note->text(), u"ckpt-inspect-values failed (exit status 3: boom: no such tensor)"_qs);

        qunsetenv("FAKE_VALUES_FAIL");
        QVERIFY(compareAndWait(*window, steps("step1.pt")));
        QVERIFY(!note->isVisibleTo(dock));
        const std::shared_ptr<const Comparison> comparison = dock->model()->comparison();
        std::size_t measured = 0;
        for (const std::optional<ValueDelta>& delta : comparison->deltas)
            if (delta) {
                ++measured;
                QCOMPARE(delta->maxAbsolute, 0.5);
            }
        QVERIFY(measured > 0);
    }

    void renamesAndCastsAreNamed()
    {
        auto window = makeWindow();
        QVERIFY(testing::openAndWait(*window, steps("step0.pt")));
        QVERIFY(compareAndWait(*window, steps("step0_edited.pt")));
        auto* dock = window->findChild<ComparisonDock*>();
        const auto rows = rowsByName(dock->model());
        QCOMPARE(rows.size(), std::size_t(2));
        const QModelIndex renamed = rows.at(QStringLiteral("4.weight → 4.renamed_weight"));
        QCOMPARE(
            renamed.siblingAtColumn(0).data(ComparisonModel::KindsRole).toUInt(), unsigned(ChangeRenamed));
        QVERIFY(renamed.data(ComparisonModel::TensorInARole).isValid());
        const QModelIndex cast = rows.at(QStringLiteral("3.weight"));
        QVERIFY(cast.siblingAtColumn(0).data(ComparisonModel::KindsRole).toUInt() & ChangeDtype);
        QVERIFY(
            cast.siblingAtColumn(ComparisonModel::AfterColumn).data().toString().startsWith(u"float16"_qs));
        QVERIFY(dock->summaryText().contains(u"1 renamed"_qs));
    }

    // A folder of .bin shards against the same model with its storages recorded on two GPUs: only
    // devices changed; against its DCP save (every name under "model."): every tensor renamed, the
    // bytes read from each chunk's archive inside the .distcp file.
    void foldersOfShardsCompare()
    {
        auto window = makeWindow();
        QVERIFY(testing::openAndWait(*window, sharded(QStringLiteral("bin_cpu"))));
        QVERIFY(compareAndWait(*window, sharded(QStringLiteral("bin_cuda"))));
        auto* dock = window->findChild<ComparisonDock*>();
        QVERIFY(dock->model()->rowCount() > 10);
        for (int row = 0; row < dock->model()->rowCount(); ++row) {
            const QModelIndex index = dock->model()->index(row, ComparisonModel::AfterColumn);
            QCOMPARE(
                index.siblingAtColumn(0).data(ComparisonModel::KindsRole).toUInt(), unsigned(ChangeDevice));
            QVERIFY(index.data().toString().contains(u" on cuda:"_qs));
        }
        QVERIFY(compareAndWait(*window, sharded(QStringLiteral("dcp"))));
        const std::shared_ptr<const Comparison> comparison = dock->model()->comparison();
        QVERIFY(comparison->diff.removed.empty() && comparison->diff.changed.empty());
        QCOMPARE(comparison->diff.renamed.size(), comparison->a.tensors.size());
        // The tied lm_head.weight, left out of save_pretrained's shards, is in DCP's state_dict.
        QCOMPARE(comparison->diff.added, std::vector<std::string> {"model.lm_head.weight"});
        for (const RenamedTensor& renamed : comparison->diff.renamed)
            QCOMPARE("model." + renamed.from, renamed.to);
    }

    // Opening another checkpoint drops the comparison of the one before, even while it runs.
    void newDocumentDropsTheComparison()
    {
        auto window = makeWindow();
        QVERIFY(testing::openAndWait(*window, steps("step0.pt")));
        auto* dock = window->findChild<ComparisonDock*>();
        QSignalSpy finished(dock, &ComparisonDock::comparisonFinished);
        dock->compareWith(steps("step1.pt"));
        QVERIFY(dock->isComparing());
        QVERIFY(testing::openAndWait(*window, steps("step0_edited.pt")));
        QVERIFY(!dock->isComparing());
        QVERIFY(!finished.wait(1500));
        QCOMPARE(dock->model()->rowCount(), 0);
        // What cannot be read is said, not shown as an empty comparison.
        QVERIFY(!compareAndWait(*window, m_dir.filePath(QStringLiteral("no-such-file.pt"))));
        QVERIFY(dock->summaryText().contains(u"cannot be compared"_qs));
    }
};

QTEST_MAIN(TestComparisonDock)
#include "tst_comparisondock.moc"
