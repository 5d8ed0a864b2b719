// SPDX-License-Identifier: MIT
#pragma once

#include "core/base/expected.h"
#include "core/io/mappedfile.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace ckpt {

// A checkpoint where it lies: an http(s) URL read through HTTP range requests (libcurl), so that
// the tree, the safety rating and the load simulation of a 700 GB file cost the few MiB of its
// headers, pickles and central directory (docs/remote.md).

// True for "http://..." and "https://..." (case-insensitive scheme).
bool isRemoteUrl(const std::string& path);

struct RemoteOptions {
    long timeoutSeconds = 60; // per request: connecting, and a body that stops moving this long
    int retries = 3; // a request that fails (connection dropped, 5xx) is tried this often more
    // When the server answers a range request with the whole file (200), download it all instead
    // of stopping (`--download`); the progress callback sees the bytes as they come.
    bool downloadWhenRangesRefused = false;
    // Called from the fetching thread with (bytes read so far, file size); return false to cancel.
    std::function<bool(std::uint64_t, std::uint64_t)> progress;
    const std::atomic<bool>* cancel = nullptr;
    // What one fault fetches at least (0: 64 KiB, or $CKPT_REMOTE_BLOCK_BYTES, which also turns
    // the fetch plan off, for the differential test); rounded up to whole pages.
    std::uint64_t blockSize = 0;
};

// What a remote file cost so far, for "read 412 KiB of 13.5 GB".
struct RemoteTraffic {
    std::uint64_t bytesRead = 0; // bytes received from the server (bodies)
    std::uint64_t fileSize = 0;
    std::uint64_t requests = 0;
    bool downloadedWhole = false;
};

// One remote file as a MappedFile: a sparse mirror the size of the remote file (an anonymous
// MAP_NORESERVE mapping, unreadable where nothing was fetched). A read of a byte not yet fetched
// faults; the fault is answered by fetching the block around it (a range GET, with retries) before
// the reading thread continues, so every reader reads the real bytes, never zeros it did not ask
// for. A fetch that fails fills the block with zeros so the reader can finish, and the mirror
// remembers the failure: whoever reads through it must call failure() before using what was
// read, and show nothing when it is set (RemoteSession below does that).
class RemoteFile {
public:
    // Opens the URL: the first range GET learns the size and whether ranges are honoured, and
    // keeps the first block; a safetensors header or a zip's end records are fetched before any
    // reader asks (the fetch plan, an optimisation: the faults would fetch them anyway).
    static Expected<std::shared_ptr<RemoteFile>> open(
        const std::string& url, const RemoteOptions& options = {});
    ~RemoteFile();
    RemoteFile(const RemoteFile&) = delete;
    RemoteFile& operator=(const RemoteFile&) = delete;

    // The mirror, named by the URL. Keeps this RemoteFile alive.
    std::shared_ptr<const MappedFile> mapped() const;
    const std::string& url() const;
    std::uint64_t size() const;
    RemoteTraffic traffic() const;
    // The first fetch that failed (with its cause), or "" while every fetch succeeded.
    std::string failure() const;
    // How many bytes of [offset, offset + length) are not fetched yet (what a scan would download).
    std::uint64_t unfetchedBytes(std::uint64_t offset, std::uint64_t length) const;

    struct State;

private:
    RemoteFile() = default;
    std::unique_ptr<State> m_state;
    std::weak_ptr<RemoteFile> m_self;
};

// Every remote file opened while one is alive, for a command that reads several (an index and
// its shards): their traffic summed and their first failure.
class RemoteSession {
public:
    RemoteSession();
    ~RemoteSession();
    RemoteSession(const RemoteSession&) = delete;
    RemoteSession& operator=(const RemoteSession&) = delete;
    static RemoteSession* current(); // the innermost live session, or null
    void add(const std::shared_ptr<RemoteFile>& file);
    void addError(const std::string& message); // a file that could not even be opened
    RemoteTraffic traffic() const;
    std::string failure() const;
    std::size_t fileCount() const;

private:
    struct Data;
    std::unique_ptr<Data> m_data;
    RemoteSession* m_outer = nullptr;
};

// "read 412 KiB of 13.5 GB" (sizes as the rest of the tool writes them).
std::string remoteTrafficText(const RemoteTraffic& traffic);

} // namespace ckpt
