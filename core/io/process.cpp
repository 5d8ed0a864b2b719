// SPDX-License-Identifier: MIT
#include "core/io/process.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace ckpt {

namespace {

// Both ends of a pipe, closed on scope exit; close-on-exec so that no other child inherits them.
struct Pipe {
    int readEnd = -1, writeEnd = -1;
    bool open()
    {
        int ends[2];
        if (::pipe2(ends, O_CLOEXEC) != 0)
            return false;
        readEnd = ends[0];
        writeEnd = ends[1];
        return true;
    }
    static void close(int& fd)
    {
        if (fd >= 0)
            ::close(fd);
        fd = -1;
    }
    Pipe() = default;
    Pipe(const Pipe&) = delete;
    Pipe& operator=(const Pipe&) = delete;
    ~Pipe()
    {
        close(readEnd);
        close(writeEnd);
    }
};

// Writing to a pipe whose reader exited raises SIGPIPE, which would end this process: the signal
// is blocked in this thread for the write and a pending one is consumed, so the write just fails.
ssize_t writeWithoutSigpipe(int fd, const char* data, std::size_t size)
{
    sigset_t pipeSignal, previous;
    sigemptyset(&pipeSignal);
    sigaddset(&pipeSignal, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    const bool alreadyPending = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipeSignal, &previous);
    const ssize_t written = ::write(fd, data, size);
    const int writeError = errno;
    if (written < 0 && writeError == EPIPE && !alreadyPending) {
        const timespec now {0, 0};
        while (sigtimedwait(&pipeSignal, nullptr, &now) < 0 && errno == EINTR) { }
    }
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    errno = writeError;
    return written;
}

} // namespace

Expected<ProcessOutcome> runProcess(const ProcessRequest& request)
{
    const bool captureErrors = request.captureErrors || request.onErrorLine;
    Pipe input, output, errors;
    if (!input.open() || !output.open() || (captureErrors && !errors.open()))
        return makeError("cannot run " + request.program + ": " + std::strerror(errno));

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, input.readEnd, STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, output.writeEnd, STDOUT_FILENO);
    if (captureErrors)
        posix_spawn_file_actions_adddup2(&actions, errors.writeEnd, STDERR_FILENO);
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(request.program.c_str()));
    for (const std::string& argument : request.arguments)
        argv.push_back(const_cast<char*>(argument.c_str()));
    argv.push_back(nullptr);
    pid_t child = -1;
    const int spawned
        = ::posix_spawn(&child, request.program.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (spawned != 0)
        return makeError("cannot run " + request.program + ": " + std::strerror(spawned));
    Pipe::close(input.readEnd);
    Pipe::close(output.writeEnd);
    Pipe::close(errors.writeEnd);
    if (request.input.empty())
        Pipe::close(input.writeEnd);
    for (int fd : {input.writeEnd, output.readEnd, errors.readEnd})
        if (fd >= 0)
            ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);

    ProcessOutcome outcome;
    std::size_t written = 0;
    std::string errorLine;
    const auto started = std::chrono::steady_clock::now();
    char buffer[65536];
    int status = 0;
    bool reaped = false;
    for (;;) {
        if (output.readEnd < 0 && errors.readEnd < 0) {
            // Both outputs closed: the program is ending (or closed them and goes on, which is
            // still waited for, cancellable).
            const pid_t done = ::waitpid(child, &status, WNOHANG);
            if (done == child || (done < 0 && errno != EINTR)) {
                reaped = done == child;
                break;
            }
        }
        pollfd fds[3];
        nfds_t count = 0;
        for (int fd : {output.readEnd, errors.readEnd})
            if (fd >= 0)
                fds[count++] = {fd, POLLIN, 0};
        if (input.writeEnd >= 0)
            fds[count++] = {input.writeEnd, POLLOUT, 0};
        const int ready = ::poll(fds, count, 50); // with nothing to watch, a 50 ms wait
        if (ready < 0 && errno != EINTR)
            break;
        for (nfds_t i = 0; ready > 0 && i < count; ++i) {
            if (!fds[i].revents)
                continue;
            const int fd = fds[i].fd;
            if (fd == input.writeEnd) {
                const ssize_t n
                    = writeWithoutSigpipe(fd, request.input.data() + written, request.input.size() - written);
                if (n > 0)
                    written += static_cast<std::size_t>(n);
                if ((n < 0 && errno != EAGAIN && errno != EINTR) || written == request.input.size())
                    Pipe::close(input.writeEnd); // done, or the program stopped reading
                continue;
            }
            const ssize_t n = ::read(fd, buffer, sizeof buffer);
            if (n < 0 && (errno == EAGAIN || errno == EINTR))
                continue;
            if (n <= 0) {
                Pipe::close(fd == output.readEnd ? output.readEnd : errors.readEnd);
                continue;
            }
            if (fd == output.readEnd) {
                outcome.output.append(buffer, static_cast<std::size_t>(n));
                outcome.outputTooLarge
                    = request.maxOutputBytes && outcome.output.size() > *request.maxOutputBytes;
                continue;
            }
            outcome.errors.append(buffer, static_cast<std::size_t>(n));
            if (request.onErrorLine) {
                errorLine.append(buffer, static_cast<std::size_t>(n));
                for (std::size_t end; (end = errorLine.find('\n')) != std::string::npos;
                     errorLine.erase(0, end + 1))
                    request.onErrorLine(std::string_view(errorLine).substr(0, end));
            }
        }
        const bool timedOut
            = request.timeout && std::chrono::steady_clock::now() - started > *request.timeout;
        const bool cancelled = !timedOut && request.keepGoing && !request.keepGoing();
        if (timedOut || cancelled || outcome.outputTooLarge) {
            ::kill(child, SIGKILL);
            outcome.timedOut = timedOut;
            outcome.cancelled = cancelled;
            break;
        }
    }
    if (request.onErrorLine && !errorLine.empty() && !outcome.cancelled && !outcome.timedOut
        && !outcome.outputTooLarge)
        request.onErrorLine(errorLine);
    while (!reaped && ::waitpid(child, &status, 0) < 0 && errno == EINTR) { }
    outcome.exitedNormally
        = WIFEXITED(status) && !outcome.cancelled && !outcome.timedOut && !outcome.outputTooLarge;
    outcome.exitCode = outcome.exitedNormally ? WEXITSTATUS(status) : -1;
    return outcome;
}

std::string folderOfThisProgram()
{
    char self[4096];
    const ssize_t length = ::readlink("/proc/self/exe", self, sizeof self - 1);
    if (length <= 0)
        return {};
    const std::string program(self, static_cast<std::size_t>(length));
    return program.substr(0, program.find_last_of('/') + 1);
}

std::optional<std::string> programBesideThisOne(std::string_view name)
{
    const std::string folder = folderOfThisProgram();
    if (folder.empty())
        return std::nullopt;
    std::string program = folder + std::string(name);
    if (::access(program.c_str(), X_OK) != 0)
        return std::nullopt;
    return program;
}

} // namespace ckpt
