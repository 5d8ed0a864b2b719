// SPDX-License-Identifier: MIT
// MappedFile: read-only maps of whole files, and the errors a person sees when a path is wrong.

#include "core/io/mappedfile.h"
#include "core/io/readahead.h"

#include <QCryptographicHash>
#include <QDeadlineTimer>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QTemporaryDir>
#include <QTest>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <mutex>
#include <vector>

using namespace ckpt;

namespace {

QByteArray bytesOf(ByteView view)
{
    return QByteArray(reinterpret_cast<const char*>(view.data()), static_cast<qsizetype>(view.size()));
}

QString sourcePath(const char* relative)
{
    return QStringLiteral(CKPT_SOURCE_DIR "/") + QString::fromUtf8(relative);
}

bool writeFile(const QString& path, const QByteArray& content)
{
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly))
        return false;
    return file.write(content) == content.size();
}

// Pages of [offset, offset + length) of a mapping in the page cache, by mincore (which reads nothing).
std::size_t residentPages(const std::uint8_t* mapping, std::size_t offset, std::size_t length)
{
    const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    std::vector<unsigned char> flags((length + page - 1) / page);
    if (mincore(const_cast<std::uint8_t*>(mapping + offset), length, flags.data()) != 0)
        return 0;
    std::size_t resident = 0;
    for (unsigned char flag : flags)
        resident += flag & 1u;
    return resident;
}

// Kilobytes of this process's resident set in the mapping that holds `address`, from
// /proc/self/smaps (its "Rss:" line): the pages this process has touched, not the page cache's.
long residentKilobytesOfMapping(const void* address)
{
    QFile smaps(QStringLiteral("/proc/self/smaps"));
    if (!smaps.open(QIODevice::ReadOnly))
        return -1;
    const auto at = reinterpret_cast<std::uintptr_t>(address);
    bool inside = false;
    for (const QByteArray& line : smaps.readAll().split('\n')) {
        const int dash = line.indexOf('-');
        const int space = line.indexOf(' ');
        if (dash > 0 && space > dash && !line.startsWith("Rss")) {
            bool ok1 = false, ok2 = false;
            const auto start = line.left(dash).toULongLong(&ok1, 16);
            const auto end = line.mid(dash + 1, space - dash - 1).toULongLong(&ok2, 16);
            if (ok1 && ok2) {
                inside = start <= at && at < end;
                continue;
            }
        }
        if (inside && line.startsWith("Rss:"))
            return line.mid(4).trimmed().split(' ').front().toLong();
    }
    return -1;
}

} // namespace

class TestMappedFile : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { QVERIFY2(m_dir.isValid(), qPrintable(m_dir.errorString())); }

    // Real files of several sizes map to exactly their bytes.
    void mapsWholeFile_data()
    {
        QTest::addColumn<QString>("path");
        QTest::addRow("torch zip") << sourcePath("tests/data/zip/torch_state_dict.pt");
        QTest::addRow("torchscript") << sourcePath("tests/data/zip/torchscript_module.pt");
        QTest::addRow("tar, 10 KiB") << sourcePath("tests/data/sniff/torch_tar_layout.tar");
        QTest::addRow("empty") << sourcePath("tests/data/sniff/empty.pt");
    }

    void mapsWholeFile()
    {
        QFETCH(QString, path);
        QFile reference(path);
        QVERIFY2(reference.open(QIODevice::ReadOnly), qPrintable(path));
        const QByteArray expected = reference.readAll();

        auto mapped = MappedFile::open(path.toStdString());
        QVERIFY2(mapped.hasValue(), mapped.hasValue() ? "" : mapped.error().message.c_str());
        QCOMPARE((*mapped)->size(), static_cast<std::uint64_t>(expected.size()));
        QCOMPARE(bytesOf((*mapped)->bytes()), expected);
        QCOMPARE(QString::fromStdString((*mapped)->path()), path);
    }

    void emptyFileIsAValidEmptyMap()
    {
        const QString path = m_dir.filePath(QStringLiteral("empty.bin"));
        QVERIFY(writeFile(path, {}));
        auto mapped = MappedFile::open(path.toStdString());
        QVERIFY(mapped.hasValue());
        QCOMPARE((*mapped)->size(), std::uint64_t {0});
        QVERIFY((*mapped)->bytes().empty());
    }

    void largerThanOnePage()
    {
        QByteArray content(3 * 4096 + 17, '\0');
        for (qsizetype i = 0; i < content.size(); ++i)
            content[i] = static_cast<char>((i * 131) & 0xff);
        const QString path = m_dir.filePath(QStringLiteral("pages.bin"));
        QVERIFY(writeFile(path, content));
        auto mapped = MappedFile::open(path.toStdString());
        QVERIFY(mapped.hasValue());
        QCOMPARE(bytesOf((*mapped)->bytes()), content);
    }

    void missingFile()
    {
        const std::string path = m_dir.filePath(QStringLiteral("does-not-exist.pt")).toStdString();
        auto mapped = MappedFile::open(path);
        QVERIFY(!mapped.hasValue());
        const QString message = QString::fromStdString(mapped.error().message);
        QVERIFY2(message.contains(QLatin1String("no such file")), qPrintable(message));
        QVERIFY2(message.contains(QString::fromStdString(path)), qPrintable(message));
    }

    void missingDirectoryInPath()
    {
        auto mapped = MappedFile::open(m_dir.filePath(QStringLiteral("nowhere/model.pt")).toStdString());
        QVERIFY(!mapped.hasValue());
        QVERIFY(mapped.error().message.find("no such file") != std::string::npos);
    }

    void fileUsedAsDirectory()
    {
        const QString file = m_dir.filePath(QStringLiteral("plain.txt"));
        QVERIFY(writeFile(file, "x"));
        auto mapped = MappedFile::open(QString(file + QStringLiteral("/inside.pt")).toStdString());
        QVERIFY(!mapped.hasValue());
        QVERIFY2(mapped.error().message.find("not a directory") != std::string::npos,
            mapped.error().message.c_str());
    }

    void directoryIsRefused()
    {
        auto mapped = MappedFile::open(m_dir.path().toStdString());
        QVERIFY(!mapped.hasValue());
        const QString message = QString::fromStdString(mapped.error().message);
        QVERIFY2(message.contains(QLatin1String("is a directory")), qPrintable(message));
    }

    void emptyPathIsRefused()
    {
        auto mapped = MappedFile::open({});
        QVERIFY(!mapped.hasValue());
        QVERIFY(!mapped.error().message.empty());
    }

    void permissionDenied()
    {
        const QString path = m_dir.filePath(QStringLiteral("secret.pt"));
        QVERIFY(writeFile(path, "secret"));
        QVERIFY(::chmod(QFile::encodeName(path).constData(), 0) == 0);
        const std::string pathText = path.toStdString();
        if (::geteuid() != 0) {
            auto mapped = MappedFile::open(pathText);
            ::chmod(QFile::encodeName(path).constData(), 0600);
            QVERIFY(!mapped.hasValue());
            const QString message = QString::fromStdString(mapped.error().message);
            QVERIFY2(message.contains(QLatin1String("permission denied")), qPrintable(message));
            return;
        }
        // root reads every file regardless of its mode (as in many containers): try as "nobody" in a
        // child process instead.
        QVERIFY(::chmod(QFile::encodeName(m_dir.path()).constData(), 0711) == 0);
        const pid_t child = ::fork();
        QVERIFY(child >= 0);
        if (child == 0) {
            if (::setgid(65534) != 0 || ::setuid(65534) != 0)
                ::_exit(2);
            auto mapped = MappedFile::open(pathText);
            if (mapped.hasValue())
                ::_exit(3);
            ::_exit(mapped.error().message.find("permission denied") != std::string::npos ? 0 : 4);
        }
        int status = 0;
        QVERIFY(::waitpid(child, &status, 0) == child);
        ::chmod(QFile::encodeName(path).constData(), 0600);
        ::chmod(QFile::encodeName(m_dir.path()).constData(), 0700);
        QVERIFY(WIFEXITED(status));
        if (WEXITSTATUS(status) == 2)
            QSKIP("running as root and cannot switch to the nobody user, so permission errors cannot be "
                  "produced");
        QCOMPARE(WEXITSTATUS(status), 0);
    }

    // A FIFO must be refused at once, not block waiting for a writer.
    void fifoIsRefusedWithoutBlocking()
    {
        const QString path = m_dir.filePath(QStringLiteral("pipe"));
        QVERIFY(::mkfifo(QFile::encodeName(path).constData(), 0600) == 0);
        auto mapped = MappedFile::open(path.toStdString());
        QVERIFY(!mapped.hasValue());
        const QString message = QString::fromStdString(mapped.error().message);
        QVERIFY2(message.contains(QLatin1String("not a regular file")), qPrintable(message));
    }

    void followsSymlinks()
    {
        const QString target = m_dir.filePath(QStringLiteral("target.bin"));
        const QString link = m_dir.filePath(QStringLiteral("link.bin"));
        QVERIFY(writeFile(target, "through a link"));
        QVERIFY(QFile::link(target, link));
        auto mapped = MappedFile::open(link.toStdString());
        QVERIFY(mapped.hasValue());
        QCOMPARE(bytesOf((*mapped)->bytes()), QByteArray("through a link"));
    }

    // Opening and dropping a map leaves the file exactly as it was, and a read-only file opens.
    void neverModifiesTheFile()
    {
        const QString path = m_dir.filePath(QStringLiteral("readonly.pt"));
        QFile source(sourcePath("tests/data/zip/torch_buffer.pt"));
        QVERIFY(source.open(QIODevice::ReadOnly));
        const QByteArray content = source.readAll();
        QVERIFY(writeFile(path, content));
        QVERIFY(::chmod(QFile::encodeName(path).constData(), 0444) == 0);
        struct stat before { };
        QVERIFY(::stat(QFile::encodeName(path).constData(), &before) == 0);

        {
            auto mapped = MappedFile::open(path.toStdString());
            QVERIFY(mapped.hasValue());
            QCOMPARE(bytesOf((*mapped)->bytes()), content);
        }

        struct stat after { };
        QVERIFY(::stat(QFile::encodeName(path).constData(), &after) == 0);
        QCOMPARE(after.st_size, before.st_size);
        QCOMPARE(after.st_mtim.tv_sec, before.st_mtim.tv_sec);
        QCOMPARE(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);
        QCOMPARE(after.st_mode, before.st_mode);
        QFile check(path);
        QVERIFY(check.open(QIODevice::ReadOnly));
        QCOMPARE(check.readAll(), content);
        ::chmod(QFile::encodeName(path).constData(), 0600);
    }

    // The map outlives the path: deleting the file does not invalidate bytes already mapped.
    void survivesUnlink()
    {
        const QString path = m_dir.filePath(QStringLiteral("unlinked.bin"));
        QVERIFY(writeFile(path, "still here"));
        auto mapped = MappedFile::open(path.toStdString());
        QVERIFY(mapped.hasValue());
        QVERIFY(QFile::remove(path));
        QCOMPARE(bytesOf((*mapped)->bytes()), QByteArray("still here"));
    }

    void fromBufferOwnsItsBytes()
    {
        ByteBuffer buffer {1, 2, 3, 4, 5};
        auto file = MappedFile::fromBuffer(std::move(buffer), "inflated record");
        QCOMPARE(file->size(), std::uint64_t {5});
        QCOMPARE(file->bytes()[4], std::uint8_t {5});
        QCOMPARE(QString::fromStdString(file->path()), QStringLiteral("inflated record"));

        auto empty = MappedFile::fromBuffer({}, "nothing");
        QCOMPARE(empty->size(), std::uint64_t {0});
        QVERIFY(empty->bytes().empty());
    }

    // A reader gives back the pages it walked (issue 28): they leave this process's resident set,
    // the bytes read the same when touched again, and bytes this object did not map itself (a
    // buffer, whose memory MADV_DONTNEED would zero, or a slice) are left as they are.
    void releasedPagesLeaveTheResidentSetNotTheBytes()
    {
        const auto page = static_cast<qsizetype>(sysconf(_SC_PAGESIZE));
        QByteArray content(64 * page, '\0');
        for (qsizetype i = 0; i < content.size(); ++i)
            content[i] = static_cast<char>((i * 7 + i / page) & 0xff);
        const QString path = m_dir.filePath(QStringLiteral("released.bin"));
        QVERIFY(writeFile(path, content));
        auto opened = MappedFile::open(path.toStdString());
        QVERIFY(opened.hasValue());
        const auto& file = *opened;
        QCOMPARE(bytesOf(file->bytes()), content); // touches every page
        QVERIFY(residentKilobytesOfMapping(file->bytes().data()) >= 64 * page / 1024);
        // Only whole pages inside the range: of [0.5, 10.5 pages) the nine from page 1 to 9 go.
        file->releaseResidentPages(
            static_cast<std::uint64_t>(page / 2), static_cast<std::uint64_t>(10 * page));
        QCOMPARE(residentKilobytesOfMapping(file->bytes().data()), long(55 * page / 1024));
        file->releaseResidentPages(0, file->size() + 12345); // clamped to the file
        QCOMPARE(residentKilobytesOfMapping(file->bytes().data()), 0L);
        QCOMPARE(bytesOf(file->bytes()), content);

        auto slice
            = MappedFile::slice(file, static_cast<std::uint64_t>(page), static_cast<std::uint64_t>(4 * page));
        QVERIFY(slice);
        slice->releaseResidentPages(0, slice->size());
        QCOMPARE(
            residentKilobytesOfMapping(file->bytes().data()), long(64 * page / 1024)); // nothing given back
        QCOMPARE(bytesOf(slice->bytes()), content.mid(page, 4 * page));

        ByteBuffer buffer(static_cast<std::size_t>(8 * page), 0x5a);
        auto held = MappedFile::fromBuffer(std::move(buffer), "inflated record");
        held->releaseResidentPages(0, held->size());
        QCOMPARE(bytesOf(held->bytes()), QByteArray(8 * page, '\x5a'));
    }

    // A DCP chunk is read as a file of its own: a slice shares the map, keeps it alive after the
    // whole is let go, and a range past the end is refused rather than clamped.
    // ReadAhead asks the kernel for the bytes the pass will read next, up to its window ahead of
    // it, without touching them: a cold file's pages come into the cache while this process reads
    // none of them, and nothing past the window is asked for until the pass moves.
    void readAheadAsksForTheBytesAheadOfThePass()
    {
        constexpr std::size_t kMiB = std::size_t(1) << 20;
        const QString path = m_dir.filePath(QStringLiteral("cold.bin"));
        QVERIFY(writeFile(path, QByteArray(24 * kMiB, 'x')));
        {
            const int fd = ::open(path.toLocal8Bit().constData(), O_RDONLY);
            QVERIFY(fd >= 0);
            ::fsync(fd);
            ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
            ::close(fd);
        }
        auto file = MappedFile::open(path.toStdString());
        QVERIFY(file);
        const std::uint8_t* data = (*file)->bytes().data();
        if (residentPages(data, 0, 24 * kMiB) != 0)
            QSKIP("this file system keeps the file cached (tmpfs?): nothing to read ahead");
        const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
        const auto waitForResident = [&](std::size_t offset, std::size_t length) {
            QDeadlineTimer deadline(20'000);
            while (residentPages(data, offset, length) < length / page && !deadline.hasExpired())
                QTest::qWait(20);
            return residentPages(data, offset, length) == length / page;
        };
        // What was asked for is recorded (the hints still go to the kernel): a loaded machine may
        // drop a hint (a CI run once saw the second window stay cold for 20 s), so the window is
        // held to the hints, and the kernel's answer to the first one shows that they reach it.
        hintedStart = data;
        hinted.assign(24 * kMiB / page, false);
        const auto recordAndAdvise = [](const std::uint8_t* from, std::uint64_t length) {
            {
                const std::lock_guard lock(hintMutex);
                const auto pageSize = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
                for (std::uint64_t at = 0; at < length; at += pageSize)
                    hinted[static_cast<std::size_t>(from + at - hintedStart) / pageSize] = true;
            }
            ReadAhead::adviseWillNeed(from, length);
        };
        const auto waitForHinted = [&](std::size_t offset, std::size_t length) {
            QDeadlineTimer deadline(20'000);
            for (;;) {
                {
                    const std::lock_guard lock(hintMutex);
                    if (std::all_of(hinted.begin() + static_cast<std::ptrdiff_t>(offset / page),
                            hinted.begin() + static_cast<std::ptrdiff_t>((offset + length) / page),
                            [](bool asked) { return asked; }))
                        return true;
                }
                if (deadline.hasExpired())
                    return false;
                QTest::qWait(20);
            }
        };
        const auto hintedPages = [&](std::size_t offset, std::size_t length) {
            const std::lock_guard lock(hintMutex);
            return static_cast<std::size_t>(
                std::count(hinted.begin() + static_cast<std::ptrdiff_t>(offset / page),
                    hinted.begin() + static_cast<std::ptrdiff_t>((offset + length) / page), true));
        };
        ReadAhead readAhead({{nullptr, 2 * kMiB}, {data, 24 * kMiB}}, 8 * kMiB, recordAndAdvise);
        readAhead.reached(0); // 2 MiB not in a map, then the first 6 MiB of the file
        QVERIFY(waitForHinted(0, 6 * kMiB));
        QVERIFY(waitForResident(0, 6 * kMiB)); // the kernel read them in, this process touched none
        QTest::qWait(200);
        QCOMPARE(hintedPages(16 * kMiB, 8 * kMiB), std::size_t(0)); // past the window: not asked
        QCOMPARE(residentPages(data, 16 * kMiB, 8 * kMiB), std::size_t(0));
        readAhead.reached(2 * kMiB + 16 * kMiB);
        QVERIFY(waitForHinted(16 * kMiB, 8 * kMiB));
    }

    void sliceIsAFileOfItsOwn()
    {
        const QString path = m_dir.filePath(QStringLiteral("sliced.bin"));
        QVERIFY(writeFile(path, "header|chunk|tail"));
        std::shared_ptr<const MappedFile> chunk;
        {
            auto whole = MappedFile::open(path.toStdString());
            QVERIFY(whole.hasValue());
            chunk = MappedFile::slice(*whole, 7, 5);
            QVERIFY(chunk);
            QCOMPARE(bytesOf(chunk->bytes()), QByteArray("chunk"));
            QCOMPARE(chunk->bytes().data(), (*whole)->bytes().data() + 7); // not copied
            QCOMPARE(chunk->path(), path.toStdString());
            QVERIFY(MappedFile::slice(*whole, 17, 0)); // an empty slice at the very end
            QVERIFY(!MappedFile::slice(*whole, 13, 5));
            QVERIFY(!MappedFile::slice(*whole, 18, 0));
            QVERIFY(!MappedFile::slice(nullptr, 0, 0));
        }
        QCOMPARE(bytesOf(chunk->bytes()), QByteArray("chunk"));
    }

private:
    // The hints a ReadAhead gave in readAheadAsksForTheBytesAheadOfThePass, a flag per page (its
    // advise hook is a plain function, called on its own thread).
    static inline std::mutex hintMutex;
    static inline std::vector<bool> hinted;
    static inline const std::uint8_t* hintedStart = nullptr;

    QTemporaryDir m_dir;
};

QTEST_GUILESS_MAIN(TestMappedFile)
#include "tst_mappedfile.moc"
