// SPDX-License-Identifier: MIT
// `ckpt-inspect remap --rename-global` and the `check` finding that proposes it, judged by real
// torch: a NumPy 2 pickle written by the modern torch fails in Debian 12's torch 1.13 + NumPy 1.24
// with "No module named 'numpy._core'"; the renamed copy loads there with the same values
// (tests/extract/check_renamed.py). A module path moves every class under it.
#include "fixturecomparison.h"

#include <QFileInfo>
#include <QTemporaryDir>

namespace {

const QString kGenerator = QStringLiteral(CKPT_SOURCE_DIR "/tests/extract/make_rescue_fixtures.py");
const QString kChecker = QStringLiteral(CKPT_SOURCE_DIR "/tests/extract/check_renamed.py");

std::set<std::string> globalsOf(const QString& file)
{
    const CommandResult checked = runInspect({QStringLiteral("check"), file, QStringLiteral("--json")});
    const JsonValue report = parse(checked.out);
    std::set<std::string> names;
    for (const JsonValue& global : report.member("weights_only").member("globals").items())
        names.insert(global.member("name").toString());
    return names;
}

} // namespace

class TestRenameGlobals : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    QString m_modernFixtures;
    QString m_legacyFixtures;

private Q_SLOTS:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        m_legacyFixtures = m_dir.filePath(QStringLiteral("torch-1.13"));
        const CommandResult legacy
            = runProgram(QStringLiteral(CKPT_LEGACY_PYTHON), {kGenerator, m_legacyFixtures});
        QVERIFY2(legacy.exitCode == 0, qPrintable(describe(legacy)));
        const QString modern = QStringLiteral(CKPT_MODERN_PYTHON);
        if (!modern.isEmpty()) {
            m_modernFixtures = m_dir.filePath(QStringLiteral("torch-2"));
            const CommandResult made = runProgram(modern, {kGenerator, m_modernFixtures});
            if (made.exitCode != 0) {
                qWarning("the modern torch cannot write fixtures: %s", qPrintable(describe(made)));
                m_modernFixtures.clear();
            }
        }
    }

    void checkProposesTheRename()
    {
        if (m_modernFixtures.isEmpty())
            QSKIP("needs a NumPy 2 pickle from the modern torch");
        const QString file = m_modernFixtures + u"/numpy_objects.pt"_qs;
        const CommandResult checked = runInspect({QStringLiteral("check"), file, QStringLiteral("--json")});
        const JsonValue report = parse(checked.out);
        const JsonValue* moved = nullptr;
        for (const JsonValue& finding : report.member("findings").items())
            if (finding.member("code").toString() == "global-moved")
                moved = &finding;
        QVERIFY2(moved, checked.out.constData());
        QVERIFY(
            moved->member("message").toString().find("numpy._core.multiarray.scalar") != std::string::npos);
        QVERIFY(moved->member("fix").toString().find("--rename-global numpy._core=numpy.core")
            != std::string::npos);

        // A NumPy 1 pickle gets the other direction; a file without NumPy gets none.
        const CommandResult old = runInspect(
            {QStringLiteral("check"), m_legacyFixtures + u"/numpy_objects.pt"_qs, QStringLiteral("--json")});
        QVERIFY(old.out.contains("--rename-global numpy.core=numpy._core"));
        const CommandResult plain = runInspect({QStringLiteral("check"),
            fixturesDir() + u"/torch-2/state_dict.pt"_qs, QStringLiteral("--json")});
        QVERIFY(!plain.out.contains("global-moved"));
    }

    void renamedCopyLoadsUnderNumPy1()
    {
        if (m_modernFixtures.isEmpty())
            QSKIP("needs a NumPy 2 pickle from the modern torch");
        const QString file = m_modernFixtures + u"/numpy_objects.pt"_qs;
        const QString copy = m_dir.filePath(QStringLiteral("numpy1.pt"));
        const CommandResult remapped = runInspect(
            {QStringLiteral("remap"), file, QStringLiteral("-o"), copy, QStringLiteral("--rename-global"),
                QStringLiteral("numpy._core=numpy.core"), QStringLiteral("--json")});
        QVERIFY2(remapped.exitCode == 0, qPrintable(describe(remapped)));
        const JsonValue report = parse(remapped.out);
        QCOMPARE(report.member("verified").toBool(), true);
        std::set<std::string> renamed;
        for (const JsonValue& item : report.member("globals_renamed").items())
            renamed.insert(item.toString());
        QVERIFY(renamed.count("numpy._core.multiarray.scalar -> numpy.core.multiarray.scalar"));
        const std::set<std::string> globals = globalsOf(copy);
        QVERIFY(
            globals.count("numpy.core.multiarray.scalar") && !globals.count("numpy._core.multiarray.scalar"));

        const CommandResult loaded = runProgram(
            QStringLiteral(CKPT_LEGACY_PYTHON), {kChecker, file, copy, file + u".expected.json"_qs});
        QVERIFY2(loaded.exitCode == 0 && loaded.out.startsWith("ok "), qPrintable(describe(loaded)));
    }

    void modulePathMovesEveryClassUnderIt()
    {
        const QString file = m_legacyFixtures + u"/whole_module.pt"_qs;
        const QString copy = m_dir.filePath(QStringLiteral("moved.pt"));
        const CommandResult remapped = runInspect({QStringLiteral("remap"), file, QStringLiteral("-o"), copy,
            QStringLiteral("--rename-global"), QStringLiteral("rescue_models=mypackage.rescue_models"),
            QStringLiteral("--allow-dangerous")});
        // A whole pickled model names classes nobody can vet: it is rated dangerous, so the rename
        // needs --allow-dangerous, and the copy says why it was carried.
        QVERIFY2(remapped.err.contains("rated dangerous"), qPrintable(describe(remapped)));
        QVERIFY2(remapped.exitCode == 0, qPrintable(describe(remapped)));
        const std::set<std::string> globals = globalsOf(copy);
        QVERIFY(globals.count("mypackage.rescue_models.RescueNet")
            && globals.count("mypackage.rescue_models.Block"));
        QVERIFY(!globals.count("rescue_models.RescueNet"));
        // Tensors and bytes are unchanged: the extract of the copy is the extract of the original.
        const QString a = m_dir.filePath(QStringLiteral("a.pt")), b = m_dir.filePath(QStringLiteral("b.pt"));
        QCOMPARE(runInspect({QStringLiteral("extract"), file, QStringLiteral("-o"), a}).exitCode, 0);
        QCOMPARE(runInspect({QStringLiteral("extract"), copy, QStringLiteral("-o"), b}).exitCode, 0);
        QFile fa(a), fb(b);
        QVERIFY(fa.open(QIODevice::ReadOnly) && fb.open(QIODevice::ReadOnly));
        QCOMPARE(fa.size(), fb.size());
    }

    void refusesRenamesThatApplyToNothing()
    {
        const QString copy = m_dir.filePath(QStringLiteral("never.pt"));
        const CommandResult unused
            = runInspect({QStringLiteral("remap"), m_legacyFixtures + u"/whole_module.pt"_qs,
                QStringLiteral("-o"), copy, QStringLiteral("--rename-global"),
                QStringLiteral("no_such.Thing=x.Y"), QStringLiteral("--allow-dangerous")});
        QCOMPARE(unused.exitCode, 2);
        QVERIFY(unused.err.contains("no_such.Thing=x.Y"));
        QVERIFY(!QFileInfo::exists(copy));
        const CommandResult malformed
            = runInspect({QStringLiteral("remap"), m_legacyFixtures + u"/whole_module.pt"_qs,
                QStringLiteral("-o"), copy, QStringLiteral("--rename-global"), QStringLiteral("os.system")});
        QCOMPARE(malformed.exitCode, 64);
    }
};

QTEST_GUILESS_MAIN(TestRenameGlobals)
#include "tst_renameglobals.moc"
