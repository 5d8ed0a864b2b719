// SPDX-License-Identifier: MIT
#include "core/io/mappedfile.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ckpt {

namespace {

std::string describeOpenError(const std::string& path, int error)
{
    switch (error) {
    case ENOENT:
        return "cannot open " + path + ": no such file (check the path and the current directory)";
    case EACCES:
    case EPERM:
        return "cannot open " + path + ": permission denied (the file is not readable by this user)";
    case ENOTDIR:
        return "cannot open " + path + ": a part of the path is not a directory";
    case ELOOP:
        return "cannot open " + path + ": too many levels of symbolic links";
    case ENAMETOOLONG:
        return "cannot open " + path + ": the path is too long";
    default:
        return "cannot open " + path + ": " + std::strerror(error);
    }
}

// Closes the descriptor on every path out of open(); the mapping stays valid without it.
class FileDescriptor {
public:
    explicit FileDescriptor(int fd)
        : m_fd(fd)
    { }
    ~FileDescriptor()
    {
        if (m_fd >= 0)
            ::close(m_fd);
    }
    FileDescriptor(const FileDescriptor&) = delete;
    FileDescriptor& operator=(const FileDescriptor&) = delete;
    int get() const { return m_fd; }

private:
    int m_fd;
};

} // namespace

Expected<std::shared_ptr<const MappedFile>> MappedFile::open(const std::string& path)
{
    if (path.empty())
        return ReadError {"cannot open a file with an empty path", std::nullopt, {}};

    // O_NONBLOCK so that opening a FIFO by mistake does not hang waiting for a writer; it has no
    // effect on regular files, the only kind accepted below.
    const FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
    if (fd.get() < 0)
        return ReadError {describeOpenError(path, errno), std::nullopt, {}};

    struct stat info { };
    if (::fstat(fd.get(), &info) != 0)
        return ReadError {"cannot read the size of " + path + ": " + std::strerror(errno), std::nullopt, {}};
    if (S_ISDIR(info.st_mode))
        return ReadError {"cannot open " + path
                + ": it is a directory, not a file (a distributed checkpoint directory holds "
                  "several files; open one of them)",
            std::nullopt, {}};
    if (!S_ISREG(info.st_mode))
        return ReadError {"cannot open " + path
                + ": not a regular file (a pipe, socket or device cannot be memory-mapped; copy "
                  "it to a file first)",
            std::nullopt, {}};

    auto mapped = std::shared_ptr<MappedFile>(new MappedFile());
    mapped->m_path = path;
    if (info.st_size <= 0)
        return std::shared_ptr<const MappedFile>(std::move(mapped));

    const auto size = static_cast<std::uint64_t>(info.st_size);
    if (size > static_cast<std::uint64_t>(SIZE_MAX))
        return ReadError {
            "cannot map " + path + ": it is larger than this process can address", std::nullopt, {}};

    // MAP_PRIVATE + PROT_READ: the file can never be written through this mapping. If another
    // process truncates the file while it is mapped, touching the lost pages raises SIGBUS; there
    // is no portable way to guard against that short of copying the whole file.
    void* address = ::mmap(nullptr, static_cast<std::size_t>(size), PROT_READ, MAP_PRIVATE, fd.get(), 0);
    if (address == MAP_FAILED)
        return ReadError {"cannot map " + path + " into memory: " + std::strerror(errno), std::nullopt, {}};

    mapped->m_mapping = address;
    mapped->m_mappingSize = static_cast<std::size_t>(size);
    mapped->m_bytes = ByteView(static_cast<const std::uint8_t*>(address), static_cast<std::size_t>(size));
    return std::shared_ptr<const MappedFile>(std::move(mapped));
}

std::shared_ptr<const MappedFile> MappedFile::fromBuffer(ByteBuffer buffer, std::string name)
{
    auto file = std::shared_ptr<MappedFile>(new MappedFile());
    file->m_ownedBuffer = std::move(buffer);
    file->m_bytes = ByteView(file->m_ownedBuffer.data(), file->m_ownedBuffer.size());
    file->m_path = std::move(name);
    return file;
}

std::shared_ptr<const MappedFile> MappedFile::slice(
    std::shared_ptr<const MappedFile> whole, std::uint64_t offset, std::uint64_t length)
{
    if (!whole || offset > whole->size() || whole->size() - offset < length)
        return nullptr;
    auto file = std::shared_ptr<MappedFile>(new MappedFile());
    file->m_bytes
        = whole->bytes().subspan(static_cast<std::size_t>(offset), static_cast<std::size_t>(length));
    file->m_path = whole->path();
    file->m_whole = std::move(whole);
    return file;
}

std::shared_ptr<const MappedFile> MappedFile::fromExternal(
    ByteView bytes, std::shared_ptr<const void> owner, std::string name)
{
    auto file = std::shared_ptr<MappedFile>(new MappedFile());
    file->m_bytes = bytes;
    file->m_owner = std::move(owner);
    file->m_path = std::move(name);
    return file;
}

void MappedFile::releaseResidentPages(std::uint64_t offset, std::uint64_t length) const
{
    if (!m_mapping || offset >= m_mappingSize)
        return;
    length = std::min<std::uint64_t>(length, m_mappingSize - offset);
    const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    const std::uint64_t first = (offset + page - 1) / page * page;
    const std::uint64_t end = (offset + length) / page * page;
    if (end > first)
        ::madvise(static_cast<std::uint8_t*>(m_mapping) + first, static_cast<std::size_t>(end - first),
            MADV_DONTNEED);
}

MappedFile::~MappedFile()
{
    if (m_mapping)
        ::munmap(m_mapping, m_mappingSize);
}

} // namespace ckpt
