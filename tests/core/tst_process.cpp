// SPDX-License-Identifier: MIT
// core/io/process: the one way the CLI and the app run the ckpt-inspect-values helper. Input and
// output larger than a pipe's buffer must not deadlock, a program that never ends must be
// stoppable by cancel and by timeout, and a program that cannot start must say so. core/io/
// sharedlibrary, its neighbour for libraries loaded when present, must leave no loader error behind.
#include "core/io/process.h"
#include "core/io/sharedlibrary.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QTest>

#include <dlfcn.h>
#include <thread>

using namespace ckpt;
using namespace std::chrono_literals;

class TestProcess : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void feedsInputAndReadsBothOutputs()
    {
        ProcessRequest request;
        request.program = "/bin/sh";
        request.arguments = {"-c", "cat; printf 'first\\nsecond' >&2; exit 3"};
        // Several MiB each way: more than a pipe holds, so reading and writing must interleave.
        std::string input;
        for (int i = 0; input.size() < (std::size_t(4) << 20); ++i)
            input += "line " + std::to_string(i) + "\n";
        request.input = input;
        std::vector<std::string> lines;
        request.onErrorLine = [&](std::string_view line) { lines.emplace_back(line); };
        const auto run = runProcess(request);
        QVERIFY(run);
        QVERIFY(run->output == input);
        QCOMPARE(run->errors, std::string("first\nsecond"));
        QCOMPARE(lines, (std::vector<std::string> {"first", "second"})); // the last one without a break too
        QVERIFY(run->exitedNormally);
        QCOMPARE(run->exitCode, 3);
        QVERIFY(!run->succeeded());
    }

    void aProgramThatStopsReadingDoesNotEndThisOne()
    {
        // The input goes to a program that exits without reading it: the write fails with EPIPE
        // instead of SIGPIPE ending the test.
        ProcessRequest request;
        request.program = "/bin/true";
        request.input = std::string(std::size_t(8) << 20, 'x');
        const auto run = runProcess(request);
        QVERIFY(run);
        QVERIFY(run->succeeded());
    }

    void cancelKillsIt()
    {
        ProcessRequest request;
        request.program = "/bin/sleep";
        request.arguments = {"30"};
        QElapsedTimer timer;
        timer.start();
        request.keepGoing = [&] { return timer.elapsed() < 200; };
        const auto run = runProcess(request);
        QVERIFY(run);
        QVERIFY(run->cancelled);
        QVERIFY(!run->succeeded());
        QVERIFY2(timer.elapsed() < 5000, "the program was not killed");
    }

    void timeoutKillsIt()
    {
        ProcessRequest request;
        // Its output stays open while it runs: the timeout must not wait for it to close.
        request.program = "/bin/sleep";
        request.arguments = {"30"};
        request.captureErrors = true;
        request.timeout = 200ms;
        QElapsedTimer timer;
        timer.start();
        const auto run = runProcess(request);
        QVERIFY(run);
        QVERIFY(run->timedOut);
        QVERIFY(!run->exitedNormally);
        QVERIFY2(timer.elapsed() < 5000, "the program was not killed");
    }

    void aMissingProgramIsAnError()
    {
        ProcessRequest request;
        request.program = "/nonexistent/ckpt-inspect-values";
        const auto run = runProcess(request);
        QVERIFY(!run);
        QVERIFY(run.error().message.find("/nonexistent/ckpt-inspect-values") != std::string::npos);
    }

    void findsProgramsBesideThisOne()
    {
        const std::string self = QCoreApplication::applicationFilePath().toStdString();
        const std::string name = self.substr(self.find_last_of('/') + 1);
        QCOMPARE(programBesideThisOne(name), std::optional<std::string>(self));
        QVERIFY(!programBesideThisOne("no-such-helper-program"));
    }

    // A library or symbol that is not there: the loader's reason comes back and no message is left
    // pending for a later dlerror() (in a worker thread, as the app probes for drivers). Whether
    // glibc's buffer is also freed at once cannot be seen through its API: the asan suite's app
    // runs are what would report it (LeakSanitizer, _dlerror_run).
    void aMissingLibraryLeavesNoLoaderErrorBehind()
    {
        std::string whyNot;
        bool opened = true, symbolFound = true, nothingPending = false;
        std::thread probe([&] {
            opened = openSharedLibrary("libckpt-no-such-library.so.1", &whyNot) != nullptr;
            nothingPending = ::dlerror() == nullptr;
            symbolFound = findLibrarySymbol(::dlopen(nullptr, RTLD_NOW), "ckpt_no_such_symbol") != nullptr;
            nothingPending = nothingPending && ::dlerror() == nullptr;
        });
        probe.join();
        QVERIFY(!opened);
        QVERIFY(!symbolFound);
        QVERIFY2(whyNot.find("libckpt-no-such-library.so.1") != std::string::npos, whyNot.c_str());
        QVERIFY(nothingPending);
    }
};

QTEST_GUILESS_MAIN(TestProcess)
#include "tst_process.moc"
