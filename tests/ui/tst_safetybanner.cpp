// SPDX-License-Identifier: MIT
// The safety banner above the tree: red and naming the callable for a hostile checkpoint, green for a
// plain state_dict, and a render of each to look at (build/.../renders/safety-*.png).
#include "core/devices/deviceinventory.h"
#include "tests/common/uitesthelpers.h"
#include "ui/mainwindow.h"
#include "ui/widgets/safetybanner.h"

#include <QDir>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTest>

using namespace ckpt;

class TestSafetyBanner : public QObject {
    Q_OBJECT

private:
    static bool openAndTriage(MainWindow& window, const QString& path)
    {
        return testing::openAndTriage(window, path);
    }
    static void render(MainWindow& window, const char* name)
    {
        const QString dir = QStringLiteral(CKPT_BINARY_DIR "/renders");
        QDir().mkpath(dir);
        QTest::qWait(100); // let the layouts settle after the verdict arrived
        const QString path = dir + QLatin1Char('/') + QLatin1String(name);
        QVERIFY(window.grab().save(path));
        qInfo("rendered %s", qPrintable(path));
    }
    static MainWindow* makeWindow()
    {
        auto* window = new MainWindow;
        window->setSuppressModalDialogs(true);
        auto cpu = parseMachineSpec("cpu=16GiB", "cpu only");
        window->setTarget(*cpu, QString());
        window->resize(1200, 760);
        window->show();
        return window;
    }

private Q_SLOTS:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

    void hostileCheckpointShowsRedBanner()
    {
        std::unique_ptr<MainWindow> window(makeWindow());
        QVERIFY(openAndTriage(*window, QStringLiteral(CKPT_SOURCE_DIR "/tests/data/hostile/os_system.pt")));
        SafetyBanner* banner = window->safetyBanner();
        QVERIFY(banner->isVisibleTo(window.get()));
        QCOMPARE(banner->rating(), PickleSafety::DangerousOrUnknown);
        QVERIFY2(banner->text().contains(QStringLiteral("posix.system")), qPrintable(banner->text()));
        QVERIFY(banner->text().contains(QStringLiteral("DANGEROUS")));
        // Above the tree: its top edge is above the tree's.
        QWidget* tree = window->findChild<QWidget*>(QStringLiteral("tensorTree"));
        QVERIFY(tree);
        QVERIFY(banner->mapTo(window.get(), QPoint(0, 0)).y() < tree->mapTo(window.get(), QPoint(0, 0)).y());
        render(*window, "safety-dangerous.png");
    }

    void plainStateDictShowsKnownInert()
    {
        std::unique_ptr<MainWindow> window(makeWindow());
        QVERIFY(
            openAndTriage(*window, QStringLiteral(CKPT_SOURCE_DIR "/tests/fixtures/torch-2/state_dict.pt")));
        SafetyBanner* banner = window->safetyBanner();
        QCOMPARE(banner->rating(), PickleSafety::KnownInert);
        QVERIFY(banner->text().contains(QStringLiteral("Known inert")));
        render(*window, "safety-inert.png");
    }
};

QTEST_MAIN(TestSafetyBanner)
#include "tst_safetybanner.moc"
