// SPDX-License-Identifier: MIT
#pragma once

#include <QElapsedTimer>
#include <QFutureWatcher>
#include <QObject>
#include <QPointer>
#include <QtConcurrent/QtConcurrentRun>

#include <atomic>
#include <cstdint>
#include <memory>
#include <utility>

class QThreadPool;

namespace ckpt {

// The pool every JobTracker runs its jobs in (not Qt's global pool; see jobtracker.cpp). Needs a
// QCoreApplication, which lives at least as long as the pool.
QThreadPool* jobThreadPool();

// What a running job shares with the GUI thread: progress the worker writes and a timer reads
// (throttled), and the cancel flag the worker's progress callback answers with.
struct JobProgress {
    std::atomic<std::uint64_t> done {0};
    std::atomic<std::uint64_t> total {0};
    std::atomic<bool> cancelled {false};
    QElapsedTimer elapsed;

    // The signature of the core's progress callbacks: false asks the worker to stop.
    bool report(std::uint64_t d, std::uint64_t t)
    {
        done.store(d, std::memory_order_relaxed);
        total.store(t, std::memory_order_relaxed);
        return !cancelled.load(std::memory_order_relaxed);
    }
};

// Runs one kind of work off the GUI thread, one job at a time (hotspot's src/jobtracker.h): a new
// start() or a reset() makes the job before it stale, and a stale job's result is dropped instead
// of delivered. The result reaches `deliver` on the GUI thread (through the watcher's queued
// signal), so the callback may touch widgets. Workers hold only shared data, never `this`.
class JobTracker : public QObject {
    Q_OBJECT

public:
    explicit JobTracker(QObject* parent = nullptr)
        : QObject(parent)
    { }

    bool isRunning() const { return m_progress != nullptr; }
    // The running job's progress (for a progress dialog), null when idle.
    std::shared_ptr<JobProgress> progress() const { return m_progress; }

    // `work(JobProgress&)` runs on the thread pool and returns the result by value;
    // `deliver(Result)` runs later on this object's thread unless the job went stale meanwhile.
    template<typename Work, typename Deliver> void start(Work work, Deliver deliver)
    {
        using Result = std::invoke_result_t<Work, JobProgress&>;
        reset();
        const quint64 generation = m_generation;
        auto progress = std::make_shared<JobProgress>();
        progress->elapsed.start();
        m_progress = progress;
        auto* watcher = new QFutureWatcher<Result>(this);
        connect(watcher, &QFutureWatcherBase::finished, this,
            [this, watcher, generation, deliver = std::move(deliver)]() mutable {
                watcher->deleteLater();
                if (generation != m_generation)
                    return; // superseded: a later start() or reset() owns the tracker now
                m_progress.reset();
                Q_EMIT finished(); // first, so a progress dialog is gone before the result shows
                deliver(watcher->result());
            });
        watcher->setFuture(QtConcurrent::run(
            jobThreadPool(), [work = std::move(work), progress]() mutable { return work(*progress); }));
        Q_EMIT started();
    }

    // Makes the running job stale and asks it to stop at its next progress report.
    void reset()
    {
        ++m_generation;
        if (m_progress) {
            m_progress->cancelled = true;
            m_progress.reset();
            Q_EMIT finished();
        }
    }

    // Asks the running job to stop; it still delivers (its result says it was cancelled).
    void cancel()
    {
        if (m_progress)
            m_progress->cancelled = true;
    }

    ~JobTracker() override
    {
        if (m_progress)
            m_progress->cancelled = true;
    }

Q_SIGNALS:
    void started();
    void finished(); // delivered, or made stale while running

private:
    quint64 m_generation = 0;
    std::shared_ptr<JobProgress> m_progress;
};

} // namespace ckpt
