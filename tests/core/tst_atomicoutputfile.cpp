// SPDX-License-Identifier: MIT
// AtomicOutputFile: the target appears only on commit, never replaces the input (same path, a
// symbolic link, a hard link, a "dir/../file" spelling), and every refusal or failure (missing or
// unwritable folder, too little space, a write past RLIMIT_FSIZE, no commit) leaves nothing behind.

#include "core/format/zipwriter.h"
#include "core/io/atomicoutputfile.h"
#include "tests/common/childprocess.h"
#include "tests/common/testfiles.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QTemporaryDir>
#include <QTest>

#include <csignal>
#include <cstring>
#include <functional>

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace ckpt::testing;

using namespace ckpt;

namespace {

bool writeFile(const QString& path, const QByteArray& content)
{
    QFile file(path);
    return file.open(QIODevice::WriteOnly | QIODevice::Truncate) && file.write(content) == content.size();
}

bool writeAll(int fd, const QByteArray& content)
{
    qsizetype done = 0;
    while (done < content.size()) {
        const ssize_t n
            = ::write(fd, content.constData() + done, static_cast<std::size_t>(content.size() - done));
        if (n <= 0)
            return false;
        done += n;
    }
    return true;
}

// Everything in the folder, hidden files included: a refused or abandoned write must leave no
// ".name.XXXXXX.partial" behind.
QStringList folderContents(const QString& folder)
{
    return QDir(folder).entryList(
        QDir::AllEntries | QDir::Hidden | QDir::System | QDir::NoDotAndDotDot, QDir::Name);
}

QString errorOf(const Expected<std::unique_ptr<AtomicOutputFile>>& result)
{
    return result ? QStringLiteral("no error") : QString::fromStdString(result.error().message);
}

} // namespace

class TestAtomicOutputFile : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase()
    {
        // Writes past RLIMIT_FSIZE must fail with EFBIG instead of killing the process, as in the CLI.
        std::signal(SIGXFSZ, SIG_IGN);
    }

    void targetAppearsOnlyOnCommit()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString input = dir.filePath(QStringLiteral("model.pt"));
        QVERIFY(writeFile(input, "input bytes"));
        const QString target = dir.filePath(QStringLiteral("model.cpu.pt"));

        // The named fallback (file systems without O_TMPFILE); unnamedFileIsInvisible covers the default.
        auto created = AtomicOutputFile::create(
            target.toStdString(), input.toStdString(), 1024, TemporaryFileKind::LockedPartial);
        QVERIFY2(created, qPrintable(errorOf(created)));
        AtomicOutputFile& file = **created;
        QCOMPARE(file.kind(), TemporaryFileKind::LockedPartial);
        QVERIFY(file.fd() >= 0);
        QCOMPARE(file.targetPath(), target.toStdString());
        const QString temporary = QString::fromStdString(file.temporaryPath());
        QCOMPARE(QFileInfo(temporary).absolutePath(), dir.path());
        QVERIFY2(QFileInfo(temporary).fileName().startsWith(QLatin1String(".model.cpu.pt.")),
            qPrintable(temporary));
        QVERIFY(temporary.endsWith(QLatin1String(".partial")));
        QVERIFY(QFileInfo::exists(temporary));
        QVERIFY(!QFileInfo::exists(target));
        // Not close-on-exec would leak the descriptor into every child process.
        QVERIFY(::fcntl(file.fd(), F_GETFD) & FD_CLOEXEC);

        QVERIFY(writeAll(file.fd(), "rewritten bytes"));
        QVERIFY(!QFileInfo::exists(target));
        const Status status = file.commit();
        QVERIFY2(!status, status ? status->message.c_str() : "");
        QCOMPARE(readAll(target), QByteArray("rewritten bytes"));
        QCOMPARE(readAll(input), QByteArray("input bytes"));
        QVERIFY(!QFileInfo::exists(temporary));
        QCOMPARE(folderContents(dir.path()),
            (QStringList {QStringLiteral("model.cpu.pt"), QStringLiteral("model.pt")}));

        // The permissions a plain new file gets (mkostemp alone would give 0600).
        const mode_t mask = ::umask(022);
        ::umask(mask);
        struct stat info { };
        QCOMPARE(::stat(QFile::encodeName(target).constData(), &info), 0);
        QCOMPARE(info.st_mode & 07777, 0666 & ~mask);

        QVERIFY(file.commit()); // only once
        created->reset();
        QVERIFY(QFileInfo::exists(target));
    }

    void commitReplacesAnExistingTarget()
    {
        QTemporaryDir dir;
        const QString target = dir.filePath(QStringLiteral("out.pt"));
        QVERIFY(writeFile(target, "old"));
        auto created = AtomicOutputFile::create(target.toStdString(), {}, 0);
        QVERIFY2(created, qPrintable(errorOf(created)));
        QVERIFY(writeAll((*created)->fd(), "new"));
        QCOMPARE(readAll(target), QByteArray("old")); // untouched until the commit
        QVERIFY(!(*created)->commit());
        QCOMPARE(readAll(target), QByteArray("new"));
    }

    void relativeTargetInCurrentFolder()
    {
        QTemporaryDir dir;
        const QString previous = QDir::currentPath();
        QVERIFY(QDir::setCurrent(dir.path()));
        auto created = AtomicOutputFile::create("bare.pt", {}, 0);
        QVERIFY(QDir::setCurrent(previous));
        QVERIFY2(created, qPrintable(errorOf(created)));
        QVERIFY(writeAll((*created)->fd(), "x"));
        QVERIFY(QDir::setCurrent(dir.path()));
        const Status status = (*created)->commit();
        QVERIFY(QDir::setCurrent(previous));
        QVERIFY(!status);
        QCOMPARE(readAll(dir.filePath(QStringLiteral("bare.pt"))), QByteArray("x"));
    }

    void destructorWithoutCommitLeavesNothing()
    {
        QTemporaryDir dir;
        const QString target = dir.filePath(QStringLiteral("abandoned.pt"));
        QString temporary;
        {
            auto created = AtomicOutputFile::create(target.toStdString(), {}, 0);
            QVERIFY2(created, qPrintable(errorOf(created)));
            temporary = QString::fromStdString((*created)->temporaryPath());
            QVERIFY(writeAll((*created)->fd(), QByteArray(100000, 'a')));
            QVERIFY(QFileInfo::exists(temporary));
        }
        QVERIFY(!QFileInfo::exists(temporary));
        QVERIFY(!QFileInfo::exists(target));
        QVERIFY(folderContents(dir.path()).isEmpty());

        // An existing target survives an abandoned rewrite unchanged.
        QVERIFY(writeFile(target, "keep me"));
        {
            auto created = AtomicOutputFile::create(target.toStdString(), {}, 0);
            QVERIFY(created);
            QVERIFY(writeAll((*created)->fd(), "half"));
        }
        QCOMPARE(readAll(target), QByteArray("keep me"));
        QCOMPARE(folderContents(dir.path()), QStringList {QStringLiteral("abandoned.pt")});
    }

    void targetIsTheInput_data()
    {
        QTest::addColumn<QString>("spelling");
        QTest::newRow("same path") << QStringLiteral("same");
        QTest::newRow("dir/../file") << QStringLiteral("dotdot");
        QTest::newRow("./file") << QStringLiteral("dot");
        QTest::newRow("symbolic link to the input") << QStringLiteral("symlink");
        QTest::newRow("symbolic link to the input's folder") << QStringLiteral("folderlink");
        QTest::newRow("hard link to the input") << QStringLiteral("hardlink");
        QTest::newRow("input given through a symbolic link") << QStringLiteral("inputlink");
    }

    void targetIsTheInput()
    {
        QFETCH(QString, spelling);
        QTemporaryDir dir;
        QVERIFY(QDir(dir.path()).mkdir(QStringLiteral("sub")));
        QString input = dir.filePath(QStringLiteral("model.pt"));
        QVERIFY(writeFile(input, "precious"));
        QString target;
        if (spelling == QLatin1String("same")) {
            target = input;
        } else if (spelling == QLatin1String("dotdot")) {
            target = dir.filePath(QStringLiteral("sub/../model.pt"));
        } else if (spelling == QLatin1String("dot")) {
            target = dir.path() + QStringLiteral("/./model.pt");
        } else if (spelling == QLatin1String("symlink")) {
            target = dir.filePath(QStringLiteral("sub/link.pt"));
            QVERIFY(QFile::link(input, target));
        } else if (spelling == QLatin1String("folderlink")) {
            QVERIFY(QFile::link(dir.path(), dir.filePath(QStringLiteral("alias"))));
            target = dir.filePath(QStringLiteral("alias/model.pt"));
        } else if (spelling == QLatin1String("hardlink")) {
            target = dir.filePath(QStringLiteral("sub/hard.pt"));
            QCOMPARE(::link(QFile::encodeName(input).constData(), QFile::encodeName(target).constData()), 0);
        } else if (spelling == QLatin1String("inputlink")) {
            target = input;
            input = dir.filePath(QStringLiteral("sub/input-link.pt"));
            QVERIFY(QFile::link(target, input));
        }
        const QStringList before
            = folderContents(dir.path()) + folderContents(dir.filePath(QStringLiteral("sub")));

        auto created = AtomicOutputFile::create(target.toStdString(), input.toStdString(), 8);
        QVERIFY(!created);
        const QString message = errorOf(created);
        qInfo("%s", qPrintable(message));
        QVERIFY2(
            message.startsWith(QLatin1String("refusing to write over the input file ")), qPrintable(message));
        QVERIFY2(message.contains(target), qPrintable(message));
        QCOMPARE(readAll(dir.filePath(QStringLiteral("model.pt"))), QByteArray("precious"));
        QCOMPARE(folderContents(dir.path()) + folderContents(dir.filePath(QStringLiteral("sub"))), before);
    }

    void differentFileWithTheSameContentIsFine()
    {
        // A copy is not the input: only identity counts, not equal names or bytes.
        QTemporaryDir dir;
        QVERIFY(QDir(dir.path()).mkdir(QStringLiteral("other")));
        const QString input = dir.filePath(QStringLiteral("model.pt"));
        const QString target = dir.filePath(QStringLiteral("other/model.pt"));
        QVERIFY(writeFile(input, "same"));
        QVERIFY(writeFile(target, "same"));
        auto created = AtomicOutputFile::create(target.toStdString(), input.toStdString(), 0);
        QVERIFY2(created, qPrintable(errorOf(created)));
    }

    void missingFolder()
    {
        QTemporaryDir dir;
        const QString target = dir.filePath(QStringLiteral("no/such/folder/out.pt"));
        auto created = AtomicOutputFile::create(target.toStdString(), {}, 0);
        QVERIFY(!created);
        QVERIFY2(errorOf(created).contains(QLatin1String("does not exist")), qPrintable(errorOf(created)));
        QVERIFY2(errorOf(created).contains(dir.filePath(QStringLiteral("no/such/folder"))),
            qPrintable(errorOf(created)));

        // A file where the folder should be.
        QVERIFY(writeFile(dir.filePath(QStringLiteral("plain")), "x"));
        auto underFile
            = AtomicOutputFile::create(dir.filePath(QStringLiteral("plain/out.pt")).toStdString(), {}, 0);
        QVERIFY(!underFile);
        QVERIFY2(errorOf(underFile).contains(QLatin1String("not a folder")), qPrintable(errorOf(underFile)));

        // The target is itself a folder.
        auto folderTarget = AtomicOutputFile::create(dir.path().toStdString(), {}, 0);
        QVERIFY(!folderTarget);
        auto slashTarget = AtomicOutputFile::create(dir.path().toStdString() + "/", {}, 0);
        QVERIFY(!slashTarget);
        QVERIFY2(
            errorOf(slashTarget).contains(QLatin1String("names a folder")), qPrintable(errorOf(slashTarget)));
        QVERIFY(!AtomicOutputFile::create({}, {}, 0));
    }

    void folderNotWritable()
    {
        // root ignores permission bits, so as root the check runs in a forked child that has
        // become `nobody`; as another user a read-only folder is enough.
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString folder = dir.filePath(QStringLiteral("readonly"));
        QVERIFY(QDir(dir.path()).mkdir(QStringLiteral("readonly")));
        QCOMPARE(::chmod(QFile::encodeName(dir.path()).constData(), 0755), 0);
        QCOMPARE(::chmod(QFile::encodeName(folder).constData(), 0555), 0);
        const std::string target = QString(folder + QStringLiteral("/out.pt")).toStdString();

        QString message;
        if (::geteuid() == 0) {
            const passwd* nobody = ::getpwnam("nobody");
            if (!nobody)
                QSKIP("running as root and there is no user 'nobody' to drop to");
            const uid_t uid = nobody->pw_uid;
            const gid_t gid = nobody->pw_gid;
            message = runInChild([&]() -> std::string {
                if (::setgroups(0, nullptr) != 0 || ::setgid(gid) != 0 || ::setuid(uid) != 0)
                    return "cannot become nobody: " + std::string(std::strerror(errno));
                auto created = AtomicOutputFile::create(target, {}, 0);
                return created ? std::string("no error") : created.error().message;
            });
        } else {
            auto created = AtomicOutputFile::create(target, {}, 0);
            message = errorOf(created);
        }
        qInfo("%s", qPrintable(message));
        QVERIFY2(message.startsWith(QLatin1String("cannot write in the folder ")), qPrintable(message));
        QVERIFY2(message.contains(QLatin1String("Permission denied")), qPrintable(message));
        QVERIFY(folderContents(folder).isEmpty());
        QCOMPARE(::chmod(QFile::encodeName(folder).constData(), 0755), 0);
    }

    void notEnoughSpace()
    {
        QTemporaryDir dir;
        struct statvfs fs { };
        QCOMPARE(::statvfs(QFile::encodeName(dir.path()).constData(), &fs), 0);
        const std::uint64_t available = static_cast<std::uint64_t>(fs.f_bavail) * fs.f_frsize;
        const std::uint64_t needed = available + (1ull << 40);
        auto created
            = AtomicOutputFile::create(dir.filePath(QStringLiteral("huge.pt")).toStdString(), {}, needed);
        QVERIFY(!created);
        const QString message = errorOf(created);
        qInfo("%s", qPrintable(message));
        QVERIFY2(message.startsWith(QLatin1String("not enough space in ")), qPrintable(message));
        QVERIFY2(message.contains(QLatin1String(" TiB")), qPrintable(message)); // the need, in human units
        QVERIFY2(message.contains(QLatin1String("are free")), qPrintable(message));
        QVERIFY(folderContents(dir.path()).isEmpty());

        // What is free is enough.
        auto fits
            = AtomicOutputFile::create(dir.filePath(QStringLiteral("small.pt")).toStdString(), {}, 4096);
        QVERIFY2(fits, qPrintable(errorOf(fits)));
    }

    void writeBeyondFileSizeLimit()
    {
        // A write that the system refuses (here RLIMIT_FSIZE, in a forked child with SIGXFSZ
        // ignored, as the CLI runs) becomes an error naming the cause, and abandoning the file
        // leaves neither the target nor the temporary file.
        QTemporaryDir dir;
        const std::string target = dir.filePath(QStringLiteral("limited.pt")).toStdString();
        const QString message = runInChild([&]() -> std::string {
            std::signal(SIGXFSZ, SIG_IGN);
            const rlimit limit {256 << 10, RLIM_INFINITY};
            if (::setrlimit(RLIMIT_FSIZE, &limit) != 0)
                return "setrlimit failed";
            auto created = AtomicOutputFile::create(target, {}, 1 << 20);
            if (!created)
                return "create failed: " + created.error().message;
            TorchZipWriter writer((*created)->fd());
            const std::vector<std::uint8_t> payload(1 << 20, 7);
            if (Status status = writer.addRecord("limited/data.pkl", payload))
                return status->message;
            return "no error";
        });
        qInfo("%s", qPrintable(message));
        QVERIFY2(message.contains(QLatin1String("File too large")), qPrintable(message));
        QVERIFY(!QFileInfo::exists(QString::fromStdString(target)));
        QVERIFY(folderContents(dir.path()).isEmpty());
    }

    // AtomicOutputFile::write, the one write loop: everything given is appended, in order.
    void writeAppendsEverything()
    {
        QTemporaryDir dir;
        const QString target = dir.filePath(QStringLiteral("written.bin"));
        auto created = AtomicOutputFile::create(target.toStdString(), {}, 8 << 20);
        QVERIFY(created);
        std::vector<std::uint8_t> large(5 << 20);
        for (std::size_t i = 0; i < large.size(); ++i)
            large[i] = static_cast<std::uint8_t>(i * 131 + i / 4096);
        QVERIFY(!(*created)->write(std::string_view("head:")));
        QVERIFY(!(*created)->write(ByteView(large.data(), large.size())));
        QVERIFY(!(*created)->write(ByteView()));
        QVERIFY(!(*created)->write(std::string_view(":tail")));
        QVERIFY(!(*created)->commit());
        const QByteArray bytes = readAll(target);
        QCOMPARE(bytes.size(), qsizetype(5 + large.size() + 5));
        QVERIFY(bytes.startsWith("head:") && bytes.endsWith(":tail"));
        QVERIFY(std::memcmp(bytes.constData() + 5, large.data(), large.size()) == 0);
    }

    // A write the system refuses names the target and the cause: a full device (the file's
    // descriptor pointed at /dev/full) and a closed descriptor.
    void writeFailureNamesTheTarget()
    {
        QTemporaryDir dir;
        const std::string target = dir.filePath(QStringLiteral("full.pt")).toStdString();
        auto created = AtomicOutputFile::create(target, {}, 4096);
        QVERIFY(created);
        const int full = ::open("/dev/full", O_WRONLY | O_CLOEXEC);
        QVERIFY(full >= 0);
        QVERIFY(::dup2(full, (*created)->fd()) == (*created)->fd());
        ::close(full);
        const Status refused = (*created)->write(std::string_view("some bytes"));
        QVERIFY(refused);
        QVERIFY2(QString::fromStdString(refused->message).contains(QString::fromStdString(target)),
            refused->message.c_str());
        QVERIFY2(QString::fromStdString(refused->message).contains(QString::fromUtf8(std::strerror(ENOSPC))),
            refused->message.c_str());

        const std::string closedTarget = dir.filePath(QStringLiteral("closed.pt")).toStdString();
        auto closed = AtomicOutputFile::create(closedTarget, {}, 4096);
        QVERIFY(closed);
        const int devNull = ::open("/dev/null", O_RDONLY | O_CLOEXEC); // a descriptor that cannot write
        QVERIFY(devNull >= 0);
        QVERIFY(::dup2(devNull, (*closed)->fd()) == (*closed)->fd());
        ::close(devNull);
        const Status notWritten = (*closed)->write(std::string_view("some bytes"));
        QVERIFY(notWritten);
        QVERIFY2(QString::fromStdString(notWritten->message).contains(QString::fromStdString(closedTarget)),
            notWritten->message.c_str());
        QVERIFY2(
            QString::fromStdString(notWritten->message).contains(QString::fromUtf8(std::strerror(EBADF))),
            notWritten->message.c_str());
        created->reset();
        closed->reset();
        QVERIFY(!QFileInfo::exists(QString::fromStdString(target)));
        QVERIFY(!QFileInfo::exists(QString::fromStdString(closedTarget)));
    }

    void writtenArchiveCommits()
    {
        // The whole path the remap writer takes: writer on the temporary file, finish, commit.
        QTemporaryDir dir;
        const QString target = dir.filePath(QStringLiteral("small.pt"));
        auto created = AtomicOutputFile::create(target.toStdString(), {}, 4096);
        QVERIFY(created);
        TorchZipWriter writer((*created)->fd());
        const std::string version = "3\n";
        QVERIFY(!writer.addRecord("small/version",
            ByteView(reinterpret_cast<const std::uint8_t*>(version.data()), version.size())));
        QVERIFY(!writer.finish());
        QVERIFY(!(*created)->commit());
        QCOMPARE(static_cast<std::uint64_t>(QFileInfo(target).size()), writer.bytesWritten());
        QVERIFY(readAll(target).startsWith("PK\x03\x04"));
    }

    // Issue 9: a save killed with SIGKILL left its ".partial" file (as large as the output) for
    // ever. The default is an unnamed file that only gets a name at commit.
    void unnamedFileIsInvisible()
    {
        QTemporaryDir dir;
        const QString target = dir.filePath(QStringLiteral("unnamed.pt"));
        auto created = AtomicOutputFile::create(target.toStdString(), {}, 0);
        QVERIFY2(created, qPrintable(errorOf(created)));
        if ((*created)->kind() != TemporaryFileKind::Unnamed)
            QSKIP("this file system has no O_TMPFILE; the named fallback is tested below");
        QVERIFY(writeAll((*created)->fd(), "unnamed bytes"));
        QVERIFY(folderContents(dir.path()).isEmpty());
        // Readable by path before the commit (the remap writer verifies the copy that way).
        QCOMPARE(readAll(QString::fromStdString((*created)->temporaryPath())), QByteArray("unnamed bytes"));
        QVERIFY(!(*created)->commit());
        QCOMPARE(readAll(target), QByteArray("unnamed bytes"));
        QCOMPARE(folderContents(dir.path()), QStringList {QStringLiteral("unnamed.pt")});

        // Over an existing target: replaced in one step, nothing else left.
        auto again = AtomicOutputFile::create(target.toStdString(), {}, 0);
        QVERIFY(again);
        QVERIFY(writeAll((*again)->fd(), "second"));
        QCOMPARE(readAll(target), QByteArray("unnamed bytes"));
        QVERIFY(!(*again)->commit());
        QCOMPARE(readAll(target), QByteArray("second"));
        QCOMPARE(folderContents(dir.path()), QStringList {QStringLiteral("unnamed.pt")});
    }

    void killedWriterLeavesNothing_data()
    {
        QTest::addColumn<bool>("unnamed");
        QTest::newRow("unnamed file") << true;
        QTest::newRow("locked .partial fallback") << false;
    }
    void killedWriterLeavesNothing()
    {
        QFETCH(bool, unnamed);
        QTemporaryDir dir;
        const std::string target = dir.filePath(QStringLiteral("killed.pt")).toStdString();
        const TemporaryFileKind kind
            = unnamed ? TemporaryFileKind::Unnamed : TemporaryFileKind::LockedPartial;
        // A writer that another process holds open, alive, for the whole test: its file must survive.
        auto alive = AtomicOutputFile::create(target, {}, 0, TemporaryFileKind::LockedPartial);
        QVERIFY(alive);
        QVERIFY(writeAll((*alive)->fd(), "alive"));

        const pid_t pid = ::fork();
        QVERIFY(pid >= 0);
        if (pid == 0) {
            auto created = AtomicOutputFile::create(target, {}, 0, kind);
            if (created) {
                const QByteArray chunk(1 << 20, 'k');
                for (int i = 0; i < 4; ++i)
                    writeAll((*created)->fd(), chunk);
            }
            ::raise(SIGKILL); // no destructor, no cleanup: what the OOM killer does
            ::_exit(3);
        }
        int wstatus = 0;
        QCOMPARE(::waitpid(pid, &wstatus, 0), pid);
        QVERIFY(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGKILL);

        const QString aliveName = QFileInfo(QString::fromStdString((*alive)->temporaryPath())).fileName();
        QStringList left = folderContents(dir.path());
        left.removeAll(aliveName);
        if (unnamed) {
            // The kernel freed the killed writer's file: it never had a name.
            QVERIFY2(left.isEmpty(), qPrintable(left.join(u' ')));
        } else {
            // The fallback leaves its file, unlocked now; the next writer in the folder removes it.
            QCOMPARE(left.size(), 1);
            QVERIFY(left.front().endsWith(QLatin1String(".partial")));
            auto next = AtomicOutputFile::create(target, {}, 0, TemporaryFileKind::LockedPartial);
            QVERIFY(next);
            QStringList after = folderContents(dir.path());
            after.removeAll(aliveName);
            after.removeAll(QFileInfo(QString::fromStdString((*next)->temporaryPath())).fileName());
            QVERIFY2(after.isEmpty(), qPrintable(after.join(u' ')));
        }
        // The live writer's file is untouched and still commits.
        QVERIFY(folderContents(dir.path()).contains(aliveName));
        QVERIFY(!(*alive)->commit());
        QCOMPARE(readAll(QString::fromStdString(target)), QByteArray("alive"));
    }
};

QTEST_GUILESS_MAIN(TestAtomicOutputFile)
#include "tst_atomicoutputfile.moc"
