// SPDX-License-Identifier: MIT
#pragma once
// Progress and cancel for ckpt-inspect's long passes over tensor bytes (`check --values`, `diff`):
// a bar on standard error when it is a terminal, redrawn at most ten times a second and erased
// when the pass ends; nothing at all otherwise, so scripts and logs see only the report.
// Ctrl-C while a pass runs asks it to stop (the task's progress callback answers false, the helper
// is killed): the command then says it was cancelled and exits 130, as a shell reports SIGINT. A
// second Ctrl-C ends the process at once.
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

namespace cli {

// The exit status of a pass cancelled by Ctrl-C (128 + SIGINT, what a shell reports).
inline constexpr int kCancelledExit = 130;

class ProgressBar {
public:
    // `label` is the tool's own words ("scanning values"), never text from a file. The bar is
    // drawn when standard error is a terminal, or when CKPT_INSPECT_PROGRESS=1 (for tests).
    explicit ProgressBar(std::string label);
    ~ProgressBar();
    ProgressBar(const ProgressBar&) = delete;
    ProgressBar& operator=(const ProgressBar&) = delete;

    // The task's progress callback: bytes (or pairs) done and in all; false once Ctrl-C was
    // pressed. Safe to call from several threads (diff hashes in parallel).
    bool update(std::uint64_t done, std::uint64_t total);
    std::function<bool(std::uint64_t, std::uint64_t)> callback();

    // Whether Ctrl-C was pressed while this bar was up.
    bool cancelled() const;
    // Erases the bar (the destructor does it too): call before printing the report.
    void finish();

private:
    void draw(std::uint64_t done, std::uint64_t total, bool force);

    std::string m_label;
    bool m_shown = false;
    bool m_drawn = false;
    std::mutex m_drawing;
    std::chrono::steady_clock::time_point m_lastDraw {};
    struct sigaction m_previous { };
};

} // namespace cli
