// SPDX-License-Identifier: MIT
#pragma once
// A checkpoint named by an http(s) URL (core/io/remotefile.h), for the commands that read one
// (info, check, plan): the read options that count what it cost, --download, and the end of the
// command: a fetch that failed anywhere is said on standard error and nothing else is printed.
#include "command.h"

#include "core/io/remotefile.h"
#include "core/read/checkpointreader.h"

#include <sstream>
#include <string>

namespace cli {

class RemoteInput {
public:
    explicit RemoteInput(const std::string& file);
    bool remote() const { return m_remote; }
    ckpt::ReadOptions readOptions(); // counts into this input's session; --download honoured
    // What a face prints goes here for a URL (into a buffer, printed by finish() once every fetch
    // succeeded), to std::cout for a file.
    std::ostream& out() { return m_remote ? static_cast<std::ostream&>(m_buffer) : std::cout; }
    // After the command's work: for a URL, the bytes read on standard error ("read 412 KiB of
    // 13.5 GiB"), then either what was printed (true) or the failure and nothing else (false).
    bool finish(const std::string& command);
    // For a URL: the remote bytes not read yet, which a scan or a copy would download.
    std::uint64_t bytesLeftToRead() const;
    bool download = false;

private:
    bool m_remote = false;
    ckpt::RemoteSession m_session;
    std::ostringstream m_buffer;
};

// The commands that write or compare every tensor byte (remap, extract, convert, diff) do not read
// URLs: through the mirror they would download the whole file a block at a time, and a write from
// bytes not fetched yet fails in the kernel (EFAULT). True, with the reason on standard error,
// when `path` is a URL.
bool refusedRemote(const std::string& command, const std::string& path, const std::string& what);

// --download: when the server does not honour range requests, download the whole file (with
// progress on standard error) instead of stopping.
void addDownloadFlag(CLI::App& command, bool& download);

} // namespace cli
