// SPDX-License-Identifier: MIT
#include "progressbar.h"

#include "core/base/textformat.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace cli {

namespace {

std::atomic<bool> interrupted {false};

// The first Ctrl-C asks the pass to stop; the default action is back for a second one.
void onInterrupt(int)
{
    interrupted = true;
    std::signal(SIGINT, SIG_DFL);
}

// The bar is this program's own text: written straight to the descriptor, past the stream
// buffer that shows control characters (the carriage return) as escapes.
void writeAll(const std::string& text)
{
    std::size_t at = 0;
    while (at < text.size()) {
        const ssize_t written = ::write(STDERR_FILENO, text.data() + at, text.size() - at);
        if (written <= 0)
            return;
        at += static_cast<std::size_t>(written);
    }
}

} // namespace

ProgressBar::ProgressBar(std::string label)
    : m_label(std::move(label))
{
    const char* forced = std::getenv("CKPT_INSPECT_PROGRESS");
    m_shown = (forced && std::strcmp(forced, "1") == 0) || ::isatty(STDERR_FILENO) == 1;
    interrupted = false;
    struct sigaction action { };
    action.sa_handler = onInterrupt;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, &m_previous);
}

ProgressBar::~ProgressBar()
{
    finish();
    sigaction(SIGINT, &m_previous, nullptr);
}

bool ProgressBar::cancelled() const
{
    return interrupted.load();
}

bool ProgressBar::update(std::uint64_t done, std::uint64_t total)
{
    if (m_shown && total > 0)
        draw(done, total, done >= total);
    return !interrupted.load();
}

std::function<bool(std::uint64_t, std::uint64_t)> ProgressBar::callback()
{
    return [this](std::uint64_t done, std::uint64_t total) { return update(done, total); };
}

void ProgressBar::draw(std::uint64_t done, std::uint64_t total, bool force)
{
    const std::unique_lock lock(m_drawing, std::try_to_lock);
    if (!lock.owns_lock())
        return; // another thread is drawing: the next call draws the newer figure
    const auto now = std::chrono::steady_clock::now();
    if (!force && m_drawn && now - m_lastDraw < std::chrono::milliseconds(100))
        return;
    m_lastDraw = now;
    done = std::min(done, total);
    constexpr int kWidth = 30;
    const auto filled = static_cast<int>(static_cast<double>(done) / static_cast<double>(total) * kWidth);
    const auto percent = static_cast<int>(static_cast<double>(done) / static_cast<double>(total) * 100);
    std::string line = "\r" + m_label + " [" + std::string(static_cast<std::size_t>(filled), '#')
        + std::string(static_cast<std::size_t>(kWidth - filled), '.') + "] " + std::to_string(percent) + "%";
    if (total > 1'000'000) // bytes; pairs of tensors are counted as they are
        line += " of " + ckpt::formatBytes(total);
    line += "  (Ctrl-C cancels)\x1b[K";
    writeAll(line);
    m_drawn = true;
}

void ProgressBar::finish()
{
    const std::lock_guard lock(m_drawing);
    if (m_drawn)
        writeAll("\r\x1b[K");
    m_drawn = false;
}

} // namespace cli
