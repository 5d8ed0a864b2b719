// SPDX-License-Identifier: MIT
#include "remoteinput.h"
#include "terminal.h"

#include "core/base/textformat.h"

#include <iostream>

namespace cli {

RemoteInput::RemoteInput(const std::string& file)
    : m_remote(ckpt::isRemoteUrl(file))
{ }

ckpt::ReadOptions RemoteInput::readOptions()
{
    ckpt::ReadOptions options;
    if (!m_remote)
        return options;
    options.remoteSession = &m_session;
    options.remote.downloadWhenRangesRefused = download;
    if (download) {
        auto lastShown = std::make_shared<std::uint64_t>(0);
        options.remote.progress = [lastShown](std::uint64_t done, std::uint64_t total) {
            if (done >= *lastShown + (64u << 20) || (done == total && done != *lastShown)) {
                *lastShown = done;
                std::cerr << "downloading: " << ckpt::formatBytes(done) << " of " << ckpt::formatBytes(total)
                          << "\n";
            }
            return true;
        };
    }
    return options;
}

bool RemoteInput::finish(const std::string& command)
{
    if (!m_remote)
        return true;
    const std::string failure = m_session.failure();
    if (!failure.empty()) {
        std::cerr << "ckpt-inspect " << command << ": " << shown(failure) << "\n";
        return false;
    }
    std::cerr << "ckpt-inspect " << command << ": " << ckpt::remoteTrafficText(m_session.traffic()) << "\n";
    std::cout << m_buffer.str();
    std::cout.flush();
    return true;
}

std::uint64_t RemoteInput::bytesLeftToRead() const
{
    const ckpt::RemoteTraffic traffic = m_session.traffic();
    return traffic.fileSize > traffic.bytesRead ? traffic.fileSize - traffic.bytesRead : 0;
}

bool refusedRemote(const std::string& command, const std::string& path, const std::string& what)
{
    if (!ckpt::isRemoteUrl(path))
        return false;
    std::cerr << "ckpt-inspect " << command << ": " << shown(path) << ": " << what
              << " needs every tensor byte of the file: download it first (info, check and plan read a URL's "
                 "headers only)\n";
    return true;
}

void addDownloadFlag(CLI::App& command, bool& download)
{
    command.add_flag("--download", download,
        "for an http(s) URL whose server does not honour range requests: download the whole file "
        "(with progress) instead of stopping");
}

} // namespace cli
