// SPDX-License-Identifier: MIT
#pragma once

#include <QProgressDialog>

#include <memory>

class QTimer;

namespace ckpt {

struct JobProgress;

// The window-modal progress of one running job: its fraction, throttled to ten updates a second,
// an estimate of the time left once there is enough to go on, and Cancel, which sets the job's
// cancel flag (the worker stops at its next progress report).
class JobProgressDialog : public QProgressDialog {
    Q_OBJECT

public:
    JobProgressDialog(const QString& label, std::shared_ptr<JobProgress> progress, QWidget* parent);

private:
    void refresh();

    QString m_baseLabel;
    std::weak_ptr<JobProgress> m_progress;
    QTimer* m_timer = nullptr;
};

} // namespace ckpt
