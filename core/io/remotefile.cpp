// SPDX-License-Identifier: MIT
// Remote checkpoints through HTTP range requests: a demand-paged mirror of the remote file
// (docs/remote.md). The mirror is a sparse temporary file (O_TMPFILE, else a memfd) mapped
// PROT_NONE; a read of a block not yet fetched raises SIGSEGV, whose handler hands the address to
// the file's fetching thread through a pipe and sleeps on a futex until the block has been
// written (pwrite into the file) and made readable (mprotect). The reading thread then continues
// with the real bytes. Nothing a reader reads can be a zero it did not fetch: a failed fetch is
// remembered and the whole result is discarded by whoever checks failure().
#include "core/io/remotefile.h"

#include "core/base/textformat.h"
#include "core/io/optionallibraries.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace ckpt {

namespace {

constexpr std::uint64_t kDefaultBlock = 64ULL * 1024; // what one fault fetches at least
constexpr std::uint64_t kMaxRun = 4ULL * 1024 * 1024; // readahead grows to this on sequential faults
constexpr std::size_t kSlots = 256; // remote files open at once

// One live mirror, as the signal handler sees it: only atomics, read without locks.
struct Slot {
    std::atomic<std::uintptr_t> begin {0};
    std::atomic<std::uintptr_t> end {0};
    std::atomic<int> requestFd {-1};
};
std::array<Slot, kSlots> g_slots;
struct sigaction g_previousAction { };
std::once_flag g_handlerInstalled;

// What a faulting thread sends the fetching thread, living on the faulting thread's stack while
// it sleeps.
struct FaultRequest {
    std::uintptr_t address = 0;
    std::atomic<std::uint32_t> done {0};
};

long futex(std::atomic<std::uint32_t>* word, int operation, std::uint32_t value)
{
    // std::atomic<uint32_t> is a plain 32-bit word (static_assert below), which futex needs.
    static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t));
    return ::syscall(
        SYS_futex, reinterpret_cast<std::uint32_t*>(word), operation, value, nullptr, nullptr, 0);
}

void faultHandler(int signal, siginfo_t* info, void* context)
{
    const int savedErrno = errno;
    const auto address = reinterpret_cast<std::uintptr_t>(info->si_addr);
    for (Slot& slot : g_slots) {
        const std::uintptr_t begin = slot.begin.load(std::memory_order_acquire);
        if (begin == 0 || address < begin || address >= slot.end.load(std::memory_order_acquire))
            continue;
        const int fd = slot.requestFd.load(std::memory_order_acquire);
        if (fd < 0)
            break;
        FaultRequest request;
        request.address = address;
        const auto message = reinterpret_cast<std::uintptr_t>(&request); // the request, by address
        if (::write(fd, &message, sizeof message) != static_cast<ssize_t>(sizeof message))
            break; // the fetcher is gone: fall through to the previous handler (a crash, honestly)
        while (request.done.load(std::memory_order_acquire) == 0)
            futex(&request.done, FUTEX_WAIT_PRIVATE, 0);
        errno = savedErrno;
        return; // the instruction runs again, now on a readable page
    }
    // Not a mirror of ours: whatever handled SIGSEGV before (a sanitizer, the default crash).
    if ((g_previousAction.sa_flags & SA_SIGINFO) && g_previousAction.sa_sigaction) {
        g_previousAction.sa_sigaction(signal, info, context);
    } else if (g_previousAction.sa_handler != SIG_DFL && g_previousAction.sa_handler != SIG_IGN) {
        g_previousAction.sa_handler(signal);
    } else {
        ::sigaction(SIGSEGV, &g_previousAction, nullptr); // the fault repeats under the default action
    }
    errno = savedErrno;
}

void installHandler()
{
    std::call_once(g_handlerInstalled, [] {
        struct sigaction action { };
        action.sa_sigaction = faultHandler;
        action.sa_flags = SA_SIGINFO | SA_RESTART;
        sigemptyset(&action.sa_mask);
        ::sigaction(SIGSEGV, &action, &g_previousAction);
    });
}

bool startsWithNoCase(const std::string& text, std::string_view prefix)
{
    if (text.size() < prefix.size())
        return false;
    for (std::size_t i = 0; i < prefix.size(); ++i)
        if (std::tolower(static_cast<unsigned char>(text[i])) != prefix[i])
            return false;
    return true;
}

// One HTTP response as far as range reading cares.
struct Response {
    long status = 0;
    std::string contentRange; // the header's value
    std::string etag;
    std::int64_t contentLength = -1;
    std::uint64_t received = 0;
    bool refusedRanges = false; // a 200 to a partial range: the transfer was stopped
    bool overflow = false; // more bytes than asked for
    CURLcode code = CURLE_OK;
    std::string curlError;
};

struct Transfer {
    CURL* curl = nullptr;
    Response* response = nullptr;
    std::uint8_t* destination = nullptr; // a buffer of `capacity` bytes, or null with fd
    int fd = -1; // or written here at `fileOffset` + received
    std::uint64_t fileOffset = 0;
    std::uint64_t capacity = 0;
    bool acceptWhole = false; // a 200 is what was asked for
    const RemoteOptions* options = nullptr;
    std::uint64_t progressBase = 0;
    std::uint64_t progressTotal = 0;
    std::string writeError;
};

std::size_t onHeader(char* data, std::size_t size, std::size_t count, void* user)
{
    auto* transfer = static_cast<Transfer*>(user);
    const std::string line(data, size * count);
    const auto colon = line.find(':');
    if (line.starts_with("HTTP/")) {
        // A redirect's headers come first; each response starts afresh.
        *transfer->response = Response {};
    } else if (colon != std::string::npos) {
        std::string name = line.substr(0, colon);
        std::transform(
            name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
        std::string value = line.substr(colon + 1);
        while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
            value.erase(value.begin());
        while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' '))
            value.pop_back();
        if (name == "content-range")
            transfer->response->contentRange = value;
        else if (name == "etag")
            transfer->response->etag = value;
        else if (name == "content-length")
            transfer->response->contentLength = std::strtoll(value.c_str(), nullptr, 10);
    }
    return size * count;
}

std::size_t onBody(char* data, std::size_t size, std::size_t count, void* user)
{
    auto* transfer = static_cast<Transfer*>(user);
    Response& response = *transfer->response;
    const std::size_t bytes = size * count;
    libcurl().easy_getinfo(transfer->curl, CURLINFO_RESPONSE_CODE, &response.status);
    if (response.status == 200 && !transfer->acceptWhole) {
        response.refusedRanges = true;
        return 0; // stop: the whole file is coming, and nobody asked for it
    }
    if (response.status != 206 && response.status != 200)
        return bytes; // an error page: read and dropped
    if (response.received + bytes > transfer->capacity) {
        response.overflow = true;
        return 0;
    }
    if (transfer->destination) {
        std::memcpy(transfer->destination + response.received, data, bytes);
    } else {
        std::size_t written = 0;
        while (written < bytes) {
            const ssize_t n = ::pwrite(transfer->fd, data + written, bytes - written,
                static_cast<off_t>(transfer->fileOffset + response.received + written));
            if (n <= 0) {
                transfer->writeError = std::string("cannot keep the fetched bytes: ") + std::strerror(errno);
                return 0;
            }
            written += static_cast<std::size_t>(n);
        }
    }
    response.received += bytes;
    return bytes;
}

int onProgress(void* user, curl_off_t, curl_off_t downloaded, curl_off_t, curl_off_t)
{
    auto* transfer = static_cast<Transfer*>(user);
    const RemoteOptions& options = *transfer->options;
    if (options.cancel && options.cancel->load())
        return 1;
    if (options.progress
        && !options.progress(
            transfer->progressBase + static_cast<std::uint64_t>(std::max<curl_off_t>(downloaded, 0)),
            transfer->progressTotal))
        return 1;
    return 0;
}

// "bytes 0-65535/1234567": first, last, total (total nullopt for "*").
struct ContentRange {
    std::uint64_t first = 0, last = 0;
    std::optional<std::uint64_t> total;
};

std::optional<ContentRange> parseContentRange(const std::string& value)
{
    unsigned long long first = 0, last = 0, total = 0;
    char star = 0;
    if (std::sscanf(value.c_str(), "bytes %llu-%llu/%llu", &first, &last, &total) == 3 && first <= last)
        return ContentRange {first, last, total};
    if (std::sscanf(value.c_str(), "bytes %llu-%llu/%c", &first, &last, &star) == 3 && star == '*'
        && first <= last)
        return ContentRange {first, last, std::nullopt};
    return std::nullopt;
}

} // namespace

bool isRemoteUrl(const std::string& path)
{
    return startsWithNoCase(path, "http://") || startsWithNoCase(path, "https://");
}

struct RemoteFile::State {
    std::string url;
    RemoteOptions options;
    CURL* curl = nullptr;
    std::uint64_t size = 0;
    std::string etag;
    int fd = -1; // the sparse mirror
    void* view = nullptr; // its reader's view, PROT_NONE where not fetched
    std::size_t viewSize = 0;
    std::uint64_t blockBytes = kDefaultBlock; // what one fault fetches at least (RemoteOptions::blockSize)
    bool fetchPlan = true;
    std::unique_ptr<std::atomic<std::uint8_t>[]> fetched; // per blockBytes
    std::size_t blocks = 0;
    int requestPipe[2] = {-1, -1};
    std::thread fetcher;
    int slot = -1;
    std::atomic<std::uint64_t> bytesRead {0};
    std::atomic<std::uint64_t> requests {0};
    bool downloadedWhole = false;
    mutable std::mutex failureMutex;
    std::string failure;
    std::size_t lastBlock = SIZE_MAX; // the fetcher's readahead: sequential faults fetch more
    std::uint64_t run = kDefaultBlock;

    ~State()
    {
        if (slot >= 0) {
            g_slots[static_cast<std::size_t>(slot)].begin.store(0);
            g_slots[static_cast<std::size_t>(slot)].requestFd.store(-1);
        }
        if (fetcher.joinable()) {
            const std::uintptr_t stop = 0;
            (void)!::write(requestPipe[1], &stop, sizeof stop);
            fetcher.join();
        }
        for (int& end : requestPipe)
            if (end >= 0)
                ::close(end);
        if (view)
            ::munmap(view, viewSize);
        if (fd >= 0)
            ::close(fd);
        if (curl)
            libcurl().easy_cleanup(curl);
    }

    void fail(const std::string& message)
    {
        const std::lock_guard lock(failureMutex);
        if (failure.empty())
            failure = message;
    }

    std::string where() const { return url; }

    // One range GET into the mirror file, or into `buffer`; retried when the connection fails.
    // `toEnd`: the range may stop early at the end of the file (the first block of a small file).
    Status getRange(std::uint64_t offset, std::uint64_t length, std::uint8_t* buffer,
        Response* answer = nullptr, bool toEnd = false)
    {
        const std::string range = std::to_string(offset) + "-" + std::to_string(offset + length - 1);
        std::string lastProblem;
        for (int attempt = 0; attempt <= options.retries; ++attempt) {
            if (attempt > 0)
                std::this_thread::sleep_for(std::chrono::milliseconds(100 << std::min(attempt, 5)));
            Response response;
            Transfer transfer;
            transfer.curl = curl;
            transfer.response = &response;
            transfer.destination = buffer;
            transfer.fd = fd;
            transfer.fileOffset = offset;
            transfer.capacity = length;
            transfer.acceptWhole = size != 0 && offset == 0 && length == size;
            transfer.options = &options;
            libcurl().easy_setopt(curl, CURLOPT_RANGE, range.c_str());
            libcurl().easy_setopt(curl, CURLOPT_HEADERDATA, &transfer);
            libcurl().easy_setopt(curl, CURLOPT_WRITEDATA, &transfer);
            libcurl().easy_setopt(curl, CURLOPT_XFERINFODATA, &transfer);
            transfer.progressBase = bytesRead.load();
            transfer.progressTotal = size;
            libcurl().easy_setopt(curl, CURLOPT_NOPROGRESS, (options.cancel || options.progress) ? 0L : 1L);
            char errorBuffer[CURL_ERROR_SIZE] = {};
            libcurl().easy_setopt(curl, CURLOPT_ERRORBUFFER, errorBuffer);
            response.code = libcurl().easy_perform(curl);
            libcurl().easy_setopt(curl, CURLOPT_ERRORBUFFER, nullptr);
            libcurl().easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response.status);
            ++requests;
            bytesRead += response.received;
            if (answer)
                *answer = response;
            const std::string what = "bytes " + range + " of " + url;
            if (response.code == CURLE_ABORTED_BY_CALLBACK)
                return makeError("cancelled while reading " + what);
            if (!transfer.writeError.empty())
                return makeError(transfer.writeError);
            if (response.refusedRanges)
                return makeError("the server does not honour range requests: asked for " + what
                    + ", it answered 200 with the whole file"
                    + (size ? " (" + formatBytes(size) + ")" : std::string())
                    + "; rerun with --download to download it all, or use a server that supports ranges");
            if (response.overflow)
                return makeError("the server sent more than the " + std::to_string(length)
                    + " bytes asked for (" + what + "): its answer does not match the range");
            if (response.code != CURLE_OK) {
                lastProblem = std::string(libcurl().easy_strerror(response.code))
                    + (errorBuffer[0] ? std::string(": ") + errorBuffer : std::string());
                if (response.code == CURLE_PARTIAL_FILE || response.code == CURLE_RECV_ERROR)
                    lastProblem = "the connection dropped after " + std::to_string(response.received) + " of "
                        + std::to_string(length) + " bytes (" + lastProblem + ")";
                continue; // connection trouble: try again
            }
            if (response.status >= 500) {
                lastProblem = "the server answered HTTP " + std::to_string(response.status);
                continue;
            }
            if (response.status == 416)
                return makeError("the server refused " + what
                    + " as out of range (HTTP 416): the file is "
                      "shorter than the "
                    + formatBytes(size) + " it said");
            if (response.status != 206 && !(response.status == 200 && transfer.acceptWhole))
                return makeError("the server answered HTTP " + std::to_string(response.status)
                    + " to a request for " + what);
            if (response.status == 206) {
                const auto contentRange = parseContentRange(response.contentRange);
                if (!contentRange)
                    return makeError("the server answered " + what + " without a usable Content-Range ("
                        + (response.contentRange.empty() ? std::string("none")
                                                         : "\"" + response.contentRange + "\"")
                        + ")");
                if (size != 0 && contentRange->total && *contentRange->total != size)
                    return makeError("the file changed on the server, or the server's sizes disagree: it was "
                        + std::to_string(size) + " bytes, now it says "
                        + std::to_string(*contentRange->total));
                if (toEnd && contentRange->first == offset && contentRange->total
                    && contentRange->last + 1 == *contentRange->total
                    && contentRange->last < offset + length - 1)
                    length = contentRange->last + 1 - offset; // the file ends sooner: what is left of it
                if (contentRange->first != offset || contentRange->last != offset + length - 1)
                    return makeError("the server sent bytes " + std::to_string(contentRange->first) + "-"
                        + std::to_string(contentRange->last) + " when asked for " + what);
            }
            if (!etag.empty() && !response.etag.empty() && response.etag != etag)
                return makeError("the file changed on the server while it was read (ETag " + etag + " became "
                    + response.etag + ")");
            if (response.received != length)
                return makeError("the server's Content-Length lies: it sent "
                    + std::to_string(response.received) + " bytes for " + what + " (" + std::to_string(length)
                    + " bytes)"
                    + (response.contentLength >= 0
                            ? ", announcing " + std::to_string(response.contentLength) + " in Content-Length"
                            : std::string()));
            return std::nullopt;
        }
        return makeError("cannot read bytes " + range + " of " + url + " after "
            + std::to_string(options.retries + 1) + " attempt(s): " + lastProblem);
    }

    bool blockFetched(std::size_t block) const { return fetched[block].load(std::memory_order_acquire) != 0; }

    // Fetches blocks [first, last) (clamped to the file) and makes them readable, fetched or not.
    void fetchBlocks(std::size_t first, std::size_t last)
    {
        last = std::min(last, blocks);
        while (first < last && blockFetched(first))
            ++first;
        while (last > first && blockFetched(last - 1))
            --last;
        if (first >= last)
            return;
        const std::uint64_t offset = first * blockBytes;
        const std::uint64_t end = std::min<std::uint64_t>(last * blockBytes, size);
        Status problem;
        {
            const std::lock_guard lock(failureMutex);
            if (!failure.empty())
                problem = makeError(failure); // once broken, no more requests: zeros, quickly
        }
        if (!problem)
            problem = getRange(offset, end - offset, nullptr);
        if (problem)
            fail(problem->message);
        const std::size_t pageEnd
            = std::min<std::size_t>(viewSize, static_cast<std::size_t>(last * blockBytes));
        ::mprotect(
            static_cast<std::uint8_t*>(view) + offset, pageEnd - static_cast<std::size_t>(offset), PROT_READ);
        for (std::size_t block = first; block < last; ++block)
            fetched[block].store(1, std::memory_order_release);
    }

    void serve()
    {
        for (;;) {
            std::uintptr_t message = 0;
            const ssize_t n = ::read(requestPipe[0], &message, sizeof message);
            if (n < 0 && errno == EINTR)
                continue;
            if (n != static_cast<ssize_t>(sizeof message) || message == 0)
                return;
            auto* request = reinterpret_cast<FaultRequest*>(message); // sleeping in faultHandler
            const auto block = static_cast<std::size_t>(
                (request->address - reinterpret_cast<std::uintptr_t>(view)) / blockBytes);
            if (block < blocks && !blockFetched(block)) {
                // Readahead: a fault right after the last one's blocks doubles the run (a pickle
                // read from start to end costs a few requests, not one per 64 KiB); none without
                // the fetch plan, where every block is its own fault.
                run = (fetchPlan && lastBlock != SIZE_MAX && block >= lastBlock
                          && block <= lastBlock + run / blockBytes + 1)
                    ? std::min(run * 2, kMaxRun)
                    : blockBytes;
                // The run stops at the file's last block (fetched[] has one flag per block).
                std::size_t last = std::min(blocks, block + static_cast<std::size_t>(run / blockBytes));
                for (std::size_t b = block + 1; b < last; ++b)
                    if (blockFetched(b)) {
                        last = b;
                        break;
                    }
                fetchBlocks(block, last);
                lastBlock = last - 1;
            }
            request->done.store(1, std::memory_order_release);
            futex(&request->done, FUTEX_WAKE_PRIVATE, 1);
        }
    }
};

namespace {

int openMirrorFile()
{
    const char* folder = std::getenv("TMPDIR");
    int fd = ::open(folder && *folder ? folder : "/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0)
        fd = static_cast<int>(::syscall(SYS_memfd_create, "ckpt-remote", 1U /* MFD_CLOEXEC */));
    return fd;
}

CURL* newCurl(const RemoteOptions& options)
{
    CURL* curl = libcurl().easy_init();
    if (!curl)
        return nullptr;
    libcurl().easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    libcurl().easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
    libcurl().easy_setopt(curl, CURLOPT_MAXREDIRS, 10L);
    libcurl().easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    libcurl().easy_setopt(curl, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    libcurl().easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, options.timeoutSeconds);
    libcurl().easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
    libcurl().easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, options.timeoutSeconds);
    libcurl().easy_setopt(curl, CURLOPT_USERAGENT, "ckpt-inspect");
    libcurl().easy_setopt(curl, CURLOPT_HEADERFUNCTION, onHeader);
    libcurl().easy_setopt(curl, CURLOPT_WRITEFUNCTION, onBody);
    libcurl().easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, onProgress);
    return curl;
}

// The whole file with one plain GET into the mirror file (a server that refuses ranges, and the
// user asked for the download).
Status downloadWhole(RemoteFile::State& state, std::uint64_t expectedSize)
{
    Response response;
    Transfer transfer;
    transfer.curl = state.curl;
    transfer.response = &response;
    transfer.fd = state.fd;
    transfer.capacity = expectedSize;
    transfer.acceptWhole = true;
    transfer.options = &state.options;
    transfer.progressTotal = expectedSize;
    libcurl().easy_setopt(state.curl, CURLOPT_RANGE, nullptr);
    libcurl().easy_setopt(state.curl, CURLOPT_HEADERDATA, &transfer);
    libcurl().easy_setopt(state.curl, CURLOPT_WRITEDATA, &transfer);
    libcurl().easy_setopt(state.curl, CURLOPT_XFERINFODATA, &transfer);
    libcurl().easy_setopt(state.curl, CURLOPT_NOPROGRESS, 0L);
    const CURLcode code = libcurl().easy_perform(state.curl);
    ++state.requests;
    state.bytesRead += response.received;
    if (code == CURLE_ABORTED_BY_CALLBACK)
        return makeError("cancelled while downloading " + state.url);
    if (!transfer.writeError.empty())
        return makeError(transfer.writeError);
    if (response.overflow)
        return makeError("the server sent more than the " + std::to_string(expectedSize)
            + " bytes its Content-Length announced for " + state.url);
    if (code != CURLE_OK)
        return makeError("the download of " + state.url + " failed after " + std::to_string(response.received)
            + " of " + std::to_string(expectedSize) + " bytes: " + libcurl().easy_strerror(code));
    if (response.status != 200)
        return makeError("the server answered HTTP " + std::to_string(response.status) + " to " + state.url);
    if (response.received != expectedSize)
        return makeError("the server's Content-Length lies: it announced " + std::to_string(expectedSize)
            + " bytes and sent " + std::to_string(response.received) + " for " + state.url);
    return std::nullopt;
}

} // namespace

Expected<std::shared_ptr<RemoteFile>> RemoteFile::open(const std::string& url, const RemoteOptions& options)
{
    if (!isRemoteUrl(url))
        return makeError("not an http(s) URL: " + url);
    if (auto library = curlLibrary(); !library)
        return library.error();
    auto file = std::shared_ptr<RemoteFile>(new RemoteFile());
    file->m_self = file;
    file->m_state = std::make_unique<State>();
    State& state = *file->m_state;
    state.url = url;
    state.options = options;
    // Smaller blocks and no fetch plan make every reader fault often: the differential test runs
    // so (CKPT_REMOTE_BLOCK_BYTES=4096), where a read that missed a fault would show.
    std::uint64_t blockSize = options.blockSize;
    if (const char* forced = std::getenv("CKPT_REMOTE_BLOCK_BYTES"); forced && *forced && blockSize == 0) {
        blockSize = std::strtoull(forced, nullptr, 10);
        state.fetchPlan = false;
    }
    const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    if (blockSize != 0)
        state.blockBytes = std::max(page, (blockSize + page - 1) / page * page);
    state.curl = newCurl(options);
    if (!state.curl)
        return makeError("cannot start libcurl for " + url);
    libcurl().easy_setopt(state.curl, CURLOPT_URL, url.c_str());

    // The first block: its answer says the size (Content-Range) and whether ranges are honoured.
    ByteBuffer first(state.blockBytes);
    Response answer;
    if (auto problem = state.getRange(0, state.blockBytes, first.data(), &answer, true)) {
        const bool emptyFile = answer.status == 416 && answer.contentRange == "bytes */0";
        if (answer.refusedRanges && options.downloadWhenRangesRefused && answer.contentLength >= 0)
            state.size = static_cast<std::uint64_t>(answer.contentLength);
        else if (emptyFile)
            state.size = 0;
        else
            return *problem;
    }
    if (answer.status == 206) {
        const auto contentRange = parseContentRange(answer.contentRange);
        if (!contentRange || !contentRange->total)
            return makeError("the server did not say the size of " + url + " (Content-Range \""
                + answer.contentRange + "\")");
        state.size = *contentRange->total;
    }
    state.etag = answer.etag;
    first.resize(static_cast<std::size_t>(std::min<std::uint64_t>(state.blockBytes, state.size)));

    state.fd = openMirrorFile();
    if (state.fd < 0)
        return makeError(
            std::string("cannot create the local mirror of ") + url + ": " + std::strerror(errno));
    if (state.size > 0 && ::ftruncate(state.fd, static_cast<off_t>(state.size)) != 0)
        return makeError("cannot make room for the mirror of " + url + " (" + formatBytes(state.size)
            + "): " + std::strerror(errno));
    state.blocks = static_cast<std::size_t>((state.size + state.blockBytes - 1) / state.blockBytes);
    state.fetched = std::make_unique<std::atomic<std::uint8_t>[]>(state.blocks);
    if (state.size == 0)
        return file;
    state.viewSize = static_cast<std::size_t>((state.size + page - 1) / page * page);

    if (answer.refusedRanges) {
        // --download: the whole file, once, with progress; then every byte is there.
        if (auto problem = downloadWhole(state, state.size))
            return *problem;
        state.downloadedWhole = true;
        state.view = ::mmap(nullptr, state.viewSize, PROT_READ, MAP_SHARED, state.fd, 0);
        if (state.view == MAP_FAILED) {
            state.view = nullptr;
            return makeError("cannot map the download of " + url + ": " + std::strerror(errno));
        }
        for (std::size_t block = 0; block < state.blocks; ++block)
            state.fetched[block].store(1);
        return file;
    }

    if (::pwrite(state.fd, first.data(), first.size(), 0) != static_cast<ssize_t>(first.size()))
        return makeError(std::string("cannot keep the fetched bytes: ") + std::strerror(errno));
    state.view = ::mmap(nullptr, state.viewSize, PROT_NONE, MAP_SHARED | MAP_NORESERVE, state.fd, 0);
    if (state.view == MAP_FAILED) {
        state.view = nullptr;
        return makeError("cannot reserve " + formatBytes(state.size) + " of address space for " + url + ": "
            + std::strerror(errno));
    }
    ::mprotect(state.view, std::min<std::size_t>(state.viewSize, state.blockBytes), PROT_READ);
    state.fetched[0].store(1);

    // The fetch plan: what every reader asks for first, in as few requests as possible.
    // safetensors: the 8-byte length, then the JSON header.
    std::uint64_t headerLength = 0;
    if (state.fetchPlan && first.size() >= 8) {
        for (int i = 7; i >= 0; --i)
            headerLength = headerLength << 8 | first[static_cast<std::size_t>(i)];
        if (first.size() > 8 && first[8] == '{' && headerLength > 0 && headerLength < state.size
            && headerLength < (100u << 20))
            state.fetchBlocks(
                1, static_cast<std::size_t>((8 + headerLength + state.blockBytes - 1) / state.blockBytes));
    }
    // A zip (torch.save, TorchScript): the end records and the central directory at the tail.
    if (state.fetchPlan && first.size() >= 4 && first[0] == 'P' && first[1] == 'K')
        state.fetchBlocks(state.blocks > 4 ? state.blocks - 4 : 0, state.blocks);
    if (!state.failure.empty())
        return makeError(state.failure);

    if (::pipe2(state.requestPipe, O_CLOEXEC) != 0)
        return makeError(std::string("cannot start fetching ") + url + ": " + std::strerror(errno));
    installHandler();
    for (std::size_t i = 0; i < kSlots; ++i) {
        std::uintptr_t expected = 0;
        if (g_slots[i].begin.load() == 0 && g_slots[i].requestFd.load() < 0) {
            g_slots[i].requestFd.store(state.requestPipe[1]);
            g_slots[i].end.store(reinterpret_cast<std::uintptr_t>(state.view) + state.viewSize);
            if (g_slots[i].begin.compare_exchange_strong(
                    expected, reinterpret_cast<std::uintptr_t>(state.view))) {
                state.slot = static_cast<int>(i);
                break;
            }
        }
    }
    if (state.slot < 0)
        return makeError("too many remote files open at once (" + std::to_string(kSlots) + ")");
    state.fetcher = std::thread([&state] { state.serve(); });
    return file;
}

RemoteFile::~RemoteFile() = default;

std::shared_ptr<const MappedFile> RemoteFile::mapped() const
{
    const State& state = *m_state;
    const ByteView bytes(static_cast<const std::uint8_t*>(state.view), static_cast<std::size_t>(state.size));
    return MappedFile::fromExternal(bytes, std::shared_ptr<const void>(m_self.lock()), state.url);
}

const std::string& RemoteFile::url() const
{
    return m_state->url;
}

std::uint64_t RemoteFile::size() const
{
    return m_state->size;
}

RemoteTraffic RemoteFile::traffic() const
{
    return RemoteTraffic {
        m_state->bytesRead.load(), m_state->size, m_state->requests.load(), m_state->downloadedWhole};
}

std::string RemoteFile::failure() const
{
    const std::lock_guard lock(m_state->failureMutex);
    return m_state->failure;
}

std::uint64_t RemoteFile::unfetchedBytes(std::uint64_t offset, std::uint64_t length) const
{
    const State& state = *m_state;
    if (offset >= state.size)
        return 0;
    const std::uint64_t end = std::min(state.size, offset + length);
    std::uint64_t missing = 0;
    for (std::uint64_t block = offset / state.blockBytes; block * state.blockBytes < end; ++block) {
        if (state.blockFetched(static_cast<std::size_t>(block)))
            continue;
        const std::uint64_t from = std::max(offset, block * state.blockBytes);
        const std::uint64_t to = std::min(end, (block + 1) * state.blockBytes);
        missing += to - from;
    }
    return missing;
}

struct RemoteSession::Data {
    mutable std::mutex mutex;
    std::vector<std::shared_ptr<RemoteFile>> files;
    std::string error;
};

RemoteSession::RemoteSession()
    : m_data(std::make_unique<Data>())
{ }

RemoteSession::~RemoteSession() = default;

void RemoteSession::add(const std::shared_ptr<RemoteFile>& file)
{
    const std::lock_guard lock(m_data->mutex);
    m_data->files.push_back(file);
}

void RemoteSession::addError(const std::string& message)
{
    const std::lock_guard lock(m_data->mutex);
    if (m_data->error.empty())
        m_data->error = message;
}

RemoteTraffic RemoteSession::traffic() const
{
    const std::lock_guard lock(m_data->mutex);
    RemoteTraffic sum;
    for (const auto& file : m_data->files) {
        const RemoteTraffic one = file->traffic();
        sum.bytesRead += one.bytesRead;
        sum.fileSize += one.fileSize;
        sum.requests += one.requests;
        sum.downloadedWhole = sum.downloadedWhole || one.downloadedWhole;
    }
    return sum;
}

std::string RemoteSession::failure() const
{
    const std::lock_guard lock(m_data->mutex);
    if (!m_data->error.empty())
        return m_data->error;
    for (const auto& file : m_data->files)
        if (auto failure = file->failure(); !failure.empty())
            return failure;
    return {};
}

std::size_t RemoteSession::fileCount() const
{
    const std::lock_guard lock(m_data->mutex);
    return m_data->files.size();
}

std::string remoteTrafficText(const RemoteTraffic& traffic)
{
    return "read " + formatBytes(traffic.bytesRead) + " of " + formatBytes(traffic.fileSize) + " ("
        + std::to_string(traffic.requests) + " request" + (traffic.requests == 1 ? "" : "s")
        + (traffic.downloadedWhole ? ", downloaded whole: the server refuses ranges" : "") + ")";
}

} // namespace ckpt
