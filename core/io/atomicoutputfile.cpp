// SPDX-License-Identifier: MIT
#include "core/io/atomicoutputfile.h"

#include "core/base/textformat.h"

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <random>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

namespace ckpt {

namespace {

constexpr const char* kPartialSuffix = ".partial";
constexpr std::size_t kMaxNameLength = 255; // NAME_MAX on every Linux file system we write to

struct SplitPath {
    std::string folder; // never empty: "." for a bare name
    std::string name;
};

SplitPath splitPath(const std::string& path)
{
    const auto slash = path.find_last_of('/');
    if (slash == std::string::npos)
        return {".", path};
    if (slash == 0)
        return {"/", path.substr(1)};
    return {path.substr(0, slash), path.substr(slash + 1)};
}

std::optional<std::string> realPath(const std::string& path)
{
    char* resolved = ::realpath(path.c_str(), nullptr);
    if (!resolved)
        return std::nullopt;
    std::string result(resolved);
    std::free(resolved);
    return result;
}

std::string joinPath(const std::string& folder, const std::string& name)
{
    return folder == "/" ? "/" + name : folder + "/" + name;
}

// The mode a plain open(O_CREAT, 0666) would give, as torch.save's file would get: mkostemp
// creates 0600. The umask is read from /proc because umask() can only be read by setting it,
// which would race with other threads creating files.
mode_t defaultFileMode()
{
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.rfind("Umask:", 0) == 0) {
            const auto mask = static_cast<mode_t>(std::strtoul(line.c_str() + 6, nullptr, 8));
            return 0666 & ~mask;
        }
    }
    return 0644;
}

std::string errnoText(int error)
{
    return std::strerror(error);
}

// ".<stem>.XXXXXX.partial", the name of a named temporary file for a target whose name starts with
// `stem` (names are cut to fit NAME_MAX).
std::string partialStem(const std::string& targetName)
{
    std::string stem = targetName;
    const std::size_t fixedLength = 1 + 1 + 6 + std::strlen(kPartialSuffix);
    if (stem.size() + fixedLength > kMaxNameLength)
        stem.resize(kMaxNameLength - fixedLength);
    return stem;
}

bool isPartialNameFor(const std::string& name, const std::string& stem)
{
    const std::string prefix = "." + stem + ".";
    const std::size_t suffixLength = std::strlen(kPartialSuffix);
    return name.size() == prefix.size() + 6 + suffixLength && name.starts_with(prefix)
        && name.ends_with(kPartialSuffix);
}

// A writer holds an exclusive flock on its ".partial" file for as long as it lives; the lock dies
// with the process, however it ends. A leftover whose lock can be taken belongs to nobody. (A
// writer between creating its file and locking it, a few instructions, could lose its file here;
// its commit then fails with a message, and neither the target nor the input is touched.)
void removeStalePartialFiles(const std::string& folder, const std::string& stem)
{
    DIR* directory = ::opendir(folder.c_str());
    if (!directory)
        return;
    while (const dirent* entry = ::readdir(directory)) {
        const std::string name = entry->d_name;
        if (!isPartialNameFor(name, stem))
            continue;
        const std::string path = joinPath(folder, name);
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
        if (fd < 0)
            continue;
        struct stat info { };
        if (::fstat(fd, &info) == 0 && S_ISREG(info.st_mode) && ::flock(fd, LOCK_EX | LOCK_NB) == 0)
            ::unlink(path.c_str());
        ::close(fd);
    }
    ::closedir(directory);
}

std::string randomLetters(std::size_t count)
{
    static const char letters[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    std::random_device source;
    std::string text;
    for (std::size_t i = 0; i < count; ++i)
        text += letters[source() % (sizeof letters - 1)];
    return text;
}

} // namespace

Expected<std::unique_ptr<AtomicOutputFile>> AtomicOutputFile::create(const std::string& targetPath,
    const std::string& inputPath, std::uint64_t expectedSize, TemporaryFileKind preferred)
{
    if (targetPath.empty())
        return makeError("no output path given");
    const SplitPath target = splitPath(targetPath);
    if (target.name.empty() || target.name == "." || target.name == "..")
        return makeError("the output path " + targetPath + " names a folder, not a file");

    struct stat folderInfo { };
    if (::stat(target.folder.c_str(), &folderInfo) != 0) {
        const int error = errno;
        if (error == ENOENT)
            return makeError(
                "cannot write " + targetPath + ": the folder " + target.folder + " does not exist");
        return makeError("cannot write " + targetPath + ": cannot reach the folder " + target.folder + ": "
            + errnoText(error));
    }
    if (!S_ISDIR(folderInfo.st_mode))
        return makeError("cannot write " + targetPath + ": " + target.folder + " is not a folder");

    struct stat targetLinkInfo { };
    const bool targetExists = ::lstat(targetPath.c_str(), &targetLinkInfo) == 0;
    struct stat targetInfo { };
    // Follows a symbolic link; a dangling one counts as a target that does not exist yet.
    const bool targetResolves = targetExists && ::stat(targetPath.c_str(), &targetInfo) == 0;
    if (targetResolves && S_ISDIR(targetInfo.st_mode))
        return makeError("cannot write " + targetPath + ": it is a folder");

    if (!inputPath.empty()) {
        const std::optional<std::string> input = realPath(inputPath);
        // An existing target resolves through its links; a new one through its folder.
        std::optional<std::string> output = targetResolves ? realPath(targetPath) : std::nullopt;
        if (!output) {
            if (auto folder = realPath(target.folder))
                output = joinPath(*folder, target.name);
        }
        const auto refuse = [&](const std::string& inputName) {
            return makeError("refusing to write over the input file " + inputName + " (the output path "
                + targetPath + " points to it); choose another output path");
        };
        if (input && output && *input == *output)
            return refuse(*input);
        // Hard links (and bind mounts) reach the same file under another name.
        struct stat inputInfo { };
        if (targetResolves && ::stat(inputPath.c_str(), &inputInfo) == 0
            && inputInfo.st_dev == targetInfo.st_dev && inputInfo.st_ino == targetInfo.st_ino)
            return refuse(input.value_or(inputPath));
    }

    // access() answers for the real user, which is who runs the tool; the mkostemp below still
    // reports the real cause when the folder refuses for another reason (read-only mount, ACLs).
    if (::access(target.folder.c_str(), W_OK | X_OK) != 0)
        return makeError("cannot write in the folder " + target.folder + ": " + errnoText(errno));

    if (expectedSize > 0) {
        struct statvfs fs { };
        if (::statvfs(target.folder.c_str(), &fs) == 0) {
            const std::uint64_t available = static_cast<std::uint64_t>(fs.f_bavail) * fs.f_frsize;
            if (available < expectedSize)
                return makeError("not enough space in " + target.folder + ": the output needs "
                    + formatBytes(expectedSize) + " (" + formatThousands(expectedSize) + " bytes) but only "
                    + formatBytes(available) + " (" + formatThousands(available) + " bytes) are free");
        }
    }

    const std::string stem = partialStem(target.name);
    removeStalePartialFiles(target.folder, stem);

    std::unique_ptr<AtomicOutputFile> file(new AtomicOutputFile);
    file->m_targetPath = targetPath;

    // An unnamed file needs /proc/self/fd to be read back by path and to be linked at commit
    // without CAP_DAC_READ_SEARCH.
    if (preferred == TemporaryFileKind::Unnamed && ::access("/proc/self/fd", X_OK) == 0) {
        const int fd = ::open(target.folder.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        if (fd >= 0) {
            file->m_fd = fd;
            file->m_unnamed = true;
            file->m_temporaryPath = "/proc/self/fd/" + std::to_string(fd);
            if (::fchmod(fd, defaultFileMode()) != 0)
                return makeError("cannot set the permissions of the file being written in " + target.folder
                    + ": " + errnoText(errno));
            return file;
        }
        // EOPNOTSUPP, EISDIR or EINVAL: no O_TMPFILE here; any other cause shows up below.
    }

    // ".<name>.XXXXXX.partial" beside the target: hidden, recognisable, on the same file system
    // so rename() can replace the target atomically; locked while this process lives.
    std::string pattern = joinPath(target.folder, "." + stem + ".XXXXXX" + kPartialSuffix);
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    const int fd = ::mkostemps(buffer.data(), static_cast<int>(std::strlen(kPartialSuffix)), O_CLOEXEC);
    if (fd < 0)
        return makeError("cannot create a temporary file in " + target.folder + ": " + errnoText(errno));
    file->m_fd = fd;
    file->m_temporaryPath = buffer.data();
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0)
        return makeError("cannot lock " + file->m_temporaryPath + ": " + errnoText(errno));
    if (::fchmod(fd, defaultFileMode()) != 0)
        return makeError("cannot set the permissions of " + file->m_temporaryPath + ": " + errnoText(errno));
    return file;
}

AtomicOutputFile::~AtomicOutputFile()
{
    if (m_fd >= 0)
        ::close(m_fd);
    if (!m_committed && !m_unnamed && !m_temporaryPath.empty())
        ::unlink(m_temporaryPath.c_str());
}

// linkat() never replaces a name: a new target gets the file directly; an existing one is
// replaced by linking to a fresh ".partial" name and renaming that over it. A kill between the
// two system calls leaves that name, unlocked, and the next create() in the folder removes it.
Status AtomicOutputFile::linkUnnamedFile()
{
    if (::linkat(AT_FDCWD, m_temporaryPath.c_str(), AT_FDCWD, m_targetPath.c_str(), AT_SYMLINK_FOLLOW) == 0)
        return std::nullopt;
    if (errno != EEXIST)
        return makeError("cannot give the written file the name " + m_targetPath + ": " + errnoText(errno));
    const SplitPath target = splitPath(m_targetPath);
    for (int attempt = 0; attempt < 100; ++attempt) {
        const std::string staging = joinPath(
            target.folder, "." + partialStem(target.name) + "." + randomLetters(6) + kPartialSuffix);
        if (::linkat(AT_FDCWD, m_temporaryPath.c_str(), AT_FDCWD, staging.c_str(), AT_SYMLINK_FOLLOW) != 0) {
            if (errno == EEXIST)
                continue;
            return makeError(
                "cannot give the written file a name in " + target.folder + ": " + errnoText(errno));
        }
        if (::rename(staging.c_str(), m_targetPath.c_str()) != 0) {
            const int error = errno;
            ::unlink(staging.c_str());
            return makeError("cannot rename the written file to " + m_targetPath + ": " + errnoText(error));
        }
        return std::nullopt;
    }
    return makeError("cannot find a free temporary name in " + target.folder);
}

Status AtomicOutputFile::write(ByteView bytes)
{
    std::size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::write(m_fd, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            const int error = n < 0 ? errno : ENOSPC; // write() returning 0 for a regular file: no room
            return makeError("cannot write " + m_targetPath + ": " + std::strerror(error));
        }
        done += static_cast<std::size_t>(n);
    }
    return std::nullopt;
}

Status AtomicOutputFile::commit()
{
    if (m_committed)
        return makeError(m_targetPath + " is already written");
    if (m_fd < 0)
        return makeError("cannot finish " + m_targetPath + ": an earlier attempt failed");

    // The data must be on disk before the rename makes it visible, or a crash could leave an empty
    // or partial file under the target's name.
    if (::fsync(m_fd) != 0) {
        const int error = errno;
        return makeError("cannot flush " + m_temporaryPath + " to disk: " + errnoText(error));
    }
    if (m_unnamed) {
        if (Status status = linkUnnamedFile())
            return status;
    }
    const int fd = m_fd;
    m_fd = -1;
    if (::close(fd) != 0 && errno != EINTR)
        return makeError("cannot close " + m_temporaryPath + ": " + errnoText(errno));
    if (!m_unnamed && ::rename(m_temporaryPath.c_str(), m_targetPath.c_str()) != 0)
        return makeError(
            "cannot rename " + m_temporaryPath + " to " + m_targetPath + ": " + errnoText(errno));
    m_committed = true;

    // The rename itself lives in the folder; flush it too so the new name survives a crash.
    const std::string folder = splitPath(m_targetPath).folder;
    const int folderFd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (folderFd < 0)
        return makeError(m_targetPath
            + " is written, but its folder could not be opened to flush it: " + errnoText(errno));
    const int syncResult = ::fsync(folderFd);
    const int syncError = errno;
    ::close(folderFd);
    // Some file systems cannot fsync a directory (EINVAL); the rename is then as durable as they allow.
    if (syncResult != 0 && syncError != EINVAL)
        return makeError(m_targetPath
            + " is written, but its folder could not be flushed to disk: " + errnoText(syncError));
    return std::nullopt;
}

} // namespace ckpt
