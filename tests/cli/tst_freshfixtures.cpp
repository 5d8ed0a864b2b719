// SPDX-License-Identifier: MIT
// The committed fixtures were written by the torch versions of the day. This suite writes them
// again with the torches installed now — Debian 12's 1.13 and the modern one of the sid root
// (CKPT_MODERN_PYTHON, prepared by packaging/modern-torch.sh) — and checks the reader against
// those fresh files, so a change in what a newer torch writes shows up here first.
#include "fixturecomparison.h"

#include <QDir>
#include <QTemporaryDir>

class TestFreshFixtures : public QObject {
    Q_OBJECT

private:
    void generateAndCompare(const QString& interpreter)
    {
        QTemporaryDir out;
        QVERIFY(out.isValid());
        QProcess generator;
        generator.start(interpreter,
            {QStringLiteral(CKPT_SOURCE_DIR "/tests/fixtures/generate_fixtures.py"), QStringLiteral("--out"),
                out.path()});
        QVERIFY(generator.waitForFinished(600'000));
        QVERIFY2(generator.exitStatus() == QProcess::NormalExit && generator.exitCode() == 0,
            generator.readAllStandardError().right(3000).constData());
        const QDir dir(out.path());
        const QStringList expectations
            = dir.entryList({QStringLiteral("*.expected.json")}, QDir::Files, QDir::Name);
        QVERIFY2(expectations.size() >= 25,
            qPrintable(QStringLiteral("only %1 fixtures written").arg(expectations.size())));
        for (const QString& expected : expectations) {
            // .pt, or .ptl for the lite-interpreter fixture.
            const QString base = expected.chopped(int(sizeof(".expected.json") - 1));
            QString checkpoint = dir.filePath(base + QStringLiteral(".pt"));
            if (!QFile::exists(checkpoint))
                checkpoint = dir.filePath(base + QStringLiteral(".ptl"));
            QVERIFY2(QFile::exists(checkpoint), qPrintable(checkpoint));
            compareWithTorch(checkpoint, dir.filePath(expected));
            if (QTest::currentTestFailed()) {
                qWarning() << "fixture" << expected << "written by" << interpreter;
                return;
            }
        }
    }

private Q_SLOTS:
    void debianTorch() { generateAndCompare(QStringLiteral(CKPT_LEGACY_PYTHON)); }

    void modernTorch()
    {
        const QString modern = QStringLiteral(CKPT_MODERN_PYTHON);
        if (modern.isEmpty())
            QSKIP("no modern torch configured: set CKPT_MODERN_PYTHON (packaging/modern-torch.sh prepares "
                  "one)");
        generateAndCompare(modern);
    }
};

QTEST_GUILESS_MAIN(TestFreshFixtures)
#include "tst_freshfixtures.moc"
