// SPDX-License-Identifier: MIT
#pragma once

#include "core/base/bytes.h"
#include "core/base/expected.h"

#include <cstdint>
#include <memory>
#include <string>

namespace ckpt {

// How the file is kept until commit().
enum class TemporaryFileKind {
    // An unnamed file (O_TMPFILE) in the target's folder, given the target's name by linkat() at
    // commit: a process killed mid-write (SIGKILL, OOM killer, power loss) leaves nothing behind,
    // because a file without a name is freed by the kernel. Falls back to LockedPartial where the
    // file system or kernel has no O_TMPFILE (or /proc is missing).
    Unnamed,
    // A named ".<target>.XXXXXX.partial" file, locked (flock) while its writer lives and renamed
    // over the target at commit. A writer killed mid-write leaves it, unlocked; the next create()
    // in that folder removes such stale files.
    LockedPartial,
};

// The only way the project writes a checkpoint: to a temporary file in the target's folder, then
// flushed and given the target's name atomically. A failure, a cancel or a kill leaves nothing
// under the target name and, with an unnamed file, nothing at all; the input file is never the
// target, not even through a symbolic or hard link.
class AtomicOutputFile {
public:
    // Refuses (with a message naming the cause) when: the target is the input (same path after
    // resolving links, or same device and inode), the target folder does not exist or is not
    // writable, or its file system has less than `expectedSize` bytes free.
    // Also removes the stale ".<target>.XXXXXX.partial" files that killed writers left in the
    // target's folder (those whose lock nobody holds).
    static Expected<std::unique_ptr<AtomicOutputFile>> create(const std::string& targetPath,
        const std::string& inputPath, std::uint64_t expectedSize,
        TemporaryFileKind preferred = TemporaryFileKind::Unnamed);

    ~AtomicOutputFile(); // removes the temporary file unless committed
    AtomicOutputFile(const AtomicOutputFile&) = delete;
    AtomicOutputFile& operator=(const AtomicOutputFile&) = delete;

    int fd() const { return m_fd; }
    // Appends all of `bytes` at the file's current offset (a short write is resumed, EINTR retried):
    // the one write loop every writer uses, with a message naming the target and the cause.
    Status write(ByteView bytes);
    Status write(std::string_view text) { return write(asBytes(text)); }
    // A path that opens the file being written, for reading it back before the commit: the
    // ".partial" file, or /proc/self/fd/<fd> for an unnamed one.
    const std::string& temporaryPath() const { return m_temporaryPath; }
    TemporaryFileKind kind() const
    {
        return m_unnamed ? TemporaryFileKind::Unnamed : TemporaryFileKind::LockedPartial;
    }
    const std::string& targetPath() const { return m_targetPath; }

    // fsync, give it the target's name (linkat, or rename over the target), close, fsync the folder.
    Status commit();

private:
    AtomicOutputFile() = default;
    Status linkUnnamedFile();
    int m_fd = -1;
    std::string m_temporaryPath;
    std::string m_targetPath;
    bool m_committed = false;
    bool m_unnamed = false;
};

} // namespace ckpt
