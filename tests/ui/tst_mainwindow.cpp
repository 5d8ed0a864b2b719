#include "mainwindow.h"

#include <QAction>
#include <QApplication>
#include <QDir>
#include <QImage>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QSet>
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
    }

    void titleAndEmptyState()
    {
        ckpt::MainWindow window;
        QCOMPARE(window.windowTitle(), QStringLiteral("Checkpoint Inspector"));
        auto* label = window.findChild<QLabel*>(QStringLiteral("emptyStateLabel"));
        QVERIFY(label);
        QCOMPARE(window.centralWidget(), label);
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
        QTest::newRow("about") << QStringLiteral("Help") << QStringLiteral("actionAbout") << QKeySequence();
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
        QVERIFY(found->isEnabled());
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
