// SPDX-License-Identifier: MIT
#pragma once

#include <fcntl.h>
#include <string>
#include <unistd.h>

namespace ckpt {

// A read-only descriptor of the input, closed on scope exit: the writers copy storage bytes from
// it with copy_file_range, so the kernel moves them and the input is never opened for writing.
class InputDescriptor {
public:
    explicit InputDescriptor(const std::string& path)
        : m_fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC))
    { }
    ~InputDescriptor()
    {
        if (m_fd >= 0)
            ::close(m_fd);
    }
    InputDescriptor(const InputDescriptor&) = delete;
    InputDescriptor& operator=(const InputDescriptor&) = delete;
    int fd() const { return m_fd; }

private:
    int m_fd;
};

} // namespace ckpt
