#pragma once

#include "core/base/expected.h"

#include <cstdint>
#include <memory>
#include <string>

namespace ckpt {

// The only way the project writes a checkpoint: to a temporary file in the target's folder, then
// flushed and renamed over the target. A failure or a cancel leaves nothing under the target name
// (the temporary file is removed), and the input file is never the target, not even through a
// symbolic or hard link.
class AtomicOutputFile {
public:
    // Refuses (with a message naming the cause) when: the target is the input (same path after
    // resolving links, or same device and inode), the target folder does not exist or is not
    // writable, or its file system has less than `expectedSize` bytes free.
    static Expected<std::unique_ptr<AtomicOutputFile>> create(
        const std::string& targetPath, const std::string& inputPath, std::uint64_t expectedSize);

    ~AtomicOutputFile(); // removes the temporary file unless committed
    AtomicOutputFile(const AtomicOutputFile&) = delete;
    AtomicOutputFile& operator=(const AtomicOutputFile&) = delete;

    int fd() const { return m_fd; }
    const std::string& temporaryPath() const { return m_temporaryPath; }
    const std::string& targetPath() const { return m_targetPath; }

    // fsync, close, rename over the target, fsync the folder.
    Status commit();

private:
    AtomicOutputFile() = default;
    int m_fd = -1;
    std::string m_temporaryPath;
    std::string m_targetPath;
    bool m_committed = false;
};

} // namespace ckpt
