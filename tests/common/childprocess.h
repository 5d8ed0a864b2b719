// SPDX-License-Identifier: MIT
#pragma once

// Work that must not touch the test process itself (a resource limit, a change of user, a signal),
// run in a forked child.

#include <QByteArray>
#include <QString>

#include <functional>
#include <string>

#include <sys/wait.h>
#include <unistd.h>

namespace ckpt::testing {

// Runs `work` in a forked child and returns what it reported, so a resource limit or a change of
// user stays in the child.
inline QString runInChild(const std::function<std::string()>& work)
{
    int pipeFds[2];
    if (::pipe(pipeFds) != 0)
        return QStringLiteral("pipe failed");
    const pid_t pid = ::fork();
    if (pid < 0)
        return QStringLiteral("fork failed");
    if (pid == 0) {
        ::close(pipeFds[0]);
        const std::string message = work();
        const ssize_t ignored = ::write(pipeFds[1], message.data(), message.size());
        (void)ignored;
        ::_exit(0);
    }
    ::close(pipeFds[1]);
    QByteArray message;
    char buffer[4096];
    ssize_t n;
    while ((n = ::read(pipeFds[0], buffer, sizeof buffer)) > 0)
        message.append(buffer, n);
    ::close(pipeFds[0]);
    int wstatus = 0;
    ::waitpid(pid, &wstatus, 0);
    if (!WIFEXITED(wstatus))
        return QStringLiteral("child died with signal %1").arg(WTERMSIG(wstatus));
    return QString::fromUtf8(message);
}

} // namespace ckpt::testing
