// SPDX-License-Identifier: MIT
#include "ui/base/appsettings.h"
#include "ui/dialogs/targetdialog.h"
#include "ui/mainwindow.h"
#include "ui/planactions.h"
#include "ui/widgets/devicepanel.h"

#include <QAction>
#include <QApplication>
#include <QDir>
#include <QImage>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMenuBar>
#include <QPushButton>
#include <QSet>
#include <QSettings>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTest>

namespace {

QAction* findMenuAction(const QMenuBar* menuBar, const QString& menuTitle, const QString& actionName)
{
    const auto menus = menuBar->findChildren<QMenu*>();
    for (const QMenu* menu : menus) {
        if (menu->title().remove(QLatin1Char('&')) != menuTitle)
            continue;
        const auto actions = menu->actions();
        for (QAction* action : actions) {
            if (action->objectName() == actionName)
                return action;
        }
    }
    return nullptr;
}

} // namespace

class TestMainWindow : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase()
    {
        // The Quit test closes the window; the test binary must keep running.
        QApplication::setQuitOnLastWindowClosed(false);
        // The test's settings, never the user's.
        QStandardPaths::setTestModeEnabled(true);
        QSettings().clear();
    }

    void titleAndEmptyState()
    {
        ckpt::MainWindow window;
        QCOMPARE(window.windowTitle(), QStringLiteral("Checkpoint Inspector"));
        auto* label = window.findChild<QLabel*>(QStringLiteral("emptyStateLabel"));
        QVERIFY(label);
        // The start page holds it (issue 27), with the Open, Open Folder, demo and tour buttons.
        QCOMPARE(window.centralWidget()->objectName(), QStringLiteral("startPage"));
        QVERIFY(window.centralWidget()->isAncestorOf(label));
        QCOMPARE(label->text(), QStringLiteral("Open a PyTorch checkpoint (File > Open…)"));
        QVERIFY(label->alignment().testFlag(Qt::AlignHCenter));
        QVERIFY(label->alignment().testFlag(Qt::AlignVCenter));
        QVERIFY(window.statusBar());
        QVERIFY(window.currentFile().isEmpty());
    }

    void menuActions_data()
    {
        QTest::addColumn<QString>("menu");
        QTest::addColumn<QString>("action");
        QTest::addColumn<QKeySequence>("shortcut");
        QTest::newRow("open") << QStringLiteral("File") << QStringLiteral("actionOpen")
                              << QKeySequence(Qt::CTRL | Qt::Key_O);
        QTest::newRow("quit") << QStringLiteral("File") << QStringLiteral("actionQuit")
                              << QKeySequence(Qt::CTRL | Qt::Key_Q);
        QTest::newRow("about") << QStringLiteral("Help") << QStringLiteral("actionAbout")
                               << QKeySequence(Qt::Key_F1);
        QTest::newRow("demo") << QStringLiteral("Help") << QStringLiteral("actionOpenDemo")
                              << QKeySequence(Qt::CTRL | Qt::Key_D);
        QTest::newRow("save") << QStringLiteral("File") << QStringLiteral("actionSaveRemapped")
                              << QKeySequence(Qt::CTRL | Qt::Key_S);
        QTest::newRow("close") << QStringLiteral("File") << QStringLiteral("actionClose")
                               << QKeySequence(Qt::CTRL | Qt::Key_W);
        QTest::newRow("export map_location")
            << QStringLiteral("File") << QStringLiteral("actionExportMapLocation")
            << QKeySequence(Qt::CTRL | Qt::Key_E);
        QTest::newRow("export device_map")
            << QStringLiteral("File") << QStringLiteral("actionExportDeviceMap")
            << QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_E);
        QTest::newRow("undo") << QStringLiteral("Edit") << QStringLiteral("actionUndo")
                              << QKeySequence(Qt::CTRL | Qt::Key_Z);
        QTest::newRow("redo") << QStringLiteral("Edit") << QStringLiteral("actionRedo")
                              << QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Z);
        QTest::newRow("sharing") << QStringLiteral("Edit") << QStringLiteral("actionSelectSharing")
                                 << QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_A);
        QTest::newRow("cpu") << QStringLiteral("Plan") << QStringLiteral("actionEverythingToCpu")
                             << QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_C);
        QTest::newRow("map every") << QStringLiteral("Plan") << QStringLiteral("actionMapEvery")
                                   << QKeySequence(Qt::CTRL | Qt::Key_M);
        QTest::newRow("balanced") << QStringLiteral("Plan") << QStringLiteral("actionAutoBalanced")
                                  << QKeySequence(Qt::CTRL | Qt::Key_B);
        QTest::newRow("sequential") << QStringLiteral("Plan") << QStringLiteral("actionAutoSequential")
                                    << QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_B);
        QTest::newRow("history") << QStringLiteral("View") << QStringLiteral("actionShowHistory")
                                 << QKeySequence(Qt::CTRL | Qt::Key_H);
    }

    void menuActions()
    {
        QFETCH(QString, menu);
        QFETCH(QString, action);
        QFETCH(QKeySequence, shortcut);

        ckpt::MainWindow window;
        QAction* found = findMenuAction(window.menuBar(), menu, action);
        QVERIFY2(found, qPrintable(QStringLiteral("no %1 in menu %2").arg(action, menu)));
        QVERIFY(!found->text().isEmpty());
        QCOMPARE(found->shortcut(), shortcut);
        // Without a checkpoint only the actions that need none are enabled.
        const QStringList alwaysEnabled {QStringLiteral("actionOpen"), QStringLiteral("actionQuit"),
            QStringLiteral("actionAbout"), QStringLiteral("actionShowHistory")};
        if (alwaysEnabled.contains(action))
            QVERIFY(found->isEnabled());
    }

    // This machine's GPUs are detected in a job: the window is up before the driver has been asked
    // (cuInit can take seconds), and the device cards say so until the answer arrives.
    void detectsGpusOffTheStartupPath()
    {
        ckpt::AppSettings().setLastTargetProfile(QString());
        ckpt::MainWindow window;
        // The answer is delivered through the event loop, which has not run yet.
        QVERIFY(window.planActions()->isDetecting());
        QVERIFY(window.devicePanel()->isDetecting());
        auto* label = window.devicePanel()->findChild<QLabel*>(QStringLiteral("detectingGpusLabel"));
        QVERIFY(label);
        QCOMPARE(label->text(), QStringLiteral("Detecting GPUs…"));
        QCOMPARE(window.planActions()->target().name, std::string("this machine"));
        QTRY_VERIFY_WITH_TIMEOUT(!window.planActions()->isDetecting(), 30000);
        QVERIFY(!window.devicePanel()->isDetecting());
        const ckpt::MachineInventory& target = window.planActions()->target();
        QVERIFY(!target.described);
        QVERIFY(target.find("cpu"));
        QCOMPARE(target.name, ckpt::detectThisMachine().name);
    }

    void recentFilesAreDeduplicatedAndTrimmed()
    {
        ckpt::AppSettings settings;
        settings.clearRecentFiles();
        for (int i = 0; i < 14; ++i)
            settings.addRecentFile(QStringLiteral("/tmp/ckpt-%1.pt").arg(i));
        settings.addRecentFile(QStringLiteral("/tmp/./ckpt-5.pt")); // the same file again
        const QStringList files = settings.recentFiles();
        QCOMPARE(files.size(), ckpt::AppSettings::kMaxRecentFiles);
        QCOMPARE(files.first(), QStringLiteral("/tmp/ckpt-5.pt"));
        QCOMPARE(files.count(QStringLiteral("/tmp/ckpt-5.pt")), 1);
        QCOMPARE(files.at(1), QStringLiteral("/tmp/ckpt-13.pt"));
        QVERIFY(!files.contains(QStringLiteral("/tmp/ckpt-0.pt")));
        settings.removeRecentFile(QStringLiteral("/tmp/ckpt-5.pt"));
        QVERIFY(!settings.recentFiles().contains(QStringLiteral("/tmp/ckpt-5.pt")));
        settings.clearRecentFiles();
    }

    void targetDialogValidatesAsYouType()
    {
        ckpt::TargetDialog dialog;
        auto* validation = dialog.findChild<QLabel*>(QStringLiteral("specValidation"));
        QVERIFY(validation);
        dialog.setSpec(QStringLiteral("2xcuda=24GiB,cpu=64GiB"));
        QVERIFY2(validation->text().contains(QStringLiteral("cuda:1")), qPrintable(validation->text()));
        const auto machine = dialog.machine();
        QVERIFY(machine);
        QCOMPARE(machine->devices.size(), std::size_t(3));
        dialog.setSpec(QStringLiteral("cuda:0=lots"));
        QVERIFY(!dialog.machine());
        QVERIFY(validation->text().startsWith(QStringLiteral("✗")));
    }

    void geometryAndSplittersAreRestored()
    {
        {
            ckpt::MainWindow window;
            window.resize(1111, 777);
            window.show();
            QVERIFY(QTest::qWaitForWindowExposed(&window));
            window.close();
        }
        ckpt::AppSettings settings;
        QVERIFY(!settings.windowGeometry().isEmpty());
        QVERIFY(!settings.windowState().isEmpty()); // the docks (issue 27: the tree is the centre)
        QVERIFY(!settings.splitterState(QStringLiteral("sideSplitter")).isEmpty());
        ckpt::MainWindow restored;
        QCOMPARE(restored.size(), QSize(1111, 777));
    }

    void openFileShowsPathInStatusBar()
    {
        ckpt::MainWindow window;
        const QString path = QStringLiteral(CKPT_SOURCE_DIR "/resources/demo/demo-checkpoint.pt");
        window.openFile(path);
        QCOMPARE(window.currentFile(), path);
        auto* label = window.statusBar()->findChild<QLabel*>(QStringLiteral("currentFileLabel"));
        QVERIFY(label);
        QCOMPARE(label->text(), QDir::toNativeSeparators(path));
    }

    void quitClosesTheWindow()
    {
        ckpt::MainWindow window;
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        QAction* quit
            = findMenuAction(window.menuBar(), QStringLiteral("File"), QStringLiteral("actionQuit"));
        QVERIFY(quit);
        quit->trigger();
        QTRY_VERIFY(!window.isVisible());
    }

    void rendersToPng()
    {
        ckpt::MainWindow window;
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));

        const QImage image = window.grab().toImage();
        QVERIFY(!image.isNull());
        QCOMPARE(image.size() / image.devicePixelRatio(), window.size());

        // Something was painted: menu text, the centred label and the status bar differ from the
        // background.
        QSet<QRgb> colours;
        for (int y = 0; y < image.height() && colours.size() < 3; y += 2) {
            for (int x = 0; x < image.width() && colours.size() < 3; x += 2)
                colours.insert(image.pixel(x, y));
        }
        QVERIFY2(colours.size() >= 3, "the grabbed window is (nearly) a single colour");

        const QString outDir = QStringLiteral(CKPT_BINARY_DIR "/test-output/ui");
        QVERIFY(QDir().mkpath(outDir));
        const QString pngPath = outDir + QStringLiteral("/mainwindow.png");
        QVERIFY2(image.save(pngPath), qPrintable(pngPath));
        qInfo("window rendered to %s", qPrintable(pngPath));
    }
};

QTEST_MAIN(TestMainWindow)
#include "tst_mainwindow.moc"
