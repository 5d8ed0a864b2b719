// SPDX-License-Identifier: MIT
#include "ui/jobs/jobtracker.h"

#include <QCoreApplication>
#include <QThreadPool>

#include <algorithm>

namespace ckpt {

QThreadPool* jobThreadPool()
{
    // Qt's raster paint engine splits large fills and lines over QThreadPool::globalInstance() and
    // waits for them: with the app's jobs (the triage, a simulation) in that pool's threads, every
    // repaint waited until a job ended (a drop on a million-tensor checkpoint: 1 s of wall time for
    // 40 ms of GUI work). The jobs get threads of their own, as many as the global pool has.
    static QThreadPool* pool = [] {
        auto* created = new QThreadPool(QCoreApplication::instance()); // waits for its jobs when the app goes
        created->setObjectName(QStringLiteral("ckpt-jobs"));
        created->setMaxThreadCount(std::max(2, QThread::idealThreadCount()));
        return created;
    }();
    return pool;
}

} // namespace ckpt
