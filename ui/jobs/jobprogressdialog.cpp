// SPDX-License-Identifier: MIT
#include "ui/jobs/jobprogressdialog.h"

#include "ui/jobs/jobtracker.h"

#include <QTimer>

#include <algorithm>
#include <cmath>

namespace ckpt {

JobProgressDialog::JobProgressDialog(
    const QString& label, std::shared_ptr<JobProgress> progress, QWidget* parent)
    : QProgressDialog(label, tr("Cancel"), 0, 1000, parent)
    , m_baseLabel(label)
    , m_progress(progress)
    , m_timer(new QTimer(this))
{
    setObjectName(QStringLiteral("progressDialog"));
    setWindowModality(Qt::WindowModal);
    setMinimumDuration(400);
    setAutoClose(false);
    setAutoReset(false);
    setValue(0);
    connect(this, &QProgressDialog::canceled, this, [this] {
        if (const auto job = m_progress.lock())
            job->cancelled = true;
    });
    m_timer->setInterval(100);
    connect(m_timer, &QTimer::timeout, this, &JobProgressDialog::refresh);
    m_timer->start();
}

void JobProgressDialog::refresh()
{
    const auto job = m_progress.lock();
    if (!job)
        return;
    const std::uint64_t done = job->done.load(std::memory_order_relaxed);
    const std::uint64_t total = job->total.load(std::memory_order_relaxed);
    if (total == 0)
        return;
    const double fraction = std::min(1.0, double(done) / double(total));
    setValue(int(fraction * 1000));
    if (fraction > 0.02) {
        const double seconds = double(job->elapsed.elapsed()) / 1000.0 * (1.0 - fraction) / fraction;
        setLabelText(
            m_baseLabel + QLatin1Char('\n') + tr("about %1 s left").arg(std::max(1L, std::lround(seconds))));
    }
}

} // namespace ckpt
