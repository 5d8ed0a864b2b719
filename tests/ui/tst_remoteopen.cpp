// SPDX-License-Identifier: MIT
// File > Open URL…: the app opens a checkpoint at an http(s) URL (a server on 127.0.0.1 started
// here, tests/tools/range-server.py; no other address is touched) off the GUI thread and shows the
// tree the file on disk shows; Cancel in the progress dialog stops a slow read at once.
#include "tests/common/testfiles.h"
#include "tests/common/treedump.h"
#include "tests/common/uitesthelpers.h"
#include "ui/document/checkpointdocument.h"
#include "ui/mainwindow.h"
#include "ui/models/tensortreemodel.h"

#include <QAction>
#include <QApplication>
#include <QElapsedTimer>
#include <QMenu>
#include <QProcess>
#include <QProgressDialog>
#include <QPushButton>
#include <QSettings>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

namespace {

QString modelRows(const QAbstractItemModel* model, const QModelIndex& parent = {}, int depth = 0)
{
    QString out;
    for (int row = 0; row < model->rowCount(parent); ++row) {
        QStringList cells;
        for (int column = 0; column < model->columnCount(parent); ++column)
            cells << model->index(row, column, parent).data().toString();
        out += QString(qsizetype {depth} * 2, QLatin1Char(' ')) + cells.join(u'|') + u'\n';
        out += modelRows(model, model->index(row, 0, parent), depth + 1);
    }
    return out;
}

} // namespace

class TestRemoteOpen : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_config;
    QProcess m_server;
    int m_port = 0;

    QString url(const QString& mode, const QString& relative) const
    {
        return QStringLiteral("http://127.0.0.1:%1/%2/%3").arg(m_port).arg(mode, relative);
    }

private Q_SLOTS:
    void initTestCase()
    {
        QApplication::setQuitOnLastWindowClosed(false);
        QStandardPaths::setTestModeEnabled(true);
        QVERIFY(m_config.isValid());
        qputenv("XDG_CONFIG_HOME", QFile::encodeName(m_config.path()));
        QSettings().clear();
        m_server.start(QStringLiteral("/usr/bin/python3"),
            {ckpt::testing::sourcePath(QStringLiteral("tests/tools/range-server.py")),
                QStringLiteral("--root"), ckpt::testing::sourcePath(QStringLiteral("tests/fixtures"))});
        QVERIFY(m_server.waitForStarted(10'000));
        while (!m_server.canReadLine() && m_server.waitForReadyRead(10'000)) { }
        m_port = QString::fromLatin1(m_server.readLine().trimmed()).toInt();
        QVERIFY(m_port > 0);
    }
    void cleanupTestCase()
    {
        m_server.kill();
        m_server.waitForFinished(5'000);
    }

    void fileMenuOpensUrls()
    {
        ckpt::MainWindow window;
        auto* action = window.findChild<QAction*>(QStringLiteral("actionOpenUrl"));
        QVERIFY(action);
        auto* fileMenu = window.findChild<QMenu*>(QStringLiteral("fileMenu"));
        QVERIFY(fileMenu && fileMenu->actions().contains(action));
        QCOMPARE(action->text(), QStringLiteral("Open &URL…"));
    }

    // The tree of a URL is the tree of the file: a torch zip, a legacy file and an index URL.
    void urlShowsWhatTheFileShows_data()
    {
        QTest::addColumn<QString>("relative");
        QTest::newRow("zip") << QStringLiteral("torch-2/devices_mixed.pt");
        QTest::newRow("legacy") << QStringLiteral("torch-1.13/legacy_state_dict.pt");
        QTest::newRow("index") << QStringLiteral("sharded/safetensors/model.safetensors.index.json");
    }
    void urlShowsWhatTheFileShows()
    {
        QFETCH(QString, relative);
        ckpt::MainWindow local;
        local.setSuppressModalDialogs(true);
        QVERIFY(
            ckpt::testing::openAndWait(local, ckpt::testing::sourcePath(u"tests/fixtures/"_qs + relative)));
        ckpt::MainWindow remote;
        remote.setSuppressModalDialogs(true);
        QVERIFY(ckpt::testing::openAndWait(remote, url(QStringLiteral("ok"), relative)));
        QVERIFY(remote.document());
        QVERIFY(!remote.document()->checkpoint().tensors.empty());
        QString localTree, remoteTree;
        ckpt::testing::dumpTree(local.document()->checkpoint(), 0, 0, localTree);
        ckpt::testing::dumpTree(remote.document()->checkpoint(), 0, 0, remoteTree);
        QCOMPARE(remoteTree, localTree);
        QCOMPARE(modelRows(remote.treeModel()), modelRows(local.treeModel()));
    }

    // A server that sends 10 KiB a second: Cancel in the progress dialog ends the open at once,
    // and nothing is shown.
    void cancelStopsASlowRead()
    {
        ckpt::MainWindow window;
        window.setSuppressModalDialogs(true);
        window.show();
        QElapsedTimer timer;
        timer.start();
        window.openFile(url(QStringLiteral("slow"), QStringLiteral("torch-2/many_tensors.pt")));
        QTRY_VERIFY_WITH_TIMEOUT(window.findChild<QProgressDialog*>(), 5'000);
        QTest::qWait(300);
        QVERIFY(window.isBusy());
        auto* cancel = window.findChild<QProgressDialog*>()->findChild<QPushButton*>();
        QVERIFY(cancel);
        cancel->click(); // what the user clicks: the dialog's canceled(), the job's cancel flag
        QTRY_VERIFY_WITH_TIMEOUT(!window.isBusy(), 5'000);
        QVERIFY2(timer.elapsed() < 6'000, "the first 64 KiB alone take 6.4 s at this speed");
        QVERIFY(!window.document());
    }
};

QTEST_MAIN(TestRemoteOpen)
#include "tst_remoteopen.moc"
