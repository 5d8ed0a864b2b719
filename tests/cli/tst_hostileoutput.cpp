// SPDX-License-Identifier: MIT
// What the real `ckpt-inspect` prints for hostile files, and what it leaves when killed (issue 9):
// no control character from a file reaches the terminal (a tensor or global named
// "\x1b[30A\x1b[J..." must not move the cursor and hide the "dangerous" lines), the Python it
// prints compiles, and a remap killed with SIGKILL mid-write leaves no file behind and the input
// unchanged. The hostile checkpoint is built opcode by opcode by
// tests/data/malformed/make_hostile_names.py; it is never unpickled.
#include "fixturecomparison.h"

#include <QCryptographicHash>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <csignal>
#include <thread>

#include <sys/wait.h>
#include <unistd.h>

using namespace ckpt;

namespace {

const QString kHostile = QStringLiteral(CKPT_SOURCE_DIR "/tests/data/malformed/hostile_names.pt");

// The first byte sequence in `text` a terminal would act on: C0 controls other than the line
// break, DEL, C1 controls in UTF-8 (U+0080-U+009F) and direction overrides (U+202A-U+202E,
// U+2066-U+2069). Empty when there is none.
QString firstTerminalControl(const QByteArray& text)
{
    for (qsizetype i = 0; i < text.size(); ++i) {
        const auto byte = static_cast<unsigned char>(text[i]);
        const auto next = i + 1 < text.size() ? static_cast<unsigned char>(text[i + 1]) : 0;
        const auto third = i + 2 < text.size() ? static_cast<unsigned char>(text[i + 2]) : 0;
        const bool c0 = (byte < 0x20 && byte != '\n') || byte == 0x7f;
        const bool c1 = byte == 0xc2 && next >= 0x80 && next <= 0x9f;
        const bool bidi = byte == 0xe2
            && ((next == 0x80 && third >= 0xaa && third <= 0xae)
                || (next == 0x81 && third >= 0xa6 && third <= 0xa9));
        if (c0 || c1 || bidi)
            return QStringLiteral("byte %1 at %2 in: %3")
                .arg(byte, 2, 16, QLatin1Char('0'))
                .arg(i)
                .arg(QString::fromUtf8(text.mid(std::max<qsizetype>(0, i - 60), 120)));
    }
    return {};
}

} // namespace

class TestHostileOutput : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void textOutputEscapesControlCharacters_data()
    {
        QTest::addColumn<QStringList>("arguments");
        QTest::newRow("info") << QStringList {QStringLiteral("info"), kHostile};
        QTest::newRow("check") << QStringList {QStringLiteral("check"), kHostile};
        QTest::newRow("plan") << QStringList {QStringLiteral("plan"), kHostile, QStringLiteral("--target"),
            QStringLiteral("cuda:0=1GiB,cpu=8GiB")};
        QTest::newRow("plan --export map-location") << QStringList {QStringLiteral("plan"), kHostile,
            QStringLiteral("--target"), QStringLiteral("cuda:0=1GiB,cpu=8GiB"), QStringLiteral("--export"),
            QStringLiteral("map-location")};
        QTest::newRow("remap --print-map-location")
            << QStringList {QStringLiteral("remap"), kHostile, QStringLiteral("--print-map-location"),
                   QStringLiteral("--tensor"), QStringLiteral("line\nbreak=cuda:0")};
        QTest::newRow("remap, unknown tensor (stderr)")
            << QStringList {QStringLiteral("remap"), kHostile, QStringLiteral("--print-map-location"),
                   QStringLiteral("--tensor"), QStringLiteral("\x1b[2Jnone\x1b[8m=cpu")};
    }
    void textOutputEscapesControlCharacters()
    {
        QFETCH(QStringList, arguments);
        const CommandResult result = runInspect(arguments);
        QVERIFY2(result.exitCode >= 0, "ckpt-inspect crashed");
        QVERIFY2(!result.out.isEmpty() || !result.err.isEmpty(), "no output");
        const QString inOut = firstTerminalControl(result.out);
        QVERIFY2(inOut.isEmpty(), qPrintable(inOut));
        const QString inErr = firstTerminalControl(result.err);
        QVERIFY2(inErr.isEmpty(), qPrintable(inErr));
    }

    // JSON goes to standard output past the terminal filter (terminal.h: the writer escapes
    // control bytes itself), so nothing but its own line breaks may be a C0 control or DEL, and
    // the hostile names are there as JSON escapes. (C1 controls and direction overrides are valid
    // UTF-8 that JSON carries as they are, through the filter or not.)
    void jsonOutputHoldsNoControlByte_data()
    {
        QTest::addColumn<QStringList>("arguments");
        QTest::newRow("info --json") << QStringList {
            QStringLiteral("info"), QStringLiteral("--json"), kHostile};
        QTest::newRow("check --json")
            << QStringList {QStringLiteral("check"), QStringLiteral("--json"), kHostile};
    }
    void jsonOutputHoldsNoControlByte()
    {
        QFETCH(QStringList, arguments);
        const CommandResult result = runInspect(arguments);
        QVERIFY2(result.exitCode >= 0, "ckpt-inspect crashed");
        for (qsizetype i = 0; i < result.out.size(); ++i) {
            const auto byte = static_cast<unsigned char>(result.out[i]);
            QVERIFY2((byte >= 0x20 || byte == '\n') && byte != 0x7f,
                qPrintable(QStringLiteral("byte %1 at %2").arg(byte, 2, 16, QLatin1Char('0')).arg(i)));
        }
        for (const char* escaped :
            {"up\\u001b[30A\\u001b[Jcleared", "os\\u001b[8m.system\\u001b[2J", "bell\\u0007tab\\tcr\\r"})
            QVERIFY2(result.out.contains(escaped), escaped);
    }

    // The names are still there, visibly escaped, and the dangerous global is named.
    void escapedNamesStayReadable()
    {
        const CommandResult info = runInspect({QStringLiteral("info"), kHostile});
        QCOMPARE(info.exitCode, 0);
        for (const char* shown : {"up\\x1b[30A\\x1b[Jcleared", "hidden\\x1b[8mtext", "line\\nbreak",
                 "bidi\\u202eevil", "csi\\x9b2J", "bell\\x07tab\\tcr\\r"})
            QVERIFY2(info.out.contains(shown), shown);
        const CommandResult check = runInspect({QStringLiteral("check"), kHostile});
        QVERIFY2(check.out.contains("os\\x1b[8m.system\\x1b[2J"), check.out.constData());
    }

    // The per-tensor snippet `remap --print-map-location` prints compiles, hostile names and all.
    void printedPythonCompiles()
    {
        QStringList arguments {QStringLiteral("remap"), kHostile, QStringLiteral("--print-map-location")};
        for (const char* name : {"line\nbreak", "quote'\"\\back", "bell\x07tab\tcr\r",
                 "csi\xc2\x9b"
                 "2J"})
            arguments << QStringLiteral("--tensor") << QString::fromUtf8(name) + QStringLiteral("=cuda:0");
        const CommandResult result = runInspect(arguments);
        QCOMPARE(result.exitCode, 0);
        QVERIFY(result.out.contains("moves = {"));
        QProcess python;
        python.start(QStringLiteral(CKPT_LEGACY_PYTHON),
            {QStringLiteral("-c"),
                QStringLiteral("import ast, sys\n"
                               "tree = ast.parse(sys.stdin.read())\n"
                               "names = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)}\n"
                               "for name in ['line\\nbreak', 'quote\\'\"\\\\back', 'bell\\x07tab\\tcr\\r', "
                               "'csi\\x9b2J']:\n"
                               "    assert name in names, (name, names)\n")});
        python.write(result.out);
        python.closeWriteChannel();
        QVERIFY(python.waitForFinished(60'000));
        QVERIFY2(python.exitCode() == 0, python.readAllStandardError().constData());
    }

    // Issue 9: a save killed with SIGKILL left its ".partial" file, as large as the output, for
    // ever. The input (written by real torch) is large enough that the remap is still writing when
    // the kill comes: the test waits until the process holds its output open, then kills it.
    void killedRemapLeavesNothing()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString input = dir.filePath(QStringLiteral("big.pt"));
        QProcess torch;
        torch.start(QStringLiteral(CKPT_LEGACY_PYTHON),
            {QStringLiteral("-c"),
                QStringLiteral("import sys, torch; torch.save({'w': torch.ones(48 << 20), 'b': "
                               "torch.zeros(3)}, sys.argv[1])"),
                input});
        QVERIFY(torch.waitForFinished(300'000));
        QVERIFY2(torch.exitCode() == 0, torch.readAllStandardError().constData());
        const QByteArray before = sha256Of(input);
        const QString output = dir.filePath(QStringLiteral("copy.pt"));

        // A try can miss: the copy may finish between the moment it is seen writing and the kill
        // (the remap got faster, and on a loaded machine this process may wait for a core), so it
        // tries until one kill lands mid-write; a try that finished costs a fraction of a second.
        int killedMidWrite = 0;
        for (int attempt = 0; attempt < 20 && killedMidWrite == 0; ++attempt) {
            const pid_t pid = ::fork();
            QVERIFY(pid >= 0);
            if (pid == 0) {
                ::execl(CKPT_INSPECT_BINARY, CKPT_INSPECT_BINARY, "remap", input.toLocal8Bit().constData(),
                    "-o", output.toLocal8Bit().constData(), "--map", "*=cuda:0", static_cast<char*>(nullptr));
                ::_exit(127);
            }
            // Wait until it holds a file in the folder open for writing (not the input), then kill.
            const QString fdFolder = QStringLiteral("/proc/%1/fd").arg(pid);
            QElapsedTimer timer;
            timer.start();
            bool writing = false;
            while (!writing && timer.elapsed() < 60'000) {
                for (const QFileInfo& fd : QDir(fdFolder).entryInfoList(QDir::Files | QDir::System)) {
                    const QString target = fd.symLinkTarget();
                    if (target.startsWith(dir.path()) && target != input)
                        writing = true;
                }
                int status = 0;
                if (::waitpid(pid, &status, WNOHANG) == pid)
                    break; // finished before it was caught: try again
                if (!writing)
                    std::this_thread::sleep_for(std::chrono::microseconds(200));
            }
            if (writing)
                ::kill(pid, SIGKILL);
            int status = 0;
            ::waitpid(pid, &status, 0);
            if (writing && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
                ++killedMidWrite;
            QFile::remove(output); // a run that finished first wrote a complete copy
        }
        QVERIFY2(killedMidWrite > 0, "the remap was never caught writing");
        const QStringList left
            = QDir(dir.path())
                  .entryList(QDir::AllEntries | QDir::Hidden | QDir::System | QDir::NoDotAndDotDot);
        QCOMPARE(left, QStringList {QStringLiteral("big.pt")});
        QCOMPARE(sha256Of(input), before);
    }
};

QTEST_GUILESS_MAIN(TestHostileOutput)
#include "tst_hostileoutput.moc"
